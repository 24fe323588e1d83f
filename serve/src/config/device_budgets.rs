//! `--device-memory-budget` (config `device_memory_budget`): per-device memory budgets, parsed
//! and assigned to the devices by label or index.

use bellows_core::units::parse_bytes;

use crate::{
    engine::DeviceSpec,
    error::{Result, ServeError},
};

/// Per-device memory budgets (`--device-memory-budget`): `SIZE` for every device, or
/// comma-separated `DEVICE=SIZE` entries, where DEVICE is a device's label (`cuda:1`,
/// `cpu-fallback`, as `bellows status` shows them) or a bare index N for the device labelled
/// `NAME:N`, and SIZE is a byte size (`40GiB`) or `unlimited`. `24GiB,1=8GiB`: 8 GiB for device
/// 1, 24 GiB for the others.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceBudgets {
    /// For devices not named: `Some(None)` unlimited, `None` the default (unlimited too).
    pub all: Option<Option<u64>>,
    /// By device (label or index), in the order given.
    pub named: Vec<(String, Option<u64>)>,
}

impl std::str::FromStr for DeviceBudgets {
    type Err = String;
    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let size = |v: &str| -> std::result::Result<Option<u64>, String> {
            match v.trim().to_ascii_lowercase().as_str() {
                "unlimited" | "none" => Ok(None),
                _ => match parse_bytes(v)? {
                    0 => Err(format!("{v:?}: a budget of 0 bytes admits nothing")),
                    b => Ok(Some(b)),
                },
            }
        };
        let mut out = DeviceBudgets::default();
        for part in text.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(format!(
                    "{text:?}: an empty entry (SIZE, or DEVICE=SIZE like 0=40GiB,1=20GiB)"
                ));
            }
            match part.split_once('=') {
                Some((dev, v)) => {
                    let dev = dev.trim();
                    if dev.is_empty() {
                        return Err(format!("{part:?}: no device before '='"));
                    }
                    if out.named.iter().any(|(d, _)| d == dev) {
                        return Err(format!("device {dev:?} is given twice"));
                    }
                    out.named.push((dev.to_string(), size(v)?));
                }
                None => {
                    if out.all.is_some() {
                        return Err(format!("{text:?}: more than one budget for every device"));
                    }
                    out.all = Some(size(part)?);
                }
            }
        }
        Ok(out)
    }
}

impl DeviceBudgets {
    /// Assigns the budgets to `devices`: a named one, else the one for every device, else none
    /// (unlimited: the device is only counted, and a backend with memory tiers, like the CUDA
    /// backend's streaming of bases, decides for itself).
    /// A name that matches no device (or a bare index that matches several) is an error.
    pub fn apply(&self, devices: &mut [DeviceSpec]) -> Result<()> {
        let labels = || {
            devices
                .iter()
                .map(|d| d.label.clone())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut chosen: Vec<Option<Option<u64>>> = vec![None; devices.len()];
        for (name, budget) in &self.named {
            let hits: Vec<usize> = match name.parse::<usize>() {
                Ok(n) => devices
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| {
                        d.label.rsplit_once(':').map(|(_, i)| i) == Some(&n.to_string())
                    })
                    .map(|(i, _)| i)
                    .collect(),
                Err(_) => devices
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| &d.label == name)
                    .map(|(i, _)| i)
                    .collect(),
            };
            match hits.as_slice() {
                [] => {
                    return Err(ServeError::Config(format!(
                        "--device-memory-budget: no device {name:?} (devices: {})",
                        labels()
                    )))
                }
                [i] => chosen[*i] = Some(*budget),
                _ => {
                    return Err(ServeError::Config(format!(
                        "--device-memory-budget: {name:?} names several devices; use a label \
                         (devices: {})",
                        labels()
                    )))
                }
            }
        }
        for (d, c) in devices.iter_mut().zip(chosen) {
            d.memory_budget = c.or(self.all).flatten();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bellows_core::{groth16::prover::G2Policy, Backend};

    use super::*;

    #[test]
    fn device_budgets_parse_and_apply_by_label_or_index() {
        let b: DeviceBudgets = "24GiB, 1=8GiB, cpu-fallback=unlimited".parse().unwrap();
        assert_eq!(b.all, Some(Some(24 << 30)));
        assert_eq!(
            b.named,
            vec![("1".into(), Some(8 << 30)), ("cpu-fallback".into(), None)]
        );
        for bad in [
            "",
            "0=",
            "=1GiB",
            "0=0",
            "1GiB,2GiB",
            "0=1GiB,0=2GiB",
            "0=lots",
        ] {
            assert!(bad.parse::<DeviceBudgets>().is_err(), "{bad:?} accepted");
        }
        let cpu: Arc<dyn Backend> = Arc::new(bellows_cpu::CpuBackend::new());
        let dev = || DeviceSpec {
            label: "cpu".into(),
            backend: cpu.clone(),
            workers: 1,
            g2: G2Policy::Cpu,
            fallback: false,
            memory_budget: None,
        };
        let mut devs = vec![dev(), dev(), dev()];
        devs[0].label = "gpu:0".into();
        devs[1].label = "gpu:1".into();
        devs[2].label = "cpu-fallback".into();
        b.apply(&mut devs).unwrap();
        let got: Vec<_> = devs.iter().map(|d| d.memory_budget).collect();
        assert_eq!(got, vec![Some(24 << 30), Some(8 << 30), None]);
        // Without an entry for every device, the CPU (not an accelerator) is unlimited.
        "gpu:0=1GiB"
            .parse::<DeviceBudgets>()
            .unwrap()
            .apply(&mut devs)
            .unwrap();
        let got: Vec<_> = devs.iter().map(|d| d.memory_budget).collect();
        assert_eq!(got, vec![Some(1 << 30), None, None]);
        let e = "7=1GiB"
            .parse::<DeviceBudgets>()
            .unwrap()
            .apply(&mut devs)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no device \"7\"") && e.contains("gpu:1"), "{e}");
        devs[2].label = "other:1".into();
        let e = "1=1GiB"
            .parse::<DeviceBudgets>()
            .unwrap()
            .apply(&mut devs)
            .unwrap_err()
            .to_string();
        assert!(e.contains("several devices"), "{e}");
    }
}

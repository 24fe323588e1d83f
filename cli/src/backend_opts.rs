//! `--backend-opt KEY=VALUE`, `--devices LIST` and `--g2 WHERE`: how the computing commands
//! configure the backend they open.

use clap::Args;
use std::sync::Arc;

use bellows_core::{groth16::prover::G2Policy, Backend, BackendConfig, Error, Result};

use crate::cli::Globals;

/// `--backend NAME` and how to configure it.
#[derive(Debug, Args, Clone)]
pub struct BackendArg {
    /// Backend that runs the NTTs and MSMs: a built-in name (see `bellows backends`).
    #[arg(long, value_name = "NAME", default_value = "cpu")]
    pub backend: String,
    /// A backend option, passed to the backend as it is (repeatable; each backend documents the
    /// keys it reads and ignores the others).
    #[arg(long = "backend-opt", value_name = "KEY=VALUE",
          value_parser = crate::backend_opts::parse_key_value)]
    pub backend_opt: Vec<(String, String)>,
    /// Devices the backend may use: `all`, or device indices like `0,1` (the first is the
    /// backend's device; the list goes to it as option `devices`).
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub devices: String,
    /// Where the G2 MSM runs: `auto` (on the backend when it is an accelerator offering G2 MSM,
    /// else on CPU threads), `device` (on the backend; an error if it cannot), `cpu`.
    #[arg(long, value_name = "WHERE", default_value = "auto",
          value_parser = ["auto", "device", "cpu"])]
    pub g2: String,
}

/// Splits one `--backend-opt` value at its first `=` (the key must not be empty; the value may).
pub fn parse_key_value(s: &str) -> std::result::Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

/// Parses `--devices`: `all`, or comma-separated device indices without repeats. Returns the
/// normalised text (stored as option `devices`) and the first index (`BackendConfig::device`;
/// 0 for `all`).
pub fn parse_devices(s: &str) -> Result<(String, usize)> {
    let s = s.trim();
    if s == "all" {
        return Ok(("all".into(), 0));
    }
    let mut list: Vec<usize> = Vec::new();
    for part in s.split(',') {
        let i: usize = part.trim().parse().map_err(|_| {
            Error::invalid(format!(
                "--devices {s:?}: {part:?} is not a device index (give `all` or a list like 0,1)"
            ))
        })?;
        if list.contains(&i) {
            return Err(Error::invalid(format!(
                "--devices {s:?}: device {i} is listed twice"
            )));
        }
        list.push(i);
    }
    let text = list
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    Ok((text, list[0]))
}

/// The backend configuration from `--threads`, `--devices` and `--backend-opt`. An explicit
/// `--backend-opt devices=…` or `device=…` is overridden by `--devices` only when `--devices` is
/// not `all`.
pub fn backend_config(
    opts: &[(String, String)],
    devices: &str,
    g: &Globals,
) -> Result<BackendConfig> {
    let mut cfg = BackendConfig::default();
    cfg.threads = g.threads;
    for (k, v) in opts {
        cfg = cfg.option(k.clone(), v.clone());
    }
    let (list, first) = parse_devices(devices)?;
    if list != "all" || cfg.get_option("devices").is_none() {
        cfg = cfg.option("devices", list);
        cfg.device = first;
    }
    Ok(cfg)
}

/// Where `info`'s backend keeps its working copies, for the memory estimates: on a device when
/// it declares itself an accelerator.
pub fn residence(info: &bellows_core::BackendInfo) -> bellows_core::groth16::limits::Residence {
    if info.capabilities.accelerator {
        bellows_core::groth16::limits::Residence::Device
    } else {
        bellows_core::groth16::limits::Residence::Host
    }
}

/// The G2 policy from `--g2`.
pub fn g2_policy(arg: &BackendArg) -> Result<G2Policy> {
    arg.g2.parse()
}

/// Opens the backend named by `--backend`, configured by the other backend options.
pub fn open(arg: &BackendArg, g: &Globals) -> Result<Arc<dyn Backend>> {
    let cfg = backend_config(&arg.backend_opt, &arg.devices, g)?;
    let backend = bellows_core::registry::resolve(&arg.backend, &cfg)?;
    let info = backend.info();
    tracing::info!(
        "backend {} {} ({}), options {:?}",
        info.name,
        info.version,
        info.capabilities.summary(),
        cfg.options
    );
    Ok(backend)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_and_devices_parse() {
        assert_eq!(
            parse_key_value("tier=streaming").unwrap(),
            ("tier".into(), "streaming".into())
        );
        assert_eq!(
            parse_key_value("a=b=c").unwrap(),
            ("a".into(), "b=c".into())
        );
        assert_eq!(parse_key_value("k=").unwrap(), ("k".into(), String::new()));
        assert!(parse_key_value("novalue").is_err());
        assert!(parse_key_value("=v").is_err());
        assert_eq!(parse_devices("all").unwrap(), ("all".into(), 0));
        assert_eq!(parse_devices("2, 0").unwrap(), ("2,0".into(), 2));
        assert!(parse_devices("0,0").is_err());
        assert!(parse_devices("gpu1").is_err());
        assert!(parse_devices("").is_err());

        let g = Globals { threads: Some(3) };
        let cfg = backend_config(&[("tier".into(), "full".into())], "1,3", &g).unwrap();
        assert_eq!(cfg.device, 1);
        assert_eq!(cfg.threads, Some(3));
        assert_eq!(cfg.get_option("devices"), Some("1,3"));
        assert_eq!(cfg.get_option("tier"), Some("full"));
        let cfg = backend_config(&[], "all", &g).unwrap();
        assert_eq!((cfg.device, cfg.get_option("devices")), (0, Some("all")));
        // An explicit option is kept when --devices is left at `all`.
        let cfg = backend_config(&[("devices".into(), "5".into())], "all", &g).unwrap();
        assert_eq!(cfg.get_option("devices"), Some("5"));
    }
}

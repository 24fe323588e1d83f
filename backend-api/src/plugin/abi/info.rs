//! What a backend is and how it is set up, across the boundary: its configuration, info,
//! capabilities and memory.

use abi_stable::{
    std_types::{ROption, RString, RVec, Tuple2},
    StableAbi,
};

use crate::backend::{BackendConfig, BackendInfo, Capabilities, DeviceInfo, MemoryInfo};

/// [`MemoryInfo`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiMemoryInfo {
    /// Bytes free now.
    pub free: u64,
    /// Bytes in total.
    pub total: u64,
    /// The byte budget in force, if any.
    pub budget: ROption<u64>,
}

impl From<MemoryInfo> for FfiMemoryInfo {
    fn from(m: MemoryInfo) -> Self {
        Self {
            free: m.free,
            total: m.total,
            budget: m.budget.into(),
        }
    }
}

impl From<FfiMemoryInfo> for MemoryInfo {
    fn from(m: FfiMemoryInfo) -> Self {
        Self {
            free: m.free,
            total: m.total,
            budget: m.budget.into(),
        }
    }
}

/// [`BackendConfig`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiBackendConfig {
    /// Device index.
    pub device: u64,
    /// Worker threads for host work (`RNone`: the backend's default).
    pub threads: ROption<u64>,
    /// Byte budget (`RNone`: free memory less the backend's margin).
    pub memory_budget: ROption<u64>,
    /// Backend options ([`BackendConfig::options`]), as (key, value) pairs in key order.
    pub options: RVec<Tuple2<RString, RString>>,
}

impl From<&BackendConfig> for FfiBackendConfig {
    fn from(c: &BackendConfig) -> Self {
        Self {
            device: c.device as u64,
            threads: c.threads.map(|t| t as u64).into(),
            memory_budget: c.memory_budget.into(),
            options: c
                .options
                .iter()
                .map(|(k, v)| Tuple2(RString::from(k.as_str()), RString::from(v.as_str())))
                .collect(),
        }
    }
}

impl From<FfiBackendConfig> for BackendConfig {
    fn from(c: FfiBackendConfig) -> Self {
        BackendConfig {
            device: c.device as usize,
            threads: c.threads.into_option().map(|t| t as usize),
            memory_budget: c.memory_budget.into_option(),
            options: c
                .options
                .into_iter()
                .map(|Tuple2(k, v)| (k.into_string(), v.into_string()))
                .collect(),
        }
    }
}

/// Bits of [`FfiCapabilities::flags`].
pub mod capability_bits {
    /// [`crate::Capabilities::ntt`].
    pub const NTT: u64 = 1 << 0;
    /// [`crate::Capabilities::coset_ntt`].
    pub const COSET_NTT: u64 = 1 << 1;
    /// [`crate::Capabilities::fused_h_poly`].
    pub const FUSED_H_POLY: u64 = 1 << 2;
    /// [`crate::Capabilities::msm_g1`].
    pub const MSM_G1: u64 = 1 << 3;
    /// [`crate::Capabilities::msm_g2`].
    pub const MSM_G2: u64 = 1 << 4;
    /// [`crate::Capabilities::resident_bases`].
    pub const RESIDENT_BASES: u64 = 1 << 5;
    /// [`crate::Capabilities::concurrent`].
    pub const CONCURRENT: u64 = 1 << 6;
    /// [`crate::Capabilities::accelerator`].
    pub const ACCELERATOR: u64 = 1 << 7;
}

/// [`Capabilities`] as flag bits (unknown bits are ignored, so new ones can be added).
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiCapabilities {
    /// Bits of [`capability_bits`].
    pub flags: u64,
    /// Largest supported log2 NTT size.
    pub max_log_ntt: u32,
}

impl From<&Capabilities> for FfiCapabilities {
    fn from(c: &Capabilities) -> Self {
        use capability_bits::*;
        let bit = |on: bool, b: u64| if on { b } else { 0 };
        Self {
            flags: bit(c.ntt, NTT)
                | bit(c.coset_ntt, COSET_NTT)
                | bit(c.fused_h_poly, FUSED_H_POLY)
                | bit(c.msm_g1, MSM_G1)
                | bit(c.msm_g2, MSM_G2)
                | bit(c.resident_bases, RESIDENT_BASES)
                | bit(c.concurrent, CONCURRENT)
                | bit(c.accelerator, ACCELERATOR),
            max_log_ntt: c.max_log_ntt,
        }
    }
}

impl From<FfiCapabilities> for Capabilities {
    fn from(c: FfiCapabilities) -> Self {
        use capability_bits::*;
        let has = |b: u64| c.flags & b != 0;
        Capabilities {
            ntt: has(NTT),
            coset_ntt: has(COSET_NTT),
            fused_h_poly: has(FUSED_H_POLY),
            msm_g1: has(MSM_G1),
            msm_g2: has(MSM_G2),
            resident_bases: has(RESIDENT_BASES),
            concurrent: has(CONCURRENT),
            accelerator: has(ACCELERATOR),
            max_log_ntt: c.max_log_ntt,
            ..Capabilities::default()
        }
    }
}

/// [`DeviceInfo`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiDeviceInfo {
    /// Human-readable name.
    pub name: RString,
    /// Total memory in bytes.
    pub memory_total: u64,
}

/// [`BackendInfo`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiBackendInfo {
    /// Name used with `--backend`.
    pub name: RString,
    /// Backend version.
    pub version: RString,
    /// One line on what it is.
    pub description: RString,
    /// Devices driven.
    pub devices: RVec<FfiDeviceInfo>,
    /// What it offers.
    pub capabilities: FfiCapabilities,
}

impl From<&BackendInfo> for FfiBackendInfo {
    fn from(i: &BackendInfo) -> Self {
        Self {
            name: i.name.as_str().into(),
            version: i.version.as_str().into(),
            description: i.description.as_str().into(),
            devices: i
                .devices
                .iter()
                .map(|d| FfiDeviceInfo {
                    name: d.name.as_str().into(),
                    memory_total: d.memory_total,
                })
                .collect(),
            capabilities: (&i.capabilities).into(),
        }
    }
}

impl From<FfiBackendInfo> for BackendInfo {
    fn from(i: FfiBackendInfo) -> Self {
        Self {
            name: i.name.into(),
            version: i.version.into(),
            description: i.description.into(),
            devices: i
                .devices
                .into_iter()
                .map(|d| DeviceInfo::new(d.name, d.memory_total))
                .collect(),
            capabilities: i.capabilities.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_round_trip() {
        let cfg = BackendConfig {
            device: 3,
            threads: Some(2),
            memory_budget: Some(1 << 30),
            ..BackendConfig::default()
        }
        .option("devices", "0,1")
        .option("tier", "streaming")
        .option("", "empty key and = in value=");
        let ffi = FfiBackendConfig::from(&cfg);
        assert_eq!(ffi.options.len(), 3);
        assert_eq!(BackendConfig::from(ffi), cfg);
        assert_eq!(cfg.get_option("devices"), Some("0,1"));
        let d = BackendConfig::default();
        assert_eq!(BackendConfig::from(FfiBackendConfig::from(&d)), d);
    }

    #[test]
    fn info_round_trips() {
        let mut caps = Capabilities::all(20);
        caps.fused_h_poly = true;
        caps.concurrent = false;
        caps.accelerator = true;
        let info = BackendInfo::new("v", "1.2.3", "d")
            .with_device(DeviceInfo::new("dev", 5))
            .with_capabilities(caps);
        let ffi = FfiBackendInfo::from(&info);
        assert_ne!(ffi.capabilities.flags & capability_bits::ACCELERATOR, 0);
        assert_eq!(BackendInfo::from(ffi), info);
        // Each flag maps to its own bit.
        let setters: [fn(&mut Capabilities); 8] = [
            |c: &mut Capabilities| c.ntt = true,
            |c: &mut Capabilities| c.coset_ntt = true,
            |c: &mut Capabilities| c.fused_h_poly = true,
            |c: &mut Capabilities| c.msm_g1 = true,
            |c: &mut Capabilities| c.msm_g2 = true,
            |c: &mut Capabilities| c.resident_bases = true,
            |c: &mut Capabilities| c.concurrent = true,
            |c: &mut Capabilities| c.accelerator = true,
        ];
        for (i, set) in setters.into_iter().enumerate() {
            let mut c = Capabilities::none();
            set(&mut c);
            let f = FfiCapabilities::from(&c);
            assert_eq!(f.flags, 1 << i);
            assert_eq!(Capabilities::from(f), c);
        }
    }
}

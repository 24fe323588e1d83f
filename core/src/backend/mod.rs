//! The backend interface: [`Ntt`], [`Msm`], [`MemoryPool`], bundled by [`Backend`].
//!
//! ## Design
//! Operations are coarse and batched (a whole batch of transforms, a whole batch of MSMs over
//! resident bases, the whole Groth16 quotient), so that a device backend keeps data resident and
//! overlaps transfers with compute behind a call, and so that the per-call cost of crossing a
//! plugin boundary is negligible. Composite operations ([`Ntt::h_poly`]) have default bodies
//! built from the primitives; a backend overrides them to fuse. What a backend offers is declared
//! in [`Capabilities`] and asked for, never discovered by a crash; a missing operation returns
//! [`crate::Error::Unsupported`].

pub mod memory;
pub mod msm;
pub mod ntt;

pub use memory::{host_memory_info, plan_tier, MemoryInfo, MemoryPool, Tier};
pub use msm::{BasesHandle, Group, Msm, MsmJob, PointSource, SharedPoints};
pub use ntt::{Ntt, NttConfig, NttDirection, Ordering};

/// What a backend can do.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// Forward/inverse NTT.
    pub ntt: bool,
    /// Coset transforms.
    pub coset_ntt: bool,
    /// `h_poly` runs fused on the device (not the default built from primitives).
    pub fused_h_poly: bool,
    /// Largest supported log2 NTT size.
    pub max_log_ntt: u32,
    /// G1 MSM.
    pub msm_g1: bool,
    /// G2 MSM.
    pub msm_g2: bool,
    /// Bases stay resident between calls (on the device or pinned).
    pub resident_bases: bool,
    /// Safe to call from several threads at once.
    pub concurrent: bool,
}

impl Capabilities {
    /// Everything a complete backend offers, for NTTs up to `2^max_log_ntt`.
    pub fn all(max_log_ntt: u32) -> Self {
        Self {
            ntt: true,
            coset_ntt: true,
            fused_h_poly: false,
            max_log_ntt,
            msm_g1: true,
            msm_g2: true,
            resident_bases: true,
            concurrent: true,
        }
    }

    /// Short comma-separated list, for tables.
    pub fn summary(&self) -> String {
        let mut v = Vec::new();
        if self.ntt {
            v.push(format!("ntt(≤2^{})", self.max_log_ntt));
        }
        if self.coset_ntt {
            v.push("coset".to_string());
        }
        if self.fused_h_poly {
            v.push("fused-h".to_string());
        }
        if self.msm_g1 {
            v.push("msm-g1".to_string());
        }
        if self.msm_g2 {
            v.push("msm-g2".to_string());
        }
        if self.resident_bases {
            v.push("resident-bases".to_string());
        }
        if self.concurrent {
            v.push("concurrent".to_string());
        }
        v.join(",")
    }
}

/// One device a backend drives.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeviceInfo {
    /// Human-readable name (e.g. `"NVIDIA H200"`, `"host (16 threads)"`).
    pub name: String,
    /// Total memory in bytes.
    pub memory_total: u64,
}

/// Identity and abilities of a backend.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BackendInfo {
    /// Name used with `--backend`.
    pub name: String,
    /// Backend version.
    pub version: String,
    /// One line on what it is.
    pub description: String,
    /// Devices driven.
    pub devices: Vec<DeviceInfo>,
    /// What it offers.
    pub capabilities: Capabilities,
}

/// How to construct a backend.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackendConfig {
    /// Device index for device backends. Default: 0.
    pub device: usize,
    /// Worker threads for host work. Default: `None` (rayon's global pool, one per core).
    pub threads: Option<usize>,
    /// Byte budget. Default: `None` (free memory less the backend's safety margin).
    pub memory_budget: Option<u64>,
}

/// A complete backend: NTT, MSM and memory management, plus its identity.
pub trait Backend: Ntt + Msm + MemoryPool + Send + Sync + 'static {
    /// Name, version, devices, capabilities.
    fn info(&self) -> BackendInfo;
}

/// Builder methods: `BackendConfig` is `#[non_exhaustive]`, so code outside this crate starts
/// from the defaults and sets what it needs:
///
/// ```
/// use bellows_core::BackendConfig;
/// let cfg = BackendConfig::new().with_threads(8).with_memory_budget(16 << 30);
/// assert_eq!(cfg.threads, Some(8));
/// assert_eq!(cfg.device, 0);
/// ```
impl BackendConfig {
    /// The defaults: device 0, rayon's global pool, no explicit budget (same as `Default`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the device index (device backends).
    pub fn with_device(mut self, device: usize) -> Self {
        self.device = device;
        self
    }

    /// Gives the backend its own pool of `threads` worker threads for host work (`0` is
    /// rejected by the backend when it is created).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// Sets the byte budget.
    pub fn with_memory_budget(mut self, bytes: u64) -> Self {
        self.memory_budget = Some(bytes);
        self
    }
}

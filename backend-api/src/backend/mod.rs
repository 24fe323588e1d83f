//! The backend interface: [`Ntt`], [`Msm`], [`MemoryPool`], bundled by [`Backend`].
//!
//! ## Design
//! Operations are coarse and batched (a whole batch of transforms, a whole batch of MSMs over
//! resident bases, the whole Groth16 quotient), so that a device backend keeps data resident and
//! overlaps transfers with compute behind a call, and so that the per-call cost of crossing a
//! plugin boundary is negligible. Composite operations ([`Ntt::h_poly`],
//! [`Backend::groth16_g1`], [`Backend::groth16_g1_g2`]) have default bodies
//! built from the primitives; a backend overrides them to fuse. What a backend offers is declared
//! in [`Capabilities`] and asked for, never discovered by a crash; a missing operation returns
//! [`crate::Error::Unsupported`].

pub mod bases_table;
pub mod encoded;
pub mod forward;
pub mod g1_phase;
pub mod memory_pool;
pub mod msm;
pub mod ntt;
pub mod quotient;

pub use bases_table::BasesTable;
pub use encoded::{encoded_size, EncodedLoad, EncodedPoints, PointDefect};
pub use g1_phase::{
    b2_sums, groth16_g1_from_primitives, groth16_g1_g2_from_parts, G1G2Sums, G1Handles,
    G1PhaseInput, ProofAssignment,
};
pub use memory_pool::{plan_tier, MemoryBudget, MemoryInfo, MemoryPool, Tier, HOST_ALIGN};
// Here too, where backends have always found it beside `MemoryInfo`.
pub use crate::host_memory::host_memory_info;

/// The module's old name (before [`memory_pool`] and [`crate::host_memory`] were split), kept
/// for bellows-core's `groth16::limits` until it names the new paths.
#[doc(hidden)]
pub mod memory {
    pub use super::memory_pool::*;
    pub use crate::host_memory::host_memory_info;
}
pub use msm::{
    check_batch, check_density, density_bit, density_words, BasesHandle, Group, Msm, MsmJob,
    PointSource, SharedPoints,
};

use std::collections::BTreeMap;

use crate::{layout::G1Jacobian, Result};
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
    /// Safe to call from several threads at once. A caller that runs several workers per
    /// backend (the pipeline) runs one for a backend without it.
    pub concurrent: bool,
    /// A device accelerator (GPU or similar) rather than the host's cores: with `msm_g2`, the
    /// prover then runs the G2 MSM on the backend by default (bellows-core's `G2Policy`)
    /// instead of on CPU threads beside it. (Absent in JSON written before it existed: false.)
    #[serde(default)]
    pub accelerator: bool,
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
            accelerator: false,
        }
    }

    /// Nothing offered (every flag false, NTTs up to 2^0); set fields from here.
    pub fn none() -> Self {
        Self::default()
    }

    /// Checks that NTTs of 2^`log_n` are within [`Capabilities::max_log_ntt`]; the error names
    /// both and the backend.
    pub fn check_ntt_size(&self, log_n: u32, backend: &str) -> Result<()> {
        if !self.ntt {
            return Err(crate::Error::unsupported(backend, "ntt"));
        }
        if log_n > self.max_log_ntt {
            return Err(crate::Error::invalid(format!(
                "a domain of 2^{log_n} needs NTTs of 2^{log_n}, but backend {backend} supports NTTs \
                 up to 2^{} only",
                self.max_log_ntt
            )));
        }
        Ok(())
    }

    /// Short comma-separated list, for tables.
    pub fn summary(&self) -> String {
        let ntt = format!("ntt(≤2^{})", self.max_log_ntt);
        [
            (self.ntt, ntt.as_str()),
            (self.coset_ntt, "coset"),
            (self.fused_h_poly, "fused-h"),
            (self.msm_g1, "msm-g1"),
            (self.msm_g2, "msm-g2"),
            (self.resident_bases, "resident-bases"),
            (self.concurrent, "concurrent"),
            (self.accelerator, "accelerator"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect::<Vec<_>>()
        .join(",")
    }
}

/// One device a backend drives. Built with [`DeviceInfo::new`]; the struct may gain fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct DeviceInfo {
    /// Human-readable name (e.g. `"NVIDIA H200"`, `"host (16 threads)"`).
    pub name: String,
    /// Total memory in bytes.
    pub memory_total: u64,
}

impl DeviceInfo {
    /// A device called `name` with `memory_total` bytes.
    pub fn new(name: impl Into<String>, memory_total: u64) -> Self {
        Self {
            name: name.into(),
            memory_total,
        }
    }
}

/// Identity and abilities of a backend. Built with [`BackendInfo::new`] and the `with_*`
/// methods; the struct may gain fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
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

impl BackendInfo {
    /// A backend called `name` (what `--backend` takes), of `version`, described in one line;
    /// no devices, no capabilities (add them with [`BackendInfo::with_device`] and
    /// [`BackendInfo::with_capabilities`]).
    pub fn new(
        name: impl Into<String>,
        version: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            description: description.into(),
            ..Self::default()
        }
    }

    /// The same with one more device.
    pub fn with_device(mut self, device: DeviceInfo) -> Self {
        self.devices.push(device);
        self
    }

    /// The same with `capabilities`.
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }
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
    /// Backend-specific knobs, by name (`--backend-opt KEY=VALUE`; `--devices` sets `devices`).
    /// A backend documents the keys it reads and ignores the others. Default: empty.
    pub options: BTreeMap<String, String>,
}

impl BackendConfig {
    /// The same configuration with option `key` set to `value`.
    pub fn option(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.options.insert(key.into(), value.into());
        self
    }

    /// The value of option `key`, if set.
    pub fn get_option(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }
}

/// A complete backend: NTT, MSM and memory management, plus its identity.
pub trait Backend: Ntt + Msm + MemoryPool + Send + Sync + 'static {
    /// Name, version, devices, capabilities.
    fn info(&self) -> BackendInfo;

    /// The Groth16 G1 phase of a batch of proofs: from the A, B, C evaluations (clobbered), the
    /// assignments, their densities and the resident query handles, returns per proof the bare
    /// sums `[H, L, A', B₁']` ([`G1PhaseInput`] says which scalars meet which points).
    ///
    /// It lives on `Backend` rather than on [`Ntt`] or [`Msm`] because it spans both: the
    /// default body ([`groth16_g1_from_primitives`]) is [`Ntt::h_poly`] followed by batched
    /// [`Msm::msm_g1`] calls with density jobs (no filtered copies of the scalars). A device
    /// backend overrides it to keep h on the device and overlap scalar uploads with the NTTs.
    fn groth16_g1(&self, input: &mut G1PhaseInput<'_>) -> Result<Vec<[G1Jacobian; 4]>> {
        groth16_g1_from_primitives(self, input)
    }

    /// The G1 phase and the G2 sums of the same batch: what [`Backend::groth16_g1`] returns,
    /// and per proof B₂' = Σ (the B scalars) · b_g2[…] over the G2 bases `b_g2` with the same
    /// density jobs as B₁' ([`ProofAssignment::b_jobs`]). The prover calls it when the G2 MSM
    /// runs on the backend.
    ///
    /// The default body ([`groth16_g1_g2_from_parts`]) is [`Backend::groth16_g1`] followed by
    /// one batched [`Msm::msm_g2`] call. A device backend overrides it so that the G2 MSM reads
    /// the assignments from the device copies the G1 phase made (at 2^27 they are 4 GiB a
    /// proof, which would otherwise cross the bus twice).
    fn groth16_g1_g2(&self, input: &mut G1PhaseInput<'_>, b_g2: BasesHandle) -> Result<G1G2Sums> {
        groth16_g1_g2_from_parts(self, input, b_g2)
    }
}

/// Builder methods: `BackendConfig` is `#[non_exhaustive]`, so code outside this crate starts
/// from the defaults and sets what it needs:
///
/// ```
/// use bellows_backend_api::BackendConfig;
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

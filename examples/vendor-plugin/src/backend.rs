//! The vendor backend: [`crate::ntt`] for transforms, core's blst Pippenger for MSMs, resident
//! bases kept as the host's shared points (zero-copy).

use bellows_backend_api::{
    backend::{
        host_memory_info, BasesHandle, BasesTable, Group, MemoryBudget, MemoryInfo, MemoryPool,
        Msm, MsmJob, Ntt, NttConfig, SharedPoints,
    },
    host_msm,
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Backend, BackendConfig, BackendInfo, Capabilities, Error, Result,
};

#[derive(Clone)]
enum Resident {
    G1(SharedPoints<G1Affine>),
    G2(SharedPoints<G2Affine>),
}

/// A complete, correct, deliberately simple backend.
pub struct VendorBackend {
    bases: BasesTable<Resident>,
    budget: MemoryBudget,
}

impl VendorBackend {
    /// Creates the backend (the configuration's `memory_budget` is honoured; device and threads
    /// are ignored: this backend runs on the host's rayon pool).
    pub fn with_config(cfg: &BackendConfig) -> Result<Self> {
        Ok(Self {
            bases: BasesTable::new(),
            budget: MemoryBudget::new(cfg.memory_budget),
        })
    }
}

impl Ntt for VendorBackend {
    fn ntt(&self, data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
        crate::ntt::ntt(data, log_n, cfg)
    }
}

macro_rules! msm_body {
    ($self:ident, $handle:ident, $jobs:ident, $out:ident, $variant:ident, $f:path, $name:literal) => {{
        if $out.len() != $jobs.len() {
            return Err(Error::invalid(format!(
                concat!($name, ": {} jobs, {} outputs"),
                $jobs.len(),
                $out.len()
            )));
        }
        // The table checks the handle (issued here, not freed, this group, this length).
        let points = match $self.bases.get($handle, Group::$variant)? {
            Resident::$variant(p) => p,
            _ => {
                return Err(Error::invalid(format!(
                    concat!($name, ": handle {} is of the other group"),
                    $handle.id
                )))
            }
        };
        for j in $jobs {
            j.check(&$handle)?;
        }
        let all = points.points();
        for (j, o) in $jobs.iter().zip($out.iter_mut()) {
            // Density jobs (interface 2.0): this backend gathers the used scalars itself.
            let scalars = j.used_scalars();
            *o = $f(&all[j.start..j.start + scalars.len()], &scalars);
        }
        Ok(())
    }};
}

impl Msm for VendorBackend {
    fn load_bases_g1(&self, bases: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        let len = bases.points().len();
        Ok(self.bases.insert(Group::G1, len, Resident::G1(bases)))
    }

    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        let len = bases.points().len();
        Ok(self.bases.insert(Group::G2, len, Resident::G2(bases)))
    }

    fn free_bases(&self, handle: BasesHandle) -> Result<()> {
        self.bases.remove(handle).map(drop)
    }

    fn msm_g1(&self, handle: BasesHandle, jobs: &[MsmJob], out: &mut [G1Jacobian]) -> Result<()> {
        msm_body!(self, handle, jobs, out, G1, host_msm::msm_g1, "msm_g1")
    }

    fn msm_g2(&self, handle: BasesHandle, jobs: &[MsmJob], out: &mut [G2Jacobian]) -> Result<()> {
        msm_body!(self, handle, jobs, out, G2, host_msm::msm_g2, "msm_g2")
    }
}

impl MemoryPool for VendorBackend {
    fn memory_info(&self) -> Result<MemoryInfo> {
        Ok(self.budget.host_info())
    }

    fn set_memory_budget(&self, bytes: Option<u64>) -> Result<()> {
        self.budget.set(bytes);
        Ok(())
    }
}

impl Backend for VendorBackend {
    fn info(&self) -> BackendInfo {
        BackendInfo::new(
            "vendor",
            env!("CARGO_PKG_VERSION"),
            "example vendor plugin: radix-2 NTT with a C permutation kernel, blst MSM",
        )
        .with_device(bellows_backend_api::backend::DeviceInfo::new(
            "host",
            host_memory_info().total,
        ))
        .with_capabilities(Capabilities::all(32))
    }
}

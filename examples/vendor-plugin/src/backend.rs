//! The vendor backend: [`crate::ntt`] for transforms, core's blst Pippenger for MSMs, resident
//! bases kept as the host's shared points (zero-copy).

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
};

use bellows_core::{
    backend::{
        host_memory_info, BasesHandle, Group, MemoryInfo, MemoryPool, Msm, MsmJob, Ntt, NttConfig,
        SharedPoints,
    },
    groth16::host_msm,
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Backend, BackendConfig, BackendInfo, Capabilities, Error, Result,
};

enum Resident {
    G1(SharedPoints<G1Affine>),
    G2(SharedPoints<G2Affine>),
}

/// A complete, correct, deliberately simple backend.
pub struct VendorBackend {
    bases: Mutex<HashMap<u64, (BasesHandle, Resident)>>,
    next_id: AtomicU64,
    budget: Mutex<Option<u64>>,
}

impl VendorBackend {
    /// Creates the backend (the configuration's `memory_budget` is honoured; device and threads
    /// are ignored: this backend runs on the host's rayon pool).
    pub fn with_config(cfg: &BackendConfig) -> Result<Self> {
        Ok(Self {
            bases: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            budget: Mutex::new(cfg.memory_budget),
        })
    }

    fn insert(&self, group: Group, len: usize, r: Resident) -> BasesHandle {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let handle = BasesHandle {
            id,
            group,
            len: len as u64,
        };
        self.bases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, (handle, r));
        handle
    }

    fn unknown(handle: BasesHandle) -> Error {
        Error::invalid(format!(
            "vendor: bases handle {} is not resident (freed or never loaded)",
            handle.id
        ))
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
        let points = {
            let table = $self.bases.lock().unwrap_or_else(|p| p.into_inner());
            match table.get(&$handle.id) {
                Some((h, Resident::$variant(p))) => {
                    for j in $jobs {
                        j.check(h)?;
                    }
                    p.clone()
                }
                Some(_) => {
                    return Err(Error::invalid(format!(
                        concat!($name, ": handle {} is of the other group"),
                        $handle.id
                    )))
                }
                None => return Err(Self::unknown($handle)),
            }
        };
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
        Ok(self.insert(Group::G1, len, Resident::G1(bases)))
    }

    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        let len = bases.points().len();
        Ok(self.insert(Group::G2, len, Resident::G2(bases)))
    }

    fn free_bases(&self, handle: BasesHandle) -> Result<()> {
        let mut table = self.bases.lock().unwrap_or_else(|p| p.into_inner());
        table
            .remove(&handle.id)
            .map(|_| ())
            .ok_or_else(|| Self::unknown(handle))
    }

    fn msm_g1(
        &self,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G1Jacobian],
    ) -> Result<()> {
        msm_body!(self, handle, jobs, out, G1, host_msm::msm_g1, "msm_g1")
    }

    fn msm_g2(
        &self,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G2Jacobian],
    ) -> Result<()> {
        msm_body!(self, handle, jobs, out, G2, host_msm::msm_g2, "msm_g2")
    }
}

impl MemoryPool for VendorBackend {
    fn memory_info(&self) -> Result<MemoryInfo> {
        let mut m = host_memory_info();
        m.budget = *self.budget.lock().unwrap_or_else(|p| p.into_inner());
        Ok(m)
    }

    fn set_memory_budget(&self, bytes: Option<u64>) -> Result<()> {
        *self.budget.lock().unwrap_or_else(|p| p.into_inner()) = bytes;
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
        .with_device(bellows_core::backend::DeviceInfo::new(
            "host",
            host_memory_info().total,
        ))
        .with_capabilities(Capabilities::all(32))
    }
}

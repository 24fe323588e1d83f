//! [`CudaBackend`]: the Bellows [`Backend`] on one NVIDIA GPU.
//!
//! - NTT: the device transforms of [`crate::ntt`] (host data copied in and out per call).
//! - `h_poly`: fused on the device: a, b, c are uploaded once, go through the inverse transform,
//!   the coset transform, the pointwise `(a·b − c)/Z` and the inverse coset transform without
//!   leaving device memory; only h comes back.
//! - MSM: bases are copied to device memory once by `load_bases_*` and stay there until
//!   `free_bases`; every job runs the device Pippenger of [`crate::msm`], G1 and G2.
//! - Memory: free/total from the driver, an optional byte budget (`memory_budget` or
//!   `set_memory_budget`) under which bases are loaded, and `trim` returning the stream-ordered
//!   pool's free memory to the driver.
//!
//! Device work of one backend is serialised by a lock (one stream); several backends (one per
//! GPU, or two per GPU) run concurrently. Every driver failure is an [`Error`], never a panic.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering as AtomicOrdering},
        Arc, Mutex, MutexGuard,
    },
};

use bellows_core::{
    backend::{
        ntt::{batch_size, coset_generator},
        BackendConfig, BackendInfo, BasesHandle, Capabilities, DeviceInfo, Group, MemoryInfo,
        MemoryPool, Msm, MsmJob, Ntt, NttConfig, Ordering, SharedPoints,
    },
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Backend, Error, Result,
};
use cudarc::driver::{DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg};
use ff::Field;

use crate::{
    memory::{DeviceVec, Plain},
    msm::{G1, G2},
    ntt::MAX_LOG_N,
    CudaDevice,
};

/// Name of the backend, as given to `--backend`.
pub const NAME: &str = "cuda";
/// One line on what it is.
pub const DESCRIPTION: &str = "NVIDIA GPUs through CUDA (our own kernels: NTT, fused h, Pippenger MSM G1/G2)";
/// Device memory kept free beyond the budget (the driver, streams and scratch need some).
pub const SAFETY_MARGIN: u64 = 1 << 30;

enum Resident {
    G1(DeviceVec<G1Affine>),
    G2(DeviceVec<G2Affine>),
}

impl Resident {
    fn bytes(&self) -> u64 {
        match self {
            Resident::G1(v) => v.bytes() as u64,
            Resident::G2(v) => v.bytes() as u64,
        }
    }
}

/// The CUDA backend on one GPU.
pub struct CudaBackend {
    dev: CudaDevice,
    work: Mutex<()>,
    bases: Mutex<HashMap<u64, Arc<Resident>>>,
    next_id: AtomicU64,
    budget: Mutex<Option<u64>>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.dev)
            .finish_non_exhaustive()
    }
}

/// An Fr passed by value to a kernel.
#[repr(C)]
#[derive(Clone, Copy)]
struct FrArg([u64; 4]);
// SAFETY: four u64 limbs, the layout of the kernel's `Fr` parameter (32 bytes, 8-aligned).
unsafe impl DeviceRepr for FrArg {}

impl CudaBackend {
    /// Opens GPU `cfg.device`; errors (no driver, no device, old GPU, no kernels) are clear.
    pub fn with_config(cfg: &BackendConfig) -> Result<Self> {
        let dev = CudaDevice::new(cfg.device)?;
        Ok(Self {
            dev,
            work: Mutex::new(()),
            bases: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            budget: Mutex::new(cfg.memory_budget),
        })
    }

    /// The device.
    pub fn device(&self) -> &CudaDevice {
        &self.dev
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        self.work.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn resident(&self, handle: BasesHandle, group: Group) -> Result<Arc<Resident>> {
        let map = self.bases.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(&handle.id) {
            Some(r) if handle.group == group => Ok(r.clone()),
            Some(_) => Err(Error::invalid(format!(
                "handle {} holds {:?} bases, not {group:?}",
                handle.id, handle.group
            ))),
            None => Err(Error::invalid(format!(
                "unknown or freed bases handle {}",
                handle.id
            ))),
        }
    }

    /// Refuses a load that would take the device past its budget (or its free memory less the
    /// safety margin) with a recoverable out-of-memory error.
    fn check_room(&self, bytes: u64) -> Result<()> {
        let info = self.memory_info()?;
        let resident: u64 = self
            .bases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|r| r.bytes())
            .sum();
        let free = info.free.saturating_sub(SAFETY_MARGIN);
        let room = match info.budget {
            Some(b) => free.min(b.saturating_sub(resident)),
            None => free,
        };
        if bytes > room {
            return Err(Error::OutOfMemory {
                device: self.dev.label().to_string(),
                requested: bytes,
                available: room,
            });
        }
        Ok(())
    }

    fn load<T: Plain>(
        &self,
        bases: &[T],
        group: Group,
        wrap: fn(DeviceVec<T>) -> Resident,
    ) -> Result<BasesHandle> {
        let bytes = std::mem::size_of_val(bases) as u64;
        self.check_room(bytes)?;
        let d = {
            let _g = self.lock();
            let d = self.dev.upload(bases)?;
            self.dev.synchronize()?;
            d
        };
        let id = self.next_id.fetch_add(1, AtomicOrdering::Relaxed);
        self.bases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, Arc::new(wrap(d)));
        Ok(BasesHandle {
            id,
            group,
            len: bases.len() as u64,
        })
    }

    /// The fused quotient on device-resident data (see [`Ntt::h_poly`]); `a` receives h.
    pub fn h_poly_device(
        &self,
        a: &mut DeviceVec<Fr>,
        b: &mut DeviceVec<Fr>,
        c: &mut DeviceVec<Fr>,
        log_n: u32,
    ) -> Result<()> {
        let inv = NttConfig::inverse().with_orders(Ordering::Natural, Ordering::BitReversed);
        let fwd_coset = NttConfig::forward()
            .with_coset(true)
            .with_orders(Ordering::BitReversed, Ordering::Natural);
        for v in [&mut *a, &mut *b, &mut *c] {
            self.dev.ntt_device(v, log_n, &inv)?;
            self.dev.ntt_device(v, log_n, &fwd_coset)?;
        }
        // Z(g·ω^j) = g^n − 1 for every j.
        let n = 1u64 << log_n;
        let z = coset_generator().pow_vartime([n]) - blstrs::Scalar::ONE;
        let z_inv: blstrs::Scalar = Option::from(z.invert())
            .ok_or_else(|| Error::invalid("Z vanishes on the coset"))?;
        let z_inv = FrArg(blst::blst_fr::from(z_inv).l);
        let len = a.len() as u64;
        let stream = self.dev.stream();
        let (pa, pb, pc) = (
            a.buf.device_ptr_mut(stream).0,
            b.buf.device_ptr_mut(stream).0,
            c.buf.device_ptr_mut(stream).0,
        );
        let mut l = stream.launch_builder(&self.dev.k.quotient_pointwise);
        l.arg(&pa).arg(&pb).arg(&pc).arg(&z_inv).arg(&len);
        let cfg = LaunchConfig {
            grid_dim: (len.div_ceil(256).clamp(1, 1 << 16) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: reads and writes len elements of a, reads len of b and c (equal lengths).
        unsafe { l.launch(cfg) }.map_err(|e| self.dev.err(e))?;
        let inv_coset = NttConfig::inverse().with_coset(true);
        self.dev.ntt_device(a, log_n, &inv_coset)
    }
}

impl Ntt for CudaBackend {
    fn ntt(&self, data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
        batch_size(data.len(), log_n)?;
        if log_n > MAX_LOG_N {
            return Err(Error::unsupported(
                NAME,
                format!("NTT of 2^{log_n} (the device transforms go to 2^{MAX_LOG_N})"),
            ));
        }
        if data.is_empty() {
            return Ok(());
        }
        let _g = self.lock();
        self.dev.ntt(data, log_n, cfg)
    }

    fn h_poly(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr], log_n: u32) -> Result<()> {
        if a.len() != b.len() || a.len() != c.len() {
            return Err(Error::invalid(format!(
                "h_poly: a, b, c have different lengths ({}, {}, {})",
                a.len(),
                b.len(),
                c.len()
            )));
        }
        batch_size(a.len(), log_n)?;
        if log_n > MAX_LOG_N {
            return Err(Error::unsupported(
                NAME,
                format!("h_poly over 2^{log_n} (the device transforms go to 2^{MAX_LOG_N})"),
            ));
        }
        if a.is_empty() {
            return Ok(());
        }
        let _g = self.lock();
        let mut da = self.dev.upload(a)?;
        let mut db = self.dev.upload(b)?;
        let mut dc = self.dev.upload(c)?;
        self.h_poly_device(&mut da, &mut db, &mut dc, log_n)?;
        drop((db, dc));
        self.dev.download_into(&da, a)
    }
}

impl Msm for CudaBackend {
    fn load_bases_g1(&self, bases: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        self.load(bases.points(), Group::G1, Resident::G1)
    }

    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        self.load(bases.points(), Group::G2, Resident::G2)
    }

    fn free_bases(&self, handle: BasesHandle) -> Result<()> {
        let removed = self
            .bases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&handle.id);
        match removed {
            // A job holding the Arc keeps the memory alive until it is done.
            Some(_) => Ok(()),
            None => Err(Error::invalid(format!(
                "unknown or freed bases handle {}",
                handle.id
            ))),
        }
    }

    fn msm_g1(
        &self,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G1Jacobian],
    ) -> Result<()> {
        check_jobs(&handle, jobs, out.len())?;
        let r = self.resident(handle, Group::G1)?;
        let Resident::G1(bases) = &*r else {
            unreachable!("resident() checked the group")
        };
        let _g = self.lock();
        for (job, o) in jobs.iter().zip(out.iter_mut()) {
            *o = self.dev.msm::<G1>(bases, job.start, job.scalars, None)?;
        }
        Ok(())
    }

    fn msm_g2(
        &self,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G2Jacobian],
    ) -> Result<()> {
        check_jobs(&handle, jobs, out.len())?;
        let r = self.resident(handle, Group::G2)?;
        let Resident::G2(bases) = &*r else {
            unreachable!("resident() checked the group")
        };
        let _g = self.lock();
        for (job, o) in jobs.iter().zip(out.iter_mut()) {
            *o = self.dev.msm::<G2>(bases, job.start, job.scalars, None)?;
        }
        Ok(())
    }
}

fn check_jobs(handle: &BasesHandle, jobs: &[MsmJob<'_>], outs: usize) -> Result<()> {
    if jobs.len() != outs {
        return Err(Error::invalid(format!(
            "{} MSM jobs but room for {outs} results",
            jobs.len()
        )));
    }
    jobs.iter().try_for_each(|j| j.check(handle))
}

impl MemoryPool for CudaBackend {
    fn memory_info(&self) -> Result<MemoryInfo> {
        let (free, total) = self.dev.memory_info()?;
        Ok(MemoryInfo {
            free: free as u64,
            total: total as u64,
            budget: *self.budget.lock().unwrap_or_else(|e| e.into_inner()),
        })
    }

    fn set_memory_budget(&self, bytes: Option<u64>) -> Result<()> {
        *self.budget.lock().unwrap_or_else(|e| e.into_inner()) = bytes;
        Ok(())
    }

    fn trim(&self) -> Result<()> {
        let _g = self.lock();
        self.dev.synchronize()?;
        self.dev.trim_pool()
    }
}

impl Backend for CudaBackend {
    fn info(&self) -> BackendInfo {
        let mut capabilities = Capabilities::all(MAX_LOG_N);
        capabilities.fused_h_poly = true;
        let memory_total = self.dev.memory_info().map(|(_, t)| t as u64).unwrap_or(0);
        let (major, minor) = self.dev.compute_capability();
        BackendInfo {
            name: NAME.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            description: DESCRIPTION.to_string(),
            devices: vec![DeviceInfo {
                name: format!(
                    "{} ({}, compute {major}.{minor})",
                    self.dev.name(),
                    self.dev.label()
                ),
                memory_total,
            }],
            capabilities,
        }
    }
}

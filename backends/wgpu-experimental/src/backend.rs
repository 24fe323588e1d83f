//! [`WgpuBackend`]: the Bellows [`Backend`] on one wgpu adapter.
//!
//! - NTT and the fused `h_poly` on the device ([`crate::ntt`]); host data is copied in and out
//!   per call, in as many vectors at a time as one storage binding holds.
//! - MSM ([`crate::msm`]): bases copied to device memory once by `load_bases_*` and kept until
//!   `free_bases`; G1 and G2. Density jobs have their used scalars gathered on the host.
//! - The composite G1 phase is the default one (`h_poly`, then the MSMs).
//! - Memory: wgpu does not report device memory; the backend counts the bytes of the bases it
//!   holds against the budget (`memory_budget`, or `set_memory_budget`) and refuses a load that
//!   would exceed it with [`Error::OutOfMemory`]. A buffer larger than the adapter allows is the
//!   same error, naming the limit.
//!
//! All device work is serialised by one lock (one queue). Every wgpu error becomes an [`Error`]
//! (see [`crate::gpu`]), and a panic inside wgpu is caught and returned as [`Error::Device`].

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    sync::{Arc, Mutex, MutexGuard},
};

use bellows_core::{
    backend::{
        check_batch, ntt::h_poly_batch, BackendConfig, BackendInfo, BasesHandle, BasesTable,
        Capabilities, DeviceInfo, Group, MemoryInfo, MemoryPool, Msm, MsmJob, Ntt, NttConfig,
        SharedPoints,
    },
    error::panic_message,
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Backend, Error, Result,
};

use crate::{
    adapter::{self, NAME},
    gpu::{Gpu, Int64},
    msm::{self, MsmEngine, MsmGroup, ResidentBases, G1, G2},
    ntt::{max_log_ntt, NttEngine},
};

/// One line on what it is.
pub const DESCRIPTION: &str = "experimental: GPUs through wgpu (Vulkan, Metal, DX12) with our own \
     WGSL kernels (NTT, fused h, Pippenger MSM G1/G2)";

/// The wgpu backend on one adapter.
pub struct WgpuBackend {
    gpu: Gpu,
    ntt: NttEngine,
    msm: MsmEngine,
    work: Mutex<()>,
    selected: usize,
    adapters: Vec<String>,
    g2_on_device: bool,
    /// Resident bases by handle: the device buffers.
    bases: BasesTable<Arc<ResidentBases>>,
    budget: Mutex<Option<u64>>,
}

impl std::fmt::Debug for WgpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuBackend")
            .field("adapter", &self.gpu.name)
            .finish_non_exhaustive()
    }
}

impl WgpuBackend {
    /// Opens the adapter the configuration selects ([`adapter::select`]: option `adapter` =
    /// index or part of a name, else `device`, else the first usable adapter). Fails with a
    /// clear [`Error::Backend`] when there is none, listing what was found.
    pub fn with_config(cfg: &BackendConfig) -> Result<Self> {
        catch(|| {
            let instance = adapter::instance();
            let (selected, all) = adapter::select(&instance, cfg)?;
            let g2_on_device = g2_option(cfg)?;
            let int64 = int64_option(cfg)?;
            let gpu = Gpu::open(&all[selected].adapter, int64)?;
            let ntt = NttEngine::new(&gpu)?;
            let msm = MsmEngine::new(&gpu)?;
            Ok(Self {
                gpu,
                ntt,
                msm,
                work: Mutex::new(()),
                selected,
                adapters: all.iter().map(|a| a.describe()).collect(),
                g2_on_device,
                bases: BasesTable::new(),
                budget: Mutex::new(cfg.memory_budget),
            })
        })
    }

    /// The default configuration.
    pub fn new() -> Result<Self> {
        Self::with_config(&BackendConfig::default())
    }

    /// The adapter in use.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Runs `f` with the device to itself, inside wgpu error scopes, panics caught.
    fn run<T>(&self, what: &str, f: impl FnOnce(&Gpu) -> Result<T>) -> Result<T> {
        let _guard = self.lock();
        catch(|| self.gpu.scoped(what, || f(&self.gpu)))
    }

    /// Runs `f` on the device with the backend's lock held, inside wgpu error scopes, panics
    /// caught (for [`crate::testing`]).
    pub fn with_gpu<T>(&self, what: &str, f: impl FnOnce(&Gpu) -> Result<T>) -> Result<T> {
        self.run(what, f)
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        self.work.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn held_bytes(&self) -> u64 {
        let mut held = 0;
        self.bases.for_each(|_, r| held += r.bytes);
        held
    }

    fn load<G: MsmGroup>(&self, group: Group, points: &[G::Affine]) -> Result<BasesHandle> {
        let need = std::mem::size_of_val(points) as u64;
        if let Some(budget) = *self.budget.lock().unwrap_or_else(|e| e.into_inner()) {
            let held = self.held_bytes();
            if held + need > budget {
                return Err(Error::OutOfMemory {
                    device: format!("{NAME}:{}", self.gpu.name),
                    requested: need,
                    available: budget.saturating_sub(held),
                });
            }
        }
        let resident = self.run("loading bases", |gpu| self.msm.load::<G>(gpu, points))?;
        Ok(self.bases.insert(group, points.len(), Arc::new(resident)))
    }

    fn resident(&self, handle: &BasesHandle, group: Group) -> Result<Arc<ResidentBases>> {
        self.bases.get(*handle, group)
    }

    fn msm<G: MsmGroup>(
        &self,
        group: Group,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G::Jacobian],
    ) -> Result<()> {
        check_batch(&handle, jobs, out.len())?;
        let resident = self.resident(&handle, group)?;
        for (job, slot) in jobs.iter().zip(out.iter_mut()) {
            let scalars = job.used_scalars();
            let sum = if scalars.is_empty() {
                <G::Projective as group::Group>::identity()
            } else {
                self.run("msm", |gpu| {
                    self.msm
                        .msm::<G>(gpu, &resident, job.start as u64, &scalars)
                })?
            };
            *slot = sum.into();
        }
        Ok(())
    }
}

/// Option `g2` (`device` or `host`): whether the backend offers the G2 MSM (capability
/// `msm_g2`) or leaves it to the host's CPU threads. By default `host` on every adapter: on
/// software adapters the G2 kernels take minutes to compile, and on a GPU the WGSL G2 MSM is far
/// slower than the host's cores (measured in docs/wgpu.md).
fn g2_option(cfg: &BackendConfig) -> Result<bool> {
    match cfg.get_option("g2").map(str::trim) {
        // Host by default everywhere: on the H200 (run 18) the WGSL G2 MSM took 31.8 s at 2^20,
        // CPU threads beside the device work 3.4 s; `g2=device` is for measuring it.
        None | Some("") => Ok(false),
        Some("device") => Ok(true),
        Some("host") => Ok(false),
        Some(other) => Err(Error::invalid(format!(
            "option g2={other:?}: give `device` or `host`"
        ))),
    }
}

/// Option `int64` (`auto`, `on` or `off`): whether the kernels build their limb products with
/// 64-bit integers where the adapter offers them (wgpu's `SHADER_INT64`) or from 16-bit halves
/// in portable WGSL. `auto` (the default): on hardware adapters, not on software ones (see
/// [`Int64`]); `on` wherever offered; `off` never (what adapters without 64-bit integers run).
fn int64_option(cfg: &BackendConfig) -> Result<Int64> {
    match cfg.get_option("int64").map(str::trim) {
        None | Some("") | Some("auto") => Ok(Int64::Auto),
        Some("on") => Ok(Int64::On),
        Some("off") => Ok(Int64::Off),
        Some(other) => Err(Error::invalid(format!(
            "option int64={other:?}: give `auto`, `on` or `off`"
        ))),
    }
}

/// Runs `f`, turning a panic into [`Error::Device`].
fn catch<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(Error::Device {
            device: NAME.into(),
            reason: format!("wgpu panicked: {}", panic_message(&*p)),
        }),
    }
}

impl Ntt for WgpuBackend {
    fn ntt(&self, data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
        bellows_core::backend::ntt::batch_size(data.len(), log_n)?;
        if data.is_empty() {
            return Ok(());
        }
        self.run("ntt", |gpu| self.ntt.ntt(gpu, data, log_n, cfg))
    }

    fn h_poly(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr], log_n: u32) -> Result<()> {
        h_poly_batch(a.len(), b.len(), c.len(), log_n)?;
        if a.is_empty() {
            return Ok(());
        }
        self.run("h_poly", |gpu| self.ntt.h_poly(gpu, a, b, c, log_n))
    }
}

impl Msm for WgpuBackend {
    fn load_bases_g1(&self, bases: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        self.load::<G1>(Group::G1, bases.points())
    }

    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        if !self.g2_on_device {
            return Err(Error::unsupported(NAME, "load_bases_g2 (option g2=host)"));
        }
        self.load::<G2>(Group::G2, bases.points())
    }

    fn free_bases(&self, handle: BasesHandle) -> Result<()> {
        self.bases.remove(handle).map(drop)
    }

    fn msm_g1(
        &self,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G1Jacobian],
    ) -> Result<()> {
        self.msm::<G1>(Group::G1, handle, jobs, out)
    }

    fn msm_g2(
        &self,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G2Jacobian],
    ) -> Result<()> {
        if !self.g2_on_device {
            return Err(Error::unsupported(NAME, "msm_g2 (option g2=host)"));
        }
        self.msm::<G2>(Group::G2, handle, jobs, out)
    }
}

impl MemoryPool for WgpuBackend {
    fn memory_info(&self) -> Result<MemoryInfo> {
        Err(Error::unsupported(
            NAME,
            "memory_info (wgpu does not report device memory)",
        ))
    }

    fn set_memory_budget(&self, bytes: Option<u64>) -> Result<()> {
        *self.budget.lock().unwrap_or_else(|e| e.into_inner()) = bytes;
        Ok(())
    }
}

impl Backend for WgpuBackend {
    fn info(&self) -> BackendInfo {
        let max_log = max_log_ntt(&self.gpu);
        let caps = {
            let mut c = Capabilities::all(max_log);
            c.fused_h_poly = true;
            c.accelerator = true;
            c.msm_g2 = self.g2_on_device;
            c
        };
        let mut info = BackendInfo::new(
            NAME,
            env!("CARGO_PKG_VERSION"),
            format!(
                "{DESCRIPTION}; on adapter {} of {} (choose with --backend-opt adapter=INDEX|NAME); \
                 limb products {}; MSM passes of up to 2^{} G1 scalars",
                self.selected,
                self.adapters.len(),
                if self.gpu.int64 {
                    "with 64-bit integers (SHADER_INT64; --backend-opt int64=off: 32-bit only)"
                } else {
                    "from 16-bit halves (32-bit integers; --backend-opt int64=on: 64-bit where offered)"
                },
                63 - msm::max_pass(&self.gpu, crate::shader::GroupKind::G1).leading_zeros()
            ),
        )
        .with_capabilities(caps);
        for (i, d) in self.adapters.iter().enumerate() {
            let mark = if i == self.selected { "[in use] " } else { "" };
            info = info.with_device(DeviceInfo::new(format!("{mark}{d}"), 0));
        }
        info
    }
}

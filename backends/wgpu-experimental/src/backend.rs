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

use bellows_backend_api::{
    backend::{
        check_batch, ntt::h_poly_batch, BackendConfig, BackendInfo, BasesHandle, BasesTable,
        Capabilities, DeviceInfo, Group, MemoryBudget, MemoryInfo, MemoryPool, Msm, MsmJob, Ntt,
        NttConfig, SharedPoints,
    },
    error::panic_message,
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Backend, Error, Result,
};

use crate::{
    adapter::{self, NAME},
    gpu::{DeviceOptions, Gpu, Int64, Timing, WG},
    msm::{MsmEngine, MsmGroup, MsmTuning, ResidentBases, G1, G2},
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
    budget: MemoryBudget,
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
            let (tuning, msm_wg, profile) = msm_options(cfg)?;
            let hardware = all[selected].adapter.get_info().device_type != wgpu::DeviceType::Cpu;
            let (msm_straight, msm_straight_g2) = match msm_arith_option(cfg)? {
                Some(straight) => (straight, straight),
                None => (hardware, false),
            };
            let gpu = Gpu::open_with(
                &all[selected].adapter,
                &DeviceOptions {
                    int64,
                    timestamps: profile != Profile::Off && profile != Profile::Host,
                    msm_wg,
                    msm_straight,
                    msm_straight_g2,
                },
            )?;
            let tuning = check_msm_tuning(&gpu, tuning, profile)?;
            let ntt = NttEngine::new(&gpu)?;
            let msm = MsmEngine::with_tuning(&gpu, tuning)?;
            Ok(Self {
                gpu,
                ntt,
                msm,
                work: Mutex::new(()),
                selected,
                adapters: all.iter().map(|a| a.describe()).collect(),
                g2_on_device,
                bases: BasesTable::new(),
                budget: MemoryBudget::new(cfg.memory_budget),
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

    /// The MSM engine (its tuning, the last profile).
    pub fn msm_engine(&self) -> &MsmEngine {
        &self.msm
    }

    /// Runs `f` with the device to itself, inside wgpu error scopes, panics caught.
    fn run<T>(&self, what: &str, f: impl FnOnce(&Gpu) -> Result<T>) -> Result<T> {
        let _guard = self.lock();
        catch(|| self.gpu.scoped(what, || f(&self.gpu)))
    }

    /// Runs `f` on the device with the backend's lock held, inside wgpu error scopes, panics
    /// caught (for the element-wise kernels of the tools crate, bellows-wgpu-tools).
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
        if let Some(budget) = self.budget.get() {
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
        // Host by default everywhere (see above); `g2=device` is for measuring the WGSL G2 MSM.
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

/// Option `msm-profile` (or the environment variable `BELLOWS_WGPU_MSM_PROFILE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Profile {
    Off,
    /// Timestamps where the adapter offers them, else host timing.
    On,
    Host,
}

/// A whole number option `key` within `range` (`auto` or absent: `None`).
fn number_option(
    cfg: &BackendConfig,
    key: &str,
    range: std::ops::RangeInclusive<u64>,
    what: &str,
) -> Result<Option<u64>> {
    let Some(v) = cfg.get_option(key).map(str::trim) else {
        return Ok(None);
    };
    if v.is_empty() || v == "auto" {
        return Ok(None);
    }
    match v.parse::<u64>() {
        Ok(x) if range.contains(&x) => Ok(Some(x)),
        _ => Err(Error::invalid(format!(
            "option {key}={v:?}: give `auto` or {what} from {} to {}",
            range.start(),
            range.end()
        ))),
    }
}

/// The MSM's options (docs/wgpu.md lists them): its tuning, the threads per workgroup of its
/// kernels, and the profile asked for. Values are checked here; the limits that depend on the
/// adapter in [`check_msm_tuning`].
fn msm_options(cfg: &BackendConfig) -> Result<(MsmTuning, u32, Profile)> {
    let mut t = MsmTuning {
        window: number_option(cfg, "msm-window", 4..=20, "a window width in bits")?
            .map(|c| c as u32),
        ..MsmTuning::default()
    };
    if let Some(n) = number_option(cfg, "msm-threads", 1 << 10..=1 << 24, "a thread count")? {
        t.threads = n;
    }
    t.chunk = number_option(
        cfg,
        "msm-chunk",
        8..=4096,
        "entries per accumulation thread",
    )?;
    if let Some(s) = number_option(cfg, "msm-segment", 1..=1024, "a power of two")? {
        if !s.is_power_of_two() {
            return Err(Error::invalid(format!(
                "option msm-segment={s}: give a power of two from 1 to 1024"
            )));
        }
        t.segment = s as u32;
    }
    if let Some(p) = number_option(cfg, "msm-reduce", 2..=256, "inputs per thread")? {
        t.reduce_per = p as u32;
    }
    let wg = match number_option(cfg, "msm-wg", 32..=1024, "a power of two")? {
        None => WG,
        Some(w) if w.is_power_of_two() => w as u32,
        Some(w) => {
            return Err(Error::invalid(format!(
                "option msm-wg={w}: give a power of two from 32 to 1024"
            )))
        }
    };
    let env = std::env::var("BELLOWS_WGPU_MSM_PROFILE").ok();
    let profile = match cfg
        .get_option("msm-profile")
        .map(str::trim)
        .or(env.as_deref().map(str::trim))
    {
        None | Some("") | Some("off") | Some("0") => Profile::Off,
        Some("on") | Some("1") => Profile::On,
        Some("host") => Profile::Host,
        Some(other) => {
            return Err(Error::invalid(format!(
                "option msm-profile={other:?} (or BELLOWS_WGPU_MSM_PROFILE): give `off`, `on` \
                 (device timestamps where offered, else host timing) or `host`"
            )))
        }
    };
    Ok((t, wg, profile))
}

/// Option `msm-arith` (`auto`, `loops` or `straight`): the MSM kernels' field multiplication,
/// product batches and point loads as written in field.wgsl and curve.wgsl (loops with constant
/// bounds, which compilers are expected to unroll) or generated as straight-line code with
/// constant indices only (see [`crate::shader::field_mul_straight`]); `straight` and `loops`
/// apply to G1's and G2's kernels. `None` (`auto`, the default): G1's straight on hardware
/// adapters — NVIDIA's compiler did not unroll the loops, and the G1 MSM ran several times
/// slower with them (docs/benchmarks.md) — and loops on software ones, where Mesa's
/// lavapipe compiles the straight kernels for minutes; G2's loops everywhere (G2 runs on the
/// host by default; its straight kernels were not run on a GPU).
fn msm_arith_option(cfg: &BackendConfig) -> Result<Option<bool>> {
    match cfg.get_option("msm-arith").map(str::trim) {
        None | Some("") | Some("auto") => Ok(None),
        Some("loops") => Ok(Some(false)),
        Some("straight") => Ok(Some(true)),
        Some(other) => Err(Error::invalid(format!(
            "option msm-arith={other:?}: give `auto`, `loops` or `straight`"
        ))),
    }
}

/// The limits of the MSM's options that depend on the adapter: threads per workgroup within
/// its limit; on software adapters (Mesa's lavapipe and its loop limiter, see docs/wgpu.md)
/// loops of at most about 300 curve additions, so at most 256 entries per accumulation thread,
/// 64 buckets per window segment and 64 inputs per reduction thread. Resolves the profile's
/// timing (timestamps when the device was opened with them).
fn check_msm_tuning(gpu: &Gpu, mut t: MsmTuning, profile: Profile) -> Result<MsmTuning> {
    let max_wg = gpu
        .limits
        .max_compute_invocations_per_workgroup
        .min(gpu.limits.max_compute_workgroup_size_x);
    if gpu.msm_wg > max_wg {
        return Err(Error::invalid(format!(
            "option msm-wg={}: the adapter allows at most {max_wg} threads per workgroup",
            gpu.msm_wg
        )));
    }
    if gpu.device_type == wgpu::DeviceType::Cpu {
        let checks = [
            ("msm-chunk", t.chunk.unwrap_or(0), crate::msm::MAX_CHUNK),
            ("msm-segment", t.segment as u64, 64),
            ("msm-reduce", t.reduce_per as u64, 64),
        ];
        for (key, v, max) in checks {
            if v > max {
                return Err(Error::invalid(format!(
                    "option {key}={v}: at most {max} on a software adapter (longer loops trip \
                     the loop limiter of Mesa's lavapipe, which ends them early without a word)"
                )));
            }
        }
    }
    t.profile = match profile {
        Profile::Off => None,
        Profile::On if gpu.timestamps => Some(Timing::Timestamps),
        Profile::On | Profile::Host => Some(Timing::Host),
    };
    Ok(t)
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
        bellows_backend_api::backend::ntt::batch_size(data.len(), log_n)?;
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

    fn msm_g1(&self, handle: BasesHandle, jobs: &[MsmJob], out: &mut [G1Jacobian]) -> Result<()> {
        self.msm::<G1>(Group::G1, handle, jobs, out)
    }

    fn msm_g2(&self, handle: BasesHandle, jobs: &[MsmJob], out: &mut [G2Jacobian]) -> Result<()> {
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
        self.budget.set(bytes);
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
                63 - self
                    .msm
                    .max_pass(&self.gpu, crate::shader::GroupKind::G1)
                    .leading_zeros()
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

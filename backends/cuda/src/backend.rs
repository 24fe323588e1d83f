//! [`CudaBackend`]: the Bellows [`Backend`] on one NVIDIA GPU.
//!
//! - NTT: the device transforms of [`crate::ntt`] (host data copied in and out per call).
//! - `h_poly`: fused on the device: a, b, c are uploaded once; a and b go through the inverse
//!   transform and the coset transform, c through the inverse transform alone; then A·B on the
//!   coset, the inverse coset transform and `(· − c)/Z`, without leaving device memory; only h
//!   comes back.
//! - MSM: bases are copied to device memory once by `load_bases_*` and stay there until
//!   `free_bases`; every job runs the device Pippenger of [`crate::msm`], G1 and G2.
//! - Memory: free/total from the driver, an optional byte budget (`memory_budget` or
//!   `set_memory_budget`) under which bases are loaded, and `trim` returning the stream-ordered
//!   pool's free memory to the driver.
//!
//! Several GPUs: option `devices` (`all`, or a list such as `0,1`; absent: every GPU, or
//! `BackendConfig::device` alone when that is set to a non-zero index) opens every listed GPU. Bases are made resident on each (each at its own memory tier);
//! a batch of MSM jobs or of proofs is split across the GPUs, which run in parallel; single calls
//! from several threads each take a free GPU. Each GPU has one or more lanes (option `streams`,
//! default 1): a lane is a compute stream, a copy stream and staging buffers with a lock, so calls
//! on two lanes of one GPU run concurrently (one's uploads beside the other's kernels). Every
//! driver failure is an [`Error`], never a panic.
//!
//! Precomputed window multiples (option `msm-precompute=on`, window width
//! `msm-precompute-window`, default [`crate::msm::TABLE_WINDOW`]): a set that is wholly resident
//! is stored as its table of 2^(c·w)·P_i (kernels/msm.cuh), built on the device when the set is
//! loaded, so large MSMs over it take fewer additions. It costs memory (⌈256/c⌉ times the bases)
//! and time at load (c·(windows − 1) doublings a base), so it is off by default and meant for
//! provers that load their parameters once and prove many times. A set whose table does not
//! fit (leaving the work reserve) is loaded without one.

use std::sync::{
    atomic::{AtomicUsize, Ordering as AtomicOrdering},
    Arc, Mutex, MutexGuard,
};

use bellows_core::{
    backend::{
        check_batch,
        g1_phase::check_b_g2,
        groth16_g1_g2_from_parts,
        ntt::{batch_size, h_poly_batch},
        plan_tier, BackendConfig, BackendInfo, BasesHandle, BasesTable, Capabilities, DeviceInfo,
        G1G2Sums, G1PhaseInput, Group, MemoryInfo, MemoryPool, Msm, MsmJob, Ntt, NttConfig,
        SharedPoints, Tier,
    },
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Backend, Error, Result,
};
use cudarc::driver::DeviceRepr;

mod phase;

use crate::{
    host_pool::{DriverHost, HostLender},
    memory::{DeviceVec, Plain},
    msm::{BaseSource, MsmGroup, PrecomputedTable, ScalarSource, G1, G2},
    ntt::MAX_LOG_N,
    CudaDevice,
};

/// Name of the backend, as given to `--backend`.
pub const NAME: &str = "cuda";
/// One line on what it is.
pub const DESCRIPTION: &str =
    "NVIDIA GPUs through CUDA (our own kernels: NTT, fused h, Pippenger MSM G1/G2)";
/// Device memory kept free beyond the budget (the driver, streams and scratch need some).
pub const SAFETY_MARGIN: u64 = 1 << 30;

/// One resident set of bases, at the memory tier the device could afford when it was loaded:
/// all on the device (`Full`), a prefix on the device and the rest streamed from host memory
/// (`Partial`), or all streamed (`Streaming`). The host points are kept (shared, not copied)
/// whenever any point is streamed.
struct ResidentSet<T: Plain> {
    device: Option<DeviceVec<T>>,
    /// The precomputed table, which holds the bases as its first window (`device` is then
    /// None).
    table: Option<PrecomputedTable<T>>,
    host: Option<SharedPoints<T>>,
    tier: Tier,
}

impl<T: Plain> ResidentSet<T> {
    fn source(&self) -> BaseSource<'_, T> {
        if let Some(t) = &self.table {
            return BaseSource::Table(t);
        }
        match (&self.device, &self.host) {
            (Some(d), None) => BaseSource::Device(d),
            (Some(d), Some(h)) => BaseSource::Split {
                prefix: d,
                host: h.points(),
            },
            (None, Some(h)) => BaseSource::Host(h.points()),
            // No points at all (an empty query).
            (None, None) => BaseSource::Host(&[]),
        }
    }
    /// (c, windows) of the precomputed table, if any.
    fn table_shape(&self) -> Option<(u32, u32)> {
        self.table.as_ref().map(|t| (t.c(), t.windows()))
    }
    fn device_bytes(&self) -> u64 {
        self.device.as_ref().map_or(0, |d| d.bytes() as u64)
            + self.table.as_ref().map_or(0, PrecomputedTable::bytes)
    }
}

enum Resident {
    G1(ResidentSet<G1Affine>),
    G2(ResidentSet<G2Affine>),
}

impl Resident {
    fn bytes(&self) -> u64 {
        match self {
            Resident::G1(r) => r.device_bytes(),
            Resident::G2(r) => r.device_bytes(),
        }
    }
}

/// Device memory held back for MSM and NTT scratch when bases are loaded (at most).
const WORK_RESERVE: u64 = 6 << 30;

/// Most lanes (option `streams`) per GPU.
pub const MAX_STREAMS: usize = 8;

/// One lane of a GPU ([`CudaDevice::lane`]), with the lock that serialises the calls on it.
struct Lane {
    dev: CudaDevice,
    work: Mutex<()>,
}

/// One GPU of the backend: its lanes (the first opened the context).
struct Gpu {
    lanes: Vec<Lane>,
}

impl Gpu {
    fn dev(&self) -> &CudaDevice {
        &self.lanes[0].dev
    }
}

/// A lane of GPU `k` held for one call.
struct Held<'a> {
    k: usize,
    dev: &'a CudaDevice,
    _guard: MutexGuard<'a, ()>,
}

fn try_hold(k: usize, lane: &Lane) -> Option<Held<'_>> {
    let guard = match lane.work.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return None,
    };
    Some(Held {
        k,
        dev: &lane.dev,
        _guard: guard,
    })
}

fn hold(k: usize, lane: &Lane) -> Held<'_> {
    Held {
        k,
        dev: &lane.dev,
        _guard: lane.work.lock().unwrap_or_else(|e| e.into_inner()),
    }
}

/// The CUDA backend on one or several GPUs.
pub struct CudaBackend {
    gpus: Vec<Gpu>,
    next_gpu: AtomicUsize,
    /// Per handle, one resident set per GPU (same order as `gpus`).
    bases: BasesTable<Arc<Vec<Resident>>>,
    budget: Mutex<Option<u64>>,
    /// Pinned host memory lent to the prover (`alloc_host`).
    host: HostLender<DriverHost>,
    /// Window width of the precomputed tables built at load (option `msm-precompute`); None:
    /// no tables.
    precompute: Option<u32>,
    /// Option `g2-in-g1-call` (default on): `groth16_g1_g2` runs the G2 MSM inside the G1
    /// phase's call, over the assignments already in device memory; off: the default body
    /// (`groth16_g1`, then `msm_g2` uploading them again), kept for side-by-side timings.
    g2_in_g1_call: bool,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let devs: Vec<&CudaDevice> = self.gpus.iter().map(Gpu::dev).collect();
        f.debug_struct("CudaBackend")
            .field("devices", &devs)
            .finish_non_exhaustive()
    }
}

/// An Fr passed by value to a kernel.
#[repr(C)]
#[derive(Clone, Copy)]
struct FrArg([u64; 4]);
// SAFETY: four u64 limbs, the layout of the kernel's `Fr` parameter (32 bytes, 8-aligned).
unsafe impl DeviceRepr for FrArg {}

/// Parses a byte size: a number with an optional unit (`k`, `M`, `G`, `T`, with or without
/// `iB`/`B`; powers of 1024), e.g. `512MiB`, `8G`, `1073741824`.
pub fn parse_bytes(s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| Error::invalid(format!("{s:?} is not a byte size (e.g. 8GiB, 512M)")))?;
    let mult: u64 = match unit
        .trim()
        .to_ascii_lowercase()
        .trim_end_matches("ib")
        .trim_end_matches('b')
    {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => {
            return Err(Error::invalid(format!(
                "{s:?}: unknown unit (use k, M, G or T, optionally with iB)"
            )))
        }
    };
    Ok((value * mult as f64) as u64)
}

/// Lanes per GPU from option `streams` (default 1, at most [`MAX_STREAMS`]).
fn stream_count(cfg: &BackendConfig) -> Result<usize> {
    match cfg.get_option("streams").map(str::trim) {
        None => Ok(1),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_STREAMS).contains(&n) => Ok(n),
            _ => Err(Error::invalid(format!(
                "option streams={v:?}: expected a number of calls in flight per GPU from 1 to \
                 {MAX_STREAMS}"
            ))),
        },
    }
}

/// Option `pool-release`: `trim` (default; device memory freed by a call stays in the driver's
/// pool for the next call until `trim`) or `sync` (the driver's default: returned at every
/// synchronisation, so other processes see it free between calls). True for `sync`.
fn pool_release_at_sync(cfg: &BackendConfig) -> Result<bool> {
    match cfg.get_option("pool-release").map(str::trim) {
        None | Some("trim") => Ok(false),
        Some("sync") => Ok(true),
        Some(v) => Err(Error::invalid(format!(
            "option pool-release={v:?}: expected `trim` (freed device memory is kept for the \
             next call until the backend is trimmed) or `sync` (returned to the driver at \
             every synchronisation)"
        ))),
    }
}

/// Options `msm-precompute` (`on` or `off`, default off) and `msm-precompute-window` (bits,
/// 8 to 28): the window width of the tables to build at load, or None.
fn precompute_window(cfg: &BackendConfig) -> Result<Option<u32>> {
    let c = match cfg.get_option("msm-precompute-window").map(str::trim) {
        None => crate::msm::TABLE_WINDOW,
        Some(v) => match v.parse::<u32>() {
            Ok(c) if (8..=28).contains(&c) => c,
            _ => {
                return Err(Error::invalid(format!(
                    "option msm-precompute-window={v:?}: expected a window width in bits from 8 \
                     to 28"
                )))
            }
        },
    };
    match cfg.get_option("msm-precompute").map(str::trim) {
        None | Some("off") => Ok(None),
        Some("on") => Ok(Some(c)),
        Some(v) => Err(Error::invalid(format!(
            "option msm-precompute={v:?}: expected `on` (tables of window multiples built when \
             bases are loaded: faster large MSMs for more memory and load time) or `off`"
        ))),
    }
}

/// Option `g2-in-g1-call`: `on` (default) or `off`.
fn g2_in_g1_call(cfg: &BackendConfig) -> Result<bool> {
    match cfg.get_option("g2-in-g1-call").map(str::trim) {
        None | Some("on") => Ok(true),
        Some("off") => Ok(false),
        Some(v) => Err(Error::invalid(format!(
            "option g2-in-g1-call={v:?}: expected `on` (the G2 MSM of a proof runs in the G1 \
             phase's call, reading the assignments already in device memory) or `off` (a call \
             of its own, uploading them again)"
        ))),
    }
}

/// The GPU ordinals named by option `devices` (`all` or a comma-separated list); without the
/// option, `device` alone when it is set (non-zero), else every GPU.
fn device_list(cfg: &BackendConfig) -> Result<Vec<usize>> {
    match cfg.get_option("devices").map(str::trim) {
        None if cfg.device != 0 => Ok(vec![cfg.device]),
        None | Some("all") | Some("") => {
            let n = CudaDevice::count()?;
            if n == 0 {
                return Err(Error::Backend {
                    name: NAME.into(),
                    reason: "the NVIDIA driver reports no CUDA device on this machine".into(),
                });
            }
            Ok((0..n).collect())
        }
        Some(list) => list
            .split(',')
            .map(|x| {
                x.trim().parse::<usize>().map_err(|_| {
                    Error::invalid(format!(
                        "option devices={list:?}: {x:?} is not a device index (give `all` or a \
                         list like 0,1)"
                    ))
                })
            })
            .collect(),
    }
}

impl CudaBackend {
    /// Opens the GPUs the configuration names (option `devices`: `all` or a list; absent: every
    /// GPU, or `cfg.device` alone when it is non-zero). Device
    /// memory budget per GPU: `cfg.memory_budget`, or option `gpu-memory-limit` (bytes, units
    /// allowed). Calls in flight per GPU: option `streams` (default 1). Errors (no driver, no
    /// device, an old GPU, no kernels in this build, a bad option) are clear.
    pub fn with_config(cfg: &BackendConfig) -> Result<Self> {
        let streams = stream_count(cfg)?;
        let precompute = precompute_window(cfg)?;
        let release_at_sync = pool_release_at_sync(cfg)?;
        let g2_in_g1_call = g2_in_g1_call(cfg)?;
        let ordinals = device_list(cfg)?;
        let gpus = ordinals
            .iter()
            .map(|&i| {
                let first = CudaDevice::new(i)?;
                if release_at_sync {
                    first.set_pool_release(true)?;
                }
                let mut lanes = Vec::with_capacity(streams);
                for _ in 1..streams {
                    lanes.push(first.lane()?);
                }
                lanes.insert(0, first);
                Ok(Gpu {
                    lanes: lanes
                        .into_iter()
                        .map(|dev| Lane {
                            dev,
                            work: Mutex::new(()),
                        })
                        .collect(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let budget = match (cfg.memory_budget, cfg.get_option("gpu-memory-limit")) {
            (Some(b), _) => Some(b),
            (None, Some(s)) => Some(parse_bytes(s)?),
            (None, None) => None,
        };
        let host_limit = match cfg.get_option("pinned-host-limit") {
            Some(s) => parse_bytes(s)?,
            None => bellows_core::backend::host_memory_info().total / 2,
        };
        let host = HostLender::new(DriverHost::new(gpus[0].dev().context().clone()), host_limit);
        Ok(Self {
            gpus,
            next_gpu: AtomicUsize::new(0),
            bases: BasesTable::new(),
            budget: Mutex::new(budget),
            host,
            precompute,
            g2_in_g1_call,
        })
    }

    /// The first GPU.
    pub fn device(&self) -> &CudaDevice {
        self.gpus[0].dev()
    }

    /// Lanes (calls in flight) per GPU.
    pub fn streams(&self) -> usize {
        self.gpus[0].lanes.len()
    }

    /// Number of GPUs driven.
    pub fn device_count(&self) -> usize {
        self.gpus.len()
    }

    /// A free lane: the first lanes of every GPU before any second lane (round robin over the
    /// GPUs from the last one handed out), or, when all are busy, the next GPU's first lane
    /// once it is free; with its lock held.
    fn pick(&self) -> Held<'_> {
        let n = self.gpus.len();
        let start = self.next_gpu.fetch_add(1, AtomicOrdering::Relaxed) % n;
        for lane in 0..self.streams() {
            for i in 0..n {
                let k = (start + i) % n;
                if let Some(h) = try_hold(k, &self.gpus[k].lanes[lane]) {
                    return h;
                }
            }
        }
        hold(start, &self.gpus[start].lanes[0])
    }

    /// A free lane of GPU `k`, or its first lane once it is free.
    fn pick_on(&self, k: usize) -> Held<'_> {
        let lanes = &self.gpus[k].lanes;
        lanes
            .iter()
            .find_map(|l| try_hold(k, l))
            .unwrap_or_else(|| hold(k, &lanes[0]))
    }

    fn resident(&self, handle: BasesHandle, group: Group) -> Result<Arc<Vec<Resident>>> {
        self.bases.get(handle, group)
    }

    fn budget(&self) -> Option<u64> {
        *self.budget.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes of device memory still usable on GPU `k`: free memory less the safety margin, and
    /// under the budget (less what is already resident there) when one is set.
    fn room(&self, k: usize) -> Result<u64> {
        let (free, _) = self.gpus[k].dev().memory_info()?;
        let mut resident = 0u64;
        self.bases.for_each(|_, r| resident += r[k].bytes());
        let free = (free as u64).saturating_sub(SAFETY_MARGIN);
        Ok(match self.budget() {
            Some(b) => free.min(b.saturating_sub(resident)),
            None => free,
        })
    }

    /// For an MSM of `n` scalars on GPU `k` over the set `s`: the scalars per pass that fit the
    /// room left there (streamed bases need room too), shared by its lanes, and the room left
    /// beside those passes for scratch (the batch-affine rounds', the binned scatter's). One
    /// pass for the whole MSM when its upper bound ([`crate::msm::pass_bytes`]) fits;
    /// otherwise passes sized by the
    /// bound per scalar that holds for every window width, `MsmGroup::PASS_BYTES_PER_SCALAR`
    /// (which split the G2 MSM of a K = 27 proof in two passes, 100.5 M + 33.7 M scalars, with
    /// room for one, run 67). `BELLOWS_MSM_WHOLE_PASS=off` keeps the per-scalar rule, for timing.
    fn msm_room<G: MsmGroup>(
        &self,
        k: usize,
        s: &ResidentSet<G::Affine>,
        n: usize,
    ) -> Result<(usize, u64)> {
        let room = self.room(k)? / self.streams() as u64;
        let point_bytes = (G::Affine::WORDS * 8) as u64;
        let streamed = s.tier != Tier::Full;
        let stream_bytes = if streamed { point_bytes } else { 0 };
        let whole = crate::msm::pass_bytes::<G>(n, s.table_shape()) + n as u64 * stream_bytes;
        if whole_pass() && n <= crate::msm::MAX_POINTS_PER_PASS && whole <= room {
            return Ok((n.div_ceil(64).max(1) * 64, room - whole));
        }
        let per = G::PASS_BYTES_PER_SCALAR + stream_bytes;
        let points = room / per;
        if points < 1024 {
            return Err(Error::OutOfMemory {
                device: self.gpus[k].dev().label().to_string(),
                requested: 1024 * per,
                available: room,
            });
        }
        let pass = points.min(crate::msm::MAX_POINTS_PER_PASS as u64) as usize;
        Ok((pass, room.saturating_sub(n.min(pass) as u64 * per)))
    }

    /// Loads a set of bases on GPU `k` at the best tier its room allows (a full, partial or
    /// streaming residency instead of an out-of-memory failure), through the lane `held`.
    fn load_on<G: MsmGroup>(
        &self,
        held: &Held<'_>,
        bases: &SharedPoints<G::Affine>,
        group: Group,
    ) -> Result<ResidentSet<G::Affine>> {
        type T<G> = <G as MsmGroup>::Affine;
        let (k, dev) = (held.k, held.dev);
        let points = bases.points();
        let len = points.len();
        let size = (T::<G>::WORDS * 8) as u64;
        let full = len as u64 * size;
        let room = self.room(k)?;
        let reserve = (WORK_RESERVE * self.streams() as u64).min(room / 2);
        let min_chunk = 1024 * (G::PASS_BYTES_PER_SCALAR + size);
        let tier = plan_tier(full, min_chunk, room.saturating_sub(reserve), dev.label())?;
        let resident_points = match tier {
            Tier::Full => len,
            Tier::Partial(bytes) => ((bytes / size) as usize).min(len),
            Tier::Streaming(_) => 0,
        };
        let mut device = if resident_points > 0 {
            let mut d = dev.alloc_uninit::<T<G>>(resident_points)?;
            dev.upload_staged(&points[..resident_points], &mut d, |_, _| Ok(()))?;
            dev.synchronize()?;
            Some(d)
        } else {
            None
        };
        // A table where the whole set is resident and the table (with its build scratch and
        // the bases it is built from) still leaves the work reserve.
        let mut table = None;
        if let (Some(c), Tier::Full, Some(d)) = (self.precompute, tier, device.as_ref()) {
            let bytes = PrecomputedTable::<T<G>>::bytes_for(len, size, c);
            let scratch = (len.min(1 << 22) as u64) * size * 2;
            let room = self.room(k)?;
            let windows = crate::msm::window_count(c) as u64;
            if len as u64 * windows >= 1 << 31 {
                tracing::info!(
                    "{}: {len} {group:?} bases are too many for a table of {windows} windows (2^31 \
                     points at most); loaded without it",
                    dev.label()
                );
            } else if room >= bytes + scratch + reserve {
                let t0 = std::time::Instant::now();
                match dev.precompute_table::<G>(d, c) {
                    Ok(t) => {
                        tracing::info!(
                            "{}: {len} {group:?} bases stored with their window multiples (c = \
                             {c}, {} windows, {:.1} GB), built in {:.2} s",
                            dev.label(),
                            t.windows(),
                            t.bytes() as f64 / 1e9,
                            t0.elapsed().as_secs_f64()
                        );
                        table = Some(t);
                        device = None;
                    }
                    Err(Error::OutOfMemory { .. }) => tracing::info!(
                        "{}: no device memory for the {group:?} table of {len} bases; loaded \
                         without it",
                        dev.label()
                    ),
                    Err(e) => return Err(e),
                }
            } else {
                tracing::info!(
                    "{}: the {group:?} table of {len} bases ({:.1} GB) does not fit beside the \
                     work reserve ({:.1} GB free); loaded without it",
                    dev.label(),
                    bytes as f64 / 1e9,
                    room as f64 / 1e9
                );
            }
        }
        if tier != Tier::Full {
            tracing::info!(
                "{}: {len} {group:?} bases at tier {tier:?} ({resident_points} resident, the rest \
                 streamed from host memory)",
                dev.label()
            );
        }
        Ok(ResidentSet {
            device,
            table,
            host: (resident_points < len).then(|| bases.clone()),
            tier,
        })
    }

    fn load<G: MsmGroup>(
        &self,
        bases: SharedPoints<G::Affine>,
        group: Group,
        wrap: fn(ResidentSet<G::Affine>) -> Resident,
    ) -> Result<BasesHandle> {
        let len = bases.points().len();
        let mut sets = Vec::with_capacity(self.gpus.len());
        for k in 0..self.gpus.len() {
            let held = self.pick_on(k);
            sets.push(wrap(self.load_on::<G>(&held, &bases, group)?));
        }
        Ok(self.bases.insert(group, len, Arc::new(sets)))
    }

    /// The memory tier of a resident set on the first GPU (for reports and tests).
    pub fn tier_of(&self, handle: BasesHandle) -> Result<Tier> {
        let r = self.resident(handle, handle.group)?;
        Ok(match &r[0] {
            Resident::G1(s) => s.tier,
            Resident::G2(s) => s.tier,
        })
    }

    /// Runs `jobs` on the GPUs: one lane for a single job, else contiguous groups of jobs on
    /// every GPU in parallel. `run(held, jobs, out)` does one group on the lane held.
    fn spread<T: Send>(
        &self,
        jobs: &[MsmJob<'_>],
        out: &mut [T],
        run: impl Fn(&Held<'_>, &[MsmJob<'_>], &mut [T]) -> Result<()> + Sync,
    ) -> Result<()> {
        let d = self.gpus.len().min(jobs.len());
        if d <= 1 {
            return run(&self.pick(), jobs, out);
        }
        let per = jobs.len().div_ceil(d);
        std::thread::scope(|s| {
            let handles: Vec<_> = jobs
                .chunks(per)
                .zip(out.chunks_mut(per))
                .enumerate()
                .map(|(k, (j, o))| {
                    let run = &run;
                    s.spawn(move || run(&self.pick_on(k), j, o))
                })
                .collect();
            handles.into_iter().try_for_each(|h| {
                h.join().map_err(|_| Error::Backend {
                    name: NAME.into(),
                    reason: "a GPU worker thread panicked".into(),
                })?
            })
        })
    }

    /// The G1 phase of a batch, and with `b_g2` the G2 sums too, split across the GPUs
    /// ([`CudaBackend::g1_phase_on`] on each; the G2 vector is empty without `b_g2`).
    fn g1_phase(
        &self,
        input: &mut G1PhaseInput<'_>,
        b_g2: Option<BasesHandle>,
    ) -> Result<G1G2Sums> {
        input.check()?;
        let batch = input.proofs.len();
        if batch == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let log_n = input.log_n;
        too_big(log_n, "a Groth16 domain")?;
        let n = 1usize << log_n;
        let hd = input.handles;
        let rs = [
            self.resident(hd.h, Group::G1)?,
            self.resident(hd.l, Group::G1)?,
            self.resident(hd.a, Group::G1)?,
            self.resident(hd.b_g1, Group::G1)?,
        ];
        let r2 = b_g2.map(|h| self.resident(h, Group::G2)).transpose()?;
        let g2_of = |k: usize| r2.as_ref().map(|r| g2_set(&r[k]));
        let sets = |k: usize| {
            [
                g1_set(&rs[0][k]),
                g1_set(&rs[1][k]),
                g1_set(&rs[2][k]),
                g1_set(&rs[3][k]),
            ]
        };
        let d = self.gpus.len().min(batch);
        if d <= 1 {
            let held = self.pick();
            let sets = sets(held.k);
            return self.g1_phase_on(
                &held,
                input.a,
                input.b,
                input.c,
                log_n,
                input.proofs,
                sets,
                g2_of(held.k),
            );
        }
        let per = batch.div_ceil(d);
        let (a, b, c) = (&*input.a, &*input.b, &*input.c);
        let parts: Vec<Result<G1G2Sums>> = std::thread::scope(|s| {
            let handles: Vec<_> = input
                .proofs
                .chunks(per)
                .enumerate()
                .map(|(k, proofs)| {
                    let r = k * per * n..(k * per + proofs.len()) * n;
                    let (a, b, c) = (&a[r.clone()], &b[r.clone()], &c[r]);
                    let (sets, g2) = (sets(k), g2_of(k));
                    s.spawn(move || {
                        self.g1_phase_on(&self.pick_on(k), a, b, c, log_n, proofs, sets, g2)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Backend {
                            name: NAME.into(),
                            reason: "a GPU worker thread panicked".into(),
                        })
                    })
                })
                .collect()
        });
        let (mut out, mut out2) = (Vec::with_capacity(batch), Vec::new());
        for p in parts {
            let (g1, g2) = p?;
            out.extend(g1);
            out2.extend(g2);
        }
        Ok((out, out2))
    }
}

/// Whether an MSM that fits in one pass gets one (`BELLOWS_MSM_WHOLE_PASS=off`: passes sized
/// by the per-scalar rule alone, as before run 74; for timing).
fn whole_pass() -> bool {
    std::env::var("BELLOWS_MSM_WHOLE_PASS")
        .as_deref()
        .map(str::trim)
        != Ok("off")
}

fn too_big(log_n: u32, what: &str) -> Result<()> {
    if log_n > MAX_LOG_N {
        return Err(Error::unsupported(
            NAME,
            format!("{what} of 2^{log_n} (the device transforms go to 2^{MAX_LOG_N})"),
        ));
    }
    Ok(())
}

impl Ntt for CudaBackend {
    fn ntt(&self, data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
        batch_size(data.len(), log_n)?;
        too_big(log_n, "NTT")?;
        if data.is_empty() {
            return Ok(());
        }
        self.pick().dev.ntt(data, log_n, cfg)
    }

    fn h_poly(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr], log_n: u32) -> Result<()> {
        h_poly_batch(a.len(), b.len(), c.len(), log_n)?;
        too_big(log_n, "h_poly")?;
        if a.is_empty() {
            return Ok(());
        }
        let held = self.pick();
        let dev = held.dev;
        let (da, _) = phase::quotient_upload(dev, a, b, c, log_n, &[])?;
        dev.download_into(&da, a)
    }
}

impl Msm for CudaBackend {
    fn load_bases_g1(&self, bases: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        self.load::<G1>(bases, Group::G1, Resident::G1)
    }

    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        self.load::<G2>(bases, Group::G2, Resident::G2)
    }

    fn free_bases(&self, handle: BasesHandle) -> Result<()> {
        // A job holding the Arc keeps the memory alive until it is done.
        self.bases.remove(handle).map(drop)
    }

    fn msm_g1(
        &self,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G1Jacobian],
    ) -> Result<()> {
        self.msm_jobs::<G1>(handle, Group::G1, jobs, out, |r| match r {
            Resident::G1(s) => s,
            Resident::G2(_) => unreachable!("resident() checked the group"),
        })
    }

    fn msm_g2(
        &self,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G2Jacobian],
    ) -> Result<()> {
        self.msm_jobs::<G2>(handle, Group::G2, jobs, out, |r| match r {
            Resident::G2(s) => s,
            Resident::G1(_) => unreachable!("resident() checked the group"),
        })
    }
}

impl CudaBackend {
    /// Runs MSM jobs of group `G` over the resident set of `handle`, spread over the GPUs.
    fn msm_jobs<G: MsmGroup>(
        &self,
        handle: BasesHandle,
        group: Group,
        jobs: &[MsmJob<'_>],
        out: &mut [G::Jacobian],
        set_of: fn(&Resident) -> &ResidentSet<G::Affine>,
    ) -> Result<()> {
        check_batch(&handle, jobs, out.len())?;
        let r = self.resident(handle, group)?;
        self.spread(jobs, out, |held, jobs, out| {
            let k = held.k;
            let set = set_of(&r[k]);
            for (job, o) in jobs.iter().zip(out.iter_mut()) {
                let (pass, room) = self.msm_room::<G>(k, set, job.scalars.len())?;
                *o = held.dev.msm::<G>(
                    set.source(),
                    job.start,
                    ScalarSource::Host(job.scalars),
                    job.density,
                    pass,
                    room,
                )?;
            }
            Ok(())
        })
    }
}

fn g1_set(r: &Resident) -> &ResidentSet<G1Affine> {
    match r {
        Resident::G1(s) => s,
        Resident::G2(_) => unreachable!("resident() checked the group"),
    }
}

fn g2_set(r: &Resident) -> &ResidentSet<G2Affine> {
    match r {
        Resident::G2(s) => s,
        Resident::G1(_) => unreachable!("resident() checked the group"),
    }
}

impl MemoryPool for CudaBackend {
    /// The first GPU's memory (a budget applies to each GPU).
    fn memory_info(&self) -> Result<MemoryInfo> {
        let (free, total) = self.gpus[0].dev().memory_info()?;
        Ok(MemoryInfo {
            free: free as u64,
            total: total as u64,
            budget: self.budget(),
        })
    }

    fn set_memory_budget(&self, bytes: Option<u64>) -> Result<()> {
        *self.budget.lock().unwrap_or_else(|e| e.into_inner()) = bytes;
        Ok(())
    }

    /// Also releases the idle pinned host blocks.
    fn trim(&self) -> Result<()> {
        for g in &self.gpus {
            let _held: Vec<Held<'_>> = g.lanes.iter().map(|l| hold(0, l)).collect();
            g.dev().trim_pool()?;
        }
        self.host.trim();
        Ok(())
    }

    /// Page-locked, portable host memory (see [`crate::host_pool`]); `None` past the option
    /// `pinned-host-limit` (default half of the host's memory) or when the driver declines.
    fn alloc_host(&self, bytes: usize) -> Result<Option<std::ptr::NonNull<u8>>> {
        Ok(self.host.alloc(bytes))
    }

    unsafe fn free_host(&self, ptr: std::ptr::NonNull<u8>, _bytes: usize) -> Result<()> {
        self.host.free(ptr)
    }
}

impl Backend for CudaBackend {
    /// The whole G1 phase on the device: a, b, c are uploaded once; h is computed and stays in
    /// device memory, where the H MSM reads it; the inputs and aux assignments upload on the
    /// copy stream while the last NTTs run (when the room allows their buffers beside a, b and
    /// c; otherwise after the quotient); the A and B₁ MSMs read the assignments through their
    /// density bitmaps (no filtered copies anywhere). A batch is split across the GPUs.
    fn groth16_g1(&self, input: &mut G1PhaseInput<'_>) -> Result<Vec<[G1Jacobian; 4]>> {
        self.g1_phase(input, None).map(|(g1, _)| g1)
    }

    /// [`CudaBackend::groth16_g1`], then on each GPU the G2 MSMs of its proofs over the
    /// assignments that phase left in device memory (with option `g2-in-g1-call=off`, the
    /// default body: a separate `msm_g2` call that uploads them again).
    fn groth16_g1_g2(&self, input: &mut G1PhaseInput<'_>, b_g2: BasesHandle) -> Result<G1G2Sums> {
        if !self.g2_in_g1_call {
            return groth16_g1_g2_from_parts(self, input, b_g2);
        }
        check_b_g2(&b_g2, input.proofs)?;
        self.g1_phase(input, Some(b_g2))
    }

    fn info(&self) -> BackendInfo {
        let mut capabilities = Capabilities::all(MAX_LOG_N);
        capabilities.fused_h_poly = true;
        capabilities.accelerator = true;
        let mut info = BackendInfo::new(NAME, env!("CARGO_PKG_VERSION"), DESCRIPTION);
        for g in &self.gpus {
            let g = g.dev();
            let (free, total) = g.memory_info().unwrap_or((0, 0));
            let (major, minor) = g.compute_capability();
            info = info.with_device(DeviceInfo::new(
                format!(
                    "{} ({}, compute {major}.{minor}, {:.1} GiB free)",
                    g.name(),
                    g.label(),
                    free as f64 / (1u64 << 30) as f64
                ),
                total as u64,
            ));
        }
        info.with_capabilities(capabilities)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_parse_with_units() {
        assert_eq!(parse_bytes("1024").unwrap(), 1024);
        assert_eq!(parse_bytes("8GiB").unwrap(), 8 << 30);
        assert_eq!(parse_bytes("512M").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("1.5k").unwrap(), 1536);
        assert_eq!(parse_bytes(" 2 TB ").unwrap(), 2 << 40);
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("3 parsecs").is_err());
    }

    #[test]
    fn stream_counts_parse() {
        let mut cfg = BackendConfig::default();
        assert_eq!(stream_count(&cfg).unwrap(), 1);
        for (v, want) in [("1", Some(1)), ("2", Some(2)), (" 8 ", Some(8))] {
            cfg = cfg.option("streams", v);
            assert_eq!(stream_count(&cfg).ok(), want, "{v}");
        }
        for bad in ["0", "9", "two", ""] {
            cfg = cfg.option("streams", bad);
            let e = stream_count(&cfg).unwrap_err().to_string();
            assert!(e.contains("streams"), "{bad}: {e}");
        }
    }

    #[test]
    fn precompute_options_parse() {
        let cfg = BackendConfig::default();
        assert_eq!(precompute_window(&cfg).unwrap(), None);
        let on = cfg.clone().option("msm-precompute", "on");
        assert_eq!(
            precompute_window(&on).unwrap(),
            Some(crate::msm::TABLE_WINDOW)
        );
        let w = on.clone().option("msm-precompute-window", "22");
        assert_eq!(precompute_window(&w).unwrap(), Some(22));
        let off = w.clone().option("msm-precompute", "off");
        assert_eq!(precompute_window(&off).unwrap(), None);
        for bad in ["yes", "", "1"] {
            let e = precompute_window(&cfg.clone().option("msm-precompute", bad))
                .unwrap_err()
                .to_string();
            assert!(e.contains("msm-precompute"), "{bad}: {e}");
        }
        for bad in ["7", "29", "wide", ""] {
            let e = precompute_window(&on.clone().option("msm-precompute-window", bad))
                .unwrap_err()
                .to_string();
            assert!(e.contains("msm-precompute-window"), "{bad}: {e}");
        }
    }

    #[test]
    fn pool_release_options_parse() {
        let cfg = BackendConfig::default();
        assert!(!pool_release_at_sync(&cfg).unwrap());
        assert!(!pool_release_at_sync(&cfg.clone().option("pool-release", "trim")).unwrap());
        assert!(pool_release_at_sync(&cfg.clone().option("pool-release", " sync")).unwrap());
        for bad in ["never", "", "0"] {
            let e = pool_release_at_sync(&cfg.clone().option("pool-release", bad))
                .unwrap_err()
                .to_string();
            assert!(e.contains("pool-release"), "{bad}: {e}");
        }
    }

    #[test]
    fn g2_in_g1_call_options_parse() {
        let cfg = BackendConfig::default();
        assert!(g2_in_g1_call(&cfg).unwrap());
        assert!(g2_in_g1_call(&cfg.clone().option("g2-in-g1-call", "on")).unwrap());
        assert!(!g2_in_g1_call(&cfg.clone().option("g2-in-g1-call", " off ")).unwrap());
        for bad in ["yes", "", "0"] {
            let e = g2_in_g1_call(&cfg.clone().option("g2-in-g1-call", bad))
                .unwrap_err()
                .to_string();
            assert!(e.contains("g2-in-g1-call"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_bad_stream_count_is_refused_before_any_device_is_opened() {
        let cfg = BackendConfig::default().option("streams", "0");
        match CudaBackend::with_config(&cfg) {
            Err(Error::InvalidInput(m)) => assert!(m.contains("streams"), "{m}"),
            Err(e) => panic!("expected the option's error, got {e}"),
            Ok(_) => panic!("streams=0 was accepted"),
        }
    }

    #[test]
    fn device_lists_parse() {
        let cfg = BackendConfig::default().option("devices", "1, 3");
        assert_eq!(device_list(&cfg).unwrap(), vec![1, 3]);
        let cfg = BackendConfig::default().option("devices", "zero");
        assert!(device_list(&cfg)
            .unwrap_err()
            .to_string()
            .contains("not a device index"));
        let mut cfg = BackendConfig::default();
        cfg.device = 2;
        assert_eq!(device_list(&cfg).unwrap(), vec![2]);
        // Without the option and with the default device 0: every GPU (none here: an error
        // naming the missing driver, on a machine without one).
        if !crate::driver_available() {
            assert!(device_list(&BackendConfig::default()).is_err());
        }
    }
}

//! [`CudaBackend`]: the Bellows [`Backend`] on one or several NVIDIA GPUs.
//!
//! - NTT: the device transforms of [`crate::ntt`] (host data copied in and out per call).
//! - `h_poly`: fused on the device ([`crate::quotient`]): a, b, c are uploaded once and only h
//!   comes back.
//! - MSM: bases are made resident by `load_bases_*` ([`crate::residency`]: at the memory tier
//!   each GPU affords) and stay so until `free_bases`; every job runs the device Pippenger of
//!   [`crate::msm`], G1 and G2.
//! - The Groth16 G1 phase on the device ([`groth16_g1`]), with the G2 MSM in the same call.
//! - Memory: free/total from the driver, an optional byte budget (`memory_budget` or
//!   `set_memory_budget`) under which bases are loaded, pinned host memory lent to the prover
//!   ([`crate::host_pool`]), and `trim` returning the stream-ordered pool's free memory to the
//!   driver.
//!
//! Several GPUs: option `devices` (`all`, or a list such as `0,1`; absent: every GPU, or
//! `BackendConfig::device` alone when that is set to a non-zero index) opens every listed GPU.
//! Bases are made resident on each (each at its own memory tier); a batch of MSM jobs or of
//! proofs is split across the GPUs, which run in parallel; single calls from several threads
//! each take a free GPU. Each GPU has one or more lanes ([`lanes`], option `streams`), so calls
//! on two lanes of one GPU run concurrently (one's uploads beside the other's kernels). Every
//! driver failure is an [`Error`], never a panic. The options are read once, at creation
//! ([`options`]).

mod groth16_g1;
mod lanes;
mod options;

use std::sync::Arc;

use bellows_backend_api::{
    backend::{
        check_batch,
        g1_phase::check_b_g2,
        groth16_g1_g2_from_parts,
        ntt::{batch_size, h_poly_batch},
        BackendConfig, BackendInfo, BasesHandle, BasesTable, Capabilities, DeviceInfo, EncodedLoad,
        EncodedPoints, G1G2Sums, G1PhaseInput, Group, MemoryBudget, MemoryInfo, MemoryPool, Msm,
        MsmJob, Ntt, NttConfig, SharedPoints, Tier,
    },
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Backend, Error, Result,
};

pub use crate::error::NAME;
pub use crate::residency::SAFETY_MARGIN;
pub use options::MAX_STREAMS;

use crate::{
    device::CudaDevice,
    host_pool::{DriverHost, HostLender},
    msm::{MsmGroup, ScalarSource, G1, G2},
    ntt::MAX_LOG_N,
    quotient::Quotient,
    residency::{self, Resident, ResidentSet},
};
use lanes::{Features, Gpu, Gpus, Held};
use options::{device_list, Options};

/// One line on what it is.
pub const DESCRIPTION: &str =
    "NVIDIA GPUs through CUDA (our own kernels: NTT, fused h, Pippenger MSM G1/G2)";

/// The CUDA backend on one or several GPUs.
pub struct CudaBackend {
    gpus: Gpus,
    /// Per handle, one resident set per GPU (same order as `gpus`).
    bases: BasesTable<Arc<Vec<Resident>>>,
    budget: MemoryBudget,
    /// Pinned host memory lent to the prover (`alloc_host`).
    host: HostLender<DriverHost>,
    /// Option `g2-in-g1-call` (default on): `groth16_g1_g2` runs the G2 MSM inside the G1
    /// phase's call, over the assignments already in device memory; off: the default body
    /// (`groth16_g1`, then `msm_g2` uploading them again), kept for side-by-side timings.
    g2_in_g1_call: bool,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let devs: Vec<&CudaDevice> = self.gpus.gpus.iter().map(Gpu::dev).collect();
        f.debug_struct("CudaBackend")
            .field("devices", &devs)
            .finish_non_exhaustive()
    }
}

impl CudaBackend {
    /// Opens the GPUs the configuration names (option `devices`: `all` or a list; absent: every
    /// GPU, or `cfg.device` alone when it is non-zero). Device memory budget per GPU:
    /// `cfg.memory_budget`, or option `gpu-memory-limit` (bytes, units allowed). Calls in flight
    /// per GPU: option `streams` (default 1); the MSM's tuning: the `msm-*` options. Errors (no
    /// driver, no device, an old GPU, no kernels in this build, a bad option) are clear.
    pub fn with_config(cfg: &BackendConfig) -> Result<Self> {
        let o = Options::parse(cfg)?;
        let ordinals = device_list(cfg)?;
        let gpus = ordinals
            .iter()
            .map(|&i| {
                let first = CudaDevice::new(i)?;
                if o.release_at_sync {
                    first.set_pool_release(true)?;
                }
                let features = Features {
                    ntt: crate::ntt::Ntt::new(&first)?,
                    msm: crate::msm::Msm::new(&first, o.msm.clone())?,
                    quotient: Quotient::new(&first)?,
                };
                Gpu::new(first, o.streams, features)
            })
            .collect::<Result<Vec<_>>>()?;
        let host_limit = o
            .host_limit
            .unwrap_or_else(|| bellows_backend_api::backend::host_memory_info().total / 2);
        let host = HostLender::new(
            DriverHost::new(gpus[0].dev().context().clone(), o.pin_method),
            host_limit,
        );
        Ok(Self {
            gpus: Gpus::new(gpus),
            bases: BasesTable::new(),
            budget: MemoryBudget::new(o.budget),
            host,
            g2_in_g1_call: o.g2_in_g1_call,
        })
    }

    /// The first GPU.
    pub fn device(&self) -> &CudaDevice {
        self.gpus.gpus[0].dev()
    }

    /// Lanes (calls in flight) per GPU.
    pub fn streams(&self) -> usize {
        self.gpus.streams()
    }

    /// Number of GPUs driven.
    pub fn device_count(&self) -> usize {
        self.gpus.len()
    }

    fn resident(&self, handle: BasesHandle, group: Group) -> Result<Arc<Vec<Resident>>> {
        self.bases.get(handle, group)
    }

    /// Bytes of device memory still usable on GPU `k`: free memory less the safety margin, and
    /// under the budget (less what is already resident there) when one is set.
    fn room(&self, k: usize) -> Result<u64> {
        let (free, _) = self.gpus.gpus[k].dev().memory_info()?;
        let mut resident = 0u64;
        self.bases.for_each(|_, r| resident += r[k].bytes());
        let free = (free as u64).saturating_sub(SAFETY_MARGIN);
        Ok(match self.budget.get() {
            Some(b) => free.min(b.saturating_sub(resident)),
            None => free,
        })
    }

    /// A lane's share of GPU `k`'s room (the lanes share it).
    fn lane_room(&self, k: usize) -> Result<u64> {
        Ok(self.room(k)? / self.streams() as u64)
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
            let held = self.gpus.pick_on(k);
            let f = held.features;
            let set = residency::load::<G>(
                held.dev,
                &f.msm,
                &bases,
                group,
                &|| self.room(k),
                self.streams(),
                f.msm.config().precompute,
            )?;
            sets.push(wrap(set));
        }
        Ok(self.bases.insert(group, len, Arc::new(sets)))
    }

    /// Makes `points` resident on every GPU, each decoding the file's bytes itself
    /// ([`residency::load_encoded`]); `Unsupported` where a GPU cannot hold the whole set (the
    /// caller then decodes on the host, and the set is partly streamed from there).
    fn load_encoded<G: MsmGroup>(
        &self,
        points: &dyn EncodedPoints,
        group: Group,
        wrap: fn(ResidentSet<G::Affine>) -> Resident,
    ) -> Result<EncodedLoad> {
        let mut sets = Vec::with_capacity(self.gpus.len());
        for k in 0..self.gpus.len() {
            let held = self.gpus.pick_on(k);
            let f = held.features;
            let set = residency::load_encoded::<G>(
                held.dev,
                &f.msm,
                points,
                group,
                &|| self.room(k),
                self.streams(),
                f.msm.config().precompute,
            )?;
            match set {
                Some(Ok(set)) => sets.push(wrap(set)),
                Some(Err((index, verdict))) => {
                    let defect = crate::decode::defect_of(verdict)?;
                    return Ok(EncodedLoad::Refused { index, defect });
                }
                None => {
                    return Err(Error::unsupported(
                        NAME,
                        format!(
                            "decoding {group:?} bases on {}, which cannot hold all {} of them",
                            held.dev.label(),
                            points.len()
                        ),
                    ))
                }
            }
        }
        let len = points.len() as usize;
        Ok(EncodedLoad::Loaded(self.bases.insert(
            group,
            len,
            Arc::new(sets),
        )))
    }

    /// The memory tier of a resident set on the first GPU (for reports and tests).
    pub fn tier_of(&self, handle: BasesHandle) -> Result<Tier> {
        let r = self.resident(handle, handle.group)?;
        Ok(r[0].tier())
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
            return run(&self.gpus.pick(), jobs, out);
        }
        let per = jobs.len().div_ceil(d);
        std::thread::scope(|s| {
            let handles: Vec<_> = jobs
                .chunks(per)
                .zip(out.chunks_mut(per))
                .enumerate()
                .map(|(k, (j, o))| {
                    let run = &run;
                    s.spawn(move || run(&self.gpus.pick_on(k), j, o))
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

    /// The G1 phase of some proofs on lane `held`, its resident sets those of GPU `held.k`.
    #[allow(clippy::too_many_arguments)]
    fn g1_phase_on(
        &self,
        held: &Held<'_>,
        a: &[Fr],
        b: &[Fr],
        c: &[Fr],
        log_n: u32,
        proofs: &[bellows_backend_api::backend::ProofAssignment<'_>],
        sets: [&ResidentSet<G1Affine>; 4],
        g2: Option<&ResidentSet<G2Affine>>,
    ) -> Result<G1G2Sums> {
        let k = held.k;
        groth16_g1::run(
            held,
            &|| self.lane_room(k),
            a,
            b,
            c,
            log_n,
            proofs,
            sets,
            g2,
        )
    }

    /// The G1 phase of a batch, and with `b_g2` the G2 sums too, split across the GPUs
    /// ([`groth16_g1::run`] on each; the G2 vector is empty without `b_g2`).
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
        let g2_of = |k: usize| r2.as_ref().map(|r| r[k].g2());
        let sets = |k: usize| [rs[0][k].g1(), rs[1][k].g1(), rs[2][k].g1(), rs[3][k].g1()];
        let d = self.gpus.len().min(batch);
        if d <= 1 {
            let held = self.gpus.pick();
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
                        let held = self.gpus.pick_on(k);
                        self.g1_phase_on(&held, a, b, c, log_n, proofs, sets, g2)
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
            let (k, dev, msm) = (held.k, held.dev, &held.features.msm);
            let set = set_of(&r[k]);
            for (job, o) in jobs.iter().zip(out.iter_mut()) {
                let tuning = msm.tuning();
                let n = job.scalars.len();
                let (pass, room) =
                    residency::passes::<G>(set, n, self.lane_room(k)?, &tuning, dev.label())?;
                *o = msm.run::<G>(
                    dev,
                    set.source(),
                    job.start,
                    ScalarSource::Host(job.scalars),
                    job.density,
                    None,
                    pass,
                    room,
                )?;
            }
            Ok(())
        })
    }
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
        let held = self.gpus.pick();
        held.features.ntt.transform(held.dev, data, log_n, cfg)
    }

    fn h_poly(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr], log_n: u32) -> Result<()> {
        h_poly_batch(a.len(), b.len(), c.len(), log_n)?;
        too_big(log_n, "h_poly")?;
        if a.is_empty() {
            return Ok(());
        }
        let held = self.gpus.pick();
        let (dev, f) = (held.dev, held.features);
        let (da, _) = f
            .quotient
            .upload_and_compute(dev, &f.ntt, a, b, c, log_n, &[])?;
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

    /// Decoded on the GPU where the points will live: the host only reads the file
    /// (docs/cuda.md, "Parameter points").
    fn load_bases_g1_encoded(&self, points: &dyn EncodedPoints) -> Result<EncodedLoad> {
        self.load_encoded::<G1>(points, Group::G1, Resident::G1)
    }

    fn load_bases_g2_encoded(&self, points: &dyn EncodedPoints) -> Result<EncodedLoad> {
        self.load_encoded::<G2>(points, Group::G2, Resident::G2)
    }

    fn free_bases(&self, handle: BasesHandle) -> Result<()> {
        // A job holding the Arc keeps the memory alive until it is done.
        self.bases.remove(handle).map(drop)
    }

    /// A set held whole on every GPU kept no reference to the points (`residency::load`), so
    /// the host that lent them may drop them: a 32 GiB key's 47 GB.
    fn bases_need_host(&self, handle: BasesHandle) -> Result<bool> {
        let sets = self.resident(handle, handle.group)?;
        Ok(sets.iter().any(Resident::reads_host))
    }

    fn msm_g1(&self, handle: BasesHandle, jobs: &[MsmJob], out: &mut [G1Jacobian]) -> Result<()> {
        self.msm_jobs::<G1>(handle, Group::G1, jobs, out, Resident::g1)
    }

    fn msm_g2(&self, handle: BasesHandle, jobs: &[MsmJob], out: &mut [G2Jacobian]) -> Result<()> {
        self.msm_jobs::<G2>(handle, Group::G2, jobs, out, Resident::g2)
    }
}

impl MemoryPool for CudaBackend {
    /// The first GPU's memory (a budget applies to each GPU).
    fn memory_info(&self) -> Result<MemoryInfo> {
        let (free, total) = self.device().memory_info()?;
        Ok(MemoryInfo {
            free: free as u64,
            total: total as u64,
            budget: self.budget.get(),
        })
    }

    fn set_memory_budget(&self, bytes: Option<u64>) -> Result<()> {
        self.budget.set(bytes);
        Ok(())
    }

    /// Also releases the idle pinned host blocks.
    fn trim(&self) -> Result<()> {
        for g in &self.gpus.gpus {
            let _held = g.hold_all(0);
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

    /// Page-locks blocks of these sizes now, kept idle for the requests that follow (see
    /// [`crate::host_pool::HostLender::reserve`]), under `pinned-host-limit`.
    fn reserve_host(&self, sizes: &[usize]) -> Result<()> {
        let t = std::time::Instant::now();
        let added = self.host.reserve(sizes);
        if added > 0 {
            tracing::info!(
                "pinned {} of host memory ahead of the proofs in {:.2} s",
                bellows_backend_api::units::format_bytes(added),
                t.elapsed().as_secs_f64()
            );
        }
        Ok(())
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
        for g in &self.gpus.gpus {
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
    fn a_bad_option_is_refused_before_any_device_is_opened() {
        for (key, bad) in [
            ("streams", "0"),
            ("msm-window", "99"),
            ("gpu-memory-limit", "lots"),
        ] {
            let cfg = BackendConfig::default().option(key, bad);
            match CudaBackend::with_config(&cfg) {
                Err(Error::InvalidInput(m)) => assert!(m.contains(key), "{m}"),
                Err(e) => panic!("expected the option's error, got {e}"),
                Ok(_) => panic!("{key}={bad} was accepted"),
            }
        }
    }
}

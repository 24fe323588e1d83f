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
        plan_tier, BackendConfig, BackendInfo, G1PhaseInput, BasesHandle, Capabilities, DeviceInfo, Group,
        MemoryInfo, MemoryPool, Msm, MsmJob, Ntt, NttConfig, Ordering, SharedPoints, Tier,
    },
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Backend, Error, Result,
};
use cudarc::driver::{DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg};
use ff::Field;

use crate::{
    memory::{DeviceVec, Plain},
    msm::{BaseSource, ScalarSource, G1, G2},
    ntt::MAX_LOG_N,
    CudaDevice,
};

/// Name of the backend, as given to `--backend`.
pub const NAME: &str = "cuda";
/// One line on what it is.
pub const DESCRIPTION: &str = "NVIDIA GPUs through CUDA (our own kernels: NTT, fused h, Pippenger MSM G1/G2)";
/// Device memory kept free beyond the budget (the driver, streams and scratch need some).
pub const SAFETY_MARGIN: u64 = 1 << 30;

/// One resident set of bases, at the memory tier the device could afford when it was loaded:
/// all on the device (`Full`), a prefix on the device and the rest streamed from host memory
/// (`Partial`), or all streamed (`Streaming`). The host points are kept (shared, not copied)
/// whenever any point is streamed.
struct ResidentSet<T: Plain> {
    device: Option<DeviceVec<T>>,
    host: Option<SharedPoints<T>>,
    tier: Tier,
}

impl<T: Plain> ResidentSet<T> {
    fn source(&self) -> BaseSource<'_, T> {
        match (&self.device, &self.host) {
            (Some(d), None) => BaseSource::Device(d),
            (Some(d), Some(h)) => BaseSource::Split {
                prefix: d,
                host: h.points(),
            },
            (None, Some(h)) => BaseSource::Host(h.points()),
            (None, None) => unreachable!("a resident set has device or host points"),
        }
    }
    fn device_bytes(&self) -> u64 {
        self.device.as_ref().map_or(0, |d| d.bytes() as u64)
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

/// Device memory one MSM pass needs per scalar beyond its bases (scalar, sorted entries,
/// buckets, partial sums), with room to spare: G1 and G2.
const PASS_BYTES_PER_POINT: [u64; 2] = [320, 640];
/// Device memory held back for MSM and NTT scratch when bases are loaded (at most).
const WORK_RESERVE: u64 = 6 << 30;

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

    /// Bytes of device memory this backend may still use: free memory less the safety margin,
    /// and under the budget (less what is already resident) when one is set.
    fn room(&self) -> Result<u64> {
        let info = self.memory_info()?;
        let resident: u64 = self
            .bases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|r| r.bytes())
            .sum();
        let free = info.free.saturating_sub(SAFETY_MARGIN);
        Ok(match info.budget {
            Some(b) => free.min(b.saturating_sub(resident)),
            None => free,
        })
    }

    /// Scalars per MSM pass that fit the room left (streamed bases need room too).
    fn pass_points(&self, group: usize, streamed: bool, point_bytes: u64) -> Result<usize> {
        let room = self.room()?;
        let per = PASS_BYTES_PER_POINT[group] + if streamed { point_bytes } else { 0 };
        let points = room / per;
        if points < 1024 {
            return Err(Error::OutOfMemory {
                device: self.dev.label().to_string(),
                requested: 1024 * per,
                available: room,
            });
        }
        Ok(points.min(crate::msm::MAX_POINTS_PER_PASS as u64) as usize)
    }

    /// Loads a set of bases at the best tier the room allows (a full, partial or streaming
    /// residency instead of an out-of-memory failure).
    fn load<T: Plain>(
        &self,
        bases: SharedPoints<T>,
        group: Group,
        wrap: fn(ResidentSet<T>) -> Resident,
    ) -> Result<BasesHandle> {
        let points = bases.points();
        let len = points.len();
        let size = (T::WORDS * 8) as u64;
        let full = len as u64 * size;
        let room = self.room()?;
        let reserve = WORK_RESERVE.min(room / 2);
        let g = if group == Group::G1 { 0 } else { 1 };
        let min_chunk = 1024 * (PASS_BYTES_PER_POINT[g] + size);
        let tier = plan_tier(full, min_chunk, room.saturating_sub(reserve), self.dev.label())?;
        let resident_points = match tier {
            Tier::Full => len,
            Tier::Partial(bytes) => ((bytes / size) as usize).min(len),
            Tier::Streaming(_) => 0,
        };
        let device = if resident_points > 0 {
            let _g = self.lock();
            let mut d = self.dev.alloc_uninit::<T>(resident_points)?;
            self.dev
                .upload_staged(&points[..resident_points], &mut d, |_, _| Ok(()))?;
            self.dev.synchronize()?;
            Some(d)
        } else {
            None
        };
        if tier != Tier::Full {
            tracing::info!(
                "{}: {len} {group:?} bases at tier {tier:?} ({resident_points} resident, the rest \
                 streamed from host memory)",
                self.dev.label()
            );
        }
        let set = ResidentSet {
            device,
            host: (resident_points < len).then_some(bases),
            tier,
        };
        let id = self.next_id.fetch_add(1, AtomicOrdering::Relaxed);
        self.bases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, Arc::new(wrap(set)));
        Ok(BasesHandle {
            id,
            group,
            len: len as u64,
        })
    }

    /// The memory tier of a resident set (for reports and tests).
    pub fn tier_of(&self, handle: BasesHandle) -> Result<Tier> {
        let r = self.resident(handle, handle.group)?;
        Ok(match &*r {
            Resident::G1(s) => s.tier,
            Resident::G2(s) => s.tier,
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
        self.load(bases, Group::G1, Resident::G1)
    }

    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        self.load(bases, Group::G2, Resident::G2)
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
        let Resident::G1(set) = &*r else {
            unreachable!("resident() checked the group")
        };
        let _g = self.lock();
        let pass = self.pass_points(0, set.tier != Tier::Full, 96)?;
        for (job, o) in jobs.iter().zip(out.iter_mut()) {
            *o = self.dev.msm::<G1>(
                set.source(),
                job.start,
                ScalarSource::Host(job.scalars),
                job.density,
                pass,
            )?;
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
        let Resident::G2(set) = &*r else {
            unreachable!("resident() checked the group")
        };
        let _g = self.lock();
        let pass = self.pass_points(1, set.tier != Tier::Full, 192)?;
        for (job, o) in jobs.iter().zip(out.iter_mut()) {
            *o = self.dev.msm::<G2>(
                set.source(),
                job.start,
                ScalarSource::Host(job.scalars),
                job.density,
                pass,
            )?;
        }
        Ok(())
    }
}

fn g1_set(r: &Resident) -> &ResidentSet<G1Affine> {
    match r {
        Resident::G1(s) => s,
        Resident::G2(_) => unreachable!("resident() checked the group"),
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
    /// The whole G1 phase on the device: a, b, c are uploaded once; h is computed and stays in
    /// device memory, where the H MSM reads it; the inputs and aux assignments upload on the
    /// copy stream while the NTTs run; the A and B₁ MSMs read the assignments through their
    /// density bitmaps (no filtered copies anywhere).
    fn groth16_g1(&self, input: &mut G1PhaseInput<'_>) -> Result<Vec<[G1Jacobian; 4]>> {
        input.check()?;
        let batch = input.proofs.len();
        if batch == 0 {
            return Ok(Vec::new());
        }
        let log_n = input.log_n;
        if log_n > MAX_LOG_N {
            return Err(Error::unsupported(
                NAME,
                format!("a 2^{log_n} domain (the device transforms go to 2^{MAX_LOG_N})"),
            ));
        }
        let n = 1usize << log_n;
        let hd = input.handles;
        let (rh, rl, ra, rb) = (
            self.resident(hd.h, Group::G1)?,
            self.resident(hd.l, Group::G1)?,
            self.resident(hd.a, Group::G1)?,
            self.resident(hd.b_g1, Group::G1)?,
        );
        let (sh, sl, sa, sb) = (g1_set(&rh), g1_set(&rl), g1_set(&ra), g1_set(&rb));
        let _g = self.lock();
        let dev = &self.dev;
        // a, b, c up; the quotient queued on the compute stream.
        let mut da = dev.alloc_uninit::<Fr>(input.a.len())?;
        let mut db = dev.alloc_uninit::<Fr>(input.b.len())?;
        let mut dc = dev.alloc_uninit::<Fr>(input.c.len())?;
        dev.upload_staged(input.a, &mut da, |_, _| Ok(()))?;
        dev.upload_staged(input.b, &mut db, |_, _| Ok(()))?;
        dev.upload_staged(input.c, &mut dc, |_, _| Ok(()))?;
        self.h_poly_device(&mut da, &mut db, &mut dc, log_n)?;
        drop((db, dc));
        // The assignments upload while the transforms run.
        let mut inputs = Vec::with_capacity(batch);
        let mut aux = Vec::with_capacity(batch);
        for p in input.proofs {
            let mut di = dev.alloc_uninit::<Fr>(p.inputs.len())?;
            dev.upload_staged(p.inputs, &mut di, |_, _| Ok(()))?;
            let mut dx = dev.alloc_uninit::<Fr>(p.aux.len())?;
            dev.upload_staged(p.aux, &mut dx, |_, _| Ok(()))?;
            inputs.push(di);
            aux.push(dx);
        }
        let pass = |s: &ResidentSet<G1Affine>| self.pass_points(0, s.tier != Tier::Full, 96);
        let msm = |s: &ResidentSet<G1Affine>,
                   start: usize,
                   sc: ScalarSource<'_>,
                   density: Option<&[u64]>|
         -> Result<G1Jacobian> { dev.msm::<G1>(s.source(), start, sc, density, pass(s)?) };
        let add = |x: G1Jacobian, y: G1Jacobian| -> G1Jacobian {
            (blstrs::G1Projective::from(x) + blstrs::G1Projective::from(y)).into()
        };
        let mut out = Vec::with_capacity(batch);
        for (k, p) in input.proofs.iter().enumerate() {
            let (di, dx) = (&inputs[k], &aux[k]);
            let h = msm(sh, 0, ScalarSource::Device(&da, k * n, n - 1), None)?;
            let l = msm(sl, 0, ScalarSource::Device(dx, 0, p.aux.len()), None)?;
            let a_in = msm(sa, 0, ScalarSource::Device(di, 0, p.inputs.len()), None)?;
            let a_aux = msm(
                sa,
                p.inputs.len(),
                ScalarSource::Device(dx, 0, p.aux.len()),
                Some(p.a_aux_density),
            )?;
            let b_inputs: usize = p.b_input_density.iter().map(|w| w.count_ones() as usize).sum();
            let b_in = msm(
                sb,
                0,
                ScalarSource::Device(di, 0, p.inputs.len()),
                Some(p.b_input_density),
            )?;
            let b_aux = msm(
                sb,
                b_inputs,
                ScalarSource::Device(dx, 0, p.aux.len()),
                Some(p.b_aux_density),
            )?;
            out.push([h, l, add(a_in, a_aux), add(b_in, b_aux)]);
        }
        Ok(out)
    }

    fn info(&self) -> BackendInfo {
        let mut capabilities = Capabilities::all(MAX_LOG_N);
        capabilities.fused_h_poly = true;
        let memory_total = self.dev.memory_info().map(|(_, t)| t as u64).unwrap_or(0);
        let (major, minor) = self.dev.compute_capability();
        capabilities.accelerator = true;
        BackendInfo::new(NAME, env!("CARGO_PKG_VERSION"), DESCRIPTION)
            .with_device(DeviceInfo::new(
                format!(
                    "{} ({}, compute {major}.{minor})",
                    self.dev.name(),
                    self.dev.label()
                ),
                memory_total,
            ))
            .with_capabilities(capabilities)
    }
}

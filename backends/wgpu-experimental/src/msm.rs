//! Pippenger MSM on the device (kernels in `shaders/msm.wgsl` and `shaders/scan.wgsl`), G1 and
//! G2, over bases kept in device memory.
//!
//! The passes are described in msm.wgsl. Here: the choice of the window width c (about
//! log2(n) − 3, as the CUDA backend: it balances the n·⌈256/c⌉ bucket additions against the
//! 2^c of the window sums), the sizes of the scratch buffers, the recursion of the prefix sum,
//! and the host's share: Horner's rule over the ⌈256/c⌉ window sums, read back as Jacobian
//! points, with blst. A job longer than one pass (bounded by the adapter's largest storage
//! binding) or crossing two base buffers is split, and its parts added on the host.

use bellows_backend_api::{
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Error, Result,
};
use group::Group;

use std::{sync::Mutex, time::Instant};

use crate::{
    gpu::{Batch, Gpu, Module, Params, Slice, Timing},
    plain::{bytes, bytes_mut, Plain},
    shader::GroupKind,
};

/// Accumulation threads to aim for (enough to fill a large GPU a few times over; option
/// `msm-threads`).
pub const TARGET_THREADS: u64 = 1 << 17;
/// Fewest entries one accumulation thread takes.
const MIN_CHUNK: u64 = 8;
/// Most entries one accumulation thread takes when the chunk is derived from the thread target:
/// a loop of more additions would trip the loop limiter of Mesa's lavapipe (see `fixup` in
/// msm.wgsl). Also the most option `msm-chunk` may ask for on a software adapter.
pub const MAX_CHUNK: u64 = 256;
/// Buckets per thread in the window pass (option `msm-segment`).
pub const SEGMENT: u32 = 32;
/// Workgroups of the pass that adds the partial sums of buckets spanning many chunks (each takes
/// every FIXUP_GROUPS-th listed bucket).
const FIXUP_GROUPS: u64 = 2048;
/// Inputs per thread in a tree-reduction step (option `msm-reduce`).
pub const REDUCE_PER: u32 = 32;
/// Elements per block of the prefix sum (SCAN_BLOCK in scan.wgsl).
const SCAN_BLOCK: u64 = 1024;

/// A group the MSM runs in: its kernels and its host types.
pub trait MsmGroup {
    /// Affine points in the crossing layout.
    type Affine: Plain + Send + Sync;
    /// Jacobian results in the crossing layout.
    type Jacobian: Plain + Default + Send + Sync;
    /// blstrs' projective type (Jacobian).
    type Projective: Group + From<Self::Jacobian> + Into<Self::Jacobian> + Copy;
    /// Which kernels.
    const KIND: GroupKind;
}

/// G1.
pub struct G1;
/// G2.
pub struct G2;

impl MsmGroup for G1 {
    type Affine = G1Affine;
    type Jacobian = G1Jacobian;
    type Projective = blstrs::G1Projective;
    const KIND: GroupKind = GroupKind::G1;
}

impl MsmGroup for G2 {
    type Affine = G2Affine;
    type Jacobian = G2Jacobian;
    type Projective = blstrs::G2Projective;
    const KIND: GroupKind = GroupKind::G2;
}

fn affine_bytes(g: GroupKind) -> u64 {
    2 * 4 * g.coord_words() as u64
}
fn xyzz_bytes(g: GroupKind) -> u64 {
    4 * 4 * g.coord_words() as u64
}
fn jacobian_bytes(g: GroupKind) -> u64 {
    3 * 4 * g.coord_words() as u64
}

/// The MSM's tunables (options `msm-window`, `msm-threads`, `msm-chunk`, `msm-segment`,
/// `msm-reduce`, `msm-profile`; `msm-wg` is the device's, [`Gpu::msm_wg`]). The defaults are
/// the choices of [`window_bits`], [`TARGET_THREADS`], [`SEGMENT`] and `REDUCE_PER`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmTuning {
    /// Window bits c (4..=20); `None`: [`window_bits`] of the pass's length.
    pub window: Option<u32>,
    /// Accumulation threads to aim for; the chunk is entries / threads within 8..=256.
    pub threads: u64,
    /// Entries per accumulation thread, fixed (overrides `threads`).
    pub chunk: Option<u64>,
    /// Buckets per thread of the window pass (a power of two; at most 2^(c−1)).
    pub segment: u32,
    /// Inputs per thread of each step of the tree reduction of a window's segments.
    pub reduce_per: u32,
    /// Per-pass profile on stderr (`msm-profile`), timed as given.
    pub profile: Option<Timing>,
}

impl Default for MsmTuning {
    fn default() -> Self {
        Self {
            window: None,
            threads: TARGET_THREADS,
            chunk: None,
            segment: SEGMENT,
            reduce_per: REDUCE_PER,
            profile: None,
        }
    }
}

/// Window width for n scalars (or `BELLOWS_MSM_WINDOW` when set, 4..=16): about log2(n) − 3,
/// within 4..=16 (option `msm-window` chooses any c of 4..=20: the digit extraction reads two
/// 32-bit limbs, enough for c ≤ 32; above 16 the buckets grow past 100 MiB a window set).
pub fn window_bits(n: u64) -> u32 {
    if let Some(c) = std::env::var("BELLOWS_MSM_WINDOW")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|c| (4..=16).contains(c))
    {
        return c;
    }
    let log = 63 - n.max(1).leading_zeros();
    log.saturating_sub(3).clamp(4, 16)
}

/// The points of one group, resident on the device: split into buffers that each fit one
/// storage binding.
pub struct ResidentBases {
    /// (buffer, index of its first point, number of points).
    parts: Vec<(wgpu::Buffer, u64, u64)>,
    /// Bytes held on the device.
    pub bytes: u64,
}

/// The layout of one MSM pass.
#[derive(Clone, Copy, Debug)]
struct Plan {
    n: u64,
    c: u32,
    windows: u32,
    keys: u64,
    chunk: u64,
    threads: u64,
    seg_len: u32,
    segs: u32,
}

impl Plan {
    fn new(n: u64, t: &MsmTuning) -> Self {
        let c = t.window.unwrap_or_else(|| window_bits(n));
        let windows = 256u32.div_ceil(c);
        let half = 1u32 << (c - 1);
        let max_entries = n * windows as u64;
        let chunk = t.chunk.unwrap_or_else(|| {
            max_entries
                .div_ceil(t.threads.max(1))
                .clamp(MIN_CHUNK, MAX_CHUNK)
        });
        let seg_len = t.segment.min(half);
        Self {
            n,
            c,
            windows,
            keys: windows as u64 * half as u64,
            chunk,
            threads: max_entries.div_ceil(chunk),
            seg_len,
            segs: half / seg_len,
        }
    }

    /// Points of the partials buffer: heads and tails, or two regions of window segments.
    fn partial_points(&self) -> u64 {
        (2 * self.threads).max(2 * self.windows as u64 * self.segs as u64)
    }

    fn params(&self) -> Params {
        let mut p = [0u32; 16];
        p[0] = self.n as u32;
        p[1] = self.c;
        p[2] = self.windows;
        p[3] = self.keys as u32;
        p[4] = self.chunk as u32;
        p[5] = self.threads as u32;
        p[6] = self.seg_len;
        p[7] = self.segs;
        p
    }

    /// The largest scratch buffer of a pass of this plan, in bytes.
    fn largest_buffer(&self, g: GroupKind) -> u64 {
        [
            self.n * 32,
            self.n * self.windows as u64 * 4,
            self.keys * xyzz_bytes(g),
            self.partial_points() * xyzz_bytes(g),
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    }
}

/// Scalars in one pass on `gpu` for group `g` with the default tuning: the largest power of
/// two whose scratch buffers fit one storage binding (at least 2^10, at most 2^27).
pub fn max_pass(gpu: &Gpu, g: GroupKind) -> u64 {
    max_pass_with(gpu, g, &MsmTuning::default())
}

fn max_pass_with(gpu: &Gpu, g: GroupKind, t: &MsmTuning) -> u64 {
    let limit = gpu
        .limits
        .max_storage_buffer_binding_size
        .min(gpu.limits.max_buffer_size);
    let mut n = 1u64 << 27;
    while n > 1 << 10 && Plan::new(n, t).largest_buffer(g) > limit {
        n >>= 1;
    }
    n
}

/// One timed phase of a profiled MSM pass: its name and milliseconds.
pub type Phase = (&'static str, f64);

/// Device state of the MSMs.
pub struct MsmEngine {
    dummy: wgpu::Buffer,
    tuning: MsmTuning,
    /// The profile of the last pass (profiled engines only): phases in order, device phases
    /// first, then the host's (`host-prep`, `host-upload`, `submit+wait`, `horner`, `total`).
    last_profile: Mutex<Vec<Phase>>,
}

impl MsmEngine {
    /// The engine of `gpu`, with the default tuning.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Self::with_tuning(gpu, MsmTuning::default())
    }

    /// The engine of `gpu` with `tuning` (checked by the caller, see the backend's options).
    pub fn with_tuning(gpu: &Gpu, tuning: MsmTuning) -> Result<Self> {
        Ok(Self {
            dummy: gpu.storage(256, "unused")?,
            tuning,
            last_profile: Mutex::new(Vec::new()),
        })
    }

    /// Its tuning.
    pub fn tuning(&self) -> &MsmTuning {
        &self.tuning
    }

    /// Scalars in one pass on `gpu` for group `g` with this engine's tuning (see [`max_pass`]).
    pub fn max_pass(&self, gpu: &Gpu, g: GroupKind) -> u64 {
        max_pass_with(gpu, g, &self.tuning)
    }

    /// The phases of the last profiled pass (empty unless option `msm-profile` is on).
    pub fn last_profile(&self) -> Vec<Phase> {
        self.last_profile
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Copies `points` to the device.
    pub fn load<G: MsmGroup>(&self, gpu: &Gpu, points: &[G::Affine]) -> Result<ResidentBases> {
        let pb = affine_bytes(G::KIND);
        let limit = gpu
            .limits
            .max_storage_buffer_binding_size
            .min(gpu.limits.max_buffer_size);
        let per = (limit / pb).max(1);
        let mut parts = Vec::new();
        let mut bytes_held = 0;
        for (k, chunk) in points.chunks(per as usize).enumerate() {
            let buf = gpu.upload(bytes(chunk), "bases")?;
            bytes_held += buf.size();
            parts.push((buf, k as u64 * per, chunk.len() as u64));
        }
        Ok(ResidentBases {
            parts,
            bytes: bytes_held,
        })
    }

    /// `Σ scalars[i]·bases[start + i]` (the caller checked the range).
    pub fn msm<G: MsmGroup>(
        &self,
        gpu: &Gpu,
        bases: &ResidentBases,
        start: u64,
        scalars: &[Fr],
    ) -> Result<G::Projective> {
        let mut acc = G::Projective::identity();
        let pass = self.max_pass(gpu, G::KIND);
        let mut done = 0u64;
        let total = scalars.len() as u64;
        while done < total {
            let first = start + done;
            let Some((buf, part_first, part_len)) = bases
                .parts
                .iter()
                .find(|(_, f, l)| first >= *f && first < f + l)
            else {
                return Err(Error::invalid(format!(
                    "MSM base {first} is outside the resident points"
                )));
            };
            let len = (total - done).min(part_first + part_len - first).min(pass);
            let sc = &scalars[done as usize..(done + len) as usize];
            acc += self.pass::<G>(gpu, buf, first - part_first, sc)?;
            done += len;
        }
        Ok(acc)
    }

    /// One device pass: `Σ scalars[i]·bases[base_off + i]` with every point in `bases`.
    fn pass<G: MsmGroup>(
        &self,
        gpu: &Gpu,
        bases: &wgpu::Buffer,
        base_off: u64,
        scalars: &[Fr],
    ) -> Result<G::Projective> {
        let g = G::KIND;
        let clock = Instant::now();
        let plan = Plan::new(scalars.len() as u64, &self.tuning);
        // Scratch buffers are kept across calls (grown when a larger pass needs more), so a
        // pass allocates nothing; the scalars come in through the kept upload staging buffer.
        let scal = gpu.scratch("msm scalars", plan.n * 32)?;
        // Bucket counts, then the scatter's cursors, then fixup's list of buckets with long
        // spans: its length at keys + 1 and its entries after.
        let counts_len = (2 * plan.keys + 2) * 4;
        let counts = gpu.scratch("msm bucket counts", counts_len)?;
        let offsets = gpu.scratch("msm bucket offsets", (plan.keys + 1) * 4)?;
        let entries = gpu.scratch("msm entries", plan.n * plan.windows as u64 * 4)?;
        let buckets_len = plan.keys * xyzz_bytes(g);
        let buckets = gpu.scratch("msm buckets", buckets_len)?;
        let partials = gpu.scratch("msm partials", plan.partial_points() * xyzz_bytes(g))?;
        let bind: Vec<Slice> = [
            &scal, bases, &counts, &offsets, &entries, &buckets, &partials,
        ]
        .into_iter()
        .map(Slice::from)
        .collect();
        let m = Module::Msm(g);
        let mut b = gpu.batch();
        if let Some(t) = self.tuning.profile {
            b.profile(t);
        }
        let prep = clock.elapsed();
        b.upload("msm scalars upload", &scal, 0, bytes(scalars))?;
        let uploaded = clock.elapsed();
        b.clear(&counts, 0, counts_len);
        b.clear(&buckets, 0, buckets_len);
        b.mark("upload+clear");
        let base = {
            let mut p = plan.params();
            p[15] = base_off as u32;
            p
        };
        let with = |f: &dyn Fn(&mut Params)| {
            let mut p = base;
            f(&mut p);
            p
        };
        let digits = gpu.kernel(m, "digits")?;
        b.dispatch(&digits, &bind, with(&|p| p[13] = 0), plan.n);
        b.mark("histogram");
        self.record_scan(gpu, &mut b, &counts, plan.keys + 1, 0)?;
        b.copy(&counts, 0, &offsets, 0, (plan.keys + 1) * 4);
        b.mark("scan");
        b.dispatch(&digits, &bind, with(&|p| p[13] = 1), plan.n);
        b.mark("scatter");
        b.dispatch(&gpu.kernel(m, "accumulate")?, &bind, base, plan.threads);
        b.mark("accumulate");
        b.dispatch(&gpu.kernel(m, "fixup")?, &bind, base, plan.keys);
        b.dispatch_groups(
            &gpu.kernel(m, "fixup_big")?,
            &bind,
            base,
            FIXUP_GROUPS.min(plan.keys),
        );
        b.mark("fixup");
        let region = plan.windows as u64 * plan.segs as u64;
        b.dispatch(
            &gpu.kernel(m, "window_segments")?,
            &bind,
            with(&|p| p[12] = 0),
            region,
        );
        b.mark("window");
        let reduce_per = self.tuning.reduce_per;
        // Tree reduction of each window's segments, between regions [0, R) and [R, 2R).
        let reduce = gpu.kernel(m, "reduce")?;
        let mut len = plan.segs;
        let mut at = 0u64;
        while len > 1 {
            let parts = len.div_ceil(reduce_per);
            let to = if at == 0 { region } else { 0 };
            let p = with(&|p| {
                p[8] = plan.windows;
                p[9] = len;
                p[10] = reduce_per;
                p[11] = at as u32;
                p[12] = to as u32;
            });
            b.dispatch(&reduce, &bind, p, plan.windows as u64 * parts as u64);
            len = parts;
            at = to;
        }
        b.mark("reduce");
        let out = if at == 0 { region } else { 0 };
        b.dispatch(
            &gpu.kernel(m, "to_jacobian")?,
            &bind,
            with(&|p| {
                p[11] = at as u32;
                p[12] = out as u32;
                p[14] = plan.windows;
            }),
            plan.windows as u64,
        );
        let mut sums = vec![G::Jacobian::default(); plan.windows as usize];
        b.download(
            "msm readback",
            &partials,
            out * xyzz_bytes(g),
            std::mem::size_of_val(sums.as_slice()) as u64,
        )?;
        b.mark("jacobian+copy");
        let recorded = clock.elapsed();
        let mut phases = b.finish_profiled(&mut [bytes_mut(&mut sums)])?;
        let waited = clock.elapsed();
        debug_assert_eq!(std::mem::size_of::<G::Jacobian>() as u64, jacobian_bytes(g));
        // Horner: Σ_w 2^(c·w)·S_w from the top window down.
        let mut acc = G::Projective::identity();
        for s in sums.into_iter().rev() {
            for _ in 0..plan.c {
                acc = acc.double();
            }
            acc += G::Projective::from(s);
        }
        if let Some(timing) = self.tuning.profile {
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            let device: f64 = phases.iter().map(|p| p.1).sum();
            phases.extend([
                ("device-sum", device),
                ("host-prep", ms(prep)),
                ("host-upload", ms(uploaded - prep)),
                ("host-record", ms(recorded - uploaded)),
                ("submit+wait+read", ms(waited - recorded)),
                ("horner", ms(clock.elapsed() - waited)),
                ("total", ms(clock.elapsed())),
            ]);
            eprintln!("{}", profile_line(gpu, &plan, timing, &phases));
            *self.last_profile.lock().unwrap_or_else(|e| e.into_inner()) = phases;
        }
        Ok(acc)
    }

    /// Records an exclusive prefix sum of the first `count` u32 of `data`, in place (`depth`:
    /// of the recursion, which names the kept buffer of block sums).
    fn record_scan(
        &self,
        gpu: &Gpu,
        b: &mut Batch<'_>,
        data: &wgpu::Buffer,
        count: u64,
        depth: usize,
    ) -> Result<()> {
        const SUMS: [&str; 4] = ["scan sums 0", "scan sums 1", "scan sums 2", "scan sums 3"];
        let blocks = count.div_ceil(SCAN_BLOCK);
        // 1024^4 = 2^40 elements: deeper never happens (u32 counts).
        let sums = gpu.scratch(SUMS[depth.min(3)], blocks * 4)?;
        let mut p = [0u32; 16];
        p[0] = count as u32;
        let bind = [Slice::from(data), Slice::from(&sums)];
        b.dispatch_groups(&gpu.kernel(Module::Scan, "scan_blocks")?, &bind, p, blocks);
        if blocks > 1 {
            self.record_scan(gpu, b, &sums, blocks, depth + 1)?;
            b.dispatch_groups(&gpu.kernel(Module::Scan, "scan_add")?, &bind, p, blocks);
        }
        let _ = &self.dummy;
        Ok(())
    }
}

/// One line of a pass's profile (stderr; the device script collects the lines starting with
/// `msm-profile:`).
fn profile_line(gpu: &Gpu, plan: &Plan, timing: Timing, phases: &[Phase]) -> String {
    let mut line = format!(
        "msm-profile: n={} c={} windows={} keys={} chunk={} threads={} seg={} segs={} wg={} \
         arith={} int64={} timing={} |",
        plan.n,
        plan.c,
        plan.windows,
        plan.keys,
        plan.chunk,
        plan.threads,
        plan.seg_len,
        plan.segs,
        gpu.msm_wg,
        if gpu.msm_straight {
            "straight"
        } else {
            "loops"
        },
        gpu.int64,
        timing.name()
    );
    for (name, ms) in phases {
        line += &format!(" {name}={ms:.3}");
    }
    line + " (ms)"
}

//! Pippenger MSM on the device: the host side of `kernels/msm.cuh` (which explains the
//! algorithm).
//!
//! One MSM is a fixed sequence of launches on the device's stream with no synchronisation until
//! the window sums come back: digits → histogram scan → scatter (a counting sort of every
//! (window, digit) pair by bucket) → chunked bucket accumulation → fixup of buckets that span
//! chunks → per-window weighted sums → tree reductions. Sizes that depend on the scalars (how many
//! digits are non-zero, how many scalars are 1) stay on the device: buffers and grids are sized
//! for the worst case and threads past the real count return at once. The host combines the
//! window sums with Horner's rule (c doublings a window, on blst).

use bellows_core::{
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Error, Result,
};
use blstrs::{G1Projective, G2Projective};
use cudarc::driver::{
    CudaFunction, DevicePtr, DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg,
};
use group::Group as _;

use crate::{
    device::Kernels,
    memory::{DeviceVec, Plain},
    points::{G1Xyzz, G2Xyzz},
    CudaDevice,
};

/// Threads per block of the MSM kernels (their `__launch_bounds__`).
const BLOCK: u32 = 128;
/// Accumulation threads to aim for: enough to fill an H200 (132 SMs) a few times over.
const TARGET_THREADS: u64 = 132 * 384 * 4;
/// Fewest entries one accumulation thread takes (`msm::MIN_CHUNK`).
const MIN_CHUNK: u64 = 8;
/// Buckets per thread in the window pass ([`segment_len`]).
const SEGMENT: u32 = 32;
/// Segment totals per thread in the window pass's second level ([`CudaDevice::window_sums`]).
const UPPER_SEGMENT: u32 = 8;
/// Fewest segments (over all windows) for which the window pass runs in two levels
/// ([`flat_window_pass`]).
const LEVELLED_THREADS: u64 = 1 << 17;
/// Inputs per thread in a tree-reduction step (fewer means more steps of shorter chains: these
/// steps run a few thousand threads at most, so a thread's chain of additions is their time);
/// `BELLOWS_MSM_REDUCE_PER` (2 to 64) overrides it, for timing.
const REDUCE_PER: u32 = 8;

/// [`REDUCE_PER`], or `BELLOWS_MSM_REDUCE_PER` when set.
fn reduce_per() -> u32 {
    knob("BELLOWS_MSM_REDUCE_PER", |p: &u32| (2..=64).contains(p)).unwrap_or(REDUCE_PER)
}

/// A tuning override from the environment: variable `name` parsed as a number, if `ok` accepts
/// it (anything else, or no variable, is None: the default applies).
fn knob<T: std::str::FromStr>(name: &str, ok: impl Fn(&T) -> bool) -> Option<T> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<T>().ok())
        .filter(|v| ok(v))
}
/// Bases per thread when summing the scalars equal to 1.
const ONES_PER: u32 = 64;
/// Largest number of scalars in one device MSM pass (entries are counted in u32).
pub const MAX_POINTS_PER_PASS: usize = 1 << 27;

/// Phase timer for `BELLOWS_MSM_PROFILE=1`: synchronises after each phase and prints the times
/// on stderr (for tuning; off by default, when it costs nothing).
struct Phases<'a> {
    dev: &'a CudaDevice,
    on: bool,
    last: std::time::Instant,
    times: Vec<(&'static str, f64)>,
}

impl<'a> Phases<'a> {
    fn new(dev: &'a CudaDevice) -> Self {
        Self {
            dev,
            on: std::env::var("BELLOWS_MSM_PROFILE").is_ok_and(|v| v == "1"),
            last: std::time::Instant::now(),
            times: Vec::new(),
        }
    }
    fn mark(&mut self, name: &'static str) {
        if self.on {
            let _ = self.dev.synchronize();
            let now = std::time::Instant::now();
            self.times
                .push((name, (now - self.last).as_secs_f64() * 1e3));
            self.last = now;
        }
    }
    fn report(&self, what: &str, n: u64, c: u32) {
        if self.on {
            let parts: Vec<String> = self
                .times
                .iter()
                .map(|(k, v)| format!("{k} {v:.2}"))
                .collect();
            eprintln!("msm-profile {what} n={n} c={c}: {} ms", parts.join(", "));
        }
    }
}

/// The group-specific kernels of one group.
#[derive(Clone)]
pub(crate) struct GroupKernels {
    pub accumulate: CudaFunction,
    pub accumulate_points: CudaFunction,
    pub affine_first: CudaFunction,
    pub affine_round: CudaFunction,
    pub fixup: CudaFunction,
    pub fixup_big: CudaFunction,
    pub window_segments: CudaFunction,
    pub window_horner: CudaFunction,
    pub reduce: CudaFunction,
    pub sum_listed: CudaFunction,
    pub to_jacobian: CudaFunction,
    pub table_double: CudaFunction,
    pub batch_to_affine: CudaFunction,
}

/// A group the device MSM runs in.
pub trait MsmGroup: 'static {
    /// Affine points (blst layout).
    type Affine: Plain;
    /// The device's accumulator.
    type Xyzz: Plain;
    /// Results (blst's Jacobian layout).
    type Jacobian: Plain;
    /// "G1" or "G2".
    const NAME: &'static str;
    /// Device memory one MSM pass needs per scalar beyond its bases (scalar, sorted entries,
    /// buckets, partial sums), with room to spare, for every window width: the rule that sizes
    /// the passes of an MSM too large for one ([`pass_bytes`] is the bound of one pass).
    const PASS_BYTES_PER_SCALAR: u64;
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn kernels(k: &Kernels) -> &GroupKernels;
    /// Σ_w 2^(c·w)·sums\[w\] + extra (Horner's rule on the host).
    fn combine(window_sums: &[Self::Jacobian], extra: &Self::Jacobian, c: u32) -> Self::Jacobian;
}

/// G1 marker.
pub struct G1;
/// G2 marker.
pub struct G2;

/// `impl MsmGroup` for one group: its types, kernels, and Horner's rule over blstrs' projective
/// points.
macro_rules! msm_group {
    (
        $marker:ty, $name:literal, $per_scalar:literal, $affine:ty, $xyzz:ty, $jac:ty, $proj:ty,
        $kernels:ident
    ) => {
        #[allow(private_interfaces)]
        impl MsmGroup for $marker {
            type Affine = $affine;
            type Xyzz = $xyzz;
            type Jacobian = $jac;
            const NAME: &'static str = $name;
            const PASS_BYTES_PER_SCALAR: u64 = $per_scalar;
            fn kernels(k: &Kernels) -> &GroupKernels {
                &k.$kernels
            }
            fn combine(window_sums: &[$jac], extra: &$jac, c: u32) -> $jac {
                let mut acc = <$proj>::identity();
                for s in window_sums.iter().rev() {
                    for _ in 0..c {
                        acc = acc.double();
                    }
                    acc += <$proj>::from(*s);
                }
                acc += <$proj>::from(*extra);
                acc.into()
            }
        }
    };
}
msm_group!(
    G1,
    "G1",
    320,
    G1Affine,
    G1Xyzz,
    G1Jacobian,
    G1Projective,
    msm_g1
);
msm_group!(
    G2,
    "G2",
    640,
    G2Affine,
    G2Xyzz,
    G2Jacobian,
    G2Projective,
    msm_g2
);

/// The digit passes' arguments; mirrors `msm::DigitArgs` in kernels/msm.cuh field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct DigitArgs {
    scalars: u64,
    n: u64,
    first: u64,
    density: u64,
    rank: u64,
    c: u32,
    windows: u32,
    counts: u64,
    entries: u64,
    ones: u64,
    ones_count: u64,
    stride: u64,
    keys: u32,
    pass: u32,
    passes: u32,
    listed: u64,
    listed_count: u64,
}
// SAFETY: a #[repr(C)] struct of integers whose layout matches the kernel's parameter type.
unsafe impl DeviceRepr for DigitArgs {}

/// Window width for `n` scalars (or `BELLOWS_MSM_WINDOW` when set, 2..=24).
///
/// Up to 2^25 scalars: log2(n) − 3, at most 16. The bucket additions (n·⌈256/c⌉) fall slowly
/// with c while the buckets (2^(c−1) a window: their accumulation, fix-ups and window sums)
/// double at each step; on the H200 (run 30, G1, one process per c from 15 to 22) c = 16 was the
/// fastest at 2^20, 2^22 and 2^24 — 14.4, 43.2 and 150.4 ms against 17.9, 48.9 and 154.9 ms
/// with log2(n) − 3 — and 16 windows of 16 bits cover the 256 bits that signed digits need
/// exactly. From 2^26 on the additions dominate and fewer windows pay: c = 20 (13 windows).
pub fn window_bits(n: usize) -> u32 {
    if let Some(c) = knob("BELLOWS_MSM_WINDOW", |c: &u32| (2..=24).contains(c)) {
        return c;
    }
    let log = usize::BITS - n.max(1).leading_zeros() - 1;
    if log >= 26 {
        20
    } else {
        log.saturating_sub(3).clamp(4, 16)
    }
}

/// Threads of a batch-affine round at most (`BELLOWS_MSM_AFFINE_THREADS` overrides): each
/// inverts once for its `per` pairs, so fewer threads with more pairs each spend less on
/// inversions; 132 × 1024 is about two waves on an H200 at the rounds' occupancy (G1: 126
/// registers, three blocks of 128 threads a multiprocessor).
const AFFINE_THREADS: u64 = 132 * 1024;
/// Fewest pairs per thread in a batch-affine round: the Fermat inversion (~570 products)
/// spread over at least this many additions of ~6 products.
const AFFINE_MIN_PER: u64 = 128;
/// Most batch-affine rounds.
pub const MAX_AFFINE_ROUNDS: u32 = 8;

/// Batch-affine rounds (`BELLOWS_MSM_AFFINE_ROUNDS`, 0..=8; default 0, none).
///
/// Off by default: on the H200 (2026-12-01, runs 36–41 in docs/benchmarks.md) every round count
/// was slower than the XYZZ accumulation alone — G1 at 2^24 138 ms without rounds, 195–226 ms
/// with 2 to 6; G2 407 ms against 499–545 ms. Nsight Compute put a round at ~4,050
/// instructions a pair against ~4,190 a mixed XYZZ addition: the ~4 products saved go to the
/// second read of both points, the prefix products' stores and loads, the exact-case checks
/// and the inversion. The rounds stay selectable for that comparison (and are checked against
/// blst by the emulation tests and `bellows-cuda-msm`).
pub fn affine_rounds() -> u32 {
    knob("BELLOWS_MSM_AFFINE_ROUNDS", |r: &u32| {
        *r <= MAX_AFFINE_ROUNDS
    })
    .unwrap_or(0)
}

/// Buckets whose cursors one scatter launch writes behind: each bucket's current 32-byte
/// sector is written a u32 at a time, so a launch keeps 4 MiB of partly written sectors in
/// the L2 cache (50 MB on an H200) beside the scalars streaming through it.
const SCATTER_KEYS_PER_PASS: u64 = 1 << 17;
/// Most scatter launches: each reads every scalar again and recomputes its digits.
const MAX_SCATTER_PASSES: u32 = 8;

/// Launches the scatter of `keys` buckets is split into, by key range: ⌈keys / 2^17⌉, at most
/// [`MAX_SCATTER_PASSES`]; on the device (`msm::scatter_range`) the launches also stop at one
/// for each 1.5 entries a scalar. On the H200 (run 62, one process a sweep, scalars on the
/// device): G1 2^24 with a c = 20 table (2^19 buckets) 102.0 ms in one launch, 98.8 in two,
/// 98.3 in four, 99.5 in eight; 2^26 without a table (13 windows of 2^19 buckets) 458.5 ms in
/// one, 436.4 in four, 433.1 in eight, 434.6 in sixteen. Without the device's limit, eight
/// launches made each sparse MSM's scatter at K = 27 with 90 % bits 16 → 49 ms (run 63): every
/// launch read all 2^27 scalars again for 1.3 entries each.
fn default_scatter_passes(keys: u32) -> u32 {
    (u64::from(keys).div_ceil(SCATTER_KEYS_PER_PASS) as u32).clamp(1, MAX_SCATTER_PASSES)
}

/// [`default_scatter_passes`], or `BELLOWS_MSM_SCATTER_PASSES` (1 to 64) when set, for timing.
fn scatter_passes(keys: u32) -> u32 {
    knob("BELLOWS_MSM_SCATTER_PASSES", |p: &u32| (1..=64).contains(p))
        .unwrap_or_else(|| default_scatter_passes(keys))
}

/// Bucket keys a bin of the binned scatter holds unless `BELLOWS_MSM_BIN_KEYS` says otherwise
/// (a power of two, 2^4 to 2^24, for timing): the placing step writes behind the cursors of
/// about one bin at a time, 2^15 × 32 bytes of partly written sectors, a small part of the L2
/// cache.
const BIN_KEYS: u32 = 1 << 15;
/// The binned scatter runs by default above this many bucket keys. On the H200 (run 79,
/// `bellows-cuda-msm --sweep BELLOWS_MSM_SCATTER=ranges,bins`, scalars on the device): G1 at
/// 2^27 without a table (13 windows of 2^19 buckets) 830.4 ms by ranges, 804.6 ms binned
/// (scatter 97.5 ms against 17.8 + 51.2 ms for binning and placing), and with 90 % of the
/// scalars 0 or 1 140.0 against 129.6 ms (17.2 against 1.9 + 4.8 ms); at 2^24 with a c = 20
/// table (2^19 buckets) 98.5 ms by ranges, 100.9 ms binned, so 2^19 keys stay with the ranges.
/// In a proof at K = 27, 90 % bits, the GPU phase went from 2.11 to 2.04 s (median of 3, one
/// process, `bellows bench --alternate-env BELLOWS_MSM_SCATTER=ranges,auto`).
const BIN_MIN_KEYS: u64 = 1 << 19;
/// Most bins: the binning kernel keeps two u32 a bin in shared memory (32 KiB).
const MAX_BINS: u32 = 4096;
/// Most windows the binned scatter takes (`msm::BIN_MAX_WINDOWS`: a thread keeps a 16-bit place
/// for each of its digits), so c ≥ 8.
const BIN_MAX_WINDOWS: u32 = 32;

/// Whether a pass scatters in two steps through bins (`msm.cuh`, "The binned scatter") rather
/// than in launches by key range, and with bins of 2^shift keys: `Some(shift)` when the keys
/// are more than [`BIN_MIN_KEYS`], the windows at most [`BIN_MAX_WINDOWS`] and no batch-affine
/// rounds run (they pad the buckets with entries no scalar writes). `BELLOWS_MSM_SCATTER=bins` or `ranges` forces one (bins
/// still only where they can run), for timing one against the other. The caller falls back to
/// the ranges when the scratch (8 bytes an entry) does not fit.
fn scatter_bins(keys: u32, windows: u32, rounds: u32) -> Option<u32> {
    let forced = std::env::var("BELLOWS_MSM_SCATTER").ok();
    let bin_keys = knob("BELLOWS_MSM_BIN_KEYS", |k: &u32| {
        k.is_power_of_two() && (1 << 4..=1 << 24).contains(k)
    })
    .unwrap_or(BIN_KEYS);
    bin_shift(keys, windows, rounds, forced.as_deref(), bin_keys)
}

/// [`scatter_bins`]'s rule, given the knobs' values.
fn bin_shift(
    keys: u32,
    windows: u32,
    rounds: u32,
    forced: Option<&str>,
    bin_keys: u32,
) -> Option<u32> {
    let want = match forced {
        Some("ranges") => false,
        Some("bins") => true,
        _ => u64::from(keys) > BIN_MIN_KEYS,
    };
    if !want || windows > BIN_MAX_WINDOWS || rounds > 0 || keys == 0 {
        return None;
    }
    let mut shift = bin_keys.trailing_zeros();
    while keys.div_ceil(1 << shift) > MAX_BINS {
        shift += 1;
    }
    Some(shift)
}

fn affine_threads() -> u64 {
    knob("BELLOWS_MSM_AFFINE_THREADS", |t: &u64| *t > 0).unwrap_or(AFFINE_THREADS)
}

/// Window width of precomputed tables unless told otherwise (`msm-precompute-window`): 13
/// windows of 20 bits. On the H200 (run 47, docs/benchmarks.md; scalars on the device) G1 at
/// 2^24 took 114.3 ms with c = 20, 116.5 with 22 and 133.8 with 24 (136.9 without a table); G2
/// 338.6 / 339.1 ms with 20 / 22 (406.5 without); at 2^22 c = 20 was the fastest in both.
/// Wider windows mean fewer additions but a bucket set 2^(c−1) long to sort into and sum, and
/// larger tables read at random.
pub const TABLE_WINDOW: u32 = 20;
/// Points of a table built per launch pair (the XYZZ scratch: 0.8 GB in G1, 1.6 GB in G2).
const TABLE_CHUNK: usize = 1 << 22;
/// Points one thread converts to affine per inversion when building a table.
const TABLE_PER: u32 = 32;

/// Windows of `c` bits that signed digits of a 255-bit scalar need (c·windows ≥ 256).
pub fn window_count(c: u32) -> u32 {
    256u32.div_ceil(c)
}

/// Precomputed window multiples of a resident set of bases (kernels/msm.cuh explains the
/// method): `windows` blocks of `len` points, block w holding 2^(c·w)·P_i at w·len + i, block 0
/// the bases themselves.
pub struct PrecomputedTable<T: Plain> {
    points: DeviceVec<T>,
    len: usize,
    c: u32,
    windows: u32,
}

impl<T: Plain> PrecomputedTable<T> {
    /// Bases per window.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it holds no base.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Window width.
    pub fn c(&self) -> u32 {
        self.c
    }
    /// Windows (blocks of `len` points).
    pub fn windows(&self) -> u32 {
        self.windows
    }
    /// Device bytes it takes.
    pub fn bytes(&self) -> u64 {
        self.points.bytes() as u64
    }
    /// Device bytes a table of `len` points of `point_bytes` each would take with windows of
    /// `c` bits.
    pub fn bytes_for(len: usize, point_bytes: u64, c: u32) -> u64 {
        len as u64 * window_count(c) as u64 * point_bytes
    }
}

/// Estimated cost, in mixed additions, of an MSM over `used` scalars: every (scalar, window)
/// digit is one addition, and every bucket about three more (fixup, running sums). The
/// precomputed path pays when its fewer windows outweigh its larger shared bucket set.
/// `BELLOWS_MSM_TABLE=always` uses a table for every MSM over it (the checks use this to reach
/// the table path at small sizes), `never` ignores tables (old-against-new timings in one
/// process).
fn precomputed_pays(used: usize, table_c: u32) -> bool {
    match std::env::var("BELLOWS_MSM_TABLE").as_deref() {
        Ok("always") => return true,
        Ok("never") => return false,
        _ => {}
    }
    let plain_c = window_bits(used);
    let plain = used as u64 * window_count(plain_c) as u64
        + 3 * window_count(plain_c) as u64 * (1u64 << (plain_c - 1));
    let pre = used as u64 * window_count(table_c) as u64 + 3 * (1u64 << (table_c - 1));
    pre < plain
}

/// A 1-D launch of `threads` threads in blocks of `block`.
fn launch_cfg(threads: u64, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (threads.div_ceil(block as u64).max(1) as u32, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A grid-stride launch over `n` items.
fn stride_cfg(n: u64) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(256).clamp(1, 1 << 16) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn ptr<T: Plain>(v: &DeviceVec<T>, dev: &CudaDevice) -> u64 {
    v.buf.device_ptr(dev.stream()).0
}
fn ptr_mut<T: Plain>(v: &mut DeviceVec<T>, dev: &CudaDevice) -> u64 {
    v.buf.device_ptr_mut(dev.stream()).0
}

/// u32 device scratch (the kernels' counters and indices), as halves of u64 words.
struct U32Buf {
    buf: DeviceVec<Fr>,
}

impl U32Buf {
    /// Zeroed room for `len` u32 values.
    fn zeroed(dev: &CudaDevice, len: u64) -> Result<Self> {
        let frs = (len.max(1)).div_ceil(8) as usize;
        Ok(Self {
            buf: dev.alloc::<Fr>(frs)?,
        })
    }
    /// Uninitialised room for `len` u32 values.
    fn uninit(dev: &CudaDevice, len: u64) -> Result<Self> {
        let frs = (len.max(1)).div_ceil(8) as usize;
        Ok(Self {
            buf: dev.alloc_uninit::<Fr>(frs)?,
        })
    }
    fn ptr(&mut self, dev: &CudaDevice) -> u64 {
        ptr_mut(&mut self.buf, dev)
    }
}

/// Threads of a block of the binning kernel (`BIN_BLOCK` in bellows.cu).
const BIN_BLOCK: u32 = 256;

impl CudaDevice {
    /// Value `i` of a u32 device buffer (waits for the stream).
    fn read_u32(&self, b: &U32Buf, i: u64) -> Result<u32> {
        let word = (i / 2) as usize;
        let view = b.buf.buf.slice(word..word + 1);
        let mut host = [0u64; 1];
        self.stream()
            .memcpy_dtoh(&view, &mut host)
            .map_err(|e| self.err(e))?;
        self.synchronize()?;
        Ok((host[0] >> (32 * (i % 2))) as u32)
    }

    /// Builds the precomputed table of `bases` with windows of `c` bits (2..=31): window w from
    /// window w − 1 by c doublings (XYZZ), then to affine with one inversion per
    /// [`TABLE_PER`] points, [`TABLE_CHUNK`] points at a time. Waits for the device. Fails
    /// cleanly (the device keeps nothing) when memory runs out.
    pub fn precompute_table<G: MsmGroup>(
        &self,
        bases: &DeviceVec<G::Affine>,
        c: u32,
    ) -> Result<PrecomputedTable<G::Affine>> {
        if !(2..=31).contains(&c) {
            return Err(Error::invalid(format!(
                "precomputed window of {c} bits (2 to 31)"
            )));
        }
        let len = bases.len();
        let windows = window_count(c);
        if (len as u64) * windows as u64 >= 1u64 << 31 {
            return Err(Error::invalid(format!(
                "a precomputed table of {windows} windows of {len} {} points (at most 2^31 \
                 points in all)",
                G::NAME
            )));
        }
        let kern = G::kernels(&self.k);
        let words = G::Affine::WORDS;
        let size = (words * 8) as u64;
        let mut table = self.alloc_uninit::<G::Affine>(len * windows as usize)?;
        if len > 0 {
            let mut first = table.buf.slice_mut(0..len * words);
            self.stream()
                .memcpy_dtod(&bases.buf, &mut first)
                .map_err(|e| self.err(e))?;
        }
        let chunk = TABLE_CHUNK.min(len.max(1));
        let mut scratch = self.alloc_uninit::<G::Xyzz>(chunk)?;
        let scratch_ptr = ptr_mut(&mut scratch, self);
        let table_ptr = ptr_mut(&mut table, self);
        for w in 1..windows as u64 {
            for off in (0..len).step_by(chunk) {
                let count = (len - off).min(chunk) as u64;
                let prev = table_ptr + ((w - 1) * len as u64 + off as u64) * size;
                let out = table_ptr + (w * len as u64 + off as u64) * size;
                let mut l = self.stream().launch_builder(&kern.table_double);
                l.arg(&prev).arg(&count).arg(&c).arg(&scratch_ptr);
                // SAFETY: thread t < count reads point t of window w − 1 (written before, in
                // stream order) and writes scratch[t] (chunk ≥ count points).
                unsafe { l.launch(launch_cfg(count, BLOCK)) }.map_err(|e| self.err(e))?;
                let threads = count.div_ceil(TABLE_PER as u64);
                let mut l = self.stream().launch_builder(&kern.batch_to_affine);
                l.arg(&scratch_ptr)
                    .arg(&count)
                    .arg(&threads)
                    .arg(&TABLE_PER)
                    .arg(&out);
                // SAFETY: thread t reads scratch[i] and writes out[i] for i = t + k·threads
                // below count: window w's points off .. off + count of the table.
                unsafe { l.launch(launch_cfg(threads, BLOCK)) }.map_err(|e| self.err(e))?;
            }
        }
        self.synchronize()?;
        drop(scratch);
        Ok(PrecomputedTable {
            points: table,
            len,
            c,
            windows,
        })
    }

    /// Exclusive prefix sum of `n` u32 values at device address `data`, in place.
    fn scan_u32(&self, data: u64, n: u64) -> Result<()> {
        let blocks = n.div_ceil(1024).max(1);
        let mut sums = U32Buf::uninit(self, blocks)?;
        let sums_ptr = sums.ptr(self);
        let mut l = self.stream().launch_builder(&self.k.scan_blocks);
        l.arg(&data).arg(&n).arg(&sums_ptr);
        // SAFETY: block b reads and writes data[1024·b ..][..1024] within n, writes sums[b].
        unsafe { l.launch(launch_cfg(blocks * 256, 256)) }.map_err(|e| self.err(e))?;
        if blocks > 1 {
            self.scan_u32(sums_ptr, blocks)?;
            let mut l = self.stream().launch_builder(&self.k.scan_add);
            l.arg(&data).arg(&n).arg(&sums_ptr);
            // SAFETY: reads sums[i / 1024] (blocks values) and updates data[i], i < n.
            unsafe { l.launch(stride_cfg(n)) }.map_err(|e| self.err(e))?;
        }
        // `sums` is freed in stream order, after the kernels that read it.
        Ok(())
    }

    /// The window sums Σ_j (j + 1)·B_{w,j} of `windows` sets of `half` buckets (at `buckets`)
    /// into `out[0..windows)`, in two levels (kernels/msm.cuh, `window_horner`). Level 0 cuts
    /// the buckets into segments of `seg`, whose weighted sums A_g are reduced per window to
    /// R_0 and whose plain sums T_g are level 1's inputs; level 1 is the flat pass over the T_g
    /// with weights from 0 and segments of [`UPPER_SEGMENT`] (short chains: its few thousand
    /// threads wait on their additions one after another, which made a third and fourth level
    /// of 32-long segments cost 3.5 ms at 2^26 in run 67), reduced to R_1; then R_0 += seg·R_1.
    /// `ph` marks "segments" after level 0.
    fn window_sums<G: MsmGroup>(
        &self,
        buckets: u64,
        half: u32,
        seg: u32,
        windows: u32,
        out: u64,
        ph: &mut Phases<'_>,
    ) -> Result<()> {
        let seg0 = seg.min(half);
        let segs = half / seg0;
        let mut acc = self.alloc_uninit::<G::Xyzz>((segs * windows) as usize)?;
        let acc_ptr = ptr_mut(&mut acc, self);
        let mut total = self.alloc_uninit::<G::Xyzz>((segs * windows) as usize)?;
        let total_ptr = ptr_mut(&mut total, self);
        // SAFETY: acc and total hold segs·windows points each, what the level writes.
        unsafe { self.launch_segments::<G>(buckets, half, seg0, windows, 1, acc_ptr, total_ptr) }?;
        ph.mark("segments");
        self.reduce_groups::<G>(acc_ptr, windows, segs, out)?;
        if segs > 1 {
            let mut r1 = self.alloc_uninit::<G::Xyzz>(windows as usize)?;
            let r1_ptr = ptr_mut(&mut r1, self);
            self.window_sums_flat::<G>(total_ptr, segs, UPPER_SEGMENT, 0, windows, r1_ptr)?;
            let shift = seg0.trailing_zeros();
            let kern = G::kernels(&self.k);
            let mut l = self.stream().launch_builder(&kern.window_horner);
            l.arg(&out).arg(&r1_ptr).arg(&shift).arg(&windows);
            // SAFETY: reads and writes `windows` points at `out` (the caller's), reads `windows`
            // at r1 (allocated with that many).
            unsafe { l.launch(launch_cfg(u64::from(windows), BLOCK)) }.map_err(|e| self.err(e))?;
            // Freed in stream order, after the kernels that read it.
            drop(r1);
        }
        drop((acc, total));
        Ok(())
    }

    /// The flat window pass ([`flat_window_pass`] says when it runs; the only one before run
    /// 67, and level 1 of [`CudaDevice::window_sums`]): Σ_j (j + w0)·in_{w,j} over `windows`
    /// sets of `len` points at `input`, in segments of `seg` (at most `len`) each adding
    /// lo·(its plain sum) by double-and-add, then a tree reduction per window into `out`.
    fn window_sums_flat<G: MsmGroup>(
        &self,
        input: u64,
        len: u32,
        seg: u32,
        w0: u32,
        windows: u32,
        out: u64,
    ) -> Result<()> {
        let seg = seg.min(len);
        let segs = len / seg;
        let mut seg_out = self.alloc_uninit::<G::Xyzz>((segs * windows) as usize)?;
        let seg_ptr = ptr_mut(&mut seg_out, self);
        // SAFETY: seg_out holds segs·windows points; flat: no totals are written.
        unsafe { self.launch_segments::<G>(input, len, seg, windows, w0, seg_ptr, 0) }?;
        self.reduce_groups::<G>(seg_ptr, windows, segs, out)?;
        drop(seg_out);
        Ok(())
    }

    /// Queues `window_segments` over `windows` sets of `len` points at `input` in segments of
    /// `seg`, weights from `w0`: flat (each segment's offset added by double-and-add) when
    /// `total` is 0, else each segment's plain sum written to `total`.
    ///
    /// # Safety
    /// `input` holds windows·len points; `acc`, and `total` unless 0, hold windows·len/seg.
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_segments<G: MsmGroup>(
        &self,
        input: u64,
        len: u32,
        seg: u32,
        windows: u32,
        w0: u32,
        acc: u64,
        total: u64,
    ) -> Result<()> {
        let kern = G::kernels(&self.k);
        let flat = u32::from(total == 0);
        let threads = u64::from(len / seg) * u64::from(windows);
        let mut l = self.stream().launch_builder(&kern.window_segments);
        l.arg(&input)
            .arg(&len)
            .arg(&seg)
            .arg(&windows)
            .arg(&w0)
            .arg(&flat)
            .arg(&acc)
            .arg(&total);
        // SAFETY: the caller's contract: the kernel reads windows·len points at `input` and
        // writes windows·len/seg at `acc` and, not flat, at `total`.
        unsafe { l.launch(launch_cfg(threads, BLOCK)) }.map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Sums `groups` groups of `len` XYZZ points at `input` down to one point a group, written
    /// to `out` (room for `groups` points), by tree reduction. Returns nothing until the stream
    /// runs.
    fn reduce_groups<G: MsmGroup>(
        &self,
        input: u64,
        groups: u32,
        len: u32,
        out: u64,
    ) -> Result<()> {
        let kern = G::kernels(&self.k);
        let mut cur = input;
        let mut cur_len = len;
        let mut keep: Vec<DeviceVec<G::Xyzz>> = Vec::new();
        let per = reduce_per();
        loop {
            let parts = cur_len.div_ceil(per);
            let dst = if parts == 1 {
                out
            } else {
                let mut v = self.alloc_uninit::<G::Xyzz>(groups as usize * parts as usize)?;
                let p = ptr_mut(&mut v, self);
                keep.push(v);
                p
            };
            let threads = groups as u64 * parts as u64;
            let mut l = self.stream().launch_builder(&kern.reduce);
            l.arg(&cur).arg(&groups).arg(&cur_len).arg(&per).arg(&dst);
            // SAFETY: reads groups·cur_len points at `cur`, writes groups·parts points at `dst`,
            // both allocations of at least that size.
            unsafe { l.launch(launch_cfg(threads, BLOCK)) }.map_err(|e| self.err(e))?;
            if parts == 1 {
                return Ok(());
            }
            cur = dst;
            cur_len = parts;
        }
    }

    /// `Σ scalars[i] · bases[start + rank(i)]`, where rank(i) = i without a density and the
    /// number of set density bits before i with one (scalars whose bit is clear are skipped).
    /// Bases are device-resident, or partly or wholly streamed from host memory (see
    /// [`BaseSource`]); scalars are in host memory or already on the device. Work is split into
    /// passes of at most `pass_points` scalars (and [`MAX_POINTS_PER_PASS`]); a streamed pass's
    /// bases upload on the copy stream while the previous pass computes, and every pass's
    /// result is read back once, at the end (one synchronisation). `scratch_room`: device bytes
    /// a pass may take as scratch for the batch-affine rounds or the binned scatter (a pass
    /// whose rounds need more runs without them, one whose binned scatter needs more scatters
    /// by key ranges; `u64::MAX`: whatever the driver gives).
    pub fn msm<G: MsmGroup>(
        &self,
        bases: BaseSource<'_, G::Affine>,
        start: usize,
        scalars: ScalarSource<'_>,
        density: Option<&[u64]>,
        pass_points: usize,
        scratch_room: u64,
    ) -> Result<G::Jacobian> {
        self.msm_density::<G>(
            bases,
            start,
            scalars,
            density,
            None,
            pass_points,
            scratch_room,
        )
    }

    /// [`CudaDevice::msm`] with the density bitmap's words also on the device (`density_dev`:
    /// `density`'s words, padded into whole Fr values as [`words_as_fr`] lays them out), as the
    /// G1 phase uploads them once per proof: a pass that starts on a word boundary (every pass
    /// but the one after a partial tier's resident prefix) then reads them in place instead of
    /// copying its words from the host (at K = 27 the bitmap is 16 MB, and the copy from
    /// pageable memory cost 10 to 15 ms an MSM, run 67; `BELLOWS_MSM_DENSITY=host` restores
    /// it, for timing). The host words are still read, for the passes' counts.
    #[allow(clippy::too_many_arguments)]
    pub fn msm_density<G: MsmGroup>(
        &self,
        bases: BaseSource<'_, G::Affine>,
        start: usize,
        scalars: ScalarSource<'_>,
        density: Option<&[u64]>,
        density_dev: Option<&DeviceVec<Fr>>,
        pass_points: usize,
        scratch_room: u64,
    ) -> Result<G::Jacobian> {
        let n = scalars.len();
        let used = used_count(n, density)?;
        let density_dev = match (density, density_dev) {
            (Some(d), Some(dd)) => {
                if dd.len() != d.len().div_ceil(4) {
                    return Err(Error::invalid(format!(
                        "device density of {} words for a bitmap of {} (need {})",
                        dd.len() * 4,
                        d.len(),
                        d.len().div_ceil(4) * 4
                    )));
                }
                Some(dd).filter(|_| density_in_place())
            }
            _ => None,
        };
        let total = bases.len();
        if start.checked_add(used).is_none_or(|end| end > total) {
            return Err(Error::invalid(format!(
                "{} MSM over bases {start}..{} of {total} resident points",
                G::NAME,
                start.saturating_add(used),
            )));
        }
        // Scalar-index boundaries: passes never straddle the end of a resident prefix.
        let pass = pass_points.clamp(64, MAX_POINTS_PER_PASS) / 64 * 64;
        let resident = bases.resident_len();
        let mut cuts = vec![0usize];
        if start < resident && start + used > resident {
            cuts.push(scalar_index_of_base(n, density, resident - start));
        }
        cuts.push(n);
        let table = match &bases {
            BaseSource::Table(t) => Some((t.len as u64, t.c, t.windows)),
            _ => None,
        };
        let mut pending: Vec<(DeviceVec<G::Jacobian>, u32)> = Vec::new();
        let mut base_off = start;
        for seg in cuts.windows(2) {
            let (s0, s1) = (seg[0], seg[1]);
            let mut p0 = s0;
            while p0 < s1 {
                // Passes start on density-word boundaries (s0 is one, or the only cut).
                let p1 = if s1 - p0 > pass { p0 + pass } else { s1 };
                // This pass's density words: in place on the device when the pass starts on
                // a word boundary, else a host copy with the bits of earlier scalars cleared.
                // (Without a density, base indices are just offsets into the pass's bases.)
                let first_bit = if density.is_some() { p0 % 64 } else { 0 };
                let words = density.map(|d| &d[p0 / 64..p1.div_ceil(64)]);
                let consumed = used_count_from(p1 - p0, words, first_bit)?;
                let in_place = density_dev.filter(|_| first_bit == 0);
                let dens_owned: Option<Vec<u64>> = match (words, in_place) {
                    (Some(w), None) => {
                        let mut v = w.to_vec();
                        v[0] &= !0u64 << first_bit;
                        Some(v)
                    }
                    _ => None,
                };
                let dens = match (words, in_place, dens_owned.as_deref()) {
                    (Some(w), Some(dd), _) => Some(PassDensity::Device {
                        ptr: ptr(dd, self) + (p0 / 64 * 8) as u64,
                        words: w.len() as u64,
                    }),
                    (_, _, Some(v)) => Some(PassDensity::Host(v)),
                    _ => None,
                };
                let sc = scalars.range(p0, p1);
                if consumed > 0 {
                    let r = match bases.resident(self, base_off, consumed) {
                        Some(dev_ptr) => self.msm_pass::<G>(
                            dev_ptr,
                            sc,
                            dens,
                            first_bit as u64,
                            consumed,
                            scratch_room,
                            table.filter(|&(_, c, _)| precomputed_pays(consumed, c)),
                        )?,
                        None => {
                            let host = bases.host_range(base_off, consumed)?;
                            let mut scratch = self.alloc_uninit::<G::Affine>(consumed)?;
                            self.upload_staged(host, &mut scratch, |_, _| Ok(()))?;
                            let p = ptr_mut(&mut scratch, self);
                            let r = self.msm_pass::<G>(
                                p,
                                sc,
                                dens,
                                first_bit as u64,
                                consumed,
                                scratch_room,
                                None,
                            )?;
                            // Freed in stream order, after the pass that reads it.
                            drop(scratch);
                            r
                        }
                    };
                    pending.extend(r);
                }
                base_off += consumed;
                p0 = p1;
            }
        }
        let mut acc = G::Jacobian::default();
        for (jac, c) in pending {
            let host = self.download(&jac)?;
            let windows = host.len() - 1;
            let r = G::combine(&host[..windows], &host[windows], c);
            acc = G::combine(&[acc], &r, 0);
        }
        Ok(acc)
    }

    /// One device pass over bases starting at device address `bases_ptr`, of which `used`
    /// (the caller's count of the scalars the density selects) are read; queues everything and
    /// returns the (windows + 1) Jacobian sums still on the device, and c (None when no scalar
    /// is used). `first_bit`: the density bit of the first scalar (the density slice starts at
    /// its word). `table`: (stride, c, windows) of a precomputed table that `bases_ptr` points
    /// into (window w of base i at index w·stride + i): the digits of every window then share
    /// one bucket set and the pass returns a single window sum.
    #[allow(clippy::too_many_arguments)]
    fn msm_pass<G: MsmGroup>(
        &self,
        bases_ptr: u64,
        scalars: ScalarSource<'_>,
        density: Option<PassDensity<'_>>,
        first_bit: u64,
        used: usize,
        scratch_room: u64,
        table: Option<(u64, u32, u32)>,
    ) -> Result<Option<(DeviceVec<G::Jacobian>, u32)>> {
        let n = scalars.len() as u64;
        if n == 0 || used == 0 {
            return Ok(None);
        }
        let kern = G::kernels(&self.k);
        // `windows`: the digit windows; `sum_windows`: the bucket sets (and window sums).
        let (c, windows, stride) = match table {
            Some((stride, c, windows)) => (c, windows, stride),
            None => {
                let c = window_bits(used);
                (c, window_count(c), 0)
            }
        };
        let sum_windows = if stride != 0 { 1 } else { windows };
        let half = 1u32 << (c - 1);
        let keys = sum_windows * half;

        let mut ph = Phases::new(self);
        let mut d_scalars_own = match scalars {
            ScalarSource::Host(_) => Some(self.alloc_uninit::<Fr>(scalars.len())?),
            ScalarSource::Device(..) => None,
        };
        let (d_density, density_ptr, mut rank) = match density {
            Some(pd) => {
                let (owned, dd_ptr, words) = match pd {
                    PassDensity::Host(d) => {
                        let dd = self.upload(words_as_fr(d).as_slice())?;
                        let p = ptr(&dd, self);
                        (Some(dd), p, d.len() as u64)
                    }
                    PassDensity::Device { ptr, words } => (None, ptr, words),
                };
                let mut rank = U32Buf::uninit(self, words)?;
                let rank_ptr = rank.ptr(self);
                let mut l = self.stream().launch_builder(&self.k.popcount);
                l.arg(&dd_ptr).arg(&words).arg(&rank_ptr);
                // SAFETY: reads `words` u64 at dd_ptr (uploaded just above, padded, or inside
                // the caller's device copy of the bitmap: PassDensity::Device), writes `words`
                // u32 at rank.
                unsafe { l.launch(stride_cfg(words)) }.map_err(|e| self.err(e))?;
                self.scan_u32(rank_ptr, words)?;
                (owned, dd_ptr, Some(rank))
            }
            None => (None, 0, None),
        };
        // Batch-affine rounds: every bucket padded to a multiple of 2^rounds entries; their
        // scratch (a half and a quarter of the padded entries, as points) must fit the room.
        let point_bytes = (G::Affine::WORDS * 8) as u64;
        let mut rounds = affine_rounds();
        let padded = |r: u32| used as u64 * windows as u64 + keys as u64 * ((1u64 << r) - 1);
        let scratch = |r: u32| (padded(r) / 2 + padded(r) / 4 + 2) * point_bytes;
        if rounds > 0 && (scratch(rounds) > scratch_room || padded(rounds) > u32::MAX as u64) {
            rounds = 0;
        }
        let mut affine_bufs = if rounds > 0 {
            let a = self.alloc_uninit::<G::Affine>((padded(rounds) / 2 + 1) as usize);
            let b = self.alloc_uninit::<G::Affine>((padded(rounds) / 4 + 1) as usize);
            match (a, b) {
                (Ok(a), Ok(b)) => Some((a, b)),
                // Out of memory for the scratch: the pass runs without the rounds.
                (Err(Error::OutOfMemory { .. }), _) | (_, Err(Error::OutOfMemory { .. })) => {
                    rounds = 0;
                    None
                }
                (Err(e), _) | (_, Err(e)) => return Err(e),
            }
        } else {
            None
        };
        let max_entries = padded(rounds);
        let mut counts = U32Buf::zeroed(self, keys as u64 + 1)?;
        let mut offsets = U32Buf::uninit(self, keys as u64 + 1)?;
        let mut entries = U32Buf::uninit(self, max_entries)?;
        let mut ones = U32Buf::uninit(self, n)?;
        let mut ones_count = U32Buf::zeroed(self, 1)?;
        // Where the binned scatter may run, the count pass lists the scalars with digits.
        let bin_shift = scatter_bins(keys, windows, rounds);
        let mut listed = match bin_shift {
            Some(_) => Some((U32Buf::uninit(self, n)?, U32Buf::zeroed(self, 1)?)),
            None => None,
        };
        let (listed_ptr, listed_count_ptr) = match listed.as_mut() {
            Some((l, c)) => (l.ptr(self), c.ptr(self)),
            None => (0, 0),
        };
        let scalars_ptr = match (&scalars, d_scalars_own.as_mut()) {
            (ScalarSource::Device(v, off, _), _) => ptr(v, self) + *off as u64 * 32,
            (ScalarSource::Host(_), Some(d)) => ptr_mut(d, self),
            (ScalarSource::Host(_), None) => unreachable!("allocated above"),
        };
        let args = DigitArgs {
            scalars: scalars_ptr,
            n,
            first: first_bit,
            density: density_ptr,
            rank: rank.as_mut().map_or(0, |r| r.ptr(self)),
            c,
            windows,
            counts: counts.ptr(self),
            entries: entries.ptr(self),
            ones: ones.ptr(self),
            ones_count: ones_count.ptr(self),
            stride,
            keys,
            pass: 0,
            passes: 1,
            listed: listed_ptr,
            listed_count: listed_count_ptr,
        };
        let digits = |args: &DigitArgs, scatter: u32| -> Result<()> {
            let mut l = self.stream().launch_builder(&self.k.msm_digits);
            l.arg(args).arg(&scatter);
            // SAFETY: scalar i < n reads scalars[i] and (with a density) density[(first + i) /
            // 64] and rank[(first + i) / 64]; it updates counts[key] for keys below
            // windows·2^(c−1) and writes one entry per non-zero digit below the total of the
            // histogram (≤ n·windows) or one index into `ones` (n long); a scatter launch also
            // reads counts[keys], the scan's total (counts holds keys + 1 values).
            unsafe { l.launch(stride_cfg(args.n)) }
                .map(|_| ())
                .map_err(|e| self.err(e))
        };
        ph.mark("setup");
        match (scalars, d_scalars_own.as_mut()) {
            // Upload through pinned staging; each chunk is counted as soon as it has landed.
            (ScalarSource::Host(host), Some(d)) => self.upload_staged(host, d, |off, len| {
                let chunk_args = DigitArgs {
                    scalars: scalars_ptr + off as u64 * 32,
                    n: len as u64,
                    first: first_bit + off as u64,
                    ..args
                };
                digits(&chunk_args, 0)
            })?,
            _ => digits(&args, 0)?,
        }
        ph.mark("upload+count");
        let counts_ptr = args.counts;
        if rounds > 0 {
            let q = 1u32 << rounds;
            let mut l = self.stream().launch_builder(&self.k.msm_pad_counts);
            l.arg(&counts_ptr).arg(&keys).arg(&q);
            // SAFETY: rounds counts[k] up for k < keys (keys + 1 values allocated).
            unsafe { l.launch(stride_cfg(keys as u64)) }.map_err(|e| self.err(e))?;
            let pad = PAD;
            let entries_ptr = args.entries;
            let mut l = self.stream().launch_builder(&self.k.fill_u32);
            l.arg(&entries_ptr).arg(&max_entries).arg(&pad);
            // SAFETY: writes the max_entries u32 of `entries` (allocated with that length).
            unsafe { l.launch(stride_cfg(max_entries)) }.map_err(|e| self.err(e))?;
        }
        // Offsets: exclusive scan of the histogram (its extra last slot, zero, becomes the total).
        self.scan_u32(counts_ptr, keys as u64 + 1)?;
        self.stream()
            .memcpy_dtod(&counts.buf.buf, &mut offsets.buf.buf)
            .map(|_| ())
            .map_err(|e| self.err(e))?;
        ph.mark("scan");
        // The binned scatter where it pays and its scratch (8 bytes an entry, sized by the
        // scan's total: one wait for the device here) fits the room beside the pass.
        let binned = match bin_shift {
            Some(shift) => {
                let total = self.read_u32(&counts, keys as u64)?;
                if total == 0 || u64::from(total) * 8 > scratch_room {
                    None
                } else {
                    match self.alloc_uninit::<Fr>(total.div_ceil(4) as usize) {
                        Ok(scratch) => Some((shift, total, scratch)),
                        // Out of memory for the scratch: the scatter by key ranges.
                        Err(Error::OutOfMemory { .. }) => None,
                        Err(e) => return Err(e),
                    }
                }
            }
            None => None,
        };
        if let Some((shift, total, mut scratch)) = binned {
            let bins = keys.div_ceil(1 << shift);
            let mut cursors = U32Buf::uninit(self, u64::from(bins))?;
            let (cursors_ptr, offsets_ptr) = (cursors.ptr(self), offsets.ptr(self));
            let scratch_ptr = ptr_mut(&mut scratch, self);
            let mut l = self.stream().launch_builder(&self.k.msm_bin_start);
            l.arg(&offsets_ptr).arg(&shift).arg(&bins).arg(&cursors_ptr);
            // SAFETY: bin b < bins reads offsets[b << shift] (below keys, as bins =
            // ⌈keys / 2^shift⌉; the offsets hold keys + 1 values) and writes cursors[b].
            unsafe { l.launch(stride_cfg(u64::from(bins))) }.map_err(|e| self.err(e))?;
            // The kernel reads the list's length itself; blocks past it return at once.
            let blocks = n
                .div_ceil(u64::from(BIN_BLOCK))
                .min(u64::from(self.multiprocessors()?) * 8) as u32;
            let mut l = self.stream().launch_builder(&self.k.msm_bin);
            l.arg(&args)
                .arg(&shift)
                .arg(&bins)
                .arg(&cursors_ptr)
                .arg(&scratch_ptr);
            // SAFETY: as the digit pass for the listed scalars (indices below n, written by
            // the count pass, their number in listed_count), densities and ranks; a block's pairs
            // go to runs reserved from its bins' cursors, each run inside its bin's region of
            // [0, total) (the scan's offsets, so the regions hold exactly the digits the count
            // pass counted), and the scratch holds total u64 (⌈total / 4⌉ Fr); 2·bins u32 of
            // dynamic shared memory (bins ≤ MAX_BINS: 32 KiB, under the default 48 KiB).
            unsafe {
                l.launch(LaunchConfig {
                    grid_dim: (blocks.max(1), 1, 1),
                    block_dim: (BIN_BLOCK, 1, 1),
                    shared_mem_bytes: 8 * bins,
                })
            }
            .map_err(|e| self.err(e))?;
            ph.mark("bin");
            let total_ptr = offsets_ptr + u64::from(keys) * 4;
            let mut l = self.stream().launch_builder(&self.k.msm_place);
            l.arg(&scratch_ptr)
                .arg(&total_ptr)
                .arg(&args.counts)
                .arg(&args.entries);
            // SAFETY: thread j < total (offsets[keys]) reads pair j of the scratch (all written
            // by the binning) and writes its entry at its key's cursor (key < keys), which
            // stays below the next key's offset, inside the entries (≥ total long).
            unsafe { l.launch(launch_cfg(u64::from(total), BIN_BLOCK)) }
                .map_err(|e| self.err(e))?;
            // Freed in stream order, after the placing reads them.
            drop((scratch, cursors, listed));
        } else {
            // Each launch finds its key range on the device (msm::scatter_range), from the
            // scan's total: few entries a scalar, and the launches past the first return at
            // once.
            let passes = scatter_passes(keys).min(keys);
            for pass in 0..passes {
                digits(
                    &DigitArgs {
                        pass,
                        passes,
                        ..args
                    },
                    1,
                )?;
            }
        }
        ph.mark("scatter");

        // Batch-affine rounds: round r halves every (padded) bucket into the half or quarter
        // buffer, alternately; the accumulation then reads the last round's points, over the
        // offsets divided by 2^rounds.
        let offsets_ptr = offsets.ptr(self);
        let mut points_ptr = 0u64;
        let mut shifted = None;
        if let Some((half_buf, quarter_buf)) = affine_bufs.as_mut() {
            let total_ptr = offsets_ptr + keys as u64 * 4;
            let (half_ptr, quarter_ptr) = (ptr_mut(half_buf, self), ptr_mut(quarter_buf, self));
            let max_threads = affine_threads();
            for r in 1..=rounds {
                let pairs = (max_entries >> (r - 1)) / 2;
                let threads = pairs.div_ceil(AFFINE_MIN_PER).clamp(1, max_threads);
                let per = u32::try_from(pairs.div_ceil(threads))
                    .map_err(|_| Error::invalid("MSM too large"))?;
                let out = if r % 2 == 1 { half_ptr } else { quarter_ptr };
                if r == 1 {
                    let mut l = self.stream().launch_builder(&kern.affine_first);
                    l.arg(&bases_ptr)
                        .arg(&args.entries)
                        .arg(&total_ptr)
                        .arg(&threads)
                        .arg(&per)
                        .arg(&out);
                    // SAFETY: pair i < *total / 2 reads entries 2i, 2i + 1 (below the padded
                    // total ≤ max_entries), the bases they name (below start + used), and
                    // writes out[i] (the half buffer holds max_entries / 2 + 1 points).
                    unsafe { l.launch(launch_cfg(threads, BLOCK)) }.map_err(|e| self.err(e))?;
                } else {
                    let shift = r - 1;
                    let mut l = self.stream().launch_builder(&kern.affine_round);
                    l.arg(&points_ptr)
                        .arg(&total_ptr)
                        .arg(&shift)
                        .arg(&threads)
                        .arg(&per)
                        .arg(&out);
                    // SAFETY: pair i < (*total >> (r − 1)) / 2 reads points 2i, 2i + 1 of the
                    // previous round's buffer (written by it) and writes out[i]; round r's
                    // output (max_entries >> r points at most) fits its buffer (a half for odd
                    // r, a quarter for even r), which is not the one it reads.
                    unsafe { l.launch(launch_cfg(threads, BLOCK)) }.map_err(|e| self.err(e))?;
                }
                points_ptr = out;
                const ROUND_NAMES: [&str; MAX_AFFINE_ROUNDS as usize] = [
                    "affine-1", "affine-2", "affine-3", "affine-4", "affine-5", "affine-6",
                    "affine-7", "affine-8",
                ];
                ph.mark(ROUND_NAMES[r as usize - 1]);
            }
            let mut sh = U32Buf::uninit(self, keys as u64 + 1)?;
            let sh_ptr = sh.ptr(self);
            let n_off = keys as u64 + 1;
            let mut l = self.stream().launch_builder(&self.k.msm_shift_offsets);
            l.arg(&offsets_ptr).arg(&n_off).arg(&rounds).arg(&sh_ptr);
            // SAFETY: reads and writes keys + 1 values of two distinct buffers of that length.
            unsafe { l.launch(stride_cfg(n_off)) }.map_err(|e| self.err(e))?;
            shifted = Some(sh);
        }
        let acc_entries = max_entries >> rounds;

        // Accumulation in chunks of L entries, L chosen on the device from the real count
        // (`chunk32 = 0`, msm::effective_chunk): TARGET_THREADS threads, fewer for small MSMs.
        let chunk32 = 0u32;
        let threads = acc_entries.div_ceil(MIN_CHUNK).clamp(1, TARGET_THREADS);
        let mut buckets = self.alloc::<G::Xyzz>(keys as usize)?;
        ph.mark("alloc");
        let mut heads = self.alloc_uninit::<G::Xyzz>(threads as usize)?;
        let mut tails = self.alloc_uninit::<G::Xyzz>(threads as usize)?;
        let offsets_ptr = match shifted.as_mut() {
            Some(sh) => sh.ptr(self),
            None => offsets_ptr,
        };
        let entries_ptr = args.entries;
        let (b_ptr, h_ptr, t_ptr) = (
            ptr_mut(&mut buckets, self),
            ptr_mut(&mut heads, self),
            ptr_mut(&mut tails, self),
        );
        let mut l;
        if rounds > 0 {
            l = self.stream().launch_builder(&kern.accumulate_points);
            l.arg(&points_ptr);
        } else {
            l = self.stream().launch_builder(&kern.accumulate);
            l.arg(&bases_ptr).arg(&entries_ptr);
        }
        l.arg(&offsets_ptr)
            .arg(&keys)
            .arg(&chunk32)
            .arg(&threads)
            .arg(&b_ptr)
            .arg(&h_ptr)
            .arg(&t_ptr);
        // SAFETY: thread t reads entries [t·L, (t+1)·L) below the total, the offsets (keys + 1),
        // bases below start + used (checked by the caller) — or, after the rounds, the last
        // round's points below the shifted total — and writes buckets[key < keys], heads[t],
        // tails[t] (threads long; L = max(⌈total / threads⌉, 8), so threads·L ≥ total).
        unsafe { l.launch(launch_cfg(threads, BLOCK)) }.map_err(|e| self.err(e))?;
        ph.mark("accumulate");
        // Buckets spanning more than 32 chunks are listed for a warp each; there are at most
        // threads / 32 + 1 of them (their spans overlap only at their ends).
        let big_cap = threads / 32 + 2;
        let mut big = U32Buf::uninit(self, big_cap)?;
        let mut big_count = U32Buf::zeroed(self, 1)?;
        let (big_ptr, big_count_ptr) = (big.ptr(self), big_count.ptr(self));
        let mut l = self.stream().launch_builder(&kern.fixup);
        l.arg(&offsets_ptr)
            .arg(&keys)
            .arg(&chunk32)
            .arg(&threads)
            .arg(&h_ptr)
            .arg(&t_ptr)
            .arg(&b_ptr)
            .arg(&big_ptr)
            .arg(&big_count_ptr);
        // SAFETY: thread = key < keys reads offsets and the heads/tails of the chunks its bucket
        // spans (all written by the accumulation), writes buckets[key] or one slot of `big`
        // (at most big_cap are listed, see above).
        unsafe { l.launch(launch_cfg(keys as u64, BLOCK)) }.map_err(|e| self.err(e))?;
        let mut l = self.stream().launch_builder(&kern.fixup_big);
        l.arg(&offsets_ptr)
            .arg(&keys)
            .arg(&chunk32)
            .arg(&threads)
            .arg(&h_ptr)
            .arg(&t_ptr)
            .arg(&b_ptr)
            .arg(&big_ptr)
            .arg(&big_count_ptr);
        // SAFETY: warp w < big_count reads big[w] (written above), the offsets and the chunk
        // partials of that bucket, and writes its bucket; 64-thread blocks, 64 XYZZ of shared
        // memory each (static).
        unsafe { l.launch(launch_cfg(big_cap * 32, 64)) }.map_err(|e| self.err(e))?;
        drop((big, big_count));
        ph.mark("fixup");
        drop((heads, tails, entries, affine_bufs, shifted));
        ph.mark("free");

        // Window sums, out[w] for w < windows (out[windows] = the sum of the bases whose scalar
        // is 1, below).
        let seg = segment_len(half);
        let windows = sum_windows;
        let mut sums = self.alloc_uninit::<G::Xyzz>(windows as usize + 1)?;
        let sums_ptr = ptr_mut(&mut sums, self);
        if flat_window_pass(half / seg, windows) {
            self.window_sums_flat::<G>(b_ptr, half, seg, 1, windows, sums_ptr)?;
            drop(buckets);
            ph.mark("segments");
        } else {
            self.window_sums::<G>(b_ptr, half, seg, windows, sums_ptr, &mut ph)?;
            drop(buckets);
        }
        ph.mark("window-reduce");

        let ones_threads = n.div_ceil(ONES_PER as u64);
        let mut ones_out = self.alloc_uninit::<G::Xyzz>(ones_threads as usize)?;
        let ones_out_ptr = ptr_mut(&mut ones_out, self);
        let (ones_ptr, ones_count_ptr) = (args.ones, args.ones_count);
        let mut l = self.stream().launch_builder(&kern.sum_listed);
        l.arg(&bases_ptr)
            .arg(&ones_ptr)
            .arg(&ones_count_ptr)
            .arg(&ONES_PER)
            .arg(&ones_threads)
            .arg(&ones_out_ptr);
        // SAFETY: reads ones[j] for j below the count (≤ n) and the bases they name; writes
        // ones_threads points.
        unsafe { l.launch(launch_cfg(ones_threads, BLOCK)) }.map_err(|e| self.err(e))?;
        let last_ptr = sums_ptr + windows as u64 * (G::Xyzz::WORDS as u64 * 8);
        self.reduce_groups::<G>(ones_out_ptr, 1, ones_threads as u32, last_ptr)?;

        let mut jac = self.alloc_uninit::<G::Jacobian>(windows as usize + 1)?;
        let jac_ptr = ptr_mut(&mut jac, self);
        let count = windows + 1;
        let mut l = self.stream().launch_builder(&kern.to_jacobian);
        l.arg(&sums_ptr).arg(&count).arg(&jac_ptr);
        // SAFETY: converts windows + 1 points between buffers of that length.
        unsafe { l.launch(launch_cfg(count as u64, BLOCK)) }.map_err(|e| self.err(e))?;
        ph.mark("ones");
        drop((
            sums,
            ones_out,
            ones,
            ones_count,
            counts,
            offsets,
            d_scalars_own,
            d_density,
            rank,
        ));
        ph.mark("finish");
        ph.report(G::NAME, n, c);
        Ok(Some((jac, c)))
    }
}

/// Device bytes one pass of [`CudaDevice::msm`] over `n` scalars allocates at most, beyond its
/// bases, with or without the precomputed table of shape `table` ((c, windows)), the
/// batch-affine rounds' and the binned scatter's scratch apart (`scratch_room`): per scalar its
/// uploaded copy, its entries (one per window), its place in the list of ones and in the list
/// of scalars with digits (the binned scatter's), its density and rank words and its
/// share of the sums of ones; per bucket key its count, offset and XYZZ bucket; the
/// accumulation's head and tail sums; the window pass's segment sums and reduction levels;
/// then 64 MiB and 2 % to spare (the pool's rounding). An upper bound, so that a planner may
/// give a whole MSM one pass when this fits; [`MsmGroup::PASS_BYTES_PER_SCALAR`] stays the
/// rule when it does not.
pub fn pass_bytes<G: MsmGroup>(n: usize, table: Option<(u32, u32)>) -> u64 {
    let xyzz = (G::Xyzz::WORDS * 8) as u64;
    let plain_c = window_bits(n);
    let mut shapes = vec![(window_count(plain_c), plain_c, window_count(plain_c))];
    if let Some((c, windows)) = table {
        shapes.push((windows, c, 1));
    }
    let mut most = 0u64;
    for (windows, c, sets) in shapes {
        let half = 1u64 << (c - 1);
        let keys = u64::from(sets) * half;
        let segs = (keys / u64::from(segment_len(half as u32))).max(u64::from(sets));
        let per_scalar =
            32 + 4 * u64::from(windows) + 4 + 4 + 1 + xyzz.div_ceil(u64::from(ONES_PER));
        let fixed = 8 * (keys + 1) + keys * xyzz + 2 * TARGET_THREADS * xyzz + 4 * segs * xyzz;
        most = most.max(n as u64 * per_scalar + fixed);
    }
    most + most / 50 + (64 << 20)
}

/// Whether the window pass over `windows` sets of `segs` segments runs flat (one level, each
/// segment adding its offset's multiple by double-and-add; [`CudaDevice::window_sums_flat`])
/// rather than in two levels ([`CudaDevice::window_sums`]). Two levels save the doublings,
/// which matter when the segments' threads fill the GPU several times over (run 67: 13 windows
/// of 2^19 buckets, 2^26 without a table, segments and reduction 14.5 → 10.9 ms, the MSM 432.9
/// → 429.2 ms; at K = 27, 90 % bits, 14.4 → 10.9 ms per G1 MSM); with few (one table window
/// of 2^19 buckets: 16 384 threads; a G2 pass of 16 windows of 2^15) level 1's chained
/// additions cost more than the doublings saved (run 67: the dense K = 24 G1 and G2 phase with
/// tables 763.1 ms flat, 767.5 ms in levels; the G2 pass of 16 windows 6.0 ms flat, 7.3 ms in
/// levels), so those run flat. `BELLOWS_MSM_WINDOW_PASS=flat` or `levels` forces either, for
/// timing.
fn flat_window_pass(segs: u32, windows: u32) -> bool {
    match std::env::var("BELLOWS_MSM_WINDOW_PASS")
        .as_deref()
        .map(str::trim)
    {
        Ok("flat") => true,
        Ok("levels") => false,
        _ => u64::from(segs) * u64::from(windows) < LEVELLED_THREADS,
    }
}

/// Buckets (or totals, a level up) per thread in the window pass over sets of `half`: [`SEGMENT`],
/// or `BELLOWS_MSM_SEGMENT` (a power of two up to 1024) when set, for timing. A segment costs
/// its 2·len additions (and, in the flat pass, the double-and-add of its offset: log2(half)
/// doublings, which made shorter segments slower in run 61: one table window of 2^19 buckets,
/// 16 384 threads of 32 buckets 2.08 ms, 65 536 of 8 buckets 2.47 ms).
fn segment_len(half: u32) -> u32 {
    knob("BELLOWS_MSM_SEGMENT", |s: &u32| {
        s.is_power_of_two() && *s <= 1024
    })
    .unwrap_or(SEGMENT)
    .min(half)
}

/// The empty slot of a padded bucket (`msm::PAD` in kernels/msm.cuh).
const PAD: u32 = u32::MAX;

/// One pass's density bitmap, first word first: host words (uploaded for the pass, the bits
/// of scalars before the pass cleared) or `words` u64 at device address `ptr`, inside a device
/// copy of the whole bitmap (the pass then starts on a word boundary).
#[derive(Clone, Copy)]
enum PassDensity<'a> {
    Host(&'a [u64]),
    Device { ptr: u64, words: u64 },
}

/// Whether passes read a device copy of the density in place when the caller made one
/// ([`CudaDevice::msm_density`]); `BELLOWS_MSM_DENSITY=host` copies each pass's words from the
/// host instead, as before run 74, for timing.
fn density_in_place() -> bool {
    std::env::var("BELLOWS_MSM_DENSITY")
        .as_deref()
        .map(str::trim)
        != Ok("host")
}

/// Density words padded into whole Fr values (4 words each) for upload.
pub(crate) fn words_as_fr(d: &[u64]) -> Vec<Fr> {
    d.chunks(4)
        .map(|c| {
            let mut w = [0u64; 4];
            w[..c.len()].copy_from_slice(c);
            Fr(w)
        })
        .collect()
}

/// Where the scalars of an MSM are.
#[derive(Clone, Copy)]
pub enum ScalarSource<'a> {
    /// In host memory (uploaded through pinned staging).
    Host(&'a [Fr]),
    /// Already on the device: `len` values from `offset` on.
    Device(&'a DeviceVec<Fr>, usize, usize),
}

impl<'a> ScalarSource<'a> {
    /// Number of scalars.
    pub fn len(&self) -> usize {
        match self {
            ScalarSource::Host(s) => s.len(),
            ScalarSource::Device(_, _, n) => *n,
        }
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn range(&self, a: usize, b: usize) -> ScalarSource<'a> {
        match *self {
            ScalarSource::Host(s) => ScalarSource::Host(&s[a..b]),
            ScalarSource::Device(v, off, _) => ScalarSource::Device(v, off + a, b - a),
        }
    }
}

/// Where the bases of an MSM are: the memory tiers of the backend.
pub enum BaseSource<'a, T: Plain> {
    /// Every point resident in device memory.
    Device(&'a DeviceVec<T>),
    /// Every point resident, with its precomputed window multiples: MSMs large enough for
    /// them to pay ([`precomputed_pays`]) read the table, smaller ones its first window.
    Table(&'a PrecomputedTable<T>),
    /// The first `prefix.len()` points resident, the rest streamed from `host` (all points).
    Split {
        /// Resident prefix.
        prefix: &'a DeviceVec<T>,
        /// Every point, in host memory.
        host: &'a [T],
    },
    /// Every point streamed from host memory, a pass at a time.
    Host(&'a [T]),
}

impl<T: Plain> BaseSource<'_, T> {
    fn len(&self) -> usize {
        match self {
            BaseSource::Device(d) => d.len(),
            BaseSource::Table(t) => t.len,
            BaseSource::Split { host, .. } | BaseSource::Host(host) => host.len(),
        }
    }
    fn resident_len(&self) -> usize {
        match self {
            BaseSource::Device(d) => d.len(),
            BaseSource::Table(t) => t.len,
            BaseSource::Split { prefix, .. } => prefix.len(),
            BaseSource::Host(_) => 0,
        }
    }
    /// Device address of points [a, a + n) when they are all resident.
    fn resident(&self, dev: &CudaDevice, a: usize, n: usize) -> Option<u64> {
        let d = match self {
            BaseSource::Table(t) => {
                return (a + n <= t.len).then(|| ptr(&t.points, dev) + (a * T::WORDS * 8) as u64)
            }
            BaseSource::Device(d) => d,
            BaseSource::Split { prefix, .. } => prefix,
            BaseSource::Host(_) => return None,
        };
        (a + n <= d.len()).then(|| ptr(d, dev) + (a * T::WORDS * 8) as u64)
    }
    fn host_range(&self, a: usize, n: usize) -> Result<&[T]> {
        match self {
            BaseSource::Split { host, .. } | BaseSource::Host(host) => Ok(&host[a..a + n]),
            BaseSource::Device(_) | BaseSource::Table(_) => {
                Err(Error::invalid("resident bases have no host copy"))
            }
        }
    }
}

/// Scalars used among the first `n` (all without a density).
fn used_count(n: usize, density: Option<&[u64]>) -> Result<usize> {
    used_count_from(n, density, 0)
}

/// Scalars used among `n` starting at bit `first_bit` of `density[0]`.
fn used_count_from(n: usize, density: Option<&[u64]>, first_bit: usize) -> Result<usize> {
    let Some(d) = density else { return Ok(n) };
    let words = (first_bit + n).div_ceil(64);
    if d.len() < words {
        return Err(Error::invalid(format!(
            "density of {} words for {n} scalars (need {words})",
            d.len()
        )));
    }
    let mut total = 0usize;
    for (w, x) in d[..words].iter().enumerate() {
        let lo = if w == 0 { first_bit } else { 0 };
        let hi = (first_bit + n - w * 64).min(64);
        let below_hi = if hi >= 64 { !0u64 } else { (1u64 << hi) - 1 };
        let mask = below_hi & (!0u64 << lo);
        total += (x & mask).count_ones() as usize;
    }
    Ok(total)
}

/// The index of the scalar that uses base `k` (relative to the MSM's start): scalars before it
/// use bases below k. `n` when fewer than k + 1 scalars are used.
fn scalar_index_of_base(n: usize, density: Option<&[u64]>, k: usize) -> usize {
    let Some(d) = density else { return k.min(n) };
    // Walk whole words, then bits: the cut is the index of the k-th used scalar.
    let mut seen = 0usize;
    for (w, x) in d.iter().enumerate() {
        let c = x.count_ones() as usize;
        if seen + c > k {
            let mut x = *x;
            let mut need = k - seen;
            let mut bit = 0;
            while need > 0 || x & 1 == 0 {
                if x & 1 == 1 {
                    need -= 1;
                }
                x >>= 1;
                bit += 1;
            }
            return (w * 64 + bit).min(n);
        }
        seen += c;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass bound covers what a pass allocates (entries, ones, buckets, counts and
    /// offsets, the accumulation's partial sums) and stays far below the per-scalar rule at
    /// the sizes that rule split: a K = 27 G2 MSM (2^27 scalars, 13 windows of 2^19 buckets)
    /// fits in under 20 GB where 640 bytes a scalar asked for 86 GB.
    #[test]
    fn the_one_pass_bound_covers_a_pass() {
        let xyzz_g1 = (<G1 as MsmGroup>::Xyzz::WORDS * 8) as u64;
        let xyzz_g2 = (<G2 as MsmGroup>::Xyzz::WORDS * 8) as u64;
        for (log_n, table) in [
            (10, None),
            (20, None),
            (24, None),
            (24, Some((20, 13))),
            (27, None),
        ] {
            let n = 1u64 << log_n;
            let c = window_bits(n as usize);
            let keys = u64::from(window_count(c)) << (c - 1);
            for (bytes, xyzz) in [
                (pass_bytes::<G1>(n as usize, table), xyzz_g1),
                (pass_bytes::<G2>(n as usize, table), xyzz_g2),
            ] {
                let floor = n * (32 + 4 * u64::from(window_count(c)) + 4)
                    + keys * (xyzz + 8)
                    + 2 * TARGET_THREADS * xyzz;
                assert!(bytes > floor, "2^{log_n}: {bytes} ≤ {floor}");
            }
        }
        let k27 = pass_bytes::<G2>(1 << 27, None);
        assert!(k27 < 20 << 30, "{k27}");
        assert!(k27 < (1u64 << 27) * 640 / 4);
        // A table's wider window set is covered too (c = 24: 2^23 buckets in one set).
        let t24 = pass_bytes::<G1>(1 << 24, Some((24, 11)));
        assert!(t24 > (1u64 << 23) * xyzz_g1);
    }

    #[test]
    fn the_binned_scatter_takes_more_than_2_19_keys() {
        // A dense 2^27 MSM (13 windows of 2^19 buckets) bins, in bins of 2^15 keys.
        assert_eq!(bin_shift(13 << 19, 13, 0, None, BIN_KEYS), Some(15));
        // 2^24 with a c = 20 table (one set of 2^19 buckets) stays with the ranges.
        assert_eq!(bin_shift(1 << 19, 13, 0, None, BIN_KEYS), None);
        assert_eq!(bin_shift((1 << 19) + 1, 13, 0, None, BIN_KEYS), Some(15));
        // Forced either way, within what the bins can do.
        assert_eq!(bin_shift(1 << 10, 26, 0, Some("bins"), 1 << 4), Some(4));
        assert_eq!(bin_shift(13 << 19, 13, 0, Some("ranges"), BIN_KEYS), None);
        assert_eq!(bin_shift(1 << 10, 33, 0, Some("bins"), 1 << 4), None);
        assert_eq!(bin_shift(13 << 19, 13, 2, None, BIN_KEYS), None);
        assert_eq!(bin_shift(0, 13, 0, Some("bins"), BIN_KEYS), None);
        // Bins grow until there are at most MAX_BINS of them.
        assert_eq!(bin_shift(1 << 28, 13, 0, None, BIN_KEYS), Some(16));
        assert_eq!((1u32 << 28).div_ceil(1 << 16), MAX_BINS);
    }

    #[test]
    fn scatter_passes_follow_the_buckets() {
        // Up to 2^17 buckets one launch; one table window of 2^19 buckets (c = 20) four.
        assert_eq!(default_scatter_passes(1 << 9), 1);
        assert_eq!(default_scatter_passes(1 << 17), 1);
        assert_eq!(default_scatter_passes((1 << 17) + 1), 2);
        assert_eq!(default_scatter_passes(1 << 19), 4);
        // 13 windows of 2^19 (2^26 scalars and up without a table): capped at eight.
        assert_eq!(default_scatter_passes(13 << 19), MAX_SCATTER_PASSES);
        assert_eq!(MAX_SCATTER_PASSES, 8);
        assert_eq!(segment_len(1 << 19), SEGMENT);
        assert_eq!(segment_len(8), 8);
    }

    /// Two levels for the no-table windows at 2^26 and beyond (13 windows of 2^19 buckets in
    /// segments of 32), the flat pass for one table window and for the narrow windows below
    /// 2^26 (16 of 2^15). (Holds without `BELLOWS_MSM_WINDOW_PASS` in the environment.)
    #[test]
    fn the_window_pass_is_levelled_only_for_many_segments() {
        if std::env::var_os("BELLOWS_MSM_WINDOW_PASS").is_some() {
            return;
        }
        assert!(!flat_window_pass((1 << 19) / SEGMENT, 13));
        assert!(flat_window_pass((1 << 19) / SEGMENT, 1));
        assert!(flat_window_pass((1 << 15) / SEGMENT, 16));
    }
}

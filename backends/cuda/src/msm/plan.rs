//! How an MSM is carried out, decided on the host before anything is launched: window width,
//! whether a precomputed table pays, the scatter (key ranges or bins, and their sizes), the
//! window pass (flat or two levels), and how many scalars a pass takes. Pure functions of the
//! sizes and the tuning ([`MsmConfig`]); docs/benchmarks.md has the measurements behind the
//! thresholds.

use bellows_backend_api::{Error, Result};

use super::{
    config::{MsmConfig, Scatter, TableUse, WindowPass},
    group::MsmGroup,
};
use crate::buffers::Plain;

/// Accumulation threads to aim for: enough to fill an H200 (132 SMs) a few times over.
pub(crate) const TARGET_THREADS: u64 = 132 * 384 * 4;
/// Fewest entries one accumulation thread takes (`MIN_CHUNK` in kernels/msm/accumulate.cuh).
pub(crate) const MIN_CHUNK: u64 = 8;
/// Segment totals per thread in the window pass's second level: short chains, as its few
/// thousand threads wait on their additions one after another.
pub(crate) const UPPER_SEGMENT: u32 = 8;
/// Fewest segments (over all windows) for which the window pass runs in two levels.
const LEVELLED_THREADS: u64 = 1 << 17;
/// Bases per thread when summing the scalars equal to 1.
pub(crate) const ONES_PER: u32 = 64;
/// Largest number of scalars in one device MSM pass (entries are counted in u32).
pub const MAX_POINTS_PER_PASS: usize = 1 << 27;
/// Buckets whose cursors one scatter launch writes behind: each bucket's current 32-byte sector
/// is written a u32 at a time, so a launch keeps 4 MiB of partly written sectors in the L2
/// cache (50 MB on an H200) beside the scalars streaming through it.
const SCATTER_KEYS_PER_PASS: u64 = 1 << 17;
/// Most scatter launches: each reads every scalar again and recomputes its digits.
const MAX_SCATTER_PASSES: u32 = 8;
/// The binned scatter runs by default above this many bucket keys: 13 windows of 2^19 buckets
/// (2^26 scalars and up without a table) bin, one table window of 2^19 stays with the ranges.
const BIN_MIN_KEYS: u64 = 1 << 19;
/// Most bins: the binning kernel keeps two u32 a bin in shared memory (32 KiB).
pub(crate) const MAX_BINS: u32 = 4096;
/// Most windows the binned scatter takes (`msm::BIN_MAX_WINDOWS`: a thread keeps a 16-bit place
/// for each of its digits), so c ≥ 8.
const BIN_MAX_WINDOWS: u32 = 32;

/// Window width for `n` scalars without a table: the tuning's, else log2(n) − 3 between 4 and
/// 16 up to 2^25 scalars, and 20 (13 windows) from 2^26 on.
///
/// The bucket additions (n·⌈256/c⌉) fall slowly with c while the buckets (2^(c−1) a window:
/// their accumulation, fix-ups and window sums) double at each step; 16 windows of 16 bits
/// cover the 256 bits that signed digits need exactly. From 2^26 on the additions dominate and
/// fewer windows pay.
pub fn window_bits(n: usize, cfg: &MsmConfig) -> u32 {
    if let Some(c) = cfg.window {
        return c;
    }
    let log = usize::BITS - n.max(1).leading_zeros() - 1;
    if log >= 26 {
        20
    } else {
        log.saturating_sub(3).clamp(4, 16)
    }
}

/// Windows of `c` bits that signed digits of a 255-bit scalar need (c·windows ≥ 256).
pub fn window_count(c: u32) -> u32 {
    256u32.div_ceil(c)
}

/// Whether an MSM over `used` scalars reads a precomputed table of windows of `table_c` bits:
/// when its estimated cost, in mixed additions, is below the plain path's (every (scalar,
/// window) digit one addition, every bucket about three more: fix-up, running sums), or as the
/// tuning forces.
pub(crate) fn precomputed_pays(used: usize, table_c: u32, cfg: &MsmConfig) -> bool {
    match cfg.table {
        TableUse::Always => return true,
        TableUse::Never => return false,
        TableUse::Auto => {}
    }
    let plain_c = window_bits(used, cfg);
    let plain = used as u64 * window_count(plain_c) as u64
        + 3 * window_count(plain_c) as u64 * (1u64 << (plain_c - 1));
    let pre = used as u64 * window_count(table_c) as u64 + 3 * (1u64 << (table_c - 1));
    pre < plain
}

/// Launches the scatter of `keys` buckets by key ranges is split into: the tuning's, else
/// ⌈keys / 2^17⌉, at most [`MAX_SCATTER_PASSES`]. On the device (`msm::scatter_range`) the
/// launches also stop at one for each 1.5 entries a scalar, so a mostly-0/1 witness is not read
/// again for a handful of entries.
pub(crate) fn scatter_passes(keys: u32, cfg: &MsmConfig) -> u32 {
    cfg.scatter_passes.unwrap_or_else(|| {
        (u64::from(keys).div_ceil(SCATTER_KEYS_PER_PASS) as u32).clamp(1, MAX_SCATTER_PASSES)
    })
}

/// Whether a pass scatters in two steps through bins (kernels/msm/bins.cuh) rather than in
/// launches by key range, and with bins of 2^shift keys: `Some(shift)` when the keys are more
/// than [`BIN_MIN_KEYS`] (or the tuning asks for bins) and the windows at most
/// [`BIN_MAX_WINDOWS`]; bins grow from the tuning's size until there are at most [`MAX_BINS`].
/// The caller falls back to the ranges when the scratch (8 bytes an entry) does not fit.
pub(crate) fn bin_shift(keys: u32, windows: u32, cfg: &MsmConfig) -> Option<u32> {
    let want = match cfg.scatter {
        Scatter::Ranges => false,
        Scatter::Bins => true,
        Scatter::Auto => u64::from(keys) > BIN_MIN_KEYS,
    };
    if !want || windows > BIN_MAX_WINDOWS || keys == 0 {
        return None;
    }
    let mut shift = cfg.bin_keys.trailing_zeros();
    while keys.div_ceil(1 << shift) > MAX_BINS {
        shift += 1;
    }
    Some(shift)
}

/// Buckets (or totals, a level up) per thread in the window pass over sets of `half`.
pub(crate) fn segment_len(half: u32, cfg: &MsmConfig) -> u32 {
    cfg.segment.min(half)
}

/// Whether the window pass over `windows` sets of `segs` segments runs flat (one level, each
/// segment adding its offset's multiple by double-and-add) rather than in two levels. Two levels
/// save the doublings, which matter when the segments' threads fill the GPU several times over
/// (13 windows of 2^19 buckets); with few (one table window of 2^19 buckets: 16 384 threads; a
/// G2 pass of 16 windows of 2^15) the second level's chained additions cost more than the
/// doublings saved.
pub(crate) fn flat_window_pass(segs: u32, windows: u32, cfg: &MsmConfig) -> bool {
    match cfg.window_pass {
        WindowPass::Flat => true,
        WindowPass::Levels => false,
        WindowPass::Auto => u64::from(segs) * u64::from(windows) < LEVELLED_THREADS,
    }
}

/// Device bytes one pass over `n` scalars allocates at most, beyond its bases, with or without
/// the precomputed table of shape `table` ((c, windows)), the binned scatter's scratch apart
/// (`scratch_room`): per scalar its uploaded copy, its entries (one per window), its place in
/// the list of ones and in the list of scalars with digits (the binned scatter's), its density
/// and rank words and its share of the sums of ones; per bucket key its count, offset and XYZZ
/// bucket; the accumulation's head and tail sums; the window pass's segment sums and reduction
/// levels; then 64 MiB and 2 % to spare (the pool's rounding). An upper bound, so that a planner
/// may give a whole MSM one pass when this fits; [`MsmGroup::PASS_BYTES_PER_SCALAR`] stays the
/// rule when it does not.
pub fn pass_bytes<G: MsmGroup>(n: usize, table: Option<(u32, u32)>, cfg: &MsmConfig) -> u64 {
    let xyzz = (G::Xyzz::WORDS * 8) as u64;
    let plain_c = window_bits(n, cfg);
    let mut shapes = vec![(window_count(plain_c), plain_c, window_count(plain_c))];
    if let Some((c, windows)) = table {
        shapes.push((windows, c, 1));
    }
    let mut most = 0u64;
    for (windows, c, sets) in shapes {
        let half = 1u64 << (c - 1);
        let keys = u64::from(sets) * half;
        let segs = (keys / u64::from(segment_len(half as u32, cfg))).max(u64::from(sets));
        let per_scalar =
            32 + 4 * u64::from(windows) + 4 + 4 + 1 + xyzz.div_ceil(u64::from(ONES_PER));
        let fixed = 8 * (keys + 1) + keys * xyzz + 2 * TARGET_THREADS * xyzz + 4 * segs * xyzz;
        most = most.max(n as u64 * per_scalar + fixed);
    }
    most + most / 50 + (64 << 20)
}

/// Scalars per pass for an MSM of `n` scalars in `room` bytes of a lane (streamed bases need
/// room too: `streamed`), and the room left beside those passes for scratch (the binned
/// scatter's). One pass for the whole MSM when its upper bound ([`pass_bytes`]) fits (and the
/// tuning allows it); otherwise passes sized by the bound per scalar that holds for every
/// window width, [`MsmGroup::PASS_BYTES_PER_SCALAR`]. Fewer than 1024 scalars a pass is
/// [`Error::OutOfMemory`] on `device`.
pub fn pass_size<G: MsmGroup>(
    n: usize,
    room: u64,
    streamed: bool,
    table: Option<(u32, u32)>,
    cfg: &MsmConfig,
    device: &str,
) -> Result<(usize, u64)> {
    let point_bytes = (G::Affine::WORDS * 8) as u64;
    let stream_bytes = if streamed { point_bytes } else { 0 };
    let whole = pass_bytes::<G>(n, table, cfg) + n as u64 * stream_bytes;
    if cfg.whole_pass && n <= MAX_POINTS_PER_PASS && whole <= room {
        return Ok((n.div_ceil(64).max(1) * 64, room - whole));
    }
    let per = G::PASS_BYTES_PER_SCALAR + stream_bytes;
    let points = room / per;
    if points < 1024 {
        return Err(Error::OutOfMemory {
            device: device.to_string(),
            requested: 1024 * per,
            available: room,
        });
    }
    let pass = points.min(MAX_POINTS_PER_PASS as u64) as usize;
    Ok((pass, room.saturating_sub(n.min(pass) as u64 * per)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msm::group::{G1, G2};

    fn cfg() -> MsmConfig {
        MsmConfig::default()
    }

    /// Today's window widths: log2(n) − 3 from 4 to 16 (16 windows of 16 bits at 2^19..2^25),
    /// 20 from 2^26 on; a forced width wins.
    #[test]
    fn window_widths_follow_the_size() {
        let c = cfg();
        for (n, want) in [
            (0usize, 4u32),
            (1, 4),
            (100, 4),
            (1 << 10, 7),
            (1 << 12, 9),
            (1 << 18, 15),
            (1 << 19, 16),
            (1 << 22, 16),
            (1 << 24, 16),
            ((1 << 26) - 1, 16),
            (1 << 26, 20),
            (1 << 27, 20),
        ] {
            assert_eq!(window_bits(n, &c), want, "n = {n}");
        }
        assert_eq!(window_count(16), 16);
        assert_eq!(window_count(20), 13);
        assert_eq!(window_count(13), 20);
        let forced = MsmConfig {
            window: Some(12),
            ..cfg()
        };
        assert_eq!(window_bits(1 << 24, &forced), 12);
    }

    /// A c = 20 table pays at 2^24 (13 windows against 16) and not for small MSMs, whose plain
    /// window is narrow; `always`/`never` force either.
    #[test]
    fn tables_pay_for_large_msms() {
        let c = cfg();
        assert!(precomputed_pays(1 << 24, 20, &c));
        assert!(precomputed_pays(1 << 20, 20, &c));
        assert!(!precomputed_pays(1 << 16, 20, &c));
        assert!(!precomputed_pays(1000, 20, &c));
        let always = MsmConfig {
            table: TableUse::Always,
            ..cfg()
        };
        assert!(precomputed_pays(1000, 20, &always));
        let never = MsmConfig {
            table: TableUse::Never,
            ..cfg()
        };
        assert!(!precomputed_pays(1 << 24, 20, &never));
    }

    /// The one-pass bound covers what a pass allocates (entries, ones, buckets, counts and
    /// offsets, the accumulation's partial sums) and stays far below the per-scalar rule at
    /// the sizes that rule split: a K = 27 G2 MSM (2^27 scalars, 13 windows of 2^19 buckets)
    /// fits in under 20 GB where 640 bytes a scalar asked for 86 GB.
    #[test]
    fn the_one_pass_bound_covers_a_pass() {
        let c = cfg();
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
            let w = window_bits(n as usize, &c);
            let keys = u64::from(window_count(w)) << (w - 1);
            for (bytes, xyzz) in [
                (pass_bytes::<G1>(n as usize, table, &c), xyzz_g1),
                (pass_bytes::<G2>(n as usize, table, &c), xyzz_g2),
            ] {
                let floor = n * (32 + 4 * u64::from(window_count(w)) + 4)
                    + keys * (xyzz + 8)
                    + 2 * TARGET_THREADS * xyzz;
                assert!(bytes > floor, "2^{log_n}: {bytes} ≤ {floor}");
            }
        }
        let k27 = pass_bytes::<G2>(1 << 27, None, &c);
        assert!(k27 < 20 << 30, "{k27}");
        assert!(k27 < (1u64 << 27) * 640 / 4);
        // A table's wider window set is covered too (c = 24: 2^23 buckets in one set).
        let t24 = pass_bytes::<G1>(1 << 24, Some((24, 11)), &c);
        assert!(t24 > (1u64 << 23) * xyzz_g1);
    }

    /// One pass when the bound fits (rounded up to 64 scalars), else the per-scalar rule
    /// (320 bytes a G1 scalar, plus the point when bases are streamed), at most 2^27 scalars a
    /// pass; out of memory below 1024 scalars a pass; the tuning can turn the whole pass off.
    #[test]
    fn passes_fit_the_room() {
        let c = cfg();
        let n = 1 << 20;
        let whole = pass_bytes::<G1>(n, None, &c);
        assert_eq!(
            pass_size::<G1>(n, whole + 100, false, None, &c, "cuda:0").unwrap(),
            (n, 100)
        );
        assert_eq!(
            pass_size::<G1>(100, 1 << 40, false, None, &c, "cuda:0")
                .unwrap()
                .0,
            128
        );
        // One byte short of the bound: the per-scalar rule, which here still takes all n in
        // one pass (room for more) and leaves the rest for scratch.
        let room = whole - 1;
        assert_eq!(
            pass_size::<G1>(n, room, false, None, &c, "cuda:0").unwrap(),
            ((room / 320) as usize, room - n as u64 * 320)
        );
        // Room for fewer than n: passes of what fits, nothing left beside them.
        let small = 5000 * 320 + 7;
        assert_eq!(
            pass_size::<G1>(n, small, false, None, &c, "cuda:0").unwrap(),
            (5000, 7)
        );
        assert_eq!(
            pass_size::<G1>(n, room, true, None, &c, "cuda:0")
                .unwrap()
                .0,
            (room / (320 + 96)) as usize
        );
        let split = MsmConfig {
            whole_pass: false,
            ..cfg()
        };
        assert_eq!(
            pass_size::<G1>(n, 1 << 40, false, None, &split, "cuda:0").unwrap(),
            (MAX_POINTS_PER_PASS, (1 << 40) - n as u64 * 320)
        );
        match pass_size::<G2>(n, 1023 * 640, false, None, &c, "cuda:1") {
            Err(Error::OutOfMemory {
                device, requested, ..
            }) => assert_eq!((device.as_str(), requested), ("cuda:1", 1024 * 640)),
            r => panic!("{r:?}"),
        }
    }

    #[test]
    fn the_binned_scatter_takes_more_than_2_19_keys() {
        let c = cfg();
        // A dense 2^27 MSM (13 windows of 2^19 buckets) bins, in bins of 2^15 keys.
        assert_eq!(bin_shift(13 << 19, 13, &c), Some(15));
        // 2^24 with a c = 20 table (one set of 2^19 buckets) stays with the ranges.
        assert_eq!(bin_shift(1 << 19, 13, &c), None);
        assert_eq!(bin_shift((1 << 19) + 1, 13, &c), Some(15));
        // Forced either way, within what the bins can do.
        let bins = MsmConfig {
            scatter: Scatter::Bins,
            bin_keys: 1 << 4,
            ..cfg()
        };
        assert_eq!(bin_shift(1 << 10, 26, &bins), Some(4));
        assert_eq!(bin_shift(1 << 10, 33, &bins), None);
        assert_eq!(bin_shift(0, 13, &bins), None);
        let ranges = MsmConfig {
            scatter: Scatter::Ranges,
            ..cfg()
        };
        assert_eq!(bin_shift(13 << 19, 13, &ranges), None);
        // Bins grow until there are at most MAX_BINS of them.
        assert_eq!(bin_shift(1 << 28, 13, &c), Some(16));
        assert_eq!((1u32 << 28).div_ceil(1 << 16), MAX_BINS);
    }

    #[test]
    fn scatter_passes_follow_the_buckets() {
        let c = cfg();
        // Up to 2^17 buckets one launch; one table window of 2^19 buckets (c = 20) four.
        assert_eq!(scatter_passes(1 << 9, &c), 1);
        assert_eq!(scatter_passes(1 << 17, &c), 1);
        assert_eq!(scatter_passes((1 << 17) + 1, &c), 2);
        assert_eq!(scatter_passes(1 << 19, &c), 4);
        // 13 windows of 2^19 (2^26 scalars and up without a table): capped at eight.
        assert_eq!(scatter_passes(13 << 19, &c), MAX_SCATTER_PASSES);
        assert_eq!(MAX_SCATTER_PASSES, 8);
        let forced = MsmConfig {
            scatter_passes: Some(3),
            ..cfg()
        };
        assert_eq!(scatter_passes(1 << 9, &forced), 3);
        assert_eq!(segment_len(1 << 19, &c), 32);
        assert_eq!(segment_len(8, &c), 8);
    }

    /// Two levels for the no-table windows at 2^26 and beyond (13 windows of 2^19 buckets in
    /// segments of 32), the flat pass for one table window and for the narrow windows below
    /// 2^26 (16 of 2^15); forced either way by the tuning.
    #[test]
    fn the_window_pass_is_levelled_only_for_many_segments() {
        let c = cfg();
        assert!(!flat_window_pass((1 << 19) / 32, 13, &c));
        assert!(flat_window_pass((1 << 19) / 32, 1, &c));
        assert!(flat_window_pass((1 << 15) / 32, 16, &c));
        let flat = MsmConfig {
            window_pass: WindowPass::Flat,
            ..cfg()
        };
        assert!(flat_window_pass((1 << 19) / 32, 13, &flat));
        let levels = MsmConfig {
            window_pass: WindowPass::Levels,
            ..cfg()
        };
        assert!(!flat_window_pass(1, 1, &levels));
    }
}

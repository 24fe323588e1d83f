//! The kernels' arithmetic and NTT logic, run on the host and checked bit for bit against blst.
//!
//! kernels/emulation.cpp compiles the production kernels' headers (backends/cuda/kernels: field,
//! Fp2, curve, NTT and MSM code) with the PTX carry instructions replaced by C++ (ff/carry.cuh), so a host C++
//! compiler turns them into a shared library that this test loads and drives through the same
//! checks as the device program `bellows-cuda-check`. This catches arithmetic and indexing bugs
//! on machines without a GPU, such as CI.
//!
//! Needs a C++17 compiler (`$CXX`, else `c++`, `g++` or `clang++`). Without one the test says so
//! and passes, unless `BELLOWS_REQUIRE_KERNELS=1`, where it fails.

use std::{path::PathBuf, process::Command, sync::OnceLock};

use bellows_core::{
    backend::ntt::NttConfig,
    layout::{Fp, Fp2, Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Result,
};
use bellows_cuda::{
    buffers::{words, words_mut, Plain},
    ntt::{
        plan::{plan_with_tiles, tiled_bitrev, NttPassArgs, MAX_TILE_BITS},
        tables,
    },
};
use bellows_cuda_tools::{
    elementwise::{CurveOp, FieldOp},
    testing::{self, CheckResult, FieldCase, NttCheckPlan},
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

type FieldFn = unsafe extern "C" fn(u32, u32, *const u64, *const u64, *mut u64, u64);
type CurveFn =
    unsafe extern "C" fn(u32, u32, *const u64, *const u64, *const u64, *mut u64, *mut u64, u64);
type ExpandFn = unsafe extern "C" fn(*mut u64, *const u64, *const u64, u32, u64);
type BitrevFn = unsafe extern "C" fn(*mut u64, u32, u64);
type PassFn = unsafe extern "C" fn(*const NttPassArgs, u64);
/// bellows_emu_msm(group, bases, bases_len, scalars, n, density, c, chunk, seg, table,
/// table_chunk, table_per, bin_shift, window_out) → 0, or why not
/// bellows_emu_decode(group, encoded, out, verdicts, n)
type DecodeFn = unsafe extern "C" fn(u32, *const u8, *mut u64, *mut u8, u64);
type MsmFn = unsafe extern "C" fn(
    u32,
    *const u64,
    u64,
    *const u64,
    u64,
    *const u64,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    *mut u64,
) -> u32;
type CurveResult<A, J> = Result<(Vec<A>, Vec<J>)>;

struct Emu {
    _lib: libloading::Library,
    field: FieldFn,
    curve: CurveFn,
    expand: ExpandFn,
    bitrev: BitrevFn,
    bitrev_tiled: BitrevFn,
    pass: PassFn,
    msm: MsmFn,
    decode: DecodeFn,
}

fn compiler() -> Option<String> {
    let candidates = std::env::var("CXX")
        .into_iter()
        .chain(["c++", "g++", "clang++"].map(String::from));
    candidates.into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Builds and loads the emulation library once per test process; None without a compiler.
fn emu() -> Option<&'static Emu> {
    static EMU: OnceLock<Option<Emu>> = OnceLock::new();
    EMU.get_or_init(|| {
        let Some(cxx) = compiler() else {
            let required = std::env::var("BELLOWS_REQUIRE_KERNELS").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "BELLOWS_REQUIRE_KERNELS=1 but no C++ compiler for the emulation test"
            );
            eprintln!("emulation test skipped: no C++ compiler (set CXX)");
            return None;
        };
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let src = dir.join("kernels/emulation.cpp");
        let kernels = dir.join("../kernels");
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("libbellows_emu_{}.so", std::process::id()));
        let o = Command::new(&cxx)
            .args([
                "-O2",
                "-std=c++17",
                "-shared",
                "-fPIC",
                "-Wall",
                "-Wno-unknown-pragmas",
            ])
            .arg("-I")
            .arg(&kernels)
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .output()
            .expect("run the C++ compiler");
        assert!(
            o.status.success(),
            "{cxx} failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        // SAFETY: the library is ours, built just now; its initialisers are the C++ runtime's.
        let lib = unsafe { libloading::Library::new(&out) }.expect("load the emulation library");
        // SAFETY: the symbols are the extern "C" functions of emulation.cpp with these signatures.
        let emu = unsafe {
            Emu {
                field: *lib.get::<FieldFn>(b"bellows_emu_field_op").unwrap(),
                curve: *lib.get::<CurveFn>(b"bellows_emu_curve_op").unwrap(),
                expand: *lib.get::<ExpandFn>(b"bellows_emu_expand_table").unwrap(),
                bitrev: *lib.get::<BitrevFn>(b"bellows_emu_bitrev").unwrap(),
                bitrev_tiled: *lib.get::<BitrevFn>(b"bellows_emu_bitrev_tiled").unwrap(),
                pass: *lib.get::<PassFn>(b"bellows_emu_ntt_pass").unwrap(),
                msm: *lib.get::<MsmFn>(b"bellows_emu_msm").unwrap(),
                decode: *lib.get::<DecodeFn>(b"bellows_emu_decode").unwrap(),
                _lib: lib,
            }
        };
        let _ = std::fs::remove_file(&out);
        Some(emu)
    })
    .as_ref()
}

fn field_exec<F: Plain>(
    e: &Emu,
    id: u32,
) -> impl FnMut(FieldOp, &[F], &[F]) -> Result<Vec<F>> + '_ {
    move |op, a, b| {
        let mut out = vec![F::default(); a.len()];
        // SAFETY: a, b and out hold a.len() values of the layout the emulation reads for `id`.
        unsafe {
            (e.field)(
                id,
                op as u32,
                words(a).as_ptr(),
                words(b).as_ptr(),
                words_mut(&mut out).as_mut_ptr(),
                a.len() as u64,
            )
        };
        Ok(out)
    }
}

fn curve_exec<J: Plain, A: Plain>(
    e: &Emu,
    group: u32,
) -> impl FnMut(CurveOp, &[J], &[J], &[A]) -> CurveResult<A, J> + '_ {
    move |op, p, q, a| {
        let mut oa = vec![A::default(); p.len()];
        let mut oj = vec![J::default(); p.len()];
        // SAFETY: every slice holds p.len() values of the layout the emulation reads for `group`.
        unsafe {
            (e.curve)(
                group,
                op as u32,
                words(p).as_ptr(),
                words(q).as_ptr(),
                words(a).as_ptr(),
                words_mut(&mut oa).as_mut_ptr(),
                words_mut(&mut oj).as_mut_ptr(),
                p.len() as u64,
            )
        };
        Ok((oa, oj))
    }
}

fn assert_all(results: &[CheckResult]) {
    for r in results {
        println!("{r}");
    }
    assert!(!results.is_empty());
    let failed: Vec<_> = results.iter().filter(|r| !r.passed()).collect();
    assert!(
        failed.is_empty(),
        "{} of {} checks failed: {failed:#?}",
        failed.len(),
        results.len()
    );
}

#[test]
fn field_arithmetic_matches_blst() {
    let Some(e) = emu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut r = testing::run_field_checks::<Fr>(field_exec(e, 0), &mut rng, 3000);
    r.extend(testing::run_field_checks::<Fp>(
        field_exec(e, 1),
        &mut rng,
        2000,
    ));
    r.extend(testing::run_field_checks::<Fp2>(
        field_exec(e, 2),
        &mut rng,
        500,
    ));
    assert_all(&r);
    // Every operation was compared on every field, edge cases included.
    assert_eq!(r.len(), 3 * FieldOp::ALL.len());
    assert!(r.iter().all(|c| c.compared > 50));
    let _ = <Fr as FieldCase>::NAME;
}

#[test]
fn fp_squaring_and_mul_sub_match_blst() {
    // Fp's dedicated squaring and one-reduction a·b − c·d (the production form, field 1) on many
    // more inputs than field_arithmetic_matches_blst gives them, and the plain forms they
    // replaced (field 5, kept for the kernel check's timings), edge cases included.
    let Some(e) = emu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(22);
    let mut r = testing::run_field_checks::<Fp>(field_exec(e, 1), &mut rng, 40000);
    r.extend(testing::run_field_checks::<Fp>(
        field_exec(e, 5),
        &mut rng,
        4000,
    ));
    assert!(r.iter().all(|c| c.compared > 50));
    assert_all(&r);
    assert_eq!(r.len(), 2 * FieldOp::ALL.len());
}

#[test]
fn curve_arithmetic_matches_blst() {
    let Some(e) = emu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut r = testing::run_g1_checks(curve_exec::<G1Jacobian, G1Affine>(e, 1), &mut rng, 64);
    r.extend(testing::run_g2_checks(
        curve_exec::<G2Jacobian, G2Affine>(e, 2),
        &mut rng,
        16,
    ));
    assert_all(&r);
    assert_eq!(r.len(), 2 * 2 * CurveOp::ALL.len());
}

#[test]
fn twiddle_expansion_matches_host_table() {
    let Some(e) = emu() else { return };
    for tw_log in [1u32, 4, 9, 14] {
        let (lo_bits, lo, hi, count) = tables::twiddle_parts(tw_log);
        let mut out = vec![Fr::default(); count as usize];
        // SAFETY: out holds count values; lo and hi hold the entries the expansion reads.
        unsafe {
            (e.expand)(
                words_mut(&mut out).as_mut_ptr(),
                words(&lo).as_ptr(),
                words(&hi).as_ptr(),
                lo_bits,
                count,
            )
        };
        assert_eq!(out, tables::twiddles_host(tw_log), "tw_log {tw_log}");
    }
}

/// Runs a planned transform through the emulated pass kernel, with a twiddle table for 2^tw_log.
fn emulated_ntt(
    e: &Emu,
    pass_fn: PassFn,
    data: &mut [Fr],
    log_n: u32,
    cfg: &NttConfig,
    tile_bits: u32,
    tw_extra: u32,
) -> Result<()> {
    let n = 1usize << log_n;
    let batch = data.len() / n;
    let plan = plan_with_tiles(log_n, cfg, tile_bits);
    let tw_log = (log_n + tw_extra).max(1);
    let tw = tables::twiddles_host(tw_log);
    let coset = tables::coset_tables();
    let inverse_coset = tables::inverse_coset_tables(log_n);
    let base = words_mut(data).as_mut_ptr() as u64;
    for pass in &plan.passes {
        let args = NttPassArgs::new(
            log_n,
            pass,
            base,
            words(&tw).as_ptr() as u64,
            tw_log,
            words(&coset).as_ptr() as u64,
            words(&inverse_coset).as_ptr() as u64,
        );
        // SAFETY: the pass reads and writes `batch` vectors of n elements at `base` (inside
        // `data`), the twiddle table (N/2 + 1 entries, N ≥ n) and the coset tables.
        unsafe { pass_fn(&args, batch as u64) };
    }
    if plan.bitrev_after {
        let kernel = if tiled_bitrev(log_n) {
            e.bitrev_tiled
        } else {
            e.bitrev
        };
        // SAFETY: permutes `batch` vectors of n elements inside `data`.
        unsafe { kernel(words_mut(data).as_mut_ptr(), log_n, batch as u64) };
    }
    Ok(())
}

#[test]
fn ntt_matches_reference_every_config() {
    let Some(e) = emu() else { return };
    let configs = testing::all_ntt_configs();
    // Every size up to 2^12 with the real tile size (one or two passes), batches of 3.
    let plans: Vec<NttCheckPlan> = (0..=12)
        .map(|log_n| NttCheckPlan {
            log_n,
            batch: 3,
            configs: configs.clone(),
        })
        .collect();
    let r = testing::run_ntt_checks(
        |d, l, c| emulated_ntt(e, e.pass, d, l, c, MAX_TILE_BITS, 0),
        5,
        &plans,
    );
    assert_all(&r);
    // One device-vs-CPU-backend and one CPU-backend-vs-reference check per size and config.
    assert_eq!(r.len(), 2 * 13 * 16);
}

#[test]
fn ntt_multi_pass_plans_match_reference() {
    let Some(e) = emu() else { return };
    let configs = testing::all_ntt_configs();
    let mut r = Vec::new();
    // Small tiles force 2–5 passes (first, middle and last kinds, with neighbour bits), and a
    // larger twiddle table exercises the stride into it. Tiles of 3 and 5 bits give passes with
    // odd k (a radix-2 step besides the radix-4 ones), 4 bits even k.
    for (pass_fn, tile_bits, tw_extra) in [(e.pass, 3u32, 0u32), (e.pass, 4, 3), (e.pass, 5, 1)] {
        let plans: Vec<NttCheckPlan> = [6u32, 9, 13]
            .iter()
            .map(|&log_n| NttCheckPlan {
                log_n,
                batch: 2,
                configs: configs.clone(),
            })
            .collect();
        r.extend(testing::run_ntt_checks(
            |d, l, c| emulated_ntt(e, pass_fn, d, l, c, tile_bits, tw_extra),
            6 + u64::from(tile_bits),
            &plans,
        ));
    }
    // The real tiling at a two-pass size with neighbour bits (2^16: passes of 8 and 8, c = 3).
    let plans = [NttCheckPlan {
        log_n: 16,
        batch: 1,
        configs: configs[..4].to_vec(),
    }];
    r.extend(testing::run_ntt_checks(
        |d, l, c| emulated_ntt(e, e.pass, d, l, c, MAX_TILE_BITS, 2),
        9,
        &plans,
    ));
    assert_all(&r);
}

#[test]
fn bit_reversals_are_the_permutation() {
    let Some(e) = emu() else { return };
    for log_n in 0..=14u32 {
        let batch = 2;
        let data = testing::random_vector(u64::from(log_n), batch << log_n);
        let mut want = data.clone();
        for v in want.chunks_mut(1 << log_n) {
            bellows_cuda_tools::testing::host_ntt::permute(v, log_n);
        }
        let mut simple = data.clone();
        // SAFETY: permutes `batch` vectors of 2^log_n elements inside `simple`.
        unsafe { (e.bitrev)(words_mut(&mut simple).as_mut_ptr(), log_n, batch as u64) };
        assert_eq!(simple, want, "simple, 2^{log_n}");
        if tiled_bitrev(log_n) {
            let mut tiled = data.clone();
            // SAFETY: as above.
            unsafe { (e.bitrev_tiled)(words_mut(&mut tiled).as_mut_ptr(), log_n, batch as u64) };
            assert_eq!(tiled, want, "tiled, 2^{log_n}");
        }
    }
}

// ---- MSM (kernels/msm/) ----------------------------------------------------------------------------

/// Shape of one emulated MSM: window bits, accumulation chunk, window segment; and whether it
/// runs over a precomputed table of window multiples (built `table_chunk` points a launch,
/// `table_per` per inversion).
#[derive(Clone, Copy, Debug)]
struct Shape {
    c: u32,
    chunk: u32,
    seg: u32,
    /// The flat window pass (`BELLOWS_MSM_WINDOW_PASS=flat`) instead of the levelled one.
    flat: bool,
    table: bool,
    table_chunk: u32,
    table_per: u32,
    /// The binned scatter with bins of 2^bin_shift keys (0: the scatter by key ranges).
    bin_shift: u32,
}

fn shape(c: u32, chunk: u32) -> Shape {
    Shape {
        c,
        chunk,
        seg: 8,
        flat: false,
        table: false,
        table_chunk: 0,
        table_per: 0,
        bin_shift: 0,
    }
}

/// The same over a precomputed table built in launches of `table_chunk` points, `table_per`
/// points per inversion.
fn table_shape(c: u32, chunk: u32, table_chunk: u32, table_per: u32) -> Shape {
    Shape {
        table: true,
        table_chunk,
        table_per,
        ..shape(c, chunk)
    }
}

/// Runs the emulated device MSM and finishes it as the host does (Horner's rule).
fn emulated_msm<G: bellows_cuda::msm::MsmGroup>(
    e: &Emu,
    group: u32,
    bases: &[G::Affine],
    scalars: &[Fr],
    density: Option<&[u64]>,
    s: Shape,
) -> G::Jacobian {
    let Shape {
        c,
        chunk,
        seg,
        flat,
        table,
        table_chunk,
        table_per,
        bin_shift,
    } = s;
    // A table's windows share one bucket set: one window sum.
    let windows = if table {
        1
    } else {
        256u32.div_ceil(c) as usize
    };
    let mut out = vec![G::Jacobian::default(); windows + 1];
    // SAFETY: bases hold every index the scalars (and density) reach; out has windows + 1
    // points of the group's Jacobian layout; density (if any) covers the scalars.
    let status = unsafe {
        (e.msm)(
            group,
            words(bases).as_ptr(),
            bases.len() as u64,
            words(scalars).as_ptr(),
            scalars.len() as u64,
            density.map_or(std::ptr::null(), |d| d.as_ptr()),
            c,
            chunk,
            seg | if flat { 1 << 31 } else { 0 },
            table as u32,
            table_chunk,
            table_per,
            bin_shift,
            words_mut(&mut out).as_mut_ptr(),
        )
    };
    // 2 or 3: a bin's or a bucket's cursor did not end where the next one starts.
    assert_eq!(status, 0, "emulated MSM {s:?}");
    G::combine(&out[..windows], &out[windows], c)
}

fn random_g1(n: usize, rng: &mut ChaCha8Rng) -> Vec<blstrs::G1Affine> {
    use group::{prime::PrimeCurveAffine, Curve, Group};
    let step = blstrs::G1Projective::random(&mut *rng);
    let mut p = blstrs::G1Projective::random(&mut *rng);
    let proj: Vec<_> = (0..n)
        .map(|_| {
            p += step;
            p
        })
        .collect();
    let mut out = vec![blstrs::G1Affine::identity(); n];
    blstrs::G1Projective::batch_normalize(&proj, &mut out);
    out
}

/// 700 random G1 bases and random scalars (seed 11), shared by the MSM tests below.
fn msm_inputs() -> (Vec<blstrs::G1Affine>, Vec<blstrs::Scalar>) {
    use ff::Field;
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let n = 700;
    let pts = random_g1(n, &mut rng);
    let random = (0..n).map(|_| blstrs::Scalar::random(&mut rng)).collect();
    (pts, random)
}

/// The device MSM's logic (digits, counting sort, chunked accumulation with head/tail fixups,
/// the warp pass for buckets spanning many chunks, window sums, scalars equal to 1), run on the
/// host over 700 bases and compared with blst, for shapes that exercise each path. One test per
/// kind of scalars, so that they run side by side. `slow_table`: instead of those shapes, only
/// the table built with one inversion per point at c = 4 (64 windows: 44 800 emulated
/// inversions, the slowest shape; its building does not depend on the scalars, so one kind of
/// scalars runs it, in a test of its own beside the others rather than lengthening the random
/// scalars' test). `scalars_of` makes the scalars from the 700 random ones.
fn msm_shapes_match_blst(
    name: &str,
    scalars_of: impl FnOnce(&[blstrs::Scalar]) -> Vec<blstrs::Scalar>,
    slow_table: bool,
) {
    use bellows_core::{groth16::host_msm, layout::g1_affine_slice};
    use blstrs::G1Projective;
    use group::Curve;
    let Some(e) = emu() else { return };
    let (pts, random) = msm_inputs();
    let scalars = scalars_of(&random);
    let bases = g1_affine_slice(&pts);
    let want = G1Projective::from(host_msm::msm_g1(bases, fr_slice_of(&scalars))).to_affine();
    // Window widths with a full and a nearly empty top window; chunks from 1 entry (every
    // bucket spans chunks) to more than the whole array.
    // Chunk 0: the device's rule, the real entry count spread over the threads.
    let mut shapes: Vec<Shape> = [
        (4, 1),
        (6, 3),
        (9, 2),
        (9, 3),
        (10, 5),
        (10, 7),
        (13, 64),
        (16, 100_000),
        (7, 0),
    ]
    .into_iter()
    .map(|(c, chunk)| shape(c, chunk))
    .collect();
    // Precomputed tables: tables built in several launches (a partial last one) and one,
    // a thread inverting for one point or many; narrow and wide windows; the device's
    // chunk rule.
    for (c, chunk, table_chunk, table_per) in [
        (8, 0, 100, 7),
        (11, 5, 700, 32),
        (16, 0, 256, 3),
        (9, 4, 333, 5),
    ] {
        shapes.push(table_shape(c, chunk, table_chunk, table_per));
    }
    // The window pass: segments of 2 (a level per bit) and 32, levels of one segment
    // (c = 4: 8 buckets), and the flat pass of one level with double-and-add.
    for (c, seg, flat) in [
        (13, 2, false),
        (11, 32, false),
        (4, 32, false),
        (13, 8, true),
        (9, 4, true),
    ] {
        shapes.push(Shape {
            seg,
            flat,
            ..shape(c, 5)
        });
    }
    shapes.push(Shape {
        seg: 2,
        ..table_shape(10, 3, 700, 4)
    });
    // The binned scatter: 32 windows (the most it keeps places for) in bins of 8 keys, bins
    // of 2^13 keys at c = 16 (four a window) with the device's chunk rule, and over a table
    // (one bucket set of 1024 keys in 64 bins).
    for (c, chunk, bin_shift) in [(8, 5, 3), (16, 0, 13)] {
        shapes.push(Shape {
            bin_shift,
            ..shape(c, chunk)
        });
    }
    shapes.push(Shape {
        bin_shift: 4,
        ..table_shape(11, 5, 700, 32)
    });
    if slow_table {
        shapes = vec![table_shape(4, 3, 64, 1)];
    }
    for s in shapes {
        let got =
            emulated_msm::<bellows_cuda::msm::G1>(e, 1, bases, fr_slice_of(&scalars), None, s);
        assert_eq!(G1Projective::from(got).to_affine(), want, "{name}: {s:?}");
    }
}

#[test]
fn msm_matches_blst_random() {
    msm_shapes_match_blst("random", |r| r.to_vec(), false);
}

#[test]
fn msm_table_of_64_windows_matches_blst() {
    msm_shapes_match_blst("random, c = 4 table", |r| r.to_vec(), true);
}

#[test]
fn msm_matches_blst_bits_and_zeros() {
    let bits = |r: &[blstrs::Scalar]| {
        (0..r.len())
            .map(|i| blstrs::Scalar::from((i % 3 == 0) as u64))
            .collect()
    };
    msm_shapes_match_blst("bits and zeros", bits, false);
}

#[test]
fn msm_matches_blst_all_equal() {
    let equal = |r: &[blstrs::Scalar]| vec![r[0]; r.len()];
    msm_shapes_match_blst("all equal (one huge bucket a window)", equal, false);
}

#[test]
fn msm_matches_blst_small_and_edges() {
    use blstrs::Scalar;
    use ff::Field;
    let edges = |r: &[Scalar]| {
        (0..r.len())
            .map(|i| match i % 5 {
                0 => -Scalar::ONE,
                1 => Scalar::from(2u64),
                2 => Scalar::from(1u64 << 9),
                3 => Scalar::from((1u64 << 8) + 1),
                _ => Scalar::ZERO,
            })
            .collect()
    };
    msm_shapes_match_blst("small, r-1 and window edges", edges, false);
}

/// A density bitmap: scalar i used iff bit i is set; base index = set bits before it.
#[test]
fn msm_with_density_matches_blst() {
    use bellows_core::{groth16::host_msm, layout::g1_affine_slice};
    use blstrs::{G1Projective, Scalar};
    use group::Curve;
    let Some(e) = emu() else { return };
    let (pts, random) = msm_inputs();
    let bases = g1_affine_slice(&pts);
    let n = random.len();
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let dens: Vec<u64> = (0..n.div_ceil(64))
        .map(|_| rand::Rng::gen::<u64>(&mut rng))
        .collect();
    let used: Vec<Scalar> = (0..n)
        .filter(|i| dens[i / 64] >> (i % 64) & 1 == 1)
        .map(|i| random[i])
        .collect();
    let want =
        G1Projective::from(host_msm::msm_g1(&bases[..used.len()], fr_slice_of(&used))).to_affine();
    for (table, bin_shift) in [(false, 0), (true, 0), (false, 2), (true, 5)] {
        let s = Shape {
            seg: 4,
            table,
            table_chunk: 128,
            table_per: 5,
            bin_shift,
            ..shape(8, 5)
        };
        let got = emulated_msm::<bellows_cuda::msm::G1>(
            e,
            1,
            bases,
            fr_slice_of(&random),
            Some(&dens),
            s,
        );
        assert_eq!(G1Projective::from(got).to_affine(), want, "density: {s:?}");
    }
}

/// Bases that meet every exceptional case of an addition inside a bucket: the identity, a
/// point twice (doubling), a point and its negation (the identity), and sums that meet again
/// in later steps.
#[test]
fn msm_exceptional_bases_match_blst() {
    use bellows_core::{groth16::host_msm, layout::g1_affine_slice};
    use blstrs::{G1Affine, G1Projective, Scalar};
    use ff::Field;
    use group::{prime::PrimeCurveAffine, Curve, Group};
    let Some(e) = emu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let p = G1Projective::random(&mut rng);
    let q = G1Projective::random(&mut rng);
    let cycle = [
        G1Projective::identity(),
        p,
        -p,
        p,
        p.double(),
        q,
        -q,
        q,
        p + q,
    ];
    let n = 300;
    let proj: Vec<G1Projective> = (0..n).map(|i| cycle[i % cycle.len()]).collect();
    let mut pts = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&proj, &mut pts);
    let bases = g1_affine_slice(&pts);
    let k = Scalar::random(&mut rng);
    let cases: Vec<(&str, Vec<Scalar>)> = vec![
        ("all equal", vec![k; n]),
        ("random", (0..n).map(|_| Scalar::random(&mut rng)).collect()),
        (
            "two values",
            (0..n).map(|i| if i % 2 == 0 { k } else { -k }).collect(),
        ),
    ];
    for (name, sc) in &cases {
        let want = G1Projective::from(host_msm::msm_g1(bases, fr_slice_of(sc))).to_affine();
        for s in [
            shape(8, 4),
            shape(5, 3),
            shape(12, 1),
            shape(6, 0),
            table_shape(6, 0, 100, 4),
            table_shape(10, 2, 300, 300),
        ] {
            let got = emulated_msm::<bellows_cuda::msm::G1>(e, 1, bases, fr_slice_of(sc), None, s);
            assert_eq!(G1Projective::from(got).to_affine(), want, "{name}: {s:?}");
        }
    }
}

fn fr_slice_of(s: &[blstrs::Scalar]) -> &[Fr] {
    bellows_core::layout::fr_slice(s)
}

/// The same device MSM logic in G2 (Fp2 coordinates), against blst, for random scalars, bits
/// and one huge bucket.
#[test]
fn msm_g2_matches_blst() {
    use bellows_core::{groth16::host_msm, layout::g2_affine_slice};
    use blstrs::{G2Affine, G2Projective, Scalar};
    use ff::Field;
    use group::{prime::PrimeCurveAffine, Curve, Group};
    let Some(e) = emu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let n = 150;
    let step = G2Projective::random(&mut rng);
    let mut p = G2Projective::random(&mut rng);
    let proj: Vec<_> = (0..n)
        .map(|_| {
            p += step;
            p
        })
        .collect();
    let mut pts = vec![G2Affine::identity(); n];
    G2Projective::batch_normalize(&proj, &mut pts);
    let bases = g2_affine_slice(&pts);
    let random: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let cases: Vec<(&str, Vec<Scalar>)> = vec![
        ("random", random.clone()),
        (
            "bits",
            (0..n).map(|i| Scalar::from((i % 2) as u64)).collect(),
        ),
        ("all equal", vec![random[1]; n]),
    ];
    for (name, sc) in &cases {
        let want = G2Projective::from(host_msm::msm_g2(bases, fr_slice_of(sc))).to_affine();
        for s in [
            shape(5, 2),
            shape(11, 40),
            shape(8, 0),
            shape(6, 3),
            table_shape(9, 0, 64, 6),
            Shape {
                bin_shift: 6,
                ..shape(11, 40)
            },
        ] {
            let got = emulated_msm::<bellows_cuda::msm::G2>(e, 2, bases, fr_slice_of(sc), None, s);
            assert_eq!(G2Projective::from(got).to_affine(), want, "{name}: {s:?}");
        }
    }
}

/// The decode kernels' body for `group` (1 = G1, 2 = G2): into a buffer of its own, or, with
/// `in_place`, over the encodings copied into the output buffer first, which the kernel reads
/// and overwrites point by point (as the key load does on the GPU).
fn decode_exec<A: Plain>(
    e: &Emu,
    group: u32,
    in_place: bool,
) -> impl FnOnce(&[u8]) -> Result<(Vec<A>, Vec<u8>)> + '_ {
    move |encoded| {
        let n = encoded.len() / std::mem::size_of::<A>();
        let mut out = vec![A::default(); n];
        if in_place {
            for (w, b) in words_mut(&mut out).iter_mut().zip(encoded.chunks_exact(8)) {
                *w = u64::from_ne_bytes(b.try_into().expect("8 bytes"));
            }
        }
        let mut verdicts = vec![0xffu8; n];
        let p = words_mut(&mut out).as_mut_ptr();
        let input = if in_place {
            p.cast::<u8>().cast_const()
        } else {
            encoded.as_ptr()
        };
        // SAFETY: the input holds n encodings of the group's size (as long as an `A`: `encoded`,
        // or `out` holding a copy of it), `out` receives n affine points of the layout the
        // emulation writes (over the input when in place: the emulated kernel reads each
        // point's bytes whole before writing it), `verdicts` n bytes.
        unsafe { (e.decode)(group, input, p, verdicts.as_mut_ptr(), n as u64) };
        Ok((out, verdicts))
    }
}

/// Apart and in place, the kernels decode every case as blst does.
#[test]
fn decoding_parameter_points_matches_blst() {
    let Some(e) = emu() else { return };
    for (in_place, seed) in [(false, 33), (true, 34)] {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let r = testing::run_decode_checks(
            decode_exec::<G1Affine>(e, 1, in_place),
            decode_exec::<G2Affine>(e, 2, in_place),
            &mut rng,
        );
        assert_eq!(r.len(), 4);
        assert!(r.iter().all(|c| c.compared > 0), "in place: {in_place}");
        assert_all(&r);
    }
}

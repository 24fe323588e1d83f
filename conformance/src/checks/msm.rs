//! MSM checks in G1 and G2: edge cases and random inputs at sizes on both sides of powers of two
//! (where Pippenger implementations change window sizes and bucket counts).

use std::sync::Arc;

use bellows_core::{
    backend::{BasesHandle, MsmJob},
    layout::{Fr, G1Jacobian, G2Jacobian},
    Backend, Result,
};
use blstrs::{G1Affine, G2Affine};

use super::{cand, needs, refr, Check, CheckResult, Ctx, Fail, Requires};
use crate::{compare, compare::Mismatch, data};

/// What the checks need of a group.
pub trait GroupKind: 'static {
    /// blstrs affine point (its default is the identity).
    type Aff: Copy + Default + Send + Sync + 'static;
    /// Result in the crossing layout.
    type Jac: Copy + Default;
    /// `"g1"` or `"g2"`.
    const NAME: &'static str;
    /// Capability test.
    const NEEDS: Requires;
    /// The shared random points.
    fn points(ctx: &Ctx) -> Arc<Vec<Self::Aff>>;
    /// Largest log2 size for this group.
    fn k(ctx: &Ctx) -> u32;
    /// Loads bases.
    fn load(b: &dyn Backend, p: Arc<Vec<Self::Aff>>) -> Result<BasesHandle>;
    /// Runs jobs.
    fn msm(
        b: &dyn Backend,
        h: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [Self::Jac],
    ) -> Result<()>;
    /// Compares results.
    fn cmp(e: &[Self::Jac], g: &[Self::Jac], context: &str) -> std::result::Result<(), Mismatch>;
}

/// G1.
pub struct G1;
/// G2.
pub struct G2;

/// [`GroupKind`] for `$group`: its point types, name and capability, the context's points
/// (`ctx.points().$points`) and size (`ctx.$k`), and the backend calls and comparison of its own.
macro_rules! group_kind {
    ($group:ty, $aff:ty, $jac:ty, $name:literal, $needs:path, $points:ident, $k:ident,
     $load:ident, $msm:ident, $cmp:path) => {
        impl GroupKind for $group {
            type Aff = $aff;
            type Jac = $jac;
            const NAME: &'static str = $name;
            const NEEDS: Requires = $needs;
            fn points(ctx: &Ctx) -> Arc<Vec<$aff>> {
                ctx.points().$points.clone()
            }
            fn k(ctx: &Ctx) -> u32 {
                ctx.$k
            }
            fn load(b: &dyn Backend, p: Arc<Vec<$aff>>) -> Result<BasesHandle> {
                b.$load(p)
            }
            fn msm(
                b: &dyn Backend,
                h: BasesHandle,
                jobs: &[MsmJob<'_>],
                out: &mut [$jac],
            ) -> Result<()> {
                b.$msm(h, jobs, out)
            }
            fn cmp(e: &[$jac], g: &[$jac], context: &str) -> std::result::Result<(), Mismatch> {
                $cmp(e, g, context)
            }
        }
    };
}

group_kind!(
    G1,
    G1Affine,
    G1Jacobian,
    "g1",
    needs::g1,
    g1,
    k,
    load_bases_g1,
    msm_g1,
    compare::g1
);
group_kind!(
    G2,
    G2Affine,
    G2Jacobian,
    "g2",
    needs::g2,
    g2,
    k2,
    load_bases_g2,
    msm_g2,
    compare::g2
);

/// A job as (start, scalars).
pub type JobSpec = (usize, Vec<Fr>);

/// Runs `jobs` over `bases` on one backend: load, MSM, free (freed even when the MSM fails).
pub fn run_on<G: GroupKind>(
    b: &dyn Backend,
    bases: Arc<Vec<G::Aff>>,
    jobs: &[JobSpec],
) -> Result<Vec<G::Jac>> {
    let h = G::load(b, bases)?;
    let r = run_jobs::<G>(b, h, jobs);
    let f = b.free_bases(h);
    let out = r?;
    f?;
    Ok(out)
}

/// Runs `jobs` over the loaded bases `h` on one backend.
pub fn run_jobs<G: GroupKind>(
    b: &dyn Backend,
    h: BasesHandle,
    jobs: &[JobSpec],
) -> Result<Vec<G::Jac>> {
    let js: Vec<MsmJob<'_>> = jobs.iter().map(|(s, sc)| MsmJob::new(*s, sc)).collect();
    let mut out = vec![G::Jac::default(); js.len()];
    G::msm(b, h, &js, &mut out)?;
    Ok(out)
}

/// Compares the reference's and the candidate's results job by job (a mismatch names the job).
pub fn compare_jobs<G: GroupKind>(want: &[G::Jac], got: &[G::Jac], label: &str) -> CheckResult {
    if got.len() != want.len() {
        return Err(Fail::Error(format!(
            "{label}: {} results for {} jobs",
            got.len(),
            want.len()
        )));
    }
    for (j, (w, g)) in want.iter().zip(got).enumerate() {
        G::cmp(
            std::slice::from_ref(w),
            std::slice::from_ref(g),
            &format!("{label}, job {j}"),
        )?;
    }
    Ok(())
}

/// Runs `jobs` over `bases` on both backends and compares every result.
pub fn both<G: GroupKind>(
    ctx: &Ctx,
    bases: Arc<Vec<G::Aff>>,
    jobs: &[JobSpec],
    label: &str,
) -> CheckResult {
    let want = refr(
        run_on::<G>(&*ctx.refb, bases.clone(), jobs),
        &format!("msm_{} {label}", G::NAME),
    )?;
    let got = cand(
        run_on::<G>(&*ctx.cand, bases, jobs),
        &format!("msm_{} {label}", G::NAME),
    )?;
    compare_jobs::<G>(&want, &got, label)
}

fn prefix<G: GroupKind>(ctx: &Ctx, n: usize) -> Arc<Vec<G::Aff>> {
    Arc::new(G::points(ctx)[..n].to_vec())
}

/// Sizes 2^k − 1, 2^k, 2^k + 1 for k in 1..=K (every k at Standard and Full, every other k at
/// Quick, always including K).
fn boundary_sizes(ctx: &Ctx, k: u32) -> Vec<usize> {
    let step = ctx.by_level(2, 1, 1);
    let mut ks: Vec<u32> = (1..=k).rev().step_by(step).collect();
    ks.reverse();
    ks.iter()
        .flat_map(|&k| [(1usize << k) - 1, 1 << k, (1 << k) + 1])
        .filter(|&n| n > 0)
        .collect()
}

/// The check `msm_<group> <name>`: for each n of `sizes` (described by `what`), one job of n
/// copies of `scalar(ctx, n)` over the first n points.
fn constant_scalars<G: GroupKind>(
    name: &str,
    sizes: Vec<usize>,
    what: String,
    scalar: fn(&Ctx, usize) -> Fr,
) -> Check {
    Check::new(
        format!("msm_{} {name}", G::NAME),
        what,
        G::NEEDS,
        move |ctx| {
            for &n in &sizes {
                both::<G>(
                    ctx,
                    prefix::<G>(ctx, n),
                    &[(0, data::filled(n, scalar(ctx, n)))],
                    &format!("n={n}"),
                )?;
            }
            Ok(())
        },
    )
}

fn checks_for<G: GroupKind>(ctx: &Ctx) -> Vec<Check> {
    let g = G::NAME;
    let k = G::k(ctx);
    // A size between the small edge cases and 2^k, not a power of two.
    let mid = (1usize << k.min(8)) / 2 + 3;
    let mut v = Vec::new();
    v.push(Check::new(
        format!("msm_{g} empty"),
        "0 points; empty jobs; no jobs",
        G::NEEDS,
        |ctx| {
            both::<G>(
                ctx,
                Arc::new(Vec::new()),
                &[(0, vec![])],
                "handle of 0 points",
            )?;
            let p = prefix::<G>(ctx, 4);
            both::<G>(
                ctx,
                p.clone(),
                &[(0, vec![]), (4, vec![]), (2, vec![])],
                "empty jobs",
            )?;
            both::<G>(ctx, p, &[], "no jobs")
        },
    ));
    v.push(Check::new(
        format!("msm_{g} one point"),
        "1 point; scalars 0, 1, 2, r−1, random",
        G::NEEDS,
        |ctx| {
            let p = prefix::<G>(ctx, 1);
            let mut jobs: Vec<JobSpec> = [
                Fr::default(),
                Fr::ONE,
                Fr::from(blstrs::Scalar::from(2u64)),
                data::r_minus_one(),
            ]
            .into_iter()
            .map(|s| (0, vec![s]))
            .collect();
            jobs.push((0, data::random_scalars(1, ctx.seed, 20_001)));
            both::<G>(ctx, p, &jobs, "one point")
        },
    ));
    v.push(constant_scalars::<G>(
        "zero scalars",
        vec![1, mid, 1 << k],
        format!("1, {mid}, 2^{k}"),
        |_, _| Fr::default(),
    ));
    v.push(Check::new(
        format!("msm_{g} identity points"),
        format!("{mid} and 2^{k}; all, every 2nd, every 7th"),
        G::NEEDS,
        move |ctx| {
            for n in [mid, 1 << k] {
                for stride in [1, 2, 7] {
                    let pts = Arc::new(data::with_identities(&G::points(ctx)[..n], stride));
                    let sc = data::random_scalars(n, ctx.seed, 21_000 + n as u64);
                    both::<G>(
                        ctx,
                        pts,
                        &[(0, sc)],
                        &format!("n={n}, identity every {stride}"),
                    )?;
                }
            }
            Ok(())
        },
    ));
    v.push(Check::new(
        format!("msm_{g} repeated points"),
        format!("{mid} and 2^{k} copies of one point"),
        G::NEEDS,
        move |ctx| {
            for n in [mid, 1 << k] {
                let p0 = G::points(ctx)[0];
                let pts = Arc::new(vec![p0; n]);
                let jobs = [
                    (0, data::random_scalars(n, ctx.seed, 22_000 + n as u64)),
                    (0, data::filled(n, Fr::ONE)),
                    (0, data::filled(n, data::r_minus_one())),
                ];
                both::<G>(ctx, pts, &jobs, &format!("n={n}"))?;
            }
            Ok(())
        },
    ));
    v.push(constant_scalars::<G>(
        "scalar r−1",
        vec![1, mid, 1 << k],
        format!("1, {mid}, 2^{k}"),
        |_, _| data::r_minus_one(),
    ));
    v.push(constant_scalars::<G>(
        "all-equal scalars",
        vec![mid, 1 << k],
        format!("{mid}, 2^{k}"),
        |ctx, n| data::random_scalars(1, ctx.seed, 23_000 + n as u64)[0],
    ));
    v.push(Check::new(
        format!("msm_{g} small scalars"),
        format!("{mid}, 2^{k}; scalars 0..4"),
        G::NEEDS,
        move |ctx| {
            for n in [mid, 1 << k] {
                both::<G>(
                    ctx,
                    prefix::<G>(ctx, n),
                    &[(0, data::small_scalars(n))],
                    &format!("n={n}"),
                )?;
            }
            Ok(())
        },
    ));
    let sizes = boundary_sizes(ctx, k);
    let desc = format!("2^k−1, 2^k, 2^k+1 for {} sizes up to 2^{k}+1", sizes.len());
    v.push(Check::new(
        format!("msm_{g} random"),
        desc,
        G::NEEDS,
        move |ctx| {
            let all = G::points(ctx);
            for &n in &sizes {
                let sc = data::random_scalars(n, ctx.seed, 24_000 + n as u64);
                both::<G>(ctx, all.clone(), &[(0, sc)], &format!("n={n}"))?;
            }
            Ok(())
        },
    ));
    v.push(Check::new(
        format!("msm_{g} batched sub-ranges"),
        format!("6 jobs over one handle of 2^{k}+1"),
        G::NEEDS,
        move |ctx| {
            let all = G::points(ctx);
            let n = all.len();
            let r = |len: usize, s: u64| data::random_scalars(len, ctx.seed, 25_000 + s);
            let jobs = vec![
                (0, r(n, 1)),
                (1, r(n - 1, 2)),
                (n / 2, r(n - n / 2, 3)),
                (n - 1, r(1, 4)),
                (3, r(n / 3, 5)),
                (n, vec![]),
            ];
            both::<G>(ctx, all, &jobs, "sub-ranges")
        },
    ));
    v
}

/// The MSM checks, G1 then G2.
pub fn checks(ctx: &Ctx) -> Vec<Check> {
    let mut v = checks_for::<G1>(ctx);
    v.extend(checks_for::<G2>(ctx));
    v
}

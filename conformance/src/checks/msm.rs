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
    /// blstrs affine point.
    type Aff: Copy + Send + Sync + 'static;
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
    /// The points with every `stride`-th replaced by the identity.
    fn with_identities(p: &[Self::Aff], stride: usize) -> Vec<Self::Aff>;
}

/// G1.
pub struct G1;
/// G2.
pub struct G2;

impl GroupKind for G1 {
    type Aff = G1Affine;
    type Jac = G1Jacobian;
    const NAME: &'static str = "g1";
    const NEEDS: Requires = needs::g1;
    fn points(ctx: &Ctx) -> Arc<Vec<G1Affine>> {
        ctx.points().g1.clone()
    }
    fn k(ctx: &Ctx) -> u32 {
        ctx.k
    }
    fn load(b: &dyn Backend, p: Arc<Vec<G1Affine>>) -> Result<BasesHandle> {
        b.load_bases_g1(p)
    }
    fn msm(
        b: &dyn Backend,
        h: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G1Jacobian],
    ) -> Result<()> {
        b.msm_g1(h, jobs, out)
    }
    fn cmp(e: &[G1Jacobian], g: &[G1Jacobian], context: &str) -> std::result::Result<(), Mismatch> {
        compare::g1(e, g, context)
    }
    fn with_identities(p: &[G1Affine], stride: usize) -> Vec<G1Affine> {
        data::with_identities_g1(p, stride)
    }
}

impl GroupKind for G2 {
    type Aff = G2Affine;
    type Jac = G2Jacobian;
    const NAME: &'static str = "g2";
    const NEEDS: Requires = needs::g2;
    fn points(ctx: &Ctx) -> Arc<Vec<G2Affine>> {
        ctx.points().g2.clone()
    }
    fn k(ctx: &Ctx) -> u32 {
        ctx.k2
    }
    fn load(b: &dyn Backend, p: Arc<Vec<G2Affine>>) -> Result<BasesHandle> {
        b.load_bases_g2(p)
    }
    fn msm(
        b: &dyn Backend,
        h: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G2Jacobian],
    ) -> Result<()> {
        b.msm_g2(h, jobs, out)
    }
    fn cmp(e: &[G2Jacobian], g: &[G2Jacobian], context: &str) -> std::result::Result<(), Mismatch> {
        compare::g2(e, g, context)
    }
    fn with_identities(p: &[G2Affine], stride: usize) -> Vec<G2Affine> {
        data::with_identities_g2(p, stride)
    }
}

/// A job as (start, scalars).
pub type JobSpec = (usize, Vec<Fr>);

/// Runs `jobs` over `bases` on one backend: load, MSM, free (freed even when the MSM fails).
pub fn run_on<G: GroupKind>(
    b: &dyn Backend,
    bases: Arc<Vec<G::Aff>>,
    jobs: &[JobSpec],
) -> Result<Vec<G::Jac>> {
    let h = G::load(b, bases)?;
    let js: Vec<MsmJob<'_>> = jobs.iter().map(|(s, sc)| MsmJob::new(*s, sc)).collect();
    let mut out = vec![G::Jac::default(); js.len()];
    let r = G::msm(b, h, &js, &mut out);
    let f = b.free_bases(h);
    r?;
    f?;
    Ok(out)
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
    if got.len() != want.len() {
        return Err(Fail::Error(format!(
            "{label}: {} results for {} jobs",
            got.len(),
            want.len()
        )));
    }
    for (j, (w, g)) in want.iter().zip(&got).enumerate() {
        G::cmp(
            std::slice::from_ref(w),
            std::slice::from_ref(g),
            &format!("{label}, job {j}"),
        )?;
    }
    Ok(())
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
    v.push(Check::new(
        format!("msm_{g} zero scalars"),
        format!("1, {mid}, 2^{k}"),
        G::NEEDS,
        move |ctx| {
            for n in [1, mid, 1 << k] {
                both::<G>(
                    ctx,
                    prefix::<G>(ctx, n),
                    &[(0, data::filled(n, Fr::default()))],
                    &format!("n={n}"),
                )?;
            }
            Ok(())
        },
    ));
    v.push(Check::new(
        format!("msm_{g} identity points"),
        format!("{mid} and 2^{k}; all, every 2nd, every 7th"),
        G::NEEDS,
        move |ctx| {
            for n in [mid, 1 << k] {
                for stride in [1, 2, 7] {
                    let pts = Arc::new(G::with_identities(&G::points(ctx)[..n], stride));
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
    v.push(Check::new(
        format!("msm_{g} scalar r−1"),
        format!("1, {mid}, 2^{k}"),
        G::NEEDS,
        move |ctx| {
            for n in [1, mid, 1 << k] {
                both::<G>(
                    ctx,
                    prefix::<G>(ctx, n),
                    &[(0, data::filled(n, data::r_minus_one()))],
                    &format!("n={n}"),
                )?;
            }
            Ok(())
        },
    ));
    v.push(Check::new(
        format!("msm_{g} all-equal scalars"),
        format!("{mid}, 2^{k}"),
        G::NEEDS,
        move |ctx| {
            for n in [mid, 1 << k] {
                let s = data::random_scalars(1, ctx.seed, 23_000 + n as u64)[0];
                both::<G>(
                    ctx,
                    prefix::<G>(ctx, n),
                    &[(0, data::filled(n, s))],
                    &format!("n={n}"),
                )?;
            }
            Ok(())
        },
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

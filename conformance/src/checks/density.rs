//! Density jobs in G1 and G2: an MSM job carrying a bitmap of the scalars it uses must equal the
//! plain job over the used scalars only (computed on the reference, so the reference's own
//! density handling is not what is trusted), for random bitmaps, all clear, all set, sizes on both
//! sides of the 64-bit word boundary and a non-zero start; a bitmap of the wrong length or with a
//! bit set past the scalars must be an invalid-input error.

use std::sync::Arc;

use bellows_core::{
    backend::{density_bit, density_words, MsmJob},
    layout::Fr,
    Backend, Result,
};
use rand_core::RngCore;

use super::{
    cand, expect_invalid,
    msm::{GroupKind, G1, G2},
    refr, Check, Ctx, Fail,
};
use crate::data;

/// Random bitmap over `n` scalars (no bit past `n`).
pub fn random_bits(n: usize, seed: u64, stream: u64) -> Vec<u64> {
    let mut r = data::rng(seed, stream);
    let mut w: Vec<u64> = (0..density_words(n)).map(|_| r.next_u64()).collect();
    mask_tail(&mut w, n);
    w
}

fn mask_tail(w: &mut [u64], n: usize) {
    if !n.is_multiple_of(64) {
        if let Some(last) = w.last_mut() {
            *last &= (1u64 << (n % 64)) - 1;
        }
    }
}

/// Loads `bases`, runs `jobs`, frees (also when the MSM fails).
fn run_jobs<G: GroupKind>(
    b: &dyn Backend,
    bases: Arc<Vec<G::Aff>>,
    jobs: &[MsmJob<'_>],
) -> Result<Vec<G::Jac>> {
    let h = G::load(b, bases)?;
    let mut out = vec![G::Jac::default(); jobs.len()];
    let r = G::msm(b, h, jobs, &mut out);
    let f = b.free_bases(h);
    r?;
    f?;
    Ok(out)
}

fn checks_for<G: GroupKind>(ctx: &Ctx) -> Check {
    let g = G::NAME;
    let k = G::k(ctx);
    // Sizes on both sides of the 64-bit word boundary and 2^k, up to the shared point set
    // (G2's is small at small K).
    let points = G::points(ctx).len();
    let mut sizes: Vec<usize> = [1usize, 63, 64, 65, 1 << k]
        .into_iter()
        .filter(|&n| n <= points)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let list = sizes
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Check::new(
        format!("msm_{g} density jobs"),
        format!("{list} scalars; random, all-clear, all-set bitmaps; bad bitmaps"),
        G::NEEDS,
        move |ctx| {
            let all = G::points(ctx);
            for &n in &sizes {
                let sc = data::random_scalars(n, ctx.seed, 26_000 + n as u64);
                let mut full = vec![u64::MAX; density_words(n)];
                mask_tail(&mut full, n);
                let maps = [
                    ("random", random_bits(n, ctx.seed, 27_000 + n as u64)),
                    ("all clear", vec![0u64; density_words(n)]),
                    ("all set", full),
                ];
                for (what, bits) in &maps {
                    let used: Vec<Fr> = (0..n)
                        .filter(|&i| density_bit(bits, i))
                        .map(|i| sc[i])
                        .collect();
                    // Room for the used bases after a start of 1 (the G1/G2 point sets have
                    // 2^k + 1 points, at least n + 1 here).
                    let start = 1.min(all.len() - used.len());
                    let label = format!("n={n}, {what} bitmap");
                    let want = refr(
                        run_jobs::<G>(&*ctx.refb, all.clone(), &[MsmJob::new(start, &used)]),
                        &format!("msm_{g} {label}, filtered scalars"),
                    )?;
                    let got = cand(
                        run_jobs::<G>(
                            &*ctx.cand,
                            all.clone(),
                            &[
                                MsmJob::new(start, &sc).with_density(bits),
                                MsmJob::new(0, &sc).with_density(bits),
                            ],
                        ),
                        &format!("msm_{g} {label}"),
                    )?;
                    let want0 = refr(
                        run_jobs::<G>(&*ctx.refb, all.clone(), &[MsmJob::new(0, &used)]),
                        &format!("msm_{g} {label}, filtered scalars"),
                    )?;
                    if got.len() != 2 {
                        return Err(Fail::Error(format!(
                            "{label}: {} results for 2 jobs",
                            got.len()
                        )));
                    }
                    G::cmp(&want, &got[..1], &format!("{label}, start {start}"))?;
                    G::cmp(&want0, &got[1..], &format!("{label}, start 0"))?;
                }
            }
            // Malformed bitmaps: one word short, one word long, a bit past the scalars.
            let n = 65;
            let sc = data::random_scalars(n, ctx.seed, 28_000);
            let h = cand(G::load(&*ctx.cand, all.clone()), &format!("load_bases_{g}"))?;
            let short = [u64::MAX];
            let long = [0u64, 0, 0];
            let stray = [0u64, 1 << 1];
            let mut out = [G::Jac::default()];
            let mut r = Ok(());
            for (what, bits) in [
                ("short", &short[..]),
                ("long", &long[..]),
                ("stray bit", &stray[..]),
            ] {
                r = r.and_then(|()| {
                    expect_invalid(
                        G::msm(
                            &*ctx.cand,
                            h,
                            &[MsmJob::new(0, &sc).with_density(bits)],
                            &mut out,
                        ),
                        &format!("msm_{g} with a {what} bitmap"),
                    )
                });
            }
            cand(ctx.cand.free_bases(h), &format!("free_bases {g}"))?;
            r
        },
    )
}

/// The density checks, G1 then G2.
pub fn checks(ctx: &Ctx) -> Vec<Check> {
    vec![checks_for::<G1>(ctx), checks_for::<G2>(ctx)]
}

//! Resident-bases checks: one handle reused across many calls, many handles freed in mixed order,
//! load/free cycles, and misuse of handles answered with invalid-input errors.

use std::sync::Arc;

use bellows_core::{
    backend::{BasesHandle, MsmJob},
    layout::{G1Jacobian, G2Jacobian},
};

use super::{
    cand, expect_invalid,
    msm::{compare_jobs, run_jobs, GroupKind, JobSpec, G1, G2},
    needs, refr, Check, CheckResult, Ctx, Fail,
};
use crate::data;

/// Runs `jobs` on an already loaded handle of each backend and compares.
fn on_handles<G: GroupKind>(
    ctx: &Ctx,
    hr: BasesHandle,
    hc: BasesHandle,
    jobs: &[JobSpec],
    label: &str,
) -> CheckResult {
    let want = refr(run_jobs::<G>(&*ctx.refb, hr, jobs), label)?;
    let got = cand(run_jobs::<G>(&*ctx.cand, hc, jobs), label)?;
    compare_jobs::<G>(&want, &got, label)
}

fn check_handle(h: BasesHandle, len: usize, what: &str) -> CheckResult {
    if h.len != len as u64 {
        return Err(Fail::Error(format!(
            "{what}: handle {} reports {} points, {len} were loaded",
            h.id, h.len
        )));
    }
    Ok(())
}

/// One handle of up to 2^10 G1 points reused by `calls` calls.
pub fn reuse(ctx: &Ctx, calls: usize) -> CheckResult {
    let n = 1usize << ctx.k.min(10);
    let pts = Arc::new(ctx.points().g1[..n].to_vec());
    let hr = refr(ctx.refb.load_bases_g1(pts.clone()), "load")?;
    let hc = cand(ctx.cand.load_bases_g1(pts), "load")?;
    check_handle(hc, n, "load_bases_g1")?;
    let mut r = Ok(());
    for i in 0..calls {
        let jobs = [
            (0, data::random_scalars(n, ctx.seed, 30_000 + i as u64)),
            (
                i % n,
                data::random_scalars(n - i % n, ctx.seed, 31_000 + i as u64),
            ),
        ];
        r = on_handles::<G1>(ctx, hr, hc, &jobs, &format!("call {i}"));
        if r.is_err() {
            break;
        }
    }
    let _ = ctx.refb.free_bases(hr);
    let freed = cand(ctx.cand.free_bases(hc), "free_bases");
    r.and(freed)
}

fn many_handles(ctx: &Ctx) -> CheckResult {
    let g1 = ctx.points().g1.clone();
    let g2 = ctx.points().g2.clone();
    let with_g2 = ctx.caps.msm_g2;
    // (group 1 or 2, length)
    let mut specs: Vec<(u8, usize)> = vec![
        (1, 1),
        (1, 33.min(g1.len())),
        (1, g1.len()),
        (1, 200.min(g1.len())),
    ];
    if with_g2 {
        specs.extend([(2, 5), (2, g2.len())]);
    }
    let mut live = Vec::new();
    for &(grp, len) in &specs {
        let (hr, hc) = if grp == 1 {
            let p = Arc::new(g1[..len].to_vec());
            (
                refr(ctx.refb.load_bases_g1(p.clone()), "load g1")?,
                cand(ctx.cand.load_bases_g1(p), "load g1")?,
            )
        } else {
            let p = Arc::new(g2[..len].to_vec());
            (
                refr(ctx.refb.load_bases_g2(p.clone()), "load g2")?,
                cand(ctx.cand.load_bases_g2(p), "load g2")?,
            )
        };
        check_handle(hc, len, "load_bases")?;
        live.push((grp, len, hr, hc));
    }
    let ids: std::collections::HashSet<u64> = live.iter().map(|l| l.3.id).collect();
    if ids.len() != live.len() {
        return Err(Fail::Error(format!(
            "{} live handles share {} ids",
            live.len(),
            ids.len()
        )));
    }
    let run_all = |live: &[(u8, usize, BasesHandle, BasesHandle)], round: usize| -> CheckResult {
        for (i, &(grp, len, hr, hc)) in live.iter().enumerate() {
            let jobs = [(
                0,
                data::random_scalars(len, ctx.seed, 32_000 + (round * 16 + i) as u64),
            )];
            let label = format!("round {round}, handle {i} (g{grp}, {len} points)");
            if grp == 1 {
                on_handles::<G1>(ctx, hr, hc, &jobs, &label)?;
            } else {
                on_handles::<G2>(ctx, hr, hc, &jobs, &label)?;
            }
        }
        Ok(())
    };
    run_all(&live, 0)?;
    // Free in a mixed order; the remaining handles must keep working.
    for (round, pick) in [2usize, 0, 3, 1, 1, 0].into_iter().enumerate() {
        if live.is_empty() {
            break;
        }
        let (_, _, hr, hc) = live.remove(pick % live.len());
        refr(ctx.refb.free_bases(hr), "free")?;
        cand(ctx.cand.free_bases(hc), "free_bases")?;
        run_all(&live, round + 1)?;
    }
    for (_, _, hr, hc) in live {
        refr(ctx.refb.free_bases(hr), "free")?;
        cand(ctx.cand.free_bases(hc), "free_bases")?;
    }
    Ok(())
}

fn cycles(ctx: &Ctx, n_cycles: usize) -> CheckResult {
    let pts = Arc::new(ctx.points().g1[..64.min(ctx.points().g1.len())].to_vec());
    let n = pts.len();
    for c in 0..n_cycles {
        let hr = refr(ctx.refb.load_bases_g1(pts.clone()), "load")?;
        let hc = cand(
            ctx.cand.load_bases_g1(pts.clone()),
            &format!("load, cycle {c}"),
        )?;
        let r = on_handles::<G1>(
            ctx,
            hr,
            hc,
            &[(0, data::random_scalars(n, ctx.seed, 33_000 + c as u64))],
            &format!("cycle {c}"),
        );
        let _ = ctx.refb.free_bases(hr);
        r?;
        cand(ctx.cand.free_bases(hc), &format!("free, cycle {c}"))?;
    }
    Ok(())
}

fn misuse(ctx: &Ctx) -> CheckResult {
    let pts = Arc::new(ctx.points().g1[..8].to_vec());
    let h = cand(ctx.cand.load_bases_g1(pts), "load")?;
    let sc = data::random_scalars(8, ctx.seed, 34_000);
    let mut out = [G1Jacobian::default()];
    let over = [MsmJob::new(4, &sc)];
    expect_invalid(
        ctx.cand.msm_g1(h, &over, &mut out),
        "a job reaching past the loaded points",
    )?;
    let job = [MsmJob::new(0, &sc)];
    let mut two = [G1Jacobian::default(); 2];
    expect_invalid(
        ctx.cand.msm_g1(h, &job, &mut two),
        "2 output slots for 1 job",
    )?;
    if ctx.caps.msm_g2 {
        let mut o2 = [G2Jacobian::default()];
        expect_invalid(ctx.cand.msm_g2(h, &job, &mut o2), "msm_g2 on a G1 handle")?;
    }
    cand(
        ctx.cand.msm_g1(h, &job, &mut out),
        "a valid call after rejected ones",
    )?;
    cand(ctx.cand.free_bases(h), "free_bases")?;
    expect_invalid(
        ctx.cand.msm_g1(h, &job, &mut out),
        "msm_g1 on a freed handle (use after free)",
    )?;
    expect_invalid(ctx.cand.free_bases(h), "freeing a handle twice")?;
    Ok(())
}

/// The resident-bases checks.
pub fn checks(ctx: &Ctx) -> Vec<Check> {
    let calls = ctx.by_level(8, 32, 100);
    let n = 1usize << ctx.k.min(10);
    let cyc = ctx.by_level(20, 50, 200);
    vec![
        Check::new(
            "bases reused",
            format!("{calls} calls × 2 jobs on one handle of {n}"),
            needs::g1,
            move |ctx| reuse(ctx, calls),
        ),
        Check::new(
            "bases many handles",
            "4 G1 + 2 G2 handles, freed in mixed order",
            needs::g1,
            many_handles,
        ),
        Check::new(
            "bases load/free cycles",
            format!("{cyc} cycles of 64 points"),
            needs::g1,
            move |ctx| cycles(ctx, cyc),
        ),
        Check::new(
            "bases misuse is an error",
            "use after free, double free, wrong group, out of range",
            needs::g1,
            misuse,
        ),
    ]
}

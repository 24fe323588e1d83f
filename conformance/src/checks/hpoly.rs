//! `h_poly` checks: the Groth16 quotient at every size 2^1..2^K, one vector triple and a batch of
//! two, compared on the output `a` (b and c are scratch and not compared).

use super::{cand, needs, refr, Check, CheckResult, Ctx};
use crate::{compare, data};

fn run(ctx: &Ctx, batch: usize, stream: u64) -> CheckResult {
    for log_n in 1..=ctx.ntt_k() {
        let len = batch << log_n;
        let s = stream + 10 * u64::from(log_n);
        let (a, b, c) = (
            data::random_scalars(len, ctx.seed, s),
            data::random_scalars(len, ctx.seed, s + 1),
            data::random_scalars(len, ctx.seed, s + 2),
        );
        let (mut wa, mut wb, mut wc) = (a.clone(), b.clone(), c.clone());
        refr(ctx.refb.h_poly(&mut wa, &mut wb, &mut wc, log_n), "h_poly")?;
        let (mut ga, mut gb, mut gc) = (a, b, c);
        cand(
            ctx.cand.h_poly(&mut ga, &mut gb, &mut gc, log_n),
            &format!("h_poly 2^{log_n}"),
        )?;
        let n = 1usize << log_n;
        for (v, (w, g)) in wa.chunks(n).zip(ga.chunks(n)).enumerate() {
            compare::fr(w, g, &format!("2^{log_n}, batch of {batch}, vector {v}"))?;
        }
    }
    Ok(())
}

/// The `h_poly` checks.
pub fn checks(ctx: &Ctx) -> Vec<Check> {
    let k = ctx.ntt_k();
    vec![
        Check::new("h_poly", format!("2^1..2^{k}"), needs::coset, |ctx| {
            run(ctx, 1, 50_000)
        }),
        Check::new(
            "h_poly batched",
            format!("2^1..2^{k}, batch of 2"),
            needs::coset,
            |ctx| run(ctx, 2, 60_000),
        ),
    ]
}

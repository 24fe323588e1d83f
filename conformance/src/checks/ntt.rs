//! NTT checks: forward, inverse, coset forward, coset inverse, in the four input/output orderings,
//! at every size 2^0..2^K, a single vector and a batch of three (random, all r − 1, all zero);
//! and malformed shapes rejected with invalid-input errors.

use bellows_core::{
    backend::{NttConfig, Ordering},
    layout::Fr,
};

use super::{cand, expect_invalid, needs, refr, Check, CheckResult, Ctx};
use crate::{compare, data};

fn order_name(o: Ordering) -> &'static str {
    match o {
        Ordering::Natural => "natural",
        Ordering::BitReversed => "bitrev",
    }
}

/// Runs `cfg` on both backends for every size and batch shape and compares.
pub fn run(ctx: &Ctx, cfg: &NttConfig, stream: u64) -> CheckResult {
    run_upto(ctx, cfg, stream, ctx.ntt_k())
}

/// [`run`] for sizes 2^0..2^`k`.
pub fn run_upto(ctx: &Ctx, cfg: &NttConfig, stream: u64, k: u32) -> CheckResult {
    for log_n in 0..=k {
        let n = 1usize << log_n;
        let single = data::random_scalars(n, ctx.seed, stream + u64::from(log_n));
        let mut batch = data::random_scalars(n, ctx.seed, stream + 100 + u64::from(log_n));
        batch.extend(data::filled(n, data::r_minus_one()));
        batch.extend(data::filled(n, Fr::default()));
        for (input, label) in [(single, "single vector"), (batch, "batch of 3")] {
            let mut want = input.clone();
            refr(ctx.refb.ntt(&mut want, log_n, cfg), "ntt")?;
            let mut got = input;
            cand(
                ctx.cand.ntt(&mut got, log_n, cfg),
                &format!("ntt 2^{log_n} ({label})"),
            )?;
            for (v, (w, g)) in want.chunks(n).zip(got.chunks(n)).enumerate() {
                compare::fr(w, g, &format!("2^{log_n}, {label}, vector {v}"))?;
            }
        }
    }
    Ok(())
}

/// The NTT checks.
pub fn checks(ctx: &Ctx) -> Vec<Check> {
    let sizes = format!("2^0..2^{}, batches of 1 and 3", ctx.ntt_k());
    let mut v = Vec::new();
    let kinds = [
        ("forward", NttConfig::forward(), false),
        ("inverse", NttConfig::inverse(), false),
        ("coset forward", NttConfig::forward().with_coset(true), true),
        ("coset inverse", NttConfig::inverse().with_coset(true), true),
    ];
    let orders = [Ordering::Natural, Ordering::BitReversed];
    let mut stream = 10_000u64;
    for (kind, base, coset) in kinds {
        for i in orders {
            for o in orders {
                let cfg = base.with_orders(i, o);
                stream += 1_000;
                let s = stream;
                v.push(Check::new(
                    format!("ntt {kind} {}→{}", order_name(i), order_name(o)),
                    sizes.clone(),
                    if coset { needs::coset } else { needs::ntt },
                    move |ctx| run(ctx, &cfg, s),
                ));
            }
        }
    }
    v.push(Check::new(
        "ntt rejects malformed shapes",
        "3 elements at 2^1; 2^33",
        needs::ntt,
        |ctx| {
            let mut odd = vec![Fr::ONE; 3];
            expect_invalid(
                ctx.cand.ntt(&mut odd, 1, &NttConfig::forward()),
                "3 elements as vectors of 2",
            )?;
            let mut one = vec![Fr::ONE; 1];
            expect_invalid(
                ctx.cand.ntt(&mut one, 33, &NttConfig::forward()),
                "size 2^33",
            )?;
            Ok(())
        },
    ));
    v
}

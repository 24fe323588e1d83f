//! The concurrency check: NTTs, `h_poly`, MSMs over resident bases and whole proofs, from several
//! threads at once against the same backend, each result still exact.

use bellows_core::backend::NttConfig;

use super::{bases_reuse, needs, ntt, proof, Check, Ctx, Fail};

/// The concurrency check (skipped when the candidate does not declare `concurrent`).
pub fn check(ctx: &Ctx) -> Check {
    let threads = ctx.threads;
    let k = ctx.ntt_k().min(10);
    let pk = ctx
        .k
        .clamp(bellows_core::circuits::synthetic::MIN_LOG_SIZE, 8);
    Check::new(
        format!("concurrent ×{threads}"),
        format!("ntt forward and coset inverse ≤2^{k}, msm_g1 on a reused handle, proof 2^{pk}; each thread in its own order"),
        |c| needs::concurrent(c).or(needs::prover(c)),
        move |ctx| {
            type Task = Box<dyn Fn(&Ctx) -> super::CheckResult + Send + Sync>;
            let tasks: Vec<(&str, Task)> = vec![
                ("ntt forward", Box::new(move |c: &Ctx| ntt::run_upto(c, &NttConfig::forward(), 90_000, k))),
                ("ntt coset inverse", Box::new(move |c: &Ctx| ntt::run_upto(c, &NttConfig::inverse().with_coset(true), 91_000, k))),
                ("bases reused", Box::new(|c: &Ctx| bases_reuse(c, 4))),
                ("proof", Box::new(move |c: &Ctx| proof::run(c, pk, 20, 1))),
            ];
            let results: Vec<Result<(), (usize, &str, Fail)>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads)
                    .map(|t| {
                        let tasks = &tasks;
                        s.spawn(move || {
                            for i in 0..tasks.len() {
                                let (name, f) = &tasks[(i + t) % tasks.len()];
                                f(ctx).map_err(|e| (t, *name, e))?;
                            }
                            Ok(())
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .enumerate()
                    .map(|(t, h)| h.join().unwrap_or_else(|_| Err((t, "a task", Fail::Error("panicked".into())))))
                    .collect()
            });
            for r in results {
                if let Err((t, name, f)) = r {
                    return Err(match f {
                        Fail::Mismatch(mut m) => {
                            m.context = format!("thread {t}, {name}: {}", m.context);
                            Fail::Mismatch(m)
                        }
                        Fail::Error(e) => Fail::Error(format!("thread {t}, {name}: {e}")),
                    });
                }
            }
            Ok(())
        },
    )
}

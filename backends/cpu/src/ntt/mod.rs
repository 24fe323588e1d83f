//! The CPU number-theoretic transform.
//!
//! Conventions are those of [`bellows_core::backend::ntt`]: ω_n = `ROOT_OF_UNITY^(2^(32−log_n))`,
//! forward `X_j = Σ x_i ω^(ij)`, inverse with `1/n`, coset generator g = 7, bit-reversed order
//! meaning element i at index `bitrev(i)`.
//!
//! Every configuration maps onto one in-place pass that flips the order (DIF: natural →
//! bit-reversed, DIT: bit-reversed → natural), a diagonal pass for the coset powers and `1/n`,
//! and a bit-reversal permutation only when input and output orders are the same:
//!
//! | direction | in → out | steps |
//! |---|---|---|
//! | forward | N → R | [coset powers, natural] · DIF |
//! | forward | R → N | [coset powers, bit-reversed] · DIT |
//! | forward | N → N | [coset powers] · DIF · permute |
//! | forward | R → R | permute · [coset powers] · DIF |
//! | inverse | N → R | DIF · (1/n [· coset powers, bit-reversed]) |
//! | inverse | R → N | DIT · (1/n [· coset powers, natural]) |
//! | inverse | N → N | DIF · permute · (1/n [· coset powers]) |
//! | inverse | R → R | permute · DIF · (1/n [· coset powers, bit-reversed]) |
//!
//! Sizes up to `2^(FOUR_STEP_MIN_LOG−1)` = 2^20 run the recursive radix-2 kernels ([`radix2`]); larger
//! ones the four-step scheme ([`four_step`]), into whose twiddle pass a plain `1/n` is folded.

pub(crate) mod diag;
pub(crate) mod four_step;
pub(crate) mod permute;
pub(crate) mod radix2;
pub(crate) mod twiddle;

use bellows_core::backend::{NttConfig, NttDirection, Ordering};
use blstrs::Scalar;
use rayon::prelude::*;

use diag::Diag;
pub(crate) use twiddle::{Dir, Plan};

/// Natural → bit-reversed transform of one vector, every element also times `scale` if given.
pub(crate) fn dif(x: &mut [Scalar], plan: &Plan, dir: Dir, scale: Option<Scalar>) {
    if plan.split.is_some() {
        four_step::dif(x, plan, dir, scale);
    } else {
        radix2::dif(x, dir);
        if let Some(s) = scale {
            diag::apply(x, plan, Diag::Scale(s));
        }
    }
}

/// Bit-reversed → natural transform of one vector, every element also times `scale` if given.
pub(crate) fn dit(x: &mut [Scalar], plan: &Plan, dir: Dir, scale: Option<Scalar>) {
    if plan.split.is_some() {
        four_step::dit(x, plan, dir, scale);
    } else {
        radix2::dit(x, dir);
        if let Some(s) = scale {
            diag::apply(x, plan, Diag::Scale(s));
        }
    }
}

/// Transforms one vector of `2^plan.log_n` elements according to `cfg`.
pub(crate) fn transform(x: &mut [Scalar], plan: &Plan, cfg: &NttConfig) {
    use Ordering::{BitReversed as R, Natural as N};
    let coset = |dir: Dir, scale: Scalar, order: Ordering| Diag::Coset { dir, scale, order };
    match cfg.direction {
        NttDirection::Forward => {
            let pre = |x: &mut [Scalar], order| {
                if cfg.coset {
                    diag::apply(x, plan, coset(Dir::Fwd, Scalar::from(1u64), order));
                }
            };
            match (cfg.input_order, cfg.output_order) {
                (N, R) => {
                    pre(x, N);
                    dif(x, plan, Dir::Fwd, None);
                }
                (R, N) => {
                    pre(x, R);
                    dit(x, plan, Dir::Fwd, None);
                }
                (N, N) => {
                    pre(x, N);
                    dif(x, plan, Dir::Fwd, None);
                    permute::bitrev_permute(x);
                }
                (R, R) => {
                    permute::bitrev_permute(x);
                    pre(x, N);
                    dif(x, plan, Dir::Fwd, None);
                }
            }
        }
        NttDirection::Inverse => {
            // 1/n folded into the transform when there is no coset; otherwise one diagonal pass
            // applies both.
            let (fold, post) = if cfg.coset {
                (None, Some(|order| coset(Dir::Inv, plan.n_inv, order)))
            } else {
                (Some(plan.n_inv), None)
            };
            let out = match (cfg.input_order, cfg.output_order) {
                (N, R) => {
                    dif(x, plan, Dir::Inv, fold);
                    R
                }
                (R, N) => {
                    dit(x, plan, Dir::Inv, fold);
                    N
                }
                (N, N) => {
                    dif(x, plan, Dir::Inv, fold);
                    permute::bitrev_permute(x);
                    N
                }
                (R, R) => {
                    permute::bitrev_permute(x);
                    dif(x, plan, Dir::Inv, fold);
                    R
                }
            };
            if let Some(post) = post {
                diag::apply(x, plan, post(out));
            }
        }
    }
}

/// Vectors per rayon task when a batch holds many small vectors.
const BATCH_TASK_ELEMS: usize = 1 << 12;

/// Transforms every `2^log_n`-element vector of `data` (whose length the caller has checked).
pub(crate) fn transform_batch(data: &mut [Scalar], log_n: u32, cfg: &NttConfig) {
    let plan = Plan::get(log_n);
    let n = 1usize << log_n;
    if data.len() == n {
        transform(data, plan, cfg);
    } else {
        let per_task = (BATCH_TASK_ELEMS / n).max(1) * n;
        data.par_chunks_mut(per_task).for_each(|chunk| {
            chunk
                .chunks_exact_mut(n)
                .for_each(|v| transform(v, plan, cfg))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand::SeedableRng;

    /// Every configuration through a forced four-step plan equals the radix-2 path (which the
    /// integration tests check against a naive DFT).
    #[test]
    fn four_step_dispatch_equals_radix2_dispatch() {
        use NttDirection::{Forward, Inverse};
        use Ordering::{BitReversed, Natural};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
        for log_n in [2u32, 3, 6, 9, 12] {
            let x: Vec<Scalar> = (0..1usize << log_n)
                .map(|_| Scalar::random(&mut rng))
                .collect();
            let direct = Plan::get(log_n);
            assert!(direct.split.is_none());
            let four = Plan::with_split(log_n, Some((log_n / 2, log_n - log_n / 2)));
            for dir in [Forward, Inverse] {
                for coset in [false, true] {
                    for i in [Natural, BitReversed] {
                        for o in [Natural, BitReversed] {
                            let mut cfg = NttConfig::forward().with_coset(coset).with_orders(i, o);
                            cfg.direction = dir;
                            let mut want = x.clone();
                            transform(&mut want, direct, &cfg);
                            let mut got = x.clone();
                            transform(&mut got, &four, &cfg);
                            assert_eq!(got, want, "log_n={log_n} {cfg:?}");
                        }
                    }
                }
            }
        }
    }
}

//! The CPU number-theoretic transform.
//!
//! Conventions are those of [`bellows_backend_api::backend::ntt`]:
//! ω_n = `ROOT_OF_UNITY^(2^(32−log_n))`, forward `X_j = Σ x_i ω^(ij)`, inverse with `1/n`, coset generator g = 7, bit-reversed order
//! meaning element i at index `bitrev(i)`.
//!
//! Every configuration maps onto one in-place pass that flips the order (DIF: natural →
//! bit-reversed, DIT: bit-reversed → natural) and bit-reversal permutations where the orders
//! require them. Coset powers cost nothing: they are folded into the twiddles of a DIT whose
//! input is bit-reversed (forward) or of a DIF whose output is bit-reversed (inverse), see
//! [`twiddle::Plan::coset`]; a permutation (far cheaper than a pass of multiplications) brings
//! the data into that order when needed. `1/n` is folded into the four-step twiddle pass, or
//! applied by one scaling pass on radix-2 sizes.
//!
//! | direction | in → out | plain | coset |
//! |---|---|---|---|
//! | forward | N → R | DIF | permute · DIT_g · permute |
//! | forward | R → N | DIT | DIT_g |
//! | forward | N → N | DIF · permute | permute · DIT_g |
//! | forward | R → R | permute · DIF | DIT_g · permute |
//! | inverse | N → R | DIF | DIF_g⁻¹ |
//! | inverse | R → N | DIT | permute · DIF_g⁻¹ · permute |
//! | inverse | N → N | DIF · permute | DIF_g⁻¹ · permute |
//! | inverse | R → R | permute · DIF | permute · DIF_g⁻¹ |
//!
//! Sizes up to `2^(FOUR_STEP_MIN_LOG−1)` = 2^20 run the recursive radix-2 kernels ([`radix2`]);
//! larger ones the four-step scheme ([`four_step`]).

pub(crate) mod diag;
pub(crate) mod four_step;
pub(crate) mod permute;
pub(crate) mod radix2;
pub(crate) mod twiddle;

use bellows_backend_api::backend::{NttConfig, NttDirection, Ordering};
use blstrs::Scalar;
use rayon::prelude::*;

pub(crate) use twiddle::{Dir, Plan};

/// Natural → bit-reversed transform of one vector, every element also times `scale` if given
/// and, with `coset` (inverse direction), output k times `g^(−k)`.
pub(crate) fn dif(x: &mut [Scalar], plan: &Plan, dir: Dir, scale: Option<Scalar>, coset: bool) {
    if plan.split.is_some() {
        four_step::dif(x, plan, dir, scale, coset);
    } else {
        if coset {
            radix2::dif(x, &radix2::Shifted(&plan.coset(dir).stages));
        } else {
            radix2::dif(x, &radix2::Plain(dir));
        }
        if let Some(s) = scale {
            diag::scale(x, s);
        }
    }
}

/// Bit-reversed → natural transform of one vector, every element also times `scale` if given
/// and, with `coset` (forward direction), input i times `g^i`.
pub(crate) fn dit(x: &mut [Scalar], plan: &Plan, dir: Dir, scale: Option<Scalar>, coset: bool) {
    if plan.split.is_some() {
        four_step::dit(x, plan, dir, scale, coset);
    } else {
        if coset {
            radix2::dit(x, &radix2::Shifted(&plan.coset(dir).stages));
        } else {
            radix2::dit(x, &radix2::Plain(dir));
        }
        if let Some(s) = scale {
            diag::scale(x, s);
        }
    }
}

/// Transforms one vector of `2^plan.log_n` elements according to `cfg`.
pub(crate) fn transform(x: &mut [Scalar], plan: &Plan, cfg: &NttConfig) {
    use permute::bitrev_permute as permute;
    use Ordering::{BitReversed as R, Natural as N};
    let c = cfg.coset;
    match cfg.direction {
        NttDirection::Forward => {
            let dir = Dir::Fwd;
            match (cfg.input_order, cfg.output_order, c) {
                (N, R, false) => dif(x, plan, dir, None, false),
                (R, N, _) => dit(x, plan, dir, None, c),
                (N, N, false) => {
                    dif(x, plan, dir, None, false);
                    permute(x);
                }
                (R, R, false) => {
                    permute(x);
                    dif(x, plan, dir, None, false);
                }
                (N, R, true) => {
                    permute(x);
                    dit(x, plan, dir, None, true);
                    permute(x);
                }
                (N, N, true) => {
                    permute(x);
                    dit(x, plan, dir, None, true);
                }
                (R, R, true) => {
                    dit(x, plan, dir, None, true);
                    permute(x);
                }
            }
        }
        NttDirection::Inverse => {
            let (dir, s) = (Dir::Inv, Some(plan.n_inv));
            match (cfg.input_order, cfg.output_order, c) {
                (N, R, _) => dif(x, plan, dir, s, c),
                (R, N, false) => dit(x, plan, dir, s, false),
                (N, N, _) => {
                    dif(x, plan, dir, s, c);
                    permute(x);
                }
                (R, R, _) => {
                    permute(x);
                    dif(x, plan, dir, s, c);
                }
                (R, N, true) => {
                    permute(x);
                    dif(x, plan, dir, s, true);
                    permute(x);
                }
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
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
        for log_n in [2u32, 3, 6, 9, 12] {
            let x: Vec<Scalar> = (0..1usize << log_n)
                .map(|_| Scalar::random(&mut rng))
                .collect();
            let direct = Plan::get(log_n);
            assert!(direct.split.is_none());
            let four = Plan::with_split(log_n, Some((log_n / 2, log_n - log_n / 2)));
            for cfg in NttConfig::all() {
                let mut want = x.clone();
                transform(&mut want, direct, &cfg);
                let mut got = x.clone();
                transform(&mut got, &four, &cfg);
                assert_eq!(got, want, "log_n={log_n} {cfg:?}");
            }
        }
    }
}

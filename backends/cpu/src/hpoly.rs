//! The fused Groth16 quotient on the CPU.
//!
//! Computes exactly what
//! [`bellows_backend_api::backend::quotient::h_poly_from_primitives`] computes (the same field elements; only the order of exact field operations differs) with no pass of
//! its own for the coset powers or `1/n`, a single bit-reversal permutation at the very end, and
//! six transforms instead of seven: h = (coset_iNTT(A·B) − C)/Z, where A and B are a's and b's
//! evaluations on the coset, C is c's coefficient vector and Z(g) = g^n − 1 is Z's constant value
//! on the coset. The inverse coset transform is linear and undoes the forward coset transform of
//! c's coefficients, so c never goes to the coset.
//!
//! 1. a, b each (in parallel, beside c): inverse DIF, natural evaluations → `n ×` coefficients in
//!    bit-reversed order; forward DIT with the coset powers `g^i` folded into its twiddles,
//!    bit-reversed → `n ×` the evaluations on the coset g·H, natural order. c: the inverse DIF
//!    alone, `n · C` in bit-reversed order.
//! 2. pointwise `a·b = n²·A·B`.
//! 3. inverse DIF with `g^(−i)` folded into its twiddles → `n³ ×` the coefficients of the
//!    inverse coset transform of A·B, bit-reversed; then `(· − n²·c) · 1/(n³·Z(g))` (c is in the
//!    same bit-reversed order), which is h; bit-reversal permutation.
use bellows_backend_api::backend::quotient::z_inverse_on_coset;
use blstrs::Scalar;
use rayon::prelude::*;

use crate::ntt::{dif, dit, permute, Dir, Plan};

/// Elements per rayon task in the pointwise step.
const POINTWISE_CHUNK: usize = 1 << 12;

/// Runs `f` on each `2^log_n`-element vector of `v`, in parallel.
fn each_vector(v: &mut [Scalar], n: usize, f: impl Fn(&mut [Scalar]) + Sync + Send) {
    if v.len() == n {
        f(v)
    } else {
        v.par_chunks_mut(n).for_each(f)
    }
}

/// The quotient of a batch; lengths are checked by the caller (equal, a multiple of `2^log_n`).
pub(crate) fn h_poly(a: &mut [Scalar], b: &mut [Scalar], c: &mut [Scalar], log_n: u32) {
    h_poly_with(a, b, c, Plan::get(log_n))
}

/// [`h_poly`] with the given plan (tests force the four-step scheme on small sizes with it).
pub(crate) fn h_poly_with(a: &mut [Scalar], b: &mut [Scalar], c: &mut [Scalar], plan: &Plan) {
    let log_n = plan.log_n;
    let n = 1usize << log_n;
    let to_coset = |v: &mut [Scalar]| {
        each_vector(v, n, |x| {
            dif(x, plan, Dir::Inv, None, false);
            dit(x, plan, Dir::Fwd, None, true);
        })
    };
    rayon::join(
        || to_coset(a),
        || {
            rayon::join(
                || to_coset(b),
                || each_vector(c, n, |x| dif(x, plan, Dir::Inv, None, false)),
            )
        },
    );

    a.par_chunks_mut(POINTWISE_CHUNK)
        .zip(b.par_chunks(POINTWISE_CHUNK))
        .for_each(|(a, b)| {
            for (a, b) in a.iter_mut().zip(b) {
                crate::field::mul_assign(a, b);
            }
        });

    let n_field = Scalar::from(n as u64);
    let n2 = n_field * n_field;
    let k = plan.n_inv * plan.n_inv * plan.n_inv * z_inverse_on_coset(log_n);
    each_vector(a, n, |x| dif(x, plan, Dir::Inv, None, true));
    a.par_chunks_mut(POINTWISE_CHUNK)
        .zip(c.par_chunks(POINTWISE_CHUNK))
        .for_each(|(a, c)| {
            for (a, c) in a.iter_mut().zip(c) {
                crate::field::scaled_difference(a, c, &n2, &k);
            }
        });
    each_vector(a, n, permute::bitrev_permute);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand::SeedableRng;

    /// The four-step path (forced on small sizes) gives the same quotient as the radix-2 path.
    #[test]
    fn four_step_plans_give_the_same_quotient() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for log_n in [2u32, 5, 8, 11] {
            let n = 2usize << log_n; // batch of 2
            let mut v: Vec<Vec<Scalar>> = (0..3)
                .map(|_| (0..n).map(|_| Scalar::random(&mut rng)).collect())
                .collect();
            let (mut a2, mut b2, mut c2) = (v[0].clone(), v[1].clone(), v[2].clone());
            let plan = Plan::with_split(log_n, Some((log_n / 2, log_n - log_n / 2)));
            h_poly_with(&mut a2, &mut b2, &mut c2, &plan);
            let [a, b, c] = &mut v[..] else {
                unreachable!()
            };
            h_poly(a, b, c, log_n);
            assert_eq!(a2, *a, "log_n = {log_n}");
        }
    }
}

//! A host reference NTT with blstrs, written for clarity rather than speed: the definition as a
//! naive O(n²) DFT for small sizes, and an iterative radix-2 Cooley–Tukey transform (rayon over
//! the butterflies of each stage) for any size. Both follow [`bellows_core::backend::ntt`]'s
//! conventions exactly; the device transform is checked against them element for element.

use bellows_core::{
    backend::ntt::{batch_size, NttConfig, NttDirection, Ordering},
    layout::{scalars_mut, Fr},
    Result,
};
use ff::Field;
use rayon::prelude::*;

use bellows_cuda::ntt::tables::{bit_reverse, coset_generator, omega, powers};

type Scalar = blstrs::Scalar;

/// Transforms every 2^log_n-element vector of `data` per `cfg` with the radix-2 reference.
pub fn ntt(data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
    batch_size(data.len(), log_n)?;
    for v in scalars_mut(data).chunks_mut(1 << log_n) {
        transform(v, log_n, cfg, radix2);
    }
    Ok(())
}

/// Same as [`ntt`] through the naive DFT (O(n²): small sizes only).
pub fn ntt_naive(data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
    batch_size(data.len(), log_n)?;
    for v in scalars_mut(data).chunks_mut(1 << log_n) {
        transform(v, log_n, cfg, naive);
    }
    Ok(())
}

/// Puts one vector into natural order, scales, transforms with `core` (natural order in and
/// out, root `w`), scales and reorders per `cfg`.
fn transform(v: &mut [Scalar], log_n: u32, cfg: &NttConfig, core: fn(&mut [Scalar], Scalar)) {
    let n = v.len();
    if cfg.input_order == Ordering::BitReversed {
        permute(v, log_n);
    }
    let inverse = cfg.direction == NttDirection::Inverse;
    if cfg.coset && !inverse {
        scale_by_powers(v, coset_generator(), Scalar::ONE);
    }
    let w = if inverse {
        omega(log_n).invert().unwrap()
    } else {
        omega(log_n)
    };
    core(v, w);
    if inverse {
        let n_inv = Scalar::from(n as u64).invert().unwrap();
        let base = if cfg.coset {
            coset_generator().invert().unwrap()
        } else {
            Scalar::ONE
        };
        scale_by_powers(v, base, n_inv);
    }
    if cfg.output_order == Ordering::BitReversed {
        permute(v, log_n);
    }
}

/// v[i] *= c·base^i.
fn scale_by_powers(v: &mut [Scalar], base: Scalar, c: Scalar) {
    let p = powers(base, v.len());
    v.par_iter_mut()
        .zip(p.par_iter())
        .for_each(|(x, f)| *x *= c * f);
}

/// The bit-reversal permutation.
pub fn permute<T>(v: &mut [T], log_n: u32) {
    for i in 0..v.len() {
        let r = bit_reverse(i as u64, log_n) as usize;
        if i < r {
            v.swap(i, r);
        }
    }
}

/// X_j = Σ_i x_i·w^(i·j).
fn naive(v: &mut [Scalar], w: Scalar) {
    let n = v.len();
    let out: Vec<Scalar> = (0..n)
        .map(|j| {
            let wj = w.pow_vartime([j as u64]);
            let mut acc = Scalar::ZERO;
            let mut f = Scalar::ONE;
            for x in v.iter() {
                acc += *x * f;
                f *= wj;
            }
            acc
        })
        .collect();
    v.copy_from_slice(&out);
}

/// Iterative radix-2 decimation in time (Cooley–Tukey): bit-reverse, then stages of half-size
/// m = 1, 2, 4, …, with twiddles w^(j·n/2m) from one table of w^j, j < n/2.
fn radix2(v: &mut [Scalar], w: Scalar) {
    let n = v.len();
    if n == 1 {
        return;
    }
    let log_n = n.trailing_zeros();
    permute(v, log_n);
    let tw = powers(w, n / 2);
    let mut m = 1;
    while m < n {
        let stride = n / (2 * m);
        v.par_chunks_mut(2 * m).for_each(|block| {
            let (lo, hi) = block.split_at_mut(m);
            let body = |(j, (a, b)): (usize, (&mut Scalar, &mut Scalar))| {
                let t = *b * tw[j * stride];
                *b = *a - t;
                *a += t;
            };
            if m >= 4096 {
                lo.par_iter_mut()
                    .zip(hi.par_iter_mut())
                    .enumerate()
                    .for_each(body);
            } else {
                lo.iter_mut().zip(hi.iter_mut()).enumerate().for_each(body);
            }
        });
        m *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn random(n: usize, seed: u64) -> Vec<Fr> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| Fr::from(Scalar::random(&mut rng))).collect()
    }

    #[test]
    fn radix2_equals_the_definition() {
        for log_n in 0..=6u32 {
            for cfg in NttConfig::all() {
                let x = random(2 << log_n, u64::from(log_n));
                let (mut a, mut b) = (x.clone(), x.clone());
                ntt(&mut a, log_n, &cfg).unwrap();
                ntt_naive(&mut b, log_n, &cfg).unwrap();
                assert_eq!(a, b, "log_n {log_n} {cfg:?}");
            }
        }
    }

    #[test]
    fn inverse_undoes_forward() {
        let x = random(1 << 10, 7);
        for coset in [false, true] {
            let mut y = x.clone();
            ntt(&mut y, 10, &NttConfig::forward().with_coset(coset)).unwrap();
            assert_ne!(y, x);
            ntt(&mut y, 10, &NttConfig::inverse().with_coset(coset)).unwrap();
            assert_eq!(y, x);
        }
    }

    #[test]
    fn forward_evaluates_the_polynomial() {
        // X_j = p(ω^j) and, over the coset, p(g·ω^j), for p with coefficients x.
        let log_n = 4;
        let x = random(1 << log_n, 3);
        let p = |z: Scalar| {
            x.iter()
                .rev()
                .fold(Scalar::ZERO, |acc, c| acc * z + Scalar::from(*c))
        };
        let w = omega(log_n);
        let mut y = x.clone();
        ntt(&mut y, log_n, &NttConfig::forward()).unwrap();
        let mut yc = x.clone();
        ntt(&mut yc, log_n, &NttConfig::forward().with_coset(true)).unwrap();
        for j in 0..16u64 {
            assert_eq!(Scalar::from(y[j as usize]), p(w.pow_vartime([j])));
            assert_eq!(
                Scalar::from(yc[j as usize]),
                p(coset_generator() * w.pow_vartime([j]))
            );
        }
    }
}

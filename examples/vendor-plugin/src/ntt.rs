//! A small radix-2 NTT: iterative Cooley–Tukey decimation in time (Cooley and Tukey, "An
//! algorithm for the machine calculation of complex Fourier series", Math. Comp. 19, 1965) over
//! Fr, with the bit-reversal permutation done by the vendor's C kernel (`kernels/permute.c`).
//!
//! Conventions are Bellows' (see `bellows_backend_api::backend::ntt`):
//! ω_n = ROOT_OF_UNITY^(2^(32−log n)), coset generator g = 7, the inverse includes 1/n, orderings are applied on input and output.

use bellows_backend_api::{
    backend::{ntt::batch_size, NttConfig, NttDirection, Ordering},
    layout::{scalars_mut, Fr},
    Error, Result,
};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

extern "C" {
    /// From `kernels/permute.c`: bit-reversal permutation of 2^log_n 32-byte elements in place.
    fn vendor_bitrev_permute(data: *mut u64, log_n: std::ffi::c_uint) -> std::ffi::c_int;
}

/// Permutes `v` (2^log_n elements) into bit-reversed order with the C kernel.
fn bitrev(v: &mut [Scalar], log_n: u32) -> Result<()> {
    debug_assert_eq!(v.len(), 1 << log_n);
    // SAFETY: `v` is 2^log_n scalars of 4 contiguous u64 limbs each (blstrs' layout, asserted by
    // bellows_backend_api::layout), exclusively borrowed for the call; the kernel touches exactly
    // those elements and keeps no pointer.
    let rc = unsafe { vendor_bitrev_permute(v.as_mut_ptr().cast::<u64>(), log_n) };
    if rc != 0 {
        return Err(Error::Device {
            device: "vendor".into(),
            reason: format!("permute kernel failed ({rc})"),
        });
    }
    Ok(())
}

/// ω for size 2^log_n (inverted for inverse transforms).
fn root(log_n: u32, inverse: bool) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        w = w.square();
    }
    if inverse {
        w.invert().unwrap()
    } else {
        w
    }
}

/// Multiplies element i by c^i.
fn scale_powers(v: &mut [Scalar], c: Scalar) {
    let mut p = Scalar::ONE;
    for x in v {
        *x *= p;
        p *= c;
    }
}

/// In-place DIT butterflies on bit-reversed input; natural-order output.
fn butterflies(a: &mut [Scalar], log_n: u32, inverse: bool) {
    let n = a.len();
    let w_n = root(log_n, inverse);
    let mut m = 1;
    let mut stage = 1;
    while m < n {
        // Primitive (2m)-th root: ω_n^(n / 2m).
        let mut w_m = w_n;
        for _ in stage..log_n {
            w_m = w_m.square();
        }
        for block in a.chunks_mut(2 * m) {
            let (lo, hi) = block.split_at_mut(m);
            let mut w = Scalar::ONE;
            for (u, v) in lo.iter_mut().zip(hi.iter_mut()) {
                let t = *v * w;
                *v = *u - t;
                *u += t;
                w *= w_m;
            }
        }
        m *= 2;
        stage += 1;
    }
}

fn one_vector(v: &mut [Scalar], log_n: u32, cfg: &NttConfig) -> Result<()> {
    let inverse = cfg.direction == NttDirection::Inverse;
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    if cfg.input_order == Ordering::BitReversed {
        bitrev(v, log_n)?; // to natural order
    }
    if cfg.coset && !inverse {
        scale_powers(v, g);
    }
    bitrev(v, log_n)?;
    butterflies(v, log_n, inverse);
    if inverse {
        let n_inv = Scalar::from(1u64 << log_n).invert().unwrap();
        if cfg.coset {
            let g_inv = g.invert().unwrap();
            let mut p = n_inv;
            for x in v.iter_mut() {
                *x *= p;
                p *= g_inv;
            }
        } else {
            v.iter_mut().for_each(|x| *x *= n_inv);
        }
    }
    if cfg.output_order == Ordering::BitReversed {
        bitrev(v, log_n)?;
    }
    Ok(())
}

/// Transforms every 2^log_n-element vector of `data` (vectors in parallel).
pub fn ntt(data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
    batch_size(data.len(), log_n)?;
    if log_n > Scalar::S {
        return Err(Error::invalid(format!(
            "NTT size 2^{log_n} exceeds 2^{}",
            Scalar::S
        )));
    }
    scalars_mut(data)
        .par_chunks_mut(1 << log_n)
        .try_for_each(|v| one_vector(v, log_n, cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_kernel_permutes_into_bit_reversed_order() {
        let mut v: Vec<Scalar> = (0..8u64).map(Scalar::from).collect();
        bitrev(&mut v, 3).unwrap();
        let expect: Vec<Scalar> = [0u64, 4, 2, 6, 1, 5, 3, 7]
            .into_iter()
            .map(Scalar::from)
            .collect();
        assert_eq!(v, expect);
        let mut one = vec![Scalar::from(9u64)];
        bitrev(&mut one, 0).unwrap();
        assert_eq!(one, vec![Scalar::from(9u64)]);
    }

    #[test]
    fn forward_then_inverse_is_the_identity() {
        let x: Vec<Scalar> = (1..=16u64).map(Scalar::from).collect();
        let mut d = bellows_backend_api::layout::fr_slice(&x).to_vec();
        ntt(&mut d, 4, &NttConfig::forward().with_coset(true)).unwrap();
        assert_ne!(d, bellows_backend_api::layout::fr_slice(&x));
        ntt(&mut d, 4, &NttConfig::inverse().with_coset(true)).unwrap();
        assert_eq!(d, bellows_backend_api::layout::fr_slice(&x));
    }
}

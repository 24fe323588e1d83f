//! The Groth16 quotient polynomial h(x) = (A(x)·B(x) − C(x)) / Z(x) from primitive transforms.
//!
//! Groth 2016, "On the Size of Pairing-based Non-interactive Arguments", §3.2: the prover needs the
//! coefficients of h. A, B, C are given by their evaluations on the domain H = ⟨ω⟩ of size n;
//! Z(x) = x^n − 1 vanishes on H, so the division is carried out on the coset g·H where Z is the
//! non-zero constant g^n − 1 (the approach of libsnark and bellman/bellperson).
//!
//! [`h_poly_from_primitives`] is the default body of [`Ntt::h_poly`]; a backend that fuses the
//! quotient uses [`z_inverse_on_coset`] for the constant and is checked against the default.

use ff::Field;
use rayon::prelude::*;

use crate::{
    backend::{Ntt, NttConfig},
    layout::{scalars, scalars_mut, Fr},
    Result,
};

pub use crate::backend::ntt::coset_generator;

/// 1 / Z(g) = 1 / (g^n − 1) for n = 2^log_n.
pub fn z_inverse_on_coset(log_n: u32) -> blstrs::Scalar {
    let g = coset_generator();
    let zn = g.pow_vartime([1u64 << log_n]) - blstrs::Scalar::ONE;
    zn.invert()
        .expect("g^n != 1 since g generates the whole multiplicative group")
}

/// `a[i] = (a[i]·b[i] − c[i]) · zinv`, in parallel.
pub fn pointwise_quotient(a: &mut [Fr], b: &[Fr], c: &[Fr], zinv: blstrs::Scalar) {
    let a = scalars_mut(a);
    let (b, c) = (scalars(b), scalars(c));
    a.par_chunks_mut(4096)
        .zip(b.par_chunks(4096))
        .zip(c.par_chunks(4096))
        .for_each(|((a, b), c)| {
            for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                *a = (*a * b - c) * zinv;
            }
        });
}

/// The default [`Ntt::h_poly`]: 3 inverse NTTs, 3 forward coset NTTs, the pointwise step on the
/// host, 1 inverse coset NTT.
pub fn h_poly_from_primitives<N: Ntt + ?Sized>(
    ntt: &N,
    a: &mut [Fr],
    b: &mut [Fr],
    c: &mut [Fr],
    log_n: u32,
) -> Result<()> {
    crate::backend::ntt::h_poly_batch(a.len(), b.len(), c.len(), log_n)?;
    for v in [&mut *a, &mut *b, &mut *c] {
        ntt.ntt(v, log_n, &NttConfig::inverse())?;
        ntt.ntt(v, log_n, &NttConfig::forward().with_coset(true))?;
    }
    pointwise_quotient(a, b, c, z_inverse_on_coset(log_n));
    ntt.ntt(a, log_n, &NttConfig::inverse().with_coset(true))
}

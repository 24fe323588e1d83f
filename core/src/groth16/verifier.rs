//! Groth16 verification, single and batched.
//!
//! Single: e(A, B) = e(α, β) · e(Σ x_i·IC_i, γ) · e(C, δ) (Groth 2016, §3.2), checked as one
//! multi-Miller loop with negated γ and δ and one final exponentiation.
//!
//! Batched: for proofs k with random 128-bit weights ρ_k (the small-exponents test of Bellare,
//! Garay and Rabin, "Fast batch verification for modular exponentiation and digital signatures",
//! EUROCRYPT 1998), check
//! Π e(ρ_k·A_k, B_k) = e(α, β)^(Σρ_k) · e(Σ ρ_k·IC(x_k), γ) · e(Σ ρ_k·C_k, δ):
//! n + 2 Miller loops and one final exponentiation instead of 3n + n.

use blstrs::{Bls12, G1Affine, G1Projective, G2Prepared, Gt, Scalar};
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Curve, Group};
use pairing::{MillerLoopResult, MultiMillerLoop};
use rand_core::RngCore;
use rayon::prelude::*;

use super::{params::VerifyingKey, proof::Proof, ParamsKind};
use crate::{Error, Result};

/// A verifying key with its pairing-side precomputation.
///
/// A degenerate key ([`VerifyingKey::check_sound`]) is remembered as such: every verification
/// with it is an error, never `Ok(true)`.
#[derive(Clone, Debug)]
pub struct PreparedVerifyingKey {
    alpha_beta: Gt,
    neg_gamma: G2Prepared,
    neg_delta: G2Prepared,
    ic: Vec<G1Affine>,
    kind: ParamsKind,
    unsound: Option<String>,
}

impl PreparedVerifyingKey {
    /// Number of public inputs a proof for this key takes (the constant one excluded).
    pub fn num_public_inputs(&self) -> usize {
        self.ic.len() - 1
    }

    /// Whether the key is from benchmark-only parameters (its proofs never verify).
    pub fn kind(&self) -> ParamsKind {
        self.kind
    }

    /// The error for a degenerate key, `Ok` for a sound one.
    fn check_sound(&self) -> Result<()> {
        match &self.unsound {
            Some(reason) => Err(Error::invalid(format!(
                "refusing to verify with a degenerate verifying key: {reason}"
            ))),
            None => Ok(()),
        }
    }
}

/// Checks the key ([`VerifyingKey::check_sound`]) and precomputes e(α, β) and the prepared γ, δ.
pub fn try_prepare_verifying_key(vk: &VerifyingKey) -> Result<PreparedVerifyingKey> {
    vk.check_sound()?;
    Ok(prepare_verifying_key(vk))
}

/// Precomputes e(α, β) and the prepared γ, δ. A degenerate key is accepted here but every
/// verification with it fails (see [`try_prepare_verifying_key`] to be told at once).
pub fn prepare_verifying_key(vk: &VerifyingKey) -> PreparedVerifyingKey {
    PreparedVerifyingKey {
        unsound: vk.check_sound().err().map(|e| e.to_string()),
        alpha_beta: blstrs::pairing(&vk.alpha_g1, &vk.beta_g2),
        neg_gamma: G2Prepared::from(-vk.gamma_g2),
        neg_delta: G2Prepared::from(-vk.delta_g2),
        ic: vk.ic.clone(),
        kind: vk.kind(),
    }
}

fn public_input_point(pvk: &PreparedVerifyingKey, inputs: &[Scalar]) -> Result<G1Projective> {
    pvk.check_sound()?;
    if pvk.ic.is_empty() {
        return Err(Error::malformed("verifying key", "IC query is empty"));
    }
    if inputs.len() + 1 != pvk.ic.len() {
        return Err(Error::invalid(format!(
            "the verifying key expects {} public inputs, {} were given",
            pvk.ic.len() - 1,
            inputs.len()
        )));
    }
    let mut acc = pvk.ic[0].to_curve();
    for (x, p) in inputs.iter().zip(&pvk.ic[1..]) {
        acc += *p * x;
    }
    Ok(acc)
}

/// Verifies one proof. `Ok(false)` for an invalid proof; `Err` when the inputs do not fit the key.
pub fn verify_proof(pvk: &PreparedVerifyingKey, proof: &Proof, inputs: &[Scalar]) -> Result<bool> {
    let acc = public_input_point(pvk, inputs)?.to_affine();
    let b = G2Prepared::from(proof.b);
    let ml = Bls12::multi_miller_loop(&[
        (&proof.a, &b),
        (&acc, &pvk.neg_gamma),
        (&proof.c, &pvk.neg_delta),
    ]);
    Ok(ml.final_exponentiation() == pvk.alpha_beta)
}

/// Verifies many proofs for one key at once. `Ok(true)` iff all are valid (with overwhelming
/// probability over the weights drawn from `rng`). An empty batch is valid.
pub fn verify_proofs_batch(
    pvk: &PreparedVerifyingKey,
    proofs: &[Proof],
    inputs: &[Vec<Scalar>],
    rng: &mut (impl RngCore + ?Sized),
) -> Result<bool> {
    if proofs.len() != inputs.len() {
        return Err(Error::invalid(format!(
            "{} proofs but {} sets of public inputs",
            proofs.len(),
            inputs.len()
        )));
    }
    pvk.check_sound()?;
    if proofs.is_empty() {
        return Ok(true);
    }
    // 128-bit weights: enough for a 2^-128 soundness error per batch.
    let weights: Vec<Scalar> = (0..proofs.len())
        .map(|_| Scalar::from_u128(((rng.next_u64() as u128) << 64) | rng.next_u64() as u128))
        .collect();
    let ic_points = inputs
        .par_iter()
        .map(|x| public_input_point(pvk, x))
        .collect::<Result<Vec<_>>>()?;
    let mut sum_ic = G1Projective::identity();
    let mut sum_c = G1Projective::identity();
    let mut sum_w = Scalar::ZERO;
    let mut weighted = Vec::with_capacity(proofs.len());
    for ((p, w), ic) in proofs.iter().zip(&weights).zip(&ic_points) {
        sum_ic += ic * w;
        sum_c += p.c * w;
        sum_w += w;
        weighted.push(p.a * w);
    }
    let mut weighted_a = vec![G1Affine::identity(); weighted.len()];
    G1Projective::batch_normalize(&weighted, &mut weighted_a);
    let prepared_b: Vec<G2Prepared> = proofs.par_iter().map(|p| G2Prepared::from(p.b)).collect();
    // e(Σρ·IC, γ)·e(Σρ·C, δ) moved to the left as pairings with the prepared −γ, −δ.
    let (sum_ic, sum_c) = (sum_ic.to_affine(), sum_c.to_affine());
    let mut terms: Vec<(&G1Affine, &G2Prepared)> = weighted_a.iter().zip(&prepared_b).collect();
    terms.push((&sum_ic, &pvk.neg_gamma));
    terms.push((&sum_c, &pvk.neg_delta));
    let lhs = Bls12::multi_miller_loop(&terms).final_exponentiation();
    Ok(lhs == pvk.alpha_beta * sum_w)
}

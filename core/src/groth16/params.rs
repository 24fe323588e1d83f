//! Proving parameters and verifying keys (bellperson's structure).

use std::sync::Arc;

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;

use crate::{Error, Result};

/// Groth16 verifying key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    /// α in G1.
    pub alpha_g1: G1Affine,
    /// β in G1.
    pub beta_g1: G1Affine,
    /// β in G2.
    pub beta_g2: G2Affine,
    /// γ in G2.
    pub gamma_g2: G2Affine,
    /// δ in G1.
    pub delta_g1: G1Affine,
    /// δ in G2.
    pub delta_g2: G2Affine,
    /// `(β·u_i(τ) + α·v_i(τ) + w_i(τ)) / γ` for each public input i (index 0 is the constant one).
    pub ic: Vec<G1Affine>,
}

/// Where parameters came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamsKind {
    /// A real setup (ours with explicit or random toxic waste, or a file from elsewhere).
    Trusted,
    /// The fast benchmark-only generator: valid points of the right shape, no trusted setup.
    /// Proofs made with such parameters do not verify.
    BenchmarkOnly,
}

/// Groth16 proving parameters: the verifying key and the five SRS queries.
///
/// The queries are shared (`Arc`) so that backends can keep them resident without copying.
#[derive(Clone, Debug)]
pub struct Parameters {
    /// The verifying key.
    pub vk: VerifyingKey,
    /// `τ^i · Z(τ) / δ` for i in 0..n−1 (n the domain size).
    pub h: Arc<Vec<G1Affine>>,
    /// `(β·u_j(τ) + α·v_j(τ) + w_j(τ)) / δ` for each auxiliary variable j.
    pub l: Arc<Vec<G1Affine>>,
    /// `u_i(τ)` in G1 for every variable (inputs, then aux) whose value is not the identity.
    pub a: Arc<Vec<G1Affine>>,
    /// `v_i(τ)` in G1, same filtering.
    pub b_g1: Arc<Vec<G1Affine>>,
    /// `v_i(τ)` in G2, same filtering.
    pub b_g2: Arc<Vec<G2Affine>>,
}

impl Parameters {
    /// Whether these are benchmark-only parameters (recognised by their marker α, see
    /// [`crate::groth16::setup::benchmark_marker_g1`]).
    pub fn kind(&self) -> ParamsKind {
        self.vk.kind()
    }

    /// Domain size n (a power of two) these parameters serve: `h.len() + 1`.
    pub fn domain_size(&self) -> usize {
        self.h.len() + 1
    }

    /// Number of public inputs, the constant one included.
    pub fn num_inputs(&self) -> usize {
        self.vk.ic.len()
    }

    /// Number of auxiliary (private) variables.
    pub fn num_aux(&self) -> usize {
        self.l.len()
    }
}

impl VerifyingKey {
    /// Refuses a degenerate key, one under which proofs can be forged without the toxic waste:
    /// - α, β (G1 and G2), γ or δ (G1 and G2) at infinity. With γ = identity the input term
    ///   e(Σ x_i·IC_i, γ) vanishes, and A = α, B = β, C = 0 verifies for **any** public input;
    ///   δ = identity does the same for C, and α or β = identity makes e(α, β) trivial;
    /// - γ = ±δ: the input term merges with C's, so C' = C ± (IC(x) − IC(x')) moves a valid proof
    ///   to any other input x';
    /// - γ = ±β: A = α ± IC(x), B = β, C = 0 verifies for any x;
    /// - an IC point at infinity (its input is not bound) or outside the prime-order subgroup.
    ///
    /// Keys read from files get this check ([`super::io`]); so do keys given to the verifier
    /// ([`super::verifier::prepare_verifying_key`]). It cannot catch every subverted key (one
    /// whose γ is a multiple of β that only its maker knows, say): only a trusted setup can.
    pub fn check_sound(&self) -> Result<()> {
        let bad = |what: &str, reason: &str| {
            Err(Error::InvalidPoint {
                what: format!("verifying key, {what}"),
                reason: format!(
                    "{reason}: a degenerate key, under which proofs can be forged, is refused"
                ),
            })
        };
        for (name, id) in [
            ("alpha_g1", self.alpha_g1.is_identity()),
            ("beta_g1", self.beta_g1.is_identity()),
            ("beta_g2", self.beta_g2.is_identity()),
            ("gamma_g2", self.gamma_g2.is_identity()),
            ("delta_g1", self.delta_g1.is_identity()),
            ("delta_g2", self.delta_g2.is_identity()),
        ] {
            if bool::from(id) {
                return bad(name, "point at infinity");
            }
        }
        for (name, g1, g2) in [
            ("alpha_g1", Some(self.alpha_g1), None),
            ("beta_g1", Some(self.beta_g1), None),
            ("beta_g2", None, Some(self.beta_g2)),
            ("gamma_g2", None, Some(self.gamma_g2)),
            ("delta_g1", Some(self.delta_g1), None),
            ("delta_g2", None, Some(self.delta_g2)),
        ] {
            let in_group = g1.is_none_or(|p| bool::from(p.is_torsion_free()))
                && g2.is_none_or(|p| bool::from(p.is_torsion_free()));
            if !in_group {
                return bad(name, "not in the subgroup");
            }
        }
        if self.gamma_g2 == self.delta_g2 || self.gamma_g2 == -self.delta_g2 {
            return bad("gamma_g2", "equal to ±delta_g2");
        }
        if self.gamma_g2 == self.beta_g2 || self.gamma_g2 == -self.beta_g2 {
            return bad("gamma_g2", "equal to ±beta_g2");
        }
        if self.ic.is_empty() {
            return Err(Error::malformed(
                "verifying key",
                "no IC points: a verifying key has at least one (for the constant-one input)",
            ));
        }
        for (i, p) in self.ic.iter().enumerate() {
            if bool::from(p.is_identity()) {
                return bad(&format!("ic point {i}"), "point at infinity");
            }
            if !bool::from(p.is_torsion_free()) {
                return bad(&format!("ic point {i}"), "not in the subgroup");
            }
        }
        Ok(())
    }

    /// Whether this key belongs to benchmark-only parameters.
    pub fn kind(&self) -> ParamsKind {
        if self.alpha_g1 == crate::groth16::setup::benchmark_marker_g1() {
            ParamsKind::BenchmarkOnly
        } else {
            ParamsKind::Trusted
        }
    }
}

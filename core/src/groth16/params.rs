//! Proving parameters and verifying keys (bellperson's structure).

use std::sync::Arc;

use blstrs::{G1Affine, G2Affine};

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
    /// Whether this key belongs to benchmark-only parameters.
    pub fn kind(&self) -> ParamsKind {
        if self.alpha_g1 == crate::groth16::setup::benchmark_marker_g1() {
            ParamsKind::BenchmarkOnly
        } else {
            ParamsKind::Trusted
        }
    }
}

//! The composite Groth16 G1 phase: the quotient and the four G1 MSMs of a batch in one call.
//!
//! ## Design
//! For a batch of proofs over one proving key, the prover needs per proof (Groth 2016, §3.2, with
//! bellperson's arrangement, as bellows-core's `groth16::prover` proves):
//! - **H** = Σ h_k · h_query\[k\] over the coefficients k < n − 1 of h = (A·B − C)/Z;
//! - **L** = Σ aux_j · l_query\[j\];
//! - **A'** = Σ inputs_i · a_query\[i\] + Σ (aux filtered by the A density) · a_query\[n_in + …\];
//! - **B₁'** = Σ (inputs filtered by the B input density) · b_g1\[…\] + Σ (aux filtered by the
//!   B aux density) · b_g1\[popcount(B input density) + …\].
//!
//! [`groth16_g1_from_primitives`] is the default body of [`super::Backend::groth16_g1`]: one
//! [`super::Ntt::h_poly`] over the batch, then one [`super::Msm::msm_g1`] call per query with
//! density jobs ([`MsmJob::with_density`]), so the scalars are never gathered into filtered host
//! copies. A device backend overrides the whole phase to keep h on the device and to overlap the
//! scalar uploads with the NTTs.
//!
//! [`groth16_g1_g2_from_parts`] is the default body of [`super::Backend::groth16_g1_g2`]: the
//! same phase, then B₂' = Σ (the B scalars) · b_g2[…] in G2 over the same density jobs as B₁'
//! ([`b2_sums`]). A device backend overrides it to read the G2 MSM's scalars from the device
//! copies the G1 phase already made (the assignments are not uploaded twice).

use blstrs::{G1Projective, G2Projective};

use super::{check_density, Backend, BasesHandle, Group, MsmJob};
use crate::{
    layout::{Fr, G1Jacobian, G2Jacobian},
    Error, Result,
};

/// What [`super::Backend::groth16_g1_g2`] returns: per proof `[H, L, A', B₁']` (as
/// [`super::Backend::groth16_g1`] returns them) and, in the second vector, B₂'.
pub type G1G2Sums = (Vec<[G1Jacobian; 4]>, Vec<G2Jacobian>);

/// The resident query handles of one proving key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct G1Handles {
    /// The h query (n − 1 points).
    pub h: BasesHandle,
    /// The l query (one point per aux variable).
    pub l: BasesHandle,
    /// The a query (every input, then the aux variables of the A density).
    pub a: BasesHandle,
    /// The b_g1 query (the inputs, then the aux variables, of the B densities).
    pub b_g1: BasesHandle,
}

/// What one proof of the batch contributes besides its evaluations.
#[derive(Clone, Copy, Debug)]
pub struct ProofAssignment<'a> {
    /// Public inputs, the constant one first.
    pub inputs: &'a [Fr],
    /// Private (auxiliary) variables.
    pub aux: &'a [Fr],
    /// Aux variables occurring in some A: a density bitmap over `aux` ([`MsmJob`]).
    pub a_aux_density: &'a [u64],
    /// Inputs occurring in some B: a density bitmap over `inputs`.
    pub b_input_density: &'a [u64],
    /// Aux variables occurring in some B: a density bitmap over `aux`.
    pub b_aux_density: &'a [u64],
}

impl<'a> ProofAssignment<'a> {
    /// The two jobs of A' over the a query: every input, then the aux of the A density.
    pub fn a_jobs(&self) -> [MsmJob<'a>; 2] {
        [
            MsmJob::new(0, self.inputs),
            MsmJob::new(self.inputs.len(), self.aux).with_density(self.a_aux_density),
        ]
    }

    /// The two jobs of B (B₁' over b_g1, and the G2 sum over b_g2): the inputs of the B input
    /// density, then the aux of the B aux density. Checks the input bitmap (it places the second
    /// job).
    pub fn b_jobs(&self) -> Result<[MsmJob<'a>; 2]> {
        let n_b_inputs = check_density(self.b_input_density, self.inputs.len())?;
        Ok([
            MsmJob::new(0, self.inputs).with_density(self.b_input_density),
            MsmJob::new(n_b_inputs, self.aux).with_density(self.b_aux_density),
        ])
    }
}

/// Input of [`super::Backend::groth16_g1`] for a batch of `proofs.len()` proofs over one domain.
#[derive(Debug)]
pub struct G1PhaseInput<'a> {
    /// A evaluations, `batch × 2^log_n`, proof after proof (as [`super::Ntt::h_poly`] takes
    /// them). Clobbered.
    pub a: &'a mut [Fr],
    /// B evaluations, same shape. Clobbered.
    pub b: &'a mut [Fr],
    /// C evaluations, same shape. Clobbered.
    pub c: &'a mut [Fr],
    /// log2 of the domain.
    pub log_n: u32,
    /// One entry per proof.
    pub proofs: &'a [ProofAssignment<'a>],
    /// The resident queries.
    pub handles: G1Handles,
}

impl G1PhaseInput<'_> {
    /// Checks the shapes: a, b, c of `proofs.len() × 2^log_n` elements, every density bitmap,
    /// and every MSM the phase implies within its handle in `handles` (the input's own, or a
    /// caller's record of them, as the plugin host keeps).
    pub fn check_with(&self, handles: &G1Handles) -> Result<()> {
        let batch = self.proofs.len();
        let vectors = super::ntt::batch_size(self.a.len(), self.log_n)?;
        if vectors != batch || self.b.len() != self.a.len() || self.c.len() != self.a.len() {
            return Err(Error::invalid(format!(
                "groth16_g1: {batch} proofs need a, b, c of {batch} × 2^{} elements; got {}, {}, {}",
                self.log_n,
                self.a.len(),
                self.b.len(),
                self.c.len()
            )));
        }
        let n = 1usize << self.log_n;
        for (k, p) in self.proofs.iter().enumerate() {
            let ctx = |e: Error| match e {
                Error::InvalidInput(m) => Error::invalid(format!("groth16_g1, proof {k}: {m}")),
                other => other,
            };
            MsmJob::new(0, &self.a[..n - 1])
                .check(&handles.h)
                .map_err(ctx)?;
            MsmJob::new(0, p.aux).check(&handles.l).map_err(ctx)?;
            for j in p.a_jobs() {
                j.check(&handles.a).map_err(ctx)?;
            }
            for j in p.b_jobs().map_err(ctx)? {
                j.check(&handles.b_g1).map_err(ctx)?;
            }
        }
        Ok(())
    }

    /// [`G1PhaseInput::check_with`] against the input's own handles.
    pub fn check(&self) -> Result<()> {
        self.check_with(&self.handles)
    }
}

/// Checks that `b_g2` names G2 bases and holds every point the proofs' B jobs reach
/// ([`ProofAssignment::b_jobs`]; the phase's other shapes are [`G1PhaseInput::check`]'s).
pub fn check_b_g2(b_g2: &BasesHandle, proofs: &[ProofAssignment<'_>]) -> Result<()> {
    if b_g2.group != Group::G2 {
        return Err(Error::invalid(format!(
            "groth16_g1_g2: bases handle {} holds {:?} points, not the G2 b query",
            b_g2.id, b_g2.group
        )));
    }
    for (k, p) in proofs.iter().enumerate() {
        for j in p.b_jobs()? {
            j.check(b_g2)
                .map_err(|e| Error::invalid(format!("groth16_g1_g2, proof {k}, B in G2: {e}")))?;
        }
    }
    Ok(())
}

/// B₂' of every proof: its two B jobs ([`ProofAssignment::b_jobs`]) over the G2 bases `b_g2`
/// in one batched [`super::Msm::msm_g2`] call, the two sums of each proof added.
pub fn b2_sums<B: Backend + ?Sized>(
    backend: &B,
    proofs: &[ProofAssignment<'_>],
    b_g2: BasesHandle,
) -> Result<Vec<G2Jacobian>> {
    let mut jobs = Vec::with_capacity(2 * proofs.len());
    for p in proofs {
        jobs.extend(p.b_jobs()?);
    }
    let mut out = vec![G2Jacobian::default(); jobs.len()];
    backend.msm_g2(b_g2, &jobs, &mut out)?;
    Ok(out
        .chunks_exact(2)
        .map(|p| (G2Projective::from(p[0]) + G2Projective::from(p[1])).into())
        .collect())
}

/// The default body of [`super::Backend::groth16_g1_g2`]: the backend's own
/// [`super::Backend::groth16_g1`], then [`b2_sums`] over `b_g2`.
pub fn groth16_g1_g2_from_parts<B: Backend + ?Sized>(
    backend: &B,
    input: &mut G1PhaseInput<'_>,
    b_g2: BasesHandle,
) -> Result<G1G2Sums> {
    check_b_g2(&b_g2, input.proofs)?;
    let g1 = backend.groth16_g1(input)?;
    let g2 = b2_sums(backend, input.proofs, b_g2)?;
    Ok((g1, g2))
}

/// Adds two Jacobian points.
fn add(x: G1Jacobian, y: G1Jacobian) -> G1Jacobian {
    (G1Projective::from(x) + G1Projective::from(y)).into()
}

/// The default body of [`super::Backend::groth16_g1`]: [`super::Ntt::h_poly`] over the batch,
/// then four batched [`super::Msm::msm_g1`] calls (H, L, A', B₁') whose jobs carry the densities;
/// the two jobs of A' and of B₁' per proof are added.
pub fn groth16_g1_from_primitives<B: Backend + ?Sized>(
    backend: &B,
    input: &mut G1PhaseInput<'_>,
) -> Result<Vec<[G1Jacobian; 4]>> {
    input.check()?;
    let batch = input.proofs.len();
    if batch == 0 {
        return Ok(Vec::new());
    }
    let log_n = input.log_n;
    let n = 1usize << log_n;
    backend.h_poly(input.a, input.b, input.c, log_n)?;
    let hd = input.handles;
    let run = |handle: BasesHandle, jobs: &[MsmJob<'_>]| -> Result<Vec<G1Jacobian>> {
        let mut out = vec![G1Jacobian::default(); jobs.len()];
        backend.msm_g1(handle, jobs, &mut out)?;
        Ok(out)
    };
    let h_jobs: Vec<MsmJob<'_>> = input
        .a
        .chunks(n)
        .map(|h| MsmJob::new(0, &h[..n - 1]))
        .collect();
    let hs = run(hd.h, &h_jobs)?;
    let proofs = input.proofs;
    let l_jobs: Vec<MsmJob<'_>> = proofs.iter().map(|p| MsmJob::new(0, p.aux)).collect();
    let ls = run(hd.l, &l_jobs)?;
    let a_jobs: Vec<MsmJob<'_>> = proofs.iter().flat_map(|p| p.a_jobs()).collect();
    let as_ = run(hd.a, &a_jobs)?;
    let mut b_jobs = Vec::with_capacity(2 * batch);
    for p in proofs {
        b_jobs.extend(p.b_jobs()?);
    }
    let bs = run(hd.b_g1, &b_jobs)?;
    Ok((0..batch)
        .map(|k| {
            [
                hs[k],
                ls[k],
                add(as_[2 * k], as_[2 * k + 1]),
                add(bs[2 * k], bs[2 * k + 1]),
            ]
        })
        .collect())
}

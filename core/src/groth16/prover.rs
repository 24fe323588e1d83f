//! The Groth16 prover, split into `start` (device work) and `finalize` (join and combine).
//!
//! Groth 2016, §3.2, with bellperson's arrangement of the terms. For witness w, randomness r, s:
//! - A = α + Σ a_i·w_i + r·δ (G1)
//! - B = β + Σ b_i·w_i + s·δ (G2; the same sum in G1, B₁, is needed for C)
//! - C = Σ_aux l_j·w_j + Σ h_k·h_k(coefficients) + s·A' + r·B₁' + s·α + r·β + r·s·δ,
//!   where A' and B₁' are the bare query sums (the terms regroup to s·A + r·B₁ − r·s·δ).
//!
//! [`start`] validates shapes, computes h on the backend ([`crate::backend::Ntt::h_poly`]),
//! launches the G2 MSM on a CPU thread, runs the four G1 MSMs (H, L, A, B₁) on the backend over the
//! resident bases of a [`ProvingKey`], and returns [`PendingProofs`]. The backend is then free for
//! the next batch; [`PendingProofs::finalize`] waits for the G2 thread and assembles the proofs.

use std::{
    sync::Arc,
    thread::JoinHandle,
    time::{Duration, Instant},
};

use bellpepper_core::Circuit;
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve};
use rand_core::RngCore;
use rayon::prelude::*;

use super::{
    host_msm,
    params::Parameters,
    proof::Proof,
    synthesis::{synthesize_batch, Synthesized},
};
use crate::{
    backend::{Backend, BasesHandle, MsmJob, SharedPoints},
    layout::{fr_slice, fr_slice_mut, g2_affine_slice, G1Jacobian},
    Error, Result,
};

/// Parameters made resident on one backend: the handles of the h, l, a and b_g1 queries (the
/// b_g2 query stays on the host for the CPU G2 MSM). Freed when dropped.
pub struct ProvingKey {
    params: Arc<Parameters>,
    backend: Arc<dyn Backend>,
    h: BasesHandle,
    l: BasesHandle,
    a: BasesHandle,
    b_g1: BasesHandle,
}

impl std::fmt::Debug for ProvingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProvingKey")
            .field("backend", &self.backend.info().name)
            .field("domain_size", &self.params.domain_size())
            .finish()
    }
}

impl ProvingKey {
    /// Loads the G1 queries of `params` onto `backend` as resident bases.
    pub fn new(params: Arc<Parameters>, backend: Arc<dyn Backend>) -> Result<Self> {
        if bool::from(params.vk.delta_g1.is_identity() | params.vk.delta_g2.is_identity()) {
            return Err(Error::InvalidPoint {
                what: "verifying key δ".into(),
                reason: "δ is the identity: the parameters are subverted".into(),
            });
        }
        if !params.domain_size().is_power_of_two() {
            return Err(Error::malformed(
                "parameters",
                format!("h query has {} points; expected 2^k − 1", params.h.len()),
            ));
        }
        let load = |p: &Arc<Vec<blstrs::G1Affine>>| -> Result<BasesHandle> {
            backend.load_bases_g1(p.clone() as SharedPoints<_>)
        };
        let h = load(&params.h)?;
        let l = load(&params.l)?;
        let a = load(&params.a)?;
        let b_g1 = load(&params.b_g1)?;
        Ok(Self {
            params,
            backend,
            h,
            l,
            a,
            b_g1,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &Arc<Parameters> {
        &self.params
    }

    /// The backend the bases are resident on.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    fn check_shape(&self, s: &Synthesized, k: usize) -> Result<()> {
        let p = &*self.params;
        let mismatch = |what: &str, got: usize, want: usize| {
            Err(Error::invalid(format!(
                "circuit {k} does not match the parameters: {what} is {got}, parameters expect {want}"
            )))
        };
        if s.input_assignment.len() != p.vk.ic.len() {
            return mismatch(
                "number of public inputs (with the constant one)",
                s.input_assignment.len(),
                p.vk.ic.len(),
            );
        }
        if s.aux_assignment.len() != p.l.len() {
            return mismatch(
                "number of private variables",
                s.aux_assignment.len(),
                p.l.len(),
            );
        }
        if 1usize << s.log_domain() != p.domain_size() {
            return mismatch("domain size", 1 << s.log_domain(), p.domain_size());
        }
        let a_len = s.input_assignment.len() + s.a_aux_density.total();
        if a_len != p.a.len() {
            return mismatch("A-query density", a_len, p.a.len());
        }
        let b_len = s.b_input_density.total() + s.b_aux_density.total();
        if b_len != p.b_g1.len() || b_len != p.b_g2.len() {
            return mismatch("B-query density", b_len, p.b_g1.len());
        }
        Ok(())
    }
}

impl Drop for ProvingKey {
    fn drop(&mut self) {
        for h in [self.h, self.l, self.a, self.b_g1] {
            if let Err(e) = self.backend.free_bases(h) {
                tracing::warn!("freeing resident bases {}: {e}", h.id);
            }
        }
    }
}

/// Where the time of one `start`/`finalize` went.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProverTimings {
    /// The quotient polynomial (NTTs) on the backend.
    pub h_poly: Duration,
    /// The four G1 MSMs on the backend.
    pub msm_g1: Duration,
    /// The G2 MSM on CPU threads (overlapping the above).
    pub msm_g2: Duration,
    /// Waiting in `finalize` for the G2 thread, plus assembly.
    pub finalize: Duration,
}

/// Proofs whose device work is done and whose G2 MSM may still be running.
pub struct PendingProofs {
    params: Arc<Parameters>,
    r: Vec<Scalar>,
    s: Vec<Scalar>,
    /// Per proof: H, L, A', B₁' sums.
    g1: Vec<[G1Jacobian; 4]>,
    g2: JoinHandle<(Vec<G2Projective>, Duration)>,
    timings: ProverTimings,
}

fn scalars_a(s: &Synthesized) -> Vec<Scalar> {
    let mut v = s.input_assignment.clone();
    v.extend(s.a_aux_density.filter(&s.aux_assignment));
    v
}

fn scalars_b(s: &Synthesized) -> Vec<Scalar> {
    let mut v = s.b_input_density.filter(&s.input_assignment);
    v.extend(s.b_aux_density.filter(&s.aux_assignment));
    v
}

/// Draws r then s for each of `n` proofs (all r first, then all s, as bellperson does).
pub fn draw_randomness(n: usize, rng: &mut (impl RngCore + ?Sized)) -> (Vec<Scalar>, Vec<Scalar>) {
    let mut draw = || Scalar::random(&mut *rng);
    let r = (0..n).map(|_| draw()).collect();
    let s = (0..n).map(|_| draw()).collect();
    (r, s)
}

/// Starts proofs for synthesised circuits with randomness from `rng`.
pub fn start(
    key: &ProvingKey,
    synthesized: Vec<Synthesized>,
    rng: &mut (impl RngCore + ?Sized),
) -> Result<PendingProofs> {
    let (r, s) = draw_randomness(synthesized.len(), rng);
    start_with_randomness(key, synthesized, r, s)
}

/// Starts proofs with explicit r and s per proof (for test vectors and interop).
pub fn start_with_randomness(
    key: &ProvingKey,
    synthesized: Vec<Synthesized>,
    r: Vec<Scalar>,
    s: Vec<Scalar>,
) -> Result<PendingProofs> {
    let n_proofs = synthesized.len();
    if r.len() != n_proofs || s.len() != n_proofs {
        return Err(Error::invalid(format!(
            "{n_proofs} circuits but {} r and {} s values",
            r.len(),
            s.len()
        )));
    }
    for (k, syn) in synthesized.iter().enumerate() {
        key.check_shape(syn, k)?;
    }
    let params = key.params.clone();
    let backend = &key.backend;
    if n_proofs == 0 {
        return Ok(PendingProofs {
            params,
            r,
            s,
            g1: vec![],
            g2: std::thread::spawn(|| (vec![], Duration::ZERO)),
            timings: ProverTimings::default(),
        });
    }

    // Scalars of the density-filtered A and B queries.
    let (a_sc, b_sc): (Vec<Vec<Scalar>>, Vec<Vec<Scalar>>) = synthesized
        .par_iter()
        .map(|s| (scalars_a(s), scalars_b(s)))
        .unzip();
    // Shared with the G2 thread (read-only), not copied.
    let b_sc = Arc::new(b_sc);

    // G2 MSM on CPU threads, overlapping all device work.
    let b_g2 = params.b_g2.clone();
    let b_sc_g2 = b_sc.clone();
    let g2 = std::thread::Builder::new()
        .name("bellows-g2-msm".into())
        .spawn(move || {
            let t = Instant::now();
            let out = b_sc_g2
                .iter()
                .map(|sc| host_msm::msm_g2(g2_affine_slice(&b_g2), fr_slice(sc)).into())
                .collect();
            (out, t.elapsed())
        })
        .map_err(|e| Error::io("spawning the G2 MSM thread", e))?;

    // Quotient polynomial for the whole batch, on the backend.
    let t = Instant::now();
    let log_n = synthesized[0].log_domain();
    let n = 1usize << log_n;
    // The first circuit's evaluation vectors become the batch buffers (no copy for a batch of
    // one); each vector is zero-padded to n and the others are appended.
    let mut aux: Vec<Vec<Scalar>> = Vec::with_capacity(n_proofs);
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for (k, syn) in synthesized.into_iter().enumerate() {
        for (buf, v) in [(&mut a, syn.a), (&mut b, syn.b), (&mut c, syn.c)] {
            if k == 0 {
                *buf = v;
                buf.reserve_exact(n * n_proofs - buf.len());
            } else {
                buf.extend_from_slice(&v);
            }
            buf.resize((k + 1) * n, Scalar::ZERO);
        }
        aux.push(syn.aux_assignment);
    }
    backend.h_poly(
        fr_slice_mut(&mut a),
        fr_slice_mut(&mut b),
        fr_slice_mut(&mut c),
        log_n,
    )?;
    drop((b, c));
    let h_time = t.elapsed();

    // G1 MSMs on the backend over resident bases.
    let t = Instant::now();
    let run = |handle: BasesHandle, scalars: Vec<&[Scalar]>| -> Result<Vec<G1Jacobian>> {
        let jobs: Vec<MsmJob<'_>> = scalars
            .iter()
            .map(|sc| MsmJob {
                start: 0,
                scalars: fr_slice(sc),
            })
            .collect();
        let mut out = vec![G1Jacobian::default(); jobs.len()];
        backend.msm_g1(handle, &jobs, &mut out)?;
        Ok(out)
    };
    let hs = run(key.h, a.chunks(n).map(|h| &h[..n - 1]).collect())?;
    drop(a);
    let ls = run(key.l, aux.iter().map(|v| &v[..]).collect())?;
    drop(aux);
    let as_ = run(key.a, a_sc.iter().map(|v| &v[..]).collect())?;
    let bs = run(key.b_g1, b_sc.iter().map(|v| &v[..]).collect())?;
    let msm_time = t.elapsed();

    let g1 = (0..n_proofs)
        .map(|k| [hs[k], ls[k], as_[k], bs[k]])
        .collect();
    Ok(PendingProofs {
        params,
        r,
        s,
        g1,
        g2,
        timings: ProverTimings {
            h_poly: h_time,
            msm_g1: msm_time,
            ..Default::default()
        },
    })
}

impl std::fmt::Debug for PendingProofs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingProofs")
            .field("proofs", &self.r.len())
            .finish_non_exhaustive()
    }
}

impl PendingProofs {
    /// Number of proofs in flight.
    pub fn len(&self) -> usize {
        self.r.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.r.is_empty()
    }

    /// Waits for the G2 MSM and assembles the proofs.
    pub fn finalize(self) -> Result<Vec<Proof>> {
        self.finalize_timed().map(|(p, _)| p)
    }

    /// As [`PendingProofs::finalize`], also returning where the time went.
    pub fn finalize_timed(self) -> Result<(Vec<Proof>, ProverTimings)> {
        let t = Instant::now();
        let (g2, g2_time) = self
            .g2
            .join()
            .map_err(|_| Error::Pipeline("the G2 MSM thread panicked".into()))?;
        let vk = &self.params.vk;
        let alpha = vk.alpha_g1.to_curve();
        let beta1 = vk.beta_g1.to_curve();
        let delta1 = vk.delta_g1.to_curve();
        let proofs = (0..self.r.len())
            .into_par_iter()
            .map(|k| {
                let (r, s) = (self.r[k], self.s[k]);
                let [h, l, a_sum, b1_sum] = self.g1[k].map(G1Projective::from);
                let g_a = alpha + a_sum + delta1 * r;
                let g_b =
                    G2Projective::from(vk.beta_g2) + g2[k] + G2Projective::from(vk.delta_g2) * s;
                let g_c = a_sum * s + b1_sum * r + delta1 * (r * s) + alpha * s + beta1 * r + h + l;
                let mut aff = [blstrs::G1Affine::identity(); 2];
                G1Projective::batch_normalize(&[g_a, g_c], &mut aff);
                Proof {
                    a: aff[0],
                    b: g_b.to_affine(),
                    c: aff[1],
                }
            })
            .collect();
        let timings = ProverTimings {
            msm_g2: g2_time,
            finalize: t.elapsed(),
            ..self.timings
        };
        Ok((proofs, timings))
    }
}

/// Synthesises, starts and finalises proofs for a batch of circuits.
pub fn prove<C: Circuit<Scalar> + Send>(
    key: &ProvingKey,
    circuits: Vec<C>,
    rng: &mut (impl RngCore + ?Sized),
) -> Result<Vec<Proof>> {
    let synthesized = synthesize_batch(circuits)?;
    start(key, synthesized, rng)?.finalize()
}

impl ProvingKey {
    /// As [`ProvingKey::new`], taking the parameters by value (they are moved into an `Arc`; the
    /// queries themselves are already shared and are not copied).
    pub fn from_parameters(params: Parameters, backend: Arc<dyn Backend>) -> Result<Self> {
        Self::new(Arc::new(params), backend)
    }
}

/// Proves one circuit: synthesis, [`start`] and [`PendingProofs::finalize`] in one call, with r
/// and s drawn from `rng`.
///
/// Synthesis is the named pass ([`super::synthesis::synthesize_named`]): a witness that does not
/// satisfy the circuit is an [`Error::Unsatisfied`] naming the failing constraint by its
/// namespace path and annotation. [`prove`] and [`start`] use the fast pass instead.
pub fn prove_one<C: Circuit<Scalar>>(
    key: &ProvingKey,
    circuit: C,
    rng: &mut (impl RngCore + ?Sized),
) -> Result<Proof> {
    let synthesized = super::synthesis::synthesize_named(circuit)?;
    single(start(key, vec![synthesized], rng)?.finalize()?)
}

/// Proves a batch of circuits with explicit r and s per proof (`r[k]`, `s[k]` blind proof k):
/// synthesis, [`start_with_randomness`] and [`PendingProofs::finalize`] in one call. With the
/// same parameters, witness, r and s, the proof is byte-identical to bellperson's
/// `create_proof(circuit, &params, r, s)`. Synthesis is the named pass, as in [`prove_one`].
pub fn prove_with_randomness<C: Circuit<Scalar> + Send>(
    key: &ProvingKey,
    circuits: Vec<C>,
    r: Vec<Scalar>,
    s: Vec<Scalar>,
) -> Result<Vec<Proof>> {
    if r.len() != circuits.len() || s.len() != circuits.len() {
        return Err(Error::invalid(format!(
            "{} circuits but {} r and {} s values",
            circuits.len(),
            r.len(),
            s.len()
        )));
    }
    let synthesized = super::synthesis::synthesize_batch_named(circuits)?;
    start_with_randomness(key, synthesized, r, s)?.finalize()
}

/// Proves one circuit with explicit r and s, in one call (see [`prove_with_randomness`]).
pub fn prove_one_with_randomness<C: Circuit<Scalar>>(
    key: &ProvingKey,
    circuit: C,
    r: Scalar,
    s: Scalar,
) -> Result<Proof> {
    let synthesized = super::synthesis::synthesize_named(circuit)?;
    single(start_with_randomness(key, vec![synthesized], vec![r], vec![s])?.finalize()?)
}

fn single(mut proofs: Vec<Proof>) -> Result<Proof> {
    match (proofs.pop(), proofs.is_empty()) {
        (Some(p), true) => Ok(p),
        _ => Err(Error::Pipeline(
            "one circuit went in and not exactly one proof came out".into(),
        )),
    }
}

//! The Groth16 prover, split into `start` (device work) and `finalize` (join and combine).
//!
//! Groth 2016, §3.2, with bellperson's arrangement of the terms. For witness w, randomness r, s:
//! - A = α + Σ a_i·w_i + r·δ (G1)
//! - B = β + Σ b_i·w_i + s·δ (G2; the same sum in G1, B₁, is needed for C)
//! - C = Σ_aux l_j·w_j + Σ h_k·h_k(coefficients) + s·A' + r·B₁' + s·α + r·β + r·s·δ,
//!   where A' and B₁' are the bare query sums (the terms regroup to s·A + r·B₁ − r·s·δ).
//!
//! [`start`] validates shapes, launches the G2 MSM on a CPU thread (or keeps it for the backend,
//! see [`G2Policy`]), runs the whole G1 phase on the backend in one call
//! ([`crate::Backend::groth16_g1`]: the quotient h and the four G1 MSMs H, L, A', B₁' over the
//! resident bases of a [`ProvingKey`], with density jobs instead of filtered scalar copies), then,
//! when the G2 MSM belongs to the backend, runs it there, and returns [`PendingProofs`]. The
//! backend is then free for the next batch; [`PendingProofs::finalize`] waits for a G2 thread if
//! there is one and assembles the proofs.

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

pub use super::key::{G2Policy, ProvingKey, QueryLens};
use super::{
    host_msm,
    params::Parameters,
    proof::Proof,
    synthesis::{synthesize_batch, Synthesized},
};
use crate::{
    backend::{Backend, G1PhaseInput, ProofAssignment},
    host_buffer::HostVec,
    layout::{fr_slice, fr_slice_mut, g2_affine_slice, G1Jacobian},
    Error, Result,
};

/// Where the time of one `start`/`finalize` went.
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct ProverTimings {
    /// The device call: the quotient polynomial (NTTs) and the four G1 MSMs
    /// ([`crate::Backend::groth16_g1`]), and with the G2 MSM on the backend
    /// ([`ProverTimings::g2_on_backend`]) the G2 MSM too, in the same call
    /// ([`crate::Backend::groth16_g1_g2`]).
    pub g1_phase: Duration,
    /// The G2 MSM on CPU threads, overlapping the G1 phase (zero when it runs on the backend,
    /// inside [`ProverTimings::g1_phase`]).
    pub msm_g2: Duration,
    /// Whether the G2 MSM ran on the backend (in the call [`ProverTimings::g1_phase`] times).
    pub g2_on_backend: bool,
    /// Waiting in `finalize` for the G2 thread (if any), plus assembly.
    pub finalize: Duration,
    /// Host work before the G1 phase: laying each circuit's a, b, c into the batch's buffers
    /// (one slot of n elements a circuit, zero-padded; in place for a single circuit).
    pub batch_buffers: Duration,
    /// Host work after the device work: freeing the synthesised circuits' vectors (when the G2
    /// MSM does not run on a CPU thread that still reads them).
    pub release: Duration,
}

/// The G2 sums of a batch: still running on a CPU thread, or already computed by the backend.
enum G2Sums {
    Thread(JoinHandle<(Vec<G2Projective>, Duration)>),
    Done(Vec<G2Projective>),
}

/// Proofs whose device work is done and whose G2 MSM may still be running.
pub struct PendingProofs {
    params: Arc<Parameters>,
    r: Vec<Scalar>,
    s: Vec<Scalar>,
    /// Per proof: H, L, A', B₁' sums.
    g1: Vec<[G1Jacobian; 4]>,
    g2: G2Sums,
    timings: ProverTimings,
}

/// The scalars of the density-filtered B query, gathered for the host G2 MSM.
fn scalars_b(s: &Synthesized) -> Vec<Scalar> {
    let mut v = s.b_input_density.filter(&s.input_assignment);
    v.extend(s.b_aux_density.filter(&s.aux_assignment));
    v
}

/// Gets `key`'s backend ready to lend the host memory of batches of `count` proofs
/// ([`crate::backend::MemoryPool::reserve_host`]): each proof's a, b, c (the evaluation domain
/// each) and aux assignment, as pre-compiled synthesis asks for them, and for several proofs the
/// three buffers [`start`] lays them into. A device backend pins them now, once, instead of on
/// the critical path of the first batch (it lends a block only to a size asked for twice
/// otherwise, so a first batch would take fresh heap memory). For a caller that proves such
/// batches repeatedly; a one-off proof is better served by the heap.
pub fn reserve_batch(key: &ProvingKey, count: usize) -> Result<()> {
    let mut sizes = proofs_host_blocks(&key.lens(), count);
    if count > 1 {
        let domain = sizes[0];
        sizes.extend([domain.saturating_mul(count); 3]);
    }
    key.backend.reserve_host(&sizes)
}

/// The host blocks, in bytes, that `count` proofs on a key of `lens` take from its backend: for
/// each, a, b and c (the evaluation domain each, as pre-compiled synthesis allocates them) and
/// the aux assignment.
pub fn proofs_host_blocks(lens: &QueryLens, count: usize) -> Vec<usize> {
    let fr = std::mem::size_of::<Scalar>();
    let n = lens.domain_size.saturating_mul(fr);
    let one = [n, n, n, lens.num_aux.saturating_mul(fr)];
    (0..count).flat_map(|_| one).collect()
}

/// `parts` (each at most `n` long) laid out in slots of `n` elements, zero-padded, filled in
/// parallel, in `backend`'s host memory when it gives some; each part is freed once copied.
fn concat_padded(
    parts: Vec<HostVec<Scalar>>,
    n: usize,
    backend: &Arc<dyn Backend>,
) -> Result<HostVec<Scalar>> {
    if let Some((k, p)) = parts.iter().enumerate().find(|(_, p)| p.len() > n) {
        return Err(Error::invalid(format!(
            "circuit {k} has an evaluation vector of {} elements for a domain of {n}",
            p.len()
        )));
    }
    let total = n * parts.len();
    let mut out: HostVec<Scalar> = HostVec::with_capacity_in(total, Some(backend));
    if !out.is_backend_memory() {
        crate::page_advice::advise_huge(out.spare_capacity_mut());
    }
    out.spare_capacity_mut()[..total]
        .par_chunks_mut(n)
        .zip(parts.into_par_iter())
        .for_each(|(slot, part)| {
            let (head, tail) = slot.split_at_mut(part.len());
            for (d, s) in head.iter_mut().zip(part.iter()) {
                d.write(*s);
            }
            for d in tail {
                d.write(Scalar::ZERO);
            }
        });
    // SAFETY: every one of the `total` slots was written above (each chunk of n is covered by
    // its part, at most n long as checked first, and the zero padding).
    unsafe { out.set_len(total) };
    Ok(out)
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
            g2: G2Sums::Done(vec![]),
            timings: ProverTimings::default(),
        });
    }

    // The batch buffers: one circuit's evaluation vectors are used as they are (zero-padded to
    // n); for several, each circuit's vector is copied into its n-element slot of one buffer in
    // parallel (rayon, a task per circuit and vector: at 2^22 and 8 circuits that is 3 GB of fresh
    // memory, whose page faults and copies would take over a second on one thread). What remains
    // of each circuit (assignments, densities) is shared read-only with the G2 thread.
    let log_n = synthesized[0].log_domain();
    let n = 1usize << log_n;
    let t_buffers = Instant::now();
    let mut synthesized = synthesized;
    let (a, b, c) = if n_proofs == 1 {
        let syn = &mut synthesized[0];
        // In place when synthesis left room for the domain (pre-compiled synthesis does).
        let pad = |mut v: HostVec<Scalar>| {
            if v.len() > n {
                return Err(Error::invalid(format!(
                    "an evaluation vector of {} elements for a domain of {n}",
                    v.len()
                )));
            }
            v.resize_with_value(n, Scalar::ZERO);
            Ok(v)
        };
        (
            pad(std::mem::take(&mut syn.a))?,
            pad(std::mem::take(&mut syn.b))?,
            pad(std::mem::take(&mut syn.c))?,
        )
    } else {
        let take = |pick: fn(&mut Synthesized) -> &mut HostVec<Scalar>,
                    synthesized: &mut [Synthesized]| {
            let parts: Vec<HostVec<Scalar>> = synthesized
                .iter_mut()
                .map(|syn| std::mem::take(pick(syn)))
                .collect();
            concat_padded(parts, n, backend)
        };
        let a = take(|s| &mut s.a, &mut synthesized)?;
        let b = take(|s| &mut s.b, &mut synthesized)?;
        let c = take(|s| &mut s.c, &mut synthesized)?;
        (a, b, c)
    };
    let (mut a, mut b, mut c) = (a, b, c);
    let batch_buffers = t_buffers.elapsed();
    let rest = Arc::new(synthesized);

    // G2 MSM on CPU threads, overlapping all backend work, unless it belongs to the backend.
    let mut g2 = G2Sums::Done(Vec::new());
    if key.b_g2.is_none() {
        let b_g2 = params.b_g2.clone();
        let rest = rest.clone();
        let handle = std::thread::Builder::new()
            .name("bellows-g2-msm".into())
            .spawn(move || {
                let t = Instant::now();
                let out = rest
                    .iter()
                    .map(|syn| {
                        let sc = scalars_b(syn);
                        host_msm::msm_g2(g2_affine_slice(&b_g2), fr_slice(&sc)).into()
                    })
                    .collect();
                (out, t.elapsed())
            })
            .map_err(|e| Error::io("spawning the G2 MSM thread", e))?;
        g2 = G2Sums::Thread(handle);
    }

    // The G1 phase on the backend: h and the four G1 MSMs, densities as bitmaps.
    let assignments: Vec<ProofAssignment<'_>> = rest
        .iter()
        .map(|syn| ProofAssignment {
            inputs: fr_slice(&syn.input_assignment),
            aux: fr_slice(&syn.aux_assignment),
            a_aux_density: syn.a_aux_density.bits(),
            b_input_density: syn.b_input_density.bits(),
            b_aux_density: syn.b_aux_density.bits(),
        })
        .collect();
    // With the G2 MSM on the backend, one call does both (the backend reads the G2 scalars
    // where the G1 phase put them); otherwise the G1 phase alone, the G2 thread running beside.
    let t = Instant::now();
    let mut input = G1PhaseInput {
        a: fr_slice_mut(&mut a),
        b: fr_slice_mut(&mut b),
        c: fr_slice_mut(&mut c),
        log_n,
        proofs: &assignments,
        handles: key.handles,
    };
    let (g1, g2_sums) = match key.b_g2 {
        Some(b_g2) => {
            let (g1, g2) = backend.groth16_g1_g2(&mut input, b_g2)?;
            (g1, Some(g2))
        }
        None => (backend.groth16_g1(&mut input)?, None),
    };
    drop((a, b, c));
    let wrong = |call: &str, what: &str, got: usize| Error::Backend {
        name: backend.info().name,
        reason: format!("{call} returned {got} {what} for {n_proofs} proofs"),
    };
    if g1.len() != n_proofs {
        let call = if key.b_g2.is_some() {
            "groth16_g1_g2"
        } else {
            "groth16_g1"
        };
        return Err(wrong(call, "G1 results", g1.len()));
    }
    if let Some(v) = g2_sums {
        if v.len() != n_proofs {
            return Err(wrong("groth16_g1_g2", "G2 results", v.len()));
        }
        g2 = G2Sums::Done(v.into_iter().map(G2Projective::from).collect());
    }
    let g1_time = t.elapsed();
    drop(assignments);
    let t = Instant::now();
    drop(rest);
    let release = t.elapsed();

    Ok(PendingProofs {
        params,
        r,
        s,
        g1,
        g2,
        timings: ProverTimings {
            g1_phase: g1_time,
            g2_on_backend: key.b_g2.is_some(),
            batch_buffers,
            release,
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
        let (g2, g2_time) = match self.g2 {
            G2Sums::Thread(h) => h
                .join()
                .map_err(|_| Error::Pipeline("the G2 MSM thread panicked".into()))?,
            G2Sums::Done(v) => (v, self.timings.msm_g2),
        };
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

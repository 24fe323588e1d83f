//! Groth16 parameter generation: a real trusted setup for small circuits, and a fast
//! benchmark-only generator.
//!
//! [`generate_parameters`] is the setup of Groth 2016, §3.2, with the toxic waste explicit
//! ([`ToxicWaste`]) so that test vectors are reproducible. It computes exactly what bellperson
//! 0.27's `groth16::generate_parameters` computes for the same inputs (same constraint assembly,
//! same domain, same filtering of the a/b queries), so the files written are byte-identical.
//! Whoever knows the toxic waste can forge proofs: use it for tests and small private circuits,
//! never for a deployment where a multi-party ceremony is needed.
//!
//! [`generate_benchmark_parameters`] makes **benchmark-only** parameters: valid points of the
//! right shape for a circuit, drawn from a seed, with no trusted setup behind them. Proving with
//! them costs exactly what proving with real parameters costs, but
//! **proofs made with benchmark-only parameters do not verify**. They are recognised by their
//! `vk.alpha_g1` ([`benchmark_marker_g1`], see [`crate::groth16::ParamsKind`]).

#![allow(unsafe_code)]

use std::io::Write;
use std::sync::Arc;

use bellpepper_core::Circuit;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

use super::constraints::{CircuitShape, Column, ConstraintMatrices};
use super::fixed_base::FixedBaseTable;
use super::io::ParamsWriter;
use super::{Parameters, VerifyingKey};
use crate::{pce::Pce, Error, Result};

mod steps;
use steps::Steps;
pub use steps::{quiet, SetupStep, SETUP_STEPS};

/// Marker α of benchmark-only parameters: a fixed point nobody knows the discrete log of.
pub fn benchmark_marker_g1() -> blstrs::G1Affine {
    blstrs::G1Projective::hash_to_curve(
        b"bellows benchmark-only parameters: proofs made with them do not verify",
        b"BELLOWS-BENCH-MARKER-V1",
        &[],
    )
    .to_affine()
}

/// The secrets of a Groth16 setup. Whoever holds them can forge proofs: drop them after setup.
/// Dropping overwrites them with zeros ([`wipe`]); so does [`generate_parameters`] with every
/// secret-derived scalar it computes (powers of τ, Lagrange coefficients, query scalars).
#[derive(Clone)]
pub struct ToxicWaste {
    /// The evaluation point τ.
    pub tau: Scalar,
    /// α.
    pub alpha: Scalar,
    /// β.
    pub beta: Scalar,
    /// γ (must be non-zero).
    pub gamma: Scalar,
    /// δ (must be non-zero).
    pub delta: Scalar,
    /// The G1 generator the parameters are built on (must not be the identity).
    pub g1: G1Projective,
    /// The G2 generator the parameters are built on (must not be the identity).
    pub g2: G2Projective,
}

impl ToxicWaste {
    /// Draws fresh toxic waste, in bellperson's order (g1, g2, α, β, γ, δ, τ): the same RNG state
    /// gives the same parameters as bellperson's `generate_random_parameters`.
    pub fn random<R: RngCore + ?Sized>(rng: &mut R) -> Self {
        let g1 = G1Projective::random(&mut *rng);
        let g2 = G2Projective::random(&mut *rng);
        let alpha = Scalar::random(&mut *rng);
        let beta = Scalar::random(&mut *rng);
        let gamma = Scalar::random(&mut *rng);
        let delta = Scalar::random(&mut *rng);
        let tau = Scalar::random(&mut *rng);
        ToxicWaste {
            tau,
            alpha,
            beta,
            gamma,
            delta,
            g1,
            g2,
        }
    }
}

impl Drop for ToxicWaste {
    fn drop(&mut self) {
        for s in [
            &mut self.tau,
            &mut self.alpha,
            &mut self.beta,
            &mut self.gamma,
            &mut self.delta,
        ] {
            wipe(std::slice::from_mut(s));
        }
        // SAFETY: both are valid, aligned, exclusively borrowed fields; the identity is a valid
        // value of their types.
        unsafe {
            std::ptr::write_volatile(&mut self.g1, G1Projective::identity());
            std::ptr::write_volatile(&mut self.g2, G2Projective::identity());
        }
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// Overwrites secret scalars with zero through volatile writes, which the compiler may not drop
/// as dead stores even though the memory is freed right after. Best effort: copies the
/// optimiser kept in registers or spilled elsewhere are out of reach.
pub fn wipe(secrets: &mut [Scalar]) {
    for x in secrets.iter_mut() {
        // SAFETY: `x` is a valid, aligned, exclusive reference to an initialised Scalar, and
        // zero is a valid Scalar.
        unsafe { std::ptr::write_volatile(x, Scalar::ZERO) };
    }
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
}

/// Overwrites secret bytes with zero through volatile writes (see [`wipe`]).
pub(crate) fn wipe_bytes(secret: &mut [u8]) {
    for b in secret.iter_mut() {
        // SAFETY: `b` is a valid, aligned, exclusive reference to an initialised byte.
        unsafe { std::ptr::write_volatile(b, 0) };
    }
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
}

/// A vector of secret-derived scalars, wiped when dropped (on every path, errors included).
struct Secret(Vec<Scalar>);

impl std::ops::Deref for Secret {
    type Target = Vec<Scalar>;
    fn deref(&self) -> &Vec<Scalar> {
        &self.0
    }
}

impl std::ops::DerefMut for Secret {
    fn deref_mut(&mut self) -> &mut Vec<Scalar> {
        &mut self.0
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        wipe(&mut self.0);
    }
}

/// Generates parameters for `circuit` with fresh toxic waste from `rng`, then forgets the waste
/// (wiped from memory when dropped).
pub fn generate_random_parameters<C, R>(circuit: C, rng: &mut R) -> Result<Parameters>
where
    C: Circuit<Scalar>,
    R: RngCore + ?Sized,
{
    generate_parameters(circuit, &ToxicWaste::random(rng))
}

/// The Groth16 setup (Groth 2016, §3.2) of `circuit` with the given toxic waste.
///
/// With n the domain size and L_j the Lagrange basis of the n-th roots of unity, each variable k
/// gets u_k(τ) = Σ_j A_jk·L_j(τ) (and v_k, w_k from B and C); then
/// - `h[i] = g1·(τ^i·Z(τ)/δ)` for i < n − 1, Z(X) = X^n − 1;
/// - `ic[k] = g1·((β·u_k + α·v_k + w_k)/γ)` for inputs, `l[k] = g1·(…/δ)` for aux variables;
/// - `a = g1·u_k`, `b_g1 = g1·v_k`, `b_g2 = g2·v_k`, the identity points dropped.
///
/// The L_j(τ) come from an inverse FFT of (1, τ, …, τ^{n−1}). Errors: a circuit without
/// constraints, a domain over 2^32, an auxiliary variable in no constraint, γ or δ zero, a
/// generator at infinity, or τ a root of unity of the domain.
pub fn generate_parameters<C: Circuit<Scalar>>(
    circuit: C,
    waste: &ToxicWaste,
) -> Result<Parameters> {
    let steps = Steps::start(&quiet);
    let m = ConstraintMatrices::of(circuit)?;
    steps.lap("circuit synthesised into its matrices");
    let mut sink = Collect::default();
    run_setup(&Constraints::Matrices(m), waste, &mut sink, &steps)?;
    sink.into_parameters()
}

/// The setup of the circuit recorded in `pce` (see [`generate_parameters`]; the same
/// parameters, byte for byte), written section by section into `w` in bellperson's format as
/// each is computed, instead of held in memory: what a circuit of 2^27 constraints needs, whose
/// parameters alone fill half of a large host's memory. Each of [`SETUP_STEPS`] is handed to
/// `report` as it ends ([`quiet`]: nothing said). Returns the verifying key.
pub fn write_parameters_from_pce<W: Write>(
    pce: &Pce,
    waste: &ToxicWaste,
    w: W,
    report: &dyn Fn(&SetupStep),
) -> Result<VerifyingKey> {
    let steps = Steps::start(report);
    let mut sink = ParamsWriter::new(w);
    run_setup(&Constraints::Recording(pce), waste, &mut sink, &steps)?;
    sink.finish()
}

/// [`write_parameters_from_pce`] with fresh toxic waste from `rng`, forgotten afterwards.
pub fn write_random_parameters_from_pce<W: Write, R: RngCore + ?Sized>(
    pce: &Pce,
    rng: &mut R,
    w: W,
    report: &dyn Fn(&SetupStep),
) -> Result<VerifyingKey> {
    write_parameters_from_pce(pce, &ToxicWaste::random(rng), w, report)
}

/// The size in bytes of the parameters file the setup of `pce`'s circuit writes (bellperson's
/// format), known before the setup from the recording's counts and densities.
pub fn parameters_file_size(pce: &Pce) -> Result<u64> {
    let (n, _) = Constraints::Recording(pce).domain()?;
    let g1 = (n - 1) as u64
        + pce.num_aux() as u64
        + (pce.num_inputs() + pce.a_aux_density().total()) as u64
        + (pce.b_input_density().total() + pce.b_aux_density().total()) as u64;
    let g2 = (pce.b_input_density().total() + pce.b_aux_density().total()) as u64;
    Ok(super::io::VK_FIXED_BYTES as u64
        + 4
        + 96 * pce.num_inputs() as u64
        + 5 * 4
        + 96 * g1
        + 192 * g2)
}

/// Where a setup's constraints come from: a constraint assembly (column lists, for circuits of
/// moderate size and byte-identity tests) or a recording (bytes per non-zero, any size).
enum Constraints<'a> {
    Matrices(ConstraintMatrices),
    Recording(&'a Pce),
}

impl Constraints<'_> {
    /// (public inputs with the constant one, aux variables).
    fn counts(&self) -> (usize, usize) {
        match self {
            Constraints::Matrices(m) => (m.num_inputs, m.num_aux),
            Constraints::Recording(p) => (p.num_inputs(), p.num_aux()),
        }
    }

    fn domain(&self) -> Result<(usize, u32)> {
        match self {
            Constraints::Matrices(m) => m.domain(),
            Constraints::Recording(p) => super::constraints::domain_size(
                p.num_constraints(),
                p.num_constraints().saturating_sub(p.num_inputs()),
            ),
        }
    }

    /// u, v, w at τ for every variable (inputs, then aux) from the Lagrange basis at τ.
    fn evaluate(&self, lagrange: &[Scalar]) -> Result<[Secret; 3]> {
        match self {
            Constraints::Matrices(m) => {
                let eval = |ins: &[Column], aux: &[Column]| -> Secret {
                    Secret(
                        ins.par_iter()
                            .chain(aux.par_iter())
                            .map(|col| col.iter().map(|(c, row)| *c * lagrange[*row]).sum())
                            .collect(),
                    )
                };
                Ok([
                    eval(&m.at_inputs, &m.at_aux),
                    eval(&m.bt_inputs, &m.bt_aux),
                    eval(&m.ct_inputs, &m.ct_aux),
                ])
            }
            Constraints::Recording(p) => {
                let [u, v, w] = p.transposed_products(&lagrange[..p.num_constraints()])?;
                Ok([Secret(u), Secret(v), Secret(w)])
            }
        }
    }
}

/// Where a setup puts its results, in the order of bellperson's file: the verifying key, then
/// h, l, a, b_g1 (G1) and b_g2 (G2).
trait Sink {
    fn verifying_key(&mut self, vk: VerifyingKey) -> Result<()>;
    fn g1(&mut self, name: &'static str, points: Vec<G1Affine>) -> Result<()>;
    fn g2(&mut self, name: &'static str, points: Vec<G2Affine>) -> Result<()>;
}

/// Every result kept in memory, as [`Parameters`].
#[derive(Default)]
struct Collect {
    vk: Option<VerifyingKey>,
    g1: Vec<Vec<G1Affine>>,
    b_g2: Option<Vec<G2Affine>>,
}

impl Collect {
    fn into_parameters(self) -> Result<Parameters> {
        let incomplete = || Error::invalid("internal error: the setup did not give every query");
        let vk = self.vk.ok_or_else(incomplete)?;
        let [h, l, a, b_g1]: [Vec<G1Affine>; 4] = self.g1.try_into().map_err(|_| incomplete())?;
        Ok(Parameters {
            vk,
            h: Arc::new(h),
            l: Arc::new(l),
            a: Arc::new(a),
            b_g1: Arc::new(b_g1),
            b_g2: Arc::new(self.b_g2.ok_or_else(incomplete)?),
        })
    }
}

impl Sink for Collect {
    fn verifying_key(&mut self, vk: VerifyingKey) -> Result<()> {
        self.vk = Some(vk);
        Ok(())
    }
    fn g1(&mut self, _: &'static str, points: Vec<G1Affine>) -> Result<()> {
        self.g1.push(points);
        Ok(())
    }
    fn g2(&mut self, _: &'static str, points: Vec<G2Affine>) -> Result<()> {
        self.b_g2 = Some(points);
        Ok(())
    }
}

impl<W: Write> Sink for ParamsWriter<W> {
    fn verifying_key(&mut self, vk: VerifyingKey) -> Result<()> {
        self.write_verifying_key(vk)
    }
    fn g1(&mut self, name: &'static str, points: Vec<G1Affine>) -> Result<()> {
        self.write_g1(name, &points)
    }
    fn g2(&mut self, name: &'static str, points: Vec<G2Affine>) -> Result<()> {
        self.write_g2(name, &points)
    }
}

/// The setup itself (see [`generate_parameters`]), results handed to `sink` as they are made,
/// each dropped before the next is computed.
fn run_setup(
    constraints: &Constraints<'_>,
    waste: &ToxicWaste,
    sink: &mut dyn Sink,
    steps: &Steps<'_>,
) -> Result<()> {
    let (n, log_n) = constraints.domain()?;
    if bool::from(waste.g1.is_identity()) || bool::from(waste.g2.is_identity()) {
        return Err(Error::invalid(
            "setup: a generator (g1 or g2) is the point at infinity",
        ));
    }
    // γ⁻¹, δ⁻¹, Z(τ) and Z(τ)/δ: secret, wiped on every way out.
    let mut k = Secret(vec![Scalar::ZERO; 4]);
    const GAMMA_INV: usize = 0;
    const DELTA_INV: usize = 1;
    const Z: usize = 2;
    const COEFF: usize = 3;
    k[GAMMA_INV] = Option::<Scalar>::from(waste.gamma.invert())
        .ok_or_else(|| Error::invalid("setup: γ is zero"))?;
    k[DELTA_INV] = Option::<Scalar>::from(waste.delta.invert())
        .ok_or_else(|| Error::invalid("setup: δ is zero"))?;

    let tau = waste.tau;
    let powers = Secret(powers_of(tau, n));
    k[Z] = powers[n - 1] * tau - Scalar::ONE;
    if bool::from(k[Z].is_zero()) {
        return Err(Error::invalid(format!(
            "setup: τ is an n-th root of unity (n = {n}), so Z(τ) = 0"
        )));
    }
    let g1 = waste.g1;
    let g2 = waste.g2;
    let (num_inputs, num_aux) = constraints.counts();
    let vars = num_inputs + num_aux;
    // Window tables sized for every product of the setup (only speed depends on the sizing).
    let g1_table = FixedBaseTable::new(g1, (n - 1) + 3 * vars, normalize_g1_into);
    let g2_table = FixedBaseTable::new(g2, vars, normalize_g2_into);
    steps.end("window tables");
    let mul_g1 = |scalars: &[Scalar]| -> Vec<G1Affine> { g1_table.mul_many(scalars) };

    k[COEFF] = k[Z] * k[DELTA_INV];
    let coeff = k[COEFF];
    // The h scalars before the inverse FFT turns the powers into the Lagrange basis in place;
    // h itself after the verifying key, the first thing the file holds.
    let h_scalars = Secret(powers[..n - 1].par_iter().map(|p| *p * coeff).collect());
    let mut lagrange = powers;
    inverse_fft(&mut lagrange, log_n);
    steps.end("Lagrange coefficients");
    let [u, v, w] = constraints.evaluate(&lagrange)?;
    drop(lagrange);
    steps.end("u, v, w at τ");
    let ext = |range: std::ops::Range<usize>, inv: Scalar| -> Secret {
        Secret(
            (&u[range.clone()], &v[range.clone()], &w[range])
                .into_par_iter()
                .map(|(u, v, w)| (waste.beta * u + waste.alpha * v + w) * inv)
                .collect(),
        )
    };
    let ic = mul_g1(&ext(0..num_inputs, k[GAMMA_INV]));
    let (g1a, g2a) = (g1.to_affine(), g2.to_affine());
    sink.verifying_key(VerifyingKey {
        alpha_g1: (g1a * waste.alpha).to_affine(),
        beta_g1: (g1a * waste.beta).to_affine(),
        beta_g2: (g2a * waste.beta).to_affine(),
        gamma_g2: (g2a * waste.gamma).to_affine(),
        delta_g1: (g1a * waste.delta).to_affine(),
        delta_g2: (g2a * waste.delta).to_affine(),
        ic,
    })?;
    sink.g1("h", mul_g1(&h_scalars))?;
    drop(h_scalars);
    steps.end("h query");
    let l = mul_g1(&ext(num_inputs..vars, k[DELTA_INV]));
    if let Some(j) = l.iter().position(|p| bool::from(p.is_identity())) {
        return Err(Error::Synthesis(format!(
            "auxiliary variable {j} is unconstrained (it occurs in no constraint)"
        )));
    }
    sink.g1("l", l)?;
    steps.end("ic and l queries");
    drop(w);
    sink.g1("a", drop_identity(mul_g1(&u)))?;
    drop(u);
    sink.g1("b_g1", drop_identity(mul_g1(&v)))?;
    steps.end("a and b_g1 queries");
    sink.g2("b_g2", drop_identity(g2_table.mul_many(&v)))?;
    steps.end("b_g2 query");
    drop(v);
    drop(k);
    Ok(())
}

fn drop_identity<P: PrimeCurveAffine>(points: Vec<P>) -> Vec<P> {
    points
        .into_iter()
        .filter(|p| !bool::from(p.is_identity()))
        .collect()
}

/// (1, x, x², …, x^{n−1}), computed in parallel chunks.
fn powers_of(x: Scalar, n: usize) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 12;
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut p = x.pow_vartime([(c * CHUNK) as u64]);
            for o in chunk {
                *o = p;
                p *= x;
            }
        });
    out
}

/// In-place inverse DFT over the 2^log_n-th roots of unity: radix-2 Cooley–Tukey (Cooley and
/// Tukey 1965) with ω⁻¹, then scaling by n⁻¹. ω is Fr's 2^32-th root of unity squared down to
/// order n, the same ω bellperson uses. Stages run on rayon: small butterfly groups block by
/// block, large ones in runs of [`FFT_RUN`] butterflies whose first twiddle is a power of ω⁻¹.
fn inverse_fft(a: &mut [Scalar], log_n: u32) {
    let n = a.len();
    debug_assert_eq!(n, 1usize << log_n);
    let omega = crate::backend::ntt::omega(log_n);
    let omega_inv = omega.invert().expect("a root of unity is invertible");
    for i in 0..n {
        let j = if log_n == 0 {
            0
        } else {
            i.reverse_bits() >> (usize::BITS - log_n)
        };
        if i < j {
            a.swap(i, j);
        }
    }
    let mut half = 1;
    while half < n {
        let w_len = omega_inv.pow_vartime([(n / (2 * half)) as u64]);
        // Butterflies k..k+len of one group, the twiddle starting at w.
        let run = |lo: &mut [Scalar], hi: &mut [Scalar], mut w: Scalar| {
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let t = *y * w;
                *y = *x - t;
                *x += t;
                w *= w_len;
            }
        };
        if half < FFT_RUN {
            a.par_chunks_mut(2 * half).for_each(|group| {
                let (lo, hi) = group.split_at_mut(half);
                run(lo, hi, Scalar::ONE);
            });
        } else {
            for group in a.chunks_mut(2 * half) {
                let (lo, hi) = group.split_at_mut(half);
                lo.par_chunks_mut(FFT_RUN)
                    .zip(hi.par_chunks_mut(FFT_RUN))
                    .enumerate()
                    .for_each(|(c, (lo, hi))| {
                        run(lo, hi, w_len.pow_vartime([(c * FFT_RUN) as u64]))
                    });
            }
        }
        half *= 2;
    }
    let n_inv = Scalar::from(n as u64)
        .invert()
        .expect("n < r is invertible");
    a.par_iter_mut().for_each(|x| *x *= n_inv);
}

/// Butterflies per parallel run in the large stages of [`inverse_fft`].
const FFT_RUN: usize = 1 << 12;

/// Points per batch normalisation (one field inversion each).
#[cfg(test)]
const NORMALIZE_CHUNK: usize = 1 << 12;

macro_rules! normalize_impl {
    ($name:ident, $into:ident, $proj:ty, $aff:ty, $blst_p:ty, $blst_aff:ty, $to_affine:path) => {
        /// Jacobian → affine for `src` into `dst` (equal lengths) on this thread, with one field
        /// inversion per 1536 points (Montgomery's trick, in blst). Identity points become the
        /// all-zero affine identity.
        fn $into(src: &[$proj], dst: &mut [$aff]) {
            assert_eq!(src.len(), dst.len(), "normalisation: length mismatch");
            if src.is_empty() {
                return;
            }
            // blst walks a contiguous array when the pointer list is (first, NULL).
            let list: [*const $blst_p; 2] = [src.as_ptr().cast::<$blst_p>(), std::ptr::null()];
            // SAFETY: blstrs' projective and affine types are `#[repr(transparent)]` over blst's
            // (sizes and alignment asserted in `crate::layout`); `src` holds `src.len()`
            // initialised points and `dst` as many writable slots (asserted above); `list`
            // outlives the call.
            unsafe {
                $to_affine(
                    dst.as_mut_ptr().cast::<$blst_aff>(),
                    list.as_ptr(),
                    src.len(),
                )
            };
        }

        /// Jacobian → affine for many points, chunks on rayon threads.
        #[cfg(test)]
        fn $name(points: &[$proj]) -> Vec<$aff> {
            let mut out = vec![<$aff>::identity(); points.len()];
            out.par_chunks_mut(NORMALIZE_CHUNK)
                .zip(points.par_chunks(NORMALIZE_CHUNK))
                .for_each(|(dst, src)| $into(src, dst));
            out
        }
    };
}
normalize_impl!(
    normalize_g1,
    normalize_g1_into,
    G1Projective,
    G1Affine,
    blst::blst_p1,
    blst::blst_p1_affine,
    blst::blst_p1s_to_affine
);
normalize_impl!(
    normalize_g2,
    normalize_g2_into,
    G2Projective,
    G2Affine,
    blst::blst_p2,
    blst::blst_p2_affine,
    blst::blst_p2s_to_affine
);

/// **Benchmark-only** parameters for `circuit`: exactly the shape a real setup would give
/// (h: n − 1 points, l: one per aux variable, ic: one per input, a/b_g1/b_g2: the variables that
/// occur in A / B), every point a valid subgroup point, and `vk.alpha_g1` =
/// [`benchmark_marker_g1`].
///
/// **No trusted setup stands behind these points: proofs made with them do not verify.** They
/// exist so that benchmarks at 2^20 constraints and above do not wait for a real setup. The same
/// `seed` gives the same parameters on every machine and thread count.
///
/// Cost: the circuit runs once in a constraint system that only counts; each section is then
/// generated in chunks that start at a random multiple of the generator and walk by adding a
/// fixed random point (one mixed addition per point), followed by one batch normalisation per
/// chunk. No per-point scalar multiplication.
pub fn generate_benchmark_parameters<C: Circuit<Scalar>>(
    circuit: C,
    seed: u64,
) -> Result<Parameters> {
    let shape = CircuitShape::of(circuit)?;
    let (n, _) = shape.domain()?;
    tracing::warn!(
        "generating benchmark-only parameters (2^{} domain): proofs made with them do not verify",
        n.trailing_zeros()
    );
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let g1 = |rng: &mut ChaCha20Rng| (G1Affine::generator() * Scalar::random(rng)).to_affine();
    let g2 = |rng: &mut ChaCha20Rng| (G2Affine::generator() * Scalar::random(rng)).to_affine();
    let (beta_g1, beta_g2) = (g1(&mut rng), g2(&mut rng));
    let gamma_g2 = g2(&mut rng);
    let (delta_g1, delta_g2) = (g1(&mut rng), g2(&mut rng));
    let ic = walk(shape.num_inputs, &mut rng, normalize_g1_into);
    let h = walk(n - 1, &mut rng, normalize_g1_into);
    let l = walk(shape.num_aux, &mut rng, normalize_g1_into);
    let a = walk(shape.a_query_len(), &mut rng, normalize_g1_into);
    let b_g1 = walk(shape.b_query_len(), &mut rng, normalize_g1_into);
    let b_g2 = walk(shape.b_query_len(), &mut rng, normalize_g2_into);
    Ok(Parameters {
        vk: VerifyingKey {
            alpha_g1: benchmark_marker_g1(),
            beta_g1,
            beta_g2,
            gamma_g2,
            delta_g1,
            delta_g2,
            ic,
        },
        h: Arc::new(h),
        l: Arc::new(l),
        a: Arc::new(a),
        b_g1: Arc::new(b_g1),
        b_g2: Arc::new(b_g2),
    })
}

/// Points per walk chunk (one scalar multiplication and one inversion per chunk).
const WALK_CHUNK: usize = 1 << 13;

/// `len` pseudo-random subgroup points: chunk c is s_c·G + k·Q for k = 0, 1, …, with Q fixed per
/// call and s_c from a ChaCha20 stream keyed by `rng` and numbered c (independent of threads).
fn walk<G>(
    len: usize,
    rng: &mut ChaCha20Rng,
    normalize_into: fn(&[G], &mut [G::AffineRepr]),
) -> Vec<G::AffineRepr>
where
    G: Curve<Scalar = Scalar> + Send + Sync,
    G::AffineRepr: Copy + Send + Sync,
{
    let mut key = [0u8; 32];
    rng.fill_bytes(&mut key);
    let step = (G::generator() * Scalar::random(&mut *rng)).to_affine();
    let mut out = vec![G::identity().to_affine(); len];
    out.par_chunks_mut(WALK_CHUNK)
        .enumerate()
        .for_each(|(c, dst)| {
            let mut chunk_rng = ChaCha20Rng::from_seed(key);
            chunk_rng.set_stream(c as u64);
            let mut acc = G::generator() * Scalar::random(&mut chunk_rng);
            let mut pts = Vec::with_capacity(dst.len());
            for _ in 0..dst.len() {
                pts.push(acc);
                acc += step;
            }
            normalize_into(&pts, dst);
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The streamed setup from a recording writes exactly the file of the in-memory setup from
    /// the constraint assembly, for circuits with and without bits, inputs shared across rows,
    /// and a file size predicted before the setup.
    #[test]
    fn setup_from_a_recording_writes_the_same_file() {
        use crate::circuits::synthetic::SyntheticCircuit;
        for (log, bits) in [(6u32, 0u8), (10, 90), (13, 50)] {
            let mut rng = ChaCha20Rng::seed_from_u64(u64::from(log));
            let waste = ToxicWaste::random(&mut rng);
            let circuit = || SyntheticCircuit::new(log, bits).unwrap();
            let params = generate_parameters(circuit(), &waste).unwrap();
            let mut expect = Vec::new();
            super::super::io::write_parameters(&params, &mut expect).unwrap();
            let pce = Pce::record(circuit(), "setup-test").unwrap();
            let mut got = Vec::new();
            let vk = write_parameters_from_pce(&pce, &waste, &mut got, &quiet).unwrap();
            assert!(got == expect, "2^{log}, {bits} % bits: files differ");
            assert_eq!(vk, params.vk);
            assert_eq!(parameters_file_size(&pce).unwrap(), got.len() as u64);
        }
    }

    /// A writer refuses sections out of the file's order.
    #[test]
    fn parameter_sections_go_in_the_files_order() {
        let mut w = ParamsWriter::new(Vec::new());
        assert!(w.write_g1("h", &[]).is_err());
        let vk = VerifyingKey {
            alpha_g1: G1Affine::generator(),
            beta_g1: G1Affine::generator(),
            beta_g2: G2Affine::generator(),
            gamma_g2: G2Affine::generator(),
            delta_g1: G1Affine::generator(),
            delta_g2: G2Affine::generator(),
            ic: vec![],
        };
        w.write_verifying_key(vk).unwrap();
        assert!(w.write_g1("l", &[]).is_err());
        for name in ["h", "l", "a", "b_g1"] {
            w.write_g1(name, &[]).unwrap();
        }
        w.write_g2("b_g2", &[]).unwrap();
        assert!(w.write_g2("b_g2", &[]).is_err());
        w.finish().unwrap();
    }

    /// The inverse FFT of the powers of τ equals the closed form of the Lagrange basis at τ:
    /// L_i(τ) = ω^i·(τ^n − 1) / (n·(τ − ω^i)).
    #[test]
    fn inverse_fft_gives_lagrange_coefficients() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for log_n in [0u32, 1, 2, 5, 8, 14] {
            let n = 1usize << log_n;
            let tau = Scalar::random(&mut rng);
            let mut l = powers_of(tau, n);
            inverse_fft(&mut l, log_n);
            let omega = crate::backend::ntt::omega(log_n);
            let z = tau.pow_vartime([n as u64]) - Scalar::ONE;
            let n_s = Scalar::from(n as u64);
            let mut w = Scalar::ONE;
            for (i, li) in l.iter().enumerate() {
                let expect = w * z * (n_s * (tau - w)).invert().unwrap();
                assert_eq!(*li, expect, "n = {n}, i = {i}");
                w *= omega;
            }
        }
    }

    #[test]
    fn toxic_waste_is_wiped_when_dropped() {
        let mut w =
            std::mem::ManuallyDrop::new(ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(3)));
        assert_ne!(w.tau, Scalar::ZERO);
        // SAFETY: `w` is initialised and dropped exactly once here; its memory stays allocated
        // (ManuallyDrop), and its fields are plain values, valid to read after the drop wrote
        // zeros into them.
        unsafe { std::ptr::drop_in_place(&mut *w) };
        for s in [w.tau, w.alpha, w.beta, w.gamma, w.delta] {
            assert_eq!(s, Scalar::ZERO);
        }
        assert!(bool::from(w.g1.is_identity()) && bool::from(w.g2.is_identity()));
        let mut v = vec![Scalar::ONE; 5];
        wipe(&mut v);
        assert!(v.iter().all(|s| bool::from(s.is_zero())));
    }

    #[test]
    fn powers_cross_chunk_boundaries() {
        let x = Scalar::from(3u64);
        let p = powers_of(x, 10_000);
        assert_eq!(p[0], Scalar::ONE);
        assert_eq!(p[4096], x.pow_vartime([4096]));
        assert_eq!(p[9999], x.pow_vartime([9999]));
    }

    #[test]
    fn batch_normalization_matches_to_affine() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let mut pts: Vec<G1Projective> = (0..NORMALIZE_CHUNK + 3)
            .map(|_| G1Projective::random(&mut rng))
            .collect();
        pts[5] = G1Projective::identity();
        let aff = normalize_g1(&pts);
        for (p, a) in pts.iter().zip(&aff) {
            assert_eq!(p.to_affine(), *a);
        }
        let pts2: Vec<G2Projective> = (0..9).map(|_| G2Projective::random(&mut rng)).collect();
        let aff2 = normalize_g2(&pts2);
        for (p, a) in pts2.iter().zip(&aff2) {
            assert_eq!(p.to_affine(), *a);
        }
    }
}

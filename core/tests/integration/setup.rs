//! Setup: our trusted setup equals bellperson 0.27's byte for byte (the interop anchor), files
//! cross between the two implementations both ways, and benchmark-only parameters have exactly
//! the shape of real ones.

use bellows_core::groth16::{
    constraints::CircuitShape,
    io::{self, PointCheck},
    setup::{
        benchmark_marker_g1, generate_benchmark_parameters, generate_parameters,
        generate_random_parameters, ToxicWaste,
    },
    Parameters, ParamsKind,
};
use bellows_core::Error;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use ff::Field;
use group::Group;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

type BpParams = bellperson::groth16::Parameters<Bls12>;

/// A chain x_{i+1} = x_i·(x_i + 1) plus constraints that cover every density case: an input only
/// in C (y), an input in B (k), an aux variable only in C (c), one only in B (d), a bit
/// constraint, and an A combination whose coefficient of c cancels to zero.
/// Constraints: rounds + 6, inputs 3 (one, y, k).
#[derive(Clone)]
struct DensityCircuit {
    x: Option<Scalar>,
    rounds: usize,
}

fn val(v: Option<Scalar>) -> Result<Scalar, SynthesisError> {
    v.ok_or(SynthesisError::AssignmentMissing)
}

impl Circuit<Scalar> for DensityCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let xv = self.x;
        let x = cs.alloc(|| "x", || val(xv))?;
        let (mut cur, mut cv) = (x, xv);
        for i in 0..self.rounds {
            let (var, round) = (format!("x{i}"), format!("r{i}"));
            let nv = cv.map(|v| v * (v + Scalar::ONE));
            let next = cs.alloc(|| var, || val(nv))?;
            cs.enforce(
                || round,
                |lc| lc + cur,
                |lc| lc + cur + CS::one(),
                |lc| lc + next,
            );
            (cur, cv) = (next, nv);
        }
        let y = cs.alloc_input(|| "y", || val(cv))?;
        cs.enforce(|| "y", |lc| lc + cur, |lc| lc + CS::one(), |lc| lc + y);
        let k = cs.alloc_input(|| "k", || val(xv.map(|v| v + Scalar::ONE)))?;
        cs.enforce(
            || "k",
            |lc| lc + CS::one(),
            |lc| lc + k,
            |lc| lc + x + CS::one(),
        );
        let b = cs.alloc(|| "b", || Ok(Scalar::ONE))?;
        cs.enforce(|| "bit", |lc| lc + b, |lc| lc + CS::one() - b, |lc| lc);
        let c = cs.alloc(|| "c", || val(xv.map(|v| v.square())))?;
        cs.enforce(|| "c", |lc| lc + x, |lc| lc + x, |lc| lc + c);
        let d = cs.alloc(|| "d", || Ok(Scalar::ONE))?;
        cs.enforce(
            || "d",
            |lc| lc + CS::one(),
            |lc| lc + d,
            |lc| lc + CS::one(),
        );
        cs.enforce(
            || "cancel",
            |lc| lc + x + c - c,
            |lc| lc + CS::one(),
            |lc| lc + x,
        );
        Ok(())
    }
}

fn blank(rounds: usize) -> DensityCircuit {
    DensityCircuit { x: None, rounds }
}

fn waste(seed: u64) -> ToxicWaste {
    ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(seed))
}

fn bytes_of(p: &Parameters) -> Vec<u8> {
    let mut v = Vec::new();
    io::write_parameters(p, &mut v).unwrap();
    v
}

fn bp_bytes(p: &BpParams) -> Vec<u8> {
    let mut v = Vec::new();
    p.write(&mut v).unwrap();
    v
}

fn bellperson_setup(rounds: usize, w: &ToxicWaste) -> BpParams {
    bellperson::groth16::generate_parameters::<Bls12, _>(
        blank(rounds),
        w.g1,
        w.g2,
        w.alpha,
        w.beta,
        w.gamma,
        w.delta,
        w.tau,
    )
    .expect("bellperson setup")
}

/// The interop anchor: same circuit, same toxic waste ⇒ byte-identical parameter files.
/// Sizes: 16 constraints (exactly a power of two), 17 (just over) and 109.
#[test]
fn setup_is_byte_identical_to_bellperson() {
    for (rounds, seed) in [(7usize, 1u64), (8, 2), (100, 3)] {
        let w = waste(seed);
        let ours = generate_parameters(blank(rounds), &w).unwrap();
        let theirs = bellperson_setup(rounds, &w);
        let (a, b) = (bytes_of(&ours), bp_bytes(&theirs));
        assert_eq!(a.len(), b.len(), "rounds {rounds}: file sizes");
        assert!(a == b, "rounds {rounds}: parameter files differ");
        let n = (rounds + 9).next_power_of_two();
        assert_eq!(ours.domain_size(), n);
        assert_eq!(ours.kind(), ParamsKind::Trusted);
    }
}

/// The same RNG state gives the same random parameters as bellperson (same draw order).
#[test]
fn random_setup_matches_bellperson_for_the_same_rng() {
    let ours = generate_random_parameters(blank(5), &mut ChaCha20Rng::seed_from_u64(9)).unwrap();
    let theirs = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(
        blank(5),
        &mut ChaCha20Rng::seed_from_u64(9),
    )
    .unwrap();
    assert!(bytes_of(&ours) == bp_bytes(&theirs));
}

/// bellperson's file is read by us (both check modes) and re-written byte for byte; ours is read
/// by bellperson's checked reader and equals its own parameters.
#[test]
fn parameter_files_cross_both_ways() {
    let w = waste(4);
    let theirs = bellperson_setup(20, &w);
    let file = bp_bytes(&theirs);
    for check in [PointCheck::Full, PointCheck::CurveOnly] {
        let read = io::parameters_from_bytes(&file, check).unwrap();
        assert_eq!(read.vk.ic, theirs.vk.ic);
        assert_eq!(*read.h, *theirs.h);
        assert_eq!(*read.b_g2, *theirs.b_g2);
        assert!(bytes_of(&read) == file);
    }
    let ours = generate_parameters(blank(20), &w).unwrap();
    let back = BpParams::read(&bytes_of(&ours)[..], true).expect("bellperson reads our file");
    assert!(back == theirs);

    // Verifying-key files too.
    let mut vk_file = Vec::new();
    theirs.vk.write(&mut vk_file).unwrap();
    let vk = io::verifying_key_from_bytes(&vk_file, PointCheck::Full).unwrap();
    assert_eq!(vk, ours.vk);
    let mut ours_vk_file = Vec::new();
    io::write_verifying_key(&ours.vk, &mut ours_vk_file).unwrap();
    assert!(ours_vk_file == vk_file);
}

/// Parameters from our setup prove and verify in bellperson; a wrong input is rejected.
#[test]
fn our_setup_gives_working_parameters() {
    let w = waste(5);
    let ours = generate_parameters(blank(10), &w).unwrap();
    let bp = BpParams::read(&bytes_of(&ours)[..], true).unwrap();
    let x = Scalar::from(3u64);
    let circuit = DensityCircuit {
        x: Some(x),
        rounds: 10,
    };
    let mut y = x;
    for _ in 0..10 {
        y *= y + Scalar::ONE;
    }
    let proof =
        bellperson::groth16::create_proof(circuit, &bp, Scalar::from(11u64), Scalar::from(13u64))
            .unwrap();
    let pvk = bellperson::groth16::prepare_verifying_key(&bp.vk);
    let inputs = [y, x + Scalar::ONE];
    assert!(bellperson::groth16::verify_proof(&pvk, &proof, &inputs).unwrap());
    assert!(!bellperson::groth16::verify_proof(&pvk, &proof, &[y, x]).unwrap());
}

fn lens(p: &Parameters) -> [usize; 6] {
    [
        p.vk.ic.len(),
        p.h.len(),
        p.l.len(),
        p.a.len(),
        p.b_g1.len(),
        p.b_g2.len(),
    ]
}

/// Benchmark-only parameters have exactly the shape of a real setup's, valid subgroup points,
/// the marker α, and are a deterministic function of the seed.
#[test]
fn benchmark_parameters_have_the_real_shape() {
    for rounds in [7usize, 8, 100] {
        let real = generate_parameters(blank(rounds), &waste(6)).unwrap();
        let bench = generate_benchmark_parameters(blank(rounds), 42).unwrap();
        assert_eq!(lens(&bench), lens(&real), "rounds {rounds}");
        assert_eq!(bench.kind(), ParamsKind::BenchmarkOnly);
        assert_eq!(bench.vk.alpha_g1, benchmark_marker_g1());
        let file = bytes_of(&bench);
        let read =
            io::parameters_from_bytes(&file, PointCheck::Full).expect("valid subgroup points");
        assert_eq!(read.vk.kind(), ParamsKind::BenchmarkOnly);
        assert!(bytes_of(&generate_benchmark_parameters(blank(rounds), 42).unwrap()) == file);
        assert!(bytes_of(&generate_benchmark_parameters(blank(rounds), 43).unwrap()) != file);
    }
    // The density counts themselves, for rounds = 7: inputs one, y, k; aux x, x0..x6, b, c, d.
    let shape = CircuitShape::of(blank(7)).unwrap();
    assert_eq!(
        (shape.num_inputs, shape.num_aux, shape.num_constraints),
        (3, 11, 16)
    );
    // A: every input; aux x, x0..x6, b (c's coefficient cancels, d is only in B).
    assert_eq!(shape.a_query_len(), 3 + 9);
    // B: inputs one, k; aux x, x0..x5, b, d.
    assert_eq!(shape.b_query_len(), 2 + 9);
}

/// Benchmark-only parameters never yield a verifying proof (bellperson's prover and verifier).
#[test]
fn benchmark_parameters_do_not_verify() {
    let bench = generate_benchmark_parameters(blank(4), 1).unwrap();
    let bp = BpParams::read(&bytes_of(&bench)[..], true).unwrap();
    let x = Scalar::from(2u64);
    let mut y = x;
    for _ in 0..4 {
        y *= y + Scalar::ONE;
    }
    let proof = bellperson::groth16::create_proof(
        DensityCircuit {
            x: Some(x),
            rounds: 4,
        },
        &bp,
        Scalar::from(5u64),
        Scalar::from(6u64),
    )
    .unwrap();
    let pvk = bellperson::groth16::prepare_verifying_key(&bp.vk);
    assert!(!bellperson::groth16::verify_proof(&pvk, &proof, &[y, x + Scalar::ONE]).unwrap());
}

#[derive(Clone)]
struct NoConstraints;
impl Circuit<Scalar> for NoConstraints {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        cs.alloc_input(|| "x", || Ok(Scalar::ONE))?;
        Ok(())
    }
}

#[derive(Clone)]
struct Unconstrained;
impl Circuit<Scalar> for Unconstrained {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let a = cs.alloc(|| "a", || Ok(Scalar::ONE))?;
        cs.alloc(|| "free", || Ok(Scalar::ONE))?;
        cs.enforce(|| "a", |lc| lc + a, |lc| lc + a, |lc| lc + a);
        Ok(())
    }
}

/// Refers to an aux variable it never allocated (bellperson would panic on an index).
#[derive(Clone)]
struct Dangling;
impl Circuit<Scalar> for Dangling {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let ghost = bellpepper_core::Variable::new_unchecked(bellpepper_core::Index::Aux(99));
        cs.enforce(|| "ghost", |lc| lc + ghost, |lc| lc + CS::one(), |lc| lc);
        Ok(())
    }
}

#[derive(Clone)]
struct Failing;
impl Circuit<Scalar> for Failing {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, _: &mut CS) -> Result<(), SynthesisError> {
        Err(SynthesisError::Unsatisfiable)
    }
}

fn message(r: Result<Parameters, Error>) -> (Error, String) {
    let e = r.expect_err("an error");
    let m = e.to_string();
    (e, m)
}

/// The error of the real setup and of the benchmark generator for the same circuit.
fn both<C: Circuit<Scalar> + Clone>(c: C) -> [(Error, String); 2] {
    [
        message(generate_parameters(c.clone(), &waste(1))),
        message(generate_benchmark_parameters(c, 1)),
    ]
}

#[test]
fn setup_rejects_degenerate_circuits() {
    for (e, m) in both(NoConstraints) {
        assert!(
            matches!(e, Error::InvalidInput(_)) && m.contains("no constraints"),
            "{m}"
        );
    }
    for (e, m) in both(Dangling) {
        assert!(
            matches!(e, Error::Synthesis(_)) && m.contains("Aux(99)"),
            "{m}"
        );
    }
    for (e, m) in both(Failing) {
        assert!(
            matches!(e, Error::Synthesis(_)) && m.contains("unsatisfiable"),
            "{m}"
        );
    }
    let (e, m) = message(generate_parameters(Unconstrained, &waste(1)));
    assert!(
        matches!(e, Error::Synthesis(_)) && m.contains("auxiliary variable 1"),
        "{m}"
    );
}

#[test]
fn setup_rejects_degenerate_toxic_waste() {
    let with = |f: &dyn Fn(&mut ToxicWaste)| {
        let mut w = waste(1);
        f(&mut w);
        message(generate_parameters(blank(3), &w))
    };
    let (_, m) = with(&|w| w.delta = Scalar::ZERO);
    assert!(m.contains("δ is zero"), "{m}");
    let (_, m) = with(&|w| w.gamma = Scalar::ZERO);
    assert!(m.contains("γ is zero"), "{m}");
    let (_, m) = with(&|w| w.g1 = G1Projective::identity());
    assert!(m.contains("point at infinity"), "{m}");
    let (_, m) = with(&|w| w.g2 = G2Projective::identity());
    assert!(m.contains("point at infinity"), "{m}");
    // τ = 1 is a root of unity of every domain.
    let (e, m) = with(&|w| w.tau = Scalar::ONE);
    assert!(
        matches!(e, Error::InvalidInput(_)) && m.contains("Z(τ) = 0"),
        "{m}"
    );
}

/// Our whole chain: our setup, written and read back through our files, proves with our prover
/// on the CPU backend, byte-identical to bellperson's prover with the same r, s; the proof
/// verifies with our verifier. With benchmark-only parameters both provers still agree byte for
/// byte (same shape), and the proof does not verify.
#[test]
fn our_prover_on_our_parameters() {
    use bellows_core::groth16::{prover, verifier};
    use std::sync::Arc;

    let rounds = 12;
    let x = Scalar::from(5u64);
    let mut y = x;
    for _ in 0..rounds {
        y *= y + Scalar::ONE;
    }
    let inputs = [y, x + Scalar::ONE];
    let (r, s) = (Scalar::from(101u64), Scalar::from(202u64));
    let backend: Arc<dyn bellows_core::Backend> = Arc::new(bellows_cpu::CpuBackend::new());
    for (params, valid) in [
        (generate_parameters(blank(rounds), &waste(8)).unwrap(), true),
        (
            generate_benchmark_parameters(blank(rounds), 8).unwrap(),
            false,
        ),
    ] {
        let file = bytes_of(&params);
        let read = io::parameters_from_bytes(&file, PointCheck::Full).unwrap();
        let key = prover::ProvingKey::new(Arc::new(read), backend.clone()).unwrap();
        let circuit = DensityCircuit { x: Some(x), rounds };
        let ours = crate::common::prove_with(&key, circuit.clone(), r, s);
        let bp = BpParams::read(&file[..], true).unwrap();
        let theirs = bellperson::groth16::create_proof(circuit, &bp, r, s).unwrap();
        let mut theirs_bytes = Vec::new();
        theirs.write(&mut theirs_bytes).unwrap();
        assert_eq!(ours.to_bytes().to_vec(), theirs_bytes, "valid = {valid}");
        let pvk = verifier::prepare_verifying_key(&key.params().vk);
        assert_eq!(verifier::verify_proof(&pvk, &ours, &inputs).unwrap(), valid);
    }
}

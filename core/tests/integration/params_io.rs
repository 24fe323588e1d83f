//! File formats: parameters, verifying keys, proofs and public inputs round-trip exactly; files
//! are written atomically; a key is read from either a key file or a whole parameters file.
//! (Interop with bellperson's files is in setup.rs, bad input in bad_input.rs, beside this module.)

use std::path::PathBuf;
use std::time::Instant;

use bellows_core::groth16::{
    io::{self, PointCheck},
    setup::{generate_benchmark_parameters, generate_parameters, ToxicWaste},
    Parameters, Proof,
};
use bellows_core::Error;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// x_{i+1} = x_i² for `rounds` rounds, the last value public: rounds + 1 constraints, 2 inputs.
#[derive(Clone)]
struct Squares {
    rounds: usize,
}

impl Circuit<Scalar> for Squares {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
        for i in 0..self.rounds {
            let y = cs.alloc(|| format!("y{i}"), || Ok(Scalar::ZERO))?;
            cs.enforce(|| format!("sq{i}"), |lc| lc + x, |lc| lc + x, |lc| lc + y);
            x = y;
        }
        let out = cs.alloc_input(|| "out", || Ok(Scalar::ZERO))?;
        cs.enforce(|| "out", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

/// A fresh, empty folder under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let p =
            std::env::temp_dir().join(format!("bellows-params-io-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn real_params(rounds: usize) -> Parameters {
    let waste = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(rounds as u64));
    generate_parameters(Squares { rounds }, &waste).unwrap()
}

fn bytes_of(p: &Parameters) -> Vec<u8> {
    let mut v = Vec::new();
    io::write_parameters(p, &mut v).unwrap();
    v
}

#[test]
fn parameters_round_trip_in_memory_and_on_disk() {
    let params = real_params(40);
    let bytes = bytes_of(&params);
    // The size follows from the layout: vk (6 points + ic) and five length-prefixed sections.
    let expect = 3 * 96
        + 3 * 192
        + 4
        + 96 * params.vk.ic.len()
        + 4 * 4
        + 96 * (params.h.len() + params.l.len() + params.a.len() + params.b_g1.len())
        + 4
        + 192 * params.b_g2.len();
    assert_eq!(bytes.len(), expect);
    for check in [PointCheck::Full, PointCheck::CurveOnly] {
        crate::common::assert_same_params(
            &io::parameters_from_bytes(&bytes, check).unwrap(),
            &params,
        );
    }
    let dir = TempDir::new("round-trip");
    let path = dir.file("p.params");
    io::write_parameters_file(&params, &path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    crate::common::assert_same_params(
        &io::read_parameters(&path, PointCheck::default()).unwrap(),
        &params,
    );
    // Overwriting replaces the file and leaves no temporary file behind.
    let other = real_params(3);
    io::write_parameters_file(&other, &path).unwrap();
    crate::common::assert_same_params(
        &io::read_parameters(&path, PointCheck::Full).unwrap(),
        &other,
    );
    assert_eq!(dir.entries(), vec!["p.params".to_string()]);
}

#[test]
fn failed_write_keeps_the_old_file_and_leaves_nothing_behind() {
    let dir = TempDir::new("failed-write");
    // A path whose parent is a regular file cannot be written.
    std::fs::write(dir.file("blocker"), b"not a folder").unwrap();
    let err = io::write_parameters_file(&real_params(2), dir.file("blocker").join("p.params"))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert!(err.to_string().contains("p.params"), "{err}");
    assert!(err.to_string().contains("not a folder"), "{err}");
    assert_eq!(dir.entries(), vec!["blocker".to_string()]);
    assert_eq!(std::fs::read(dir.file("blocker")).unwrap(), b"not a folder");
}

#[test]
fn verifying_key_from_key_file_or_whole_parameters() {
    let params = real_params(12);
    let dir = TempDir::new("vk");
    let vk_path = dir.file("k.vk");
    let params_path = dir.file("k.params");
    io::write_verifying_key_file(&params.vk, &vk_path).unwrap();
    io::write_parameters_file(&params, &params_path).unwrap();
    let vk_len = 3 * 96 + 3 * 192 + 4 + 96 * params.vk.ic.len();
    assert_eq!(std::fs::metadata(&vk_path).unwrap().len() as usize, vk_len);
    // A parameters file starts with its verifying key.
    assert_eq!(
        std::fs::read(&params_path).unwrap()[..vk_len],
        std::fs::read(&vk_path).unwrap()[..]
    );
    assert_eq!(
        io::read_verifying_key(&vk_path, PointCheck::Full).unwrap(),
        params.vk
    );
    for p in [&vk_path, &params_path] {
        for check in [PointCheck::Full, PointCheck::CurveOnly] {
            assert_eq!(
                io::read_verifying_key_or_params(p, check).unwrap(),
                params.vk
            );
        }
    }
    // A strict key reader refuses a whole parameters file, naming the size mismatch.
    let err = io::read_verifying_key(&params_path, PointCheck::Full).unwrap_err();
    assert!(err.to_string().contains("wrong size"), "{err}");
}

fn random_proof(rng: &mut ChaCha20Rng) -> Proof {
    Proof {
        a: G1Projective::random(&mut *rng).to_affine(),
        b: G2Projective::random(&mut *rng).to_affine(),
        c: G1Projective::random(&mut *rng).to_affine(),
    }
}

#[test]
fn proofs_round_trip_single_and_concatenated() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let proofs: Vec<Proof> = (0..3).map(|_| random_proof(&mut rng)).collect();
    let dir = TempDir::new("proofs");
    let one = dir.file("one.proof");
    let many = dir.file("many.proof");
    io::write_proofs_file(&proofs[..1], &one).unwrap();
    io::write_proofs_file(&proofs, &many).unwrap();
    assert_eq!(std::fs::read(&one).unwrap(), proofs[0].to_bytes().to_vec());
    assert_eq!(io::read_proof(&one).unwrap(), proofs[0]);
    assert_eq!(io::read_proofs(&one).unwrap(), proofs[..1].to_vec());
    assert_eq!(io::read_proofs(&many).unwrap(), proofs);
    let mut buf = Vec::new();
    for p in &proofs {
        io::write_proof(p, &mut buf).unwrap();
    }
    assert_eq!(io::proofs_from_bytes(&buf).unwrap(), proofs);
    // One-proof reader on a three-proof file: a size error with a hint.
    let err = io::read_proof(&many).unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err}");
    assert!(
        err.to_string().contains("got 576") && err.to_string().contains("read_proofs"),
        "{err}"
    );
}

#[test]
fn public_inputs_json_round_trip() {
    let inputs = vec![
        Scalar::ZERO,
        Scalar::ONE,
        Scalar::from(1234567u64),
        -Scalar::ONE,
    ];
    let text = io::format_public_inputs_json(&inputs);
    assert_eq!(
        text,
        "[\"0\",\"1\",\"1234567\",\
         \"52435875175126190479447740508185965837690552500527637822603658699938581184512\"]"
    );
    assert_eq!(io::parse_public_inputs_json(&text).unwrap(), inputs);
    assert_eq!(
        io::parse_public_inputs_json(" [ ] ").unwrap(),
        Vec::<Scalar>::new()
    );
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let random: Vec<Scalar> = (0..50).map(|_| Scalar::random(&mut rng)).collect();
    assert_eq!(
        io::parse_public_inputs_json(&io::format_public_inputs_json(&random)).unwrap(),
        random
    );
    let dir = TempDir::new("json");
    let path = dir.file("inputs.json");
    std::fs::write(&path, &text).unwrap();
    assert_eq!(io::read_public_inputs_json(&path).unwrap(), inputs);
}

/// Not a timed assertion: prints how long reading a 2^16-constraint parameter file takes in each
/// check mode. Run with
/// `cargo test --release -p bellows-core --test integration params_io:: -- --ignored --nocapture`.
#[test]
#[ignore = "timing report, run by hand"]
fn report_read_times_2_16() {
    let rounds = (1 << 16) - 3; // + 1 constraint + 2 input constraints = 2^16
    let t = Instant::now();
    let params = generate_benchmark_parameters(Squares { rounds }, 7).unwrap();
    let gen = t.elapsed();
    assert_eq!(params.domain_size(), 1 << 16);
    let dir = TempDir::new("timing");
    let path = dir.file("t.params");
    let t = Instant::now();
    io::write_parameters_file(&params, &path).unwrap();
    let write = t.elapsed();
    let size = std::fs::metadata(&path).unwrap().len();
    let mut times = Vec::new();
    for check in [PointCheck::Full, PointCheck::CurveOnly] {
        let t = Instant::now();
        let read = io::read_parameters(&path, check).unwrap();
        times.push(t.elapsed());
        assert_eq!(read.h.len(), params.h.len());
    }
    // For comparison: bellperson 0.27's reader (serial), checked and unchecked.
    for checked in [true, false] {
        let t = Instant::now();
        let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
        let bp = bellperson::groth16::Parameters::<blstrs::Bls12>::read(file, checked).unwrap();
        times.push(t.elapsed());
        assert_eq!(bp.h.len(), params.h.len());
    }
    println!(
        "2^16 parameters ({size} bytes, {} threads): benchmark generation {gen:.2?}, write \
         {write:.2?}, read Full {:.2?}, read CurveOnly {:.2?}; bellperson read checked {:.2?}, \
         unchecked {:.2?}",
        rayon::current_num_threads(),
        times[0],
        times[1],
        times[2],
        times[3]
    );
}

/// Not a timed assertion: prints how long benchmark-only parameters for a 2^20 circuit take.
#[test]
#[ignore = "timing report, run by hand"]
fn report_benchmark_generation_2_20() {
    let rounds = (1 << 20) - 3;
    let t = Instant::now();
    let params = generate_benchmark_parameters(Squares { rounds }, 7).unwrap();
    let took = t.elapsed();
    assert_eq!(params.domain_size(), 1 << 20);
    println!(
        "2^20 benchmark-only parameters ({} threads): {took:.2?}",
        rayon::current_num_threads()
    );
}

/// Not a timed assertion: prints how long the real (trusted) setup takes for 2^12 and 2^14.
#[test]
#[ignore = "timing report, run by hand"]
fn report_real_setup_times() {
    for log in [12u32, 14] {
        let rounds = (1usize << log) - 3;
        let waste = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(1));
        let t = Instant::now();
        let params = generate_parameters(Squares { rounds }, &waste).unwrap();
        let took = t.elapsed();
        assert_eq!(params.domain_size(), 1 << log);
        println!(
            "real setup 2^{log} ({} threads): {took:.2?}",
            rayon::current_num_threads()
        );
    }
}

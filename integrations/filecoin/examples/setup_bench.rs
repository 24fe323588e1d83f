//! Groth16 setup, Bellows against bellperson 0.27's `generate_parameters`, same circuit, same
//! toxic waste, one run each; the two parameter files are compared byte for byte.
//!
//! ```text
//! cargo run --release -p bellows-filecoin --example setup_bench -- [--synthetic K]... [--porep-2kib] [--skip-bellperson]
//! ```
//!
//! `--synthetic K`: the built-in synthetic circuit with a 2^K domain (50 % boolean
//! constraints); `--porep-2kib`: the 2 KiB PoRep C2 partition circuit (2^22 domain, 2.69 M
//! variables), what `bellows porep setup --proof StackedDrg2KiBV1_1` runs. Prints one JSON line
//! per circuit (wall and process CPU seconds of each side).

use std::time::Instant;

use bellows_core::circuits::synthetic::SyntheticCircuit;
use bellows_core::groth16::setup::{generate_parameters, ToxicWaste};
use bellows_core::groth16::{io, Parameters};
use bellows_filecoin::filecoin_proofs::constants::SectorShape2KiB;
use bellows_filecoin::filecoin_proofs_api::RegisteredSealProof;
use bellows_filecoin::porep::blank_circuit;
use bellows_filecoin::testing::cpu_seconds;
use bellpepper_core::Circuit;
use blstrs::{Bls12, Scalar};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn run<C: Circuit<Scalar> + Clone>(name: &str, circuit: C, skip_bellperson: bool) {
    let w = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(1));
    let (c0, t0) = (cpu_seconds(), Instant::now());
    let ours: Parameters = generate_parameters(circuit.clone(), &w).expect("Bellows setup");
    let (ours_wall, ours_cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
    let mut ours_bytes = Vec::new();
    io::write_parameters(&ours, &mut ours_bytes).unwrap();
    let domain = ours.domain_size();
    drop(ours);
    let (mut bp_wall, mut bp_cpu, mut equal) = (None, None, None);
    if !skip_bellperson {
        let (c0, t0) = (cpu_seconds(), Instant::now());
        let theirs = bellperson::groth16::generate_parameters::<Bls12, _>(
            circuit, w.g1, w.g2, w.alpha, w.beta, w.gamma, w.delta, w.tau,
        )
        .expect("bellperson setup");
        bp_wall = Some(t0.elapsed().as_secs_f64());
        bp_cpu = Some(cpu_seconds() - c0);
        let mut theirs_bytes = Vec::new();
        theirs.write(&mut theirs_bytes).unwrap();
        equal = Some(theirs_bytes == ours_bytes);
        assert_eq!(equal, Some(true), "{name}: the parameter files differ");
    }
    println!(
        "{}",
        serde_json::json!({
            "circuit": name, "log_domain": domain.trailing_zeros(),
            "bytes": ours_bytes.len(), "threads": rayon::current_num_threads(),
            "bellows_wall_s": ours_wall, "bellows_cpu_s": ours_cpu,
            "bellperson_wall_s": bp_wall, "bellperson_cpu_s": bp_cpu,
            "byte_identical": equal,
        })
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let skip = args.iter().any(|a| a == "--skip-bellperson");
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--synthetic" => {
                i += 1;
                let k: u32 = args[i].parse().expect("--synthetic K");
                run(
                    &format!("synthetic-2^{k}"),
                    SyntheticCircuit::new(k, 50).unwrap(),
                    skip,
                );
            }
            "--porep-2kib" => run(
                "porep-2kib",
                blank_circuit::<SectorShape2KiB>(RegisteredSealProof::StackedDrg2KiBV1_1).unwrap(),
                skip,
            ),
            "--skip-bellperson" => {}
            other => panic!("unknown argument {other}"),
        }
        i += 1;
    }
}

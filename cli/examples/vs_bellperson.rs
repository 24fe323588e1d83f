//! Side-by-side benchmark: the Bellows CPU prover against bellperson 0.27's prover, in one run, on
//! the same synthetic circuit and the very same parameter points.
//!
//! ```sh
//! cargo run --release -p bellows-cli --example vs_bellperson -- --log-size 16
//! ```
//!
//! Parameters are benchmark-only (Bellows' fast generator: valid points of the right shape, no
//! trusted setup), generated once; bellperson gets a `groth16::Parameters` whose queries are the
//! same `Arc`s, so both provers read the same memory. Each repetition proves `--count` fresh
//! instances, synthesis included, on the same thread count (rayon's global pool for both, and
//! `EC_GPU_NUM_THREADS` for bellperson's own pool). The two provers alternate, repetition by
//! repetition, so that machine noise hits both alike. Before timing, one proof with the same r
//! and s is made by each and compared byte for byte, so the comparison is of the same
//! computation.
//!
//! The last line printed is exactly `ratio bellows/bellperson: X.XX` (median over median).

use std::sync::Arc;
use std::time::Instant;

use bellows_core::{
    circuits::{witness_seed, CircuitOptions, CircuitSpec},
    groth16::{
        prover::{self, ProvingKey},
        setup,
        synthesis::synthesize,
    },
    rng::ProofRng,
    Backend, BackendConfig,
};
use blstrs::{Bls12, Scalar};
use clap::Parser;
use rand_core::SeedableRng;

// Links the CPU backend so that it registers itself as "cpu".
use bellows_cpu as _;

// The command line's timing statistics (`bellows bench` reports the same median and minimum).
#[allow(dead_code)]
#[path = "../src/stats.rs"]
mod stats;
use stats::Stat;

type BpParams = bellperson::groth16::Parameters<Bls12>;

/// Bellows vs bellperson on the synthetic circuit.
#[derive(Debug, Parser)]
struct Args {
    /// log2 of the domain (2^K − 2 constraints).
    #[arg(long = "log-size", default_value_t = 16)]
    log_size: u32,
    /// Percentage of boolean constraints.
    #[arg(long = "bits-pct", default_value_t = 0)]
    bits_pct: u8,
    /// Timed repetitions per prover.
    #[arg(long, default_value_t = 5)]
    reps: u32,
    /// Untimed repetitions per prover first.
    #[arg(long, default_value_t = 1)]
    warmup: u32,
    /// Proofs per repetition (one batch).
    #[arg(long, default_value_t = 1)]
    count: u32,
    /// Threads for both provers [default: one per core].
    #[arg(long)]
    threads: Option<usize>,
    /// Bellows backend.
    #[arg(long, default_value = "cpu")]
    backend: String,
}

/// bellperson parameters made of the same points (the same `Arc`s) as ours, through the
/// crate's own conversion (`groth16::bellperson_compat`).
fn bellperson_params(p: &bellows_core::groth16::Parameters) -> BpParams {
    BpParams::from(p)
}

fn bp_bytes(p: &bellperson::groth16::Proof<Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    p.write(&mut v).expect("writing to a Vec");
    v
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1)
    });
    // Same thread count for both: rayon's global pool (ours, and bellperson's synthesis) and
    // bellperson's own worker pool, which reads this variable once, on first use.
    std::env::set_var("EC_GPU_NUM_THREADS", threads.to_string());
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()?;

    let mut opts = CircuitOptions::with_log_size(args.log_size);
    opts.bits_pct = Some(args.bits_pct);
    let spec = CircuitSpec::new("synthetic", &opts)?;
    println!("circuit: {}", spec.description());
    println!(
        "threads: {threads}, proofs per repetition: {}, repetitions: {} (+{} warm-up)",
        args.count, args.reps, args.warmup
    );

    let t = Instant::now();
    let params = Arc::new(setup::generate_benchmark_parameters(spec.blank(), 1)?);
    println!(
        "benchmark-only parameters generated in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let bp = bellperson_params(&params);
    let mut cfg = BackendConfig::default();
    cfg.threads = Some(threads);
    let backend: Arc<dyn Backend> = bellows_core::registry::resolve(&args.backend, &cfg)?;
    let key = ProvingKey::new(params.clone(), backend)?;

    // Same circuit, same r and s: the proofs must be byte-identical.
    let (r, s) = (Scalar::from(12345u64), Scalar::from(67890u64));
    let ours = prover::start_with_randomness(
        &key,
        vec![synthesize(spec.with_witness(7))?],
        vec![r],
        vec![s],
    )?
    .finalize()?;
    let theirs = bellperson::groth16::create_proof(spec.with_witness(7), &bp, r, s)?;
    if ours[0].to_bytes().to_vec() != bp_bytes(&theirs) {
        return Err(
            "bellows and bellperson proofs differ for the same r, s: not comparable".into(),
        );
    }
    println!("check: same circuit, r, s -> byte-identical proofs from both provers");

    let mut ours_t = Vec::new();
    let mut theirs_t = Vec::new();
    let mut rng = ProofRng::seeded(3);
    let mut bp_rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    for rep in 0..args.warmup + args.reps {
        let seeds: Vec<u64> = (0..u64::from(args.count))
            .map(|i| witness_seed(u64::from(rep), i))
            .collect();
        let t = Instant::now();
        let circuits = seeds.iter().map(|&x| spec.with_witness(x)).collect();
        let p = prover::prove(&key, circuits, &mut rng)?;
        let d_ours = t.elapsed();
        assert_eq!(p.len(), seeds.len());

        let t = Instant::now();
        let circuits = seeds.iter().map(|&x| spec.with_witness(x)).collect();
        let p = bellperson::groth16::create_random_proof_batch(circuits, &bp, &mut bp_rng)?;
        let d_theirs = t.elapsed();
        assert_eq!(p.len(), seeds.len());

        let tag = if rep < args.warmup { " (warm-up)" } else { "" };
        println!(
            "rep {rep}: bellows {:.3} s, bellperson {:.3} s{tag}",
            d_ours.as_secs_f64(),
            d_theirs.as_secs_f64()
        );
        if rep >= args.warmup {
            ours_t.push(d_ours);
            theirs_t.push(d_theirs);
        }
    }
    let (ours, theirs) = (Stat::of(&ours_t), Stat::of(&theirs_t));
    println!(
        "bellows    median {:.3} s, min {:.3} s",
        ours.median_s, ours.min_s
    );
    println!(
        "bellperson median {:.3} s, min {:.3} s",
        theirs.median_s, theirs.min_s
    );
    println!(
        "ratio bellows/bellperson: {:.2}",
        ours.median_s / theirs.median_s
    );
    Ok(())
}

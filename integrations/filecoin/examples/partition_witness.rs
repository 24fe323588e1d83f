//! How long one PoRep partition's witness takes: one challenge natively against the library's
//! circuit, both on one thread; then the whole partition challenge by challenge in parallel
//! (`bellows_filecoin::partition`), and with `--sequential` the library's circuit of the whole
//! partition on one thread. The host side of a C2, without parameters, a recording or a GPU.
//!
//! ```text
//! cargo run --release -p bellows-filecoin --example partition_witness -- \
//!     --sector 32GiB [--c1 FILE] [--partition 0] [--challenge 0] [--path native] \
//!     [--sequential] [--threads N]
//! cargo run --release -p bellows-filecoin --example partition_witness -- \
//!     --sector 32GiB --pce DIR [--reps N] [--direct] [--products N] [--threads N] [--record-whole]
//! ```
//!
//! Without `--c1`, a synthetic C1 output of the sector size is made first (`synth_c1`, seed 0).
//! Prints the partition's shape; the one-thread time of challenge `--challenge`'s witness
//! natively and by the library's circuit, checked equal value for value; the parallel witness's
//! wall time with the challenges computed by `--path` (`native`, `checked` or `library`; the
//! values collected in allocation order, as the pre-compiled synthesis receives them) and, with
//! `--sequential`, the library's one-thread witness of the same partition, checked equal.

use std::time::Instant;

use bellows_core::groth16::constraint_system::Cs;
use bellows_filecoin::filecoin_proofs::constants::{
    SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB,
};
use bellows_filecoin::filecoin_proofs::types::MerkleTreeTrait;
use bellows_filecoin::filecoin_proofs_api::RegisteredSealProof;
use bellows_filecoin::partition::{Values, WitnessPath};
use bellows_filecoin::{porep, read_c1, synth_c1, C1Output, SynthOptions};
use bellpepper_core::Circuit;

/// What to measure.
struct Opts {
    k: usize,
    challenge: usize,
    path: WitnessPath,
    sequential: bool,
    pce: Option<std::path::PathBuf>,
    direct: bool,
    record_whole: bool,
    reps: usize,
    products: usize,
}

/// The process's peak resident set so far (VmHWM), in GB.
fn peak_rss_gb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb * 1024.0 / 1e9)
}

/// SHA-256 over a synthesis's a, b, c, inputs and aux assignment, in that order.
fn digest(s: &bellows_core::groth16::synthesis::Synthesized) -> String {
    use ff::PrimeField;
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for v in [
        &s.a[..],
        &s.b[..],
        &s.c[..],
        &s.input_assignment[..],
        &s.aux_assignment[..],
    ] {
        h.update((v.len() as u64).to_le_bytes());
        for x in v {
            h.update(x.to_repr());
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// `--pce`: the recording, then the pre-compiled synthesis (and with `--direct` the direct one).
fn run_pce<Tree: 'static + MerkleTreeTrait>(
    proof: bellows_filecoin::filecoin_proofs_api::RegisteredSealProof,
    part: bellows_filecoin::partition::StackedPartition<Tree>,
    cache_id: &str,
    dir: &std::path::Path,
    o: &Opts,
) -> bellows_core::Result<()> {
    let t = Instant::now();
    // As the setup and the prover record it (from two challenges), or with `--record-whole`
    // every challenge through the circuit.
    let pce = if o.record_whole {
        bellows_filecoin::prove::pce_for(dir, cache_id, part.clone())?
    } else {
        bellows_filecoin::porep::pce(proof, dir)?
    };
    println!(
        "RESULT recording_s={:.1} constraints={} aux={} nnz={:?} bytes={} bytes_per_nnz={:.2} \
         peak_rss_gb={:.2}",
        t.elapsed().as_secs_f64(),
        pce.num_constraints(),
        pce.num_aux(),
        pce.nnz(),
        pce.size_bytes(),
        pce.bytes_per_nonzero(),
        peak_rss_gb()
    );
    let mut replayed = String::new();
    let mut witness = None;
    for rep in 0..o.reps.max(1) {
        let t = Instant::now();
        let (mut s, timings) = pce.synthesize_timed(part.clone(), None)?;
        let wall = t.elapsed().as_secs_f64();
        println!(
            "RESULT rep={rep} pce_synthesis_s={wall:.2} witness_s={:.2} products_after_s={:.2} \
             threads={} peak_rss_gb={:.2}",
            timings.witness.as_secs_f64(),
            timings.products.as_secs_f64(),
            rayon::current_num_threads(),
            peak_rss_gb()
        );
        if rep == 0 && o.direct {
            replayed = digest(&s);
        }
        if rep + 1 == o.reps.max(1) && o.products > 0 {
            witness = Some((
                std::mem::take(&mut s.input_assignment),
                std::mem::take(&mut s.aux_assignment),
            ));
        }
    }
    // The products alone, into buffers allocated once (as the pinned pool of a device backend
    // lends them): what the rows cost without the witness and fresh memory.
    if let Some((inputs, aux)) = witness {
        let n = pce.num_constraints();
        let mut abc: [Vec<std::mem::MaybeUninit<blstrs::Scalar>>; 3] =
            std::array::from_fn(|_| (0..n).map(|_| std::mem::MaybeUninit::uninit()).collect());
        let mut best = f64::INFINITY;
        for _ in 0..o.products {
            let [a, b, c] = &mut abc;
            let t = Instant::now();
            pce.evaluate_into(&inputs, &aux, a, b, c)?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        let nnz: u64 = pce.nnz().iter().sum();
        println!(
            "RESULT products_s={best:.3} ns_per_nonzero_per_thread={:.1} threads={} reps={}",
            best * 1e9 * rayon::current_num_threads() as f64 / nnz as f64,
            rayon::current_num_threads(),
            o.products
        );
    }
    if o.direct {
        let t = Instant::now();
        let s = bellows_core::groth16::synthesis::synthesize(part)?;
        let direct_s = t.elapsed().as_secs_f64();
        let same = digest(&s) == replayed;
        println!(
            "RESULT direct_synthesis_s={direct_s:.1} same_as_pce={same} digest={replayed} \
             peak_rss_gb={:.2}",
            peak_rss_gb()
        );
        if !same {
            return Err(bellows_core::Error::invalid(
                "the pre-compiled synthesis differs from the direct one",
            ));
        }
    }
    Ok(())
}

fn synthesis(e: impl std::fmt::Display) -> bellows_core::Error {
    bellows_core::Error::Synthesis(e.to_string())
}

fn run<Tree: 'static + MerkleTreeTrait>(c1: &C1Output, o: &Opts) -> bellows_core::Result<()> {
    let k = o.k;
    let t = Instant::now();
    let inst = porep::instance::<Tree>(c1)?;
    let part = inst
        .circuits
        .get(k)
        .ok_or_else(|| bellows_core::Error::invalid(format!("no partition {k}")))?
        .clone()
        .with_witness_path(o.path);
    eprintln!(
        "partition {k} of {}: {} challenges (circuits built and vanilla proofs checked in {:.2} s)",
        inst.circuits.len(),
        part.challenges(),
        t.elapsed().as_secs_f64()
    );
    if let Some(dir) = &o.pce {
        return run_pce(c1.registered_proof(), part, &inst.cache_id, dir, o);
    }

    // One challenge on this thread, each way; the native one three times into the same
    // buffers (as the partition reuses its buffers), the best reported.
    let i = o.challenge;
    let (mut inputs, mut aux) = (Vec::new(), Vec::new());
    let mut native_s = f64::INFINITY;
    for _ in 0..3 {
        inputs.clear();
        aux.clear();
        let t = Instant::now();
        part.challenge_values_into(i, WitnessPath::Native, &mut inputs, &mut aux)?;
        native_s = native_s.min(t.elapsed().as_secs_f64());
    }
    let t = Instant::now();
    let library = part.challenge_values(i, WitnessPath::Library)?;
    let library_s = t.elapsed().as_secs_f64();
    let same = (&inputs, &aux) == (&library.0, &library.1);
    println!(
        "RESULT challenge={i} native_s={native_s:.4} library_s={library_s:.3} speedup={:.1} \
         aux={} same_values={same}",
        library_s / native_s,
        aux.len(),
    );
    if !same {
        return Err(bellows_core::Error::invalid(
            "the native challenge witness differs from the library's",
        ));
    }
    drop((inputs, aux, library));

    // The partition twice into the same values (the pre-compiled synthesis writes into buffers
    // it reuses): the first run pays for the fresh memory, the second is the steady state.
    let mut par = Cs(Values::default());
    let mut times = Vec::new();
    for _ in 0..2 {
        par.0.clear();
        let t = Instant::now();
        part.clone().synthesize(&mut par).map_err(synthesis)?;
        times.push(t.elapsed().as_secs_f64());
    }
    println!(
        "RESULT parallel_witness_s={:.3} first_s={:.3} path={:?} inputs={} aux={} threads={}",
        times[1],
        times[0],
        o.path,
        par.0.input_values().len(),
        par.0.aux_values().len(),
        rayon::current_num_threads()
    );
    if o.sequential {
        let t = Instant::now();
        let mut seq = Cs(Values::default());
        part.whole()
            .and_then(|c| c.synthesize(&mut seq))
            .map_err(synthesis)?;
        let seq_s = t.elapsed().as_secs_f64();
        let same = seq.0.input_values() == par.0.input_values()
            && seq.0.aux_values() == par.0.aux_values();
        println!("RESULT sequential_witness_s={seq_s:.3} same_values={same}");
        if !same {
            return Err(bellows_core::Error::invalid(
                "the parallel witness differs from the sequential one",
            ));
        }
    }
    Ok(())
}

fn main() {
    let mut sector = "32GiB".to_string();
    let mut c1_path = None;
    let mut o = Opts {
        k: 0,
        challenge: 0,
        path: WitnessPath::Native,
        sequential: false,
        pce: None,
        direct: false,
        record_whole: false,
        reps: 1,
        products: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--sector" => sector = v(),
            "--c1" => c1_path = Some(v()),
            "--partition" => o.k = v().parse().expect("--partition N"),
            "--challenge" => o.challenge = v().parse().expect("--challenge I"),
            "--path" => {
                o.path = match v().as_str() {
                    "native" => WitnessPath::Native,
                    "checked" => WitnessPath::Checked,
                    "library" => WitnessPath::Library,
                    other => panic!("--path {other}: native, checked or library"),
                }
            }
            "--sequential" => o.sequential = true,
            "--pce" => o.pce = Some(v().into()),
            "--direct" => o.direct = true,
            "--record-whole" => o.record_whole = true,
            "--reps" => o.reps = v().parse().expect("--reps N"),
            "--products" => o.products = v().parse().expect("--products N"),
            "--threads" => {
                let n: usize = v().parse().expect("--threads N");
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build_global()
                    .expect("thread pool");
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let bytes = bellows_core::units::parse_bytes(&sector).expect("--sector SIZE");
    let proof =
        bellows_filecoin::synth_c1::proof_for_sector_size(bytes).expect("a PoRep sector size");
    let c1 = match c1_path {
        Some(p) => read_c1(p).expect("C1 file"),
        None => {
            let t = Instant::now();
            let out = synth_c1(proof, &SynthOptions::default()).expect("synthetic C1");
            eprintln!(
                "synthetic {sector} C1 output in {:.2} s",
                t.elapsed().as_secs_f64()
            );
            C1Output {
                phase1: out,
                sector_num: None,
            }
        }
    };
    let r = match proof {
        RegisteredSealProof::StackedDrg2KiBV1_1 => run::<SectorShape2KiB>(&c1, &o),
        RegisteredSealProof::StackedDrg8MiBV1_1 => run::<SectorShape8MiB>(&c1, &o),
        RegisteredSealProof::StackedDrg512MiBV1_1 => run::<SectorShape512MiB>(&c1, &o),
        RegisteredSealProof::StackedDrg32GiBV1_1 => run::<SectorShape32GiB>(&c1, &o),
        _ => run::<SectorShape64GiB>(&c1, &o),
    };
    if let Err(e) = r {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

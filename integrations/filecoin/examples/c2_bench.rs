//! PoRep C2 on one machine, Bellows against filecoin-proofs' own `seal_commit_phase2`
//! (bellperson), in one run, on a sector sealed here.
//!
//! ```text
//! cargo run --release -p bellows-filecoin --example c2_bench -- \
//!     --sector 2KiB --work /tmp/c2bench [--backend cpu] [--reps 1] [--skip-bellperson] [--pce]
//! ```
//!
//! Seals a sector of the given size (2KiB or 8MiB) with filecoin-proofs on the CPU, makes its
//! circuit's parameters with Bellows' setup (once; kept in WORK/params), then times:
//! - Bellows, partition by partition: synthesis, then the proof (G1 phase on the backend, G2 on
//!   CPU threads beside it) — shown apart;
//! - Bellows' C2 through the pipeline (what `bellows porep c2 --no-pce` runs), load excluded;
//! - with `--pce`, the same with pre-compiled synthesis (what `bellows porep c2` runs by
//!   default): the recording's one-time cost (WORK/pce), a partition's synthesis, C2;
//! - filecoin-proofs' `seal_commit_phase2` (bellperson's prover, reading the same parameter
//!   files; its own verification included, as it always runs it).
//!
//! Every proof is verified with filecoin-proofs' `verify_seal`. Prints a table, then one JSON
//! line.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bellows_core::groth16::prover::{start, ProvingKey};
use bellows_core::groth16::synthesis::synthesize;
use bellows_filecoin::filecoin_proofs::constants::{SectorShape2KiB, SectorShape8MiB};
use bellows_filecoin::filecoin_proofs::types::MerkleTreeTrait;
use bellows_filecoin::filecoin_proofs_api::{seal, RegisteredSealProof, SectorId};
use bellows_filecoin::testing::{init_filecoin_env, lotus_bench_json, seal_sector};
use bellows_filecoin::{parse_c1, porep, verify_seal, C1Output, Check, ProveConfig};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

struct Args {
    sector: String,
    work: PathBuf,
    backend: String,
    reps: usize,
    skip_bellperson: bool,
    pce: bool,
}

fn args() -> Args {
    let mut a = Args {
        sector: "2KiB".into(),
        work: std::env::temp_dir().join("bellows-c2-bench"),
        backend: "cpu".into(),
        reps: 1,
        skip_bellperson: false,
        pce: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--sector" => a.sector = v(),
            "--work" => a.work = PathBuf::from(v()),
            "--backend" => a.backend = v(),
            "--reps" => a.reps = v().parse().expect("--reps N"),
            "--skip-bellperson" => a.skip_bellperson = true,
            "--pce" => a.pce = true,
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn main() {
    let a = args();
    let proof = match a.sector.as_str() {
        "2KiB" => RegisteredSealProof::StackedDrg2KiBV1_1,
        "8MiB" => RegisteredSealProof::StackedDrg8MiBV1_1,
        s => panic!("--sector {s}: 2KiB or 8MiB"),
    };
    // The backend first: a missing device fails here, before any sealing or setup.
    let backend = bellows_core::registry::resolve(&a.backend, &Default::default())
        .unwrap_or_else(|e| panic!("backend {}: {e}", a.backend));
    std::fs::create_dir_all(&a.work).unwrap();
    let (params_dir, _) = init_filecoin_env(&a.work.join("params"), &a.work);
    let prover = bellows_filecoin::prover_id_from_actor(1000);
    let sector_id = 1;

    // A fresh sector folder each run (a second run would otherwise seal over the first's layers).
    let sector_dir = a.work.join(format!("sector-{}", a.sector));
    let _ = std::fs::remove_dir_all(&sector_dir);
    let t = Instant::now();
    let sealed = seal_sector(
        proof,
        &sector_dir,
        prover,
        sector_id,
        [7; 32],
        [9; 32],
        &mut ChaCha20Rng::seed_from_u64(1),
    )
    .expect("sealing");
    let seal_time = t.elapsed();
    let c1 = parse_c1(&lotus_bench_json(&sealed.c1, sector_id), "c1").unwrap();
    eprintln!("sealed {} in {:.1} s", a.sector, secs(seal_time));

    let paths = porep::cache_paths(proof, &params_dir).unwrap();
    let setup_time = if paths.params.exists() {
        None
    } else {
        let t = Instant::now();
        let (_, r) = porep::setup(proof, &params_dir, &mut rand_core::OsRng, false).unwrap();
        eprintln!(
            "setup {:.1} s: 2^{} domain, {} inputs, {} aux",
            secs(r.setup_time),
            r.domain_size.trailing_zeros(),
            r.num_inputs,
            r.num_aux
        );
        Some(t.elapsed())
    };

    let report = match proof.sector_size().0 {
        2048 => bench::<SectorShape2KiB>(&a, &c1, &params_dir, backend),
        _ => bench::<SectorShape8MiB>(&a, &c1, &params_dir, backend),
    };

    let mut bp_times = Vec::new();
    if !a.skip_bellperson {
        for _ in 0..a.reps {
            let t = Instant::now();
            let out =
                seal::seal_commit_phase2(sealed.c1.clone(), prover, SectorId::from(sector_id))
                    .expect("filecoin-proofs seal_commit_phase2");
            bp_times.push(t.elapsed());
            assert!(verify_seal(&c1, prover, sector_id, &out.proof).unwrap());
        }
    }
    let min = |v: &[Duration]| v.iter().min().copied().map(secs);
    println!(
        "sector {}  partitions {}  backend {}",
        a.sector,
        c1.partitions(),
        a.backend
    );
    println!(
        "  setup (Bellows, once)            {:?}",
        setup_time.map(secs)
    );
    println!("  parameter load (batched checks)  {:.2} s", report.load);
    println!(
        "  per partition, synthesis         {:.2} s (min of {})",
        report.synth, report.n
    );
    println!("  per partition, proving           {:.2} s", report.prove);
    println!("  Bellows C2 (pipeline, all parts) {:.2} s", report.c2);
    if let Some(p) = &report.pce {
        println!("  pre-compiled: recording (once)   {:.2} s", p.record);
        println!(
            "  per partition, synthesis         {:.2} s (pre-compiled)",
            p.synth
        );
        println!("  Bellows C2, pre-compiled synth.  {:.2} s", p.c2);
    }
    println!(
        "  filecoin-proofs C2 (bellperson)  {:?} s (incl. its verification)",
        min(&bp_times)
    );
    println!(
        "{}",
        serde_json::json!({
            "sector": a.sector, "partitions": c1.partitions(), "backend": a.backend,
            "seal_s": secs(seal_time), "setup_s": setup_time.map(secs),
            "load_s": report.load, "synthesis_s": report.synth, "prove_s": report.prove,
            "bellows_c2_s": report.c2, "bellperson_c2_s": min(&bp_times),
            "pce_record_s": report.pce.as_ref().map(|p| p.record),
            "pce_synthesis_s": report.pce.as_ref().map(|p| p.synth),
            "bellows_c2_pce_s": report.pce.as_ref().map(|p| p.c2),
        })
    );
}

struct Report {
    n: usize,
    load: f64,
    synth: f64,
    prove: f64,
    c2: f64,
    pce: Option<PceReport>,
}

/// With `--pce`: the recording's time, a partition's pre-compiled synthesis, C2 with it.
struct PceReport {
    record: f64,
    synth: f64,
    c2: f64,
}

fn bench<Tree: 'static + MerkleTreeTrait>(
    a: &Args,
    c1: &C1Output,
    dir: &std::path::Path,
    backend: Arc<dyn bellows_core::Backend>,
) -> Report {
    let inst = porep::instance::<Tree>(c1).unwrap();
    let (params, load) = porep::load_params(
        c1.registered_proof(),
        dir,
        Check::Batched,
        inst.public_inputs[0].len(),
    )
    .unwrap();
    let key = Arc::new(ProvingKey::new(Arc::new(params), backend.clone()).unwrap());
    let (mut synth, mut prove) = (Vec::new(), Vec::new());
    for _ in 0..a.reps {
        for c in &inst.circuits {
            let t = Instant::now();
            let s = synthesize(c.clone()).unwrap();
            synth.push(t.elapsed());
            let t = Instant::now();
            let p = start(&key, vec![s], &mut rand_core::OsRng)
                .unwrap()
                .finalize()
                .unwrap();
            prove.push(t.elapsed());
            drop(p);
        }
    }
    let mut c2 = Vec::new();
    let cfg = ProveConfig::new(backend);
    for _ in 0..a.reps {
        let t = Instant::now();
        let parts = bellows_filecoin::prove::prove_circuits(
            key.clone(),
            inst.circuits.clone(),
            &cfg.pipeline,
        )
        .unwrap();
        c2.push(t.elapsed());
        let bytes: Vec<u8> = parts.iter().flat_map(|p| p.to_bytes()).collect();
        assert!(verify_seal(c1, bellows_filecoin::prover_id_from_actor(1000), 1, &bytes).unwrap());
    }
    let min = |v: &[Duration]| v.iter().min().copied().map(secs).unwrap_or(f64::NAN);
    let pce = a.pce.then(|| {
        let t = Instant::now();
        let pce = bellows_filecoin::prove::pce_for(
            &a.work.join("pce"),
            &inst.cache_id,
            inst.circuits[0].clone(),
        )
        .unwrap();
        let record = secs(t.elapsed());
        let (mut synth, mut c2p) = (Vec::new(), Vec::new());
        for _ in 0..a.reps {
            for c in &inst.circuits {
                let t = Instant::now();
                drop(pce.synthesize(c.clone()).unwrap());
                synth.push(t.elapsed());
            }
            let t = Instant::now();
            let parts = bellows_filecoin::prove::prove_circuits_with(
                key.clone(),
                inst.circuits.clone(),
                &cfg.pipeline,
                Some(pce.clone()),
            )
            .unwrap();
            c2p.push(t.elapsed());
            let bytes: Vec<u8> = parts.iter().flat_map(|p| p.to_bytes()).collect();
            let prover = bellows_filecoin::prover_id_from_actor(1000);
            assert!(verify_seal(c1, prover, 1, &bytes).unwrap());
        }
        PceReport {
            record,
            synth: min(&synth),
            c2: min(&c2p),
        }
    });
    Report {
        n: synth.len(),
        load: secs(load.elapsed),
        synth: min(&synth),
        prove: min(&prove),
        c2: min(&c2),
        pce,
    }
}

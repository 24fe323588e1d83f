//! Does pre-compiled synthesis (bellows_core::pce) give the PoRep partition circuit's assignment
//! bit for bit, and how fast? Seals a 2 KiB sector, builds its partition circuit, records it,
//! then synthesises it directly and with the recording, compares, and prints both times.
//!
//! ```text
//! cargo run --release -p bellows-filecoin --example pce_probe -- WORK_DIR
//! ```

use std::time::Instant;

use bellows_core::{groth16::synthesis::synthesize, pce::Pce};
use bellows_filecoin::filecoin_proofs::constants::SectorShape2KiB;
use bellows_filecoin::filecoin_proofs_api::RegisteredSealProof;
use bellows_filecoin::testing::{init_filecoin_env, lotus_bench_json, seal_sector};
use bellows_filecoin::{parse_c1, porep};
use ff::PrimeField;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn main() {
    let work = std::path::PathBuf::from(std::env::args().nth(1).expect("WORK_DIR"));
    std::fs::create_dir_all(&work).unwrap();
    let _ = init_filecoin_env(&work.join("params"), &work);
    let dir = work.join("sector");
    let _ = std::fs::remove_dir_all(&dir);
    let prover = bellows_filecoin::prover_id_from_actor(1000);
    let sealed = seal_sector(
        RegisteredSealProof::StackedDrg2KiBV1_1,
        &dir,
        prover,
        1,
        [7; 32],
        [9; 32],
        &mut ChaCha20Rng::seed_from_u64(1),
    )
    .unwrap();
    let c1 = parse_c1(&lotus_bench_json(&sealed.c1, 1), "c1").unwrap();
    let inst = porep::instance::<SectorShape2KiB>(&c1).unwrap();
    let c = inst.circuits[0].clone();
    let t = Instant::now();
    let pce = Pce::record(c.clone(), "porep-2kib-probe").unwrap();
    eprintln!(
        "recorded in {:.2} s: {} constraints, {} bytes ({:.2} per non-zero)",
        t.elapsed().as_secs_f64(),
        pce.num_constraints(),
        pce.size_bytes(),
        pce.bytes_per_nonzero()
    );
    for _ in 0..2 {
        let t = Instant::now();
        let d = synthesize(c.clone()).unwrap();
        let td = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let p = pce.synthesize(c.clone()).unwrap();
        let tp = t.elapsed().as_secs_f64();
        let bytes =
            |v: &[blstrs::Scalar]| -> Vec<[u8; 32]> { v.iter().map(|s| s.to_repr()).collect() };
        let same = bytes(&d.a) == bytes(&p.a)
            && bytes(&d.b) == bytes(&p.b)
            && bytes(&d.c) == bytes(&p.c)
            && bytes(&d.input_assignment) == bytes(&p.input_assignment)
            && bytes(&d.aux_assignment) == bytes(&p.aux_assignment)
            && d.a_aux_density == p.a_aux_density
            && d.b_input_density == p.b_input_density
            && d.b_aux_density == p.b_aux_density;
        println!(
            "direct {td:.3} s, pce {tp:.3} s, ratio {:.2}, identical: {same}",
            tp / td
        );
    }
}

//! Parameter loading, Bellows against bellperson, on one file, one run each.
//!
//! ```text
//! cargo run --release -p bellows-filecoin --example load_bench -- [--synthetic K] FILE [bellperson|batched|full|curve-only|digest [MANIFEST]]...
//! ```
//!
//! With `--synthetic K`, FILE is first written (if it does not exist) with benchmark-only
//! parameters of the synthetic 2^K circuit (valid subgroup points, no trusted setup: a file to
//! time loads on). K = 22 gives 4·2^22 − 2 G1 and 2^22 − 1 G2 points (2^24 G1 points, 2.4 GB).
//!
//! `bellperson` runs bellperson 0.27's `Parameters::read(reader, true)` (every point decoded
//! and checked on the curve and in the subgroup, one after the other, as filecoin-proofs' readers
//! do); the others run Bellows' loader with that check (`digest` against MANIFEST, a file in
//! parameters.json's format, or the built-in parameters.json). Prints one JSON line per run
//! with the wall time, the process CPU time, and points per second.

use std::io::BufReader;
use std::path::Path;
use std::time::Instant;

use bellows_filecoin::testing::cpu_seconds;
use bellows_filecoin::{params, Check};

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let synthetic: Option<u32> = if args.peek().is_some_and(|a| a == "--synthetic") {
        args.next();
        Some(
            args.next()
                .and_then(|k| k.parse().ok())
                .expect("--synthetic K"),
        )
    } else {
        None
    };
    let file = args.next().expect("FILE");
    let path = Path::new(&file);
    if let Some(k) = synthetic.filter(|_| !path.exists()) {
        let t0 = Instant::now();
        let circuit = bellows_core::circuits::synthetic::SyntheticCircuit::new(k, 0).unwrap();
        let params =
            bellows_core::groth16::setup::generate_benchmark_parameters(circuit, 1).unwrap();
        bellows_core::groth16::io::write_parameters_file(&params, path).unwrap();
        eprintln!(
            "wrote benchmark-only parameters of the synthetic 2^{k} circuit to {file} in {:.1} s",
            t0.elapsed().as_secs_f64()
        );
    }
    {
        let shape = bellows_core::groth16::io::ParamsFile::open(path)
            .unwrap()
            .shape();
        let g2 = shape.b_len;
        let g1 =
            shape.domain_size - 1 + shape.num_inputs + shape.num_aux + shape.a_len + shape.b_len;
        println!(
            "{}",
            serde_json::json!({
                "file": file, "bytes": shape.file_bytes, "g1_points": g1, "g2_points": g2,
                "points": g1 + g2, "log2_points": ((g1 + g2) as f64).log2(),
            })
        );
    }
    let modes: Vec<String> = args.collect();
    let mut i = 0;
    while i < modes.len() {
        let mode = modes[i].as_str();
        let manifest = if mode == "digest" && modes.get(i + 1).is_some_and(|m| m.ends_with(".json"))
        {
            i += 1;
            Some(Path::new(&modes[i]).to_path_buf())
        } else {
            None
        };
        i += 1;
        let (c0, t0) = (cpu_seconds(), Instant::now());
        let points = if mode == "bellperson" {
            let f = std::fs::File::open(path).unwrap();
            let p = bellperson::groth16::Parameters::<blstrs::Bls12>::read(
                BufReader::with_capacity(1 << 20, f),
                true,
            )
            .expect("bellperson reads the file");
            (p.vk.ic.len() + p.h.len() + p.l.len() + p.a.len() + p.b_g1.len() + p.b_g2.len()) as u64
        } else {
            let check: Check = mode.parse().unwrap_or_else(|_| match mode {
                "digest" => Check::TrustedDigest,
                m => panic!("unknown mode {m}"),
            });
            let (_, r) =
                params::load_with_manifest(path, check, manifest.as_deref(), |_| Ok(())).unwrap();
            r.points
        };
        let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
        println!(
            "{}",
            serde_json::json!({
                "mode": mode, "points": points, "wall_s": wall, "cpu_s": cpu,
                "points_per_s": points as f64 / wall, "points_per_cpu_s": points as f64 / cpu,
                "threads": rayon::current_num_threads(),
            })
        );
    }
}

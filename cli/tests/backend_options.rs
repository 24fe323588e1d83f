//! `--g2`, `--backend-opt` and `--devices` on the computing commands (small sizes: CI has two
//! cores).

mod common;

use std::path::PathBuf;
use std::process::Output;

fn bellows(args: &[&str]) -> Output {
    common::cmd(args)
        .env("BELLOWS_NO_PROGRESS", "1")
        .output()
        .expect("the bellows binary runs")
}

/// Runs; asserts exit code `code`; returns (stdout, stderr).
fn run(args: &[&str], code: i32) -> (String, String) {
    common::check(&bellows(args), args, code)
}

fn dir(name: &str) -> PathBuf {
    common::dir("bellows-cli-backend-options", name)
}

#[test]
fn bench_labels_where_the_g2_msm_ran() {
    let base = [
        "--threads",
        "1",
        "bench",
        "--log-size",
        "7",
        "--reps",
        "1",
        "--json",
    ];
    for (g2, on) in [("cpu", "cpu"), ("device", "backend"), ("auto", "cpu")] {
        let mut args = base.to_vec();
        args.extend(["--g2", g2, "--backend-opt", "knob=1", "--devices", "0"]);
        let (out, _) = run(&args, 0);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["g2_on"], on, "--g2 {g2}");
    }
    let (table, _) = run(
        &[
            "--threads",
            "1",
            "bench",
            "--log-size",
            "7",
            "--reps",
            "1",
            "--g2",
            "device",
        ],
        0,
    );
    // The G2 MSM runs in the G1 phase's call: one row for both, no G2 row of its own.
    assert!(
        table.contains("G1 phase + G2 MSM (one backend call)") && !table.contains("G2 MSM (CPU"),
        "{table}"
    );
}

#[test]
fn proofs_are_the_same_wherever_g2_runs() {
    let d = dir("g2");
    let params = d.join("p.params");
    let circuit = ["--circuit", "synthetic", "--log-size", "7"];
    let mut setup = vec![
        "setup",
        "--fast",
        "--seed",
        "1",
        "--out",
        params.to_str().unwrap(),
    ];
    setup.extend(circuit);
    run(&setup, 0);
    let mut proofs = Vec::new();
    for (g2, pipeline) in [("cpu", false), ("device", false), ("device", true)] {
        let out = d.join(format!("{g2}-{pipeline}.proof"));
        let mut args = vec![
            "prove",
            "--params",
            params.to_str().unwrap(),
            "--count",
            "2",
            "--seed",
            "4",
            "--g2",
            g2,
            "--out",
            out.to_str().unwrap(),
            "--inputs-out",
        ];
        let inputs = d.join(format!("{g2}-{pipeline}.json"));
        args.push(inputs.to_str().unwrap());
        args.extend(circuit);
        if pipeline {
            args.push("--pipeline");
        }
        run(&args, 0);
        proofs.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(proofs[0].len(), 2 * 192);
    assert_eq!(
        proofs[0], proofs[1],
        "G2 on CPU threads or on the backend: same bytes"
    );
    // The pipeline draws r, s per proof: other bytes, same length.
    assert_eq!(proofs[2].len(), 2 * 192);
}

#[test]
fn bad_backend_options_are_errors() {
    // Usage errors (clap): an unknown --g2 value, an option without `=`.
    let (_, err) = run(&["demo", "--log-size", "6", "--g2", "gpu"], 2);
    assert!(err.contains("gpu"), "{err}");
    let (_, err) = run(&["demo", "--log-size", "6", "--backend-opt", "novalue"], 2);
    assert!(err.contains("KEY=VALUE"), "{err}");
    // Value errors: a repeated or non-numeric device.
    let (_, err) = run(&["demo", "--log-size", "6", "--devices", "0,0"], 1);
    assert!(err.contains("listed twice"), "{err}");
    let (_, err) = run(&["demo", "--log-size", "6", "--devices", "gpu1"], 1);
    assert!(err.contains("not a device index"), "{err}");
    // The options reach conformance too; its verdict is unchanged by an ignored knob.
    let (out, _) = run(
        &[
            "conformance",
            "--quick",
            "--max-log-size",
            "2",
            "--json",
            "--backend-opt",
            "x=y",
            "--devices",
            "all",
        ],
        0,
    );
    assert!(out.contains("\"result\""), "{out}");
}

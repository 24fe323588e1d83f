//! `--g2`, `--backend-opt` and `--devices` on the computing commands (small sizes: CI has two
//! cores).

mod common;

use std::path::PathBuf;

use common::{argv, s};

fn dir(name: &str) -> PathBuf {
    common::dir("bellows-cli-backend-options", name)
}

/// Runs `line` (`common::argv`'s form) without progress lines; asserts exit code `code`;
/// returns (stdout, stderr).
fn run(line: &str, values: &[&str], code: i32) -> (String, String) {
    let args = argv(line, values);
    let o = common::cmd(&args)
        .env("BELLOWS_NO_PROGRESS", "1")
        .output()
        .unwrap();
    common::check(&o, &args, code)
}

#[test]
fn bench_labels_where_the_g2_msm_ran() {
    let bench = "--threads 1 bench --log-size 7 --reps 1";
    for (g2, on) in [("cpu", "cpu"), ("device", "backend"), ("auto", "cpu")] {
        let line = format!("{bench} --json --g2 {g2} --backend-opt knob=1 --devices 0");
        let (out, _) = run(&line, &[], 0);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["g2_on"], on, "--g2 {g2}");
    }
    let (table, _) = run(&format!("{bench} --g2 device"), &[], 0);
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
    let circuit = "--circuit synthetic --log-size 7";
    let setup = format!("setup --fast --seed 1 --out {{}} {circuit}");
    run(&setup, &[s(&params)], 0);
    let mut proofs = Vec::new();
    for (g2, pipeline) in [("cpu", false), ("device", false), ("device", true)] {
        let out = d.join(format!("{g2}-{pipeline}.proof"));
        let inputs = d.join(format!("{g2}-{pipeline}.json"));
        let pipeline_flag = if pipeline { "--pipeline" } else { "" };
        let prove = format!(
            "prove --params {{}} --count 2 --seed 4 --g2 {g2} --out {{}} --inputs-out {{}} \
             {circuit} {pipeline_flag}"
        );
        run(&prove, &[s(&params), s(&out), s(&inputs)], 0);
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
    // Usage errors (clap): an unknown --g2 value, an option without `=`; value errors: a
    // repeated or non-numeric device.
    let demo = "demo --log-size 6";
    for (options, code, want) in [
        ("--g2 gpu", 2, "gpu"),
        ("--backend-opt novalue", 2, "KEY=VALUE"),
        ("--devices 0,0", 1, "listed twice"),
        ("--devices gpu1", 1, "not a device index"),
    ] {
        let (_, err) = run(&format!("{demo} {options}"), &[], code);
        assert!(err.contains(want), "{options}: {err}");
    }
    // The options reach conformance too; its verdict is unchanged by an ignored knob.
    let conformance = "conformance --quick --max-log-size 2 --json --backend-opt x=y --devices all";
    let (out, _) = run(conformance, &[], 0);
    assert!(out.contains("\"result\""), "{out}");
}

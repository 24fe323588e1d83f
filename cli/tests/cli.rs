//! End-to-end tests of the `bellows` binary (small sizes: CI has two cores).

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{argv, s, text};

fn bellows(args: &[&str]) -> Output {
    common::cmd(args)
        // Pre-compiled constraint systems go to a test folder, not the user's cache.
        .env(
            "BELLOWS_PCE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("bellows-cli-pce"),
        )
        .output()
        .expect("the bellows binary runs")
}

/// Runs and asserts success; returns stdout.
fn ok(args: &[&str]) -> String {
    let o = bellows(args);
    let (out, err) = text(&o);
    assert!(
        o.status.success(),
        "bellows {args:?} failed ({:?})\nstdout:\n{out}\nstderr:\n{err}",
        o.status
    );
    out
}

/// Runs and asserts exit code `code`; returns stderr.
fn fails(args: &[&str], code: i32) -> String {
    common::check(&bellows(args), args, code).1
}

fn dir(name: &str) -> PathBuf {
    common::dir("bellows-cli-tests", name)
}

/// `prove --params PARAMS` of synthetic 2^8 with 30 % of its bits set, followed by `rest`
/// (`common::argv`'s form).
fn prove<'a>(params: &'a Path, rest: &'a str, values: &[&'a str]) -> Vec<&'a str> {
    let circuit = "prove --params {} --circuit synthetic --log-size 8 --bits-pct 30";
    let mut args = argv(circuit, &[s(params)]);
    args.extend(argv(rest, values));
    args
}

/// Real setup at 2^8 with a seed, then one or more proofs; returns (params, vk, proof, inputs).
fn setup_and_prove(d: &Path, count: &str) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let [params, vk, proof, inputs] = ["p.params", "p.vk", "p.proof", "p.json"].map(|f| d.join(f));
    let setup =
        "setup --circuit synthetic --log-size 8 --bits-pct 30 --seed 5 --out {} --vk-out {}";
    let out = ok(&argv(setup, &[s(&params), s(&vk)]));
    assert!(out.contains("trusted parameters: domain 2^8"), "{out}");
    let rest = "--count {} --seed 9 --out {} --inputs-out {}";
    ok(&prove(&params, rest, &[count, s(&proof), s(&inputs)]));
    (params, vk, proof, inputs)
}

#[test]
fn setup_prove_verify_round_trip() {
    let d = dir("round_trip");
    let (params, vk, proof, inputs) = setup_and_prove(&d, "1");
    assert_eq!(std::fs::metadata(&proof).unwrap().len(), 192);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&inputs).unwrap()).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 1);
    assert_eq!(ok(&common::verify_args(&vk, &proof, &inputs)), "valid\n");
    // A whole parameters file serves as the key too.
    assert_eq!(
        ok(&common::verify_args(&params, &proof, &inputs)),
        "valid\n"
    );
}

#[test]
fn seeded_prove_is_byte_identical() {
    let d = dir("seeded");
    let (params, _, proof, _) = setup_and_prove(&d, "1");
    let again = d.join("again.proof");
    let inputs = d.join("a.json");
    ok(&prove(
        &params,
        "--seed 9 --out {} --inputs-out {}",
        &[s(&again), s(&inputs)],
    ));
    assert_eq!(
        std::fs::read(&proof).unwrap(),
        std::fs::read(&again).unwrap()
    );
}

#[test]
fn several_proofs_verify_and_a_wrong_one_is_named() {
    let d = dir("several");
    let (_, vk, proof, inputs) = setup_and_prove(&d, "3");
    assert_eq!(std::fs::metadata(&proof).unwrap().len(), 3 * 192);
    assert_eq!(ok(&common::verify_args(&vk, &proof, &inputs)), "valid\n");
    // Swap the inputs of proofs 1 and 2.
    let mut json: Vec<Vec<String>> =
        serde_json::from_str(&std::fs::read_to_string(&inputs).unwrap()).unwrap();
    json.swap(1, 2);
    let swapped = d.join("swapped.json");
    std::fs::write(&swapped, serde_json::to_string(&json).unwrap()).unwrap();
    let err = fails(&common::verify_args(&vk, &proof, &swapped), 1);
    assert!(
        err.contains("2 of 3 proofs do not verify (proof 1, 2)"),
        "{err}"
    );
    // A flat array for three proofs.
    let flat = d.join("flat.json");
    std::fs::write(&flat, serde_json::to_string(&json[0]).unwrap()).unwrap();
    let err = fails(&common::verify_args(&vk, &proof, &flat), 1);
    assert!(err.contains("3 proof(s) but"), "{err}");
}

#[test]
fn verify_rejects_bad_proofs_inputs_and_files() {
    let d = dir("bad");
    let (params, vk, proof, inputs) = setup_and_prove(&d, "1");
    let v =
        |vk: &Path, proof: &Path, inputs: &Path| fails(&common::verify_args(vk, proof, inputs), 1);

    // Wrong public input value.
    let good: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(&inputs).unwrap()).unwrap();
    let wrong = d.join("wrong.json");
    std::fs::write(&wrong, "[\"12345\"]").unwrap();
    assert_ne!(good, vec!["12345".to_string()]);
    let err = v(&vk, &proof, &wrong);
    assert!(
        err.starts_with("error: proof is invalid: the proof does not verify"),
        "{err}"
    );

    // Wrong number of public inputs, not a field element, not JSON.
    let two = format!("[\"{}\", \"1\"]", good[0]);
    let big = format!("[\"{}\"]", "9".repeat(80));
    for (name, text, want) in [
        (
            "two.json",
            two.as_str(),
            "expects 1 public inputs, 2 were given",
        ),
        ("big.json", &big, "public input 0"),
        ("junk.json", "not json", "not valid JSON"),
    ] {
        let file = d.join(name);
        std::fs::write(&file, text).unwrap();
        let err = v(&vk, &proof, &file);
        assert!(err.contains(want), "{name}: {err}");
    }

    // Tampered proof: another valid point encoding (C replaced by A), a broken encoding, and
    // a cut one.
    let mut swapped = std::fs::read(&proof).unwrap();
    swapped.copy_within(..48, 144);
    let mut flipped = std::fs::read(&proof).unwrap();
    flipped[10] ^= 0x40;
    let short = flipped[..100].to_vec();
    for (name, bytes, want) in [
        ("swapped.proof", &swapped, "proof is invalid"),
        ("flipped.proof", &flipped, "proof"),
        ("short.proof", &short, "not a positive multiple of 192"),
    ] {
        let file = d.join(name);
        std::fs::write(&file, bytes).unwrap();
        let err = v(&vk, &file, &inputs);
        assert!(err.contains(want), "{name}: {err}");
    }

    // Truncated key and parameters.
    let full = std::fs::read(&params).unwrap();
    let cut = d.join("cut.params");
    std::fs::write(&cut, &full[..full.len() - 50]).unwrap();
    let err = v(&cut, &proof, &inputs);
    assert!(err.contains("malformed"), "{err}");
    let err = fails(&prove(&cut, "--out {}", &[s(&d.join("x.proof"))]), 1);
    assert!(err.starts_with("error: malformed parameters file"), "{err}");
    let missing = d.join("missing.vk");
    assert!(v(&missing, &proof, &inputs).contains("missing.vk"));
}

#[test]
fn benchmark_only_parameters_are_flagged_everywhere() {
    let d = dir("fast");
    let [params, vk, proof, inputs] = ["f.params", "f.vk", "f.proof", "f.json"].map(|f| d.join(f));
    let setup = "setup --circuit synthetic --log-size 8 --fast --out {} --vk-out {}";
    let o = bellows(&argv(setup, &[s(&params), s(&vk)]));
    assert!(o.status.success());
    assert!(text(&o).1.contains("BENCHMARK-ONLY"), "{}", text(&o).1);
    let prove = "prove --params {} --circuit synthetic --log-size 8 --out {} --inputs-out {}";
    let o = bellows(&argv(prove, &[s(&params), s(&proof), s(&inputs)]));
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(text(&o).1.contains("BENCHMARK-ONLY"));
    let err = fails(&common::verify_args(&vk, &proof, &inputs), 1);
    let want = "benchmark-only parameters: their proofs never verify";
    assert!(err.contains(want), "{err}");
}

#[test]
fn params_for_another_circuit_are_refused_before_proving() {
    let d = dir("mismatch");
    let (params, _, _, _) = setup_and_prove(&d, "1");
    let x = d.join("x.proof");
    for (circuit, want) in [
        ("synthetic --log-size 9", "do not fit the circuit"),
        ("sha256 --bytes 1", "do not fit the circuit sha256"),
    ] {
        let line = format!("prove --params {{}} --circuit {circuit} --out {{}}");
        let err = fails(&argv(&line, &[s(&params), s(&x)]), 1);
        assert!(err.contains(want), "{err}");
    }
}

#[test]
fn usage_and_value_errors_have_their_exit_codes() {
    // (command line, exit code, what stderr says; "" where only the code is checked)
    for (line, code, want) in [
        ("setup --circuit synthetic", 2, "--out"),
        ("frobnicate", 2, ""),
        ("prove --count 0 --params p --out o", 2, ""),
        (
            "setup --circuit nope --log-size 8 --out /nonexistent/x",
            1,
            "unknown circuit \"nope\"",
        ),
        (
            "setup --circuit synthetic --log-size 8 --bits-pct 101 --out /nonexistent/x",
            2,
            "0..=100",
        ),
        ("bench --log-size 8 --backend nosuch", 1, "backend nosuch"),
    ] {
        let err = fails(&argv(line, &[]), code);
        assert!(err.contains(want), "{line}: {err}");
    }
}

#[test]
fn help_of_each_command_names_its_options() {
    let cases: &[(&str, &[&str])] = &[
        ("backends", &["--json"]),
        (
            "setup",
            &[
                "--circuit",
                "--log-size",
                "--bits-pct",
                "--fast",
                "--seed",
                "--out",
                "--vk-out",
                "BENCHMARK-ONLY",
            ],
        ),
        (
            "prove",
            &[
                "--params",
                "--circuit",
                "--count",
                "--backend",
                "--seed",
                "--out",
                "--inputs-out",
            ],
        ),
        (
            "verify",
            &["--vk", "--proof", "--inputs", "valid", "exits 0"],
        ),
        (
            "bench",
            &[
                "--circuit",
                "--log-size",
                "--bits-pct",
                "--count",
                "--reps",
                "--backend",
                "--json",
            ],
        ),
        ("demo", &["--circuit", "--log-size", "--backend", "--seed"]),
    ];
    for (cmd, words) in cases {
        let out = ok(&[cmd, "--help"]);
        for w in *words {
            assert!(out.contains(w), "`bellows {cmd} --help` lacks {w}:\n{out}");
        }
        assert!(out.contains("Examples:"), "{cmd}");
    }
    let top = ok(&["--help"]);
    for cmd in [
        "backends",
        "setup",
        "prove",
        "verify",
        "bench",
        "demo",
        "--threads",
        "--verbose",
    ] {
        assert!(top.contains(cmd), "top-level help lacks {cmd}");
    }
}

#[test]
fn backends_lists_cpu() {
    let out = ok(&["backends"]);
    assert!(out.starts_with("cpu "), "{out}");
    assert!(out.contains("capabilities: ntt"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&ok(&["backends", "--json"])).unwrap();
    let cpu = json
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "cpu")
        .expect("cpu listed");
    assert_eq!(cpu["source"], "built-in");
    assert_eq!(cpu["capabilities"]["msm_g1"], true);
    assert!(!cpu["devices"].as_array().unwrap().is_empty());
}

#[test]
fn bench_json_has_every_phase() {
    let line = concat!(
        "--threads 1 bench --circuit synthetic --log-size 8 --bits-pct 50",
        " --count 2 --reps 2 --json"
    );
    let out = ok(&argv(line, &[]));
    let v: serde_json::Value = serde_json::from_str(&out).expect("bench --json prints JSON only");
    assert_eq!(v["circuit"], "synthetic");
    assert_eq!(v["log_size"], 8);
    assert_eq!(v["constraints"], 254);
    assert_eq!(v["bits_pct"], 50);
    assert_eq!(v["count"], 2);
    assert_eq!(v["reps"], 2);
    assert_eq!(v["backend"], "cpu");
    assert_eq!(v["threads"], 1);
    assert_eq!(v["params_kind"], "benchmark-only");
    assert_eq!(v["g2_on"], "cpu");
    assert!(v["host_reserve_s"].as_f64().is_some_and(|s| s >= 0.0));
    for phase in [
        "synthesis",
        "batch_buffers",
        "g1_phase",
        "msm_g2",
        "release",
        "finalize",
        "total",
    ] {
        let p = &v["phases"][phase];
        let (med, min, first) = (
            p["median_s"].as_f64().unwrap(),
            p["min_s"].as_f64().unwrap(),
            p["first_s"].as_f64().unwrap(),
        );
        assert!(min <= med && min >= 0.0, "{phase}: {p}");
        assert!(first >= min, "{phase}: {p}");
    }
    assert!(v["proofs_per_sec"].as_f64().unwrap() > 0.0);
    // The table form names the phases.
    let table = ok(&["bench", "--log-size", "8", "--reps", "1"]);
    for w in [
        "synthesis",
        "h_poly",
        "G1 MSMs",
        "G2 MSM (CPU threads, overlapped)",
        "batch buffers",
        "release",
        "first",
        "finalize",
        "total",
        "proofs/s",
    ] {
        assert!(table.contains(w), "{table}");
    }
}

#[test]
fn bench_alternates_an_environment_variable_per_rep() {
    let line = "bench --log-size 8 --reps 3 --alternate-env BELLOWS_TEST_KNOB=a,b --json";
    let out = ok(&argv(line, &[]));
    let v: serde_json::Value = serde_json::from_str(&out).expect("bench --json prints JSON only");
    let alt = &v["alternate"];
    assert_eq!(alt["name"], "BELLOWS_TEST_KNOB", "{v}");
    // Reps 0, 1, 2 take a, b, a.
    assert_eq!(alt["values"][0]["value"], "a");
    assert_eq!(alt["values"][0]["reps"], 2);
    assert_eq!(alt["values"][1]["value"], "b");
    assert_eq!(alt["values"][1]["reps"], 1);
    for val in alt["values"].as_array().unwrap() {
        let g1 = &val["g1_phase"];
        assert!(g1["median_s"].as_f64().unwrap() > 0.0, "{val}");
        assert!(g1["min_s"].as_f64() <= g1["median_s"].as_f64(), "{val}");
    }
    // Without the option the field is null; the table names each value's line.
    let plain = ok(&["bench", "--log-size", "8", "--reps", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&plain).unwrap();
    assert!(v["alternate"].is_null(), "{v}");
    let table = ok(&argv(
        "bench --log-size 8 --reps 2 --alternate-env K=x,y",
        &[],
    ));
    assert!(
        table.contains("per value of K") && table.contains("K=y"),
        "{table}"
    );
    for bad in ["K", "=a", "K=a,,b", "K-1=a"] {
        let err = fails(&["bench", "--log-size", "8", "--alternate-env", bad], 2);
        assert!(err.contains("--alternate-env"), "{bad}: {err}");
    }
}

/// Runs `bellows demo ARGS` and asserts that its proof verified and the tampered one did not;
/// returns stdout.
fn demo(args: &[&str]) -> String {
    let out = ok(&[&["demo"], args].concat());
    assert!(
        out.contains("valid; with public input + 1: rejected"),
        "{out}"
    );
    out
}

#[test]
fn demo_runs_end_to_end() {
    let out = demo(&["--log-size", "8", "--seed", "3"]);
    assert!(out.contains("4. verify"), "{out}");
}

#[test]
fn demo_default_runs() {
    let out = demo(&[]);
    assert!(out.contains("synthetic 2^12: 4094 constraints"), "{out}");
}

#[test]
fn pipelined_proofs_verify_are_deterministic_and_match_the_batch_inputs() {
    let d = dir("pipeline");
    let (params, vk, batch_proof, batch_inputs) = setup_and_prove(&d, "4");
    let pipelined = |out: &Path, inputs: &Path, budget: &str| {
        let rest = "--count 4 --seed 9 --pipeline --memory-budget {} --out {} --inputs-out {}";
        ok(&prove(&params, rest, &[budget, s(out), s(inputs)]))
    };
    let [p1, i1, p2, i2] = ["a.proof", "a.json", "b.proof", "b.json"].map(|f| d.join(f));
    pipelined(&p1, &i1, "1");
    pipelined(&p2, &i2, "100000000");
    // Same witnesses as the batch mode (same seeds), so the same public inputs.
    assert_eq!(
        std::fs::read(&i1).unwrap(),
        std::fs::read(&batch_inputs).unwrap()
    );
    // Deterministic whatever the budget (and so the scheduling).
    assert_eq!(std::fs::read(&p1).unwrap(), std::fs::read(&p2).unwrap());
    assert_eq!(std::fs::metadata(&p1).unwrap().len(), 4 * 192);
    assert_ne!(
        std::fs::read(&p1).unwrap(),
        std::fs::read(&batch_proof).unwrap()
    );
    assert_eq!(ok(&common::verify_args(&vk, &p1, &i1)), "valid\n");
    // --memory-budget needs --pipeline; --pipeline excludes --batch-size.
    fails(&prove(&params, "--memory-budget 5 --out {}", &[s(&p1)]), 2);
    fails(
        &prove(&params, "--pipeline --batch-size 2 --out {}", &[s(&p1)]),
        2,
    );
}

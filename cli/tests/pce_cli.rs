//! `bellows pce build|info|list`, proving with and without a pre-compiled constraint system
//! (same proofs), refusal of a corrupted cache entry, and `bench --compare-synthesis`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{argv, s};

fn bellows(args: &[&str], pce_dir: &Path) -> Output {
    common::cmd(args)
        .env("BELLOWS_PCE_DIR", pce_dir)
        .output()
        .expect("the bellows binary runs")
}

/// Runs and asserts the exit code; returns (stdout, stderr).
fn run(args: &[&str], pce_dir: &Path, code: i32) -> (String, String) {
    common::check(&bellows(args, pce_dir), args, code)
}

fn dir(name: &str) -> PathBuf {
    common::dir("bellows-pce-cli-tests", name)
}

const CIRCUIT: [&str; 6] = [
    "--circuit",
    "synthetic",
    "--log-size",
    "8",
    "--bits-pct",
    "40",
];

#[test]
fn build_info_and_list() {
    let d = dir("build_info");
    let cache = d.join("cache");
    let (out, _) = run(&[&["pce", "build"][..], &CIRCUIT].concat(), &cache, 0);
    assert!(out.contains("id:              synthetic-k8-b40"), "{out}");
    assert!(out.contains("bytes per non-zero"), "{out}");
    assert!(out.contains("constraints:     254"), "{out}");
    let entry = cache.join("synthetic-k8-b40.pce");
    assert!(entry.is_file(), "{out}");
    let (info, _) = run(&[&["pce", "info"][..], &CIRCUIT].concat(), &cache, 0);
    assert!(info.contains("shape digest:"), "{info}");
    let (by_file, _) = run(&["pce", "info", "--file", s(&entry)], &cache, 0);
    let digest = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("shape digest:"))
            .unwrap()
            .to_string()
    };
    assert_eq!(digest(&info), digest(&by_file));
    let (list, _) = run(&["pce", "list"], &cache, 0);
    assert!(list.starts_with("synthetic-k8-b40  "), "{list}");
    // A missing entry is a clear error.
    let (_, err) = run(&argv("pce info --circuit sha256 --bytes 3", &[]), &cache, 1);
    assert!(err.contains("no recording of sha256-n3"), "{err}");
}

#[test]
fn proofs_are_the_same_with_and_without_pce_and_a_corrupted_entry_is_refused() {
    let d = dir("prove");
    let cache = d.join("cache");
    let params = d.join("p.params");
    let vk = d.join("p.vk");
    run(
        &[
            &["setup"][..],
            &CIRCUIT,
            &["--seed", "5", "--out", s(&params), "--vk-out", s(&vk)],
        ]
        .concat(),
        &cache,
        0,
    );
    let prove = |name: &str, extra: &[&str], code: i32| {
        let proof = d.join(format!("{name}.proof"));
        let inputs = d.join(format!("{name}.json"));
        let args = [
            &["prove", "--params", s(&params)][..],
            &CIRCUIT,
            &["--count", "3", "--seed", "9"],
            &["--out", s(&proof), "--inputs-out", s(&inputs)],
            extra,
        ]
        .concat();
        let (out, err) = run(&args, &cache, code);
        (proof, inputs, out, err)
    };
    // Status lines go to stderr (stdout carries only the public inputs).
    let (p1, i1, _, out1) = prove("first", &[], 0);
    assert!(out1.contains("recorded (one-time) and cached"), "{out1}");
    let (p2, _, _, out2) = prove("second", &[], 0);
    assert!(out2.contains("synthetic-k8-b40, loaded"), "{out2}");
    let (p3, _, _, out3) = prove("direct", &["--no-pce"], 0);
    assert!(!out3.contains("pre-compiled"), "{out3}");
    let bytes = |p: &Path| std::fs::read(p).unwrap();
    assert_eq!(bytes(&p1), bytes(&p2));
    assert_eq!(bytes(&p1), bytes(&p3));
    run(&common::verify_args(&vk, &p1, &i1), &cache, 0);
    // The pipeline with and without the recording.
    let (p4, _, _, _) = prove("pipe", &["--pipeline"], 0);
    let (p5, _, _, _) = prove("pipe-direct", &["--pipeline", "--no-pce"], 0);
    assert_eq!(bytes(&p4), bytes(&p5));
    // A corrupted entry: refused with the reason and the way out; --no-pce still proves.
    let entry = cache.join("synthetic-k8-b40.pce");
    let mut b = bytes(&entry);
    let mid = b.len() / 2;
    b[mid] ^= 1;
    std::fs::write(&entry, &b).unwrap();
    let (_, _, _, err) = prove("bad", &[], 1);
    assert!(err.contains("corrupted"), "{err}");
    assert!(err.contains("--no-pce"), "{err}");
    let (_, err) = run(&[&["pce", "info"][..], &CIRCUIT].concat(), &cache, 1);
    assert!(err.contains("shape digest mismatch"), "{err}");
    prove("bad-direct", &["--no-pce"], 0);
    // Rebuilding replaces it.
    let (out, _) = run(&[&["pce", "build"][..], &CIRCUIT].concat(), &cache, 0);
    assert!(out.contains("(replaced)"), "{out}");
    let (p6, _, _, _) = prove("rebuilt", &[], 0);
    assert_eq!(bytes(&p1), bytes(&p6));
}

#[test]
fn bench_compares_synthesis_and_ends_with_the_ratio() {
    let d = dir("bench");
    let line = "--threads 2 bench --compare-synthesis --circuit sha256 --bytes 2 --reps 1";
    let (out, _) = run(&argv(line, &[]), &d, 0);
    assert!(out.contains("agree bit for bit"), "{out}");
    assert!(out.contains("  direct ") && out.contains("  pce "), "{out}");
    let last = out.lines().last().unwrap();
    let ratio = last
        .strip_prefix("ratio pce/direct: ")
        .unwrap_or_else(|| panic!("last line: {last}"));
    assert_eq!(ratio.len(), 4, "two decimals: {last}");
    assert!(ratio.parse::<f64>().unwrap() > 0.0, "{last}");
    // The normal bench reports the mode, and --no-pce switches it.
    let json = |extra: &[&str]| -> serde_json::Value {
        let args = [
            &["bench", "--log-size", "8", "--reps", "1", "--json"][..],
            extra,
        ]
        .concat();
        serde_json::from_str(&run(&args, &d, 0).0).unwrap()
    };
    let v = json(&[]);
    assert_eq!(v["synthesis_mode"], "pce");
    assert!(v["pce_bytes"].as_u64().unwrap() > 0);
    let v = json(&["--no-pce"]);
    assert_eq!(v["synthesis_mode"], "direct");
    assert!(v["pce_bytes"].is_null());
}

#[test]
fn two_processes_building_one_entry_leave_one_whole_file() {
    let d = dir("two_processes");
    let cache = d.join("cache");
    let args = [&["pce", "build"][..], &CIRCUIT].concat();
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_bellows"))
            .args(&args)
            .env("BELLOWS_PCE_DIR", &cache)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("the bellows binary runs")
    };
    let children: Vec<_> = (0..3).map(|_| spawn()).collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let (info, _) = run(&[&["pce", "info"][..], &CIRCUIT].concat(), &cache, 0);
    assert!(info.contains("synthetic-k8-b40"), "{info}");
    // The folder's tag key (`.key`) is made once by whichever process got there first.
    let mut names: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![".key".to_string(), "synthetic-k8-b40.pce".to_string()],
        "one entry and the folder's key, no temporary files left"
    );
}

#[test]
fn without_a_cache_folder_prove_records_in_memory() {
    let d = dir("no_cache_dir");
    let params = d.join("p.params");
    let cache = d.join("unused");
    run(
        &[&["setup"][..], &CIRCUIT, &["--fast", "--out", s(&params)]].concat(),
        &cache,
        0,
    );
    let proof = d.join("x.proof");
    let prove = "prove --params {} --skip-subgroup-checks --seed 1 --out {}";
    let o = common::cmd(&[&argv(prove, &[s(&params), s(&proof)])[..], &CIRCUIT].concat())
        .env_remove("BELLOWS_PCE_DIR")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("HOME")
        .output()
        .unwrap();
    let (out, err) = common::text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(err.contains("recorded (one-time, not cached)"), "{err}");
    assert!(err.contains("set BELLOWS_PCE_DIR"), "{err}");
    assert!(!cache.exists());
}

//! The local commands against #43's cases, through the built binary: several outputs written
//! all or none (item 2), a path that names a folder refused before any work (item 13), proofs
//! verified before they are written (item 6), memory estimated before recording (item 8),
//! cache entries that are not regular files (item 10), `pce info --file FOLDER` (item 11), a
//! throughput bench interrupted (item 15), and what `verify --help` says of keys (item 17).
//! Synthetic 2^8: a few seconds in all.

mod common;

use std::time::{Duration, Instant};

use common::{argv, check, cmd, dir, params, refused, run, s};

#[test]
fn outputs_are_written_all_or_none() {
    // Item 2: before, `setup --out P --vk-out K --force` with K failing replaced P and kept the
    // old key beside the new parameters.
    let d = dir("local-trust", "all-or-none");
    let params = params(&d, 8);
    let before = std::fs::read(&params).unwrap();
    // The key's write fails (a device that is full), after the parameters were made.
    let setup = "setup --log-size 8 --seed 2 --out {} --vk-out {} --force";
    refused(setup, &[s(&params), "/dev/full"], 1, "/dev/full");
    assert_eq!(
        std::fs::read(&params).unwrap(),
        before,
        "the old parameters stay"
    );
    let mut left: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, vec!["p.params"], "no temporary file left");
    // And both together when nothing fails.
    let vk = d.join("p.vk");
    run(&argv(setup, &[s(&params), s(&vk)]), 0);
    assert_ne!(std::fs::read(&params).unwrap(), before);
    assert!(vk.is_file());
}

#[test]
fn an_output_that_names_a_folder_is_refused_before_any_work() {
    // Item 13: before, `--out newparams/` failed after the whole setup, and `--vk-out vk.d/`
    // after the parameters were written.
    let d = dir("local-trust", "folders");
    let out = d.join("p.params");
    for (flag, path) in [
        ("--out", format!("{}/new/", d.display())),
        ("--vk-out", format!("{}/vk.d/", d.display())),
    ] {
        let mut args = vec!["setup", "--log-size", "8", "--seed", "1"];
        if flag == "--out" {
            args.extend(["--out", path.as_str()]);
        } else {
            args.extend(["--out", s(&out), "--vk-out", path.as_str()]);
        }
        let t = Instant::now();
        let (_, err) = run(&args, 2);
        assert!(err.contains("names a folder"), "{err}");
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(!out.exists(), "nothing written");
    }
}

#[test]
fn proofs_that_do_not_verify_are_not_written() {
    // Item 6: parameters of synthetic 2^8 without bits, proofs of the circuit with half its
    // constraints bits (the same shape): before, `prove` exited 0 with proofs that fail.
    let d = dir("local-trust", "verify-first");
    let params = params(&d, 8);
    let (proof, inputs) = (d.join("x.proof"), d.join("x.json"));
    let files = [s(&params), s(&proof), s(&inputs)];
    let prove = "prove --params {} --log-size 8 --no-pce --out {} --inputs-out {}";
    refused(
        &format!("{prove} --bits-pct 50"),
        &files,
        1,
        "does not verify",
    );
    assert!(!proof.exists() && !inputs.exists());
    let (_, err) = run(&argv(&format!("{prove} --count 3"), &files), 0);
    assert!(err.contains("verified in"), "{err}");
}

#[test]
fn recordings_larger_than_memory_are_refused_at_once() {
    // Item 8: before, `pce build --log-size 30` and `bench --compare-synthesis -k 30` grew
    // until the machine ran out of memory.
    let d = dir("local-trust", "pce-memory");
    for args in [
        vec!["pce", "build", "--log-size", "30", "--pce-dir", s(&d)],
        vec!["bench", "--compare-synthesis", "-k", "30"],
    ] {
        let t = Instant::now();
        let o = cmd(&args)
            .env("BELLOWS_MEMORY_LIMIT", "4000000000")
            .output()
            .unwrap();
        let (_, err) = check(&o, &args, 1);
        assert!(
            err.contains("needs about") && err.contains("nothing was done"),
            "{err}"
        );
        assert!(t.elapsed() < Duration::from_secs(5), "{args:?}");
    }
}

#[test]
fn cache_entries_that_are_not_regular_files_are_refused_without_opening_them() {
    // Item 10: before, a named pipe in the cache hung prove, pce list and pce info, and a link
    // to /dev/zero was written through by pce build.
    let d = dir("local-trust", "cache-kinds");
    let params = params(&d, 8);
    let cache = d.join("pce");
    std::fs::create_dir_all(&cache).unwrap();
    let entry = cache.join("synthetic-k8-b0.pce");
    let made = std::process::Command::new("mkfifo")
        .arg(&entry)
        .status()
        .unwrap();
    assert!(made.success());
    let x = d.join("x.proof");
    let prove = argv(
        "prove --params {} --log-size 8 --out {}",
        &[s(&params), s(&x)],
    );
    for (args, code) in [
        (prove, 1),
        (argv("pce info --log-size 8", &[]), 1),
        (vec!["pce", "list"], 0),
    ] {
        let args = [&args[..], &["--pce-dir", s(&cache)]].concat();
        let (out, err) = run(&args, code);
        let named = (out + &err).contains("not a regular file");
        assert!(named, "{args:?}: {err}");
    }
    std::fs::remove_file(&entry).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &entry).unwrap();
    refused(
        "pce build --log-size 8 --pce-dir {}",
        &[s(&cache)],
        1,
        "a symbolic link",
    );
    // Item 11: a folder given as the file is named as one.
    refused("pce info --file {}", &[s(&d)], 1, "is a folder");
}

#[test]
fn an_interrupted_throughput_bench_removes_its_temporary_folder() {
    // Item 15: before, SIGINT or SIGTERM left /tmp/bellows-bench-serve-PID with its
    // parameters.
    let child = cmd(&argv(
        "bench --concurrency 1 --count 1000 -k 8 --no-pce",
        &[],
    ))
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let tmp = std::env::temp_dir().join(format!("bellows-bench-serve-{}", child.id()));
    let params = tmp.join("bench.params");
    let t = Instant::now();
    // Another process's progress: there is nothing to wait on but its files.
    while !params.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the bench made no parameters"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(!tmp.exists(), "{} is left", tmp.display());
}

#[test]
fn verify_says_a_key_must_come_from_a_trusted_setup() {
    // Item 17: the unsafe-key check is a partial guard, and proofs are malleable.
    let (out, _) = run(&["verify", "--help"], 0);
    for words in [
        "trusted setup",
        "partial guard",
        "δ = 2γ",
        "(−A, −B, C)",
        "(k·A, B/k, C)",
    ] {
        assert!(out.contains(words), "{words:?} missing from:\n{out}");
    }
}

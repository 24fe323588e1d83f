//! Issue 9, case by case: no bad path, size, stream or key crashes the binary, loses a file or
//! passes a forged proof. Each test names the case it keeps from coming back.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use common::{argv, cmd, refused, run, s, verify_args};

fn dir(name: &str) -> PathBuf {
    common::dir("bellows-hardening", name)
}

/// Parameters, key, one proof and its inputs at 2^8, made once for all tests (read-only).
struct Fixture {
    params: PathBuf,
    vk: PathBuf,
    proof: PathBuf,
    inputs: PathBuf,
}

static FIXTURE: OnceLock<Fixture> = OnceLock::new();

fn fixture() -> &'static Fixture {
    FIXTURE.get_or_init(|| {
        let d = dir("fixture");
        let f = Fixture {
            params: d.join("p.params"),
            vk: d.join("p.vk"),
            proof: d.join("p.proof"),
            inputs: d.join("p.json"),
        };
        let setup = "setup --log-size 8 --seed 1 --out {} --vk-out {}";
        run(&argv(setup, &[s(&f.params), s(&f.vk)]), 0);
        let prove = "prove --params {} --log-size 8 --seed 2 --out {} --inputs-out {}";
        run(&argv(prove, &[s(&f.params), s(&f.proof), s(&f.inputs)]), 0);
        f
    })
}

/// `prove` with the fixture's parameters (seed 3), then `rest` (`common::argv`'s form).
fn prove_args<'a>(f: &'a Fixture, rest: &'a str, values: &[&'a str]) -> Vec<&'a str> {
    let mut v = argv("prove --params {} --log-size 8 --seed 3", &[s(&f.params)]);
    v.extend(argv(rest, values));
    v
}

#[cfg(unix)]
fn is_char_device(p: &str) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(p).unwrap().file_type().is_char_device()
}

// ---- Data loss ----

#[cfg(unix)]
#[test]
fn devices_are_written_through_not_replaced() {
    let f = fixture();
    run(
        &prove_args(f, "--out /dev/null --inputs-out /dev/null", &[]),
        0,
    );
    assert!(is_char_device("/dev/null"), "/dev/null was replaced");
    if Path::new("/dev/full").exists() {
        let (_, err) = run(&prove_args(f, "--out /dev/full", &[]), 1);
        let full = err.contains("/dev/full") && err.contains("No space left");
        assert!(full, "{err}");
        assert!(is_char_device("/dev/full"));
    }
}

#[cfg(unix)]
#[test]
fn fifos_are_written_through_and_links_followed() {
    let (f, d) = (fixture(), dir("fifo"));
    let fifo = d.join("out.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        run(&prove_args(f, "--out {}", &[s(&fifo)]), 0);
        assert_eq!(
            reader.join().unwrap().len(),
            192,
            "the proof came through the FIFO"
        );
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }
    // A symbolic link: its target is replaced, the link stays.
    let target = d.join("target.proof");
    std::fs::write(&target, b"old").unwrap();
    let link = d.join("link.proof");
    std::os::unix::fs::symlink("target.proof", &link).unwrap();
    run(&prove_args(f, "--out {} --force", &[s(&link)]), 0);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::metadata(&target).unwrap().len(), 192);
}

#[test]
fn an_output_equal_to_an_input_or_another_output_is_refused() {
    let (f, d) = (fixture(), dir("same"));
    let cp = d.join("cp.params");
    std::fs::copy(&f.params, &cp).unwrap();
    let before = std::fs::read(&cp).unwrap();
    let prove = "prove --params {} --log-size 8 --out {}";
    let line = format!("{prove} --force");
    refused(&line, &[s(&cp), s(&cp)], 2, "same file as --params");
    assert_eq!(
        std::fs::read(&cp).unwrap(),
        before,
        "the parameters survived"
    );
    // Through another spelling of the same path, too.
    let other = d.join(".").join("cp.params");
    run(&argv(prove, &[s(&cp), s(&other)]), 2);
    let same = d.join("same.p");
    let setup = "setup --log-size 8 --out {} --vk-out {}";
    refused(setup, &[s(&same), s(&same)], 2, "are the same file");
    assert!(!same.exists());
    let x = d.join("x");
    let (_, err) = run(
        &prove_args(f, "--out {} --inputs-out {}", &[s(&x), s(&x)]),
        2,
    );
    assert!(err.contains("are the same file"), "{err}");
    assert!(!x.exists());
}

#[test]
fn existing_outputs_are_replaced_only_with_force() {
    let (f, d) = (fixture(), dir("force"));
    let out = d.join("x.proof");
    std::fs::write(&out, b"keep me").unwrap();
    let (_, err) = run(&prove_args(f, "--out {}", &[s(&out)]), 1);
    assert!(err.contains("already exists: give --force"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    let params = d.join("p.params");
    std::fs::write(&params, b"old parameters").unwrap();
    run(&["setup", "--log-size", "8", "--out", s(&params)], 1);
    assert_eq!(std::fs::read(&params).unwrap(), b"old parameters");
    run(&prove_args(f, "--out {} --force", &[s(&out)]), 0);
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 192);
}

#[test]
fn every_output_path_is_checked_before_the_work() {
    let (f, d) = (fixture(), dir("paths"));
    let proof = d.join("x.proof");
    let no_json = d.join("nodir/x.json");
    let line = "--out {} --inputs-out {}";
    let (_, err) = run(&prove_args(f, line, &[s(&proof), s(&no_json)]), 1);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!err.contains("proved"), "refused before proving: {err}");
    let params = d.join("p.params");
    let no_vk = d.join("nodir/x.vk");
    refused(
        "setup --log-size 8 --out {} --vk-out {}",
        &[s(&params), s(&no_vk)],
        1,
        "nodir",
    );
    let no_proof = d.join("nodir/x.proof");
    let (_, err) = run(&prove_args(f, "--out {}", &[s(&no_proof)]), 1);
    assert!(err.contains("nodir"), "{err}");
    let (_, err) = run(&prove_args(f, "--out {}", &[s(&d)]), 1);
    assert!(err.contains("is a folder"), "{err}");
    // Nothing was written, no temporary file left.
    let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

// ---- Crash or exhaustion ----

/// The fixture's key followed by an h section announcing `h` points and empty other sections,
/// as a sparse file of the size those points need.
fn sparse_params(path: &Path, h: u32) {
    let vk = std::fs::read(&fixture().vk).unwrap();
    let mut head = vk.clone();
    head.extend_from_slice(&h.to_be_bytes());
    let total = head.len() as u64 + u64::from(h) * 96 + 4 * 4;
    let file = std::fs::File::create(path).unwrap();
    std::io::Write::write_all(&mut &file, &head).unwrap();
    file.set_len(total).unwrap();
}

#[test]
fn a_huge_declared_section_is_refused_before_any_allocation() {
    let d = dir("sparse");
    let p = d.join("huge.params");
    sparse_params(&p, (1 << 28) - 1);
    let x = d.join("x");
    let prove = "prove --params {} --log-size {} --out {}";
    refused(prove, &[s(&p), "8", s(&x)], 1, "do not fit the circuit");
    // With a matching circuit size the memory estimate (or the first point) refuses it.
    let (_, err) = run(&argv(prove, &[s(&p), "28", s(&x)]), 1);
    let estimated = err.contains("needs about") || err.contains("invalid point");
    assert!(estimated, "{err}");
    let _ = std::fs::remove_file(&p);
}

#[test]
fn counts_sizes_and_threads_are_bounded() {
    let f = fixture();
    for extra in ["", "--pipeline"] {
        let line = format!("--count 4294967295 --out /dev/null {extra}");
        let (_, err) = run(&prove_args(f, &line, &[]), 2);
        assert!(err.contains("2^22"), "{err}");
    }
    run(&["bench", "--log-size", "8", "--count", "4294967295"], 2);
    let (_, err) = run(&["bench", "--log-size", "8", "--count", "4194304"], 1);
    assert!(err.contains("needs about") && err.contains("GiB"), "{err}");
    refused("--threads 65535 backends", &[], 2, "--threads");
    let setup = "setup --circuit sha256 --bytes 67108864 --out /dev/null";
    refused(setup, &[], 2, "largest Groth16 domain");
}

#[test]
fn setup_beyond_memory_is_refused_with_the_estimate() {
    // Exit code 1 and stderr under a 1 GB memory limit.
    let limited = |line: &str| {
        let o = cmd(&argv(line, &[]))
            .env("BELLOWS_MEMORY_LIMIT", "1000000000")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(1), "{line}: {err}");
        err
    };
    for k in ["20", "28", "32"] {
        let err = limited(&format!("setup --log-size {k} --out /dev/null"));
        let estimate = err.contains("needs about") && err.contains("953.7 MiB");
        assert!(estimate, "{err}");
    }
    limited("setup --fast --log-size 24 --out /dev/null");
    // Refused before the circuit is run.
    limited("setup --circuit sha256 --bytes 1MiB --out /dev/null");
}

#[cfg(unix)]
#[test]
fn endless_streams_are_read_with_a_bound() {
    let f = fixture();
    let (_, err) = run(&verify_args(&f.vk, Path::new("/dev/zero"), &f.inputs), 1);
    assert!(err.contains("proof 0"), "{err}");
    let (_, err) = run(&verify_args(&f.vk, &f.proof, Path::new("/dev/zero")), 1);
    assert!(err.contains("bytes allowed"), "{err}");
    let (_, err) = run(&verify_args(Path::new("/dev/zero"), &f.proof, &f.inputs), 1);
    assert!(err.contains("no IC points"), "{err}");
}

#[cfg(unix)]
#[test]
fn stdout_failures_end_cleanly() {
    let f = fixture();
    if Path::new("/dev/full").exists() {
        for args in [
            verify_args(&f.vk, &f.proof, &f.inputs),
            vec!["backends", "--json"],
            vec!["--help"],
        ] {
            let o = cmd(&args)
                .stdout(std::fs::File::create("/dev/full").unwrap())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
            assert!(err.contains("writing to stdout"), "{err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
    // A reader that went away (`| true`): no panic, the verdict's exit code.
    let mut child = cmd(&verify_args(&f.vk, &f.proof, &f.inputs))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

// ---- Forgery ----

/// The fixture's key with γ replaced by the identity, and the proof A = α, B = β, C = 0.
#[test]
fn a_key_with_identity_gamma_and_its_forged_proof_are_refused() {
    let (f, d) = (fixture(), dir("forgery"));
    let mut vk = std::fs::read(&f.vk).unwrap();
    // alpha_g1 (96) beta_g1 (96) beta_g2 (192) gamma_g2 (192) ...
    let gamma = 96 + 96 + 192;
    vk[gamma..gamma + 192].fill(0);
    vk[gamma] = 0x40;
    let bad_vk = d.join("forged.vk");
    std::fs::write(&bad_vk, &vk).unwrap();
    let alpha = blstrs::G1Affine::from_uncompressed(&vk[..96].try_into().unwrap()).unwrap();
    let beta = blstrs::G2Affine::from_uncompressed(&vk[192..384].try_into().unwrap()).unwrap();
    let mut proof = Vec::new();
    proof.extend_from_slice(&alpha.to_compressed());
    proof.extend_from_slice(&beta.to_compressed());
    proof.extend_from_slice(&blstrs::G1Affine::default().to_compressed());
    let forged = d.join("forged.proof");
    std::fs::write(&forged, &proof).unwrap();
    for x in ["12345", "0", "1"] {
        let inputs = d.join("x.json");
        std::fs::write(&inputs, format!("[\"{x}\"]")).unwrap();
        let (out, err) = run(&verify_args(&bad_vk, &forged, &inputs), 1);
        assert!(!out.contains("valid"), "{out}");
        assert!(
            err.contains("gamma_g2") && err.contains("point at infinity"),
            "{err}"
        );
    }
}

// ---- Misleading or unclear ----

#[test]
fn stdout_of_prove_is_the_public_inputs_alone() {
    let (f, d) = (fixture(), dir("stdout"));
    let proof = d.join("x.proof");
    let (out, err) = run(&prove_args(f, "--out {}", &[s(&proof)]), 0);
    assert!(err.contains("proved 1"), "status lines on stderr: {err}");
    let inputs = d.join("x.json");
    std::fs::write(&inputs, &out).unwrap();
    let (out, _) = run(&verify_args(&f.vk, &proof, &inputs), 0);
    assert_eq!(out, "valid\n");
}

#[cfg(unix)]
#[test]
fn non_files_and_wrong_kinds_of_file_get_messages_that_name_them() {
    let (f, d) = (fixture(), dir("kinds"));
    let x = d.join("x");
    let prove = "prove --params {} --log-size 8 --out {}";
    for (params, want) in [
        ("/dev/zero", "character device, not a regular file"),
        (s(&d), "is a folder, not a file"),
        (s(&f.vk), "this is a verifying key file"),
    ] {
        refused(prove, &[params, s(&x)], 1, want);
    }
    let (_, err) = run(&verify_args(&d, &f.proof, &f.inputs), 1);
    assert!(err.contains("is a folder"), "{err}");
    // A key through a pipe is read (bounded); a parameters file through a pipe is refused.
    let piped = |file: &Path| {
        let mut c = cmd(&verify_args(Path::new("/dev/stdin"), &f.proof, &f.inputs));
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let data = std::fs::read(file).unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let w = std::thread::spawn(move || {
            let _ = std::io::Write::write_all(&mut stdin, &data);
        });
        let o = child.wait_with_output().unwrap();
        let _ = w.join();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    assert_eq!(piped(&f.vk).0, Some(0));
    let (code, err) = piped(&f.params);
    assert_eq!(code, Some(1));
    assert!(err.contains("read only from a regular file"), "{err}");
}

#[test]
fn numbers_out_of_range_are_usage_errors_that_say_why() {
    // (command line, what stderr says; "" where only the exit code is checked)
    for (line, want) in [
        ("bench --log-size 8 --count -1", "negative"),
        ("setup --log-size 2 --out /dev/null", "3..=32"),
        ("setup --log-size 40 --out /dev/null", "--log-size"),
        ("demo --log-size 1", ""),
        ("setup --log-size 8 --bits-pct 101 --out /dev/null", ""),
        (
            "setup --circuit sha256 --log-size 10 --out /dev/null",
            "15..=32",
        ),
    ] {
        refused(line, &[], 2, want);
    }
}

#[test]
fn memory_budget_and_bytes_take_units() {
    let f = fixture();
    let pipelined = "--pipeline --memory-budget {} --out /dev/null";
    let line = format!("{pipelined} --inputs-out /dev/null");
    run(&prove_args(f, &line, &["1GiB"]), 0);
    let (_, err) = run(&prove_args(f, pipelined, &["8XB"]), 2);
    assert!(err.contains("unknown unit"), "{err}");
}

#[test]
fn a_byte_order_mark_in_the_inputs_is_accepted() {
    let (f, d) = (fixture(), dir("bom"));
    let bom = d.join("bom.json");
    let mut text = "\u{feff}".as_bytes().to_vec();
    text.extend(std::fs::read(&f.inputs).unwrap());
    std::fs::write(&bom, text).unwrap();
    let (out, _) = run(&verify_args(&f.vk, &f.proof, &bom), 0);
    assert_eq!(out, "valid\n");
}

#[test]
fn no_colour_codes_when_stderr_is_not_a_terminal() {
    let o = cmd(&["-vv", "bench", "--log-size", "6", "--reps", "1"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains('\u{1b}'), "{err}");
    // -vv shows the phases' spans closing.
    assert!(err.contains("synthesis") && err.contains("close"), "{err}");
}

/// A run killed while its outputs are prepared (here: during a setup) leaves no file behind:
/// the temporary files are unnamed until complete (Linux's O_TMPFILE).
#[cfg(target_os = "linux")]
#[test]
fn a_killed_run_leaves_nothing_behind() {
    let d = dir("killed");
    let (params, vk) = (d.join("p.params"), d.join("p.vk"));
    let mut child = cmd(&argv(
        "setup --log-size 16 --out {} --vk-out {}",
        &[s(&params), s(&vk)],
    ))
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap();
    let _ = child.wait();
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

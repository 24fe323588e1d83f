//! Helpers shared by the CLI's integration tests (each test file includes this module).

#![allow(dead_code)]

pub mod daemon;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `bellows` binary with `args`, without the caller's `RUST_LOG` and plugins (no
/// `BELLOWS_PLUGIN_PATH`, a user library folder that does not exist).
pub fn cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_bellows"));
    c.args(args)
        .env_remove("RUST_LOG")
        .env_remove("BELLOWS_PLUGIN_PATH")
        .env("BELLOWS_USER_LIB_DIR", "/nonexistent-bellows-lib");
    c
}

/// stdout and stderr as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Asserts that the run of `args` exited with `code` and did not panic; returns (stdout,
/// stderr).
pub fn check(o: &Output, args: &[&str], code: i32) -> (String, String) {
    let (out, err) = text(o);
    assert_eq!(
        o.status.code(),
        Some(code),
        "bellows {args:?}\nstdout:\n{out}\nstderr:\n{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    (out, err)
}

/// Runs the `bellows` binary with `args` and asserts that it exited with `code` and did not
/// panic; returns (stdout, stderr).
pub fn run(args: &[&str], code: i32) -> (String, String) {
    check(&cmd(args).output().unwrap(), args, code)
}

/// Runs `line` (`argv`'s form) and asserts that it exited with `code` and that its stderr holds
/// `want`.
pub fn refused(line: &str, values: &[&str], code: i32, want: &str) {
    let (_, err) = run(&argv(line, values), code);
    assert!(err.contains(want), "{line}: {err}");
}

/// The arguments of a command line written as one string: its words split at white space,
/// each `{}` replaced by the next of `values` (paths and other values kept whole, spaces and
/// all).
pub fn argv<'a>(line: &'a str, values: &[&'a str]) -> Vec<&'a str> {
    let mut values = values.iter();
    let args = line
        .split_whitespace()
        .map(|w| match w {
            "{}" => *values.next().expect("a value for each {}"),
            w => w,
        })
        .collect();
    assert!(values.next().is_none(), "more values than {{}} in {line:?}");
    args
}

/// Trusted parameters for synthetic 2^`k` (seed 1) in `d/p.params`.
pub fn params(d: &Path, k: u32) -> PathBuf {
    let p = d.join("p.params");
    let k = k.to_string();
    run(
        &argv(
            "setup --circuit synthetic --log-size {} --seed 1 --out {}",
            &[&k, s(&p)],
        ),
        0,
    );
    p
}

/// Trusted parameters and their verifying key for synthetic 2^`k` (seed 1), in `d/p.params`
/// and `d/p.vk`.
pub fn params_and_key(d: &Path, k: u32) -> (PathBuf, PathBuf) {
    let (p, vk) = (d.join("p.params"), d.join("p.vk"));
    let k = k.to_string();
    let line = "setup --circuit synthetic --log-size {} --seed 1 --out {} --vk-out {}";
    run(&argv(line, &[&k, s(&p), s(&vk)]), 0);
    (p, vk)
}

/// A fresh, empty folder `group/name` under the test target's temporary folder.
pub fn dir(group: &str, name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(group)
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A path as `&str` (test paths are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The arguments of `bellows verify` with a key, proofs and inputs.
pub fn verify_args<'a>(vk: &'a Path, proof: &'a Path, inputs: &'a Path) -> Vec<&'a str> {
    vec![
        "verify",
        "--vk",
        s(vk),
        "--proof",
        s(proof),
        "--inputs",
        s(inputs),
    ]
}

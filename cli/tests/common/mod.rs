//! Helpers shared by the CLI's integration tests (each test file includes this module).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `bellows` binary with `args`, without the caller's `RUST_LOG`.
pub fn cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_bellows"));
    c.args(args).env_remove("RUST_LOG");
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

//! `bellows conformance` and the plugin listing of `bellows backends`, end to end.

mod common;

use std::path::{Path, PathBuf};

use bellows_conformance::plugin_build::{build_plugins, Plugins};
use common::argv;

/// Runs `bellows ARGS` with plugins found only on `plugin_path`: (exit code, stdout, stderr).
fn bellows(args: &[&str], plugin_path: Option<&Path>) -> (i32, String, String) {
    let mut c = common::cmd(args);
    if let Some(p) = plugin_path {
        c.env("BELLOWS_PLUGIN_PATH", p);
    }
    let o = c.output().expect("the bellows binary runs");
    let (out, err) = common::text(&o);
    (o.status.code().unwrap_or(-1), out, err)
}

/// `bellows backends --json` with plugins found on `plugin_path`: the entries.
fn listing(plugin_path: &Path) -> Vec<serde_json::Value> {
    let (code, out, err) = bellows(&["backends", "--json"], Some(plugin_path));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v.as_array().unwrap().clone()
}

/// The test plugins, built, and a fresh folder `name` for a plugin path.
fn plugins_and_folder(name: &str) -> (Plugins, PathBuf) {
    let plugins = build_plugins().expect("plugins build");
    (plugins, common::dir("bellows-cli-plugins", name))
}

#[test]
fn conformance_of_the_builtin_and_of_the_cpu_plugin_pass() {
    let (code, out, err) = bellows(&["conformance", "--backend", "cpu", "--quick"], None);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("0 failed"), "{out}");
    // The header tells the built-in from a plugin of the same name.
    assert!(
        out.contains("conformance of cpu 0.1.0 (built-in) against"),
        "{out}"
    );
    assert!(
        out.contains("proof synthetic"),
        "the table names the proof checks: {out}"
    );

    let plugins = build_plugins().expect("plugins build");
    let so = plugins.cpu.display().to_string();
    let line = "conformance --backend {} --quick --max-log-size 6 --json";
    let (code, out, err) = bellows(&argv(line, &[&so]), None);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("--json prints JSON");
    assert!(v.to_string().contains("pass"), "{out}");
    assert_eq!(v["backend_source"], format!("plugin {so}"), "{out}");
}

#[test]
fn conformance_of_a_missing_plugin_fails_clearly() {
    for backend in ["/nonexistent/libbellows_backend_x.so", "no-such-backend"] {
        let (code, _out, err) =
            bellows(&argv("conformance --backend {} --quick", &[backend]), None);
        assert_eq!(code, 1);
        assert!(err.contains(backend), "{err}");
    }
}

#[test]
fn backends_lists_plugins_and_the_reason_a_broken_one_failed() {
    let (plugins, dir) = plugins_and_folder("listed");
    std::fs::copy(&plugins.cpu, dir.join("libbellows_backend_cpu.so")).unwrap();
    std::fs::write(
        dir.join("libbellows_backend_garbage.so"),
        b"this is not an ELF file",
    )
    .unwrap();
    let (code, out, err) = bellows(&["backends"], Some(&dir));
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("cpu 0.1.0 (built-in; --backend cpu)"), "{out}");
    assert!(
        out.contains(&format!(
            "(plugin: {};",
            dir.join("libbellows_backend_cpu.so").display()
        )),
        "{out}"
    );
    assert!(out.contains("libbellows_backend_garbage.so"), "{out}");
    assert!(
        out.contains("unavailable:"),
        "the broken plugin's reason is shown: {out}"
    );
    let arr = listing(&dir);
    assert!(arr
        .iter()
        .any(|e| e["source"] == "plugin" && e["error"].is_null()));
    assert!(arr
        .iter()
        .any(|e| e["source"] == "plugin" && e["error"].is_string()));
    // Proving through the plugin file works like proving with the built-in.
    let so = dir.join("libbellows_backend_cpu.so").display().to_string();
    let line = "bench --backend {} --circuit synthetic --log-size 8 --reps 1";
    let (code, out, err) = bellows(&argv(line, &[&so]), None);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 9: a plugin that aborts in its constructor does not take `bellows backends` down; a
/// folder named like a plugin is not listed; the built-in and the plugin of one name are told
/// apart, with how to select each.
#[test]
fn backends_survives_an_aborting_plugin_and_skips_folders() {
    let (plugins, dir) = plugins_and_folder("abort");
    std::fs::copy(
        plugins.test_plugin("aborts"),
        dir.join("libbellows_backend_aborts.so"),
    )
    .unwrap();
    std::fs::copy(&plugins.cpu, dir.join("libbellows_backend_cpu.so")).unwrap();
    std::fs::create_dir_all(dir.join("libbellows_backend_folder.so")).unwrap();
    let (code, out, err) = bellows(&["backends"], Some(&dir));
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("aborts"), "{out}");
    assert!(out.contains("SIGABRT"), "the abort is named: {out}");
    assert!(!out.contains("folder"), "a folder is not a plugin: {out}");
    assert!(out.contains("cpu 0.1.0 (built-in; --backend cpu)"), "{out}");
    assert!(
        out.contains("the name selects an earlier entry"),
        "the shadowed plugin says how to select it: {out}"
    );
    let arr = listing(&dir);
    let cpu_plugin = arr
        .iter()
        .find(|e| e["name"] == "cpu" && e["source"] == "plugin")
        .unwrap();
    assert_eq!(cpu_plugin["selected_by_name"], false);
    let aborts = arr.iter().find(|e| e["name"] == "aborts").unwrap();
    assert!(
        aborts["error"].as_str().unwrap().contains("signal 6"),
        "{aborts}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A candidate plugin file whose Debug form is its length and SHA-256, not its bytes: a failure
/// report must show why `bellows backends` failed, not megabytes of a shrunk library.
#[derive(Clone)]
struct Mutant(Vec<u8>);

impl std::fmt::Debug for Mutant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(&self.0);
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        write!(f, "{} bytes, sha256 {hex}…", self.0.len())
    }
}

/// Issue 9, item 6: plugin headers. Arbitrary bytes, and truncations and corruptions of a real
/// plugin, placed on the plugin path: `bellows backends` always finishes (exit 0) and lists the
/// file, whatever the loader makes of it (each file is loaded in a child process). Bounded for
/// CI (16 cases; `PROPTEST_CASES` for more).
#[test]
fn backends_survives_arbitrary_plugin_files() {
    use proptest::prelude::*;
    let (plugins, dir) = plugins_and_folder("fuzz");
    let real = std::fs::read(&plugins.cpu).unwrap();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..4096).prop_map(Mutant),
        (
            any::<usize>(),
            proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8)
        )
            .prop_map(move |(cut, flips)| {
                let mut v = real.clone();
                for (at, b) in flips {
                    let i = at % v.len();
                    v[i] = b;
                }
                v.truncate(cut % (v.len() + 1));
                Mutant(v)
            }),
    ];
    let file = dir.join("libbellows_backend_fuzz.so");
    let result = runner.run(&strategy, |Mutant(bytes)| {
        std::fs::write(&file, &bytes).unwrap();
        let (code, out, err) = bellows(&["backends"], Some(&dir));
        prop_assert_eq!(code, 0, "stdout:\n{}\nstderr:\n{}", out, err);
        prop_assert!(out.contains("libbellows_backend_fuzz.so"), "{}", out);
        Ok(())
    });
    match result {
        Ok(()) => {}
        Err(proptest::test_runner::TestError::Fail(why, Mutant(bytes))) => {
            // The shrunk file is kept for a look: the report itself shows only its digest.
            let kept = std::env::temp_dir().join("bellows-fuzz-failing-plugin.so");
            let _ = std::fs::write(&kept, &bytes);
            panic!(
                "{why}\n(the failing file, {} bytes, is kept at {})",
                bytes.len(),
                kept.display()
            );
        }
        Err(e) => panic!("{e}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plugins_log_events_reach_standard_error_under_the_clis_verbosity() {
    let plugins = build_plugins().expect("plugins build");
    let so = plugins.cpu.display().to_string();
    let said = "cpu plugin: its log events go to standard error";
    let run = |verbose: &str| {
        let line = format!("{verbose} --threads 1 bench --backend {{}} --log-size 5 --reps 1");
        let o = common::cmd(&argv(line.trim(), &[&so]))
            .env_remove("RUST_LOG")
            .env_remove("BELLOWS_LOG")
            .output()
            .expect("the bellows binary runs");
        let (_, err) = common::text(&o);
        assert!(o.status.success(), "{err}");
        err
    };
    // -vv (debug) reaches the plugin's own subscriber; without it the plugin stays quiet.
    let err = run("-vv");
    assert!(err.contains(said), "{err}");
    let err = run("");
    assert!(!err.contains(said), "{err}");
}

//! `bellows conformance` and the plugin listing of `bellows backends`, end to end.

use std::process::Command;

fn bellows(args: &[&str], plugin_path: Option<&std::path::Path>) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_bellows"));
    c.args(args)
        .env_remove("RUST_LOG")
        .env("BELLOWS_USER_LIB_DIR", "/nonexistent-bellows-lib");
    match plugin_path {
        Some(p) => c.env("BELLOWS_PLUGIN_PATH", p),
        None => c.env_remove("BELLOWS_PLUGIN_PATH"),
    };
    let o = c.output().expect("the bellows binary runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
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

    let plugins = bellows_conformance::plugin_build::build_plugins().expect("plugins build");
    let so = plugins.cpu.display().to_string();
    let (code, out, err) = bellows(
        &[
            "conformance",
            "--backend",
            &so,
            "--quick",
            "--max-log-size",
            "6",
            "--json",
        ],
        None,
    );
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("--json prints JSON");
    assert!(v.to_string().contains("pass"), "{out}");
    assert_eq!(v["backend_source"], format!("plugin {so}"), "{out}");
}

#[test]
fn conformance_of_a_missing_plugin_fails_clearly() {
    let (code, _out, err) = bellows(
        &[
            "conformance",
            "--backend",
            "/nonexistent/libbellows_backend_x.so",
            "--quick",
        ],
        None,
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("/nonexistent/libbellows_backend_x.so"),
        "{err}"
    );
    let (code, _out, err) = bellows(
        &["conformance", "--backend", "no-such-backend", "--quick"],
        None,
    );
    assert_eq!(code, 1);
    assert!(err.contains("no-such-backend"), "{err}");
}

#[test]
fn backends_lists_plugins_and_the_reason_a_broken_one_failed() {
    let plugins = bellows_conformance::plugin_build::build_plugins().expect("plugins build");
    let dir = std::env::temp_dir().join(format!("bellows-cli-plugins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    let (code, out, _) = bellows(&["backends", "--json"], Some(&dir));
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let arr = v.as_array().unwrap();
    assert!(arr
        .iter()
        .any(|e| e["source"] == "plugin" && e["error"].is_null()));
    assert!(arr
        .iter()
        .any(|e| e["source"] == "plugin" && e["error"].is_string()));
    // Proving through the plugin file works like proving with the built-in.
    let so = dir.join("libbellows_backend_cpu.so").display().to_string();
    let (code, out, err) = bellows(
        &[
            "bench",
            "--backend",
            &so,
            "--circuit",
            "synthetic",
            "--log-size",
            "8",
            "--reps",
            "1",
        ],
        None,
    );
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 9: a plugin that aborts in its constructor does not take `bellows backends` down; a
/// folder named like a plugin is not listed; the built-in and the plugin of one name are told
/// apart, with how to select each.
#[test]
fn backends_survives_an_aborting_plugin_and_skips_folders() {
    let plugins = bellows_conformance::plugin_build::build_plugins().expect("plugins build");
    let dir = std::env::temp_dir().join(format!("bellows-cli-abort-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
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
    let (code, out, _) = bellows(&["backends", "--json"], Some(&dir));
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let arr = v.as_array().unwrap();
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

/// Issue 9, item 6: plugin headers. Arbitrary bytes, and truncations and corruptions of a real
/// plugin, placed on the plugin path: `bellows backends` always finishes (exit 0) and lists the
/// file, whatever the loader makes of it (each file is loaded in a child process). Bounded for
/// CI (16 cases; `PROPTEST_CASES` for more).
#[test]
fn backends_survives_arbitrary_plugin_files() {
    use proptest::prelude::*;
    let plugins = bellows_conformance::plugin_build::build_plugins().expect("plugins build");
    let real = std::fs::read(&plugins.cpu).unwrap();
    let dir = std::env::temp_dir().join(format!("bellows-cli-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
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
        proptest::collection::vec(any::<u8>(), 0..4096),
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
                v
            }),
    ];
    runner
        .run(&strategy, |bytes| {
            std::fs::write(dir.join("libbellows_backend_fuzz.so"), &bytes).unwrap();
            let (code, out, err) = bellows(&["backends"], Some(&dir));
            prop_assert_eq!(code, 0, "stdout:\n{}\nstderr:\n{}", out, err);
            prop_assert!(out.contains("libbellows_backend_fuzz.so"), "{}", out);
            Ok(())
        })
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

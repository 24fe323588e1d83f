//! Plugin files of this workspace, built on demand for tests and benchmarks.
//!
//! `cargo test` does not promise that a workspace's `cdylib`s exist when tests run (a test of one
//! package does not build another package's shared library). Tests and benches therefore call
//! [`build_plugins`], which runs `cargo build -p bellows-backend-cpu -p bellows-conformance --lib
//! --examples` once per process, in the same target directory and profile as the running test
//! binary (found from its own path, `target/<profile>/deps/…`), and return the paths of the files.
//! When everything is up to date this costs a fraction of a second; cargo's own lock serialises it
//! with other builds.
//!
//! Cargo resolves dependency features from the packages a command selects, so `cargo build -p
//! bellows-backend-cpu` picks other features than the `cargo test --workspace --features …` that
//! built the test binaries, and recompiles bellows-core, wgpu and the rest a second time (in a
//! clean `.ci/run`: bellows-core compiled five times, wgpu and naga twice; with the setting below,
//! twice and once, the other bellows-core being the out-of-tree vendor example's own). Where
//! [`WORKSPACE_FEATURES_ENV`] is set (`.ci/run` sets it to the features of its `cargo test`), every
//! build of this workspace's plugins is instead one `cargo build --workspace --lib --examples
//! --features <those>`: the outer run's own selection, so its compiled dependencies are reused
//! (a build asking for other targets, `--bins` say, gets them added to that selection). Every
//! nested build also drops the variables Cargo set for the running test's package (see
//! `is_package_env`), which would otherwise make watching build scripts run again.

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

/// The workspace root (the directory of the root `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `target/<profile>` of the running executable (a test, bench or example binary).
pub fn profile_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot locate the running executable: {e}"))?;
    let mut dir = exe
        .parent()
        .ok_or("the executable has no directory")?
        .to_path_buf();
    if matches!(
        dir.file_name().and_then(|n| n.to_str()),
        Some("deps" | "examples")
    ) {
        dir.pop();
    }
    Ok(dir)
}

fn profile_args(profile_dir: &Path) -> Vec<String> {
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => vec![],
        Some("release") => vec!["--release".into()],
        Some(other) => vec!["--profile".into(), other.into()],
    }
}

/// Paths of the plugin files built by [`build_plugins`].
#[derive(Clone, Debug)]
pub struct Plugins {
    /// `libbellows_backend_cpu.so`: the CPU backend as a plugin.
    pub cpu: PathBuf,
    /// Directory of the test plugins (`examples/` of the profile directory).
    pub examples: PathBuf,
}

impl Plugins {
    /// The test plugin built from `conformance/test-plugins/NAME.rs`
    /// (`libbellows_test_plugin_NAME.so`).
    pub fn test_plugin(&self, name: &str) -> PathBuf {
        self.examples
            .join(dylib_name(&format!("bellows_test_plugin_{name}")))
    }
}

/// Builds (once per process) the CPU plugin and the test plugins, and returns their paths.
pub fn build_plugins() -> Result<Plugins, String> {
    static BUILT: OnceLock<Result<Plugins, String>> = OnceLock::new();
    BUILT.get_or_init(build_uncached).clone()
}

/// Set to the `--features` of the `cargo test --workspace` that runs the tests (empty: none), it
/// makes every build of this workspace's plugins select the whole workspace with those features,
/// so that dependencies are not compiled again with other ones (module docs).
pub const WORKSPACE_FEATURES_ENV: &str = "BELLOWS_PLUGIN_BUILD_FEATURES";

/// Runs `cargo build --manifest-path MANIFEST --target-dir <ours> <args> <our profile>`, in the
/// target directory and profile of the running executable. For this workspace's manifest with
/// [`WORKSPACE_FEATURES_ENV`] set, the packages named in `args` give way to the outer run's
/// selection ([`workspace_args`]): `--workspace --lib --examples --features …`, run once per
/// process, covers any package's `--lib` or `--examples`; other target flags (`--bins`, …) are
/// added to it, in a build of their own.
pub fn cargo_build(manifest: &Path, args: &[&str]) -> Result<(), String> {
    let ours = workspace_root().join("Cargo.toml");
    let same_workspace = manifest == ours
        || manifest
            .canonicalize()
            .ok()
            .zip(ours.canonicalize().ok())
            .is_some_and(|(a, b)| a == b);
    match std::env::var(WORKSPACE_FEATURES_ENV) {
        Ok(features) if same_workspace => {
            let (whole, covered) = workspace_args(args, &features);
            if !covered {
                return run_cargo_build(manifest, &whole);
            }
            static WHOLE: OnceLock<Result<(), String>> = OnceLock::new();
            WHOLE
                .get_or_init(|| run_cargo_build(manifest, &whole))
                .clone()
        }
        _ => run_cargo_build(manifest, args),
    }
}

/// The outer run's selection for a build that asked for `args`: `--workspace --lib --examples`,
/// `--features FEATURES` (unless empty), and whatever else `args` holds but its packages (`-p X`,
/// `--package X`, `--package=X`), `--lib` and `--examples`. The flag is true when nothing else
/// was left, i.e. when the selection is the same for every such call.
fn workspace_args<'a>(args: &[&'a str], features: &'a str) -> (Vec<&'a str>, bool) {
    let mut whole = vec!["--workspace", "--lib", "--examples"];
    let features = features.trim();
    if !features.is_empty() {
        whole.extend(["--features", features]);
    }
    let mut extra = Vec::new();
    let mut it = args.iter();
    while let Some(&a) = it.next() {
        match a {
            "-p" | "--package" => {
                it.next();
            }
            "--lib" | "--examples" | "--workspace" => {}
            _ if a.starts_with("--package=") => {}
            _ => extra.push(a),
        }
    }
    let covered = extra.is_empty();
    whole.extend(extra);
    (whole, covered)
}

fn run_cargo_build(manifest: &Path, args: &[&str]) -> Result<(), String> {
    let profile = profile_dir()?;
    let target = profile
        .parent()
        .ok_or("the profile directory has no parent")?
        .to_path_buf();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(is_package_env) {
            cmd.env_remove(&name);
        }
    }
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(manifest)
        .arg("--target-dir")
        .arg(&target)
        .args(args)
        .args(profile_args(&profile));
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(30).collect();
        return Err(format!(
            "building failed ({:?}):\n{}",
            cmd,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    Ok(())
}

/// Whether `name` is one of the variables Cargo sets for the package of a running test, bench or
/// example (`CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, `OUT_DIR`, …), which a nested `cargo build`
/// must not inherit: build scripts that watch them (`ring`'s watches `CARGO_PKG_NAME` and
/// `OUT_DIR`, through `cargo:rerun-if-env-changed`) would run again whenever a test of another
/// package builds, and everything above them would be compiled again (in a clean `.ci/run`,
/// ring, rustls, tonic and bellows-serve, from the wgpu backend's plugin test).
/// Cargo's own configuration (`CARGO`, `CARGO_HOME`, `CARGO_TARGET_DIR`, `CARGO_BUILD_*`,
/// `CARGO_PROFILE_*`, …) is kept.
fn is_package_env(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
    ];
    EXACT.contains(&name) || name.starts_with("CARGO_PKG_") || name.starts_with("CARGO_BIN_EXE_")
}

/// File name of the shared library of a crate whose library is called `lib_name`
/// (`lib<lib_name>.so` on Linux).
pub fn dylib_name(lib_name: &str) -> String {
    format!(
        "{}{lib_name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// Builds the `cdylib` of `package` from `manifest` (a plugin crate, in or out of this workspace)
/// with [`cargo_build`] and returns the path of its shared library.
pub fn build_cdylib(manifest: &Path, package: &str, lib_name: &str) -> Result<PathBuf, String> {
    cargo_build(manifest, &["-p", package, "--lib"])?;
    let path = profile_dir()?.join(dylib_name(lib_name));
    if !path.is_file() {
        return Err(format!(
            "cargo succeeded but {} does not exist",
            path.display()
        ));
    }
    Ok(path)
}

fn build_uncached() -> Result<Plugins, String> {
    let profile = profile_dir()?;
    let manifest = workspace_root().join("Cargo.toml");
    cargo_build(
        &manifest,
        &[
            "-p",
            "bellows-backend-cpu",
            "-p",
            "bellows-conformance",
            "--lib",
            "--examples",
        ],
    )?;
    let plugins = Plugins {
        cpu: profile.join(dylib_name("bellows_backend_cpu")),
        examples: profile.join("examples"),
    };
    if !plugins.cpu.is_file() {
        return Err(format!(
            "cargo succeeded but {} does not exist",
            plugins.cpu.display()
        ));
    }
    Ok(plugins)
}

#[cfg(test)]
mod tests {
    use super::{is_package_env, workspace_args};

    #[test]
    fn a_package_build_becomes_the_workspace_selection_and_other_targets_are_kept() {
        let base = ["--workspace", "--lib", "--examples", "--features", "a/b"];
        let (args, covered) = workspace_args(&["-p", "x", "--package", "y", "--lib"], " a/b ");
        assert_eq!(args, base);
        assert!(covered);
        let (args, covered) = workspace_args(&["--package=x", "--examples"], "a/b");
        assert_eq!(args, base);
        assert!(covered);
        let (args, covered) = workspace_args(&["-p", "x", "--bins", "--lib"], "a/b");
        assert_eq!(args, [&base[..], &["--bins"]].concat());
        assert!(!covered, "--bins is not in the shared selection");
        let (args, covered) = workspace_args(&["-p", "x", "--lib"], "");
        assert_eq!(args, ["--workspace", "--lib", "--examples"]);
        assert!(covered);
    }

    #[test]
    fn package_variables_are_dropped_and_cargo_configuration_kept() {
        for name in [
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_BIN_EXE_bellows",
            "CARGO_CRATE_NAME",
            "CARGO_TARGET_TMPDIR",
            "OUT_DIR",
        ] {
            assert!(is_package_env(name), "{name} is inherited");
        }
        for name in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "CARGO_BUILD_JOBS",
            "CARGO_PROFILE_DEV_OPT_LEVEL",
            "CARGO_TERM_COLOR",
            "PATH",
        ] {
            assert!(!is_package_env(name), "{name} is dropped");
        }
    }
}

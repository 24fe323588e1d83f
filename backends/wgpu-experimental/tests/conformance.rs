//! The conformance suite (bellows-conformance) on the wgpu backend, at small sizes: in process,
//! and through its plugin file `libbellows_backend_wgpu.so` as `--backend wgpu` loads it.
//!
//! On a machine without an adapter these tests pass vacuously with a note, except where the
//! run requires one (CI, or `BELLOWS_WGPU_REQUIRED=1`): .ci/run installs Mesa's lavapipe, a
//! software Vulkan adapter, so CI runs the whole suite on it.

mod common;

use std::sync::Arc;

use bellows_conformance::{plugin_build, run_suite, Level, Report, SuiteOptions};
use bellows_core::{plugin::load_backend, Backend, BackendConfig};
use bellows_cpu::CpuBackend;

/// Quick level at sizes a software adapter on two cores gets through in seconds.
fn options(k: u32) -> SuiteOptions {
    SuiteOptions::at(Level::Quick)
        .with_max_log_size(k)
        .with_threads(2)
}

fn assert_passes(report: &Report) {
    eprintln!("{}", report.table());
    let (passed, failed, skipped) = report.counts();
    assert!(report.passed() && failed == 0, "{}", report.table());
    assert!(
        passed >= 30,
        "only {passed} checks passed ({skipped} skipped)"
    );
}

#[test]
fn suite_passes_in_process() {
    let Some(b) = common::backend() else { return };
    let candidate: Arc<dyn Backend> = Arc::new(b);
    let report = run_suite(candidate, Arc::new(CpuBackend::new()), &options(6), |_| {});
    assert_passes(&report);
}

#[test]
fn suite_passes_through_the_plugin() {
    if common::backend().is_none() {
        return;
    }
    let manifest = plugin_build::workspace_root().join("Cargo.toml");
    let path =
        plugin_build::build_cdylib(&manifest, "bellows-backend-wgpu", "bellows_backend_wgpu")
            .expect("building the wgpu plugin");
    let plugin = load_backend(&path, &BackendConfig::default()).expect("loading the wgpu plugin");
    assert_eq!(plugin.info().name, "wgpu");
    let report = run_suite(plugin, Arc::new(CpuBackend::new()), &options(4), |_| {});
    assert_passes(&report);
}

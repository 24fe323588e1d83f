//! The conformance suite against the vendor backend: in process, and through the plugin file that
//! `cargo test` built next to the test binary (`target/<profile>/libbellows_backend_vendor.so`).

use std::sync::Arc;

use bellows_backend_vendor::VendorBackend;
use bellows_conformance::{plugin_build::build_cdylib, run_suite, Level, SuiteOptions};
use bellows_core::{plugin::load_backend, Backend, BackendConfig};
use bellows_cpu::CpuBackend;

fn opts() -> SuiteOptions {
    SuiteOptions::at(Level::Quick)
        .with_max_log_size(8)
        .with_threads(3)
}

fn check(candidate: Arc<dyn Backend>) {
    let reference: Arc<dyn Backend> = Arc::new(CpuBackend::new());
    let report = run_suite(candidate, reference, &opts(), |_| {});
    eprintln!("{}", report.table());
    assert!(report.passed(), "{}", report.table());
    assert_eq!(report.counts().1, 0);
}

#[test]
fn in_process() {
    check(Arc::new(
        VendorBackend::with_config(&BackendConfig::default()).unwrap(),
    ));
}

#[test]
fn through_the_plugin_file() {
    // `cargo test` builds the library as an rlib for the tests; build the plugin file itself, in
    // the same target directory and profile.
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let path = build_cdylib(
        &manifest,
        "bellows-backend-vendor",
        "bellows_backend_vendor",
    )
    .unwrap();
    let plugin = load_backend(&path, &BackendConfig::default()).unwrap();
    assert_eq!(plugin.info().name, "vendor");
    check(plugin);
}

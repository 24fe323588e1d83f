//! The out-of-tree vendor plugin example (examples/vendor-plugin, its own workspace) is built as a
//! vendor would build it and must pass the conformance suite through its `.so`, as
//! `bellows conformance --backend ./libbellows_backend_vendor.so` would run it.

use std::sync::Arc;

use bellows_conformance::{
    plugin_build::{build_cdylib, workspace_root},
    run_suite, Level, SuiteOptions,
};
use bellows_core::{plugin::load_backend, Backend, BackendConfig};

#[test]
fn vendor_example_plugin_passes_the_suite() {
    let manifest = workspace_root().join("examples/vendor-plugin/Cargo.toml");
    let so = build_cdylib(
        &manifest,
        "bellows-backend-vendor",
        "bellows_backend_vendor",
    )
    .expect("the vendor example builds");
    let candidate = load_backend(&so, &BackendConfig::default()).expect("the vendor plugin loads");
    assert_eq!(candidate.info().name, "vendor");
    let reference: Arc<dyn Backend> = Arc::new(bellows_cpu::CpuBackend::new());
    let opts = SuiteOptions::at(Level::Quick)
        .with_max_log_size(8)
        .with_threads(2);
    let report = run_suite(candidate, reference, &opts, |_| {});
    assert!(report.passed(), "{}", report.table());
    let (passed, failed, _) = report.counts();
    assert_eq!(failed, 0, "{}", report.table());
    assert!(passed >= 40, "{}", report.table());
}

//! The Bellows CPU backend built as a dynamic plugin: `libbellows_backend_cpu.so`.
//!
//! The same [`bellows_cpu::CpuBackend`] that is built into the `bellows` binary, exported through
//! the plugin interface ([`bellows_backend_api::plugin`]). It exists so that the whole plugin
//! route — loading, version and layout checks, every call across the boundary — is exercised on
//! machines without a GPU: the conformance tests load this file and compare it with the built-in
//! backend.
//!
//! Build: `cargo build -p bellows-backend-cpu` (or `--release`); the file lands in
//! `target/{debug,release}/libbellows_backend_cpu.so`. Use it with
//! `bellows prove --backend target/release/libbellows_backend_cpu.so ...`, or put it on
//! `BELLOWS_PLUGIN_PATH` (the name `cpu` itself resolves to the built-in backend first).

bellows_backend_api::export_backend!(|cfg: &bellows_backend_api::BackendConfig| {
    bellows_backend_api::plugin::log::init("cpu plugin");
    bellows_cpu::CpuBackend::with_config(cfg)
});

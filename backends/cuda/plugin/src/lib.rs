//! The Bellows CUDA backend as a dynamic plugin: `libbellows_backend_cuda.so`.
//!
//! [`bellows_cuda::CudaBackend`] exported through the plugin interface ([`bellows_backend_api::plugin`]).
//! `cargo build --release` at the workspace root puts the file in `target/release/`, beside the
//! `bellows` binary, where `--backend cuda` finds it with no environment set. On a machine
//! without an NVIDIA driver or GPU the plugin still loads, and creating the backend fails with an
//! error that says why (no driver, no device, a GPU older than Hopper).

bellows_backend_api::export_backend!(|cfg: &bellows_backend_api::BackendConfig| {
    bellows_backend_api::plugin::log::init("cuda plugin");
    bellows_cuda::CudaBackend::with_config(cfg)
});

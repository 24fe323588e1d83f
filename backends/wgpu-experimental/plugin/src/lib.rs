//! The Bellows experimental wgpu backend as a dynamic plugin: `libbellows_backend_wgpu.so`.
//!
//! [`bellows_wgpu::WgpuBackend`] exported through the plugin interface ([`bellows_backend_api::plugin`]).
//! `cargo build --release` at the workspace root puts the file in `target/release/`, beside the
//! `bellows` binary, where `--backend wgpu` finds it. Without a usable adapter (no Vulkan driver,
//! say) the plugin still loads, and creating the backend fails with an error that lists what
//! wgpu found and why none will do.

bellows_backend_api::export_backend!(bellows_wgpu::WgpuBackend::with_config);

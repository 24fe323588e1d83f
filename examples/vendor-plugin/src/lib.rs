//! An example Bellows backend plugin, built outside the Bellows workspace.
//!
//! It shows the whole vendor route (docs/plugins.md is the guide): a backend implementing
//! `bellows_backend_api::Backend` ([`backend::VendorBackend`]: its own NTT in [`ntt`], whose
//! permutation kernel is C code compiled by `build.rs` into a static library; MSMs from the SDK's
//! blst Pippenger, `bellows_backend_api::host_msm`), exported as a plugin with one line, and
//! tested with the conformance suite both in process and through the built
//! `libbellows_backend_vendor.so`. Its one Bellows dependency is the vendor SDK,
//! bellows-backend-api; the tests also use bellows-core's plugin loader.
//!
//! ```text
//! cargo build --release --manifest-path examples/vendor-plugin/Cargo.toml
//! bellows conformance --backend examples/vendor-plugin/target/release/libbellows_backend_vendor.so --quick
//! ```

#![warn(missing_docs)]

pub mod backend;
pub mod ntt;

pub use backend::VendorBackend;

bellows_backend_api::export_backend!(VendorBackend::with_config);

//! One module per subcommand.

pub mod backends;
pub mod bench;
pub mod client;
pub mod conformance;
pub mod demo;
pub mod pce;
#[cfg(feature = "filecoin")]
pub mod porep;
pub mod prove;
pub mod serve;
pub mod serve_bench;
pub mod setup;
pub mod status;
pub mod verify;

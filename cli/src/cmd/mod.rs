//! One module per subcommand.

pub mod backends;
pub mod bench;
pub mod conformance;
pub mod daemon;
pub mod demo;
pub mod pce;
#[cfg(feature = "filecoin")]
pub mod porep;
pub mod prove;
pub mod serve;
pub mod serve_bench;
pub mod setup;
pub mod verify;

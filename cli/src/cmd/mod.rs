//! One module per subcommand.

pub mod backends;
pub mod bench;
pub mod conformance;
pub mod demo;
pub mod pce;
#[cfg(feature = "filecoin")]
pub mod porep;
pub mod prove;
pub mod setup;
pub mod verify;

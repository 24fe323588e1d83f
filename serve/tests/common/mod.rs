//! What the daemon's integration tests share.
pub mod pki;

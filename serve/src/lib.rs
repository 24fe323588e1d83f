//! # bellows-serve
//!
//! `bellows serve`, a persistent proving daemon (docs/serve.md):
//! - [`engine`]: the pipeline scheduler in long-running form — a priority queue of partitions,
//!   synthesis workers feeding several device workers on several devices, one byte budget held
//!   until each proof is assembled, retries on another device, cancellation;
//! - [`store`]: the job journal behind one trait ([`store::JobStore`]), embedded SQLite by
//!   default, so that no accepted job is lost;
//! - [`params`]: parameters resident across jobs, keyed by file digest, evicted LRU;
//! - [`server`]: the gRPC service (`proto/bellows.proto`), the token check, Prometheus metrics;
//! - [`tls`]: TLS and mutual TLS for the gRPC listener and its clients;
//! - `porep` (cargo feature `filecoin`): Filecoin PoRep C2 jobs, partitions built from the C1
//!   output by bellows-filecoin;
//! - [`client`]: what the command line's client subcommands use;
//! - [`config`]: the TOML configuration.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
pub mod config;
pub mod engine;
pub mod error;
pub mod job;
pub mod metrics;
pub mod params;
#[cfg(feature = "filecoin")]
pub mod porep;
pub mod server;
pub mod store;
pub mod tls;

/// The generated gRPC types and stubs of `proto/bellows.proto` (package `bellows.v1`).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("bellows.v1");
}

pub use error::{Result, ServeError};
/// The gRPC crate, re-exported for clients (its `Streaming` and `Status` appear in the API).
pub use tonic;

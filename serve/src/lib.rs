//! # bellows-serve
//!
//! `bellows serve`, a persistent proving daemon (docs/serve.md):
//! - [`engine`]: the pipeline scheduler in long-running form — a priority queue of partitions,
//!   synthesis workers feeding several device workers on several devices, one byte budget held
//!   until each proof is assembled, retries on another device, cancellation;
//! - [`store`]: the job journal behind one trait ([`store::JobStore`]), embedded SQLite by
//!   default, so that no accepted job is lost;
//! - [`params`]: parameters resident across jobs, keyed by file digest, evicted LRU, read only
//!   from the configured directories and never memory-mapped;
//! - [`identity`]: who a request comes from, and which jobs it may touch;
//! - [`verify`]: the verification every proof passes before it is returned;
//! - [`server`]: the daemon (one per state directory), the gRPC service
//!   (`proto/bellows.proto`), tokens and identities, metrics and health checks;
//! - [`tls`]: TLS and mutual TLS for the gRPC listener and its clients;
//! - `filecoin` (cargo feature `filecoin`): Filecoin proof jobs (PoRep C2, WindowPoSt
//!   partitions, WinningPoSt, SnapDeals), partitions built from their inputs by
//!   bellows-filecoin;
//! - [`cuzk`]: the cuzk API (`cuzk.v1.ProvingEngine`, `proto/cuzk/v1/proving.proto`) that Curio
//!   speaks, on the same engine (docs/curio.md);
//! - [`client`]: what the command line's client subcommands use;
//! - [`config`]: the TOML configuration.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
pub mod config;
pub mod cuzk;
pub mod engine;
pub mod error;
#[cfg(feature = "filecoin")]
pub mod filecoin;
pub mod files;
pub mod identity;
pub mod job;
pub mod metrics;
pub mod params;
pub mod server;
pub mod store;
pub mod tls;
pub mod verify;

/// The generated gRPC types and stubs of `proto/bellows.proto` (package `bellows.v1`, whose
/// items are re-exported here) and of the cuzk API it imports, `proto/cuzk/v1/proving.proto`
/// ([`proto::cuzk::v1`]). The packages are nested as protobuf names them, so that the one's
/// generated code finds the other's types.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    /// Package `bellows.v1`.
    pub mod bellows {
        /// Version 1.
        pub mod v1 {
            tonic::include_proto!("bellows.v1");
        }
    }
    /// Package `cuzk.v1`: Curio's proving-engine API (docs/curio.md).
    pub mod cuzk {
        /// Version 1.
        pub mod v1 {
            tonic::include_proto!("cuzk.v1");
        }
    }
    pub use self::bellows::v1::*;
}

pub use error::{Result, ServeError};
/// The gRPC crate, re-exported for clients (its `Streaming` and `Status` appear in the API).
pub use tonic;

//! bellows-filecoin: Filecoin's proofs on Bellows.
//!
//! The heaviest proof a Filecoin storage provider makes is the PoRep commit phase 2 (C2): one
//! Groth16 proof per partition of the stacked-DRG circuit (ten partitions of about 130 million
//! constraints each for a 32 GiB sector). This crate takes the output of commit phase 1 (C1) as
//! the Filecoin tools write it ([`c1`]), builds every partition's circuit with the crates
//! Filecoin itself uses (storage-proofs-porep / filecoin-proofs 19, built without GPU features),
//! proves the partitions on any Bellows backend through the pipeline, and writes the proof bytes
//! exactly as filecoin-proofs' `seal_commit_phase2` does ([`porep`]). Parameters come from
//! filecoin-proofs' parameter cache, read and checked fast ([`params`]); for tests,
//! Bellows' own setup writes parameters under the cache's names ([`porep::setup`]).
//!
//! docs/filecoin.md is the user's guide; `bellows porep --help` the command line.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

// Links the CPU backend, so that "cpu" resolves for every user of this crate.
use bellows_cpu as _;

pub mod c1;
mod kind;
pub mod params;
pub mod partition;
pub mod porep;
pub mod post;
pub mod post_witness;
pub mod prove;
pub mod registered;
mod shape;
pub mod synth_c1;
pub mod testing;
pub mod update;

pub use c1::{parse_c1, read_c1, C1Output};
pub use params::{CachePaths, Check};
pub use porep::{prove_c2, prover_id_from_actor, verify_seal, C2Output};
pub use prove::ProveConfig;
pub use synth_c1::{synth_c1, SynthOptions};

/// Re-exported so that callers name the same types: filecoin-proofs-api (proof types, C1
/// structures) and filecoin-proofs.
pub use filecoin_proofs;
pub use filecoin_proofs_api;

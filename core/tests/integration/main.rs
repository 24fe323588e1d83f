//! bellows-core's integration tests, in one test binary: each module was a file of its own
//! under tests/, and thirteen binaries meant thirteen links and thirteen copies of the generic
//! code they share (one binary rebuilds in about half their time; bench/history/ci-time.md).
//! Run one module with
//! `cargo test -p bellows-core --test integration pce::`.

mod common;

mod bad_input;
mod batched_checks;
mod capabilities;
mod encoded_load;
mod fuzz_parsers;
mod hardening;
mod host_vec;
mod interop_proofs;
mod params_changed;
mod params_io;
mod pce;
mod pipeline;
mod pipeline_loading;
mod setup;
mod shortcuts;
mod unsatisfied;

//! What the commands that read parameters share: the shape check against the circuit, and how
//! benchmark-only parameters are named and warned about.

use bellows_core::{
    circuits::CircuitSpec,
    groth16::{io::ParamsShape, ParamsKind},
    Result,
};

use crate::stdio::warn;

/// Checks the shape of a parameters file (its length fields) against a circuit, before anything
/// is decoded or synthesised.
pub fn check_params_fit(shape: &ParamsShape, spec: &CircuitSpec, label: &str) -> Result<()> {
    let want_inputs = spec.num_public_inputs() + 1;
    let want_domain = 1usize << spec.log_domain();
    if shape.num_inputs != want_inputs || shape.domain_size != want_domain {
        return Err(bellows_core::Error::invalid(format!(
            "the parameters do not fit the circuit {}: {label} serves a domain of {} with {} \
             public inputs, the circuit needs a domain of {} with {} (give the circuit options \
             used at setup)",
            spec.description(),
            shape.domain_size,
            shape.num_inputs.saturating_sub(1),
            want_domain,
            want_inputs - 1
        )));
    }
    Ok(())
}

/// The loud warning for benchmark-only parameters.
pub fn warn_benchmark_only(context: &str) {
    warn(&format!(
        "{context} are BENCHMARK-ONLY parameters (no trusted setup): proofs made with them DO NOT \
         VERIFY. Use them for benchmarks only."
    ));
}

/// Whether parameters are benchmark-only, as text.
pub fn kind_name(kind: ParamsKind) -> &'static str {
    match kind {
        ParamsKind::Trusted => "trusted",
        ParamsKind::BenchmarkOnly => "benchmark-only",
    }
}

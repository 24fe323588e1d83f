//! The built-in circuit a command names (`--circuit`, `--log-size`, `--bits-pct`, `--bytes`):
//! its options, its ranges (usage errors found without running it) and its shape.

use bellows_core::{
    circuits::{synthetic, CircuitOptions, CircuitSpec},
    groth16::limits::Shape,
    Result, MAX_LOG_NTT,
};
use clap::Args;

use crate::error::{invalid_value, CliError};

/// Which built-in circuit, and its size.
#[derive(Debug, Args, Clone)]
pub struct CircuitArgs {
    /// Built-in circuit: `synthetic` (2^K − 2 constraints, a squaring chain with optional
    /// boolean constraints) or `sha256` (SHA-256 preimage).
    #[arg(long, value_name = "NAME", default_value = "synthetic")]
    pub circuit: String,
    /// log2 of the domain: synthetic has 2^K − 2 constraints; for sha256, the largest preimage
    /// that fits 2^K constraints.
    #[arg(long = "log-size", short = 'k', value_name = "K", value_parser = crate::values::log_size)]
    pub log_size: Option<u32>,
    /// Synthetic only: P of every 100 constraints are boolean, b·(1 − b) = 0 [default: 0].
    #[arg(long = "bits-pct", value_name = "P", value_parser = crate::values::percent)]
    pub bits_pct: Option<u8>,
    /// sha256 only: preimage length in bytes, units allowed (`1KiB`) [default: 55, one block,
    /// unless --log-size].
    #[arg(long, value_name = "N", value_parser = crate::values::preimage_bytes)]
    pub bytes: Option<usize>,
}

/// Constraints of one SHA-256 block's compression in bellpepper's gadget, an upper bound: a
/// full block costs 25 600 to 26 180 besides its preimage bits (measured: 55 bytes → 26 034
/// constraints, 1000 bytes → 426 251, 4000 bytes → 1 681 153); blocks made mostly of constant
/// padding cost less, since the gadget folds constants.
const SHA256_BLOCK_CONSTRAINTS: u64 = 26_300;

/// An upper bound on the constraints of a sha256 circuit of `bytes` bytes, from a formula (the
/// exact count needs the circuit to run, which for a large preimage is itself a long job).
pub fn sha256_constraints_bound(bytes: u64) -> u64 {
    let blocks = (8 * bytes + 65).div_ceil(512);
    8 * bytes + blocks * SHA256_BLOCK_CONSTRAINTS + 16
}

/// The circuit from `--circuit/--log-size/--bits-pct/--bytes`, with its shape for memory
/// estimates. Values outside a circuit's range are usage errors (exit 2), found without running
/// the circuit, so that a huge size is refused at once.
pub fn circuit_plan(a: &CircuitArgs) -> crate::error::Result<(CircuitSpec, Shape)> {
    let shape = |log: u32| Shape {
        domain: 1u64 << log,
        vars: 1u64 << log,
    };
    let plan = match a.circuit.as_str() {
        "synthetic" => {
            if let Some(b) = a.bytes {
                return Err(invalid_value(
                    "--bytes <N>",
                    b,
                    "--bytes applies to sha256, not synthetic",
                ));
            }
            let k = a.log_size.ok_or_else(|| {
                CliError::Usage("the synthetic circuit needs --log-size K".into())
            })?;
            if k < synthetic::MIN_LOG_SIZE {
                return Err(invalid_value(
                    "--log-size <K>",
                    k,
                    format!(
                        "the synthetic circuit needs {}..={MAX_LOG_NTT}",
                        synthetic::MIN_LOG_SIZE
                    ),
                ));
            }
            shape(k)
        }
        "sha256" => {
            if let Some(p) = a.bits_pct {
                return Err(invalid_value(
                    "--bits-pct <P>",
                    p,
                    "--bits-pct applies to synthetic, not sha256",
                ));
            }
            match (a.bytes, a.log_size) {
                (Some(_), Some(_)) => {
                    return Err(CliError::Usage(
                        "give sha256 either --bytes or --log-size, not both".into(),
                    ))
                }
                (None, Some(k)) => {
                    if k < 15 {
                        return Err(invalid_value(
                            "--log-size <K>",
                            k,
                            format!(
                                "a sha256 circuit needs 15..={MAX_LOG_NTT} (one block needs 2^15)"
                            ),
                        ));
                    }
                    shape(k)
                }
                (b, None) => {
                    let bound = sha256_constraints_bound(b.unwrap_or(55) as u64);
                    let log = bound.next_power_of_two().trailing_zeros();
                    if log > MAX_LOG_NTT {
                        return Err(invalid_value(
                            "--bytes <N>",
                            b.unwrap_or(55),
                            format!(
                                "a sha256 circuit of this size needs about {bound} constraints, \
                                 more than the largest Groth16 domain, 2^{MAX_LOG_NTT}"
                            ),
                        ));
                    }
                    Shape {
                        domain: 1u64 << log,
                        vars: bound,
                    }
                }
            }
        }
        _ => Shape { domain: 0, vars: 0 },
    };
    Ok((circuit_spec(a)?, plan))
}

/// The circuit spec from `--circuit/--log-size/--bits-pct/--bytes` (see [`circuit_plan`], which
/// checks the ranges first).
pub fn circuit_spec(a: &CircuitArgs) -> Result<CircuitSpec> {
    let mut o = CircuitOptions::default();
    o.log_size = a.log_size;
    o.bits_pct = a.bits_pct;
    o.bytes = a.bytes;
    CircuitSpec::new(&a.circuit, &o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellows_core::circuits::sha256::Sha256Circuit;

    #[test]
    fn sha256_bound_is_an_upper_bound_and_close() {
        for bytes in [0usize, 1, 55, 56, 64, 119, 200, 1000] {
            let exact = Sha256Circuit::new(bytes).unwrap().num_constraints() as u64;
            let bound = sha256_constraints_bound(bytes as u64);
            assert!(
                bound >= exact,
                "{bytes} bytes: bound {bound} < exact {exact}"
            );
            // Close once the preimage fills its blocks (the gadget folds constant padding, so
            // a nearly empty preimage costs far less than a block).
            if [55, 119, 1000].contains(&bytes) {
                assert!(
                    bound <= exact + exact / 20,
                    "{bytes} bytes: bound {bound} ≫ exact {exact}"
                );
            }
        }
    }
}

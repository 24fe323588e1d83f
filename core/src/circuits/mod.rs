//! Built-in circuits, selectable by name and size (what `bellows setup/prove/bench/demo` run).
//!
//! - [`synthetic`]: n = 2^K − 2 constraints, a squaring chain with P % boolean constraints — the
//!   shape of the reference figures measured for other provers (see the module for the exact
//!   arithmetic);
//! - [`sha256`]: knowledge of a SHA-256 preimage with bellpepper's gadgets, a real-world circuit.
//!
//! A [`CircuitSpec`] names a circuit and its size; it builds a [`BuiltinCircuit`] without a
//! witness (for setup) or with one drawn from a seed (for proving), and computes the public
//! inputs a verifier is given. Every circuit of one spec has the same shape, so parameters made
//! from the blank circuit serve all its instances.

pub mod sha256;
mod sha256_blocks;
pub mod sha256_gadget;
pub mod synthetic;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;

pub use sha256::Sha256Circuit;
pub use synthetic::SyntheticCircuit;

use crate::{Error, Result};

/// Names and one-line descriptions of the built-in circuits.
pub const CIRCUITS: &[(&str, &str)] = &[
    (
        "synthetic",
        "2^K − 2 constraints: chain x' = x·x + x from a private x0, the end value public; \
         --bits-pct P makes P of every 100 constraints b·(1 − b) = 0 (size: --log-size K)",
    ),
    (
        "sha256",
        "knowledge of a SHA-256 preimage (bellpepper gadgets), the digest public \
         (size: --bytes N, or --log-size K for the largest preimage that fits 2^K)",
    ),
];

/// How to size a built-in circuit (the `--log-size`, `--bits-pct`, `--bytes` options).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CircuitOptions {
    /// log2 of the domain. Default: `None` (required for `synthetic`; for `sha256` it picks the
    /// largest preimage that fits).
    pub log_size: Option<u32>,
    /// Percentage of boolean constraints (`synthetic` only). Default: `None` (0).
    pub bits_pct: Option<u8>,
    /// Preimage length in bytes (`sha256` only). Default: `None` (see `log_size`; without either,
    /// 55 bytes, the largest one-block preimage).
    pub bytes: Option<usize>,
}

impl CircuitOptions {
    /// Options with `log_size` set.
    pub fn with_log_size(log_size: u32) -> Self {
        Self {
            log_size: Some(log_size),
            ..Self::default()
        }
    }
}

/// A built-in circuit chosen by name and size. Made only by [`CircuitSpec::new`], which checks
/// the sizes (the variants cannot be built elsewhere), so every spec builds its circuit.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CircuitSpec {
    /// [`SyntheticCircuit`] of 2^`log_size` − 2 constraints.
    #[non_exhaustive]
    Synthetic {
        /// log2 of the domain.
        log_size: u32,
        /// Percentage of boolean constraints.
        bits_pct: u8,
    },
    /// [`Sha256Circuit`] for preimages of `bytes` bytes.
    #[non_exhaustive]
    Sha256 {
        /// Preimage length.
        bytes: usize,
    },
}

impl CircuitSpec {
    /// Resolves a circuit name and its options; a clear error for an unknown name, a missing or
    /// out-of-range size, or an option the circuit does not take.
    pub fn new(name: &str, opts: &CircuitOptions) -> Result<Self> {
        let spec = match name {
            "synthetic" => {
                if opts.bytes.is_some() {
                    return Err(Error::invalid("--bytes applies to sha256, not synthetic"));
                }
                let log_size = opts
                    .log_size
                    .ok_or_else(|| Error::invalid("the synthetic circuit needs --log-size K"))?;
                let bits_pct = opts.bits_pct.unwrap_or(0);
                SyntheticCircuit::new(log_size, bits_pct)?;
                CircuitSpec::Synthetic { log_size, bits_pct }
            }
            "sha256" => {
                if opts.bits_pct.is_some() {
                    return Err(Error::invalid(
                        "--bits-pct applies to synthetic, not sha256",
                    ));
                }
                let bytes = match (opts.bytes, opts.log_size) {
                    (Some(_), Some(_)) => {
                        return Err(Error::invalid(
                            "give sha256 either --bytes or --log-size, not both",
                        ))
                    }
                    (Some(b), None) => b,
                    (None, Some(k)) => {
                        Sha256Circuit::max_bytes_for_log_size(k).ok_or_else(|| {
                            Error::invalid(format!(
                            "a sha256 circuit does not fit 2^{k} constraints (one block needs 2^15)"
                        ))
                        })?
                    }
                    (None, None) => 55,
                };
                Sha256Circuit::new(bytes)?;
                CircuitSpec::Sha256 { bytes }
            }
            other => {
                return Err(Error::invalid(format!(
                    "unknown circuit {other:?} (built-in: {})",
                    CIRCUITS.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
                )))
            }
        };
        Ok(spec)
    }

    /// The circuit's name.
    pub fn name(&self) -> &'static str {
        match self {
            CircuitSpec::Synthetic { .. } => "synthetic",
            CircuitSpec::Sha256 { .. } => "sha256",
        }
    }

    /// One line describing this instance (name, size, constraint count).
    pub fn description(&self) -> String {
        match self {
            CircuitSpec::Synthetic { log_size, bits_pct } => format!(
                "synthetic 2^{log_size}: {} constraints ({bits_pct}% bits), 1 public input",
                self.num_constraints()
            ),
            CircuitSpec::Sha256 { bytes } => format!(
                "sha256 of a {bytes}-byte preimage: {} block(s), {} constraints, 2 public inputs",
                blocks(*bytes),
                self.num_constraints()
            ),
        }
    }

    /// Constraints the prover sees, input constraints included.
    pub fn num_constraints(&self) -> usize {
        match self.blank() {
            BuiltinCircuit::Synthetic(c) => c.num_constraints(),
            BuiltinCircuit::Sha256(c) => c.num_constraints(),
        }
    }

    /// log2 of the evaluation domain.
    pub fn log_domain(&self) -> u32 {
        self.num_constraints().next_power_of_two().trailing_zeros()
    }

    /// Number of public inputs, the constant one excluded.
    pub fn num_public_inputs(&self) -> usize {
        match self {
            CircuitSpec::Synthetic { .. } => 1,
            CircuitSpec::Sha256 { .. } => 2,
        }
    }

    /// The circuit without a witness (for setup).
    pub fn blank(&self) -> BuiltinCircuit {
        match *self {
            CircuitSpec::Synthetic { log_size, bits_pct } => BuiltinCircuit::Synthetic(
                SyntheticCircuit::new(log_size, bits_pct).expect("checked in CircuitSpec::new"),
            ),
            CircuitSpec::Sha256 { bytes } => BuiltinCircuit::Sha256(
                Sha256Circuit::new(bytes).expect("checked in CircuitSpec::new"),
            ),
        }
    }

    /// An instance with a witness drawn from `seed`.
    pub fn with_witness(&self, seed: u64) -> BuiltinCircuit {
        match self.blank() {
            BuiltinCircuit::Synthetic(c) => BuiltinCircuit::Synthetic(c.with_witness(seed)),
            BuiltinCircuit::Sha256(c) => BuiltinCircuit::Sha256(c.with_witness(seed)),
        }
    }

    /// An instance with a witness drawn from `seed`, and the public inputs a verifier is given
    /// for it (computed without synthesising the whole circuit where the circuit allows).
    pub fn instance(&self, seed: u64) -> Result<(BuiltinCircuit, Vec<Scalar>)> {
        let c = self.with_witness(seed);
        let inputs = match &c {
            BuiltinCircuit::Synthetic(s) => vec![s.output().expect("witness attached")],
            BuiltinCircuit::Sha256(s) => crate::groth16::synthesis::public_inputs(s.clone())?,
        };
        Ok((c, inputs))
    }
}

fn blocks(bytes: usize) -> usize {
    (8 * bytes + 65).div_ceil(512)
}

/// The seed of the witness of instance `index` in a run seeded with `seed` (distinct instances
/// get independent-looking witnesses; SplitMix64 finaliser, Steele et al., OOPSLA 2014).
pub fn witness_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed
        ^ index
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One of the built-in circuits, as a `bellpepper_core::Circuit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuiltinCircuit {
    /// The synthetic chain.
    Synthetic(SyntheticCircuit),
    /// SHA-256 preimage.
    Sha256(Sha256Circuit),
}

impl Circuit<Scalar> for BuiltinCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            BuiltinCircuit::Synthetic(c) => c.synthesize(cs),
            BuiltinCircuit::Sha256(c) => c.synthesize(cs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::constraints::CircuitShape;
    use crate::groth16::synthesis::synthesize;

    fn opts(log_size: Option<u32>, bits_pct: Option<u8>, bytes: Option<usize>) -> CircuitOptions {
        CircuitOptions {
            log_size,
            bits_pct,
            bytes,
        }
    }

    #[test]
    fn specs_resolve_and_describe() {
        let s = CircuitSpec::new("synthetic", &opts(Some(10), Some(20), None)).unwrap();
        assert_eq!(
            s,
            CircuitSpec::Synthetic {
                log_size: 10,
                bits_pct: 20
            }
        );
        assert_eq!(s.num_constraints(), 1022);
        assert_eq!(s.log_domain(), 10);
        assert!(
            s.description().contains("1022 constraints"),
            "{}",
            s.description()
        );
        let h = CircuitSpec::new("sha256", &opts(None, None, Some(3))).unwrap();
        assert_eq!(h, CircuitSpec::Sha256 { bytes: 3 });
        assert_eq!(
            CircuitSpec::new("sha256", &opts(None, None, None)).unwrap(),
            CircuitSpec::Sha256 { bytes: 55 }
        );
        let k = CircuitSpec::new("sha256", &opts(Some(16), None, None)).unwrap();
        assert_eq!(k.log_domain(), 16);
    }

    #[test]
    fn bad_specs_are_clear_errors() {
        let err = |n: &str, o: CircuitOptions| CircuitSpec::new(n, &o).unwrap_err().to_string();
        assert!(err("nope", opts(Some(10), None, None)).contains("unknown circuit \"nope\""));
        assert!(err("synthetic", opts(None, None, None)).contains("--log-size"));
        assert!(err("synthetic", opts(Some(10), None, Some(3))).contains("--bytes"));
        assert!(err("synthetic", opts(Some(10), Some(101), None)).contains("0..=100"));
        assert!(err("sha256", opts(Some(16), None, Some(3))).contains("not both"));
        assert!(err("sha256", opts(Some(10), None, None)).contains("does not fit"));
        assert!(err("sha256", opts(None, Some(5), Some(3))).contains("--bits-pct"));
    }

    #[test]
    fn instances_give_their_public_inputs_and_differ_by_seed() {
        for spec in [
            CircuitSpec::Synthetic {
                log_size: 6,
                bits_pct: 50,
            },
            CircuitSpec::Sha256 { bytes: 10 },
        ] {
            let (c, inputs) = spec.instance(5).unwrap();
            let s = synthesize(c).unwrap();
            assert_eq!(s.public_inputs(), &inputs[..]);
            assert_eq!(inputs.len(), spec.num_public_inputs());
            assert_eq!(s.num_constraints(), spec.num_constraints());
            assert_ne!(spec.instance(6).unwrap().1, inputs);
            // The blank circuit has the same shape.
            let shape = CircuitShape::count(spec.blank()).unwrap();
            assert_eq!(shape.num_constraints, spec.num_constraints());
            assert_eq!(shape.num_aux, s.aux_assignment.len());
        }
    }

    #[test]
    fn witness_seeds_are_distinct() {
        let seeds: std::collections::HashSet<u64> =
            (0..1000).map(|i| witness_seed(42, i)).collect();
        assert_eq!(seeds.len(), 1000);
        assert_ne!(witness_seed(1, 0), witness_seed(2, 0));
    }
}

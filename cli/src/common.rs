//! Helpers the commands share: circuit specs, progress bars, warnings, timing statistics and
//! formatting (backend selection is in `backend_opts`).

use std::io::IsTerminal;
use std::time::Duration;

use bellows_core::{
    circuits::{synthetic, CircuitOptions, CircuitSpec},
    groth16::{io::ParamsShape, limits::Shape, ParamsKind},
    Result, MAX_LOG_NTT,
};
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::CircuitArgs;
use crate::errln;
use crate::error::{invalid_value, CliError};

/// Settings from the global options.
#[derive(Clone, Copy, Debug, Default)]
pub struct Globals {
    /// `--threads`.
    pub threads: Option<usize>,
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

/// Prints a warning on stderr (always, whatever the verbosity).
pub fn warn(msg: &str) {
    errln!("warning: {msg}");
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

/// Whether progress bars are drawn: stderr is a terminal and `BELLOWS_NO_PROGRESS` is unset.
fn progress_enabled() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("BELLOWS_NO_PROGRESS").is_none()
}

/// A progress bar over `len` steps on stderr, hidden when stderr is not a terminal.
pub fn progress(len: u64, what: &str) -> ProgressBar {
    if !progress_enabled() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>10} [{elapsed_precise}] {bar:30} {pos}/{len} {msg} (eta {eta})",
    ) {
        pb.set_style(style);
    }
    pb.set_prefix(what.to_string());
    pb.enable_steady_tick(Duration::from_millis(200));
    pb
}

/// A spinner on stderr for work without steps, hidden when stderr is not a terminal.
pub fn spinner(what: &str) -> ProgressBar {
    if !progress_enabled() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]") {
        pb.set_style(style);
    }
    pb.set_message(what.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

/// Median, minimum and first of a set of durations.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Stat {
    /// Median in seconds (the mean of the two middle values for an even count).
    pub median_s: f64,
    /// Minimum in seconds.
    pub min_s: f64,
    /// The first sample in seconds, in the order given: a process's first repetition, which
    /// pays for what later ones reuse (fresh host memory, pinning), and which neither the median
    /// nor the minimum of few repetitions shows.
    pub first_s: f64,
}

impl Stat {
    /// Statistics of `samples` (zero for none).
    pub fn of(samples: &[Duration]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        let mut v: Vec<f64> = samples.iter().map(Duration::as_secs_f64).collect();
        let first_s = v[0];
        v.sort_by(f64::total_cmp);
        let mid = v.len() / 2;
        let median_s = if v.len() % 2 == 1 {
            v[mid]
        } else {
            (v[mid - 1] + v[mid]) / 2.0
        };
        Self {
            median_s,
            min_s: v[0],
            first_s,
        }
    }
}

/// A duration for people: `812 µs`, `43.2 ms`, `2.41 s`.
pub fn fmt_duration(d: Duration) -> String {
    fmt_secs(d.as_secs_f64())
}

/// Seconds for people (see [`fmt_duration`]).
pub fn fmt_secs(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.0} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellows_core::circuits::sha256::Sha256Circuit;

    #[test]
    fn stat_median_and_min() {
        let ms = |v: &[u64]| {
            v.iter()
                .map(|&x| Duration::from_millis(x))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            Stat::of(&ms(&[30, 10, 20])),
            Stat {
                median_s: 0.020,
                min_s: 0.010,
                first_s: 0.030,
            }
        );
        assert_eq!(
            Stat::of(&ms(&[40, 10, 20, 30])),
            Stat {
                median_s: 0.025,
                min_s: 0.010,
                first_s: 0.040,
            }
        );
        assert_eq!(Stat::of(&[]), Stat::default());
    }

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

    #[test]
    fn durations_format_by_magnitude() {
        assert_eq!(fmt_secs(0.000_812), "812 µs");
        assert_eq!(fmt_secs(0.0432), "43.2 ms");
        assert_eq!(fmt_secs(2.412), "2.41 s");
    }
}

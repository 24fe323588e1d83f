//! Helpers the commands share: circuit specs, progress bars, warnings, timing statistics and
//! formatting (backend selection is in `backend_opts`).

use std::io::IsTerminal;
use std::time::Duration;

use bellows_core::{
    circuits::{CircuitOptions, CircuitSpec},
    groth16::{Parameters, ParamsKind},
    Result,
};
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::CircuitArgs;

/// Settings from the global options.
#[derive(Clone, Copy, Debug, Default)]
pub struct Globals {
    /// `--threads`.
    pub threads: Option<usize>,
}

/// The circuit spec from `--circuit/--log-size/--bits-pct/--bytes`.
pub fn circuit_spec(a: &CircuitArgs) -> Result<CircuitSpec> {
    let mut o = CircuitOptions::default();
    o.log_size = a.log_size;
    o.bits_pct = a.bits_pct;
    o.bytes = a.bytes;
    CircuitSpec::new(&a.circuit, &o)
}

/// Checks that parameters fit a circuit before any synthesis is spent on it.
pub fn check_params_fit(params: &Parameters, spec: &CircuitSpec) -> Result<()> {
    let want_inputs = spec.num_public_inputs() + 1;
    let want_domain = 1usize << spec.log_domain();
    if params.num_inputs() != want_inputs || params.domain_size() != want_domain {
        return Err(bellows_core::Error::invalid(format!(
            "the parameters do not fit the circuit {}: they serve a domain of {} with {} public \
             inputs, the circuit needs a domain of {} with {} (give the circuit options used at \
             setup)",
            spec.description(),
            params.domain_size(),
            params.num_inputs().saturating_sub(1),
            want_domain,
            want_inputs - 1
        )));
    }
    Ok(())
}

/// Writes `text` to `path` atomically: a temporary file in the same folder, then a rename.
pub fn write_text_atomically(path: &std::path::Path, text: &str, what: &str) -> Result<()> {
    let file_name = path.file_name().ok_or_else(|| {
        bellows_core::Error::invalid(format!("{what} path {} names no file", path.display()))
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let ctx = |doing: &str| format!("{doing} {what} {}", path.display());
    std::fs::write(&tmp, text).map_err(|e| bellows_core::Error::io(ctx("writing"), e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        bellows_core::Error::io(ctx("renaming a temporary file to"), e)
    })
}

/// Prints a warning on stderr (always, whatever the verbosity).
pub fn warn(msg: &str) {
    eprintln!("warning: {msg}");
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

/// Median and minimum of a set of durations.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Stat {
    /// Median in seconds (the mean of the two middle values for an even count).
    pub median_s: f64,
    /// Minimum in seconds.
    pub min_s: f64,
}

impl Stat {
    /// Statistics of `samples` (zero for none).
    pub fn of(samples: &[Duration]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        let mut v: Vec<f64> = samples.iter().map(Duration::as_secs_f64).collect();
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
                min_s: 0.010
            }
        );
        assert_eq!(
            Stat::of(&ms(&[40, 10, 20, 30])),
            Stat {
                median_s: 0.025,
                min_s: 0.010
            }
        );
        assert_eq!(Stat::of(&[]), Stat::default());
    }

    #[test]
    fn durations_format_by_magnitude() {
        assert_eq!(fmt_secs(0.000_812), "812 µs");
        assert_eq!(fmt_secs(0.0432), "43.2 ms");
        assert_eq!(fmt_secs(2.412), "2.41 s");
    }
}

//! What `bellows conformance --backend X [--quick | --full] [--max-log-size K] [--json]` runs.

use std::{io::Write, sync::Arc};

use bellows_core::{registry::resolve, Backend, BackendConfig};

use crate::{run_suite, Progress, SuiteOptions};

/// Resolves `backend_arg` (a built-in name, a plugin name on the search path, or a path to a
/// plugin file, as `--backend` everywhere), runs the suite against the built-in CPU backend, and
/// prints the report: a table on stdout with one progress line per check on stderr, or, with
/// `json`, the report as JSON on stdout and nothing on stderr.
///
/// Returns the process exit code: 0 when every check passed (skipped checks do not fail), 1 when a
/// check failed or the backend could not be loaded (the reason printed on stderr).
pub fn run_cli(backend_arg: &str, opts: &SuiteOptions, json: bool) -> i32 {
    run_cli_with_config(backend_arg, &BackendConfig::default(), opts, json)
}

/// [`run_cli`] with the candidate created from `cfg` (device, options such as
/// `--backend-opt`/`--devices`).
pub fn run_cli_with_config(
    backend_arg: &str,
    cfg: &BackendConfig,
    opts: &SuiteOptions,
    json: bool,
) -> i32 {
    let candidate = match resolve(backend_arg, cfg) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    // Which one of several backends of one name this is (the built-in `cpu` or a plugin `cpu`).
    let source = if bellows_core::registry::is_path_argument(backend_arg) {
        format!("plugin {backend_arg}")
    } else if bellows_core::registry::builtin_backends()
        .iter()
        .any(|b| b.name == backend_arg)
    {
        "built-in".to_string()
    } else {
        match bellows_core::plugin::find_plugin(backend_arg) {
            Some(p) => format!("plugin {}", p.display()),
            None => "plugin".to_string(),
        }
    };
    let reference: Arc<dyn Backend> = Arc::new(bellows_cpu::CpuBackend::new());
    let mut report = run_suite(candidate, reference, opts, |p| {
        if json {
            return;
        }
        if let Progress::Done {
            index,
            total,
            result,
        } = p
        {
            let mut e = std::io::stderr().lock();
            let _ = writeln!(
                e,
                "[{:>3}/{total}] {:<40} {:<8} ({:.0} ms)",
                index + 1,
                result.name,
                match &result.outcome {
                    crate::Outcome::Pass => "pass",
                    crate::Outcome::Mismatch(_) => "MISMATCH",
                    crate::Outcome::Error { .. } => "ERROR",
                    crate::Outcome::Skipped { .. } => "skipped",
                },
                result.time.as_secs_f64() * 1e3
            );
        }
    });
    report.backend_source = Some(source);
    let mut out = std::io::stdout().lock();
    let text = if json {
        report.to_json()
    } else {
        report.table()
    };
    let _ = writeln!(out, "{}", text.trim_end());
    if report.passed() {
        0
    } else {
        1
    }
}

//! `bellows conformance`: the conformance suite against any backend (built-in or plugin).

use bellows_conformance::{run_cli_with_config, Level, SuiteOptions};
use clap::Args;

use crate::cli::Globals;

/// `bellows conformance --help`.
pub const CONFORMANCE_ABOUT: &str =
    "Run the conformance suite against a backend and compare every \
result with the built-in CPU reference backend, exactly (canonical encodings, no tolerance): NTTs \
(forward, inverse, coset; natural and bit-reversed orders; every size 2^0..2^K; batched and not), \
the fused quotient h_poly, G1 and G2 MSMs with edge cases (empty, one point, zero scalars, \
identity and repeated points, r−1, window boundaries), resident-bases handles (reuse, free, \
misuse), bases decoded by the backend from a file's encodings (optional) and the bad ones it must \
refuse, whole proofs with seeded randomness (bit-exact and verified), and the same checks from \
several threads at once.\n\n\
Prints a table (check, sizes, result, time) and, on a mismatch, the first element that differs. \
Exit code 0 when every check passed, 1 otherwise (or when the backend cannot be loaded).\n\n\
`--backend` takes a built-in name, a plugin name found on the plugin search path \
(libbellows_backend_NAME.so along BELLOWS_PLUGIN_PATH, the executable's folder, then \
~/.local/lib/bellows), or a path to a .so file.\n\n\
Examples:\n  bellows conformance --backend cpu --quick\n  \
bellows conformance --backend ./libbellows_backend_vendor.so --max-log-size 16\n  \
bellows conformance --backend cuda --full --json";

/// `bellows conformance`.
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// The backend to check: a built-in name, a plugin name, or a path to a plugin .so.
    #[arg(long, default_value = "cpu")]
    pub backend: String,
    /// Quick level: small sizes, a few seconds (default: standard).
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// Full level: every check at the largest sizes (minutes on a CPU).
    #[arg(long)]
    pub full: bool,
    /// Largest log2 size for NTT/MSM checks (default: the level's).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(0..=28))]
    pub max_log_size: Option<u32>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// A backend option, passed to the backend as it is (repeatable).
    #[arg(long = "backend-opt", value_name = "KEY=VALUE",
          value_parser = crate::backend_opts::parse_key_value)]
    pub backend_opt: Vec<(String, String)>,
    /// Devices the backend may use: `all`, or device indices like `0,1`.
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub devices: String,
    /// Run only the checks whose name contains this text (repeatable: any of them), e.g.
    /// `--only msm_g2 --only proof`; the progress counts the selected checks. A selection that
    /// matches no check fails. Splits a long --full run into parts.
    #[arg(long, value_name = "TEXT")]
    pub only: Vec<String>,
    /// `--threads`.
    #[command(flatten)]
    pub threads: crate::cli::ThreadsArg,
}

/// Runs the suite; returns the process exit code (0 all passed, 1 a failure or a load error).
/// The suite prints its own progress (stderr), table or JSON (stdout) and errors.
pub fn run(args: &ConformanceArgs, g: &Globals) -> i32 {
    let threads = g.threads;
    // The candidate gets the backend options; the suite's own thread count stays as before.
    let cfg = match crate::backend_opts::backend_config(
        &args.backend_opt,
        &args.devices,
        &Globals::default(),
    ) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let level = if args.quick {
        Level::Quick
    } else if args.full {
        Level::Full
    } else {
        Level::Standard
    };
    let mut opts = SuiteOptions::at(level);
    if let Some(k) = args.max_log_size {
        opts = opts.with_max_log_size(k);
    }
    if let Some(t) = threads {
        opts = opts.with_threads(t);
    }
    if !args.only.is_empty() {
        opts = opts.with_only(args.only.clone());
    }
    run_cli_with_config(&args.backend, &cfg, &opts, args.json)
}

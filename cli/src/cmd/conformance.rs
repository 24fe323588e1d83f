//! `bellows conformance`: the conformance suite against any backend (built-in or plugin).

use bellows_conformance::{run_cli_with_config, Level, SuiteOptions};

use crate::cli::ConformanceArgs;
use crate::common::Globals;

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

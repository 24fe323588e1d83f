//! `bellows`: the Bellows command line. `bellows --help` lists the commands; docs/cli.md
//! describes each with examples, exit codes and file formats.
//!
//! Exit codes: 0 success, 1 error (every `bellows_core::Error`, printed as `error: ...`), 2 usage
//! error (clap).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

// Links the CPU backend so that it registers itself as "cpu".
use bellows_cpu as _;

mod backend_opts;
mod cli;
mod cmd;
mod common;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};
use common::Globals;

fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    // Only fails if a subscriber is already set, which nothing else here does.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn run(cli: Cli) -> bellows_core::Result<ExitCode> {
    let g = Globals {
        threads: cli.global.threads.map(usize::from),
    };
    if let Some(n) = g.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .map_err(|e| bellows_core::Error::invalid(format!("--threads {n}: {e}")))?;
    }
    match &cli.command {
        Command::Backends(a) => cmd::backends::run(a),
        Command::Setup(a) => cmd::setup::run(a),
        Command::Prove(a) => cmd::prove::run(a, &g),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Bench(a) => cmd::bench::run(a, &g),
        Command::Demo(a) => cmd::demo::run(a, &g),
        Command::Pce(a) => cmd::pce::run(a),
        Command::Conformance(a) => {
            // The suite prints its own results and errors; its verdict is the exit code.
            let code = cmd::conformance::run(a, &g);
            return Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)));
        }
    }
    .map(|()| ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.global.verbose);
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // Display already carries the cause (e.g. an I/O error's OS message).
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

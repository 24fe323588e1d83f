//! `bellows`: the Bellows command line. `bellows --help` lists the commands; docs/cli.md
//! describes each with examples, exit codes and file formats.
//!
//! Exit codes: 0 success, 1 error (every `bellows_core::Error`, printed as `error: ...`), 2 usage
//! error (clap's, and the ones only known after parsing: see [`error::CliError`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

// Links the CPU backend so that it registers itself as "cpu".
use bellows_cpu as _;

mod backend_opts;
mod circuit;
mod cli;
mod cmd;
mod error;
mod output;
mod params;
mod progress;
mod stats;
mod stdio;
mod values;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, Globals};
use error::CliError;

fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    // Plugins log through subscribers of their own (bellows_backend_api::plugin::log), which
    // take their filter from here. Set before any thread or plugin exists.
    if std::env::var_os("BELLOWS_LOG").is_none() {
        let own = std::env::var("RUST_LOG").unwrap_or_else(|_| level.to_string());
        std::env::set_var("BELLOWS_LOG", own);
    }
    // Colour only for a terminal, and never with NO_COLOR (https://no-color.org).
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    // From -vv on, each phase span (reading, checking, loading, synthesis, proving, writing)
    // reports its duration when it closes.
    let spans = if verbose >= 2 {
        tracing_subscriber::fmt::format::FmtSpan::CLOSE
    } else {
        tracing_subscriber::fmt::format::FmtSpan::NONE
    };
    // Only fails if a subscriber is already set, which nothing else here does.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_span_events(spans)
        .try_init();
}

fn run(cli: Cli) -> error::Result<ExitCode> {
    let g = Globals {
        threads: cli
            .command
            .threads()
            .or(cli.global.threads)
            .map(usize::from),
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
        Command::Prove(a) if a.daemon.daemon.is_some() => cmd::client::prove(a),
        Command::Prove(a) => cmd::prove::run(a, &g),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Bench(a) if a.serve.is_set() => cmd::serve_bench::bench(a, &g),
        Command::Bench(a) => cmd::bench::run(a, &g),
        Command::Demo(a) => cmd::demo::run(a, &g),
        Command::Pce(a) => cmd::pce::run(a).map_err(Into::into),
        Command::Serve(a) => cmd::serve::run(a, &g),
        Command::Submit(a) => cmd::client::submit(a),
        Command::Status(a) => cmd::status::run(a),
        Command::Await(a) => cmd::client::await_job(a),
        Command::Cancel(a) => cmd::client::cancel(a),
        #[cfg(feature = "filecoin")]
        Command::Porep(a) => cmd::porep::run(a, &g),
        Command::ProbePlugin(a) => cmd::backends::probe_child(a),
        Command::Conformance(a) => {
            // The suite prints its own results and errors; its verdict is the exit code.
            let code = cmd::conformance::run(a, &g);
            return Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)));
        }
    }
    .map(|()| ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // --help and --version print to stdout, usage errors to stderr; a failing stream
            // (closed pipe, full disk) must not turn into a panic.
            let printed = e.print();
            if e.use_stderr() {
                return ExitCode::from(2);
            }
            // Help or version on stdout: lost output (not a closed pipe) is an error.
            return match printed {
                Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
                    errln!("error: writing to stdout: {err}");
                    ExitCode::from(1)
                }
                _ => ExitCode::SUCCESS,
            };
        }
    };
    init_tracing(cli.global.verbose);
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // Display already carries the cause (e.g. an I/O error's OS message).
            errln!("error: {e}");
            if let CliError::Usage(_) = e {
                errln!("\nFor more information, try '--help'.");
            }
            ExitCode::from(e.exit_code())
        }
    };
    match stdio::finish() {
        Some(e) if code == ExitCode::SUCCESS => {
            errln!("error: writing to stdout: {e}");
            ExitCode::from(1)
        }
        _ => code,
    }
}

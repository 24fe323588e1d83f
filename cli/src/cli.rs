//! Command-line definitions (clap derive). Every subcommand's `long_about` explains it with
//! examples; `docs/cli.md` is the long form.

use clap::{Args, Parser, Subcommand};

/// The `bellows` command line.
#[derive(Debug, Parser)]
#[command(
    name = "bellows",
    version,
    allow_negative_numbers = true,
    about = "Bellows: a multi-backend Groth16 prover for BLS12-381 (bellperson-compatible files)",
    long_about = "Bellows proves bellpepper circuits with Groth16 on BLS12-381, with parameters, \
verifying keys and proofs in bellperson's file formats, on a backend chosen at run time.\n\n\
Start with `bellows demo` (setup, prove and verify a small built-in circuit), then see \
`bellows <COMMAND> --help`.\n\n\
Exit codes: 0 success; 1 error (invalid proof, malformed file, not enough memory, ...); \
2 command-line usage error (unknown option, value out of range, an output that is also an input).",
    after_long_help = "Examples:\n  bellows demo\n  bellows backends --json\n  \
bellows setup --circuit synthetic --log-size 14 --out p.params --vk-out p.vk\n  \
bellows prove --params p.params --circuit synthetic --log-size 14 --out p.proof --inputs-out p.json\n  \
bellows verify --vk p.vk --proof p.proof --inputs p.json\n  \
bellows bench --circuit synthetic --log-size 18 --reps 5"
)]
pub struct Cli {
    /// Options every command takes.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes (`--threads` here too, before the command, for the commands
/// that compute: `bellows --threads 2 bench …`).
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Worker threads for synthesis and the backend, for the commands that compute
    /// [default: one per core].
    #[arg(long, value_name = "N", value_parser = crate::values::threads)]
    pub threads: Option<u16>,
    /// More log output on stderr: -v info, -vv debug, -vvv trace (RUST_LOG overrides).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the backends this binary can use, with version, devices and capabilities.
    #[command(long_about = crate::cmd::backends::BACKENDS_ABOUT, allow_negative_numbers = true)]
    Backends(crate::cmd::backends::BackendsArgs),
    /// Generate Groth16 parameters for a built-in circuit (real setup, or --fast benchmark-only).
    #[command(long_about = crate::cmd::setup::SETUP_ABOUT, allow_negative_numbers = true)]
    Setup(crate::cmd::setup::SetupArgs),
    /// Prove instances of a built-in circuit with a parameters file.
    #[command(long_about = crate::cmd::prove::PROVE_ABOUT, allow_negative_numbers = true)]
    Prove(crate::cmd::prove::ProveArgs),
    /// Verify proofs with a verifying key (or parameters) file and public inputs; no circuit needed.
    #[command(long_about = crate::cmd::verify::VERIFY_ABOUT, allow_negative_numbers = true)]
    Verify(crate::cmd::verify::VerifyArgs),
    /// Benchmark proving on a backend with fast benchmark-only parameters; per-phase timings.
    #[command(long_about = crate::cmd::bench::BENCH_ABOUT, allow_negative_numbers = true)]
    Bench(crate::cmd::bench::BenchArgs),
    /// Set up, prove and verify a built-in circuit end to end, with timings.
    #[command(long_about = crate::cmd::demo::DEMO_ABOUT, allow_negative_numbers = true)]
    Demo(crate::cmd::demo::DemoArgs),
    /// Check a backend (built-in name or plugin) against the CPU reference, bit for bit.
    #[command(long_about = crate::cmd::conformance::CONFORMANCE_ABOUT, allow_negative_numbers = true)]
    Conformance(crate::cmd::conformance::ConformanceArgs),
    /// Manage pre-compiled constraint systems (recorded circuits that make synthesis fast).
    #[command(long_about = crate::cmd::pce::PCE_ABOUT)]
    Pce(crate::cmd::pce::PceArgs),
    /// Run the proving daemon: gRPC jobs, journaled, parameters resident, several devices.
    #[command(long_about = crate::cmd::serve::SERVE_ABOUT)]
    Serve(crate::cmd::serve::ServeArgs),
    /// Submit a proving job to a daemon (the arguments of `prove`); prints the job id last.
    #[command(long_about = crate::cmd::client::SUBMIT_ABOUT, allow_negative_numbers = true)]
    Submit(crate::cmd::prove::ProveArgs),
    /// Show a daemon's queue, jobs, devices and memory.
    #[command(long_about = crate::cmd::status::STATUS_ABOUT)]
    Status(crate::cmd::status::StatusArgs),
    /// Wait for a daemon's job and write the files its `submit` named.
    #[command(long_about = crate::cmd::client::AWAIT_ABOUT)]
    Await(crate::cmd::client::AwaitArgs),
    /// Cancel a daemon's job.
    #[command(long_about = crate::cmd::client::CANCEL_ABOUT)]
    Cancel(crate::cmd::client::CancelArgs),
    /// Filecoin PoRep C2: prove a sector's seal from its C1 output, verify it with filecoin-proofs.
    #[cfg(feature = "filecoin")]
    #[command(long_about = crate::cmd::porep::POREP_ABOUT)]
    Porep(crate::cmd::porep::PorepArgs),
    /// Internal: load one plugin file and print its backend's info as JSON (what `backends`
    /// runs in a child process for each plugin, so that a crashing plugin cannot take it down).
    #[command(name = "__probe-plugin", hide = true)]
    ProbePlugin(crate::cmd::backends::ProbePluginArgs),
}

/// `--threads N`, on the commands that compute (and so not on a daemon's clients, whose help
/// would list an option that does nothing).
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct ThreadsArg {
    /// Worker threads for synthesis and the backend (rayon's pool), at most four per CPU
    /// [default: one per core].
    #[arg(long, global = true, value_name = "N", value_parser = crate::values::threads)]
    pub threads: Option<u16>,
}

impl Command {
    /// The command's own `--threads`, if it takes one and it was given.
    pub fn threads(&self) -> Option<u16> {
        match self {
            Command::Setup(a) => a.threads.threads,
            Command::Prove(a) | Command::Submit(a) => a.threads.threads,
            Command::Verify(a) => a.threads.threads,
            Command::Bench(a) => a.threads.threads,
            Command::Demo(a) => a.threads.threads,
            Command::Conformance(a) => a.threads.threads,
            Command::Pce(a) => a.threads.threads,
            Command::Serve(a) => a.threads.threads,
            #[cfg(feature = "filecoin")]
            Command::Porep(a) => a.threads.threads,
            Command::Backends(_)
            | Command::Status(_)
            | Command::Await(_)
            | Command::Cancel(_)
            | Command::ProbePlugin(_) => None,
        }
    }
}

/// Settings from the global options.
#[derive(Clone, Copy, Debug, Default)]
pub struct Globals {
    /// `--threads`.
    pub threads: Option<usize>,
}

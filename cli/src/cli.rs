//! Command-line definitions (clap derive). Every subcommand's `long_about` explains it with
//! examples; `docs/cli.md` is the long form.

use std::path::PathBuf;

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

/// Options every command takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Worker threads for synthesis and the backend [default: one per core].
    #[arg(long, global = true, value_name = "N", value_parser = crate::values::threads)]
    pub threads: Option<u16>,
    /// More log output on stderr: -v info, -vv debug, -vvv trace (RUST_LOG overrides).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the backends this binary can use, with version, devices and capabilities.
    #[command(long_about = BACKENDS_ABOUT, allow_negative_numbers = true)]
    Backends(BackendsArgs),
    /// Generate Groth16 parameters for a built-in circuit (real setup, or --fast benchmark-only).
    #[command(long_about = SETUP_ABOUT, allow_negative_numbers = true)]
    Setup(SetupArgs),
    /// Prove instances of a built-in circuit with a parameters file.
    #[command(long_about = PROVE_ABOUT, allow_negative_numbers = true)]
    Prove(ProveArgs),
    /// Verify proofs with a verifying key (or parameters) file and public inputs; no circuit needed.
    #[command(long_about = VERIFY_ABOUT, allow_negative_numbers = true)]
    Verify(VerifyArgs),
    /// Benchmark proving on a backend with fast benchmark-only parameters; per-phase timings.
    #[command(long_about = BENCH_ABOUT, allow_negative_numbers = true)]
    Bench(BenchArgs),
    /// Set up, prove and verify a built-in circuit end to end, with timings.
    #[command(long_about = DEMO_ABOUT, allow_negative_numbers = true)]
    Demo(DemoArgs),
    /// Check a backend (built-in name or plugin) against the CPU reference, bit for bit.
    #[command(long_about = CONFORMANCE_ABOUT, allow_negative_numbers = true)]
    Conformance(ConformanceArgs),
    /// Manage pre-compiled constraint systems (recorded circuits that make synthesis fast).
    #[command(long_about = crate::cmd::pce::PCE_ABOUT)]
    Pce(crate::cmd::pce::PceArgs),
    /// Run the proving daemon: gRPC jobs, journaled, parameters resident, several devices.
    #[command(long_about = crate::cmd::serve::SERVE_ABOUT)]
    Serve(crate::cmd::serve::ServeArgs),
    /// Submit a proving job to a daemon (the arguments of `prove`); prints the job id last.
    #[command(long_about = crate::cmd::daemon::SUBMIT_ABOUT, allow_negative_numbers = true)]
    Submit(ProveArgs),
    /// Show a daemon's queue, jobs, devices and memory.
    #[command(long_about = crate::cmd::daemon::STATUS_ABOUT)]
    Status(crate::cmd::daemon::StatusArgs),
    /// Wait for a daemon's job and write the files its `submit` named.
    #[command(long_about = crate::cmd::daemon::AWAIT_ABOUT)]
    Await(crate::cmd::daemon::AwaitArgs),
    /// Cancel a daemon's job.
    #[command(long_about = crate::cmd::daemon::CANCEL_ABOUT)]
    Cancel(crate::cmd::daemon::CancelArgs),
    /// Filecoin PoRep C2: prove a sector's seal from its C1 output, verify it with filecoin-proofs.
    #[cfg(feature = "filecoin")]
    #[command(long_about = crate::cmd::porep::POREP_ABOUT)]
    Porep(crate::cmd::porep::PorepArgs),
    /// Internal: load one plugin file and print its backend's info as JSON (what `backends`
    /// runs in a child process for each plugin, so that a crashing plugin cannot take it down).
    #[command(name = "__probe-plugin", hide = true)]
    ProbePlugin(ProbePluginArgs),
}

/// `bellows __probe-plugin FILE` (internal).
#[derive(Debug, Args)]
pub struct ProbePluginArgs {
    /// The plugin file.
    pub path: PathBuf,
}

const CONFORMANCE_ABOUT: &str = "Run the conformance suite against a backend and compare every \
result with the built-in CPU reference backend, exactly (canonical encodings, no tolerance): NTTs \
(forward, inverse, coset; natural and bit-reversed orders; every size 2^0..2^K; batched and not), \
the fused quotient h_poly, G1 and G2 MSMs with edge cases (empty, one point, zero scalars, \
identity and repeated points, r−1, window boundaries), resident-bases handles (reuse, free, \
misuse), whole proofs with seeded randomness (bit-exact and verified), and the same checks from \
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
}

const BACKENDS_ABOUT: &str = "List the backends this binary can use: the built-in ones, then \
every plugin file (libbellows_backend_NAME.so) found along BELLOWS_PLUGIN_PATH, the executable's \
folder and ~/.local/lib/bellows, with their version, the devices they drive and their \
capabilities (NTT sizes, coset transforms, fused quotient, G1/G2 MSM, resident bases, \
concurrency). A plugin that fails to load is listed with its file and the reason.\n\n\
A backend is chosen with `--backend NAME` on the computing commands (prove, bench, demo).\n\n\
Examples:\n  bellows backends\n  bellows backends --json";

const SETUP_ABOUT: &str = "Generate Groth16 parameters for a built-in circuit and write them in \
bellperson's parameters format (and optionally the verifying key alone), each file written \
atomically (temporary file, then rename; devices and FIFOs written through). Output paths are \
checked before the setup starts, an existing file is replaced only with --force, and a setup \
larger than the available memory is refused with the estimate.\n\n\
Default: a real trusted setup. The toxic waste (tau, alpha, beta, gamma, delta) is drawn from the \
operating system's RNG and discarded when setup ends. `--seed S` draws it from a seeded RNG \
instead: anyone who knows S can forge proofs, so use it only for reproducible test vectors.\n\n\
`--fast` makes BENCHMARK-ONLY parameters instead: valid curve points of exactly the right shape, \
generated quickly, with no trusted setup behind them. PROOFS MADE WITH THEM DO NOT VERIFY; every \
bellows command that reads them says so. A real setup costs several scalar multiplications per \
constraint and is meant for small circuits (up to ~2^16 in seconds to minutes); use --fast for \
benchmarks at 2^18 and above.\n\n\
The circuit options must be given again, identically, to `bellows prove`.\n\n\
Examples:\n  bellows setup --circuit synthetic --log-size 14 --out s14.params --vk-out s14.vk\n  \
bellows setup --circuit sha256 --bytes 64 --out sha.params\n  \
bellows setup --circuit synthetic --log-size 22 --bits-pct 80 --fast --out bench22.params";

const PROVE_ABOUT: &str = "Prove N instances of a built-in circuit with a bellperson-format \
parameters file. Each instance gets a random witness (from `--seed` when given, else from the OS), \
and r, s are drawn the same way. The proofs are written concatenated (192 bytes each: compressed \
A ‖ B ‖ C, bellperson's encoding) and the public inputs as JSON: for one proof an array of \
decimal strings, for several proofs an array of such arrays.\n\n\
The circuit options must be the ones the parameters were made for; a mismatch is reported before \
any work, as are bad output paths, an output that is an input, an existing output without \
--force, and a job larger than the available memory. Without --inputs-out the public inputs are \
printed alone on stdout (status lines go to stderr). Parameters are read with full point checks (on the curve and in the subgroup) unless \
`--skip-subgroup-checks` (for files you wrote yourself). Benchmark-only parameters are accepted \
with a warning: their proofs do not verify.\n\n\
By default the N proofs are synthesised and proved in batches (`--batch-size`, default all N). \
`--pipeline` streams them instead through the pipeline scheduler: synthesis workers (half the \
cores) feed two device workers, and synthesised proofs waiting for the device never hold more \
than `--memory-budget` bytes. With `--seed`, each proof's r and s then come from its own stream, \
so the output is deterministic but differs from the batch mode's.\n\n\
`--daemon ADDR` proves on a `bellows serve` daemon instead (one job of --count partitions; \
--params is a path on the daemon's host) and writes the same files; with --seed they equal \
`--pipeline`'s byte for byte (docs/serve.md).\n\n\
Examples:\n  bellows prove --params s14.params --circuit synthetic --log-size 14 --out s14.proof \
--inputs-out s14.json\n  bellows prove --params s14.params --circuit synthetic --log-size 14 --count 8 \
--seed 1 --out batch.proof --inputs-out batch.json\n  bellows prove --params s14.params --circuit \
synthetic --log-size 14 --count 100 --pipeline --out many.proof --inputs-out many.json";

const VERIFY_ABOUT: &str = "Verify Groth16 proofs. Needs no circuit: only a verifying key (a \
bellperson verifying-key file, or a whole parameters file), the proof file (one or more 192-byte \
proofs) and the public inputs (a JSON array of decimal strings without the constant one; for \
several proofs, an array of such arrays, one per proof).\n\n\
Prints `valid` and exits 0 when every proof verifies. Otherwise exits 1 with a message naming \
what is wrong: an invalid proof (and which one), the wrong number of public inputs, a value that \
is not a field element, a malformed or truncated file, a point off the curve or outside the \
subgroup. A key from benchmark-only parameters is reported as such: its proofs never verify.\n\n\
Examples:\n  bellows verify --vk s14.vk --proof s14.proof --inputs s14.json\n  \
bellows verify --vk s14.params --proof batch.proof --inputs batch.json";

const BENCH_ABOUT: &str = "Benchmark proving. Generates benchmark-only parameters for the circuit \
(fast, no trusted setup; the proofs do not verify, which a benchmark does not need), loads them on \
the backend, then R times: synthesises N circuits and proves them as one batch. Reports the \
median, the minimum and the first repetition of each phase (the first pays for fresh host memory \
that later ones reuse; `--warmup` excludes it): synthesis, batch buffers (each circuit's a, b, c \
laid into the batch's buffers), the G1 phase (h_poly, the quotient's NTTs, and the G1 MSMs H, L, \
A, B, in one backend call), G2 MSM (on CPU threads overlapping the G1 phase; with `--g2` putting \
it on the backend it runs in the G1 phase's call, and one row times both), release (freeing the synthesised circuits), finalize \
(waiting for G2 plus assembly) and total (synthesis to proofs), and proofs per second from the \
median total. With RUST_LOG=info each repetition is also logged.\n\n\
`--json` prints one machine-readable JSON object on stdout instead of the table.\n\n\
Throughput mode: `--daemon ADDR --count N --concurrency J` submits N jobs (of `--partitions P`) \
to a `bellows serve` daemon, J at a time, and reports proofs per second, per-phase medians per \
partition and each device's busy fraction; `--concurrency J` without --daemon runs the same \
scheduler in this process (docs/serve.md).\n\n\
Examples:\n  bellows bench --circuit synthetic --log-size 16\n  \
bellows bench --circuit synthetic --log-size 20 --bits-pct 80 --count 2 --reps 3 --json\n  \
bellows bench --circuit sha256 --log-size 17 --backend cpu";

const DEMO_ABOUT: &str = "Run the whole Groth16 flow on a built-in circuit, in memory, with \
timings: a real trusted setup (random toxic waste, discarded), synthesis, proving on the chosen \
backend, and verification of the proof; then a check that the same proof is rejected for a wrong \
public input. The default (synthetic, 2^12 constraints) finishes in seconds on two cores.\n\n\
Examples:\n  bellows demo\n  bellows demo --log-size 14 --seed 7\n  bellows demo --circuit sha256";

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

/// `--backend NAME` and how to configure it.
#[derive(Debug, Args, Clone)]
pub struct BackendArg {
    /// Backend that runs the NTTs and MSMs: a built-in name (see `bellows backends`).
    #[arg(long, value_name = "NAME", default_value = "cpu")]
    pub backend: String,
    /// A backend option, passed to the backend as it is (repeatable; each backend documents the
    /// keys it reads and ignores the others).
    #[arg(long = "backend-opt", value_name = "KEY=VALUE",
          value_parser = crate::backend_opts::parse_key_value)]
    pub backend_opt: Vec<(String, String)>,
    /// Devices the backend may use: `all`, or device indices like `0,1` (the first is the
    /// backend's device; the list goes to it as option `devices`).
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub devices: String,
    /// Where the G2 MSM runs: `auto` (on the backend when it is an accelerator offering G2 MSM,
    /// else on CPU threads), `device` (on the backend; an error if it cannot), `cpu`.
    #[arg(long, value_name = "WHERE", default_value = "auto",
          value_parser = ["auto", "device", "cpu"])]
    pub g2: String,
}

/// `bellows backends`.
#[derive(Debug, Args)]
pub struct BackendsArgs {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `bellows setup`.
#[derive(Debug, Args)]
pub struct SetupArgs {
    /// The circuit.
    #[command(flatten)]
    pub circuit: CircuitArgs,
    /// Benchmark-only parameters (fast, no trusted setup): PROOFS WILL NOT VERIFY.
    #[arg(long)]
    pub fast: bool,
    /// Draw the toxic waste (or the --fast points) from this seed. INSECURE: for test vectors only.
    #[arg(long, value_name = "S", value_parser = crate::values::seed)]
    pub seed: Option<u64>,
    /// Parameters file to write (bellperson format).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
    /// Also write the verifying key alone (bellperson verifying-key format).
    #[arg(long = "vk-out", value_name = "FILE")]
    pub vk_out: Option<PathBuf>,
    /// Replace output files that already exist.
    #[arg(long, short = 'f')]
    pub force: bool,
}

/// `bellows prove`.
#[derive(Debug, Args)]
pub struct ProveArgs {
    /// Parameters file (bellperson format), e.g. from `bellows setup`.
    #[arg(long, value_name = "FILE")]
    pub params: PathBuf,
    /// The circuit (must match the parameters).
    #[command(flatten)]
    pub circuit: CircuitArgs,
    /// Number of proofs (instances with different random witnesses).
    #[arg(long, short = 'n', value_name = "N", default_value_t = 1,
          value_parser = crate::values::proof_count)]
    pub count: u32,
    /// Proofs synthesised and proved together per batch [default: all of --count].
    #[arg(long = "batch-size", value_name = "B", value_parser = crate::values::proof_count,
          conflicts_with = "pipeline")]
    pub batch_size: Option<u32>,
    /// Stream the proofs through the pipeline scheduler: synthesis workers feed device workers,
    /// with a memory budget, instead of proving batch after batch.
    #[arg(long)]
    pub pipeline: bool,
    /// Pipeline: bytes of synthesised proofs that may wait for the device, units allowed
    /// (`8GiB`) [default: half the free host memory].
    #[arg(long = "memory-budget", value_name = "BYTES", requires = "pipeline",
          value_parser = crate::values::byte_size)]
    pub memory_budget: Option<u64>,
    /// The backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// Seed for the witnesses and for r, s (deterministic, byte-identical proofs) [default: OS RNG].
    #[arg(long, value_name = "S", value_parser = crate::values::seed)]
    pub seed: Option<u64>,
    /// Read the parameters checking only that points are on the curve (faster; for files you
    /// made yourself).
    #[arg(long = "skip-subgroup-checks")]
    pub skip_subgroup_checks: bool,
    /// Proof file to write (N × 192 bytes).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
    /// Public inputs file to write (JSON) [default: print them, alone, on stdout].
    #[arg(long = "inputs-out", value_name = "FILE.json")]
    pub inputs_out: Option<PathBuf>,
    /// Pre-compiled constraint system options.
    #[command(flatten)]
    pub pce: crate::cmd::pce::PceOpts,
    /// Replace output files that already exist.
    #[arg(long, short = 'f')]
    pub force: bool,
    /// Prove on a `bellows serve` daemon at ADDR (HOST:PORT) instead of in this process.
    #[command(flatten)]
    pub daemon: crate::cmd::daemon::DaemonArgs,
}

/// `bellows verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Verifying-key file, or a whole parameters file.
    #[arg(long, value_name = "FILE")]
    pub vk: PathBuf,
    /// Proof file: one or more concatenated 192-byte proofs.
    #[arg(long, value_name = "FILE")]
    pub proof: PathBuf,
    /// Public inputs: JSON array of decimal strings (array of arrays for several proofs).
    #[arg(long, value_name = "FILE.json")]
    pub inputs: PathBuf,
}

/// `bellows bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The circuit.
    #[command(flatten)]
    pub circuit: CircuitArgs,
    /// Proofs per repetition (proved as one batch).
    #[arg(long, short = 'n', value_name = "N", default_value_t = 1,
          value_parser = crate::values::proof_count)]
    pub count: u32,
    /// Timed repetitions.
    #[arg(long, short = 'r', value_name = "R", default_value_t = 3,
          value_parser = crate::values::positive_u32)]
    pub reps: u32,
    /// Untimed repetitions first (warm caches and allocator).
    #[arg(long, value_name = "W", default_value_t = 0, value_parser = crate::values::u32_any)]
    pub warmup: u32,
    /// The backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// Seed for parameters, witnesses and r, s [default: 0, so runs are comparable].
    #[arg(long, value_name = "S", default_value_t = 0, value_parser = crate::values::seed)]
    pub seed: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Synthesise directly instead of with a pre-compiled constraint system (recorded in memory
    /// before the timed reps).
    #[arg(long = "no-pce")]
    pub no_pce: bool,
    /// Time synthesis only, direct against pre-compiled, on the same circuits and witnesses;
    /// the last line is `ratio pce/direct: X.XX`. With `--backend cuda`, pre-compiled synthesis
    /// writes into the pinned host memory that backend provides, as proving does.
    #[arg(long = "compare-synthesis", conflicts_with_all = ["json", "no_pce"])]
    pub compare_synthesis: bool,
    /// Tuning aid: set environment variable NAME to V1, V2, … in turn before each rep (rep i,
    /// warm-ups included, gets value i mod k), and report the phases per value. Backend knobs
    /// read at every call (the CUDA backend's `BELLOWS_*` variables, docs/cuda.md) are then
    /// compared side by side in one process, over the same parameters and witnesses.
    #[arg(long = "alternate-env", value_name = "NAME=V1,V2,..",
          value_parser = crate::values::env_alternation, conflicts_with = "compare_synthesis")]
    pub alternate_env: Option<(String, Vec<String>)>,
    /// Throughput mode (`--count` jobs, `--concurrency` at once) on a daemon or in process.
    #[command(flatten)]
    pub serve: crate::cmd::daemon::BenchServeArgs,
}

/// `bellows demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Built-in circuit: `synthetic` or `sha256`.
    #[arg(long, value_name = "NAME", default_value = "synthetic")]
    pub circuit: String,
    /// log2 of the domain [default: 12 for synthetic; sha256: one 55-byte block].
    #[arg(long = "log-size", short = 'k', value_name = "K", value_parser = crate::values::log_size)]
    pub log_size: Option<u32>,
    /// Synthetic only: percentage of boolean constraints [default: 0].
    #[arg(long = "bits-pct", value_name = "P", value_parser = crate::values::percent)]
    pub bits_pct: Option<u8>,
    /// The backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// Seed for the toxic waste, witness and r, s (INSECURE setup; reproducible run).
    #[arg(long, value_name = "S", value_parser = crate::values::seed)]
    pub seed: Option<u64>,
}

//! `bellows porep`: Filecoin PoRep commit phase 2 from a C1 output (feature `filecoin`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use bellows_core::pce::cache::PceCache;
use bellows_core::pipeline::PartitionHook;
use bellows_core::Error;
use bellows_filecoin::filecoin_proofs_api::RegisteredSealProof;
use bellows_filecoin::{porep, C1Output, Check, ProveConfig};
use clap::{Args, Subcommand};
use rand_core::SeedableRng;

use crate::backend_opts::BackendArg;
use crate::backend_opts::{g2_policy, open as open_backend};
use crate::cli::Globals;
use crate::errln;
use crate::error::{CliError, Result};
use crate::output::{self, Out};
use crate::progress::{count, SetupLines};

mod load;
use load::{load, LoadArgs, LOAD_ABOUT};

/// `bellows porep --help`.
pub const POREP_ABOUT: &str = "Filecoin PoRep commit phase 2 (C2): prove a sector's seal from \
its commit-phase-1 (C1) output, as `seal_commit_phase2` of filecoin-proofs does, on any Bellows \
backend, and verify it with filecoin-proofs.\n\n\
The C1 file is lotus-bench's JSON ({\"SectorNum\", \"SectorSize\", \"Phase1Out\": base64}) or \
filecoin-proofs-api's SealCommitPhase1Output JSON. Parameters are read from a filecoin-proofs \
parameter folder (`--params-dir`, the folder lotus uses is /var/tmp/filecoin-proof-parameters) \
under filecoin-proofs' own file names (v28-stacked-proof-of-replication-….params and .vk).\n\n\
Subcommands: c2 (prove), verify (check a proof with filecoin-proofs' verify_seal), info (what a \
C1 file holds and which parameter files it needs), setup (TEST parameters for a proof type, \
under the cache's names), load (time a parameter load with a given check), synth-c1 (a SYNTHETIC C1 output made \
without sealing, for benchmarks and tests).\n\n\
Examples:\n  bellows porep info --c1 c1.json\n  \
bellows porep c2 --c1 c1.json --params-dir /var/tmp/filecoin-proof-parameters --out sector.proof\n  \
bellows porep verify --c1 c1.json --proof sector.proof --params-dir /var/tmp/filecoin-proof-parameters --miner 1000\n  \
bellows porep setup --proof StackedDrg2KiBV1_1 --params-dir ./params";

/// `bellows porep`.
#[derive(Debug, Args)]
pub struct PorepArgs {
    /// The subcommand.
    #[command(subcommand)]
    pub command: PorepCommand,
    /// `--threads`.
    #[command(flatten)]
    pub threads: crate::cli::ThreadsArg,
}

/// `bellows porep` subcommands.
#[derive(Debug, Subcommand)]
pub enum PorepCommand {
    /// Prove C2 from a C1 output: one Groth16 proof per partition, written as seal_commit_phase2 writes them.
    #[command(long_about = C2_ABOUT)]
    C2(Box<C2Args>),
    /// Verify a C2 proof with filecoin-proofs' verify_seal (needs the prover id and sector number).
    #[command(long_about = VERIFY_ABOUT)]
    Verify(VerifyArgs),
    /// Show what a C1 file holds: proof type, sector, partitions, and the parameter files it needs.
    Info(InfoArgs),
    /// Make TEST parameters for a proof type with Bellows' setup, under filecoin-proofs' file names.
    #[command(long_about = SETUP_ABOUT)]
    Setup(SetupArgs),
    /// Load a parameters file with a given check and report the time and points per second.
    #[command(long_about = LOAD_ABOUT)]
    Load(LoadArgs),
    /// Make a SYNTHETIC C1 output without sealing, for benchmarks and tests (it proves nothing about stored data).
    #[command(name = "synth-c1", long_about = SYNTH_C1_ABOUT)]
    SynthC1(SynthC1Args),
}

const C2_ABOUT: &str = "Prove PoRep commit phase 2 from a C1 output. Every partition's circuit \
is built by storage-proofs-porep (the code Filecoin runs), proved on the chosen backend through \
Bellows' pipeline (several partitions in flight; synthesis on CPU threads overlapping the \
backend's work), and the partition proofs are written concatenated, 192 bytes each: exactly the \
bytes filecoin-proofs' seal_commit_phase2 returns. Before writing, the proof is verified with the \
verifying key in the parameter folder (as filecoin-proofs does); --no-verify skips that.\n\n\
Parameters are checked when loaded with --check: `auto` (default: `digest` for a file \
parameters.json (or --manifest) lists by name, `batched` for any other, and for a listed file \
whose digest differs, such as test parameters made under Filecoin's names), `batched` (every point \
on the curve, and the subgroup for all points at once by a randomised test that a bad file \
passes with probability at most 2^-128), `full` (every point's subgroup tested on its own), \
`digest` (the file's blake2b must match filecoin-proofs' parameters.json, then curve checks \
only: for the published files), `curve-only` (files you made yourself).\n\n\
Errors are reported before any proving where possible: a truncated or malformed C1 file, an \
unsupported proof type (non-interactive PoRep), parameters missing from the folder or of another \
circuit, an existing --out without --force.\n\n\
On a daemon (`--daemon ADDR`, a `bellows serve` built with the cargo feature `filecoin`): the \
C1 file's bytes are sent as a PoRep C2 job (journaled with it, so it survives a restart of the \
daemon); the daemon builds the partitions, proves them on its devices with its queue, budgets, \
priorities (--priority) and retries, verifies the proof against the verifying key in its \
--params-dir (a folder on the daemon's host) and returns it; the same file is written. \
--check curve-only loads the parameters with curve checks only, any other check does the \
daemon's full check (digest is not offered there); --backend, --no-verify and --manifest do not \
apply. With --submit the job id is printed and `bellows await JOB` writes --out later; `bellows \
status` and `bellows cancel JOB` work on it as on any job.\n\n\
Examples:\n  bellows porep c2 --c1 c1.json --params-dir /var/tmp/filecoin-proof-parameters --out s.proof\n  \
bellows porep c2 --c1 c1.json --params-dir ./params --out s.proof --backend cuda --check digest\n  \
bellows porep c2 --daemon 10.0.0.5:7700 --c1 c1.json --params-dir /var/tmp/filecoin-proof-parameters --out s.proof\n  \
JOB=$(bellows porep c2 --daemon 127.0.0.1:7700 --submit --c1 c1.json --params-dir /p --out s.proof | tail -n1); bellows await $JOB";

const VERIFY_ABOUT: &str = "Verify a C2 proof with filecoin-proofs' own verify_seal: the \
commitments, ticket and seed come from the C1 file, the prover id from --prover-id (32 bytes, \
hex) or --miner (the actor id of f0NNNN; the prover id is its LEB128 bytes, as lotus derives \
it), the sector number from --sector-id or else the C1 file's SectorNum (lotus-bench's form). \
filecoin-proofs reads the verifying key from --params-dir (this sets FIL_PROOFS_PARAMETER_CACHE \
for the process).\n\n\
Prints `valid` and exits 0 when the proof verifies; exits 1 with the reason otherwise (a proof \
for another sector or prover, a changed byte, a proof of the wrong length).\n\n\
Examples:\n  bellows porep verify --c1 c1.json --proof s.proof --params-dir ./params --miner 1000\n  \
bellows porep verify --c1 c1.json --proof s.proof --params-dir ./params --prover-id 00e807…00 --sector-id 7";

const SETUP_ABOUT: &str = "Generate Groth16 parameters for a PoRep proof type's circuit with \
Bellows' setup (fixed-base window tables on every core) and write them into --params-dir under \
filecoin-proofs' names: .params, .vk and .meta, so that filecoin-proofs and `bellows porep c2` \
find them. The toxic waste comes from the OS (or --seed, for reproducible test vectors) and is \
wiped when the setup ends.\n\n\
These are TEST parameters: proofs made with them verify against their own verifying key only, \
never on the Filecoin network, which uses the published parameters of its trusted setup.\n\n\
The setup runs from the circuit's recording (kept in the PCE folder, where `porep c2` finds it) \
and writes the file query by query: a 2 KiB sector's circuit (a 2^22 domain, 1.1 GB of \
parameters) takes minutes on a few cores; a 32 GiB one (2^27, about 50 GB) needs that much free \
disk and a large host, both checked before the setup starts (docs/filecoin.md).\n\n\
Example:\n  bellows porep setup --proof StackedDrg2KiBV1_1 --params-dir ./params";

/// `bellows porep c2`.
#[derive(Debug, Args)]
pub struct C2Args {
    /// The C1 output (lotus-bench JSON or SealCommitPhase1Output JSON).
    #[arg(long, value_name = "FILE")]
    pub c1: PathBuf,
    /// The filecoin-proofs parameter folder holding this proof type's .params (and .vk)
    /// [default: FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters].
    #[arg(long = "params-dir", value_name = "DIR")]
    pub params_dir: Option<PathBuf>,
    /// Where to write the proof bytes.
    #[arg(long, value_name = "PROOF")]
    pub out: PathBuf,
    /// Replace --out if it exists.
    #[arg(long)]
    pub force: bool,
    /// How the parameters are checked: auto (digest for a published file, else batched),
    /// batched, full, digest, curve-only.
    #[arg(long, value_name = "CHECK", default_value = "auto",
          value_parser = ["auto", "batched", "full", "digest", "curve-only"])]
    pub check: String,
    /// For --check digest: a manifest in parameters.json's format [default: the
    /// parameters.json filecoin-proofs 19.1 carries].
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Deterministic r and s from this seed (for tests; real proofs draw them from the OS).
    #[arg(long, value_name = "S", value_parser = crate::values::seed)]
    pub seed: Option<u64>,
    /// Skip the check of the proof against the verifying key before writing it.
    #[arg(long = "no-verify")]
    pub no_verify: bool,
    /// Print timings as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// Prove on a `bellows serve` daemon instead (`--daemon ADDR`; --params-dir is then a
    /// folder on the daemon's host), with its token, TLS and --priority.
    #[command(flatten)]
    pub daemon: crate::cmd::client::DaemonArgs,
    /// With --daemon: the job's priority (higher runs first).
    #[arg(
        long,
        value_name = "P",
        default_value_t = 0,
        allow_negative_numbers = true,
        requires = "daemon"
    )]
    pub priority: i32,
    /// With --daemon: only submit, print the job id; `bellows await JOB` writes --out.
    #[arg(long, requires = "daemon")]
    pub submit: bool,
    /// Pre-compiled synthesis of the partitions (on by default: the partition circuit's
    /// constraint system is recorded once per proof type into the folder, then only its witness
    /// code runs per partition; the same proof bytes).
    #[command(flatten)]
    pub pce: crate::cmd::pce::PceOpts,
    /// Prove the C1 output this many times in a row, the parameters loaded once and every
    /// partition through one pipeline (the next proof's partitions are synthesised while the
    /// last ones are on the device): the steady state of a prover that is never idle. Each
    /// proof is verified; --out gets the last. Prints each proof's completion time and the
    /// interval between proofs.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub reps: u32,
}

/// `bellows porep verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The C1 output the proof was made from.
    #[arg(long, value_name = "FILE")]
    pub c1: PathBuf,
    /// The C2 proof file.
    #[arg(long, value_name = "PROOF")]
    pub proof: PathBuf,
    /// The parameter folder holding the verifying key (.vk) [default: FIL_PROOFS_PARAMETER_CACHE,
    /// else /var/tmp/filecoin-proof-parameters].
    #[arg(long = "params-dir", value_name = "DIR")]
    pub params_dir: Option<PathBuf>,
    /// The prover id, 32 bytes in hex.
    #[arg(
        long = "prover-id",
        value_name = "HEX",
        conflicts_with = "miner",
        required_unless_present = "miner"
    )]
    pub prover_id: Option<String>,
    /// The miner's actor id (the number of f0NNNN), from which the prover id is derived.
    #[arg(long, value_name = "ACTOR")]
    pub miner: Option<u64>,
    /// The sector number [default: the C1 file's SectorNum].
    #[arg(long = "sector-id", value_name = "N")]
    pub sector_id: Option<u64>,
}

/// `bellows porep info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The C1 output.
    #[arg(long, value_name = "FILE")]
    pub c1: PathBuf,
    /// The parameter folder to look for the needed files in [default:
    /// FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters].
    #[arg(long = "params-dir", value_name = "DIR")]
    pub params_dir: Option<PathBuf>,
}

/// `bellows porep setup`.
#[derive(Debug, Args)]
pub struct SetupArgs {
    /// The proof type, as filecoin-proofs-api names it (e.g. StackedDrg2KiBV1_1).
    #[arg(long, value_name = "TYPE")]
    pub proof: String,
    /// The folder to write the files into (created if missing).
    #[arg(long = "params-dir", value_name = "DIR")]
    pub params_dir: PathBuf,
    /// Draw the toxic waste from this seed. INSECURE: for test vectors only.
    #[arg(long, value_name = "S", value_parser = crate::values::seed)]
    pub seed: Option<u64>,
    /// Replace existing files.
    #[arg(long)]
    pub force: bool,
    /// Where the circuit's recording is kept (the setup runs from it, and `porep c2` takes it
    /// from there instead of recording the circuit again).
    #[command(flatten)]
    pub pce: crate::cmd::pce::PceOpts,
}

/// The parameter folder: `--params-dir`, else FIL_PROOFS_PARAMETER_CACHE, else lotus' default.
fn params_dir(opt: &Option<PathBuf>) -> PathBuf {
    opt.clone()
        .or_else(|| std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/var/tmp/filecoin-proof-parameters"))
}

/// Runs `bellows porep`.
pub fn run(args: &PorepArgs, g: &Globals) -> Result<()> {
    match &args.command {
        PorepCommand::C2(a) => c2(a, g),
        PorepCommand::Verify(a) => verify(a),
        PorepCommand::Info(a) => info(a),
        PorepCommand::Setup(a) => setup(a),
        PorepCommand::Load(a) => load(a, g),
        PorepCommand::SynthC1(a) => synth_c1(a),
    }
}

fn c2(a: &C2Args, g: &Globals) -> Result<()> {
    let mut files = output::prepare(
        &[("--c1", &a.c1)],
        &[Out {
            opt: "--out",
            path: &a.out,
            what: "proof file",
        }],
        a.force,
    )?
    .into_iter();
    let out = files.next().expect("one output prepared");
    if a.daemon.daemon.is_some() {
        drop(out);
        return c2_on_daemon(a);
    }
    let c1 = bellows_filecoin::read_c1(&a.c1)?;
    let check: Check = a.check.parse()?;
    let backend = open_backend(&a.backend, g)?;
    let mut cfg = ProveConfig::new(backend.clone());
    cfg.check = check;
    cfg.manifest = a.manifest.clone();
    cfg.g2 = g2_policy(&a.backend)?;
    cfg.pipeline.seed = a.seed;
    cfg.verify = !a.no_verify;
    if !a.pce.no_pce {
        match PceCache::open(a.pce.pce_dir.as_deref()) {
            Ok(cache) => {
                cfg.pce_dir = Some(cache.dir().to_path_buf());
                // Beside the recordings: a published file is hashed once per version.
                cfg.digest_memo = Some(cache.dir().join("params-digests"));
            }
            Err(e) => crate::stdio::warn(&format!(
                "{e}; synthesising directly (--pce-dir names a folder for recordings)"
            )),
        }
    }
    errln!(
        "proving {:?} C2: {} partition(s) on backend {}",
        c1.registered_proof(),
        c1.partitions(),
        backend.info().name
    );
    // On a terminal, a bar over the partitions of every proof (the first waits for the load).
    let pb = count(u64::from(a.reps) * c1.partitions() as u64, "partitions");
    let bar = pb.clone();
    cfg.pipeline.on_partition = Some(PartitionHook::new(move |_, _| bar.inc(1)));
    let t = Instant::now();
    let c1s = vec![c1.clone(); a.reps as usize];
    let batch = bellows_filecoin::porep::prove_c2_batch(&c1s, &params_dir(&a.params_dir), &cfg);
    pb.finish_and_clear();
    let batch = batch?;
    let total = t.elapsed();
    let stats = batch.stats;
    let done: Vec<f64> = batch
        .proofs
        .iter()
        .map(|p| p.prove_time.as_secs_f64())
        .collect();
    let mut res = batch
        .proofs
        .into_iter()
        .last()
        .ok_or_else(|| bellows_core::Error::Pipeline("no proof completed".into()))?;
    res.prove_time = batch.prove_time;
    out.commit_bytes(&res.proof)?;
    // Seconds between consecutive proofs once the pipeline is full: from the first completion
    // to the last, over the proofs after the first (proofs of one partition may finish
    // together, out of order).
    let (first, last) = done
        .iter()
        .fold((f64::MAX, 0f64), |(lo, hi), &d| (lo.min(d), hi.max(d)));
    let interval = (done.len() > 1).then(|| (last - first) / (done.len() - 1) as f64);
    let partitions = stats.partitions.max(1) as f64;
    errln!(
        "pipeline: {} partition(s) in {:.1} s; a partition's synthesis {:.2} s and device phase \
         {:.2} s on average; a partition on the device {:.0} % of the time",
        stats.partitions,
        stats.wall.as_secs_f64(),
        stats.synthesis.as_secs_f64() / partitions,
        stats.device.as_secs_f64() / partitions,
        100.0 * stats.device_occupied_share()
    );
    if a.reps > 1 {
        // The proofs' partitions interleave, so the interval between completions can flatter;
        // the whole batch's time over its proofs cannot.
        errln!(
            "{} proofs done at {} s after the load; {:.2} s per proof in steady state, {:.2} s \
             a proof over the whole batch",
            done.len(),
            done.iter()
                .map(|d| format!("{d:.2}"))
                .collect::<Vec<_>>()
                .join(", "),
            interval.unwrap_or(0.0),
            last / done.len().max(1) as f64
        );
    }
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "proof_type": format!("{:?}", c1.registered_proof()),
                "partitions": res.partitions.len(),
                "backend": backend.info().name,
                "check": res.load.check.name(),
                "digest_recorded": res.load.digest_recorded,
                "load_ms": ms(res.load.elapsed),
                "circuits_ms": ms(res.circuits_time),
                "key_ms": ms(res.key_time),
                "prove_ms": ms(res.prove_time),
                "proofs": done.len(),
                "done_s": done,
                "steady_interval_s": interval,
                "synthesis_s": stats.synthesis.as_secs_f64(),
                "budget_wait_s": stats.budget_wait.as_secs_f64(),
                "device_s": stats.device.as_secs_f64(),
                "device_occupied_share": stats.device_occupied_share(),
                "verify_ms": res.verify_time.map(ms),
                "total_ms": ms(total),
                "proof_bytes": res.proof.len(),
            })
        );
    }
    errln!(
        "wrote {} ({} bytes): load {:.1} s ({} check{}), prove {:.1} s, {}total {:.1} s",
        a.out.display(),
        res.proof.len(),
        res.load.elapsed.as_secs_f64(),
        res.load.check.name(),
        if res.load.digest_recorded {
            ": the digest recorded for this file version, not hashed again"
        } else {
            ""
        },
        res.prove_time.as_secs_f64(),
        match res.verify_time {
            Some(v) => format!("verified {:.2} s, ", v.as_secs_f64()),
            None => "not verified, ".into(),
        },
        total.as_secs_f64()
    );
    Ok(())
}

/// `bellows porep c2 --daemon`: the C1 file checked here (a bad file is named before anything
/// is sent), then its bytes sent as they are.
fn c2_on_daemon(a: &C2Args) -> Result<()> {
    let bytes = bellows_core::groth16::io::read_bounded(
        &a.c1,
        &format!("C1 output {}", a.c1.display()),
        bellows_filecoin::c1::MAX_C1_BYTES,
    )?;
    let c1 = bellows_filecoin::parse_c1(&bytes, &format!("C1 output {}", a.c1.display()))?;
    if a.backend.backend != "cpu" || a.no_verify || a.manifest.is_some() || a.check == "digest" {
        crate::stdio::warn(
            "the daemon proves on its own devices, always verifies, and checks parameters fully \
             (or with curve checks only, --check curve-only): --backend, --no-verify, \
             --manifest and --check digest do not apply",
        );
    }
    errln!(
        "sending {:?} C2 ({} partition(s), {} bytes of C1) to {}",
        c1.registered_proof(),
        c1.partitions(),
        bytes.len(),
        a.daemon.daemon.as_deref().unwrap_or_default()
    );
    crate::cmd::client::porep_c2(
        crate::cmd::client::PorepJob {
            c1: bytes,
            c1_path: &a.c1,
            params_dir: &params_dir(&a.params_dir),
            seed: a.seed,
            curve_only: a.check == "curve-only",
            priority: a.priority,
            out: &a.out,
            force: a.force,
            submit_only: a.submit,
        },
        &a.daemon,
    )
}

fn parse_hex32(s: &str) -> Result<[u8; 32]> {
    let s = s.trim().trim_start_matches("0x");
    let bad = |why: &str| CliError::Usage(format!("invalid value '{s}' for '--prover-id': {why}"));
    if s.len() != 64 {
        return Err(bad("expected 64 hex digits (32 bytes)"));
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad("not hex"))?;
    }
    Ok(out)
}

/// Points filecoin-proofs at `dir` for this process (before its settings are first read).
fn set_parameter_cache(dir: &Path) -> Result<()> {
    let dir = dir
        .canonicalize()
        .map_err(|e| Error::io(format!("opening the parameter folder {}", dir.display()), e))?;
    // filecoin-proofs reads FIL_PROOFS_PARAMETER_CACHE once, at its first use in the process;
    // nothing has used it yet when a command starts, and no other thread is running.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    let seen = porep::filecoin_parameter_cache();
    if seen.canonicalize().ok().as_deref() != Some(dir.as_path()) {
        return Err(Error::invalid(format!(
            "filecoin-proofs reads parameters from {}, not {}",
            seen.display(),
            dir.display()
        ))
        .into());
    }
    Ok(())
}

fn verify(a: &VerifyArgs) -> Result<()> {
    let c1 = bellows_filecoin::read_c1(&a.c1)?;
    let prover_id = match (&a.prover_id, a.miner) {
        (Some(h), _) => parse_hex32(h)?,
        (None, Some(m)) => porep::prover_id_from_actor(m),
        (None, None) => unreachable!("clap requires one of --prover-id and --miner"),
    };
    let sector = a.sector_id.or(c1.sector_num).ok_or_else(|| {
        CliError::Usage(
            "the C1 file does not name its sector (it is not lotus-bench's form): give \
             --sector-id N"
                .into(),
        )
    })?;
    let proof = bellows_core::groth16::io::read_bounded(&a.proof, "C2 proof file", 1 << 20)?;
    let dir = params_dir(&a.params_dir);
    let vk = porep::cache_paths(c1.registered_proof(), &dir)?.vk;
    if !vk.exists() {
        return Err(Error::invalid(format!(
            "no verifying key for {:?} in {}: expected {}",
            c1.registered_proof(),
            dir.display(),
            vk.display()
        ))
        .into());
    }
    set_parameter_cache(&dir)?;
    if bellows_filecoin::verify_seal(&c1, prover_id, sector, &proof)? {
        println!("valid");
        Ok(())
    } else {
        Err(Error::VerificationFailed(format!(
            "filecoin-proofs' verify_seal rejects {} for sector {sector} of prover {} ({:?}): a \
             proof of another sector or prover, or changed bytes",
            a.proof.display(),
            hex(&prover_id),
            c1.registered_proof()
        ))
        .into())
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn info(a: &InfoArgs) -> Result<()> {
    let c1: C1Output = bellows_filecoin::read_c1(&a.c1)?;
    let p = c1.registered_proof();
    println!("proof type      {p:?}");
    println!("sector size     {} bytes", u64::from(p.sector_size()));
    if let Some(n) = c1.sector_num {
        println!("sector number   {n}");
    }
    println!("partitions      {}", c1.partitions());
    println!("comm_r          {}", hex(&c1.phase1.comm_r));
    println!("comm_d          {}", hex(&c1.phase1.comm_d));
    let dir = params_dir(&a.params_dir);
    let paths = porep::cache_paths(p, &dir)?;
    for (what, path) in [("parameters", &paths.params), ("verifying key", &paths.vk)] {
        let state = if path.exists() { "present" } else { "missing" };
        println!("{what:<15} {} ({state})", path.display());
    }
    println!(
        "published       {}",
        if paths.is_published() {
            "yes (listed in parameters.json: --check digest applies)"
        } else {
            "no"
        }
    );
    Ok(())
}

fn parse_proof_type(s: &str) -> Result<RegisteredSealProof> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|_| {
        CliError::Usage(format!(
            "invalid value '{s}' for '--proof': not a seal proof type (e.g. StackedDrg2KiBV1_1, \
             StackedDrg32GiBV1_1)"
        ))
    })
}

fn setup(a: &SetupArgs) -> Result<()> {
    let proof = parse_proof_type(&a.proof)?;
    bellows_filecoin::c1::supported(proof)?;
    errln!(
        "generating TEST parameters for {proof:?} ({} bytes per sector): proofs made with them \
         do not verify on the Filecoin network",
        u64::from(proof.sector_size())
    );
    let pce_dir = if a.pce.no_pce {
        None
    } else {
        match PceCache::open(a.pce.pce_dir.as_deref()) {
            Ok(cache) => Some(cache.dir().to_path_buf()),
            Err(e) => {
                crate::stdio::warn(&format!("{e}; the recording is not kept"));
                None
            }
        }
    };
    let lines = SetupLines::new(
        bellows_filecoin::prove::SETUP_CIRCUIT_STEPS,
        bellows_filecoin::prove::RECORDING_STEP,
    );
    let said = |s: &bellows_core::groth16::setup::SetupStep| lines.report(s);
    let done = match a.seed {
        Some(s) => porep::setup_with(
            proof,
            &a.params_dir,
            &mut rand_chacha::ChaCha20Rng::seed_from_u64(s),
            a.force,
            pce_dir.as_deref(),
            &said,
        ),
        None => porep::setup_with(
            proof,
            &a.params_dir,
            &mut rand_core::OsRng,
            a.force,
            pce_dir.as_deref(),
            &said,
        ),
    };
    lines.finish();
    let (paths, report) = done?;
    errln!(
        "setup {:.1} s (2^{} domain, {} inputs, {} private variables, {}), written in {:.1} s:",
        report.setup_time.as_secs_f64(),
        report.domain_size.trailing_zeros(),
        report.num_inputs,
        report.num_aux,
        bellows_core::units::format_bytes(report.params_bytes),
        report.write_time.as_secs_f64()
    );
    for p in [&paths.params, &paths.vk, &paths.meta] {
        println!("{}", p.display());
    }
    Ok(())
}

const SYNTH_C1_ABOUT: &str = "Make a SYNTHETIC C1 output (filecoin-proofs-api's \
SealCommitPhase1Output) without sealing a sector: for benchmarks and tests of C2 only. It is \
consistent — storage-proofs' vanilla-proof verification accepts it, and a C2 proof of it passes \
filecoin-proofs' verify_seal — but it proves NOTHING about stored data: no sector was \
replicated, and its commitments open only where the challenges look.\n\n\
The replica id and the challenges are derived as filecoin-proofs derives them (prover id, \
sector number, ticket, comm_d, interactive seed), the labels of the challenged nodes with \
Filecoin's labelling rule from the real graph's parents, and the trees (comm_d, comm_c, \
comm_r_last) are built only along the opened paths, so any size takes seconds and little memory. \
The proof type is the current version (…V1_1) of the size's interactive PoRep. All randomness \
(ticket, seed, data, labels) comes from --seed: one seed gives the same file.\n\n\
The file is lotus-bench's JSON ({\"SectorNum\", \"SectorSize\", \"Phase1Out\"}) unless --raw; \
it is written atomically, and an existing --out is replaced only with --force.\n\n\
Examples:\n  bellows porep synth-c1 --sector-size 32GiB --seed 1 --out c1-32g.json\n  \
bellows porep synth-c1 --sector-size 2KiB --miner 1000 --sector 7 --raw --out c1.json";

/// `bellows porep synth-c1`.
#[derive(Debug, Args)]
pub struct SynthC1Args {
    /// The sector size: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB.
    #[arg(long = "sector-size", value_name = "SIZE", value_parser = synth_sector_size)]
    pub sector_size: RegisteredSealProof,
    /// Seed of all the output's randomness [default: drawn from the OS and printed].
    #[arg(long, value_name = "S", value_parser = crate::values::seed)]
    pub seed: Option<u64>,
    /// The miner's actor id (the number of f0NNNN): the prover id is derived from it as lotus
    /// derives it.
    #[arg(long, value_name = "ACTOR", default_value_t = 1000)]
    pub miner: u64,
    /// The sector number.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub sector: u64,
    /// Write the bare SealCommitPhase1Output JSON instead of lotus-bench's wrapper.
    #[arg(long)]
    pub raw: bool,
    /// Where to write the C1 output.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Replace --out if it exists.
    #[arg(long)]
    pub force: bool,
}

/// `--sector-size`: a byte size that is one of the production sector sizes.
fn synth_sector_size(s: &str) -> std::result::Result<RegisteredSealProof, String> {
    let bytes = bellows_core::units::parse_bytes(s)?;
    bellows_filecoin::synth_c1::proof_for_sector_size(bytes).map_err(|e| match e {
        Error::InvalidInput(m) => m,
        e => e.to_string(),
    })
}

fn synth_c1(a: &SynthC1Args) -> Result<()> {
    use rand_core::RngCore;
    let mut files = output::prepare(
        &[],
        &[Out {
            opt: "--out",
            path: &a.out,
            what: "C1 output",
        }],
        a.force,
    )?
    .into_iter();
    let out = files.next().expect("one output prepared");
    let proof = a.sector_size;
    let mut opts = bellows_filecoin::SynthOptions::default();
    opts.seed = a.seed.unwrap_or_else(|| rand_core::OsRng.next_u64());
    opts.prover_id = porep::prover_id_from_actor(a.miner);
    opts.sector_id = a.sector;
    errln!(
        "making a SYNTHETIC {proof:?} C1 output (seed {}, miner f0{}, sector {}): for benchmarks \
         and tests; it proves nothing about stored data",
        opts.seed,
        a.miner,
        a.sector
    );
    let t = Instant::now();
    let c1 = bellows_filecoin::synth_c1(proof, &opts)?;
    let made = t.elapsed();
    let bytes = if a.raw {
        bellows_filecoin::testing::c1_json(&c1)
    } else {
        bellows_filecoin::testing::lotus_bench_json(&c1, a.sector)
    };
    out.commit_bytes(&bytes)?;
    errln!(
        "wrote {} ({} bytes, {} partition(s)): made and checked in {:.2} s, written in {:.2} s",
        a.out.display(),
        bytes.len(),
        proof.partitions(),
        made.as_secs_f64(),
        (t.elapsed() - made).as_secs_f64()
    );
    Ok(())
}

//! `bellows pce build|info|list`, the `--no-pce`/`--pce-dir` options of prove and bench, and
//! `bellows bench --compare-synthesis`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bellows_core::{
    circuits::{witness_seed, CircuitSpec},
    groth16::{
        limits::{self, Shape},
        output::describe_file_type,
        synthesis::{synthesize_batch, Synthesized},
    },
    pce::{
        cache::{builtin_id, PceCache, Source},
        Pce,
    },
    Error, Result,
};
use bellows_serve::files::regular_or_absent;
use clap::{Args, Subcommand};

use crate::circuit::circuit_spec;
use crate::circuit::CircuitArgs;
use crate::cmd::bench::BenchArgs;
use crate::progress::spinner;
use crate::stats::{fmt_duration, fmt_secs, Stat};

/// `--no-pce` and `--pce-dir`, for the commands that synthesise.
#[derive(Debug, Args, Clone, Default)]
pub struct PceOpts {
    /// Synthesise directly (run every constraint's code per proof) instead of with the circuit's
    /// pre-compiled constraint system.
    #[arg(long = "no-pce")]
    pub no_pce: bool,
    /// Folder of pre-compiled constraint systems [default: $BELLOWS_PCE_DIR, else
    /// $XDG_CACHE_HOME/bellows/pce, else ~/.cache/bellows/pce].
    #[arg(long = "pce-dir", value_name = "DIR", conflicts_with = "no_pce")]
    pub pce_dir: Option<PathBuf>,
}

/// `bellows pce`.
#[derive(Debug, Args)]
pub struct PceArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: PceAction,
    /// `--threads`.
    #[command(flatten)]
    pub threads: crate::cli::ThreadsArg,
}

/// The `pce` subcommands.
#[derive(Debug, Subcommand)]
pub enum PceAction {
    /// Record a built-in circuit's constraint system and write it to the cache (replacing an
    /// existing entry).
    Build {
        /// The circuit.
        #[command(flatten)]
        circuit: CircuitArgs,
        /// Cache folder (see `bellows prove --help`).
        #[arg(long = "pce-dir", value_name = "DIR")]
        pce_dir: Option<PathBuf>,
    },
    /// Check a recording (every byte) and describe it: the cache entry of a circuit, or a file.
    Info {
        /// The circuit whose cache entry to describe.
        #[command(flatten)]
        circuit: CircuitArgs,
        /// Describe this file instead of a cache entry.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Cache folder.
        #[arg(long = "pce-dir", value_name = "DIR")]
        pce_dir: Option<PathBuf>,
    },
    /// List the cache's entries, checking each.
    List {
        /// Cache folder.
        #[arg(long = "pce-dir", value_name = "DIR")]
        pce_dir: Option<PathBuf>,
    },
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn describe(pce: &Pce) -> String {
    let [a, b, c] = pce.nnz();
    format!(
        "id:              {}\n\
         shape digest:    {}\n\
         constraints:     {} (input constraints included)\n\
         variables:       {} inputs (the constant one included), {} aux\n\
         non-zeros:       A {a}, B {b}, C {c} ({} in all)\n\
         coefficients:    {} distinct\n\
         entries:         {} bytes each\n\
         size:            {} ({:.2} bytes per non-zero)\n\
         densities:       A aux {} of {}, B inputs {} of {}, B aux {} of {}",
        pce.id(),
        pce.digest_hex(),
        pce.num_constraints(),
        pce.num_inputs(),
        pce.num_aux(),
        a + b + c,
        pce.num_coeffs(),
        pce.entry_bytes(),
        mb(pce.size_bytes()),
        pce.bytes_per_nonzero(),
        pce.a_aux_density().total(),
        pce.a_aux_density().len(),
        pce.b_input_density().total(),
        pce.b_input_density().len(),
        pce.b_aux_density().total(),
        pce.b_aux_density().len(),
    )
}

/// Runs `bellows pce ...`.
pub fn run(args: &PceArgs) -> Result<()> {
    match &args.action {
        PceAction::Build { circuit, pce_dir } => {
            let (spec, shape) = crate::circuit::circuit_plan(circuit).map_err(|e| match e {
                crate::error::CliError::Core(c) => c,
                other => Error::invalid(other.to_string()),
            })?;
            check_recording_memory(&spec, &shape)?;
            let cache = PceCache::open(pce_dir.as_deref())?;
            let id = builtin_id(&spec);
            let path = cache.path(&id)?;
            let replaced = regular_or_absent(&path, "cache entry")?;
            crate::outln!("circuit: {}", spec.description());
            let pb = spinner("recording the constraint system");
            let built = cache.build(spec.blank(), &id);
            pb.finish_and_clear();
            let (pce, took) = built?;
            crate::outln!("{}", describe(&pce));
            crate::outln!("recorded in {}", fmt_duration(took));
            crate::outln!(
                "wrote {}{}",
                path.display(),
                if replaced { " (replaced)" } else { "" }
            );
            Ok(())
        }
        PceAction::Info {
            circuit,
            file,
            pce_dir,
        } => {
            let t = Instant::now();
            let pce = match file {
                Some(f) => {
                    // Followed if a link, but never opened unless a regular file.
                    match std::fs::metadata(f) {
                        Ok(m) if m.is_file() => {}
                        Ok(m) => {
                            return Err(Error::invalid(format!(
                                "{} is {}, not a recording file",
                                f.display(),
                                describe_file_type(&m)
                            )))
                        }
                        Err(e) => return Err(Error::io(format!("reading {}", f.display()), e)),
                    }
                    Pce::load(f, None)?
                }
                None => {
                    let spec = circuit_spec(circuit)?;
                    let cache = PceCache::open(pce_dir.as_deref())?;
                    let id = builtin_id(&spec);
                    if !regular_or_absent(&cache.path(&id)?, "cache entry")? {
                        return Err(Error::invalid(format!(
                            "no recording of {id} in {} (make it with `bellows pce build`)",
                            cache.dir().display()
                        )));
                    }
                    crate::outln!("file:            {}", cache.path(&id)?.display());
                    cache.load(&id, None)?
                }
            };
            crate::outln!("{}", describe(&pce));
            crate::outln!("checked and loaded in {}", fmt_duration(t.elapsed()));
            Ok(())
        }
        PceAction::List { pce_dir } => {
            let cache = PceCache::open(pce_dir.as_deref())?;
            let entries = cache.list()?;
            if entries.is_empty() {
                crate::outln!("no recordings in {}", cache.dir().display());
            }
            for path in entries {
                // An entry that is not a regular file (a FIFO would hang the listing, a link
                // to a device never end it) is refused without being opened.
                match regular_or_absent(&path, "cache entry").and_then(|_| Pce::load(&path, None)) {
                    Ok(p) => crate::outln!(
                        "{}  {}  {} constraints  {}",
                        p.id(),
                        &p.digest_hex()[..16],
                        p.num_constraints(),
                        mb(p.size_bytes())
                    ),
                    Err(e) => crate::outln!("{}  REFUSED: {e}", path.display()),
                }
            }
            Ok(())
        }
    }
}

/// The recording `bellows prove` uses: none with `--no-pce`; else the cache entry of the
/// circuit, recorded and written to the cache first when there is none (one run of the
/// circuit's constraint code, about one direct synthesis). A refused entry is an error.
pub fn for_prove(opts: &PceOpts, spec: &CircuitSpec) -> Result<Option<Arc<Pce>>> {
    if opts.no_pce {
        return Ok(None);
    }
    let id = builtin_id(spec);
    let t = Instant::now();
    let cache = match PceCache::open(opts.pce_dir.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            // No folder to cache in: still record (in memory) for this run.
            crate::stdio::warn(&format!("{e}; recording {id} in memory for this run only"));
            let pb = spinner("recording the constraint system");
            let pce = Pce::record(spec.blank(), &id);
            pb.finish_and_clear();
            let pce = pce?;
            crate::errln!(
                "synthesis: pre-compiled constraint system {id}, recorded (one-time, not cached) \
                 in {}, {}",
                fmt_duration(t.elapsed()),
                mb(pce.size_bytes())
            );
            return Ok(Some(Arc::new(pce)));
        }
    };
    regular_or_absent(&cache.path(&id)?, "cache entry")?;
    let pb = spinner("pre-compiled constraint system");
    let got = cache.load_or_record(spec.blank(), &id);
    pb.finish_and_clear();
    let (pce, source) = got.inspect_err(|_| {
        crate::stdio::warn(&format!(
            "the pre-compiled constraint system {id} cannot be used: rebuild it with `bellows pce \
             build` (same circuit options), or prove with --no-pce"
        ))
    })?;
    let how = match source {
        Source::Loaded => "loaded",
        Source::RecordedAndSaved => "recorded (one-time) and cached",
        Source::RecordedNotSaved => "recorded (one-time; the cache could not be written)",
    };
    crate::errln!(
        "synthesis: pre-compiled constraint system {id}, {how} in {}, {} ({})",
        fmt_duration(t.elapsed()),
        mb(pce.size_bytes()),
        cache.path(&id)?.display()
    );
    Ok(Some(Arc::new(pce)))
}

/// Synthesises `circuits` with `pce` when given (into `backend`'s host memory, pinned on a
/// device backend), else directly.
pub fn synthesize_with<C>(
    pce: Option<&Pce>,
    circuits: Vec<C>,
    backend: Option<&Arc<dyn bellows_core::Backend>>,
) -> Result<Vec<Synthesized>>
where
    C: bellpepper_core::Circuit<blstrs::Scalar> + Send,
{
    match pce {
        Some(p) => p.synthesize_batch_for(circuits, backend),
        None => synthesize_batch(circuits),
    }
}

/// What `bench` records before proving (in memory; not the cache, so runs are independent).
pub struct BenchRecording {
    /// The recording.
    pub pce: Pce,
    /// How long recording took.
    pub took: Duration,
}

/// Records `spec` for a benchmark.
pub fn record_for_bench(spec: &CircuitSpec) -> Result<BenchRecording> {
    let pb = spinner("recording the constraint system");
    let t = Instant::now();
    let pce = Pce::record(spec.blank(), &builtin_id(spec));
    let took = t.elapsed();
    pb.finish_and_clear();
    Ok(BenchRecording { pce: pce?, took })
}

fn same(d: &Synthesized, p: &Synthesized) -> std::result::Result<(), String> {
    // Scalar equality compares the Montgomery limbs: the bits in memory, which are canonical.
    let eq = |x: &[blstrs::Scalar], y: &[blstrs::Scalar]| x == y;
    let checks = [
        ("a", eq(&d.a, &p.a)),
        ("b", eq(&d.b, &p.b)),
        ("c", eq(&d.c, &p.c)),
        (
            "input assignment",
            eq(&d.input_assignment, &p.input_assignment),
        ),
        ("aux assignment", eq(&d.aux_assignment, &p.aux_assignment)),
        ("A aux density", d.a_aux_density == p.a_aux_density),
        ("B input density", d.b_input_density == p.b_input_density),
        ("B aux density", d.b_aux_density == p.b_aux_density),
    ];
    match checks.iter().find(|(_, ok)| !ok) {
        None => Ok(()),
        Some((what, _)) => Err(format!("{what} differs")),
    }
}

/// `bellows bench --compare-synthesis`: direct and pre-compiled synthesis of the same circuits
/// with the same witnesses, alternating rep by rep; checks they agree bit for bit; prints both
/// medians and, last, `ratio pce/direct: X.XX`.
///
/// With a backend other than `cpu` (`--backend cuda`), pre-compiled synthesis writes into the
/// host memory that backend provides (pinned), as `bench` and `prove` do; the backend's name is
/// printed with the memory it gave.
pub fn compare_synthesis(args: &BenchArgs, g: &crate::cli::Globals) -> Result<()> {
    let (spec, shape) = crate::circuit::circuit_plan(&args.circuit).map_err(|e| match e {
        crate::error::CliError::Core(c) => c,
        other => Error::invalid(other.to_string()),
    })?;
    // The recording, and both syntheses' results of every circuit of a rep held at once.
    let per_circuit =
        bellows_core::pipeline::partition_bytes_of(shape.domain, shape.vars, shape.vars);
    limits::check_memory(
        &format!(
            "comparing direct and pre-compiled synthesis of {} circuit(s) of {} (lower \
             --count or --log-size)",
            args.count,
            spec.description()
        ),
        recording_bytes(&shape)
            .saturating_add(per_circuit.saturating_mul(2 * u64::from(args.count))),
    )?;
    let backend = if args.backend.backend == "cpu" {
        None
    } else {
        Some(crate::backend_opts::open(&args.backend, g)?)
    };
    let n = spec.num_constraints();
    crate::outln!("circuit: {}", spec.description());
    crate::outln!(
        "synthesis only: {} circuit(s) per rep, {} rep(s) after {} warm-up, {} threads",
        args.count,
        args.reps,
        args.warmup,
        rayon::current_num_threads()
    );
    let rec = record_for_bench(&spec)?;
    let pce = &rec.pce;
    crate::outln!(
        "recording: {} in {}, {} ({:.2} bytes per non-zero, {} non-zeros, {} coefficients)",
        pce.id(),
        fmt_duration(rec.took),
        mb(pce.size_bytes()),
        pce.bytes_per_nonzero(),
        pce.nnz().iter().sum::<u64>(),
        pce.num_coeffs()
    );
    let seeds: Vec<u64> = (0..u64::from(args.count))
        .map(|i| witness_seed(args.seed, i))
        .collect();
    let circuits = || {
        seeds
            .iter()
            .map(|&s| spec.with_witness(s))
            .collect::<Vec<_>>()
    };
    let (mut direct, mut fast, mut wit, mut prod) = (vec![], vec![], vec![], vec![]);
    let mut lent_last = false;
    for rep in 0..args.warmup + args.reps {
        let t = Instant::now();
        let d = synthesize_batch(circuits())?;
        let td = t.elapsed();
        let t = Instant::now();
        let (p, tw, tp) = if args.count == 1 {
            let c = circuits().pop().expect("one circuit");
            let (s, tm) = pce.synthesize_timed(c, backend.as_ref())?;
            (vec![s], Some(tm.witness), Some(tm.products))
        } else {
            (
                pce.synthesize_batch_for(circuits(), backend.as_ref())?,
                None,
                None,
            )
        };
        // Whether the backend lent the buffers, in the last rep (a device backend may lend a
        // large size only from its second request on).
        lent_last = p.iter().all(|s| s.a.is_backend_memory());
        let tf = t.elapsed();
        if rep == 0 {
            for (k, (d, p)) in d.iter().zip(&p).enumerate() {
                same(d, p).map_err(|e| {
                    Error::Synthesis(format!(
                        "pre-compiled synthesis disagrees with direct synthesis for circuit {k}: \
                         {e}"
                    ))
                })?;
            }
            crate::outln!("check: pre-compiled and direct synthesis agree bit for bit");
        }
        drop((d, p));
        if rep < args.warmup {
            continue;
        }
        direct.push(td);
        fast.push(tf);
        wit.extend(tw);
        prod.extend(tp);
    }
    if let Some(b) = &backend {
        crate::outln!(
            "buffers: pre-compiled synthesis into {} host memory: {} in the last rep",
            b.info().name,
            if lent_last {
                "given (pinned)"
            } else {
                "not given (heap)"
            }
        );
    }
    let (sd, sf) = (Stat::of(&direct), Stat::of(&fast));
    crate::outln!("  {:<34} {:>10} {:>10}", "synthesis", "median", "min");
    crate::outln!(
        "  {:<34} {:>10} {:>10}",
        "direct",
        fmt_secs(sd.median_s),
        fmt_secs(sd.min_s)
    );
    crate::outln!(
        "  {:<34} {:>10} {:>10}",
        "pce",
        fmt_secs(sf.median_s),
        fmt_secs(sf.min_s)
    );
    let per = |s: f64| s * 1e9 / (n as f64 * f64::from(args.count));
    if !wit.is_empty() {
        let (sw, sp) = (Stat::of(&wit), Stat::of(&prod));
        crate::outln!(
            "  {:<34} {:>10} {:>10}",
            "  witness (products overlap it)",
            fmt_secs(sw.median_s),
            fmt_secs(sw.min_s)
        );
        crate::outln!(
            "  {:<34} {:>10} {:>10}",
            "  products after the witness",
            fmt_secs(sp.median_s),
            fmt_secs(sp.min_s)
        );
        crate::outln!(
            "per constraint: direct {:.0} ns, pce {:.0} ns (witness {:.0} ns, products tail {:.0} ns)",
            per(sd.median_s),
            per(sf.median_s),
            per(sw.median_s),
            per(sp.median_s)
        );
    } else {
        crate::outln!(
            "per constraint: direct {:.0} ns, pce {:.0} ns",
            per(sd.median_s),
            per(sf.median_s)
        );
    }
    let saving = sd.median_s - sf.median_s;
    if saving > 0.0 {
        crate::outln!(
            "one-time recording {} against {} saved per rep: pays off after {:.1} rep(s)",
            fmt_duration(rec.took),
            fmt_secs(saving),
            rec.took.as_secs_f64() / saving
        );
    } else {
        crate::outln!("pce saved nothing here: the recording does not pay off");
    }
    crate::outln!("ratio pce/direct: {:.2}", sf.median_s / sd.median_s);
    Ok(())
}

/// Bytes per constraint a recording needs while it is made, an upper bound: measured peaks are
/// 55 (synthetic) to 80 (sha256's gadgets) bytes per constraint, the finished recording a
/// fraction of that.
const RECORDING_BYTES_PER_CONSTRAINT: u64 = 112;

/// Memory to record a circuit of `shape` (see [`RECORDING_BYTES_PER_CONSTRAINT`]).
fn recording_bytes(shape: &Shape) -> u64 {
    shape.domain.saturating_mul(RECORDING_BYTES_PER_CONSTRAINT)
}

/// Refuses to record a circuit whose recording would not fit in memory (as setup and prove
/// refuse work larger than the host).
fn check_recording_memory(spec: &CircuitSpec, shape: &Shape) -> Result<()> {
    limits::check_memory(
        &format!("recording the constraint system of {}", spec.description()),
        recording_bytes(shape),
    )
}

/// `bellows pce --help`.
pub const PCE_ABOUT: &str = "Manage pre-compiled constraint systems (PCE). A recording is a \
circuit's R1CS (A, B, C as compressed sparse rows with interned coefficients, the densities the \
parameters need, a SHA-256 shape digest), made once per circuit shape. With it, a proof's \
synthesis runs only the circuit's witness code and then the three sparse products in parallel on \
every core; the results equal direct synthesis bit for bit.\n\n\
`bellows prove` uses the circuit's recording from the cache by default and records it there \
first when missing (about the cost of one direct synthesis); `--no-pce` synthesises directly. \
`bellows bench` records in memory; `bellows bench --compare-synthesis` times both.\n\n\
The cache is a folder of `<circuit-id>.pce` files (`--pce-dir`, else $BELLOWS_PCE_DIR, else \
$XDG_CACHE_HOME/bellows/pce, else ~/.cache/bellows/pce), written atomically and read with \
checked reads on load (never memory-mapped). Every entry carries an HMAC tag under the key kept in \
the folder (`.key`), and every load checks it and every byte (header checksum, shape digest, \
section structure, sampled rows against the circuit); a truncated, corrupted, edited, \
other-version or other-circuit file is refused with the reason.\n\n\
Examples:\n  bellows pce build --circuit synthetic --log-size 20 --bits-pct 90\n  \
bellows pce info --circuit sha256 --bytes 64\n  bellows pce info --file ./synthetic-k20-b90.pce\n  \
bellows pce list";

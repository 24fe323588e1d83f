//! The client side of `bellows serve`: `prove --daemon`, `submit`, `status`, `await`, `cancel`
//! and `bench --daemon` / `bench --concurrency` (docs/serve.md).

use std::{
    path::{Path, PathBuf},
    time::Instant,
};

use bellows_serve::{
    client::{self, rpc_error, Client},
    config::format_bytes,
    job::decode_inputs,
    proto::{self, submit_request::Kind},
    tls::ClientTls,
};
use blstrs::Scalar;
use clap::Args;
use rand_core::RngCore;

use crate::cli::ProveArgs;
use crate::common::{circuit_plan, fmt_secs, progress, warn};
use crate::error::{CliError, Result};
use crate::output::{self, Out};
use crate::{errln, outln};

/// `bellows submit --help`.
pub const SUBMIT_ABOUT: &str = "Submit a proving job to a `bellows serve` daemon and print its \
job id, alone, on the last line of stdout. Takes the arguments of `bellows prove` (the circuit, \
--params as a path on the daemon's host, --count N partitions, --seed, --out, --inputs-out, \
--force) plus --priority: the daemon journals the job before answering, so it survives a crash \
of the daemon. The outputs are checked now and written later by `bellows await JOB`.\n\n\
Examples:\n  JOB=$(bellows submit --params s14.params --circuit synthetic --log-size 14 --count 4 \
--out s14.proof --inputs-out s14.json | tail -n1)\n  bellows await $JOB\n  \
bellows submit --daemon 10.0.0.5:7700 --token-file tok --priority 10 --params /p/x.params \
--circuit synthetic -k 22 --out x.proof --inputs-out x.json";

/// `bellows status --help`.
pub const STATUS_ABOUT: &str = "Show a daemon's state: uptime, partitions queued and running, \
retries, each device (backend, workers, busy fraction since start, partitions proved, errors), \
the memory budget (reserved now and at peak) and resident parameters, and the most recent jobs \
with their progress; on a fleet node (a shared PostgreSQL store), every node of the fleet with \
the partitions it holds and when it was last heard of, and the jobs of the whole fleet. --json \
prints the same as one JSON object.\n\n\
Examples:\n  bellows status\n  bellows status --daemon 127.0.0.1:7700 --json";

/// `bellows await --help`.
pub const AWAIT_ABOUT: &str = "Wait for a daemon's job, with a progress bar on a terminal, and \
write its proofs and public inputs to the files the submitting `bellows submit` named (--out and \
--inputs-out here override them; without an inputs file the inputs are printed on stdout). A \
failed or cancelled job is an error (exit 1) with the daemon's reason. Results stay on the \
daemon for an hour after they are first fetched (fetched_ttl_s), so `await` can be repeated.\n\n\
Examples:\n  bellows await 17\n  bellows await 17 --out elsewhere.proof --inputs-out elsewhere.json \
--force";

/// `bellows cancel --help`.
pub const CANCEL_ABOUT: &str = "Cancel a daemon's queued or running job: its queued partitions \
are dropped and the memory of those already synthesised is freed at once. Prints the job's state \
afterwards (`cancelled`, or `done`/`failed` when it had already finished).\n\n\
Example:\n  bellows cancel 17";

/// Where the daemon is and how to authenticate.
#[derive(Debug, Args, Clone, Default)]
pub struct DaemonArgs {
    /// Daemon address HOST:PORT (`prove`: prove there instead of in this process; other commands:
    /// [default: BELLOWS_DAEMON, else 127.0.0.1:7700]).
    #[arg(long, value_name = "ADDR")]
    pub daemon: Option<String>,
    /// File holding the daemon's token [default: BELLOWS_TOKEN].
    #[arg(long = "token-file", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// TLS to the daemon.
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Job priority on the daemon: higher runs first, overtaking queued partitions of lower.
    #[arg(
        long,
        value_name = "P",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub priority: i32,
}

/// A client's TLS options (every command that talks to a daemon has them).
#[derive(Debug, Args, Clone, Default)]
pub struct TlsArgs {
    /// Connect over TLS, trusting the daemon's certificate if this CA (PEM) signed it
    /// [default: BELLOWS_TLS_CA; none: plain text].
    #[arg(long = "tls-ca", value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Mutual TLS: this client's certificate (PEM), signed by the daemon's client CA
    /// [default: BELLOWS_TLS_CERT].
    #[arg(long = "tls-cert", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// Mutual TLS: this client's private key (PEM) [default: BELLOWS_TLS_KEY].
    #[arg(long = "tls-key", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// The name the daemon's certificate must carry [default: the host of the address].
    #[arg(long = "tls-domain", value_name = "NAME")]
    pub tls_domain: Option<String>,
}

/// How a client authenticates to a daemon: a token, TLS, or both.
#[derive(Debug, Clone, Default)]
pub(crate) struct Creds {
    pub(crate) token: Option<String>,
    pub(crate) tls: Option<ClientTls>,
}

impl Creds {
    /// The token (`--token-file`, else `BELLOWS_TOKEN`) and TLS settings (flags, else the
    /// `BELLOWS_TLS_*` variables).
    pub(crate) fn from_args(token_file: Option<&Path>, t: &TlsArgs) -> Result<Self> {
        Ok(Self {
            token: client::token(token_file)?,
            tls: ClientTls::resolve(
                t.tls_ca.as_deref(),
                t.tls_cert.as_deref(),
                t.tls_key.as_deref(),
                t.tls_domain.as_deref(),
            )?,
        })
    }
}

/// The daemon to talk to (`--daemon`, else the default) and how to authenticate.
fn target(d: &DaemonArgs) -> Result<(String, Creds)> {
    let addr = d.daemon.clone().unwrap_or_else(client::default_addr);
    Ok((addr, Creds::from_args(d.token_file.as_deref(), &d.tls)?))
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Daemon(format!("starting the async runtime: {e}")))
}

pub(crate) async fn connect(addr: &str, creds: Creds) -> Result<Client> {
    Ok(client::connect_with(addr, creds.token, creds.tls.as_ref()).await?)
}

pub(crate) fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// The request of a `prove`/`submit` command line.
fn request(a: &ProveArgs) -> Result<proto::SubmitRequest> {
    let (spec, _) = circuit_plan(&a.circuit)?;
    if a.pipeline || a.batch_size.is_some() || a.memory_budget.is_some() {
        warn("--pipeline, --batch-size and --memory-budget do not apply to a daemon (it runs its own pipeline)");
    }
    if a.backend.backend != "cpu" || !a.backend.backend_opt.is_empty() || a.backend.devices != "all"
    {
        warn("the daemon proves on the devices it was started with: --backend, --backend-opt and --devices are ignored");
    }
    let _ = spec;
    Ok(proto::SubmitRequest {
        kind: Some(Kind::Builtin(proto::BuiltinCircuit {
            name: a.circuit.circuit.clone(),
            log_size: a.circuit.log_size,
            bits_pct: a.circuit.bits_pct.map(u32::from),
            bytes: a.circuit.bytes.map(|b| b as u64),
        })),
        params_path: absolute(&a.params),
        params_digest: Vec::new(),
        partitions: a.count,
        witness_seed: a
            .seed
            .unwrap_or_else(|| bellows_core::rng::ProofRng::os().next_u64()),
        seed: a.seed,
        priority: a.daemon.priority,
        skip_subgroup_checks: a.skip_subgroup_checks,
        outputs: Some(proto::ClientOutputs {
            proof_out: absolute(&a.out),
            inputs_out: a.inputs_out.as_deref().map(absolute).unwrap_or_default(),
            force: a.force,
        }),
    })
}

/// Checks the outputs of `a` (before any work), as a local `prove` does.
fn check_outputs(proof_out: &Path, inputs_out: Option<&Path>, force: bool) -> Result<()> {
    let mut outs = vec![Out {
        opt: "--out",
        path: proof_out,
        what: "proof file",
    }];
    if let Some(p) = inputs_out {
        outs.push(Out {
            opt: "--inputs-out",
            path: p,
            what: "public inputs file",
        });
    }
    output::prepare(&[], &outs, force).map(|_| ())
}

/// Follows a stream of job events to the final one, drawing progress; errors for a job that
/// did not finish done.
async fn follow(
    mut stream: bellows_serve::tonic::Streaming<proto::JobEvent>,
    what: &str,
) -> Result<proto::JobEvent> {
    let mut pb: Option<indicatif::ProgressBar> = None;
    loop {
        let ev = stream
            .message()
            .await
            .map_err(rpc_error)?
            .ok_or_else(|| CliError::Daemon("the daemon closed the stream early".into()))?;
        let state = proto::JobState::try_from(ev.state).unwrap_or(proto::JobState::Unspecified);
        let bar = pb.get_or_insert_with(|| progress(u64::from(ev.partitions_total), what));
        bar.set_position(u64::from(ev.partitions_done));
        bar.set_message(format!("job {}", ev.job_id));
        match state {
            proto::JobState::Done => {
                bar.finish_and_clear();
                return Ok(ev);
            }
            proto::JobState::Failed | proto::JobState::Cancelled => {
                bar.abandon();
                return Err(CliError::Daemon(format!(
                    "job {} {}: {}",
                    ev.job_id,
                    if state == proto::JobState::Failed {
                        "failed"
                    } else {
                        "was cancelled"
                    },
                    ev.error
                )));
            }
            _ => {}
        }
    }
}

/// The proofs and public inputs of a done job's final event.
fn results(ev: &proto::JobEvent) -> Result<(Vec<u8>, Vec<Vec<Scalar>>)> {
    let mut proofs = Vec::with_capacity(ev.results.len() * 192);
    let mut inputs = Vec::with_capacity(ev.results.len());
    for r in &ev.results {
        if r.proof.len() != 192 {
            return Err(CliError::Daemon(format!(
                "the daemon sent a proof of {} bytes",
                r.proof.len()
            )));
        }
        proofs.extend_from_slice(&r.proof);
        inputs.push(decode_inputs(&r.public_inputs.concat())?);
    }
    if ev.results.len() as u32 != ev.partitions_total {
        return Err(CliError::Daemon(format!(
            "the daemon sent {} proofs for {} partitions",
            ev.results.len(),
            ev.partitions_total
        )));
    }
    Ok((proofs, inputs))
}

/// Writes a done job's files (as a local `prove` writes them).
fn write(
    ev: &proto::JobEvent,
    proof_out: &Path,
    inputs_out: Option<&Path>,
    force: bool,
) -> Result<()> {
    let (proofs, inputs) = results(ev)?;
    let json = crate::cmd::prove::inputs_json(&inputs);
    let mut outs = vec![Out {
        opt: "--out",
        path: proof_out,
        what: "proof file",
    }];
    if let Some(p) = inputs_out {
        outs.push(Out {
            opt: "--inputs-out",
            path: p,
            what: "public inputs file",
        });
    }
    let mut files = output::prepare(&[], &outs, force)?.into_iter();
    files.next().expect("--out").commit_bytes(&proofs)?;
    match (files.next(), inputs_out) {
        (Some(f), Some(p)) => {
            f.commit_bytes(format!("{json}\n").as_bytes())?;
            errln!("wrote {}", p.display());
        }
        _ => outln!("{json}"),
    }
    errln!("wrote {} ({} bytes)", proof_out.display(), proofs.len());
    Ok(())
}

/// `bellows prove --daemon ADDR`.
pub fn prove(a: &ProveArgs) -> Result<()> {
    check_outputs(&a.out, a.inputs_out.as_deref(), a.force)?;
    let req = request(a)?;
    let (addr, creds) = target(&a.daemon)?;
    let t = Instant::now();
    let ev = runtime()?.block_on(async {
        let mut c = connect(&addr, creds).await?;
        let stream = c.prove(req).await.map_err(rpc_error)?.into_inner();
        follow(stream, "proving").await
    })?;
    errln!(
        "job {}: proved {} on {addr} in {} ({:.2} proofs/s)",
        ev.job_id,
        ev.partitions_total,
        fmt_secs(t.elapsed().as_secs_f64()),
        f64::from(ev.partitions_total) / t.elapsed().as_secs_f64()
    );
    write(&ev, &a.out, a.inputs_out.as_deref(), a.force)
}

/// Submits `req` to the daemon at `addr` and returns the job id it was given.
fn submit_request(addr: &str, creds: Creds, req: proto::SubmitRequest) -> Result<u64> {
    runtime()?.block_on(async {
        let mut c = connect(addr, creds).await?;
        Ok::<_, CliError>(c.submit(req).await.map_err(rpc_error)?.into_inner().job_id)
    })
}

/// `bellows submit`.
pub fn submit(a: &ProveArgs) -> Result<()> {
    check_outputs(&a.out, a.inputs_out.as_deref(), a.force)?;
    let req = request(a)?;
    let (addr, creds) = target(&a.daemon)?;
    let id = submit_request(&addr, creds, req)?;
    errln!(
        "job {id} accepted by {addr} ({} partition(s)); `bellows await {id}` writes {}",
        a.count,
        a.out.display()
    );
    outln!("{id}");
    Ok(())
}

/// A PoRep C2 job for a daemon (`bellows porep c2 --daemon`): the C1 file's bytes as they are,
/// the parameter folder on the daemon's host.
#[cfg(feature = "filecoin")]
pub(crate) struct PorepJob<'a> {
    pub(crate) c1: Vec<u8>,
    pub(crate) params_dir: &'a Path,
    pub(crate) seed: Option<u64>,
    pub(crate) curve_only: bool,
    pub(crate) out: &'a Path,
    pub(crate) force: bool,
    /// Only submit (print the job id; `bellows await JOB` writes the proof).
    pub(crate) submit_only: bool,
}

/// `bellows porep c2 --daemon ADDR`: submits the PoRep C2 job and (unless `submit_only`) waits
/// for it and writes the seal proof (the partition proofs concatenated, as a local `porep c2`
/// writes them).
#[cfg(feature = "filecoin")]
pub(crate) fn porep_c2(j: PorepJob<'_>, d: &DaemonArgs) -> Result<()> {
    let req = proto::SubmitRequest {
        kind: Some(Kind::PorepC2(proto::PorepC2 {
            c1: j.c1,
            params_dir: absolute(j.params_dir),
        })),
        seed: j.seed,
        priority: d.priority,
        skip_subgroup_checks: j.curve_only,
        outputs: Some(proto::ClientOutputs {
            proof_out: absolute(j.out),
            inputs_out: String::new(),
            force: j.force,
        }),
        ..Default::default()
    };
    let (addr, creds) = target(d)?;
    let t = Instant::now();
    if j.submit_only {
        let id = submit_request(&addr, creds, req)?;
        errln!(
            "PoRep C2 job {id} accepted by {addr}; `bellows await {id}` writes {}",
            j.out.display()
        );
        outln!("{id}");
        return Ok(());
    }
    let ev = runtime()?.block_on(async {
        let mut c = connect(&addr, creds).await?;
        let stream = c.prove(req).await.map_err(rpc_error)?.into_inner();
        follow(stream, "proving C2").await
    })?;
    let (proof, _) = results(&ev)?;
    let mut files = output::prepare(
        &[],
        &[Out {
            opt: "--out",
            path: j.out,
            what: "proof file",
        }],
        j.force,
    )?
    .into_iter();
    files.next().expect("--out").commit_bytes(&proof)?;
    errln!(
        "job {}: {} partition(s) proved and verified on {addr} in {}; wrote {} ({} bytes)",
        ev.job_id,
        ev.partitions_total,
        fmt_secs(t.elapsed().as_secs_f64()),
        j.out.display(),
        proof.len()
    );
    Ok(())
}

/// `bellows await`.
#[derive(Debug, Args)]
pub struct AwaitArgs {
    /// The job id (`bellows submit` printed it).
    pub job: u64,
    /// Proof file to write instead of the one given at submission.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Public inputs file to write instead of the one given at submission.
    #[arg(long = "inputs-out", value_name = "FILE.json")]
    pub inputs_out: Option<PathBuf>,
    /// Replace output files that already exist (also when the submission did not say so).
    #[arg(long, short = 'f')]
    pub force: bool,
    /// The daemon.
    #[command(flatten)]
    pub daemon: DaemonArgs,
}

/// `bellows await JOB`.
pub fn await_job(a: &AwaitArgs) -> Result<()> {
    let (addr, creds) = target(&a.daemon)?;
    let ev = runtime()?.block_on(async {
        let mut c = connect(&addr, creds).await?;
        let stream = c
            .r#await(proto::AwaitRequest {
                job_id: a.job,
                final_only: false,
            })
            .await
            .map_err(rpc_error)?
            .into_inner();
        follow(stream, "waiting").await
    })?;
    let given = ev.outputs.clone().unwrap_or_default();
    let proof_out = match (&a.out, given.proof_out.is_empty()) {
        (Some(p), _) => p.clone(),
        (None, false) => PathBuf::from(&given.proof_out),
        (None, true) => {
            return Err(CliError::Usage(format!(
                "job {} was submitted without an output file: give --out FILE",
                a.job
            )))
        }
    };
    let inputs_out = a
        .inputs_out
        .clone()
        .or_else(|| (!given.inputs_out.is_empty()).then(|| PathBuf::from(&given.inputs_out)));
    write(
        &ev,
        &proof_out,
        inputs_out.as_deref(),
        a.force || given.force,
    )
}

/// `bellows cancel`.
#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The job id.
    pub job: u64,
    /// The daemon.
    #[command(flatten)]
    pub daemon: DaemonArgs,
}

fn state_name(s: i32) -> &'static str {
    match proto::JobState::try_from(s).unwrap_or(proto::JobState::Unspecified) {
        proto::JobState::Queued => "queued",
        proto::JobState::Running => "running",
        proto::JobState::Done => "done",
        proto::JobState::Failed => "failed",
        proto::JobState::Cancelled => "cancelled",
        proto::JobState::Unspecified => "unknown",
    }
}

/// `bellows cancel JOB`.
pub fn cancel(a: &CancelArgs) -> Result<()> {
    let (addr, creds) = target(&a.daemon)?;
    let st = runtime()?.block_on(async {
        let mut c = connect(&addr, creds).await?;
        Ok::<_, CliError>(
            c.cancel(proto::CancelRequest { job_id: a.job })
                .await
                .map_err(rpc_error)?
                .into_inner()
                .state,
        )
    })?;
    outln!("job {}: {}", a.job, state_name(st));
    Ok(())
}

/// `bellows status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Most recent jobs to list.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub jobs: u32,
    /// The daemon.
    #[command(flatten)]
    pub daemon: DaemonArgs,
}

fn gb(b: u64) -> String {
    format!("{:.2} GB", b as f64 / 1e9)
}

fn status_json(s: &proto::StatusReply) -> serde_json::Value {
    let m = s.memory.unwrap_or_default();
    serde_json::json!({
        "uptime_s": s.uptime_s,
        "queued_partitions": s.queued_partitions,
        "running_partitions": s.running_partitions,
        "retries": s.retries,
        "memory": {
            "budget_bytes": m.budget_bytes,
            "reserved_bytes": m.reserved_bytes,
            "peak_reserved_bytes": m.peak_reserved_bytes,
            "params_budget_bytes": m.params_budget_bytes,
            "params_resident_bytes": m.params_resident_bytes,
        },
        "devices": s.devices.iter().map(|d| serde_json::json!({
            "index": d.index, "name": d.name, "backend": d.backend, "workers": d.workers,
            "busy_fraction": d.busy_fraction, "partitions": d.partitions, "errors": d.errors,
            "fallback": d.fallback, "memory_budget_bytes": d.memory_budget_bytes,
            "memory_reserved_bytes": d.memory_reserved_bytes,
            "memory_peak_bytes": d.memory_peak_bytes,
        })).collect::<Vec<_>>(),
        "params": s.params.iter().map(|p| serde_json::json!({
            "digest": bellows_serve::params::hex(&p.digest), "path": p.path, "bytes": p.bytes,
            "domain_log": p.domain_log, "devices": p.devices,
        })).collect::<Vec<_>>(),
        "node_id": s.node_id,
        "nodes": s.nodes.iter().map(|n| serde_json::json!({
            "node_id": n.node_id, "address": n.address, "serves": n.serves,
            "capacity": n.capacity, "held": n.held, "silent_s": n.silent_s,
        })).collect::<Vec<_>>(),
        "jobs": s.jobs.iter().map(|j| serde_json::json!({
            "id": j.job_id, "state": state_name(j.state), "priority": j.priority,
            "done": j.partitions_done, "total": j.partitions_total, "circuit": j.circuit,
            "error": j.error, "submitted_at": j.submitted_at,
        })).collect::<Vec<_>>(),
    })
}

/// `bellows status`.
pub fn status(a: &StatusArgs) -> Result<()> {
    let (addr, creds) = target(&a.daemon)?;
    let s = runtime()?.block_on(async {
        let mut c = connect(&addr, creds).await?;
        Ok::<_, CliError>(
            c.status(proto::StatusRequest { max_jobs: a.jobs })
                .await
                .map_err(rpc_error)?
                .into_inner(),
        )
    })?;
    if a.json {
        outln!("{}", status_json(&s));
        return Ok(());
    }
    let m = s.memory.unwrap_or_default();
    outln!(
        "daemon {addr}: up {}, {} partition(s) queued, {} running, {} retries",
        fmt_secs(s.uptime_s),
        s.queued_partitions,
        s.running_partitions,
        s.retries
    );
    outln!(
        "memory: {} reserved of {} (peak {}); parameters {} resident of {}",
        gb(m.reserved_bytes),
        gb(m.budget_bytes),
        gb(m.peak_reserved_bytes),
        gb(m.params_resident_bytes),
        gb(m.params_budget_bytes)
    );
    outln!("devices:");
    for d in &s.devices {
        outln!(
            "  {:>2} {:<14} {:<8} workers {}  busy {:>5.1}%  partitions {:>6}  errors {}  \
             memory {} of {} (peak {}){}",
            d.index,
            d.name,
            d.backend,
            d.workers,
            100.0 * d.busy_fraction,
            d.partitions,
            d.errors,
            format_bytes(d.memory_reserved_bytes),
            format_bytes(d.memory_budget_bytes.unwrap_or(u64::MAX)),
            format_bytes(d.memory_peak_bytes),
            if d.fallback { "  (fallback)" } else { "" }
        );
    }
    if !s.params.is_empty() {
        outln!("parameters:");
        for p in &s.params {
            outln!(
                "  {} 2^{} {} on devices {:?}  {}",
                &bellows_serve::params::hex(&p.digest)[..16],
                p.domain_log,
                if p.bytes > 0 {
                    gb(p.bytes)
                } else {
                    "not loaded".into()
                },
                p.devices,
                p.path
            );
        }
    }
    if !s.nodes.is_empty() {
        outln!("fleet (this node: {}):", s.node_id);
        for n in &s.nodes {
            outln!(
                "  {:<24} {:<21} holds {:>3}/{:<3} heard {:>6.1} s ago  {}",
                n.node_id,
                n.address,
                n.held,
                n.capacity,
                n.silent_s,
                n.serves
            );
        }
    }
    outln!("jobs:");
    outln!(
        "  {:>6} {:<9} {:>9} {:>5}  circuit",
        "id",
        "state",
        "done",
        "prio"
    );
    for j in &s.jobs {
        outln!(
            "  {:>6} {:<9} {:>4}/{:<4} {:>5}  {}{}",
            j.job_id,
            state_name(j.state),
            j.partitions_done,
            j.partitions_total,
            j.priority,
            j.circuit,
            if j.error.is_empty() {
                String::new()
            } else {
                format!("  ({})", j.error)
            }
        );
    }
    Ok(())
}

pub use super::serve_bench::{bench, BenchServeArgs};

//! The client side of `bellows serve`: `prove --daemon`, `submit`, `await`, `cancel` (and the
//! connection every daemon command shares; `status` is in `status.rs`, `bench --daemon` in
//! `serve_bench.rs`; docs/serve.md).
//!
//! Results are always written by the client, to paths checked here like a local `prove`'s
//! (an output that is the job's parameters file or another output is refused before anything
//! is sent), with this command's own `--force`: what a submitter asked for does not decide
//! what `await` may replace. A result is marked fetched on the daemon only once it is written.

use std::{
    future::Future,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use bellows_serve::{
    client::{self, rpc_error, Client},
    job::decode_inputs,
    proto::{self, submit_request::Kind},
    tls::ClientTls,
};
use blstrs::Scalar;
use clap::Args;
use rand_core::RngCore;

use crate::circuit::circuit_plan;
use crate::cmd::prove::ProveArgs;
use crate::error::{CliError, Result};
use crate::output::{self, Content, Outputs};
use crate::progress::progress;
use crate::stats::fmt_secs;
use crate::stdio::warn;
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

/// `bellows await --help`.
pub const AWAIT_ABOUT: &str = "Wait for a daemon's job, with a progress bar on a terminal, and \
write its proofs and public inputs to the files the submitting `bellows submit` named (--out and \
--inputs-out here override them; without an inputs file the inputs are printed on stdout). An \
existing file is replaced only with --force given here (what the submitter asked for does not \
count), and never when it is the job's parameters file. A failed or cancelled job is an error \
(exit 1) with the daemon's reason. Only your own jobs can be awaited (a daemon's admins: any). \
The results are marked fetched once written, and stay on the daemon for an hour more \
(fetched_ttl_s); an `await` that could not write them can be repeated.\n\n\
Examples:\n  bellows await 17\n  bellows await 17 --out elsewhere.proof --inputs-out elsewhere.json \
--force";

/// `bellows cancel --help`.
pub const CANCEL_ABOUT: &str = "Cancel a daemon's queued or running job (your own; a daemon's \
admins: any): its queued partitions are dropped and the memory of those already synthesised is \
freed at once. Prints the job's state afterwards (`cancelled`, or `done`/`failed` when it had \
already finished).\n\n\
Example:\n  bellows cancel 17";

/// How a client authenticates to a daemon (every command that talks to one has these).
#[derive(Debug, Args, Clone, Default)]
pub struct AuthArgs {
    /// File holding the daemon's token [default: BELLOWS_TOKEN].
    #[arg(long = "token-file", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
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

impl AuthArgs {
    /// The token (`--token-file`, else `BELLOWS_TOKEN`) and TLS settings (flags, else the
    /// `BELLOWS_TLS_*` variables).
    pub(crate) fn creds(&self) -> Result<Creds> {
        Ok(Creds {
            token: client::token(self.token_file.as_deref())?,
            tls: ClientTls::resolve(
                self.tls_ca.as_deref(),
                self.tls_cert.as_deref(),
                self.tls_key.as_deref(),
                self.tls_domain.as_deref(),
            )?,
        })
    }
}

/// Where the daemon is and how to authenticate.
#[derive(Debug, Args, Clone, Default)]
pub struct DaemonArgs {
    /// Daemon address HOST:PORT or unix:PATH (`prove`: prove there instead of in this process;
    /// other commands: [default: BELLOWS_DAEMON, else 127.0.0.1:7700]).
    #[arg(long, value_name = "ADDR")]
    pub daemon: Option<String>,
    /// Token and TLS.
    #[command(flatten)]
    pub auth: AuthArgs,
}

/// How a client authenticates to a daemon: a token, TLS, or both.
#[derive(Debug, Clone, Default)]
pub(crate) struct Creds {
    pub(crate) token: Option<String>,
    pub(crate) tls: Option<ClientTls>,
}

/// The daemon to talk to (`--daemon`, else the default) and how to authenticate.
pub(crate) fn target(d: &DaemonArgs) -> Result<(String, Creds)> {
    let addr = d.daemon.clone().unwrap_or_else(client::default_addr);
    Ok((addr, d.auth.creds()?))
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
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

pub(crate) fn state_name(s: i32) -> &'static str {
    match proto::JobState::try_from(s).unwrap_or(proto::JobState::Unspecified) {
        proto::JobState::Queued => "queued",
        proto::JobState::Running => "running",
        proto::JobState::Done => "done",
        proto::JobState::Failed => "failed",
        proto::JobState::Cancelled => "cancelled",
        proto::JobState::Unspecified => "unknown",
    }
}

/// The request of a `prove`/`submit` command line.
fn request(a: &ProveArgs) -> Result<proto::SubmitRequest> {
    circuit_plan(&a.circuit)?;
    if a.pipeline || a.batch_size.is_some() || a.memory_budget.is_some() {
        warn("--pipeline, --batch-size and --memory-budget do not apply to a daemon (it runs its own pipeline)");
    }
    if a.backend.backend != "cpu" || !a.backend.backend_opt.is_empty() || a.backend.devices != "all"
    {
        warn("the daemon proves on the devices it was started with: --backend, --backend-opt and --devices are ignored");
    }
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
        priority: a.priority,
        skip_subgroup_checks: a.skip_subgroup_checks,
        outputs: Some(proto::ClientOutputs {
            proof_out: absolute(&a.out),
            inputs_out: a.inputs_out.as_deref().map(absolute).unwrap_or_default(),
            force: a.force,
        }),
    })
}

/// The outputs of a job's proofs and inputs, checked (before any work) against the job's
/// parameters file (`params`, a path on the daemon's host: the same file when the daemon runs
/// here).
fn prepare_outputs(
    params: Option<&Path>,
    proof_out: &Path,
    inputs_out: Option<&Path>,
    force: bool,
) -> Result<Outputs> {
    let inputs: Vec<(&'static str, &Path)> = params.map(|p| ("--params", p)).into_iter().collect();
    output::prepare(
        &inputs,
        &output::proof_outputs(proof_out, inputs_out),
        force,
    )
}

/// Follows a stream of job events to the final one, drawing progress; errors for a job that
/// did not finish done.
async fn follow(
    mut stream: bellows_serve::tonic::Streaming<proto::JobEvent>,
    what: &str,
) -> Result<proto::JobEvent> {
    let mut pb: Option<indicatif::ProgressBar> = None;
    let mut last: Option<proto::JobEvent> = None;
    loop {
        let Some(ev) = stream.message().await.map_err(rpc_error)? else {
            return Err(CliError::Daemon(match last {
                Some(l) => format!(
                    "the daemon ended the stream of job {} while it was {} ({} of {} \
                     partitions): it may have stopped; `bellows await {}` follows it again",
                    l.job_id,
                    state_name(l.state),
                    l.partitions_done,
                    l.partitions_total,
                    l.job_id
                ),
                None => "the daemon ended the stream before any event".into(),
            }));
        };
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
            _ => last = Some(ev),
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

/// Writes a done job's files together (as a local `prove` writes them) into `outputs`
/// (the proof file, then the inputs file when there is one: else the inputs go to stdout).
fn write(
    ev: &proto::JobEvent,
    outputs: Outputs,
    proof_out: &Path,
    inputs_out: Option<&Path>,
) -> Result<()> {
    let (proofs, inputs) = results(ev)?;
    let json = crate::cmd::prove::inputs_json(&inputs);
    let line = format!("{json}\n");
    let mut contents: Vec<Content<'_>> = vec![output::bytes(&proofs)];
    if inputs_out.is_some() {
        contents.push(output::bytes(line.as_bytes()));
    }
    outputs.commit(contents)?;
    match inputs_out {
        Some(p) => errln!("wrote {}", p.display()),
        None => outln!("{json}"),
    }
    errln!("wrote {} ({} bytes)", proof_out.display(), proofs.len());
    Ok(())
}

/// Submits `req` and returns the job id the daemon gave it.
async fn submit_on(c: &mut Client, req: proto::SubmitRequest) -> Result<u64> {
    let reply = noticed(c.submit(req), SLOW_SUBMIT, || {
        errln!(
            "the daemon has not accepted the job yet: the first job naming a parameters file \
             the daemon has not seen waits for the file to be hashed (its SHA-256, and a \
             published file's blake2b beside it: up to about a minute for a 32 GiB PoRep's \
             47 GB), once per file: the daemon keeps the digests across restarts, and \
             `bellows serve --preload FILE` hashes it at start"
        )
    })
    .await;
    Ok(reply.map_err(rpc_error)?.into_inner().job_id)
}

/// How long a submission waits before the client says why it may wait longer.
const SLOW_SUBMIT: Duration = Duration::from_secs(5);

/// `fut`'s output; `notice` is called once if it takes longer than `after`, so that a long
/// wait is explained while it lasts.
async fn noticed<F: Future>(fut: F, after: Duration, notice: impl FnOnce()) -> F::Output {
    tokio::pin!(fut);
    tokio::select! {
        out = &mut fut => out,
        () = tokio::time::sleep(after) => {
            notice();
            fut.await
        }
    }
}

/// Follows job `id` to its final event, leaving it unfetched (the caller writes the results,
/// then calls [`fetched`]).
async fn await_on(c: &mut Client, id: u64, what: &str) -> Result<proto::JobEvent> {
    let stream = c
        .r#await(proto::AwaitRequest {
            job_id: id,
            final_only: false,
            keep_unfetched: true,
        })
        .await
        .map_err(rpc_error)?
        .into_inner();
    follow(stream, what).await
}

/// Tells the daemon the results of job `id` are written (their expiry starts); a failure only
/// warns: the results are written, and expire unfetched later.
async fn fetched(c: &mut Client, id: u64) {
    if let Err(s) = c.fetched(proto::FetchedRequest { job_id: id }).await {
        warn(&format!(
            "the results of job {id} are written, but the daemon did not take note of it: {}",
            rpc_error(s)
        ));
    }
}

/// `bellows prove --daemon ADDR`.
pub fn prove(a: &ProveArgs) -> Result<()> {
    let outputs = prepare_outputs(Some(&a.params), &a.out, a.inputs_out.as_deref(), a.force)?;
    let req = request(a)?;
    let (addr, creds) = target(&a.daemon)?;
    let t = Instant::now();
    let rt = runtime()?;
    let mut c = rt.block_on(connect(&addr, creds))?;
    let ev = rt.block_on(async {
        let id = submit_on(&mut c, req).await?;
        await_on(&mut c, id, "proving").await
    })?;
    errln!(
        "job {}: proved {} on {addr} in {} ({:.2} proofs/s)",
        ev.job_id,
        ev.partitions_total,
        fmt_secs(t.elapsed().as_secs_f64()),
        f64::from(ev.partitions_total) / t.elapsed().as_secs_f64()
    );
    write(&ev, outputs, &a.out, a.inputs_out.as_deref())?;
    rt.block_on(fetched(&mut c, ev.job_id));
    Ok(())
}

/// `bellows submit`.
pub fn submit(a: &ProveArgs) -> Result<()> {
    drop(prepare_outputs(
        Some(&a.params),
        &a.out,
        a.inputs_out.as_deref(),
        a.force,
    )?);
    let req = request(a)?;
    let (addr, creds) = target(&a.daemon)?;
    let id = runtime()?.block_on(async {
        let mut c = connect(&addr, creds).await?;
        submit_on(&mut c, req).await
    })?;
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
    /// The C1 file (an output may not be it).
    pub(crate) c1_path: &'a Path,
    pub(crate) params_dir: &'a Path,
    pub(crate) seed: Option<u64>,
    pub(crate) curve_only: bool,
    pub(crate) priority: i32,
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
    let out = output::prepare(
        &[("--c1", j.c1_path)],
        &output::proof_outputs(j.out, None),
        j.force,
    )?;
    let req = proto::SubmitRequest {
        kind: Some(Kind::PorepC2(proto::PorepC2 {
            c1: j.c1,
            params_dir: absolute(j.params_dir),
        })),
        seed: j.seed,
        priority: j.priority,
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
    let rt = runtime()?;
    let mut c = rt.block_on(connect(&addr, creds))?;
    let id = rt.block_on(submit_on(&mut c, req))?;
    if j.submit_only {
        errln!(
            "PoRep C2 job {id} accepted by {addr}; `bellows await {id}` writes {}",
            j.out.display()
        );
        outln!("{id}");
        return Ok(());
    }
    let ev = rt.block_on(await_on(&mut c, id, "proving C2"))?;
    let (proof, _) = results(&ev)?;
    out.commit(vec![output::bytes(&proof)])?;
    rt.block_on(fetched(&mut c, id));
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
    /// Replace output files that already exist (only this flag counts, not the submission's).
    #[arg(long, short = 'f')]
    pub force: bool,
    /// The daemon.
    #[command(flatten)]
    pub daemon: DaemonArgs,
}

/// `bellows await JOB`.
pub fn await_job(a: &AwaitArgs) -> Result<()> {
    let (addr, creds) = target(&a.daemon)?;
    let rt = runtime()?;
    let mut c = rt.block_on(connect(&addr, creds))?;
    let ev = rt.block_on(await_on(&mut c, a.job, "waiting"))?;
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
    let params = (!ev.params_path.is_empty()).then(|| PathBuf::from(&ev.params_path));
    let outputs = prepare_outputs(
        params.as_deref(),
        &proof_out,
        inputs_out.as_deref(),
        a.force,
    )?;
    write(&ev, outputs, &proof_out, inputs_out.as_deref())?;
    rt.block_on(fetched(&mut c, a.job));
    Ok(())
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

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn a_slow_call_is_explained_once_and_a_quick_one_not_at_all() {
        let rt = runtime().unwrap();
        let said = Cell::new(0);
        let slow = async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            7
        };
        let got = rt.block_on(noticed(slow, Duration::from_millis(20), || {
            said.set(said.get() + 1)
        }));
        assert_eq!((got, said.get()), (7, 1));
        let got = rt.block_on(noticed(async { 8 }, Duration::from_secs(5), || {
            said.set(said.get() + 1)
        }));
        assert_eq!((got, said.get()), (8, 1));
    }
}

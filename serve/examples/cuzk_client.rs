//! A command-line client of the cuzk API (`cuzk.v1.ProvingEngine`, docs/curio.md), built on the
//! stubs tonic generates from serve/proto/cuzk/v1/proving.proto — the calls Curio makes, for
//! benchmarks (bench/curio-api.sh) and for poking a daemon by hand where grpcurl is not at hand.
//!
//! ```text
//! cargo build --release -p bellows-serve --features filecoin --example cuzk_client
//! cuzk_client --addr unix:/run/bellows/cuzk.sock prove --kind porep --registered-proof 5 \
//!     --vanilla c1.json --miner 1000 --sector 1 --reps 3 --out sector.proof
//! cuzk_client --addr 127.0.0.1:9820 prove --request winning.json     # a request file (below)
//! cuzk_client --addr ADDR submit --kind porep ... --reps 4          # queue 4 jobs, print their ids
//! cuzk_client --addr ADDR await JOB...      |  cancel JOB  |  status  |  metrics
//! cuzk_client --addr ADDR preload porep-32g |  evict porep-32g
//! ```
//!
//! `--addr` (or `CUZK_ADDR`): `unix:PATH`, `unix:///PATH` (Curio's spelling), `HOST:PORT` or
//! `http://HOST:PORT`. No token is sent, as Curio sends none.
//!
//! A request: `--kind porep|snap|window|winning`, `--registered-proof N` (Filecoin's number),
//! `--vanilla FILE` (PoRep: the C1 output, sent as `vanilla_proof`; the other kinds: one vanilla
//! proof per file, repeatable, sent as `vanilla_proofs`), `--vanilla-dir DIR` (every file in it,
//! in name order), `--miner`, `--sector`, `--sector-size`, `--randomness HEX`, `--partition N`,
//! `--comm-r-old/--comm-r-new/--comm-d-new HEX`, `--priority low|normal|high|critical`. Or
//! `--request FILE`, a JSON object with the same names (`kind`, `registered_proof`, `vanilla`: a
//! list of paths relative to the file, `miner_id`, `sector_number`, `sector_size`, `randomness`,
//! `partition_index`, `comm_r_old`, `comm_r_new`, `comm_d_new`, `priority`); flags given beside
//! it override it.
//!
//! `prove` and `submit` send `--reps N` requests, each under its own request id
//! (`--request-id BASE` then `BASE-0`, `BASE-1`, ...; `--same-id` sends BASE every time, which
//! the daemon answers with the one job). Every call prints one JSON line: the RPC's wall time
//! seen here and, for a proof, the daemon's timings, the status, the proof's length and SHA-256.
//! `--out FILE` writes the last proof's bytes. The exit status is 1 when a proof did not
//! complete, 2 for a usage error.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bellows_serve::proto::cuzk::v1 as pb;
use pb::proving_engine_client::ProvingEngineClient;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tonic::transport::{Channel, Endpoint};

/// Largest message either way: what Curio's client allows (a 64 GiB C1 output is about 100 MB).
const MAX_MESSAGE: usize = 256 << 20;

type Fallible<T> = Result<T, String>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cuzk_client: starting the async runtime: {e}");
            std::process::exit(1);
        }
    };
    match rt.block_on(run(args)) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(Usage(e)) => {
            eprintln!("cuzk_client: {e}\n(usage: see the top of serve/examples/cuzk_client.rs)");
            std::process::exit(2);
        }
    }
}

/// An error of the command line or of the call: printed, then exit 2 (usage) or 1.
struct Usage(String);

impl From<String> for Usage {
    fn from(s: String) -> Self {
        Usage(s)
    }
}

/// Runs the command; `Ok(false)` when a proof or call failed (already reported).
async fn run(args: Vec<String>) -> Result<bool, Usage> {
    let mut a = Args::new(args);
    let addr = a
        .value("--addr")?
        .or_else(|| std::env::var("CUZK_ADDR").ok())
        .ok_or_else(|| "give --addr ADDR (or CUZK_ADDR)".to_string())?;
    let cmd = a.positional().ok_or_else(|| {
        "give a command: prove, submit, await, cancel, status, metrics, preload, evict".to_string()
    })?;
    let mut c = match connect(&addr).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cuzk_client: {e}");
            return Ok(false);
        }
    };
    let ok =
        match cmd.as_str() {
            "prove" | "submit" => {
                let plan = Plan::from_args(&mut a)?;
                a.done()?;
                send(&mut c, &plan, cmd == "prove").await
            }
            "await" => {
                let timeout_ms = a.number("--timeout-ms")?.unwrap_or(0);
                let jobs = a.rest();
                a.done()?;
                if jobs.is_empty() {
                    return Err(Usage("await needs one job id or more".into()));
                }
                let mut ok = true;
                for job_id in jobs {
                    let t = Instant::now();
                    let r = c
                        .await_proof(pb::AwaitProofRequest { job_id, timeout_ms })
                        .await;
                    ok &= report("await", "", t, r.map(|r| r.into_inner()), None);
                }
                ok
            }
            "cancel" => {
                let job_id = a
                    .positional()
                    .ok_or_else(|| "cancel needs a job id".to_string())?;
                a.done()?;
                let t = Instant::now();
                let r = c.cancel_proof(pb::CancelProofRequest { job_id }).await;
                simple(
                    "cancel",
                    t,
                    r.map(|r| json!({"was_running": r.into_inner().was_running})),
                )
            }
            "status" => {
                a.done()?;
                let t = Instant::now();
                let r = c.get_status(pb::GetStatusRequest {}).await;
                simple("status", t, r.map(|r| status_json(&r.into_inner())))
            }
            "metrics" => {
                a.done()?;
                match c.get_metrics(pb::GetMetricsRequest {}).await {
                    Ok(r) => {
                        print!("{}", r.into_inner().prometheus_text);
                        true
                    }
                    Err(s) => simple("metrics", Instant::now(), Err(s)),
                }
            }
            "preload" | "evict" => {
                let circuit_id = a.positional().ok_or_else(|| {
                    "preload and evict need a circuit id (porep-32g, ...)".to_string()
                })?;
                a.done()?;
                let t = Instant::now();
                if cmd == "preload" {
                    let r = c.preload_srs(pb::PreloadSrsRequest { circuit_id }).await;
                    simple("preload", t, r.map(|r| {
                    let r = r.into_inner();
                    json!({"already_loaded": r.already_loaded, "load_time_ms": r.load_time_ms})
                }))
                } else {
                    let r = c.evict_srs(pb::EvictSrsRequest { circuit_id }).await;
                    simple(
                        "evict",
                        t,
                        r.map(|r| {
                            let r = r.into_inner();
                            json!({"was_loaded": r.was_loaded, "freed_bytes": r.freed_bytes})
                        }),
                    )
                }
            }
            other => return Err(Usage(format!("unknown command {other:?}"))),
        };
    Ok(ok)
}

/// A channel to `addr` with Curio's message limits.
async fn connect(addr: &str) -> Fallible<ProvingEngineClient<Channel>> {
    let url = if let Some(p) = addr.strip_prefix("unix://") {
        format!("unix:{p}")
    } else if addr.starts_with("unix:") || addr.contains("://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    };
    let channel = Endpoint::from_shared(url)
        .map_err(|e| format!("address {addr:?}: {e}"))?
        .connect_timeout(Duration::from_secs(10))
        .connect()
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    Ok(ProvingEngineClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE))
}

/// What `prove` and `submit` send: one request, `reps` times.
struct Plan {
    req: pb::SubmitProofRequest,
    base_id: String,
    same_id: bool,
    reps: usize,
    out: Option<PathBuf>,
}

impl Plan {
    fn from_args(a: &mut Args) -> Fallible<Self> {
        let mut req = match a.value("--request")? {
            Some(f) => request_file(Path::new(&f))?,
            None => pb::SubmitProofRequest::default(),
        };
        if let Some(k) = a.value("--kind")? {
            req.proof_kind = kind(&k)? as i32;
        }
        if let Some(n) = a.number("--registered-proof")? {
            req.registered_proof = n;
        }
        if let Some(n) = a.number("--sector-size")? {
            req.sector_size = n;
        }
        if let Some(n) = a.number("--miner")? {
            req.miner_id = n;
        }
        if let Some(n) = a.number("--sector")? {
            req.sector_number = n;
        }
        if let Some(n) = a.number("--partition")? {
            req.partition_index =
                u32::try_from(n).map_err(|_| "--partition is too large".to_string())?;
        }
        if let Some(p) = a.value("--priority")? {
            req.priority = priority(&p)? as i32;
        }
        for (flag, field) in [
            ("--randomness", &mut req.randomness),
            ("--comm-r-old", &mut req.comm_r_old),
            ("--comm-r-new", &mut req.comm_r_new),
            ("--comm-d-new", &mut req.comm_d_new),
        ] {
            if let Some(h) = a.value(flag)? {
                *field = hex(&h).map_err(|e| format!("{flag}: {e}"))?;
            }
        }
        let mut files: Vec<PathBuf> = a
            .values("--vanilla")?
            .into_iter()
            .map(PathBuf::from)
            .collect();
        if let Some(d) = a.value("--vanilla-dir")? {
            files.extend(dir_files(Path::new(&d))?);
        }
        if !files.is_empty() {
            set_vanilla(&mut req, &files)?;
        }
        if req.proof_kind == 0 {
            return Err("give --kind porep|snap|window|winning (or a --request file)".into());
        }
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        Ok(Plan {
            req,
            base_id: a
                .value("--request-id")?
                .unwrap_or_else(|| format!("cuzk-client-{}-{stamp}", std::process::id())),
            same_id: a.flag("--same-id"),
            reps: a.number("--reps")?.unwrap_or(1).max(1) as usize,
            out: a.value("--out")?.map(PathBuf::from),
        })
    }
}

/// Sends `plan`: Prove (and waits) or SubmitProof, rep after rep; true when every rep succeeded.
async fn send(c: &mut ProvingEngineClient<Channel>, plan: &Plan, prove: bool) -> bool {
    let mut ok = true;
    let mut last = None;
    for rep in 0..plan.reps {
        let mut req = plan.req.clone();
        req.request_id = if plan.same_id {
            plan.base_id.clone()
        } else {
            format!("{}-{rep}", plan.base_id)
        };
        let t = Instant::now();
        if prove {
            let r = c
                .prove(pb::ProveRequest {
                    submit: Some(req.clone()),
                })
                .await;
            let r = r.and_then(|r| {
                r.into_inner()
                    .result
                    .ok_or_else(|| tonic::Status::internal("Prove answered without a result"))
            });
            if let Ok(res) = &r {
                if res.status == pb::await_proof_response::Status::Completed as i32 {
                    last = Some(res.proof.clone());
                }
            }
            ok &= report("prove", &req.request_id, t, r, Some((rep, &req)));
        } else {
            let r = c.submit_proof(req.clone()).await;
            ok &= simple(
                "submit",
                t,
                r.map(|r| {
                    let r = r.into_inner();
                    json!({"request_id": req.request_id, "rep": rep, "job_id": r.job_id,
                       "queue_position": r.queue_position, "assigned_gpu": r.assigned_gpu})
                }),
            );
        }
    }
    if let (Some(path), Some(proof)) = (&plan.out, last) {
        if let Err(e) = std::fs::write(path, proof) {
            eprintln!("cuzk_client: writing {}: {e}", path.display());
            ok = false;
        }
    }
    ok
}

/// Prints one JSON line for a proof's outcome; true when it completed.
fn report(
    rpc: &str,
    request_id: &str,
    t: Instant,
    r: Result<pb::AwaitProofResponse, tonic::Status>,
    sent: Option<(usize, &pb::SubmitProofRequest)>,
) -> bool {
    let wall_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut line = json!({"rpc": rpc, "wall_ms": round(wall_ms)});
    if !request_id.is_empty() {
        line["request_id"] = json!(request_id);
    }
    if let Some((rep, req)) = sent {
        line["rep"] = json!(rep);
        line["kind"] = json!(pb::ProofKind::try_from(req.proof_kind).map_or_else(
            |_| req.proof_kind.to_string(),
            |k| k.as_str_name().to_string()
        ));
        line["registered_proof"] = json!(req.registered_proof);
    }
    let ok = match r {
        Ok(res) => {
            let status = pb::await_proof_response::Status::try_from(res.status)
                .map_or_else(|_| res.status.to_string(), |s| s.as_str_name().to_string());
            let fields = json!({
                "job_id": res.job_id, "status": status,
                "queue_wait_ms": res.queue_wait_ms, "srs_load_ms": res.srs_load_ms,
                "synthesis_ms": res.synthesis_ms, "gpu_compute_ms": res.gpu_compute_ms,
                "total_ms": res.total_ms, "proof_bytes": res.proof.len(),
                "error": res.error_message,
            });
            merge(&mut line, fields);
            if !res.proof.is_empty() {
                line["proof_sha256"] = json!(to_hex(&Sha256::digest(&res.proof)));
            }
            res.status == pb::await_proof_response::Status::Completed as i32
        }
        Err(s) => {
            merge(&mut line, rpc_error(&s));
            false
        }
    };
    println!("{line}");
    ok
}

/// Prints one JSON line for a call that returns `fields`; true when it succeeded.
fn simple(rpc: &str, t: Instant, r: Result<Value, tonic::Status>) -> bool {
    let mut line = json!({"rpc": rpc, "wall_ms": round(t.elapsed().as_secs_f64() * 1e3)});
    let ok = r.is_ok();
    merge(&mut line, r.unwrap_or_else(|s| rpc_error(&s)));
    println!("{line}");
    ok
}

fn rpc_error(s: &tonic::Status) -> Value {
    json!({"status": "RPC_ERROR", "code": format!("{:?}", s.code()), "error": s.message()})
}

fn merge(line: &mut Value, fields: Value) {
    if let (Some(l), Value::Object(f)) = (line.as_object_mut(), fields) {
        l.extend(f);
    }
}

fn round(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}

fn status_json(s: &pb::GetStatusResponse) -> Value {
    let tier = |t: i32| {
        pb::srs_status::Tier::try_from(t).map_or_else(|_| t.to_string(), |t| t.as_str_name().into())
    };
    json!({
        "queues": s.queues.iter().map(|q| json!({"proof_kind": q.proof_kind,
            "pending": q.pending, "in_progress": q.in_progress})).collect::<Vec<_>>(),
        "gpus": s.gpus.iter().map(|g| json!({"ordinal": g.ordinal, "name": g.name,
            "vram_total_bytes": g.vram_total_bytes, "vram_free_bytes": g.vram_free_bytes,
            "current_job_id": g.current_job_id, "current_proof_kind": g.current_proof_kind}))
            .collect::<Vec<_>>(),
        "loaded_srs": s.loaded_srs.iter().map(|x| json!({"circuit_id": x.circuit_id,
            "tier": tier(x.tier), "size_bytes": x.size_bytes, "ref_count": x.ref_count}))
            .collect::<Vec<_>>(),
        "total_proofs_completed": s.total_proofs_completed,
        "total_proofs_failed": s.total_proofs_failed,
        "uptime_seconds": s.uptime_seconds,
        "pinned_memory_bytes": s.pinned_memory_bytes,
        "pinned_memory_limit_bytes": s.pinned_memory_limit_bytes,
    })
}

/// A request file (see the module docs); its `vanilla` paths are relative to its folder.
fn request_file(path: &Path) -> Fallible<pb::SubmitProofRequest> {
    let text = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let v: Value = serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = |k: &str, what: &str| format!("{}: {k} must be {what}", path.display());
    let mut req = pb::SubmitProofRequest::default();
    let obj = v
        .as_object()
        .ok_or_else(|| bad("the file", "a JSON object"))?;
    for (k, x) in obj {
        let num = || x.as_u64().ok_or_else(|| bad(k, "a non-negative integer"));
        let text = || x.as_str().ok_or_else(|| bad(k, "a string"));
        match k.as_str() {
            "kind" => req.proof_kind = kind(text()?)? as i32,
            "priority" => req.priority = priority(text()?)? as i32,
            "registered_proof" => req.registered_proof = num()?,
            "sector_size" => req.sector_size = num()?,
            "miner_id" => req.miner_id = num()?,
            "sector_number" => req.sector_number = num()?,
            "partition_index" => {
                req.partition_index = u32::try_from(num()?).map_err(|_| bad(k, "below 2^32"))?
            }
            "randomness" => req.randomness = hex(text()?).map_err(|e| bad(k, &e))?,
            "comm_r_old" => req.comm_r_old = hex(text()?).map_err(|e| bad(k, &e))?,
            "comm_r_new" => req.comm_r_new = hex(text()?).map_err(|e| bad(k, &e))?,
            "comm_d_new" => req.comm_d_new = hex(text()?).map_err(|e| bad(k, &e))?,
            "vanilla" => {
                let list = x.as_array().ok_or_else(|| bad(k, "a list of file paths"))?;
                let dir = path.parent().unwrap_or(Path::new("."));
                let files = list
                    .iter()
                    .map(|p| {
                        p.as_str()
                            .map(|p| dir.join(p))
                            .ok_or_else(|| bad(k, "a list of file paths"))
                    })
                    .collect::<Fallible<Vec<_>>>()?;
                set_vanilla(&mut req, &files)?;
            }
            _ => return Err(format!("{}: unknown key {k:?}", path.display())),
        }
    }
    Ok(req)
}

/// Reads `files` into the request: PoRep's one C1 output, or the other kinds' vanilla proofs.
fn set_vanilla(req: &mut pb::SubmitProofRequest, files: &[PathBuf]) -> Fallible<()> {
    let read = |p: &PathBuf| std::fs::read(p).map_err(|e| format!("reading {}: {e}", p.display()));
    if req.proof_kind == pb::ProofKind::PorepSealCommit as i32 {
        let [one] = files else {
            return Err(format!(
                "a PoRep request takes one C1 file, not {}",
                files.len()
            ));
        };
        req.vanilla_proof = read(one)?;
    } else {
        req.vanilla_proofs = files.iter().map(read).collect::<Fallible<_>>()?;
    }
    Ok(())
}

/// The regular files in `dir`, in name order.
fn dir_files(dir: &Path) -> Fallible<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    Ok(v)
}

fn kind(s: &str) -> Fallible<pb::ProofKind> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "porep" | "porep_seal_commit" => pb::ProofKind::PorepSealCommit,
        "snap" | "snap_deals_update" => pb::ProofKind::SnapDealsUpdate,
        "window" | "window_post_partition" => pb::ProofKind::WindowPostPartition,
        "winning" | "winning_post" => pb::ProofKind::WinningPost,
        _ => {
            return Err(format!(
                "unknown kind {s:?}: porep, snap, window or winning"
            ))
        }
    })
}

fn priority(s: &str) -> Fallible<pb::Priority> {
    pb::Priority::from_str_name(&s.to_ascii_uppercase())
        .filter(|p| *p != pb::Priority::Unspecified)
        .ok_or_else(|| format!("unknown priority {s:?}: low, normal, high or critical"))
}

fn hex(s: &str) -> Fallible<Vec<u8>> {
    let s = s.trim().trim_start_matches("0x");
    if !s.is_ascii() || !s.len().is_multiple_of(2) {
        return Err(format!("{s:?} is not an even number of hex digits"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|_| format!("{s:?} is not hex")))
        .collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The command line, taken apart flag by flag; what is left over is an error.
struct Args(Vec<String>);

impl Args {
    fn new(v: Vec<String>) -> Self {
        Args(v)
    }

    /// Every value of `--flag V` or `--flag=V`, removed.
    fn values(&mut self, flag: &str) -> Fallible<Vec<String>> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            if self.0[i] == flag {
                if i + 1 >= self.0.len() {
                    return Err(format!("{flag} needs a value"));
                }
                out.push(self.0.remove(i + 1));
                self.0.remove(i);
            } else if let Some(v) = self.0[i].strip_prefix(&format!("{flag}=")) {
                out.push(v.to_string());
                self.0.remove(i);
            } else {
                i += 1;
            }
        }
        Ok(out)
    }

    /// The value of `--flag`, given at most once.
    fn value(&mut self, flag: &str) -> Fallible<Option<String>> {
        let mut v = self.values(flag)?;
        if v.len() > 1 {
            return Err(format!("{flag} is given {} times", v.len()));
        }
        Ok(v.pop())
    }

    fn number(&mut self, flag: &str) -> Fallible<Option<u64>> {
        self.value(flag)?
            .map(|v| {
                v.parse()
                    .map_err(|_| format!("{flag} {v:?} is not a number"))
            })
            .transpose()
    }

    fn flag(&mut self, flag: &str) -> bool {
        let n = self.0.len();
        self.0.retain(|a| a != flag);
        self.0.len() != n
    }

    /// The first argument left, removed, when it is not a flag (the command comes first).
    fn positional(&mut self) -> Option<String> {
        if self.0.first()?.starts_with("--") {
            return None;
        }
        Some(self.0.remove(0))
    }

    /// Every argument left that is not a flag, removed.
    fn rest(&mut self) -> Vec<String> {
        let (flags, rest) = self.0.drain(..).partition(|a| a.starts_with("--"));
        self.0 = flags;
        rest
    }

    /// An error naming anything not taken.
    fn done(&self) -> Fallible<()> {
        match self.0.first() {
            None => Ok(()),
            Some(a) => Err(format!("unexpected argument {a:?}")),
        }
    }
}

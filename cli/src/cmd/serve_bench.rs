//! `bellows bench --daemon ADDR` and `bellows bench --concurrency J`: throughput through the
//! daemon's scheduler (a running daemon, or one started in this process on a loopback port).

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use bellows_serve::{
    client::rpc_error,
    proto::{self, submit_request::Kind},
};
use clap::Args;

use super::client::{absolute, connect, AuthArgs, Creds};
use crate::circuit::circuit_plan;
use crate::cmd::bench::BenchArgs;
use crate::error::{CliError, Result};
use crate::outln;
use crate::progress::progress;
use crate::stats::{fmt_secs, Stat};

/// `bench --daemon ADDR` / `bench --concurrency J`: throughput through the daemon's scheduler.
#[derive(Debug, Args, Clone, Default)]
pub struct BenchServeArgs {
    /// Benchmark a running daemon at ADDR: --count jobs, --concurrency at once.
    #[arg(long, value_name = "ADDR")]
    pub daemon: Option<String>,
    /// Jobs in flight at once (throughput mode; without --daemon the same scheduler runs in
    /// this process) [default: 1 with --daemon].
    #[arg(long, value_name = "J", value_parser = crate::values::positive_u32)]
    pub concurrency: Option<u32>,
    /// Partitions per job in throughput mode.
    #[arg(long, value_name = "P", default_value_t = 1, value_parser = crate::values::proof_count)]
    pub partitions: u32,
    /// Parameters file (a path on the daemon's host) [default: benchmark-only parameters
    /// generated into a temporary file here, for a daemon on this host].
    #[arg(long, value_name = "FILE")]
    pub params: Option<PathBuf>,
    /// Token and TLS of --daemon.
    #[command(flatten)]
    pub auth: AuthArgs,
}

impl BenchServeArgs {
    /// Whether throughput mode was asked for.
    pub fn is_set(&self) -> bool {
        self.daemon.is_some() || self.concurrency.is_some()
    }
}

/// The machine-readable result of throughput mode (`--json`).
#[derive(Debug, serde::Serialize)]
pub struct ServeBenchReport {
    /// `daemon` or `in-process`.
    pub mode: &'static str,
    /// The daemon's address.
    pub daemon: String,
    /// One-line description of the circuit.
    pub description: String,
    /// Jobs.
    pub count: u32,
    /// Partitions per job.
    pub partitions: u32,
    /// Jobs in flight at once.
    pub concurrency: u32,
    /// Seconds from the first submission to the last result.
    pub wall_s: f64,
    /// Proofs (partitions) per second over the run.
    pub proofs_per_sec: f64,
    /// Per-partition phase statistics (median, min), seconds.
    pub phases: ServePhases,
    /// Per-job latency, submission to result.
    pub job_latency: Stat,
    /// Each device's busy fraction over the run, and partitions proved in it.
    pub devices: Vec<DeviceUse>,
}

/// Per-partition phases.
#[derive(Debug, Default, serde::Serialize)]
pub struct ServePhases {
    /// Waiting for a synthesis worker.
    pub queued: Stat,
    /// Synthesis.
    pub synthesis: Stat,
    /// Device part: the G1 phase (and the G2 MSM when it runs on the device).
    pub g1_phase: Stat,
    /// The G2 MSM on CPU threads (overlapping the G1 phase).
    pub msm_g2: Stat,
    /// Finalisation (waiting for the G2 MSM, assembly).
    pub finalize: Stat,
    /// Job submission to the partition's proof.
    pub total: Stat,
}

/// One device's use during the run.
#[derive(Debug, serde::Serialize)]
pub struct DeviceUse {
    /// Its name.
    pub name: String,
    /// Busy fraction during the run.
    pub busy_fraction: f64,
    /// Partitions proved during the run.
    pub partitions: u64,
}

async fn bench_run(
    addr: &str,
    creds: Creds,
    req: proto::SubmitRequest,
    count: u32,
    concurrency: u32,
) -> Result<(
    Duration,
    Vec<proto::JobEvent>,
    Vec<Duration>,
    proto::StatusReply,
    proto::StatusReply,
)> {
    let mut c = connect(addr, creds).await?;
    let before = c
        .status(proto::StatusRequest { max_jobs: 1 })
        .await
        .map_err(rpc_error)?
        .into_inner();
    let pb = progress(u64::from(count), "bench");
    let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(concurrency as usize));
    let mut set = tokio::task::JoinSet::new();
    let t0 = Instant::now();
    let mut events = Vec::new();
    let mut latencies = Vec::new();
    for _ in 0..count {
        let permit = sem
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| CliError::Daemon(e.to_string()))?;
        let (mut c, req) = (c.clone(), req.clone());
        set.spawn(async move {
            let t = Instant::now();
            let stream = c.prove(req).await.map_err(rpc_error)?.into_inner();
            let ev = follow_quiet(stream).await;
            drop(permit);
            ev.map(|e| (e, t.elapsed()))
        });
        // Collect finished ones as we go, so errors surface early.
        while let Some(r) = set.try_join_next() {
            let (ev, lat) = r.map_err(|e| CliError::Daemon(e.to_string()))??;
            pb.inc(1);
            events.push(ev);
            latencies.push(lat);
        }
    }
    while let Some(r) = set.join_next().await {
        let (ev, lat) = r.map_err(|e| CliError::Daemon(e.to_string()))??;
        pb.inc(1);
        events.push(ev);
        latencies.push(lat);
    }
    let wall = t0.elapsed();
    pb.finish_and_clear();
    let after = c
        .status(proto::StatusRequest { max_jobs: 1 })
        .await
        .map_err(rpc_error)?
        .into_inner();
    Ok((wall, events, latencies, before, after))
}

async fn follow_quiet(
    mut stream: bellows_serve::tonic::Streaming<proto::JobEvent>,
) -> Result<proto::JobEvent> {
    loop {
        let ev = stream
            .message()
            .await
            .map_err(rpc_error)?
            .ok_or_else(|| CliError::Daemon("the daemon closed the stream early".into()))?;
        match proto::JobState::try_from(ev.state).unwrap_or(proto::JobState::Unspecified) {
            proto::JobState::Done => return Ok(ev),
            proto::JobState::Failed | proto::JobState::Cancelled => {
                return Err(CliError::Daemon(format!("job {}: {}", ev.job_id, ev.error)))
            }
            _ => {}
        }
    }
}

/// `bellows bench --daemon ADDR` or `bellows bench --concurrency J` (in process).
pub fn bench(a: &BenchArgs, g: &crate::cli::Globals) -> Result<()> {
    let s = &a.serve;
    let (spec, _) = circuit_plan(&a.circuit)?;
    let concurrency = s.concurrency.unwrap_or(1);
    let tmp = std::env::temp_dir().join(format!("bellows-bench-serve-{}", std::process::id()));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::Daemon(format!("starting the async runtime: {e}")))?;
    let work = async {
        let params = match &s.params {
            Some(p) => p.clone(),
            None => {
                let (tmp, blank, seed) = (tmp.clone(), spec.blank(), a.seed);
                tokio::task::spawn_blocking(move || -> Result<PathBuf> {
                    std::fs::create_dir_all(&tmp).map_err(|e| {
                        bellows_core::Error::io(format!("creating {}", tmp.display()), e)
                    })?;
                    let p = tmp.join("bench.params");
                    let pb = crate::progress::spinner("generating benchmark-only parameters");
                    let params =
                        bellows_core::groth16::setup::generate_benchmark_parameters(blank, seed);
                    pb.finish_and_clear();
                    bellows_core::groth16::io::write_parameters_file(&params?, &p)?;
                    Ok(p)
                })
                .await
                .map_err(|e| CliError::Daemon(e.to_string()))??
            }
        };
        let req = proto::SubmitRequest {
            kind: Some(Kind::Builtin(proto::BuiltinCircuit {
                name: a.circuit.circuit.clone(),
                log_size: a.circuit.log_size,
                bits_pct: a.circuit.bits_pct.map(u32::from),
                bytes: a.circuit.bytes.map(|b| b as u64),
            })),
            params_path: absolute(&params),
            partitions: s.partitions,
            witness_seed: a.seed,
            seed: Some(a.seed),
            skip_subgroup_checks: true,
            ..Default::default()
        };
        // In process: the same daemon, on a loopback port, with a temporary journal, reading
        // parameters from the folder of the file it proves with.
        let (addr, creds, local): (String, Creds, _) = match &s.daemon {
            Some(d) => (d.to_string(), s.auth.creds()?, None),
            None => {
                let folder = std::path::absolute(&params)
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                    .unwrap_or_else(|| tmp.clone());
                let cfg = bellows_serve::config::ServeConfig {
                    listen: Some("127.0.0.1:0".into()),
                    state_dir: Some(tmp.join("state")),
                    params_dirs: vec![folder],
                    devices: vec![bellows_serve::config::DeviceConfig {
                        backend: a.backend.backend.clone(),
                        devices: Some(a.backend.devices.clone()),
                        options: a.backend.backend_opt.iter().cloned().collect(),
                        g2: Some(a.backend.g2.clone()),
                        ..Default::default()
                    }],
                    pce: Some(!a.no_pce),
                    ..Default::default()
                };
                let d = bellows_serve::server::Daemon::start(&cfg, g.threads).await?;
                let addr = d.local_addr()?;
                let (tx, rx) = tokio::sync::oneshot::channel::<()>();
                let h = tokio::spawn(d.serve(async {
                    let _ = rx.await;
                }));
                (addr, Creds::default(), Some((tx, h)))
            }
        };
        let r = bench_run(&addr, creds, req, a.count, concurrency).await;
        if let Some((tx, h)) = local {
            let _ = tx.send(());
            let _ = h.await;
        }
        r.map(|r| (addr, r))
    };
    let work = std::pin::pin!(work);
    // SIGINT or SIGTERM stop the run; either way the temporary folder (parameters, journal)
    // goes.
    let result = rt.block_on(async {
        tokio::select! {
            r = work => r,
            _ = bellows_serve::server::shutdown_signal() => Err(CliError::Daemon(format!(
                "interrupted; the temporary folder {} is removed",
                tmp.display()
            ))),
        }
    });
    let _ = std::fs::remove_dir_all(&tmp);
    // Work still running on the runtime's threads (a parameter generation, the in-process
    // daemon's engine) ends with the process.
    rt.shutdown_background();
    let (addr, (wall, events, latencies, before, after)) = result?;
    let mut ph: [Vec<Duration>; 6] = Default::default();
    for ev in &events {
        for r in &ev.results {
            let t = r.timings.clone().unwrap_or_default();
            for (v, x) in ph.iter_mut().zip([
                t.queued_s,
                t.synthesis_s,
                t.g1_phase_s,
                t.msm_g2_s,
                t.finalize_s,
                t.total_s,
            ]) {
                v.push(Duration::from_secs_f64(x.max(0.0)));
            }
        }
    }
    let [queued, synthesis, g1_phase, msm_g2, finalize, total] = ph.map(|v| Stat::of(&v));
    let devices = after
        .devices
        .iter()
        .map(|d| {
            let b = before.devices.iter().find(|x| x.index == d.index);
            let busy_before = b.map_or(0.0, |b| b.busy_fraction * before.uptime_s);
            DeviceUse {
                name: d.name.clone(),
                busy_fraction: ((d.busy_fraction * after.uptime_s - busy_before)
                    / wall.as_secs_f64())
                .clamp(0.0, 1.0),
                partitions: d.partitions - b.map_or(0, |b| b.partitions),
            }
        })
        .collect();
    let proofs = a.count * s.partitions;
    let report = ServeBenchReport {
        mode: if s.daemon.is_some() {
            "daemon"
        } else {
            "in-process"
        },
        daemon: addr,
        description: spec.description(),
        count: a.count,
        partitions: s.partitions,
        concurrency,
        wall_s: wall.as_secs_f64(),
        proofs_per_sec: f64::from(proofs) / wall.as_secs_f64(),
        phases: ServePhases {
            queued,
            synthesis,
            g1_phase,
            msm_g2,
            finalize,
            total,
        },
        job_latency: Stat::of(&latencies),
        devices,
    };
    if a.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| bellows_core::Error::invalid(format!("serialising the report: {e}")))?;
        outln!("{text}");
        return Ok(());
    }
    outln!("circuit: {}", report.description);
    outln!(
        "{} job(s) of {} partition(s), {} at once, on {} ({}): {} in {}",
        report.count,
        report.partitions,
        concurrency,
        report.daemon,
        report.mode,
        proofs,
        fmt_secs(report.wall_s)
    );
    outln!("  {:<34} {:>10} {:>10}", "per partition", "median", "min");
    let p = &report.phases;
    for (name, st) in [
        ("queued", p.queued),
        ("synthesis", p.synthesis),
        ("device (G1 phase)", p.g1_phase),
        ("G2 MSM", p.msm_g2),
        ("finalize", p.finalize),
        ("submission to proof", p.total),
        ("job latency", report.job_latency),
    ] {
        outln!(
            "  {:<34} {:>10} {:>10}",
            name,
            fmt_secs(st.median_s),
            fmt_secs(st.min_s)
        );
    }
    for d in &report.devices {
        outln!(
            "device {}: busy {:.1}%, {} partitions",
            d.name,
            100.0 * d.busy_fraction,
            d.partitions
        );
    }
    outln!("proofs/s: {:.3}", report.proofs_per_sec);
    Ok(())
}

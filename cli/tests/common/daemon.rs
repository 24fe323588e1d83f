//! A `bellows serve` process for the daemon tests (serve, fleet, daemon hardening): started,
//! its address read from its first line, its metrics fetched, killed when dropped.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};

use bellows_serve::{proto, tonic};

use super::s;

/// A running daemon; killed when dropped.
pub struct Daemon {
    /// The process.
    child: Child,
    /// Where clients reach it (`IP:PORT` or `unix:PATH`).
    pub addr: String,
    /// Where the cuzk API listens (one per `--cuzk`, in order: `IP:PORT` or `unix:PATH`).
    pub cuzk: Vec<String>,
    /// Its metrics endpoint (`IP:PORT`), when started with `--metrics-listen`.
    metrics: Option<String>,
    /// Its log (stderr, `-v`).
    log: PathBuf,
}

impl Daemon {
    /// `bellows serve --listen LISTEN --state-dir STATE --params-dir PARAMS EXTRA`, its log
    /// beside the state folder (`STATE.log`).
    pub fn start(listen: &str, state: &Path, params: &Path, extra: &[&str]) -> Daemon {
        let mut args = vec![
            "--listen",
            listen,
            "--state-dir",
            s(state),
            "--params-dir",
            s(params),
        ];
        args.extend(extra);
        Daemon::spawn(&args, &state.with_extension("log"))
    }

    /// Runs `bellows -v serve ARGS` with stderr appended to `log`; panics with the log when it
    /// does not print `listening on ADDR`.
    pub fn spawn(args: &[&str], log: &Path) -> Daemon {
        let logf = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_bellows"))
            .args(["-v", "serve"])
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(logf)
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let Some(addr) = line
            .trim()
            .strip_prefix("listening on ")
            .map(str::to_string)
        else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "daemon did not start: {line:?}\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        };
        let cuzk = (0..args.iter().filter(|a| **a == "--cuzk").count())
            .map(|_| {
                line.clear();
                out.read_line(&mut line).unwrap();
                line.trim()
                    .strip_prefix("cuzk on ")
                    .expect("a `cuzk on ADDR` line per --cuzk")
                    .to_string()
            })
            .collect();
        let metrics = args.contains(&"--metrics-listen").then(|| {
            line.clear();
            out.read_line(&mut line).unwrap();
            line.trim()
                .strip_prefix("metrics on http://")
                .and_then(|m| m.strip_suffix("/metrics"))
                .expect("metrics line")
                .to_string()
        });
        Daemon {
            child,
            addr,
            cuzk,
            metrics,
            log: log.to_path_buf(),
        }
    }

    /// SIGKILL: no handler runs, nothing is flushed by the daemon itself.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the process still runs.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `GET path` on the metrics endpoint: (status line, body).
    pub fn http(&self, path: &str) -> (String, String) {
        let mut c = TcpStream::connect(self.metrics.as_deref().expect("--metrics-listen")).unwrap();
        write!(c, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut all = String::new();
        c.read_to_string(&mut all).unwrap();
        let (head, body) = all.split_once("\r\n\r\n").unwrap_or((&all, ""));
        (
            head.lines().next().unwrap_or("").to_string(),
            body.to_string(),
        )
    }

    /// The value of a metric line `name{labels}` (`None` when absent).
    pub fn metric(&self, name_and_labels: &str) -> Option<f64> {
        self.http("/metrics")
            .1
            .lines()
            .find_map(|l| l.strip_prefix(name_and_labels)?.trim().parse().ok())
    }
}

/// A runtime for the tests' gRPC calls.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A job of `partitions` proofs of synthetic 2^`k` with the parameters at `params`, witnesses
/// from `witness_seed`; the other fields at their defaults.
pub fn synthetic_request(
    params: &Path,
    k: u32,
    partitions: u32,
    witness_seed: u64,
) -> proto::SubmitRequest {
    let circuit = proto::BuiltinCircuit {
        name: "synthetic".into(),
        log_size: Some(k),
        ..Default::default()
    };
    proto::SubmitRequest {
        kind: Some(proto::submit_request::Kind::Builtin(circuit)),
        params_path: s(params).into(),
        partitions,
        witness_seed,
        ..Default::default()
    }
}

/// `Await` of `job_id` on the daemon `c` reaches: every event of the job, or with `final_only`
/// its last.
pub async fn events(
    c: &mut bellows_serve::client::Client,
    job_id: u64,
    final_only: bool,
) -> Result<tonic::Streaming<proto::JobEvent>, tonic::Status> {
    let request = proto::AwaitRequest {
        job_id,
        final_only,
        keep_unfetched: false,
    };
    Ok(c.r#await(request).await?.into_inner())
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

//! `bellows serve`: the proving daemon (the bellows-serve crate; docs/serve.md).

use std::path::PathBuf;

use bellows_serve::{
    config::{ByteSize, DeviceConfig, ServeConfig},
    server::{shutdown_signal, Daemon},
};
use clap::Args;

use crate::cli::Globals;
use crate::error::Result;
use crate::outln;

/// `bellows serve --help`.
pub const SERVE_ABOUT: &str = "Run the proving daemon. It takes jobs over gRPC (Submit, Await, \
Prove, Status, Cancel, PreloadParams, EvictParams, Backends: serve/proto/bellows.proto; with \
--cuzk ADDR also the cuzk API that Curio calls, cuzk.v1.ProvingEngine: docs/curio.md), keeps \
parameters resident on every device across jobs, and runs the pipeline scheduler: synthesis \
workers feed device workers on every configured device from one priority queue, within a memory \
budget that holds each partition until its proof is assembled, and within each device's own \
budget (--device-memory-budget): a partition goes only to a device with room for it and its \
parameters' points. Every accepted job is journaled \
in STATE_DIR/jobs.sqlite before Submit answers: after a crash or restart, unfinished jobs run \
again (only their missing partitions), and finished proofs are kept until fetched or expired. A \
partition whose device fails is retried on another device or on the CPU fallback.\n\n\
Trust: one daemon per state directory (a second one stops at once); parameters are read only \
inside --params-dir (default STATE_DIR/params), never memory-mapped; every proof is verified \
before a job is done; a job belongs to the identity that submitted it (a token's name, a TLS \
client's certificate, a unix socket peer's uid) and only it, or an --admin, may see, await or \
cancel it (docs/operations.md, \"Security model\").\n\n\
`--listen ADDR --state-dir DIR` is enough (CPU backend). The first line on stdout is \
`listening on ADDR` (the real port when 0 was given), then one `cuzk on ADDR` per --cuzk. \
Unix sockets are created with --socket-mode (default 660). The address is loopback by default; any \
other needs --allow-remote and a token (--token-file; clients send it with --token-file or \
BELLOWS_TOKEN) or mutual TLS (--tls-client-ca), or both.\n\n\
TLS: --tls-cert and --tls-key make the gRPC listener TLS-only (clients give --tls-ca, the CA \
that signed the certificate). --tls-client-ca adds mutual TLS: only clients presenting a \
certificate signed by that CA are served (clients give --tls-cert and --tls-key). \
docs/serve.md shows the openssl commands that make the files. Prometheus metrics are served on --metrics-listen (GET /metrics).\n\n\
Everything can also come from a TOML file (--config; flags override it); docs/serve.md shows \
one, with several devices.\n\n\
A fleet: with --store postgres://… several daemons on several hosts share one PostgreSQL job \
store and no coordinator. Any of them accepts a job; each claims partitions it can serve (its \
[fleet] kinds and params) up to its capacity, under a lease it renews with heartbeats; a host \
that dies stops renewing and its partitions are claimed again by the others after the lease; a \
partition is proved into its job once (a late result is discarded). Await and Status work on \
any daemon of the fleet. docs/operations.md, \"A fleet\", shows the deployment.\n\n\
SIGINT or SIGTERM stop it: partitions in flight finish, queued work stays journaled (in a \
fleet, what the daemon still holds is given back at once).\n\n\
Examples:\n  bellows serve --state-dir /var/lib/bellows\n  \
bellows serve --listen 127.0.0.1:7700 --state-dir st --metrics-listen 127.0.0.1:9100\n  \
bellows serve --config bellows.toml\n  \
bellows serve --state-dir st --backend cuda --devices 0,1 --memory-budget 96GiB\n  \
bellows serve --state-dir st --backend cuda --devices 0,1 --device-memory-budget 0=120GiB,1=60GiB\n  \
bellows serve --state-dir st --listen 0.0.0.0:7700 --allow-remote --tls-cert server.pem \
--tls-key server.key --tls-client-ca clients-ca.pem\n  \
bellows serve --state-dir st --store postgres://bellows@db:5432/bellows --node-id gpu-07\n  \
bellows serve --state-dir /var/lib/bellows --backend cuda --cuzk unix:/run/curio/cuzk.sock";

/// `bellows serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A TOML configuration file (flags given here override it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// gRPC address: IP:PORT, or unix:PATH for a unix socket [default: 127.0.0.1:7700].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Also serve the cuzk API (cuzk.v1.ProvingEngine, what Curio calls) on this address:
    /// unix:PATH or IP:PORT (repeatable; docs/curio.md).
    #[arg(long = "cuzk", value_name = "ADDR")]
    pub cuzk: Vec<String>,
    /// Permissions of the unix sockets created, in octal [default: 660].
    #[arg(long = "socket-mode", value_name = "OCTAL")]
    pub socket_mode: Option<String>,
    /// How parameters are checked when a job does not ask for curve checks only: auto (a
    /// file Filecoin's parameters.json lists whose blake2b digest matches, hashed in the same
    /// pass as the daemon's SHA-256, is the published file: curve checks only; any other file
    /// batched), batched, full or curve-only [default: auto].
    #[arg(long = "params-check", value_name = "CHECK")]
    pub params_check: Option<String>,
    /// State directory: the job journal and pre-compiled constraint systems.
    #[arg(long = "state-dir", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Prometheus metrics address (GET /metrics) [default: none].
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Accept a non-loopback address (requires --token-file, or mutual TLS: --tls-client-ca).
    #[arg(long = "allow-remote")]
    pub allow_remote: bool,
    /// File holding the token clients must send (at least 16 characters), or several named
    /// tokens, `NAME TOKEN` per line (each name an identity, token:NAME).
    #[arg(long = "token-file", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Serve TLS with this certificate chain (PEM, leaf first; needs --tls-key).
    #[arg(long = "tls-cert", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long = "tls-key", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Mutual TLS: serve only clients whose certificate this CA (PEM) signed (needs --tls-cert).
    #[arg(long = "tls-client-ca", value_name = "FILE")]
    pub tls_client_ca: Option<PathBuf>,
    /// Backend of the devices (replaces the file's [[device]] tables) [default: cpu].
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
    /// Devices of --backend: `all` or indices `0,1`, one queue consumer per device.
    #[arg(long, value_name = "LIST", requires = "backend")]
    pub devices: Option<String>,
    /// Device workers per device [default: 2].
    #[arg(long, value_name = "N", requires = "backend")]
    pub workers: Option<usize>,
    /// A backend option for --backend (repeatable).
    #[arg(long = "backend-opt", value_name = "KEY=VALUE", requires = "backend",
          value_parser = crate::backend_opts::parse_key_value)]
    pub backend_opt: Vec<(String, String)>,
    /// Synthesis threads [default: half the cores].
    #[arg(long = "synthesis-workers", value_name = "N")]
    pub synthesis_workers: Option<usize>,
    /// Host memory for synthesised partitions until their proofs are assembled (`64GiB`)
    /// [default: half the free memory].
    #[arg(long = "memory-budget", value_name = "BYTES", value_parser = bellows_core::units::parse_bytes)]
    pub memory_budget: Option<u64>,
    /// Memory budget per device: the points of the parameters resident on it and the
    /// partitions on it. `SIZE` for every device, or `DEVICE=SIZE,...` with DEVICE a label from
    /// `bellows status` (`cuda:1`) or a bare device index (`0=40GiB,1=20GiB`); SIZE may be
    /// `unlimited` [default: unlimited, counted only (`bellows status` shows it); the CUDA
    /// backend streams bases that do not fit its GPU].
    #[arg(long = "device-memory-budget", value_name = "SPEC",
          value_parser = parse_device_budgets)]
    pub device_memory_budget: Option<String>,
    /// Memory for resident parameters, evicted least-recently-used [default: a quarter of the
    /// free memory].
    #[arg(long = "params-budget", value_name = "BYTES", value_parser = bellows_core::units::parse_bytes)]
    pub params_budget: Option<u64>,
    /// Parameters files to load at start (repeatable; inside a --params-dir).
    #[arg(long, value_name = "FILE")]
    pub preload: Vec<PathBuf>,
    /// Read parameters only inside this directory (repeatable; replaces the file's
    /// params_dirs) [default: STATE_DIR/params and, with Filecoin support,
    /// FIL_PROOFS_PARAMETER_CACHE].
    #[arg(long = "params-dir", value_name = "DIR")]
    pub params_dir: Vec<PathBuf>,
    /// An identity that sees and manages every job and the parameters (repeatable): token:NAME,
    /// tls:CN=NAME, uid:N or local (docs/operations.md, "Security model").
    #[arg(long = "admin", value_name = "ID", value_parser = parse_identity)]
    pub admin: Vec<String>,
    /// Synthesise directly (no pre-compiled constraint systems).
    #[arg(long = "no-pce")]
    pub no_pce: bool,
    /// No CPU fallback device for partitions whose device failed.
    #[arg(long = "no-cpu-fallback")]
    pub no_cpu_fallback: bool,
    /// The job store: `sqlite` (this daemon's own journal) or a PostgreSQL URL shared by a
    /// fleet of daemons (`postgres://user@host:5432/db`) [default: sqlite].
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// This node's id in a fleet's store; keep it stable per host [default:
    /// HOSTNAME-PID-RANDOM].
    #[arg(long = "node-id", value_name = "ID")]
    pub node_id: Option<String>,
    /// Partitions this fleet node holds at once [default: twice its device workers].
    #[arg(long = "fleet-capacity", value_name = "N")]
    pub fleet_capacity: Option<usize>,
    /// `--threads`.
    #[command(flatten)]
    pub threads: crate::cli::ThreadsArg,
}

/// Checks `--admin`.
fn parse_identity(s: &str) -> std::result::Result<String, String> {
    s.parse::<bellows_serve::identity::Identity>()?;
    Ok(s.trim().to_string())
}

/// Checks `--device-memory-budget` (which devices it names is checked when they are opened).
fn parse_device_budgets(s: &str) -> std::result::Result<String, String> {
    s.parse::<bellows_serve::config::DeviceBudgets>()?;
    Ok(s.to_string())
}

/// The configuration: the file's, then the flags.
pub fn config(a: &ServeArgs) -> Result<ServeConfig> {
    let mut c = match &a.config {
        Some(p) => ServeConfig::from_file(p)?,
        None => ServeConfig::default(),
    };
    if let Some(v) = &a.listen {
        c.listen = Some(v.clone());
    }
    if let Some(v) = &a.state_dir {
        c.state_dir = Some(v.clone());
    }
    c.cuzk.extend(a.cuzk.iter().cloned());
    if let Some(v) = &a.socket_mode {
        c.socket_mode = Some(v.clone());
    }
    if let Some(v) = &a.params_check {
        c.params_check = Some(v.clone());
    }
    if let Some(v) = &a.metrics_listen {
        c.metrics_listen = Some(v.clone());
    }
    c.allow_remote |= a.allow_remote;
    if let Some(v) = &a.token_file {
        c.token_file = Some(v.clone());
    }
    if let Some(v) = &a.tls_cert {
        c.tls_cert = Some(v.clone());
    }
    if let Some(v) = &a.tls_key {
        c.tls_key = Some(v.clone());
    }
    if let Some(v) = &a.tls_client_ca {
        c.tls_client_ca = Some(v.clone());
    }
    if let Some(b) = &a.backend {
        c.devices = vec![DeviceConfig {
            backend: b.clone(),
            devices: a.devices.clone(),
            workers: a.workers,
            options: a.backend_opt.iter().cloned().collect(),
            ..Default::default()
        }];
    }
    if let Some(v) = a.synthesis_workers {
        c.synthesis_workers = Some(v);
    }
    if let Some(v) = a.memory_budget {
        c.memory_budget = Some(ByteSize(v));
    }
    if let Some(v) = &a.device_memory_budget {
        c.device_memory_budget = Some(v.clone());
    }
    if let Some(v) = a.params_budget {
        c.params_budget = Some(ByteSize(v));
    }
    c.preload.extend(a.preload.iter().cloned());
    if !a.params_dir.is_empty() {
        c.params_dirs = a.params_dir.clone();
    }
    c.admins.extend(a.admin.iter().cloned());
    if a.no_pce {
        c.pce = Some(false);
    }
    if a.no_cpu_fallback {
        c.cpu_fallback = Some(false);
    }
    if let Some(v) = &a.store {
        c.store = Some(v.clone());
    }
    if let Some(v) = &a.node_id {
        c.fleet.node_id = Some(v.clone());
    }
    if let Some(v) = a.fleet_capacity {
        c.fleet.capacity = Some(v);
    }
    Ok(c)
}

/// Runs the command (until SIGINT or SIGTERM).
pub fn run(a: &ServeArgs, g: &Globals) -> Result<()> {
    let cfg = config(a)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("bellows-rpc")
        .build()
        .map_err(|e| bellows_serve::ServeError::io("starting the async runtime", e))?;
    rt.block_on(async {
        let daemon = Daemon::start(&cfg, g.threads).await?;
        outln!("listening on {}", daemon.local_addr()?);
        for a in daemon.cuzk_addrs()? {
            outln!("cuzk on {a}");
        }
        if let Some(m) = daemon.metrics_addr() {
            outln!("metrics on http://{m}/metrics");
        }
        daemon.serve(shutdown_signal()).await?;
        Ok(())
    })
}

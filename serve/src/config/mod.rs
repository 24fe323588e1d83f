//! The daemon's configuration: a TOML file (`bellows serve --config FILE`), overridden by flags.
//! docs/serve.md shows a complete file.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, sync::Arc};

use bellows_core::{
    groth16::{io::PointCheck, prover::G2Policy},
    Backend, BackendConfig,
};
use serde::Deserialize;

use crate::{
    engine::{DeviceSpec, EngineConfig, FleetConfig},
    error::{Result, ServeError},
    identity::{Access, Identity},
    tls::ServerTls,
};

/// The default gRPC address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7700";

mod device_budgets;
mod tokens;

pub use device_budgets::DeviceBudgets;
pub use tokens::{parse_tokens, warn_if_readable_by_others};

/// The one byte-size type of the workspace (`8GiB` binary, `1.5GB` decimal).
pub use bellows_core::units::ByteSize;
use bellows_core::units::{format_bytes, parse_bytes};

/// A byte count in the file: a number, or a string with a unit (`512MiB`, `8GiB`, `1.5GB`).
#[derive(Deserialize)]
#[serde(untagged)]
enum ByteSizeRepr {
    N(u64),
    S(String),
}

/// serde's reader of an optional byte count (a thin wrapper over [`parse_bytes`]).
fn byte_size<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<ByteSize>, D::Error> {
    match Option::<ByteSizeRepr>::deserialize(d)? {
        None => Ok(None),
        Some(ByteSizeRepr::N(n)) => Ok(Some(ByteSize(n))),
        Some(ByteSizeRepr::S(s)) => parse_bytes(&s)
            .map(|b| Some(ByteSize(b)))
            .map_err(serde::de::Error::custom),
    }
}

/// A budget for people: its size, or `unlimited`.
pub fn format_budget(b: Option<u64>) -> String {
    b.map_or_else(|| "unlimited".into(), format_bytes)
}

/// Where the gRPC service listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A unix socket file.
    Unix(PathBuf),
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Tcp(a) => write!(f, "{a}"),
            Listen::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// One `[[device]]` table: a backend and the devices it drives.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    /// Backend name or plugin path (as `--backend`). Default: `cpu`.
    #[serde(default = "default_backend")]
    pub backend: String,
    /// `all`, or device indices `0,1`: one engine device per index (each with its own workers
    /// and queue position). Default: `all`.
    pub devices: Option<String>,
    /// Device workers per device. Default: 2.
    pub workers: Option<usize>,
    /// Where the G2 MSM runs: `auto`, `device`, `cpu`. Default: `auto`.
    pub g2: Option<String>,
    /// Backend options (as `--backend-opt`).
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// Takes only partitions that failed on another device. Default: false.
    #[serde(default)]
    pub fallback: bool,
}

fn default_backend() -> String {
    "cpu".into()
}

/// The whole configuration file (every key optional).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// gRPC address: `IP:PORT`, or `unix:PATH` for a unix socket. Default: 127.0.0.1:7700.
    pub listen: Option<String>,
    /// Addresses that serve the cuzk API (`cuzk.v1.ProvingEngine`, what Curio calls), on the
    /// same engine: `IP:PORT` (the rules of `listen`) or `unix:PATH` (docs/curio.md). Default:
    /// none.
    #[serde(default)]
    pub cuzk: Vec<String>,
    /// Permissions of the unix sockets the daemon creates, in octal. Default: `660` (the
    /// daemon's user and group may connect; each connecting user is its own identity).
    pub socket_mode: Option<String>,
    /// Prometheus metrics address (`GET /metrics`). Default: none (no metrics server).
    pub metrics_listen: Option<String>,
    /// State directory (journal, pre-compiled constraint systems). Required (here or by flag).
    pub state_dir: Option<PathBuf>,
    /// Accept a non-loopback `listen` address (then a token is required). Default: false.
    #[serde(default)]
    pub allow_remote: bool,
    /// File holding the bearer token clients must send, or several named tokens, one `NAME
    /// TOKEN` per line (each name is an identity, `token:NAME`). Default: none (no token on
    /// loopback).
    pub token_file: Option<PathBuf>,
    /// TLS: the daemon's certificate chain (PEM, leaf first). Default: none (plain text).
    pub tls_cert: Option<PathBuf>,
    /// TLS: the daemon's private key (PEM). Required with `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// Mutual TLS: serve only clients whose certificate this CA (PEM) signed. Needs `tls_cert`.
    /// Default: none (any client; the token, if any, decides).
    pub tls_client_ca: Option<PathBuf>,
    /// Synthesis threads. Default: half the cores.
    pub synthesis_workers: Option<usize>,
    /// Finaliser threads. Default: 2.
    pub finalizers: Option<usize>,
    /// Host bytes for synthesised partitions. Default: half the free memory.
    #[serde(default, deserialize_with = "byte_size")]
    pub memory_budget: Option<ByteSize>,
    /// Per-device memory budgets (see [`DeviceBudgets`]): `"0=40GiB,1=20GiB"`, `"24GiB"`.
    /// Default: unlimited (counted only; the backend's own tiers decide).
    pub device_memory_budget: Option<String>,
    /// Bytes of decoded parameters kept resident. Default: a quarter of the free memory.
    #[serde(default, deserialize_with = "byte_size")]
    pub params_budget: Option<ByteSize>,
    /// Attempts per partition on device errors. Default: 3.
    pub max_attempts: Option<u32>,
    /// Seconds a device stays idle after proving before its backend returns the memory its
    /// pools cache (device memory pools, idle pinned host blocks); 0: never. Default: 60.
    pub idle_trim_s: Option<f64>,
    /// Add a CPU fallback device for partitions that failed on every other device (only when
    /// no configured device is a fallback). Default: true.
    pub cpu_fallback: Option<bool>,
    /// Synthesise with pre-compiled constraint systems (cached in STATE_DIR/pce). Default: true.
    pub pce: Option<bool>,
    /// Parameters files to load and make resident at start.
    #[serde(default)]
    pub preload: Vec<PathBuf>,
    /// How parameters are checked when a job does not ask for curve checks only (cuzk API jobs
    /// never do): `auto` (the default: a file Filecoin's `parameters.json` lists, whose blake2b
    /// digest matches, is the published file and gets curve checks only; any other file
    /// `batched`; without Filecoin support the same as `batched`), `batched` (every point on
    /// the curve and, except with probability 2^−128, in the subgroup), `full` (each point's
    /// subgroup checked alone: many times slower) or `curve-only` (for files made or
    /// digest-checked on this host).
    pub params_check: Option<String>,
    /// Read parameters files only inside these directories. Default: STATE_DIR/params and, in
    /// a build with Filecoin support, FIL_PROOFS_PARAMETER_CACHE (else
    /// /var/tmp/filecoin-proof-parameters).
    #[serde(default)]
    pub params_dirs: Vec<PathBuf>,
    /// Identities that see and manage every job and the parameters (`token:NAME`,
    /// `tls:CN=NAME`, `uid:N`, `local`; docs/operations.md, "Security model"). Default: none.
    #[serde(default)]
    pub admins: Vec<String>,
    /// Largest gRPC message accepted. Default: 256 MiB (a 32 GiB sector's C1 output is about
    /// 50 MB).
    #[serde(default, deserialize_with = "byte_size")]
    pub max_request_bytes: Option<ByteSize>,
    /// Largest gRPC message the cuzk API's listeners (`cuzk`) accept. Default: 256 MiB, what
    /// Curio's client sends at most (a 64 GiB sector's C1 output is about 100 MB).
    #[serde(default, deserialize_with = "byte_size")]
    pub cuzk_max_request_bytes: Option<ByteSize>,
    /// Most partitions per job. Default: 1024.
    pub max_partitions: Option<u32>,
    /// Most jobs queued or running. Default: 10000.
    pub max_active_jobs: Option<usize>,
    /// Largest circuit domain (log2). Default: 27.
    pub max_log_domain: Option<u32>,
    /// Seconds finished results are kept when nobody fetches them. Default: 7 days.
    pub result_ttl_s: Option<u64>,
    /// Seconds results are kept after a client fetched them. Default: 1 hour.
    pub fetched_ttl_s: Option<u64>,
    /// The devices. Default: one CPU backend.
    #[serde(default, rename = "device")]
    pub devices: Vec<DeviceConfig>,
    /// The job store: `sqlite` (STATE_DIR/jobs.sqlite, this daemon's own) or a PostgreSQL URL
    /// (`postgres://user@host:5432/bellows`, or libpq's `host=… dbname=…`): a store shared by a
    /// fleet of daemons. Default: `sqlite`.
    pub store: Option<String>,
    /// File holding the PostgreSQL password (overrides one in the URL). Default: none.
    pub store_password_file: Option<PathBuf>,
    /// How this daemon takes part in a fleet (with a PostgreSQL store).
    #[serde(default)]
    pub fleet: FleetTable,
}

/// The `[fleet]` table: this daemon as a node of a fleet (docs/operations.md).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FleetTable {
    /// This node's id in the store; keep it stable per host. Default: HOSTNAME-PID-RANDOM.
    pub node_id: Option<String>,
    /// Seconds a claim lives without a heartbeat. Default: 30.
    pub lease_s: Option<f64>,
    /// Seconds between heartbeats. Default: a third of the lease.
    pub heartbeat_s: Option<f64>,
    /// Milliseconds between looks for work when idle. Default: 1000.
    pub poll_ms: Option<u64>,
    /// Partitions this node holds at once. Default: twice its device workers.
    pub capacity: Option<usize>,
    /// Expired claims of one partition before its job fails. Default: 5.
    pub max_claims: Option<u32>,
    /// Proof kinds this node proves. Default: every built-in circuit.
    pub kinds: Option<Vec<String>>,
    /// Parameters files this node has (it claims only jobs on them). Default: any job whose
    /// parameters file is at the path the job names.
    #[serde(default)]
    pub params: Vec<PathBuf>,
}

/// Where jobs are stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// The embedded SQLite journal in the state directory.
    Sqlite,
    /// A PostgreSQL database shared by a fleet (the URL).
    Postgres(String),
}

impl ServeConfig {
    /// Reads a configuration file.
    pub fn from_file(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ServeError::io(format!("reading {}", path.display()), e))?;
        Self::from_toml(&text).map_err(|e| ServeError::Config(format!("{}: {e}", path.display())))
    }

    /// Parses configuration text.
    pub fn from_toml(text: &str) -> std::result::Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// Where the gRPC service listens: a TCP address ([`ServeConfig::listen_addr`]'s rules) or
    /// a unix socket (`unix:PATH`, reached only through the file system: loopback's rules).
    pub fn listen_target(&self) -> Result<Listen> {
        self.target(self.listen.as_deref().unwrap_or(DEFAULT_LISTEN))
    }

    /// Where the cuzk API listens (`cuzk`, each checked as `listen` is), in the order given.
    pub fn cuzk_targets(&self) -> Result<Vec<Listen>> {
        self.cuzk.iter().map(|a| self.target(a)).collect()
    }

    /// The permissions of the daemon's unix sockets (`socket_mode`, octal; default 0o660).
    pub fn socket_mode(&self) -> Result<u32> {
        match self.socket_mode.as_deref().map(str::trim) {
            None => Ok(0o660),
            Some(t) => u32::from_str_radix(t.trim_start_matches("0o"), 8)
                .ok()
                .filter(|m| *m <= 0o777)
                .ok_or_else(|| {
                    ServeError::Config(format!(
                        "socket_mode {t:?} is not permissions in octal (like 660)"
                    ))
                }),
        }
    }

    /// The address `text`: `unix:PATH` (or `unix://PATH`, as gRPC clients write it), else a
    /// TCP address by [`ServeConfig::listen_addr`]'s rules.
    fn target(&self, text: &str) -> Result<Listen> {
        if let Some(p) = text
            .strip_prefix("unix://")
            .or_else(|| text.strip_prefix("unix:"))
        {
            if p.is_empty() {
                return Err(ServeError::Config(
                    "listen address unix: names no socket file (unix:/run/bellows.sock)".into(),
                ));
            }
            return Ok(Listen::Unix(PathBuf::from(p)));
        }
        self.tcp_addr(text).map(Listen::Tcp)
    }

    /// The gRPC address, checked: a non-loopback address needs `allow_remote` and a way to
    /// tell clients apart — a token file, or mutual TLS (`tls_client_ca`), or both.
    pub fn listen_addr(&self) -> Result<SocketAddr> {
        self.tcp_addr(self.listen.as_deref().unwrap_or(DEFAULT_LISTEN))
    }

    /// The TCP address `text`, checked as [`ServeConfig::listen_addr`] says.
    fn tcp_addr(&self, text: &str) -> Result<SocketAddr> {
        let addr: SocketAddr = text.parse().map_err(|_| {
            ServeError::Config(format!(
                "listen address {text:?} is not IP:PORT (like 127.0.0.1:7700)"
            ))
        })?;
        if !addr.ip().is_loopback() {
            if !self.allow_remote {
                return Err(ServeError::Config(format!(
                    "listen address {addr} is not a loopback address: give --allow-remote (and a \
                     token with --token-file, or mutual TLS with --tls-client-ca) to accept \
                     connections from other hosts"
                )));
            }
            if self.token_file.is_none() && self.tls_client_ca.is_none() {
                return Err(ServeError::Config(format!(
                    "listen address {addr} accepts other hosts: a token (--token-file FILE) or \
                     mutual TLS (--tls-cert, --tls-key and --tls-client-ca) is required"
                )));
            }
        }
        Ok(addr)
    }

    /// The metrics address, if any (the same loopback rule as `listen`, without a token: keep a
    /// remote metrics address behind a firewall).
    pub fn metrics_addr(&self) -> Result<Option<SocketAddr>> {
        let Some(text) = self.metrics_listen.as_deref() else {
            return Ok(None);
        };
        let addr: SocketAddr = text
            .parse()
            .map_err(|_| ServeError::Config(format!("metrics address {text:?} is not IP:PORT")))?;
        if !addr.ip().is_loopback() && !self.allow_remote {
            return Err(ServeError::Config(format!(
                "metrics address {addr} is not a loopback address: give --allow-remote"
            )));
        }
        Ok(Some(addr))
    }

    /// The tokens clients may present, read from `token_file` (see [`parse_tokens`]); a file
    /// that other users may read is accepted with a warning.
    pub fn tokens(&self) -> Result<Option<crate::server::Tokens>> {
        let Some(p) = &self.token_file else {
            return Ok(None);
        };
        warn_if_readable_by_others(p, "token file");
        let t = std::fs::read_to_string(p)
            .map_err(|e| ServeError::io(format!("reading token file {}", p.display()), e))?;
        parse_tokens(&t)
            .map(Some)
            .map_err(|e| ServeError::Config(format!("token file {}: {e}", p.display())))
    }

    /// The admins (`admins`), checked.
    pub fn access(&self) -> Result<Access> {
        let admins = self
            .admins
            .iter()
            .map(|a| {
                a.parse::<Identity>()
                    .map_err(|e| ServeError::Config(format!("admins: {e}")))
            })
            .collect::<Result<_>>()?;
        Ok(Access::new(admins))
    }

    /// The directories parameters are read from: `params_dirs`, else the defaults (see the
    /// field), the state directory's `params/` created if missing.
    pub fn params_dirs(&self, state_dir: &std::path::Path) -> Result<Vec<PathBuf>> {
        if !self.params_dirs.is_empty() {
            return Ok(self.params_dirs.clone());
        }
        let own = state_dir.join("params");
        std::fs::create_dir_all(&own)
            .map_err(|e| ServeError::io(format!("creating {}", own.display()), e))?;
        #[allow(unused_mut)]
        let mut dirs = vec![own];
        #[cfg(feature = "filecoin")]
        dirs.push(
            std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
                .filter(|v| !v.is_empty())
                .map_or_else(
                    || PathBuf::from("/var/tmp/filecoin-proof-parameters"),
                    PathBuf::from,
                ),
        );
        Ok(dirs)
    }

    /// The TLS settings, if the daemon serves TLS (the files are read by
    /// [`ServerTls::load`]). A certificate without its key, or a client CA without the daemon's
    /// own certificate, is an error.
    pub fn tls(&self) -> Result<Option<ServerTls>> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Ok(Some(ServerTls {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: self.tls_client_ca.clone(),
            })),
            (Some(_), None) => Err(ServeError::Config(
                "a TLS certificate (--tls-cert) needs its private key (--tls-key)".into(),
            )),
            (None, Some(_)) => Err(ServeError::Config(
                "a TLS key (--tls-key) needs its certificate (--tls-cert)".into(),
            )),
            (None, None) if self.tls_client_ca.is_some() => Err(ServeError::Config(
                "mutual TLS (--tls-client-ca) needs the daemon's own certificate and key \
                 (--tls-cert, --tls-key)"
                    .into(),
            )),
            (None, None) => Ok(None),
        }
    }

    /// The state directory (created if missing).
    pub fn state_dir(&self) -> Result<PathBuf> {
        let d = self.state_dir.clone().ok_or_else(|| {
            ServeError::Config("a state directory is required (--state-dir DIR)".into())
        })?;
        std::fs::create_dir_all(&d)
            .map_err(|e| ServeError::io(format!("creating state directory {}", d.display()), e))?;
        Ok(d)
    }

    /// The configured store.
    pub fn store_kind(&self) -> Result<StoreKind> {
        match self.store.as_deref().map(str::trim) {
            None | Some("") | Some("sqlite") => Ok(StoreKind::Sqlite),
            Some(u)
                if u.starts_with("postgres://")
                    || u.starts_with("postgresql://")
                    || u.contains("dbname=")
                    || u.contains("host=") =>
            {
                Ok(StoreKind::Postgres(u.to_string()))
            }
            Some(other) => Err(ServeError::Config(format!(
                "store {:?}: give `sqlite` or a PostgreSQL URL (postgres://user@host:5432/db)",
                crate::store::postgres_redact(other)
            ))),
        }
    }

    /// The PostgreSQL password from `store_password_file`, if set (surrounding white space
    /// removed).
    pub fn store_password(&self) -> Result<Option<String>> {
        let Some(p) = &self.store_password_file else {
            return Ok(None);
        };
        let t = std::fs::read_to_string(p)
            .map_err(|e| ServeError::io(format!("reading password file {}", p.display()), e))?;
        Ok(Some(t.trim().to_string()))
    }

    /// The fleet settings of a daemon on a shared store (`address`: where clients reach it).
    pub fn fleet_config(&self, address: &str) -> Result<FleetConfig> {
        let t = &self.fleet;
        let mut c = FleetConfig::default();
        if let Some(id) = &t.node_id {
            c.node_id = id.clone();
        }
        c.address = address.to_string();
        let secs = |what: &str, v: f64| -> Result<std::time::Duration> {
            std::time::Duration::try_from_secs_f64(v)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| ServeError::Config(format!("fleet.{what} = {v} is not a duration")))
        };
        if let Some(v) = t.lease_s {
            c.lease = secs("lease_s", v)?;
        }
        c.heartbeat = match t.heartbeat_s {
            Some(v) => secs("heartbeat_s", v)?,
            None => c.lease / 3,
        };
        if let Some(v) = t.poll_ms {
            c.poll = std::time::Duration::from_millis(v.max(1));
        }
        c.capacity = t.capacity;
        if let Some(v) = t.max_claims {
            c.max_claims = v.max(1);
        }
        if let Some(k) = &t.kinds {
            c.kinds = k.clone();
        }
        c.params = t.params.clone();
        Ok(c)
    }

    /// The engine's configuration.
    pub fn engine_config(&self, state_dir: &std::path::Path) -> Result<EngineConfig> {
        let mut c = EngineConfig::default();
        if let Some(n) = self.synthesis_workers {
            c.synthesis_workers = n;
        }
        if let Some(n) = self.finalizers {
            c.finalizers = n;
        }
        c.memory_budget = self.memory_budget.map(|b| b.0);
        c.params_budget = self.params_budget.map(|b| b.0);
        if let Some(n) = self.max_attempts {
            c.max_attempts = n;
        }
        if let Some(t) = self.idle_trim_s {
            c.idle_trim = match std::time::Duration::try_from_secs_f64(t) {
                Ok(d) if d.is_zero() => None,
                Ok(d) => Some(d),
                Err(_) => {
                    return Err(ServeError::Config(format!(
                        "idle_trim_s = {t} is not a number of seconds (0 turns trimming off)"
                    )))
                }
            };
        }
        if self.pce.unwrap_or(true) {
            c.pce_dir = Some(state_dir.join("pce"));
        }
        c.params_dirs = self.params_dirs(state_dir)?;
        c.params_digests = Some(state_dir.join("params-digests"));
        c.access = self.access()?;
        // `auto` is `batched` for files of unknown origin, curve checks for the published ones.
        let (check, auto) = match self.params_check.as_deref().map(str::trim) {
            None | Some("auto") => (PointCheck::Batched, true),
            Some("batched") => (PointCheck::Batched, false),
            Some("full") => (PointCheck::Full, false),
            Some("curve-only") => (PointCheck::CurveOnly, false),
            Some(other) => {
                return Err(ServeError::Config(format!(
                    "params_check = {other:?}: give auto, batched, full or curve-only"
                )))
            }
        };
        c.params_check = check;
        #[cfg(feature = "filecoin")]
        if auto {
            c.published = Some(std::sync::Arc::new(crate::filecoin::ParametersJson));
        }
        #[cfg(not(feature = "filecoin"))]
        let _ = auto; // no published list without Filecoin support: `auto` is `batched`
        if let Some(n) = self.max_partitions {
            c.limits.max_partitions = n;
        }
        if let Some(n) = self.max_active_jobs {
            c.limits.max_active_jobs = n;
        }
        if let Some(n) = self.max_log_domain {
            c.limits.max_log_domain = n;
        }
        Ok(c)
    }

    /// Opens every configured backend, one engine device per device index, plus the CPU
    /// fallback unless disabled or a device is already a fallback.
    pub fn open_devices(&self, threads: Option<usize>) -> Result<Vec<DeviceSpec>> {
        let default = [DeviceConfig {
            backend: "cpu".into(),
            ..Default::default()
        }];
        let list: &[DeviceConfig] = if self.devices.is_empty() {
            &default
        } else {
            &self.devices
        };
        let mut out = Vec::new();
        for d in list {
            let g2: G2Policy = d.g2.as_deref().unwrap_or("auto").parse()?;
            let workers = d.workers.unwrap_or(2);
            let open = |index: Option<usize>| -> Result<Arc<dyn Backend>> {
                let mut cfg = BackendConfig::default();
                cfg.threads = threads;
                for (k, v) in &d.options {
                    cfg = cfg.option(k.clone(), v.clone());
                }
                match index {
                    Some(i) => {
                        cfg.device = i;
                        cfg = cfg.option("devices", i.to_string());
                    }
                    None => cfg = cfg.option("devices", "all"),
                }
                Ok(bellows_core::registry::resolve(&d.backend, &cfg)?)
            };
            let indices: Vec<Option<usize>> = match d.devices.as_deref().map(str::trim) {
                None | Some("all") => {
                    let b = open(None)?;
                    let n = b.info().devices.len();
                    if n <= 1 {
                        out.push(spec(&d.backend, None, b, workers, g2, d.fallback));
                        continue;
                    }
                    drop(b);
                    (0..n).map(Some).collect()
                }
                Some(list) => list
                    .split(',')
                    .map(|p| {
                        p.trim().parse::<usize>().map(Some).map_err(|_| {
                            ServeError::Config(format!(
                                "device list {list:?}: {p:?} is not a device index"
                            ))
                        })
                    })
                    .collect::<Result<_>>()?,
            };
            for i in indices {
                out.push(spec(&d.backend, i, open(i)?, workers, g2, d.fallback));
            }
        }
        if self.cpu_fallback.unwrap_or(true)
            && !out.iter().any(|d| d.fallback)
            && out.iter().any(|d| d.backend.info().name != "cpu")
        {
            let mut cfg = BackendConfig::default();
            cfg.threads = threads;
            out.push(DeviceSpec {
                label: "cpu-fallback".into(),
                backend: bellows_core::registry::resolve("cpu", &cfg)?,
                workers: 1,
                g2: G2Policy::Cpu,
                fallback: true,
                memory_budget: None,
            });
        }
        let budgets: DeviceBudgets = match &self.device_memory_budget {
            Some(t) => t
                .parse()
                .map_err(|e| ServeError::Config(format!("device_memory_budget: {e}")))?,
            None => DeviceBudgets::default(),
        };
        budgets.apply(&mut out)?;
        Ok(out)
    }
}

fn spec(
    backend: &str,
    index: Option<usize>,
    b: Arc<dyn Backend>,
    workers: usize,
    g2: G2Policy,
    fallback: bool,
) -> DeviceSpec {
    let name = b.info().name;
    let _ = backend;
    DeviceSpec {
        label: match index {
            Some(i) => format!("{name}:{i}"),
            None => name,
        },
        backend: b,
        workers,
        g2,
        fallback,
        memory_budget: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses_and_unknown_keys_are_refused() {
        let c = ServeConfig::from_toml(
            r#"
            listen = "127.0.0.1:7800"
            state_dir = "/tmp/x"
            memory_budget = "64GiB"
            params_budget = 1024
            max_request_bytes = "1.5GB"
            cuzk_max_request_bytes = "512MiB"
            synthesis_workers = 4
            preload = ["/p/a.params"]
            [[device]]
            backend = "cuda"
            devices = "0,1"
            workers = 2
            options = { tier = "full" }
            [[device]]
            backend = "cpu"
            fallback = true
            "#,
        )
        .unwrap();
        assert_eq!(c.memory_budget, Some(ByteSize(64 << 30)));
        assert_eq!(c.params_budget, Some(ByteSize(1024)));
        // The workspace's one parser: GB is decimal.
        assert_eq!(c.max_request_bytes, Some(ByteSize(1_500_000_000)));
        assert_eq!(c.cuzk_max_request_bytes, Some(ByteSize(512 << 20)));
        let e = ServeConfig::from_toml("memory_budget = \"8 parsecs\"").unwrap_err();
        assert!(e.contains("unknown unit"), "{e}");
        assert_eq!(c.devices.len(), 2);
        assert_eq!(c.devices[0].options["tier"], "full");
        assert!(c.devices[1].fallback);
        let e = ServeConfig::from_toml("listen = 1\nbogus = true").unwrap_err();
        assert!(!e.is_empty());
        let e = ServeConfig::from_toml("bogus = true").unwrap_err();
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn remote_addresses_need_a_flag_and_a_token() {
        let mut c = ServeConfig::default();
        assert_eq!(c.listen_addr().unwrap().to_string(), DEFAULT_LISTEN);
        c.listen = Some("0.0.0.0:7700".into());
        assert!(c
            .listen_addr()
            .unwrap_err()
            .to_string()
            .contains("--allow-remote"));
        c.allow_remote = true;
        assert!(c.listen_addr().unwrap_err().to_string().contains("token"));
        c.token_file = Some("/nonexistent".into());
        assert!(c.listen_addr().is_ok());
        // Mutual TLS instead of a token is enough too.
        c.token_file = None;
        c.tls_client_ca = Some("/ca.pem".into());
        assert!(c.listen_addr().is_ok());
        c.listen = Some("not an address".into());
        assert!(c.listen_addr().is_err());
    }

    #[test]
    fn tls_settings_come_in_pairs() {
        let mut c = ServeConfig::default();
        assert_eq!(c.tls().unwrap(), None);
        c.tls_client_ca = Some("/ca.pem".into());
        assert!(c.tls().unwrap_err().to_string().contains("--tls-cert"));
        c.tls_cert = Some("/cert.pem".into());
        assert!(c.tls().unwrap_err().to_string().contains("--tls-key"));
        c.tls_cert = None;
        c.tls_key = Some("/key.pem".into());
        assert!(c.tls().unwrap_err().to_string().contains("--tls-cert"));
        c.tls_cert = Some("/cert.pem".into());
        let t = c.tls().unwrap().unwrap();
        assert_eq!(
            t.client_ca.as_deref(),
            Some(std::path::Path::new("/ca.pem"))
        );
        let f = ServeConfig::from_toml(
            "tls_cert = \"/cert.pem\"\ntls_key = \"/key.pem\"\ntls_client_ca = \"/ca.pem\"",
        )
        .unwrap();
        assert_eq!(f.tls().unwrap(), Some(t));
    }
}

//! The daemon's configuration: a TOML file (`bellows serve --config FILE`), overridden by flags.
//! docs/serve.md shows a complete file.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, sync::Arc};

use bellows_core::{groth16::prover::G2Policy, Backend, BackendConfig};
use serde::Deserialize;

use crate::{
    engine::{DeviceSpec, EngineConfig, FleetConfig},
    error::{Result, ServeError},
    tls::ServerTls,
};

/// The default gRPC address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7700";

/// A byte count: a number, or a string with a unit (`512MiB`, `8GiB`, `1.5GB`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "ByteSizeRepr")]
pub struct ByteSize(pub u64);

#[derive(Deserialize)]
#[serde(untagged)]
enum ByteSizeRepr {
    N(u64),
    S(String),
}

impl TryFrom<ByteSizeRepr> for ByteSize {
    type Error = String;
    fn try_from(r: ByteSizeRepr) -> std::result::Result<Self, String> {
        match r {
            ByteSizeRepr::N(n) => Ok(ByteSize(n)),
            ByteSizeRepr::S(s) => parse_bytes(&s).map(ByteSize),
        }
    }
}

/// Parses `123`, `64KiB`, `512MiB`, `8GiB`, `1TiB`, `1.5GB` (decimal units are powers of 1000).
pub fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(format!(
                "{s:?}: unknown unit {other:?} (B, KiB, MiB, GiB, TiB)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a byte size (like 8GiB)"))?;
    let bytes = v * mult as f64;
    if !(0.0..1.8e19).contains(&bytes) {
        return Err(format!("{s:?} is out of range"));
    }
    Ok(bytes as u64)
}

/// Bytes for people: `40.00 GiB`, `512.0 MiB`, `64.0 KiB`, `unlimited` for `u64::MAX`.
pub fn format_bytes(b: u64) -> String {
    match b {
        u64::MAX => "unlimited".into(),
        b if b >= 1 << 30 => format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// Per-device memory budgets (`--device-memory-budget`): `SIZE` for every device, or
/// comma-separated `DEVICE=SIZE` entries, where DEVICE is a device's label (`cuda:1`,
/// `cpu-fallback`, as `bellows status` shows them) or a bare index N for the device labelled
/// `NAME:N`, and SIZE is a byte size (`40GiB`) or `unlimited`. `24GiB,1=8GiB`: 8 GiB for device
/// 1, 24 GiB for the others.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceBudgets {
    /// For devices not named: `Some(None)` unlimited, `None` the default (unlimited too).
    pub all: Option<Option<u64>>,
    /// By device (label or index), in the order given.
    pub named: Vec<(String, Option<u64>)>,
}

impl std::str::FromStr for DeviceBudgets {
    type Err = String;
    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let size = |v: &str| -> std::result::Result<Option<u64>, String> {
            match v.trim().to_ascii_lowercase().as_str() {
                "unlimited" | "none" => Ok(None),
                _ => match parse_bytes(v)? {
                    0 => Err(format!("{v:?}: a budget of 0 bytes admits nothing")),
                    b => Ok(Some(b)),
                },
            }
        };
        let mut out = DeviceBudgets::default();
        for part in text.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(format!(
                    "{text:?}: an empty entry (SIZE, or DEVICE=SIZE like 0=40GiB,1=20GiB)"
                ));
            }
            match part.split_once('=') {
                Some((dev, v)) => {
                    let dev = dev.trim();
                    if dev.is_empty() {
                        return Err(format!("{part:?}: no device before '='"));
                    }
                    if out.named.iter().any(|(d, _)| d == dev) {
                        return Err(format!("device {dev:?} is given twice"));
                    }
                    out.named.push((dev.to_string(), size(v)?));
                }
                None => {
                    if out.all.is_some() {
                        return Err(format!("{text:?}: more than one budget for every device"));
                    }
                    out.all = Some(size(part)?);
                }
            }
        }
        Ok(out)
    }
}

impl DeviceBudgets {
    /// Assigns the budgets to `devices`: a named one, else the one for every device, else none
    /// (unlimited: the device is only counted, and a backend with memory tiers, like the CUDA
    /// backend's streaming of bases, decides for itself).
    /// A name that matches no device (or a bare index that matches several) is an error.
    pub fn apply(&self, devices: &mut [DeviceSpec]) -> Result<()> {
        let labels = || {
            devices
                .iter()
                .map(|d| d.label.clone())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut chosen: Vec<Option<Option<u64>>> = vec![None; devices.len()];
        for (name, budget) in &self.named {
            let hits: Vec<usize> = match name.parse::<usize>() {
                Ok(n) => devices
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| {
                        d.label.rsplit_once(':').map(|(_, i)| i) == Some(&n.to_string())
                    })
                    .map(|(i, _)| i)
                    .collect(),
                Err(_) => devices
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| &d.label == name)
                    .map(|(i, _)| i)
                    .collect(),
            };
            match hits.as_slice() {
                [] => {
                    return Err(ServeError::Config(format!(
                        "--device-memory-budget: no device {name:?} (devices: {})",
                        labels()
                    )))
                }
                [i] => chosen[*i] = Some(*budget),
                _ => {
                    return Err(ServeError::Config(format!(
                        "--device-memory-budget: {name:?} names several devices; use a label \
                         (devices: {})",
                        labels()
                    )))
                }
            }
        }
        for (d, c) in devices.iter_mut().zip(chosen) {
            d.memory_budget = c.or(self.all).flatten();
        }
        Ok(())
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
    /// gRPC address. Default: 127.0.0.1:7700.
    pub listen: Option<String>,
    /// Prometheus metrics address (`GET /metrics`). Default: none (no metrics server).
    pub metrics_listen: Option<String>,
    /// State directory (journal, pre-compiled constraint systems). Required (here or by flag).
    pub state_dir: Option<PathBuf>,
    /// Accept a non-loopback `listen` address (then a token is required). Default: false.
    #[serde(default)]
    pub allow_remote: bool,
    /// File holding the bearer token clients must send. Default: none (no token on loopback).
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
    pub memory_budget: Option<ByteSize>,
    /// Per-device memory budgets (see [`DeviceBudgets`]): `"0=40GiB,1=20GiB"`, `"24GiB"`.
    /// Default: unlimited (counted only; the backend's own tiers decide).
    pub device_memory_budget: Option<String>,
    /// Bytes of decoded parameters kept resident. Default: a quarter of the free memory.
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
    /// Accept only parameters files under these directories. Default: any.
    #[serde(default)]
    pub params_dirs: Vec<PathBuf>,
    /// Largest gRPC message accepted. Default: 4 MiB.
    pub max_request_bytes: Option<ByteSize>,
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

    /// The gRPC address, checked: a non-loopback address needs `allow_remote` and a way to
    /// tell clients apart — a token file, or mutual TLS (`tls_client_ca`), or both.
    pub fn listen_addr(&self) -> Result<SocketAddr> {
        let text = self.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
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

    /// The token clients must present, read from `token_file` (surrounding white space
    /// removed; at least 16 characters).
    pub fn token(&self) -> Result<Option<String>> {
        let Some(p) = &self.token_file else {
            return Ok(None);
        };
        let t = std::fs::read_to_string(p)
            .map_err(|e| ServeError::io(format!("reading token file {}", p.display()), e))?;
        let t = t.trim().to_string();
        if t.len() < 16 {
            return Err(ServeError::Config(format!(
                "the token in {} is shorter than 16 characters",
                p.display()
            )));
        }
        Ok(Some(t))
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
        c.params_dirs = self
            .params_dirs
            .iter()
            .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()))
            .collect();
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
    fn byte_sizes_parse() {
        assert_eq!(parse_bytes("123").unwrap(), 123);
        assert_eq!(parse_bytes("8GiB").unwrap(), 8 << 30);
        assert_eq!(parse_bytes("512 MiB").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("1.5GB").unwrap(), 1_500_000_000);
        assert!(parse_bytes("8 parsecs").is_err());
        assert!(parse_bytes("lots").is_err());
    }

    #[test]
    fn a_full_file_parses_and_unknown_keys_are_refused() {
        let c = ServeConfig::from_toml(
            r#"
            listen = "127.0.0.1:7800"
            state_dir = "/tmp/x"
            memory_budget = "64GiB"
            params_budget = 1024
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
    fn device_budgets_parse_and_apply_by_label_or_index() {
        let b: DeviceBudgets = "24GiB, 1=8GiB, cpu-fallback=unlimited".parse().unwrap();
        assert_eq!(b.all, Some(Some(24 << 30)));
        assert_eq!(
            b.named,
            vec![("1".into(), Some(8 << 30)), ("cpu-fallback".into(), None)]
        );
        for bad in [
            "",
            "0=",
            "=1GiB",
            "0=0",
            "1GiB,2GiB",
            "0=1GiB,0=2GiB",
            "0=lots",
        ] {
            assert!(bad.parse::<DeviceBudgets>().is_err(), "{bad:?} accepted");
        }
        let cpu: Arc<dyn Backend> = Arc::new(bellows_cpu::CpuBackend::new());
        let dev = || spec("cpu", None, cpu.clone(), 1, G2Policy::Cpu, false);
        let mut devs = vec![dev(), dev(), dev()];
        devs[0].label = "gpu:0".into();
        devs[1].label = "gpu:1".into();
        devs[2].label = "cpu-fallback".into();
        b.apply(&mut devs).unwrap();
        let got: Vec<_> = devs.iter().map(|d| d.memory_budget).collect();
        assert_eq!(got, vec![Some(24 << 30), Some(8 << 30), None]);
        // Without an entry for every device, the CPU (not an accelerator) is unlimited.
        "gpu:0=1GiB"
            .parse::<DeviceBudgets>()
            .unwrap()
            .apply(&mut devs)
            .unwrap();
        let got: Vec<_> = devs.iter().map(|d| d.memory_budget).collect();
        assert_eq!(got, vec![Some(1 << 30), None, None]);
        let e = "7=1GiB"
            .parse::<DeviceBudgets>()
            .unwrap()
            .apply(&mut devs)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no device \"7\"") && e.contains("gpu:1"), "{e}");
        devs[2].label = "other:1".into();
        let e = "1=1GiB"
            .parse::<DeviceBudgets>()
            .unwrap()
            .apply(&mut devs)
            .unwrap_err()
            .to_string();
        assert!(e.contains("several devices"), "{e}");
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

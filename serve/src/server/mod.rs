//! The daemon: its start (one per state directory, sockets bound before the journal is
//! touched), the gRPC service over the engine ([`service`]), who a request comes from
//! ([`auth`]), and the HTTP endpoint for metrics and health checks ([`http`]).

mod auth;
mod http;
mod listen;
mod lock;
mod service;

use std::{sync::Arc, time::Duration};

use crate::{
    config::{Listen, ServeConfig, StoreKind},
    cuzk::CuzkService,
    engine::Engine,
    error::{Result, ServeError},
    metrics::Metrics,
    proto::{cuzk::v1::proving_engine_server::ProvingEngineServer, prover_server::ProverServer},
    store::{JobStore, PgStore, SqliteStore},
};
use listen::Listener;

/// The largest request either API takes when its setting (`max_request_bytes`,
/// `cuzk_max_request_bytes`) is not set: Curio's own client sends up to 256 MiB, and a sector's
/// C1 output is about 50 MB at 32 GiB and 100 MB at 64 GiB, so a smaller default refuses the
/// real job. The cuzk API has its own setting, so that a small `max_request_bytes` for the
/// Bellows API does not refuse Curio's sectors.
const DEFAULT_MAX_REQUEST: usize = 256 << 20;

pub use auth::{caller, identify, Auth, Tokens};
pub use http::Readiness;
pub use lock::StateLock;
pub(crate) use service::blocking;
pub use service::ProverService;

/// A daemon ready to serve: its state directory held, its sockets bound, the engine started
/// and its journal recovered.
pub struct Daemon {
    engine: Arc<Engine>,
    listener: Listener,
    /// The cuzk API's listeners (`--cuzk`).
    cuzk: Vec<Listener>,
    metrics_addr: Option<std::net::SocketAddr>,
    auth: Auth,
    tls: Option<tonic::transport::ServerTlsConfig>,
    max_request: usize,
    cuzk_max_request: usize,
    result_ttl: u64,
    fetched_ttl: u64,
    _lock: StateLock,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon").finish_non_exhaustive()
    }
}

impl Daemon {
    /// Checks the configuration, takes the state directory (one daemon per directory), binds
    /// the sockets, and only then opens the journal, starts the engine on the configured
    /// devices, resumes unfinished jobs and preloads parameters: a daemon that cannot serve
    /// touches no job. Call inside a tokio runtime.
    pub async fn start(cfg: &ServeConfig, threads: Option<usize>) -> Result<Self> {
        let listen = cfg.listen_target()?;
        let cuzk_at = cfg.cuzk_targets()?;
        let socket_mode = cfg.socket_mode()?;
        let metrics_addr = cfg.metrics_addr()?;
        let tokens = cfg.tokens()?;
        // The TLS files are read and checked before anything else starts.
        let tls = match cfg.tls()? {
            Some(t) => {
                let c = t.load()?;
                tracing::info!(
                    "TLS with {}{}",
                    t.cert.display(),
                    t.client_ca
                        .as_ref()
                        .map(|ca| format!(
                            "; mutual TLS: clients need a certificate signed by {}",
                            ca.display()
                        ))
                        .unwrap_or_default()
                );
                Some(c)
            }
            None => None,
        };
        for at in std::iter::once(&listen).chain(&cuzk_at) {
            let Listen::Tcp(addr) = at else { continue };
            if tls.is_none() && tokens.is_some() && !addr.ip().is_loopback() {
                tracing::warn!(
                    "listening on {addr} without TLS: the token crosses the network in plain \
                     text (give --tls-cert and --tls-key, or keep the network private)"
                );
            }
        }
        let state = cfg.state_dir()?;
        let lock = StateLock::take(&state)?;
        let listener = Listener::bind(&listen, socket_mode).await?;
        let mut cuzk = Vec::with_capacity(cuzk_at.len());
        for at in &cuzk_at {
            cuzk.push(Listener::bind(at, socket_mode).await?);
        }
        let metrics = Arc::new(Metrics::new());
        let ready = Arc::new(Readiness::default());
        let metrics_addr = match metrics_addr {
            Some(a) => {
                let l = tokio::net::TcpListener::bind(a)
                    .await
                    .map_err(|e| ServeError::io(format!("listening on {a}"), e))?;
                let bound = l.local_addr().ok();
                let app = http::router(metrics.clone(), ready.clone());
                tokio::spawn(async move {
                    if let Err(e) = axum::serve(l, app).await {
                        tracing::error!("metrics server: {e}");
                    }
                });
                bound
            }
            None => None,
        };
        let mut engine_cfg = cfg.engine_config(&state)?;
        let store: Arc<dyn JobStore> = match cfg.store_kind()? {
            StoreKind::Sqlite => {
                if cfg.fleet != crate::config::FleetTable::default() {
                    tracing::warn!(
                        "the [fleet] settings apply only with a PostgreSQL store (--store \
                         postgres://…); this daemon runs on its own"
                    );
                }
                Arc::new(SqliteStore::open(&state.join("jobs.sqlite"))?)
            }
            StoreKind::Postgres(url) => {
                // A fleet node (engine/fleet.rs). The blocking client stays off async threads.
                let password = cfg.store_password()?;
                let store = tokio::task::spawn_blocking(move || {
                    PgStore::connect(&url, password.as_deref())
                })
                .await
                .map_err(|e| ServeError::Store(format!("connecting: {e}")))??;
                tracing::info!("job store: PostgreSQL at {} (fleet mode)", store.target());
                engine_cfg.fleet = Some(cfg.fleet_config(&listener.local()?)?);
                Arc::new(store)
            }
        };
        let devices = cfg.open_devices(threads)?;
        for d in &devices {
            let i = d.backend.info();
            tracing::info!(
                "device {}: {} {} ({}), {} worker(s){}",
                d.label,
                i.name,
                i.version,
                i.capabilities.summary(),
                d.workers,
                if d.fallback { ", fallback" } else { "" }
            );
        }
        let engine = Arc::new(Engine::start(engine_cfg, devices, store, metrics)?);
        let resumed = {
            let e = engine.clone();
            tokio::task::spawn_blocking(move || e.recover())
                .await
                .map_err(|e| ServeError::Store(format!("recovering: {e}")))??
        };
        if resumed > 0 {
            tracing::info!("{resumed} unfinished job(s) resumed from the journal");
        }
        for p in &cfg.preload {
            let e = engine.clone();
            let p2 = p.clone();
            let entry = tokio::task::spawn_blocking(move || e.preload(&p2, false, None))
                .await
                .map_err(|e| ServeError::Config(format!("preloading: {e}")))??;
            tracing::info!(
                "preloaded {} ({})",
                p.display(),
                &crate::params::hex(&entry.digest)[..16]
            );
        }
        ready.set(engine.clone());
        Ok(Self {
            engine,
            listener,
            cuzk,
            metrics_addr,
            auth: Auth::new(tokens),
            tls,
            max_request: cfg
                .max_request_bytes
                .map_or(DEFAULT_MAX_REQUEST, |b| b.0 as usize),
            cuzk_max_request: cfg
                .cuzk_max_request_bytes
                .map_or(DEFAULT_MAX_REQUEST, |b| b.0 as usize),
            result_ttl: cfg.result_ttl_s.unwrap_or(7 * 24 * 3600),
            fetched_ttl: cfg.fetched_ttl_s.unwrap_or(3600),
            _lock: lock,
        })
    }

    /// Where the gRPC service listens: `IP:PORT` (the real port when 0 was asked for) or
    /// `unix:PATH`.
    pub fn local_addr(&self) -> Result<String> {
        self.listener.local()
    }

    /// Where the cuzk API listens, in the order configured (`IP:PORT` or `unix:PATH`).
    pub fn cuzk_addrs(&self) -> Result<Vec<String>> {
        self.cuzk.iter().map(Listener::local).collect()
    }

    /// The metrics address bound, if any.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics_addr
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Serves until `shutdown` completes, then stops the engine (queued work stays journaled).
    /// Every listener serves with the same interceptor ([`Auth`]), so a request has the same
    /// identity whichever API it uses; a unix socket of the cuzk API takes requests without a
    /// token too (Curio's client sends none; the socket's permissions decide who connects).
    pub async fn serve(self, shutdown: impl std::future::Future<Output = ()> + Send) -> Result<()> {
        let engine = self.engine.clone();
        let tls_error = |e: tonic::transport::Error| {
            ServeError::Config(format!("TLS: {}", crate::tls::error_chain(&e)))
        };
        tokio::spawn(maintain(engine.clone(), self.result_ttl, self.fetched_ttl));
        // One shutdown for every listener.
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let until_stopped = move || {
            let mut rx = stopped.clone();
            async move {
                let _ = rx.wait_for(|s| *s).await;
            }
        };
        let mut servers = tokio::task::JoinSet::new();
        let mut builder = tonic::transport::Server::builder();
        if let Some(tls) = self.tls.clone() {
            // Checked by `start` already (ServerTls::load).
            builder = builder.tls_config(tls).map_err(tls_error)?;
        }
        let svc = ProverServer::new(ProverService::new(engine.clone()))
            .max_decoding_message_size(self.max_request)
            .max_encoding_message_size(usize::MAX);
        let router = builder.add_service(tonic::service::interceptor::InterceptedService::new(
            svc,
            self.auth.clone(),
        ));
        servers.spawn(self.listener.serve(router, until_stopped()));
        for l in self.cuzk {
            let mut builder = tonic::transport::Server::builder();
            let auth = if l.is_unix() {
                self.auth.token_optional()
            } else {
                if let Some(tls) = self.tls.clone() {
                    builder = builder.tls_config(tls).map_err(tls_error)?;
                }
                self.auth.clone()
            };
            let svc = ProvingEngineServer::new(CuzkService::new(engine.clone()))
                .max_decoding_message_size(self.cuzk_max_request)
                .max_encoding_message_size(usize::MAX);
            let router = builder.add_service(tonic::service::interceptor::InterceptedService::new(
                svc, auth,
            ));
            servers.spawn(l.serve(router, until_stopped()));
        }
        // A listener that ends on its own (an error) stops the daemon too.
        type Ended = std::result::Result<
            std::result::Result<(), tonic::transport::Error>,
            tokio::task::JoinError,
        >;
        let why = |r: Ended| match r {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(crate::tls::error_chain(&e)),
            Err(e) => Some(e.to_string()),
        };
        let mut failed = None;
        tokio::select! {
            _ = shutdown => {}
            Some(r) = servers.join_next() => failed = why(r),
        }
        let _ = stop.send(true);
        while let Some(r) = servers.join_next().await {
            failed = failed.or(why(r));
        }
        let e = engine.clone();
        let _ = tokio::task::spawn_blocking(move || e.shutdown()).await;
        match failed {
            Some(e) => Err(ServeError::Rpc(format!("gRPC server: {e}"))),
            None => Ok(()),
        }
    }
}

/// The daemon's timers: the gauges that come from the store (jobs and partitions waiting,
/// fleet-wide in a fleet) and ends the journal could not take yet, every few seconds; expired
/// results purged once a minute.
async fn maintain(engine: Arc<Engine>, result_ttl: u64, fetched_ttl: u64) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    let mut n: u64 = 0;
    loop {
        tick.tick().await;
        let e = engine.clone();
        let purge = n.is_multiple_of(12);
        n += 1;
        let _ = tokio::task::spawn_blocking(move || {
            e.retry_journal();
            e.update_store_gauges();
            if purge {
                let now = crate::engine::unix_now();
                match e.store().purge(
                    now.saturating_sub(fetched_ttl),
                    now.saturating_sub(result_ttl),
                ) {
                    Ok(0) => {}
                    Ok(n) => tracing::info!("purged {n} expired job(s)"),
                    Err(err) => tracing::warn!("purging expired jobs: {err}"),
                }
            }
        })
        .await;
    }
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        _ = term => {},
    }
    tracing::info!("shutting down: partitions in flight finish, queued work stays journaled");
}

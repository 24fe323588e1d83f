//! The gRPC service over the engine, the metrics endpoint, and the daemon's main loop.

use std::{net::SocketAddr, pin::Pin, sync::Arc, time::Duration};

use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::{wrappers::ReceiverStream, Stream};
use tonic::{Request, Response, Status};

use crate::{
    config::{ServeConfig, StoreKind},
    engine::{state_to_proto, Engine, JobSnapshot, JobWatch},
    error::{Result, ServeError},
    metrics::Metrics,
    proto::{
        self,
        prover_server::{Prover, ProverServer},
    },
    store::{JobId, JobState, JobStore, PgStore, SqliteStore},
};

/// Runs a blocking engine call off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Status::internal(format!("worker task failed: {e}")))?
        .map_err(Status::from)
}

/// The final event of a finished job, from the store; marks its results fetched.
pub fn final_event(engine: &Engine, id: JobId) -> Result<proto::JobEvent> {
    let store = engine.store();
    let rec = store.job(id)?.ok_or(ServeError::NoSuchJob(id))?;
    let outputs = proto::SubmitRequest::decode(&rec.request[..])
        .ok()
        .and_then(|r| r.outputs);
    let parts = store.partitions(id)?;
    let mut ev = proto::JobEvent {
        job_id: id,
        state: state_to_proto(rec.state) as i32,
        partitions_done: parts.len() as u32,
        partitions_total: rec.partitions,
        results: Vec::new(),
        error: rec.error.clone().unwrap_or_default(),
        outputs,
    };
    if rec.state == JobState::Done {
        ev.results = parts
            .into_iter()
            .map(|p| proto::PartitionResult {
                proof: p.proof,
                public_inputs: p.inputs.chunks(32).map(<[u8]>::to_vec).collect(),
                timings: proto::PartitionTimings::decode(&p.timings[..]).ok(),
            })
            .collect();
    }
    if rec.state.is_finished() {
        store.mark_fetched(id, crate::engine::unix_now())?;
    }
    Ok(ev)
}

fn progress_event(s: &JobSnapshot) -> proto::JobEvent {
    proto::JobEvent {
        job_id: s.id,
        state: state_to_proto(s.state) as i32,
        partitions_done: s.done,
        partitions_total: s.total,
        error: s.error.clone().unwrap_or_default(),
        ..Default::default()
    }
}

/// The gRPC service.
#[derive(Clone, Debug)]
pub struct ProverService {
    engine: Arc<Engine>,
}

type EventStream = Pin<Box<dyn Stream<Item = Result<proto::JobEvent, Status>> + Send>>;

impl ProverService {
    /// A service over `engine`.
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }

    /// Streams job `id`'s progress (unless `final_only`) and then its final event.
    async fn follow(&self, id: JobId, final_only: bool) -> Result<EventStream, Status> {
        let engine = self.engine.clone();
        let watch = blocking({
            let e = engine.clone();
            move || e.watch(id)
        })
        .await?;
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            if let JobWatch::Live(mut w) = watch {
                loop {
                    let snap = w.borrow_and_update().clone();
                    if snap.state.is_finished() {
                        break;
                    }
                    if !final_only && tx.send(Ok(progress_event(&snap))).await.is_err() {
                        return; // the client went away; the job goes on
                    }
                    if w.changed().await.is_err() {
                        break; // the job finished and left the engine
                    }
                }
            }
            let ev = blocking(move || final_event(&engine, id)).await;
            let _ = tx.send(ev).await;
        });
        Ok(Box::pin(ReceiverStream::new(rx)))
    }
}

#[tonic::async_trait]
impl Prover for ProverService {
    async fn submit(
        &self,
        req: Request<proto::SubmitRequest>,
    ) -> Result<Response<proto::SubmitReply>, Status> {
        let req = req.into_inner();
        let e = self.engine.clone();
        let id = blocking(move || e.submit(&req)).await.inspect_err(|_| {
            self.engine.metrics().error("request");
        })?;
        Ok(Response::new(proto::SubmitReply { job_id: id }))
    }

    type AwaitStream = EventStream;

    async fn r#await(
        &self,
        req: Request<proto::AwaitRequest>,
    ) -> Result<Response<Self::AwaitStream>, Status> {
        let r = req.into_inner();
        Ok(Response::new(self.follow(r.job_id, r.final_only).await?))
    }

    type ProveStream = EventStream;

    async fn prove(
        &self,
        req: Request<proto::SubmitRequest>,
    ) -> Result<Response<Self::ProveStream>, Status> {
        let req = req.into_inner();
        let e = self.engine.clone();
        let id = blocking(move || e.submit(&req)).await.inspect_err(|_| {
            self.engine.metrics().error("request");
        })?;
        Ok(Response::new(self.follow(id, false).await?))
    }

    async fn status(
        &self,
        req: Request<proto::StatusRequest>,
    ) -> Result<Response<proto::StatusReply>, Status> {
        let n = match req.into_inner().max_jobs {
            0 => 100,
            n => n.min(10_000) as usize,
        };
        let e = self.engine.clone();
        Ok(Response::new(blocking(move || e.status(n)).await?))
    }

    async fn cancel(
        &self,
        req: Request<proto::CancelRequest>,
    ) -> Result<Response<proto::CancelReply>, Status> {
        let id = req.into_inner().job_id;
        let e = self.engine.clone();
        let state = blocking(move || e.cancel(id)).await?;
        Ok(Response::new(proto::CancelReply {
            state: state_to_proto(state) as i32,
        }))
    }

    async fn preload_params(
        &self,
        req: Request<proto::PreloadParamsRequest>,
    ) -> Result<Response<proto::ParamsReply>, Status> {
        let r = req.into_inner();
        let e = self.engine.clone();
        let params = blocking(move || {
            e.preload(std::path::Path::new(&r.path), r.skip_subgroup_checks)?;
            Ok(e.params_status())
        })
        .await?;
        Ok(Response::new(proto::ParamsReply { params }))
    }

    async fn evict_params(
        &self,
        req: Request<proto::EvictParamsRequest>,
    ) -> Result<Response<proto::ParamsReply>, Status> {
        let r = req.into_inner();
        let e = self.engine.clone();
        let params = blocking(move || {
            let digest: [u8; 32] = if !r.digest.is_empty() {
                r.digest[..].try_into().map_err(|_| {
                    ServeError::invalid(format!(
                        "digest of {} bytes; a SHA-256 digest has 32",
                        r.digest.len()
                    ))
                })?
            } else if !r.path.is_empty() {
                e.params()
                    .digest_of_path(std::path::Path::new(&r.path))
                    .ok_or_else(|| {
                        ServeError::invalid(format!("no parameters loaded from {}", r.path))
                    })?
            } else {
                return Err(ServeError::invalid("give a digest or a path"));
            };
            if !e.evict(&digest) {
                return Err(ServeError::invalid(format!(
                    "no parameters with digest {}",
                    crate::params::hex(&digest)
                )));
            }
            Ok(e.params_status())
        })
        .await?;
        Ok(Response::new(proto::ParamsReply { params }))
    }

    async fn backends(
        &self,
        _req: Request<proto::BackendsRequest>,
    ) -> Result<Response<proto::BackendsReply>, Status> {
        Ok(Response::new(proto::BackendsReply {
            devices: self.engine.devices(),
            capabilities: self.engine.capabilities(),
        }))
    }
}

/// Compares two byte strings in time independent of where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The interceptor that requires `authorization: Bearer TOKEN` when the daemon has a token.
#[derive(Clone, Debug)]
pub struct Auth {
    token: Option<Arc<String>>,
}

impl Auth {
    /// Requires `token` (none: every request passes).
    pub fn new(token: Option<String>) -> Self {
        Self {
            token: token.map(Arc::new),
        }
    }
}

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        let Some(token) = &self.token else {
            return Ok(req);
        };
        let given = req
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match given {
            Some(g) if same_secret(g.as_bytes(), token.as_bytes()) => Ok(req),
            Some(_) => Err(Status::unauthenticated("wrong token")),
            None => Err(Status::unauthenticated(
                "this daemon requires a token (authorization: Bearer TOKEN; the client's \
                 --token-file or BELLOWS_TOKEN)",
            )),
        }
    }
}

/// A daemon ready to serve: the engine started and recovered, the sockets bound.
pub struct Daemon {
    engine: Arc<Engine>,
    listener: tokio::net::TcpListener,
    metrics_listener: Option<tokio::net::TcpListener>,
    auth: Auth,
    tls: Option<tonic::transport::ServerTlsConfig>,
    max_request: usize,
    result_ttl: u64,
    fetched_ttl: u64,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon").finish_non_exhaustive()
    }
}

impl Daemon {
    /// Opens the journal, starts the engine on the configured devices, resumes unfinished jobs,
    /// preloads parameters and binds the sockets. Call inside a tokio runtime.
    pub async fn start(cfg: &ServeConfig, threads: Option<usize>) -> Result<Self> {
        let addr = cfg.listen_addr()?;
        let metrics_addr = cfg.metrics_addr()?;
        let token = cfg.token()?;
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
        if tls.is_none() && token.is_some() && !addr.ip().is_loopback() {
            tracing::warn!(
                "listening on {addr} without TLS: the token crosses the network in plain text \
                 (give --tls-cert and --tls-key, or keep the network private)"
            );
        }
        let state = cfg.state_dir()?;
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
                engine_cfg.fleet = Some(cfg.fleet_config(&addr.to_string())?);
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
        let engine = Arc::new(Engine::start(
            engine_cfg,
            devices,
            store,
            Arc::new(Metrics::new()),
        )?);
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
            let entry = tokio::task::spawn_blocking(move || e.preload(&p2, false))
                .await
                .map_err(|e| ServeError::Config(format!("preloading: {e}")))??;
            tracing::info!(
                "preloaded {} ({})",
                p.display(),
                &crate::params::hex(&entry.digest)[..16]
            );
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| ServeError::io(format!("listening on {addr}"), e))?;
        let metrics_listener = match metrics_addr {
            Some(a) => Some(
                tokio::net::TcpListener::bind(a)
                    .await
                    .map_err(|e| ServeError::io(format!("listening on {a}"), e))?,
            ),
            None => None,
        };
        Ok(Self {
            engine,
            listener,
            metrics_listener,
            auth: Auth::new(token),
            tls,
            max_request: cfg.max_request_bytes.map_or(4 << 20, |b| b.0 as usize),
            result_ttl: cfg.result_ttl_s.unwrap_or(7 * 24 * 3600),
            fetched_ttl: cfg.fetched_ttl_s.unwrap_or(3600),
        })
    }

    /// The gRPC address bound (the real port when 0 was asked for).
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener
            .local_addr()
            .map_err(|e| ServeError::io("reading the bound address", e))
    }

    /// The metrics address bound, if any.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Serves until `shutdown` completes, then stops the engine (queued work stays journaled).
    pub async fn serve(self, shutdown: impl std::future::Future<Output = ()> + Send) -> Result<()> {
        let engine = self.engine.clone();
        let mut builder = tonic::transport::Server::builder();
        if let Some(tls) = self.tls {
            // Checked by `start` already (ServerTls::load).
            builder = builder
                .tls_config(tls)
                .map_err(|e| ServeError::Config(format!("TLS: {}", crate::tls::error_chain(&e))))?;
        }
        if let Some(l) = self.metrics_listener {
            let m = engine.metrics().clone();
            let app = axum::Router::new().route(
                "/metrics",
                axum::routing::get(move || {
                    let m = m.clone();
                    async move {
                        (
                            [(
                                axum::http::header::CONTENT_TYPE,
                                "text/plain; version=0.0.4",
                            )],
                            m.render(),
                        )
                    }
                }),
            );
            tokio::spawn(async move {
                if let Err(e) = axum::serve(l, app).await {
                    tracing::error!("metrics server: {e}");
                }
            });
        }
        // Expired results are purged once a minute.
        let purge_engine = engine.clone();
        let (result_ttl, fetched_ttl) = (self.result_ttl, self.fetched_ttl);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            loop {
                tick.tick().await;
                let e = purge_engine.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    let now = crate::engine::unix_now();
                    match e.store().purge(
                        now.saturating_sub(fetched_ttl),
                        now.saturating_sub(result_ttl),
                    ) {
                        Ok(0) => {}
                        Ok(n) => tracing::info!("purged {n} expired job(s)"),
                        Err(err) => tracing::warn!("purging expired jobs: {err}"),
                    }
                })
                .await;
            }
        });
        let svc = ProverServer::new(ProverService::new(engine.clone()))
            .max_decoding_message_size(self.max_request)
            .max_encoding_message_size(usize::MAX);
        let svc = tonic::service::interceptor::InterceptedService::new(svc, self.auth);
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(self.listener);
        let r = builder
            .add_service(svc)
            .serve_with_incoming_shutdown(incoming, shutdown)
            .await;
        let e = engine.clone();
        let _ = tokio::task::spawn_blocking(move || e.shutdown()).await;
        r.map_err(|e| ServeError::Rpc(format!("gRPC server: {}", crate::tls::error_chain(&e))))
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

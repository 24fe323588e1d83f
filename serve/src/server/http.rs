//! The daemon's HTTP endpoint (`metrics_listen`): Prometheus metrics and the health checks an
//! orchestrator polls.
//!
//! - `GET /metrics`: every metric, in the Prometheus text format.
//! - `GET /healthz`: 200 while the process serves HTTP at all (a liveness probe).
//! - `GET /readyz`: 200 once the journal is recovered and the store answers; 503 with the
//!   reason before (recovering) and while the store is unreachable (a readiness probe: take the
//!   node out of a load balancer, do not restart it).

use std::sync::{Arc, OnceLock};

use axum::{http::StatusCode, routing::get, Router};

use crate::{engine::Engine, metrics::Metrics};

/// Set once the daemon is ready to take jobs.
#[derive(Debug, Default)]
pub struct Readiness {
    engine: OnceLock<Arc<Engine>>,
}

impl Readiness {
    /// Marks the daemon ready, with the engine whose store `/readyz` asks.
    pub fn set(&self, engine: Arc<Engine>) {
        let _ = self.engine.set(engine);
    }

    async fn check(&self) -> (StatusCode, String) {
        let Some(e) = self.engine.get().cloned() else {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                "starting: recovering the journal\n".into(),
            );
        };
        match tokio::task::spawn_blocking(move || e.store().counts()).await {
            Ok(Ok(_)) => (StatusCode::OK, "ready\n".into()),
            Ok(Err(err)) => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the job store is unavailable: {err}\n"),
            ),
            Err(err) => (StatusCode::SERVICE_UNAVAILABLE, format!("{err}\n")),
        }
    }
}

/// The routes.
pub fn router(metrics: Arc<Metrics>, ready: Arc<Readiness>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let m = metrics.clone();
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
        )
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/readyz",
            get(move || {
                let r = ready.clone();
                async move { r.check().await }
            }),
        )
}

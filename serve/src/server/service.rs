//! The gRPC service `bellows.v1.Prover` over the engine: each call takes the caller's identity
//! from the request ([`super::auth::caller`]) and hands it to the engine, which decides what
//! the caller may see and do.

use std::{pin::Pin, sync::Arc};

use tokio::sync::mpsc;
use tokio_stream::{wrappers::ReceiverStream, Stream};
use tonic::{Request, Response, Status};

use super::auth::caller;
use crate::{
    engine::{state_to_proto, Engine, JobSnapshot, JobWatch},
    error::{Result, ServeError},
    identity::Identity,
    proto::{self, prover_server::Prover},
    store::JobId,
};

/// Runs a blocking engine call off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Status::internal(format!("worker task failed: {e}")))?
        .map_err(Status::from)
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

/// How a job is followed.
struct Follow {
    final_only: bool,
    mark_fetched: bool,
}

impl ProverService {
    /// A service over `engine`.
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }

    /// Streams job `id`'s progress (unless `final_only`) and then its final event.
    async fn follow(&self, id: JobId, how: Follow, who: Identity) -> Result<EventStream, Status> {
        let engine = self.engine.clone();
        let watch = blocking({
            let (e, who) = (engine.clone(), who.clone());
            move || e.watch(id, &who)
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
                    if !how.final_only && tx.send(Ok(progress_event(&snap))).await.is_err() {
                        return; // the client went away; the job goes on
                    }
                    if w.changed().await.is_err() {
                        break; // the job finished and left the engine
                    }
                }
            }
            let ev = blocking(move || engine.final_event(id, &who, how.mark_fetched)).await;
            let _ = tx.send(ev).await;
        });
        Ok(Box::pin(ReceiverStream::new(rx)))
    }

    async fn submit_as(&self, req: proto::SubmitRequest, who: &Identity) -> Result<JobId, Status> {
        let (e, who) = (self.engine.clone(), who.clone());
        blocking(move || e.submit(&req, &who))
            .await
            .inspect_err(|_| self.engine.metrics().error("request"))
    }
}

#[tonic::async_trait]
impl Prover for ProverService {
    async fn submit(
        &self,
        req: Request<proto::SubmitRequest>,
    ) -> Result<Response<proto::SubmitReply>, Status> {
        let who = caller(&req)?;
        let id = self.submit_as(req.into_inner(), &who).await?;
        Ok(Response::new(proto::SubmitReply { job_id: id }))
    }

    type AwaitStream = EventStream;

    async fn r#await(
        &self,
        req: Request<proto::AwaitRequest>,
    ) -> Result<Response<Self::AwaitStream>, Status> {
        let who = caller(&req)?;
        let r = req.into_inner();
        let how = Follow {
            final_only: r.final_only,
            mark_fetched: !r.keep_unfetched,
        };
        Ok(Response::new(self.follow(r.job_id, how, who).await?))
    }

    type ProveStream = EventStream;

    async fn prove(
        &self,
        req: Request<proto::SubmitRequest>,
    ) -> Result<Response<Self::ProveStream>, Status> {
        let who = caller(&req)?;
        let id = self.submit_as(req.into_inner(), &who).await?;
        let how = Follow {
            final_only: false,
            mark_fetched: true,
        };
        Ok(Response::new(self.follow(id, how, who).await?))
    }

    async fn status(
        &self,
        req: Request<proto::StatusRequest>,
    ) -> Result<Response<proto::StatusReply>, Status> {
        let who = caller(&req)?;
        let n = match req.into_inner().max_jobs {
            0 => 100,
            n => n.min(10_000) as usize,
        };
        let e = self.engine.clone();
        Ok(Response::new(blocking(move || e.status(n, &who)).await?))
    }

    async fn cancel(
        &self,
        req: Request<proto::CancelRequest>,
    ) -> Result<Response<proto::CancelReply>, Status> {
        let who = caller(&req)?;
        let id = req.into_inner().job_id;
        let e = self.engine.clone();
        let state = blocking(move || e.cancel(id, &who)).await?;
        Ok(Response::new(proto::CancelReply {
            state: state_to_proto(state) as i32,
        }))
    }

    async fn preload_params(
        &self,
        req: Request<proto::PreloadParamsRequest>,
    ) -> Result<Response<proto::ParamsReply>, Status> {
        let who = caller(&req)?;
        let r = req.into_inner();
        let e = self.engine.clone();
        let params = blocking(move || {
            e.preload(
                std::path::Path::new(&r.path),
                r.skip_subgroup_checks,
                Some(&who),
            )?;
            Ok(e.params_status())
        })
        .await?;
        Ok(Response::new(proto::ParamsReply { params }))
    }

    async fn evict_params(
        &self,
        req: Request<proto::EvictParamsRequest>,
    ) -> Result<Response<proto::ParamsReply>, Status> {
        let who = caller(&req)?;
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
            if !e.evict(&digest, Some(&who))? {
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

    async fn fetched(
        &self,
        req: Request<proto::FetchedRequest>,
    ) -> Result<Response<proto::FetchedReply>, Status> {
        let who = caller(&req)?;
        let id = req.into_inner().job_id;
        let e = self.engine.clone();
        blocking(move || e.fetched(id, &who)).await?;
        Ok(Response::new(proto::FetchedReply {}))
    }
}

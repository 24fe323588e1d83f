//! The gRPC service `cuzk.v1.ProvingEngine` over the engine. Each call takes the caller's
//! identity from the request (the daemon's one interceptor, [`crate::server::caller`]) and
//! hands it to the engine, which applies the same ownership rules as to the Bellows API: a job
//! is its submitter's, and an admin's.

use std::{sync::Arc, time::Duration};

use tonic::{Request, Response, Status};

use super::status;
use crate::{
    engine::{Engine, JobWatch, Submitted},
    identity::Identity,
    proto::{self, cuzk::v1 as pb, submit_request::Kind},
    server::{blocking, caller},
    store::{JobId, JobState},
};

use pb::await_proof_response::Status as Outcome;

/// The cuzk API's service.
#[derive(Clone, Debug)]
pub struct CuzkService {
    engine: Arc<Engine>,
}

impl CuzkService {
    /// A service over `engine`.
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }

    /// Journals `req` as `who`'s job (or finds the job its idempotency key already made);
    /// returns it and the number of jobs ahead of it.
    async fn submit(
        &self,
        req: pb::SubmitProofRequest,
        who: &Identity,
    ) -> Result<(Submitted, u32), Status> {
        let submit = proto::SubmitRequest {
            kind: Some(Kind::Filecoin(req)),
            ..Default::default()
        };
        let (e, who) = (self.engine.clone(), who.clone());
        blocking(move || {
            let s = e.submit_keyed(&submit, &who)?;
            Ok((s, e.jobs_ahead(s.id)))
        })
        .await
        .inspect_err(|_| self.engine.metrics().error("request"))
    }

    /// The job `job_id` names for `who` (its request_id, or its number).
    async fn resolve(&self, job_id: String, who: &Identity) -> Result<JobId, Status> {
        let (e, who) = (self.engine.clone(), who.clone());
        blocking(move || e.find_job(&who, &job_id)).await
    }

    /// Waits for job `id` to end (at most `timeout` when given) and answers with its outcome.
    async fn wait(
        &self,
        id: JobId,
        timeout: Option<Duration>,
        who: &Identity,
    ) -> Result<pb::AwaitProofResponse, Status> {
        let watch = {
            let (e, who) = (self.engine.clone(), who.clone());
            blocking(move || e.watch(id, &who)).await?
        };
        if let JobWatch::Live(mut w) = watch {
            let ended = async move {
                loop {
                    if w.borrow_and_update().state.is_finished() || w.changed().await.is_err() {
                        return;
                    }
                }
            };
            match timeout {
                Some(t) => {
                    if tokio::time::timeout(t, ended).await.is_err() {
                        return Ok(pb::AwaitProofResponse {
                            job_id: id.to_string(),
                            status: Outcome::Timeout as i32,
                            ..Default::default()
                        });
                    }
                }
                None => ended.await,
            }
        }
        let (e, who) = (self.engine.clone(), who.clone());
        let ev = blocking(move || e.final_event(id, &who, true)).await?;
        Ok(outcome(&ev))
    }
}

/// A job's final event as the cuzk API reports it: the proof bytes (the partition proofs in
/// order, as filecoin-proofs returns them) and the timings summed over the partitions.
fn outcome(ev: &proto::JobEvent) -> pb::AwaitProofResponse {
    let mut r = pb::AwaitProofResponse {
        job_id: ev.job_id.to_string(),
        status: match proto::JobState::try_from(ev.state) {
            Ok(proto::JobState::Done) => Outcome::Completed,
            Ok(proto::JobState::Failed) => Outcome::Failed,
            Ok(proto::JobState::Cancelled) => Outcome::Cancelled,
            _ => Outcome::Unknown,
        } as i32,
        error_message: ev.error.clone(),
        ..Default::default()
    };
    let ms = |s: f64| (s.max(0.0) * 1e3).round() as u64;
    let mut queue = f64::INFINITY;
    for p in &ev.results {
        r.proof.extend_from_slice(&p.proof);
        if let Some(t) = &p.timings {
            queue = queue.min(t.queued_s);
            r.srs_load_ms += ms(t.params_s);
            r.synthesis_ms += ms(t.synthesis_s);
            r.gpu_compute_ms += ms(t.g1_phase_s + t.msm_g2_s);
            r.total_ms = r.total_ms.max(ms(t.total_s));
        }
    }
    if queue.is_finite() {
        r.queue_wait_ms = ms(queue);
    }
    r
}

#[tonic::async_trait]
impl pb::proving_engine_server::ProvingEngine for CuzkService {
    async fn submit_proof(
        &self,
        req: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let who = caller(&req)?;
        let (s, ahead) = self.submit(req.into_inner(), &who).await?;
        Ok(Response::new(pb::SubmitProofResponse {
            job_id: s.id.to_string(),
            queue_position: ahead,
            assigned_gpu: String::new(),
        }))
    }

    async fn await_proof(
        &self,
        req: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let who = caller(&req)?;
        let r = req.into_inner();
        let id = self.resolve(r.job_id, &who).await?;
        let timeout = (r.timeout_ms > 0).then(|| Duration::from_millis(r.timeout_ms));
        Ok(Response::new(self.wait(id, timeout, &who).await?))
    }

    async fn prove(
        &self,
        req: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProveResponse>, Status> {
        let who = caller(&req)?;
        let submit = req
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("a ProveRequest needs its submit field"))?;
        let (s, _) = self.submit(submit, &who).await?;
        // The client's own deadline ends the call; the job goes on (awaited again by its id).
        let result = self.wait(s.id, None, &who).await?;
        Ok(Response::new(pb::ProveResponse {
            result: Some(result),
        }))
    }

    async fn cancel_proof(
        &self,
        req: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let who = caller(&req)?;
        let id = self.resolve(req.into_inner().job_id, &who).await?;
        let e = self.engine.clone();
        let was_running = blocking(move || {
            let before = e.snapshot(id, &who)?.state;
            e.cancel(id, &who)?;
            Ok(before == JobState::Running)
        })
        .await?;
        Ok(Response::new(pb::CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _req: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let e = self.engine.clone();
        Ok(Response::new(blocking(move || status::status(&e)).await?))
    }

    async fn get_metrics(
        &self,
        _req: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        Ok(Response::new(pb::GetMetricsResponse {
            prometheus_text: self.engine.metrics().render(),
        }))
    }

    async fn preload_srs(
        &self,
        req: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let who = caller(&req)?;
        let id = req.into_inner().circuit_id;
        let e = self.engine.clone();
        Ok(Response::new(
            blocking(move || status::preload(&e, &id, &who)).await?,
        ))
    }

    async fn evict_srs(
        &self,
        req: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let who = caller(&req)?;
        let id = req.into_inner().circuit_id;
        let e = self.engine.clone();
        Ok(Response::new(
            blocking(move || status::evict(&e, &id, &who)).await?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_concatenate_the_proofs_and_sum_the_timings() {
        let part = |byte: u8, queued_s: f64, total_s: f64| proto::PartitionResult {
            proof: vec![byte; 192],
            public_inputs: vec![],
            timings: Some(proto::PartitionTimings {
                queued_s,
                params_s: 0.5,
                synthesis_s: 2.0,
                g1_phase_s: 1.0,
                msm_g2_s: 0.25,
                total_s,
                ..Default::default()
            }),
        };
        let ev = proto::JobEvent {
            job_id: 9,
            state: proto::JobState::Done as i32,
            results: vec![part(1, 0.1, 4.0), part(2, 3.0, 6.5)],
            ..Default::default()
        };
        let r = outcome(&ev);
        assert_eq!(r.status, Outcome::Completed as i32);
        assert_eq!(r.job_id, "9");
        assert_eq!(r.proof.len(), 384);
        assert!(r.proof[..192].iter().all(|&b| b == 1) && r.proof[192..].iter().all(|&b| b == 2));
        assert_eq!(r.queue_wait_ms, 100, "the first partition's wait");
        assert_eq!(
            (r.srs_load_ms, r.synthesis_ms, r.gpu_compute_ms),
            (1000, 4000, 2500)
        );
        assert_eq!(r.total_ms, 6500);
        let failed = proto::JobEvent {
            state: proto::JobState::Failed as i32,
            error: "partition 0: no".into(),
            ..Default::default()
        };
        let r = outcome(&failed);
        assert_eq!(r.status, Outcome::Failed as i32);
        assert_eq!(r.error_message, "partition 0: no");
        assert!(r.proof.is_empty());
    }
}

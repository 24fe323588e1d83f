//! A pipeline run on keys that load while it starts (`Pipeline::run_loading`): the first
//! partitions are synthesised during the load, the proofs equal those of a run on loaded keys,
//! and a load that fails, panics or gives keys of another circuit fails the run without
//! hanging it.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use bellows_core::{
    circuits::{BuiltinCircuit, CircuitOptions, CircuitSpec},
    groth16::{
        prover::ProvingKey, setup::generate_random_parameters, verifier::prepare_verifying_key,
        verifier::verify_proof, Parameters,
    },
    pipeline::{Job, Loading, Pipeline, PipelineConfig},
    rng::ProofRng,
    Backend, Error,
};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;

/// A circuit that counts its syntheses.
struct Counted {
    inner: BuiltinCircuit,
    count: Arc<AtomicUsize>,
}

impl Circuit<Scalar> for Counted {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let r = self.inner.synthesize(cs);
        self.count.fetch_add(1, Ordering::SeqCst);
        r
    }
}

fn setup(log_size: u32, seed: u64) -> (CircuitSpec, Arc<Parameters>) {
    let spec = CircuitSpec::new("synthetic", &CircuitOptions::with_log_size(log_size)).unwrap();
    let params = generate_random_parameters(spec.blank(), &mut ProofRng::seeded(seed)).unwrap();
    (spec, Arc::new(params))
}

fn backend() -> Arc<dyn Backend> {
    Arc::new(bellows_cpu::CpuBackend::new())
}

/// `parts` partitions of one job, counting their syntheses in `count`, with their inputs.
fn job(
    spec: &CircuitSpec,
    parts: u64,
    count: &Arc<AtomicUsize>,
) -> (Job<Counted>, Vec<Vec<Scalar>>) {
    let (circuits, inputs): (Vec<_>, Vec<_>) = (0..parts)
        .map(|p| {
            let (c, i) = spec.instance(p).unwrap();
            let counted = Counted {
                inner: c,
                count: count.clone(),
            };
            (counted, i)
        })
        .unzip();
    (
        Job {
            id: 0,
            partitions: circuits,
        },
        inputs,
    )
}

fn config(in_flight: usize) -> PipelineConfig {
    let mut cfg = PipelineConfig::default();
    cfg.synthesis_workers = 2;
    cfg.workers_per_device = 1;
    cfg.partitions_in_flight = Some(in_flight);
    cfg.seed = Some(3);
    cfg
}

#[test]
fn the_first_partitions_are_synthesised_while_the_keys_load_and_prove_as_after_a_load() {
    let (spec, params) = setup(8, 5);
    let pvk = prepare_verifying_key(&params.vk);
    let count = Arc::new(AtomicUsize::new(0));
    let (j, inputs) = job(&spec, 5, &count);
    let key = Arc::new(ProvingKey::new(params.clone(), backend()).unwrap());
    let cfg = config(2);
    // The load waits (up to a minute) until it sees the budget's two partitions synthesised.
    let seen_during_load = AtomicUsize::new(0);
    let loading = Loading {
        lens: key.lens(),
        backend: key.backend().clone(),
        load: || {
            let t = Instant::now();
            while count.load(Ordering::SeqCst) < 2 && t.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(5));
            }
            seen_during_load.store(count.load(Ordering::SeqCst), Ordering::SeqCst);
            Ok(vec![key.clone()])
        },
    };
    let mut proofs = None;
    let stats =
        Pipeline::run_loading(&cfg, None, loading, vec![j], |r| proofs = Some(r.proofs)).unwrap();
    let seen = seen_during_load.load(Ordering::SeqCst);
    assert_eq!(
        seen, 2,
        "the budget's partitions, and no more, synthesised during the load"
    );
    assert_eq!((stats.jobs, stats.partitions), (1, 5));
    let proofs = proofs.expect("the job completed").unwrap();
    for (p, proof) in proofs.iter().enumerate() {
        assert!(verify_proof(&pvk, proof, &inputs[p]).unwrap());
    }
    // The same proofs as a run on the loaded key (the same seed).
    let count2 = Arc::new(AtomicUsize::new(0));
    let (j2, _) = job(&spec, 5, &count2);
    let mut again = None;
    Pipeline::new(vec![key.clone()], cfg)
        .unwrap()
        .run(vec![j2], |r| again = Some(r.proofs))
        .unwrap();
    assert_eq!(again.unwrap().unwrap(), proofs);
}

#[test]
fn a_failed_load_fails_the_run_with_its_error_and_stops_synthesis() {
    let (spec, params) = setup(6, 5);
    let lens = ProvingKey::new(params.clone(), backend()).unwrap().lens();
    // More partitions than the budget holds: synthesis must stop, not wait for a device.
    for (in_flight, fail) in [(1, "error"), (2, "panic"), (1, "other circuit")] {
        let count = Arc::new(AtomicUsize::new(0));
        let (j, _) = job(&spec, 6, &count);
        let (_, other) = setup(7, 6);
        let loading = Loading {
            lens,
            backend: backend(),
            load: || -> bellows_core::Result<Vec<Arc<ProvingKey>>> {
                // Let the first partitions be synthesised and wait for the budget.
                std::thread::sleep(Duration::from_millis(200));
                match fail {
                    "error" => Err(Error::invalid("the parameters file is truncated")),
                    "panic" => panic!("a loader bug"),
                    _ => Ok(vec![Arc::new(ProvingKey::new(other, backend()).unwrap())]),
                }
            },
        };
        let mut completed = 0;
        let e = Pipeline::run_loading(&config(in_flight), None, loading, vec![j], |_| {
            completed += 1
        })
        .unwrap_err()
        .to_string();
        let want = match fail {
            "error" => "truncated",
            "panic" => "panicked",
            _ => "another circuit",
        };
        assert!(e.contains(want), "{fail}: {e}");
        assert_eq!(completed, 0, "{fail}: no job completes");
        assert!(
            count.load(Ordering::SeqCst) < 6,
            "{fail}: synthesis stopped ({} of 6)",
            count.load(Ordering::SeqCst)
        );
    }
}

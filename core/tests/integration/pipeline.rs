//! The pipeline scheduler: proofs verify, are deterministic under a seed and equal the direct
//! prover's, the byte budget bounds the partitions in flight, a failing partition fails only its
//! job, and several devices feed from one queue.

use std::sync::Arc;

use bellows_core::{
    circuits::{BuiltinCircuit, CircuitOptions, CircuitSpec},
    groth16::{
        prover::{self, ProvingKey},
        setup::generate_random_parameters,
        synthesis::synthesize,
        verifier::{prepare_verifying_key, verify_proof},
        Parameters,
    },
    pipeline::{
        partition_bytes, partition_rng, ByteBudget, Job, JobResult, Pipeline, PipelineConfig,
        PipelineStats,
    },
    rng::ProofRng,
    Backend, Error,
};
use blstrs::Scalar;

fn setup(log_size: u32) -> (CircuitSpec, Arc<Parameters>) {
    let spec = CircuitSpec::new("synthetic", &CircuitOptions::with_log_size(log_size)).unwrap();
    let params = generate_random_parameters(spec.blank(), &mut ProofRng::seeded(5)).unwrap();
    (spec, Arc::new(params))
}

fn key(params: &Arc<Parameters>) -> Arc<ProvingKey> {
    let backend: Arc<dyn Backend> = Arc::new(bellows_cpu::CpuBackend::new());
    Arc::new(ProvingKey::new(params.clone(), backend).unwrap())
}

fn jobs(
    spec: &CircuitSpec,
    n_jobs: u64,
    parts: u64,
) -> (Vec<Job<BuiltinCircuit>>, Vec<Vec<Vec<Scalar>>>) {
    let mut jobs = Vec::new();
    let mut inputs = Vec::new();
    for j in 0..n_jobs {
        let (circuits, ins): (Vec<_>, Vec<_>) = (0..parts)
            .map(|p| spec.instance(100 * j + p).unwrap())
            .unzip();
        jobs.push(Job {
            id: j,
            partitions: circuits,
        });
        inputs.push(ins);
    }
    (jobs, inputs)
}

/// Runs `jobs` through `pipeline`: the proofs made (a failed job's count none), and the stats.
fn run_counting(pipeline: &Pipeline, jobs: Vec<Job<BuiltinCircuit>>) -> (usize, PipelineStats) {
    let mut ok = 0;
    let stats = pipeline
        .run(jobs, |r| ok += r.proofs.map(|p| p.len()).unwrap_or(0))
        .unwrap();
    (ok, stats)
}

fn config(seed: u64, budget: Option<u64>) -> PipelineConfig {
    let mut cfg = PipelineConfig::default();
    cfg.synthesis_workers = 2;
    cfg.workers_per_device = 2;
    cfg.memory_budget = budget;
    cfg.seed = Some(seed);
    cfg
}

#[test]
fn proofs_verify_are_deterministic_and_equal_the_direct_prover() {
    let (spec, params) = setup(8);
    let k = key(&params);
    let pvk = prepare_verifying_key(&params.vk);
    let (js, inputs) = jobs(&spec, 3, 2);
    let pipeline = Pipeline::new(vec![k.clone()], config(7, None)).unwrap();
    let mut results: Vec<JobResult> = Vec::new();
    let stats = pipeline.run(js, |r| results.push(r)).unwrap();
    assert_eq!(stats.jobs, 3);
    assert_eq!(stats.partitions, 6);
    // The stage clock: both stages ran; the devices' occupied time is the union of the device
    // phases, so within the run and at least their sum over the two workers that may overlap.
    assert!(
        !stats.synthesis.is_zero() && !stats.device.is_zero(),
        "{stats:?}"
    );
    assert!(stats.device_occupied <= stats.wall, "{stats:?}");
    assert!(stats.device_occupied * 2 >= stats.device, "{stats:?}");
    assert!(stats.device_occupied_share() > 0.0 && stats.device_occupied_share() <= 1.0);
    results.sort_by_key(|r| r.id);
    for r in &results {
        let proofs = r.proofs.as_ref().unwrap();
        assert_eq!(proofs.len(), 2);
        for (p, proof) in proofs.iter().enumerate() {
            assert!(verify_proof(&pvk, proof, &inputs[r.id as usize][p]).unwrap());
            // Same as the direct prover with the partition's randomness.
            let (c, _) = spec.instance(100 * r.id + p as u64).unwrap();
            let direct = prover::start(
                &k,
                vec![synthesize(c).unwrap()],
                &mut partition_rng(Some(7), r.id, p),
            )
            .unwrap()
            .finalize()
            .unwrap();
            assert_eq!(direct[0], *proof);
        }
    }
}

/// The partition hook is told of every partition proved, once each, each before its job's
/// `on_done`.
#[test]
fn the_partition_hook_hears_each_partition_before_its_job_is_done() {
    use bellows_core::pipeline::PartitionHook;
    use std::sync::Mutex;
    let (spec, params) = setup(8);
    let (js, _) = jobs(&spec, 2, 3);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let mut cfg = config(3, None);
    let h = heard.clone();
    cfg.on_partition = Some(PartitionHook::new(move |job, index| {
        h.lock().unwrap().push((job, index))
    }));
    let pipeline = Pipeline::new(vec![key(&params)], cfg).unwrap();
    pipeline
        .run(js, |r| {
            let of_job = heard
                .lock()
                .unwrap()
                .iter()
                .filter(|(j, _)| *j == r.id)
                .count();
            assert_eq!(
                of_job, 3,
                "job {} done before its partitions were heard",
                r.id
            );
        })
        .unwrap();
    let mut heard = heard.lock().unwrap().clone();
    heard.sort_unstable();
    let want: Vec<(u64, usize)> = (0..2).flat_map(|j| (0..3).map(move |i| (j, i))).collect();
    assert_eq!(heard, want);
}

/// A key loaded from a file section by section keeps no G1 points on the host (the CPU backend
/// holds its own), proves exactly what a key made from the whole Parameters proves, and
/// shares a pipeline with such a key.
#[test]
fn a_key_loaded_section_by_section_proves_the_same_without_host_points() {
    use bellows_core::groth16::io::{write_parameters_file, ParamsFile, PointCheck};
    use bellows_core::groth16::prover::G2Policy;
    let (spec, params) = setup(8);
    let dir = std::env::temp_dir().join(format!("bellows-lean-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("p8.params");
    write_parameters_file(&params, &path).unwrap();
    let file = ParamsFile::open(&path).unwrap();
    let backend: Arc<dyn Backend> = Arc::new(bellows_cpu::CpuBackend::new());
    let lean =
        ProvingKey::load_file(&file, PointCheck::Full, backend, G2Policy::Auto, &|_| {}).unwrap();
    let full = key(&params);
    assert_eq!(lean.lens(), full.lens());
    let p = lean.params();
    assert!(p.h.is_empty() && p.l.is_empty() && p.a.is_empty() && p.b_g1.is_empty());
    // The CPU backend runs no G2 MSM: b_g2 stays for the CPU threads.
    assert_eq!(p.b_g2.len(), params.b_g2.len());
    assert_eq!(p.vk, params.vk);
    let run = |k: Arc<ProvingKey>| {
        let (js, _) = jobs(&spec, 1, 2);
        let mut out = Vec::new();
        Pipeline::new(vec![k], config(3, None))
            .unwrap()
            .run(js, |r| out.push(r.proofs.unwrap()))
            .unwrap();
        out
    };
    assert_eq!(run(Arc::new(lean)), run(full.clone()));
    // Released after the fact: the same.
    let mut released = ProvingKey::new(params.clone(), full.backend().clone()).unwrap();
    released.release_host_points();
    assert!(released.params().l.is_empty());
    assert_eq!(run(Arc::new(released)), run(full));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn budget_bounds_partitions_in_flight_and_several_devices_share_one_queue() {
    let (spec, params) = setup(7);
    let per = partition_bytes(&params);
    // Room for exactly one synthesised partition at a time, two "devices".
    let keys = vec![key(&params), key(&params)];
    let pipeline = Pipeline::new(keys, config(1, Some(per))).unwrap();
    let (js, _) = jobs(&spec, 4, 2);
    let (ok, stats) = run_counting(&pipeline, js);
    assert_eq!(ok, 8);
    assert_eq!(
        stats.peak_reserved_bytes, per,
        "never more than one partition in flight"
    );
    assert_eq!(stats.budget_bytes, per);
}

#[test]
fn partitions_in_flight_caps_the_budget() {
    let (spec, params) = setup(7);
    let per = partition_bytes(&params);
    let mut cfg = config(1, Some(10 * per));
    cfg.partitions_in_flight = Some(1);
    let pipeline = Pipeline::new(vec![key(&params)], cfg).unwrap();
    let (js, _) = jobs(&spec, 2, 2);
    let (ok, stats) = run_counting(&pipeline, js);
    assert_eq!(ok, 4);
    assert_eq!(stats.budget_bytes, per);
    assert_eq!(stats.peak_reserved_bytes, per);
    // One partition at a time: the device phases never overlap, so their union is their sum
    // (the union's clock starts a moment before each phase's own).
    assert!(stats.device_occupied >= stats.device, "{stats:?}");
    assert!(stats.device_occupied <= stats.wall, "{stats:?}");
}

#[test]
fn a_failing_partition_fails_only_its_job() {
    let (spec, params) = setup(7);
    let pipeline = Pipeline::new(vec![key(&params)], config(3, None)).unwrap();
    // Job 1's second partition gets a circuit of another size: a shape error for that job only.
    let other = CircuitSpec::new("synthetic", &CircuitOptions::with_log_size(8)).unwrap();
    let (mut js, _) = jobs(&spec, 3, 2);
    js[1].partitions[1] = other.instance(1).unwrap().0;
    js.push(Job {
        id: 99,
        partitions: vec![],
    });
    let mut results = Vec::new();
    pipeline.run(js, |r| results.push(r)).unwrap();
    results.sort_by_key(|r| r.id);
    assert_eq!(results.len(), 4);
    assert!(results[0].proofs.is_ok() && results[2].proofs.is_ok());
    let err = results[1].proofs.as_ref().unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert!(
        err.to_string().contains("does not match the parameters"),
        "{err}"
    );
    assert!(results[3]
        .proofs
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("no partitions"));
}

#[test]
fn budget_grants_an_oversized_request_alone() {
    let b = ByteBudget::new(10);
    b.acquire(25); // larger than the budget, nothing else reserved: granted
    assert_eq!(b.reserved(), 25);
    b.release(25);
    b.acquire(6);
    let b = Arc::new(b);
    let b2 = b.clone();
    let waiter = std::thread::spawn(move || {
        b2.acquire(6); // must wait for the release below
        b2.reserved()
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(
        b.reserved(),
        6,
        "second request must not be granted while over budget"
    );
    b.release(6);
    assert_eq!(waiter.join().unwrap(), 6);
    assert_eq!(b.peak(), 25);
}

#[test]
fn bad_configurations_are_errors() {
    let (_, params) = setup(6);
    assert!(Pipeline::new(vec![], PipelineConfig::default()).is_err());
    let mut cfg = PipelineConfig::default();
    cfg.workers_per_device = 0;
    assert!(Pipeline::new(vec![key(&params)], cfg).is_err());
    let (_, other) = setup(7);
    let err =
        Pipeline::new(vec![key(&params), key(&other)], PipelineConfig::default()).unwrap_err();
    assert!(err.to_string().contains("of the same parameters"));
}

#[test]
fn try_acquire_never_blocks_and_respects_the_budget() {
    let b = ByteBudget::new(10);
    assert_eq!(b.capacity(), 10);
    assert!(b.try_acquire(25), "oversized alone is granted");
    assert!(!b.try_acquire(1), "nothing more while over budget");
    b.release(25);
    assert!(b.try_acquire(6));
    assert!(b.try_acquire(4));
    assert!(!b.try_acquire(1));
    assert_eq!((b.reserved(), b.peak()), (10, 25));
    b.release(4);
    assert!(b.try_acquire(3));
    assert_eq!(b.reserved(), 9);
}

#[test]
fn partition_bytes_from_the_shape_equal_those_from_the_parameters() {
    let (_, params) = setup(6);
    assert_eq!(
        partition_bytes(&params),
        bellows_core::pipeline::partition_bytes_of(
            params.domain_size() as u64,
            (params.num_inputs() + params.num_aux()) as u64,
            params.b_g1.len() as u64
        )
    );
}

//! Capabilities are honoured, not only declared: the proving key checks NTT sizes and `msm_g2`,
//! the G2 policy routes the G2 MSM to an accelerator (same proofs as on CPU threads), and the
//! pipeline never calls a non-concurrent backend from two threads at once.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

use bellows_core::{
    backend::{BasesHandle, G1PhaseInput, Msm, MsmJob, SharedPoints},
    circuits::{CircuitOptions, CircuitSpec},
    groth16::{
        prover::{self, G2Policy, ProvingKey},
        setup::generate_random_parameters,
        synthesis::synthesize_batch,
        verifier::{prepare_verifying_key, verify_proof},
        Parameters,
    },
    layout::{G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    pipeline::{Job, Pipeline, PipelineConfig},
    rng::ProofRng,
    Backend, BackendInfo, Capabilities, Error, Result,
};
use bellows_cpu::CpuBackend;

/// The CPU backend under other declared capabilities, counting G2 MSM jobs and the most G1
/// phases ever running at once.
struct Declared {
    inner: CpuBackend,
    caps: Capabilities,
    g2_jobs: AtomicUsize,
    running: AtomicUsize,
    most_running: AtomicUsize,
}

impl Declared {
    fn new(edit: impl FnOnce(&mut Capabilities)) -> Arc<Self> {
        let inner = CpuBackend::new();
        let mut caps = inner.info().capabilities;
        edit(&mut caps);
        Arc::new(Self {
            inner,
            caps,
            g2_jobs: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            most_running: AtomicUsize::new(0),
        })
    }
}

bellows_core::forward_ntt!(Declared, inner);
bellows_core::forward_memory!(Declared, inner);

impl Msm for Declared {
    fn load_bases_g1(&self, b: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        self.inner.load_bases_g1(b)
    }
    fn load_bases_g2(&self, b: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        self.inner.load_bases_g2(b)
    }
    fn free_bases(&self, h: BasesHandle) -> Result<()> {
        self.inner.free_bases(h)
    }
    fn msm_g1(&self, h: BasesHandle, j: &[MsmJob<'_>], o: &mut [G1Jacobian]) -> Result<()> {
        self.inner.msm_g1(h, j, o)
    }
    fn msm_g2(&self, h: BasesHandle, j: &[MsmJob<'_>], o: &mut [G2Jacobian]) -> Result<()> {
        self.g2_jobs.fetch_add(j.len(), Ordering::SeqCst);
        self.inner.msm_g2(h, j, o)
    }
}

impl Backend for Declared {
    fn info(&self) -> BackendInfo {
        let mut i = self.inner.info();
        i.name = "declared".into();
        i.capabilities = self.caps.clone();
        i
    }
    fn groth16_g1(&self, input: &mut G1PhaseInput<'_>) -> Result<Vec<[G1Jacobian; 4]>> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_running.fetch_max(now, Ordering::SeqCst);
        // Give another worker the chance to overlap, if the pipeline let it.
        std::thread::sleep(std::time::Duration::from_millis(5));
        let r = self.inner.groth16_g1(input);
        self.running.fetch_sub(1, Ordering::SeqCst);
        r
    }
}

fn setup(log_size: u32) -> (CircuitSpec, Arc<Parameters>) {
    let spec = CircuitSpec::new("synthetic", &CircuitOptions::with_log_size(log_size)).unwrap();
    let params = generate_random_parameters(spec.blank(), &mut ProofRng::seeded(11)).unwrap();
    (spec, Arc::new(params))
}

#[test]
fn the_proving_key_checks_ntt_size_and_g2() {
    let (_, params) = setup(6);
    let small = Declared::new(|c| c.max_log_ntt = 5);
    match ProvingKey::new(params.clone(), small) {
        Err(Error::InvalidInput(m)) => {
            assert!(m.contains("2^6") && m.contains("up to 2^5"), "{m}");
            assert!(m.contains("declared"), "{m}");
        }
        r => panic!("expected an NTT size error, got {r:?}"),
    }
    let no_g2 = Declared::new(|c| c.msm_g2 = false);
    match ProvingKey::with_g2_policy(params.clone(), no_g2.clone(), G2Policy::Device) {
        Err(e @ Error::Unsupported { .. }) => {
            assert!(e.to_string().contains("msm_g2"), "{e}")
        }
        r => panic!("expected unsupported, got {r:?}"),
    }
    // Auto and Cpu keep G2 on CPU threads for it (and for any non-accelerator).
    for p in [G2Policy::Auto, G2Policy::Cpu] {
        assert!(
            !ProvingKey::with_g2_policy(params.clone(), no_g2.clone(), p)
                .unwrap()
                .g2_on_backend()
        );
    }
    let no_g1 = Declared::new(|c| c.msm_g1 = false);
    assert!(matches!(
        ProvingKey::new(params.clone(), no_g1),
        Err(Error::Unsupported { .. })
    ));
    assert_eq!("device".parse::<G2Policy>().unwrap(), G2Policy::Device);
    assert!("gpu".parse::<G2Policy>().is_err());
}

#[test]
fn g2_on_the_backend_gives_the_same_proofs() {
    let (spec, params) = setup(7);
    let accel = Declared::new(|c| c.accelerator = true);
    let on_device = ProvingKey::new(params.clone(), accel.clone()).unwrap();
    assert!(
        on_device.g2_on_backend(),
        "auto picks an accelerator with msm_g2"
    );
    let cpu_side =
        ProvingKey::with_g2_policy(params.clone(), accel.clone(), G2Policy::Cpu).unwrap();
    assert!(!cpu_side.g2_on_backend());
    let prove = |key: &ProvingKey| {
        let syn = synthesize_batch(vec![spec.with_witness(1), spec.with_witness(2)]).unwrap();
        let (proofs, t) = prover::start(key, syn, &mut ProofRng::seeded(3))
            .unwrap()
            .finalize_timed()
            .unwrap();
        (proofs, t.g2_on_backend)
    };
    let before = accel.g2_jobs.load(Ordering::SeqCst);
    let (a, on) = prove(&on_device);
    assert!(on);
    // Two density jobs (inputs, aux) per proof went to the backend.
    assert_eq!(accel.g2_jobs.load(Ordering::SeqCst) - before, 4);
    let (b, on) = prove(&cpu_side);
    assert!(!on);
    assert_eq!(accel.g2_jobs.load(Ordering::SeqCst) - before, 4);
    assert_eq!(a, b);
    let pvk = prepare_verifying_key(&params.vk);
    for (p, seed) in a.iter().zip([1, 2]) {
        let (_, inputs) = spec.instance(seed).unwrap();
        assert!(verify_proof(&pvk, p, &inputs).unwrap());
    }
}

#[test]
fn the_pipeline_runs_one_worker_for_a_non_concurrent_backend() {
    let (spec, params) = setup(6);
    let serial = Declared::new(|c| c.concurrent = false);
    let key = Arc::new(ProvingKey::new(params.clone(), serial.clone()).unwrap());
    let mut cfg = PipelineConfig::default();
    cfg.synthesis_workers = 2;
    cfg.workers_per_device = 3;
    cfg.seed = Some(1);
    let pipeline = Pipeline::new(vec![key.clone()], cfg.clone()).unwrap();
    assert_eq!(pipeline.workers_for(&key), 1);
    let jobs: Vec<_> = (0..4u64)
        .map(|j| Job {
            id: j,
            partitions: vec![spec.instance(j).unwrap().0],
        })
        .collect();
    let mut ok = 0;
    pipeline
        .run(jobs, |r| ok += r.proofs.map(|p| p.len()).unwrap_or(0))
        .unwrap();
    assert_eq!(ok, 4);
    assert_eq!(serial.most_running.load(Ordering::SeqCst), 1);
    // A concurrent backend gets the configured number.
    let conc = Declared::new(|_| {});
    let key2 = Arc::new(ProvingKey::new(params, conc).unwrap());
    let pipeline = Pipeline::new(vec![key2.clone()], cfg).unwrap();
    assert_eq!(pipeline.workers_for(&key2), 3);
}

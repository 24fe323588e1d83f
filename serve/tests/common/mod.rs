//! What the daemon's integration tests share (each test file includes this module).

#![allow(dead_code)]

pub mod pki;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bellows_core::{
    circuits::{CircuitOptions, CircuitSpec},
    groth16::{io::write_parameters_file, prover::G2Policy, setup::generate_random_parameters},
    rng::ProofRng,
};
use bellows_cpu::CpuBackend;
use bellows_serve::{
    engine::{DeviceSpec, Engine, EngineConfig},
    metrics::Metrics,
    store::JobStore,
};

/// A fresh, empty folder `bellows-NAME-PID` under the system's temporary folder.
pub fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bellows-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Parameters for synthetic 2^`k` (seed 1), written to `dir/p.params`.
pub fn synthetic_params(dir: &Path, k: u32) -> PathBuf {
    let spec = CircuitSpec::new("synthetic", &CircuitOptions::with_log_size(k)).unwrap();
    let p = generate_random_parameters(spec.blank(), &mut ProofRng::seeded(1)).unwrap();
    let path = dir.join("p.params");
    write_parameters_file(&p, &path).unwrap();
    path
}

/// An engine with `cfg` on `store`, proving on one CPU device (one worker, G2 on the CPU).
pub fn cpu_engine(cfg: EngineConfig, store: Arc<dyn JobStore>) -> Engine {
    let cpu = DeviceSpec {
        label: "cpu".into(),
        backend: Arc::new(CpuBackend::new()),
        workers: 1,
        g2: G2Policy::Cpu,
        fallback: false,
        memory_budget: None,
    };
    Engine::start(cfg, vec![cpu], store, Arc::new(Metrics::new())).unwrap()
}

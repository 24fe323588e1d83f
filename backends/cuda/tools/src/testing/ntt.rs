//! NTT checks against the host reference ([`crate::testing::host_ntt`]), element for element.

use bellows_core::{
    backend::ntt::{NttConfig, Ordering},
    layout::Fr,
    Result,
};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use bellows_core::backend::Ntt;

use super::{compare, failed, CheckResult, FieldCase};

/// Largest size at which the CPU backend is also checked against the simple reference.
pub const SIMPLE_REFERENCE_MAX_LOG: u32 = 16;

/// Every configuration: direction × coset × input order × output order (16; the SDK's
/// [`NttConfig::all`]).
pub fn all_ntt_configs() -> Vec<NttConfig> {
    NttConfig::all()
}

/// One group of NTT checks: vectors of 2^log_n, `batch` of them, under each configuration.
#[derive(Clone, Debug)]
pub struct NttCheckPlan {
    /// log2 of the vector length.
    pub log_n: u32,
    /// Vectors per call.
    pub batch: usize,
    /// Configurations to run.
    pub configs: Vec<NttConfig>,
}

/// `len` random elements, generated in parallel from `seed`.
pub fn random_vector(seed: u64, len: usize) -> Vec<Fr> {
    const CHUNK: usize = 1 << 14;
    let mut v = vec![Fr::default(); len];
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(i, c)| {
        let mut rng =
            ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9).wrapping_add(i as u64));
        for x in c {
            *x = Fr::from(blstrs::Scalar::random(&mut rng));
        }
    });
    v
}

/// A configuration's short name, e.g. "inv coset R->N".
pub fn describe(cfg: &NttConfig) -> String {
    let d = if cfg.direction == bellows_core::backend::ntt::NttDirection::Inverse {
        "inv"
    } else {
        "fwd"
    };
    let o = |x: Ordering| if x == Ordering::Natural { "N" } else { "R" };
    format!(
        "{d}{} {}->{}",
        if cfg.coset { " coset" } else { "" },
        o(cfg.input_order),
        o(cfg.output_order)
    )
}

/// Runs each plan entry through `exec` and compares with the CPU backend
/// (`bellows_cpu::CpuBackend`), element for element. Up to 2^[`SIMPLE_REFERENCE_MAX_LOG`] the
/// CPU backend's result is itself compared with the simple reference of [`crate::testing::host_ntt`]
/// (reported as its own check). The first vector of a batch is random; a second one, if any,
/// cycles through the field's edge cases (0, 1, −1, 2^k ± 1, …); further ones are random.
pub fn run_ntt_checks(
    mut exec: impl FnMut(&mut [Fr], u32, &NttConfig) -> Result<()>,
    seed: u64,
    plans: &[NttCheckPlan],
) -> Vec<CheckResult> {
    let edges = Fr::edge_cases();
    let cpu = bellows_cpu::CpuBackend::new();
    let mut out = Vec::new();
    for (pi, p) in plans.iter().enumerate() {
        let n = 1usize << p.log_n;
        for (ci, cfg) in p.configs.iter().enumerate() {
            let mut data = random_vector(seed ^ ((pi as u64) << 20) ^ ci as u64, n * p.batch);
            if p.batch >= 2 {
                for (i, x) in data[n..2 * n].iter_mut().enumerate() {
                    *x = edges[i % edges.len()];
                }
            }
            let mut expected = data.clone();
            let name = format!("ntt 2^{} x{} {}", p.log_n, p.batch, describe(cfg));
            if let Err(e) = cpu.ntt(&mut expected, p.log_n, cfg) {
                out.push(failed(name, e));
                continue;
            }
            if p.log_n <= SIMPLE_REFERENCE_MAX_LOG {
                let mut simple = data.clone();
                let rname = format!("cpu backend vs reference 2^{} {}", p.log_n, describe(cfg));
                out.push(
                    match crate::testing::host_ntt::ntt(&mut simple, p.log_n, cfg) {
                        Ok(()) => compare(rname, &simple, &expected, |i| format!("element {i}")),
                        Err(e) => failed(rname, e),
                    },
                );
            }
            match exec(&mut data, p.log_n, cfg) {
                Ok(()) => out.push(compare(name, &expected, &data, |i| {
                    format!("vector {} element {}", i / n, i % n)
                })),
                Err(e) => out.push(failed(name, e)),
            }
        }
    }
    out
}

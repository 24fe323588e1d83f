//! Seeded test inputs: scalars (random and special), points (random, identity, repeated), and
//! Groth16 parameters for the proof checks. Everything derives from [`crate::SuiteOptions::seed`],
//! so a run is reproducible and a mismatch can be replayed.

use std::sync::{Arc, Mutex, OnceLock};

use bellows_core::{
    circuits::SyntheticCircuit,
    groth16::{
        setup::{generate_parameters, ToxicWaste},
        Parameters,
    },
    layout::{fr_slice, Fr},
    Result,
};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rayon::prelude::*;

/// A ChaCha20 stream for input `stream` of a run seeded with `seed`.
pub fn rng(seed: u64, stream: u64) -> ChaCha20Rng {
    let mut r = ChaCha20Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}

/// `n` random scalars in the crossing layout.
pub fn random_scalars(n: usize, seed: u64, stream: u64) -> Vec<Fr> {
    let mut r = rng(seed, stream);
    (0..n).map(|_| Fr::from(Scalar::random(&mut r))).collect()
}

/// The scalar r − 1 (the largest canonical scalar).
pub fn r_minus_one() -> Fr {
    Fr::from(-Scalar::ONE)
}

/// `n` copies of `x`.
pub fn filled(n: usize, x: Fr) -> Vec<Fr> {
    vec![x; n]
}

/// Small scalars 0, 1, 2, 3, ... cycling (sparse buckets), in the crossing layout.
pub fn small_scalars(n: usize) -> Vec<Fr> {
    (0..n)
        .map(|i| Fr::from(Scalar::from((i % 5) as u64)))
        .collect()
}

/// Random points of both groups, generated once per suite and shared by every check.
pub struct Points {
    /// Random G1 points (`g·k` for random k), with no identity among them.
    pub g1: Arc<Vec<G1Affine>>,
    /// Random G2 points.
    pub g2: Arc<Vec<G2Affine>>,
}

impl Points {
    /// `n1` G1 and `n2` G2 random points.
    pub fn new(n1: usize, n2: usize, seed: u64) -> Self {
        let k1 = random_scalars(n1, seed, 1001);
        let k2 = random_scalars(n2, seed, 1002);
        let g1: Vec<G1Projective> = k1
            .par_iter()
            .map(|k| G1Projective::generator() * Scalar::from(*k))
            .collect();
        let g2: Vec<G2Projective> = k2
            .par_iter()
            .map(|k| G2Projective::generator() * Scalar::from(*k))
            .collect();
        let mut a1 = vec![G1Affine::default(); n1];
        G1Projective::batch_normalize(&g1, &mut a1);
        let mut a2 = vec![G2Affine::default(); n2];
        G2Projective::batch_normalize(&g2, &mut a2);
        Self {
            g1: Arc::new(a1),
            g2: Arc::new(a2),
        }
    }
}

/// G1 points with every `stride`-th one (from 0) replaced by the identity.
pub fn with_identities_g1(p: &[G1Affine], stride: usize) -> Vec<G1Affine> {
    p.iter()
        .enumerate()
        .map(|(i, x)| {
            if i % stride == 0 {
                G1Affine::default()
            } else {
                *x
            }
        })
        .collect()
}

/// G2 points with every `stride`-th one (from 0) replaced by the identity.
pub fn with_identities_g2(p: &[G2Affine], stride: usize) -> Vec<G2Affine> {
    p.iter()
        .enumerate()
        .map(|(i, x)| {
            if i % stride == 0 {
                G2Affine::default()
            } else {
                *x
            }
        })
        .collect()
}

/// A parameters slot filled on first use.
type Slot = Arc<OnceLock<Arc<Parameters>>>;

/// Parameters of a synthetic circuit made with seeded toxic waste (cached per size).
pub struct ParamsCache {
    seed: u64,
    cache: Mutex<Vec<(u32, u8, Slot)>>,
}

impl ParamsCache {
    /// An empty cache for a run seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            cache: Mutex::new(Vec::new()),
        }
    }

    /// Parameters of `SyntheticCircuit::new(log_size, bits_pct)`.
    pub fn synthetic(&self, log_size: u32, bits_pct: u8) -> Result<Arc<Parameters>> {
        let cell = {
            let mut c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            match c.iter().find(|(l, b, _)| *l == log_size && *b == bits_pct) {
                Some((_, _, cell)) => cell.clone(),
                None => {
                    let cell = Arc::new(OnceLock::new());
                    c.push((log_size, bits_pct, cell.clone()));
                    cell
                }
            }
        };
        if let Some(p) = cell.get() {
            return Ok(p.clone());
        }
        let circuit = SyntheticCircuit::new(log_size, bits_pct)?;
        let waste = ToxicWaste::random(&mut rng(self.seed, 2000 + u64::from(log_size)));
        let params = Arc::new(generate_parameters(circuit, &waste)?);
        Ok(cell.get_or_init(|| params).clone())
    }
}

/// Views blstrs scalars in the crossing layout (owned copy).
pub fn to_fr(v: &[Scalar]) -> Vec<Fr> {
    fr_slice(v).to_vec()
}

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

/// Scalars drawn per chunk of [`random_scalars`]: the chunks are drawn in parallel, each from
/// its own window of the stream (chunk c starts at word 2^32·c; a chunk uses about 2^18 words).
const SCALAR_CHUNK: usize = 1 << 14;

/// `n` random scalars in the crossing layout, drawn in parallel chunks from stream `stream` (the
/// first [`SCALAR_CHUNK`] are the stream's first scalars, so small inputs are those of a plain
/// sequential draw).
pub fn random_scalars(n: usize, seed: u64, stream: u64) -> Vec<Fr> {
    let mut out = vec![Fr::default(); n];
    out.par_chunks_mut(SCALAR_CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut r = rng(seed, stream);
            r.set_word_pos((c as u128) << 32);
            for x in chunk {
                *x = Fr::from(Scalar::random(&mut r));
            }
        });
    out
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
    /// Random G1 points (see [`progression`]), with no identity among them.
    pub g1: Arc<Vec<G1Affine>>,
    /// Random G2 points.
    pub g2: Arc<Vec<G2Affine>>,
}

/// Points per chunk of [`progression`].
const POINT_CHUNK: usize = 1 << 12;

/// `n` points `g·(k_c + j·d_c)` for j < [`POINT_CHUNK`] in chunk c, with k_c and d_c random
/// scalars of `stream`: two scalar multiplications per chunk and one addition per point, an
/// addition being far cheaper than a scalar multiplication per point (`point_generation_cost`
/// below times both). None is the identity
/// unless k_c + j·d_c ≡ 0 (mod r), a chance of about 2^−230 per point. As inputs of an MSM check
/// they are as good as independent points: every base still weighs in the sum with a scalar of
/// its own.
fn progression<P>(n: usize, seed: u64, stream: u64) -> Vec<P::AffineRepr>
where
    P: Group<Scalar = Scalar> + Curve + Send + Sync,
    P::AffineRepr: Default + Copy + Send + Sync,
{
    let chunks = n.div_ceil(POINT_CHUNK);
    let ks = random_scalars(2 * chunks, seed, stream);
    let mut out = vec![P::AffineRepr::default(); n];
    out.par_chunks_mut(POINT_CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let step = P::generator() * Scalar::from(ks[2 * c + 1]);
            let mut p = P::generator() * Scalar::from(ks[2 * c]);
            let proj: Vec<P> = (0..chunk.len())
                .map(|_| {
                    let q = p;
                    p += step;
                    q
                })
                .collect();
            P::batch_normalize(&proj, chunk);
        });
    out
}

impl Points {
    /// `n1` G1 and `n2` G2 random points ([`progression`]s).
    pub fn new(n1: usize, n2: usize, seed: u64) -> Self {
        Self {
            g1: Arc::new(progression::<G1Projective>(n1, seed, 1001)),
            g2: Arc::new(progression::<G2Projective>(n2, seed, 1002)),
        }
    }
}

/// The points with every `stride`-th one (from 0) replaced by the identity (blstrs' affine
/// points default to it).
pub fn with_identities<P: Copy + Default>(p: &[P], stride: usize) -> Vec<P> {
    p.iter()
        .enumerate()
        .map(|(i, &x)| if i % stride == 0 { P::default() } else { x })
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

#[cfg(test)]
mod tests {
    use group::prime::PrimeCurveAffine;

    use super::*;

    #[test]
    fn scalars_are_seeded_and_the_first_chunk_is_a_sequential_draw() {
        let n = SCALAR_CHUNK + 100;
        let a = random_scalars(n, 7, 3);
        assert_eq!(a, random_scalars(n, 7, 3));
        assert_ne!(a, random_scalars(n, 7, 4));
        let mut r = rng(7, 3);
        let seq: Vec<Fr> = (0..SCALAR_CHUNK)
            .map(|_| Fr::from(Scalar::random(&mut r)))
            .collect();
        assert_eq!(a[..SCALAR_CHUNK], seq[..]);
        // The second chunk is drawn from another window, not a repeat of the first.
        assert_ne!(a[SCALAR_CHUNK..], a[..100]);
    }

    /// Times the progression against one scalar multiplication per point (the suite's former
    /// generator), same count, same machine, one run:
    /// `cargo test --release -p bellows-conformance --lib data::tests::point_generation_cost -- --ignored --nocapture`
    #[test]
    #[ignore = "a measurement, not a check"]
    fn point_generation_cost() {
        let n = 1 << 16;
        let t = std::time::Instant::now();
        let p = progression::<G1Projective>(n, 5, 1001);
        let fast = t.elapsed();
        let t = std::time::Instant::now();
        let k = random_scalars(n, 5, 1001);
        let proj: Vec<G1Projective> = k
            .par_iter()
            .map(|k| G1Projective::generator() * Scalar::from(*k))
            .collect();
        let mut q = vec![G1Affine::default(); n];
        G1Projective::batch_normalize(&proj, &mut q);
        let slow = t.elapsed();
        println!(
            "2^16 G1 points on {} threads: progression {fast:?}, a scalar multiplication each \
             {slow:?} ({:.1}x)",
            rayon::current_num_threads(),
            slow.as_secs_f64() / fast.as_secs_f64()
        );
        assert_eq!(p.len(), q.len());
    }

    #[test]
    fn points_step_evenly_inside_a_chunk_and_start_afresh_at_the_next() {
        let n = POINT_CHUNK + 3;
        let p = progression::<G1Projective>(n, 5, 1001);
        assert_eq!(p.len(), n);
        assert!(p.iter().all(|x| !bool::from(x.is_identity())));
        let d = |i: usize| G1Projective::from(p[i + 1]) - G1Projective::from(p[i]);
        assert_eq!(d(0), d(1));
        assert_eq!(d(0), d(POINT_CHUNK - 2));
        assert_ne!(d(0), d(POINT_CHUNK - 1));
        assert_ne!(d(0), d(POINT_CHUNK));
        let q = progression::<G2Projective>(9, 5, 1002);
        assert!(q.iter().all(|x| !bool::from(x.is_identity())));
        assert_eq!(p, progression::<G1Projective>(n, 5, 1001));
    }
}

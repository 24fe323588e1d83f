//! Throughput measurements of the arithmetic kernels (used by `bellows-cuda-check`).
//!
//! Each measurement launches a dedicated kernel once to warm up, then `repeats` times between
//! device events, and reports every repeat's device time; callers take the median.
//! Multiplication kernels run four independent chains x ← x·y per thread; mixed-addition kernels
//! run one XYZZ accumulator per thread over a cached table of affine points.

use bellows_core::{
    layout::{Fp, Fp2, Fr, G1Affine, G2Affine},
    Result,
};
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use bellows_cuda::{
    points::{G1Xyzz, G2Xyzz},
    CudaDevice, Plain,
};

use crate::{test_kernels::TestKernels, testing::FieldCase};

/// Which field a multiplication benchmark uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchField {
    /// The scalar field (8 × 32-bit limbs).
    Fr,
    /// The scalar field through the generic Montgomery reduction (without the special case for
    /// Fr's low limbs), for comparison.
    FrGeneric,
    /// The base field (12 limbs).
    Fp,
    /// Squares in the base field (the dedicated squaring).
    FpSqr,
    /// Squares in the base field as products (`FpPlain`), for comparison.
    FpSqrPlain,
    /// The quadratic extension (Karatsuba, 3 Fp products).
    Fp2,
}

/// Which group a mixed-addition benchmark uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchGroup {
    /// G1 over Fp.
    G1,
    /// G1 over `FpPlain` (squares as products, Y3 as two products), for comparison.
    G1Plain,
    /// G2 over Fp2.
    G2,
}

/// Device times of repeated runs of one benchmark kernel.
#[derive(Clone, Debug)]
pub struct Timings {
    /// Operations per run.
    pub ops_per_run: u64,
    /// Device milliseconds of each run.
    pub ms: Vec<f64>,
}

impl Timings {
    /// Median run time in milliseconds.
    pub fn median_ms(&self) -> f64 {
        median(&self.ms)
    }
    /// Operations per second at the median.
    pub fn ops_per_sec(&self) -> f64 {
        self.ops_per_run as f64 / (self.median_ms() / 1e3)
    }
}

/// Median of a non-empty list (mean of the middle two for even lengths).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// Launch shape of a benchmark: grid, block, rounds per thread, timed repeats.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Blocks in the grid.
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
    /// Rounds per thread (what a round is depends on the benchmark).
    pub iters: u32,
    /// Timed runs after the warm-up.
    pub repeats: usize,
}

impl Shape {
    /// Threads in the grid.
    fn threads_total(&self) -> usize {
        self.blocks as usize * self.threads as usize
    }
}

impl TestKernels {
    fn bench_kernel<T: Plain, O: Plain>(
        dev: &CudaDevice,
        f: &CudaFunction,
        input: &[T],
        extra: Option<u32>,
        out_len: usize,
        shape: Shape,
    ) -> Result<Vec<f64>> {
        let Shape {
            blocks,
            threads,
            iters,
            repeats,
        } = shape;
        let din = dev.upload(input)?;
        let mut dout = dev.alloc::<O>(out_len)?;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = |dev: &CudaDevice| -> Result<()> {
            let mut l = dev.stream().launch_builder(f);
            l.arg(din.raw());
            if let Some(x) = extra.as_ref() {
                l.arg(x);
            }
            l.arg(dout.raw_mut()).arg(&iters);
            // SAFETY: the kernel reads per thread at most the inputs sized for blocks·threads
            // (checked by the callers) and writes out_len outputs.
            unsafe { l.launch(cfg) }.map(|_| ()).map_err(|e| dev.err(e))
        };
        launch(dev)?;
        dev.synchronize()?;
        (0..repeats).map(|_| dev.time_ms(&mut launch)).collect()
    }

    /// Field multiplications: `blocks × threads` threads, each `4·iters` products.
    pub fn bench_mul(&self, dev: &CudaDevice, field: BenchField, shape: Shape) -> Result<Timings> {
        let t = shape.threads_total();
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let ms = match field {
            BenchField::Fr => {
                let v: Vec<Fr> = (0..2 * t).map(|_| Fr::random(&mut rng)).collect();
                Self::bench_kernel::<Fr, Fr>(dev, &self.bench_fr_mul, &v, None, t, shape)?
            }
            BenchField::FrGeneric => {
                let v: Vec<Fr> = (0..2 * t).map(|_| Fr::random(&mut rng)).collect();
                Self::bench_kernel::<Fr, Fr>(dev, &self.bench_fr_mul_generic, &v, None, t, shape)?
            }
            BenchField::Fp => {
                let v: Vec<Fp> = (0..2 * t).map(|_| Fp::random(&mut rng)).collect();
                Self::bench_kernel::<Fp, Fp>(dev, &self.bench_fp_mul, &v, None, t, shape)?
            }
            BenchField::FpSqr | BenchField::FpSqrPlain => {
                let v: Vec<Fp> = (0..2 * t).map(|_| Fp::random(&mut rng)).collect();
                let k = self;
                let f = if field == BenchField::FpSqr {
                    &k.bench_fp_sqr
                } else {
                    &k.bench_fp_sqr_plain
                };
                Self::bench_kernel::<Fp, Fp>(dev, f, &v, None, t, shape)?
            }
            BenchField::Fp2 => {
                let v: Vec<Fp2> = (0..2 * t).map(|_| Fp2::random(&mut rng)).collect();
                Self::bench_kernel::<Fp2, Fp2>(dev, &self.bench_fp2_mul, &v, None, t, shape)?
            }
        };
        Ok(Timings {
            ops_per_run: 4 * t as u64 * u64::from(shape.iters),
            ms,
        })
    }

    /// Mixed additions (XYZZ + affine): `blocks × threads` threads, each `iters` additions of
    /// points from a table of `table` random points (a power of two).
    pub fn bench_madd(
        &self,
        dev: &CudaDevice,
        group: BenchGroup,
        table: u32,
        shape: Shape,
    ) -> Result<Timings> {
        if !table.is_power_of_two() {
            return Err(bellows_core::Error::invalid(
                "point table size must be a power of two",
            ));
        }
        let t = shape.threads_total();
        let mut rng = ChaCha8Rng::seed_from_u64(43);
        let mask = table - 1;
        let ms = match group {
            BenchGroup::G1 | BenchGroup::G1Plain => {
                let pts: Vec<G1Affine> = random_points::<blstrs::G1Projective, _>(table, &mut rng);
                let k = self;
                Self::bench_kernel::<G1Affine, G1Xyzz>(
                    dev,
                    if group == BenchGroup::G1 {
                        &k.bench_g1_madd
                    } else {
                        &k.bench_g1_madd_plain
                    },
                    &pts,
                    Some(mask),
                    t,
                    shape,
                )?
            }
            BenchGroup::G2 => {
                let pts: Vec<G2Affine> = random_points::<blstrs::G2Projective, _>(table, &mut rng);
                Self::bench_kernel::<G2Affine, G2Xyzz>(
                    dev,
                    &self.bench_g2_madd,
                    &pts,
                    Some(mask),
                    t,
                    shape,
                )?
            }
        };
        Ok(Timings {
            ops_per_run: t as u64 * u64::from(shape.iters),
            ms,
        })
    }
}

/// `n` random points of group `P` (the generator times a random scalar), in the layout `L`.
fn random_points<P: Group + Curve, L: From<P::AffineRepr>>(n: u32, rng: &mut ChaCha8Rng) -> Vec<L> {
    (0..n)
        .map(|_| L::from((P::generator() * P::Scalar::random(&mut *rng)).to_affine()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}

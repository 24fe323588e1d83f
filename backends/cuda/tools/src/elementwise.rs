//! Element-wise test entry points for the field and curve kernels (kernels/testing.cu, outside
//! the production library).
//!
//! Each call runs one operation over whole slices on the device (one GPU thread per element) and
//! returns the results. They exist so that every kernel-side primitive can be compared bit for bit
//! with blst (the `bellows-cuda-check` program, and `tests/emulation.rs` for the same code on the
//! host); the production kernels (NTT, later MSM) inline the same primitives.

use bellows_core::{
    layout::{Fp, Fp2, Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Error, Result,
};
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};

use bellows_cuda::{CudaDevice, Plain};

use crate::test_kernels::TestKernels;

/// Field operations of the test kernels (codes shared with tools/kernels/ops.cuh).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum FieldOp {
    /// a + b.
    Add = 0,
    /// a − b.
    Sub = 1,
    /// −a.
    Neg = 2,
    /// 2a.
    Double = 3,
    /// a·b (Montgomery product).
    Mul = 4,
    /// a².
    Square = 5,
    /// a⁻¹, and 0 for a = 0.
    Inverse = 6,
    /// Canonical integer limbs → Montgomery form.
    ToMontgomery = 7,
    /// Montgomery form → canonical integer limbs.
    FromMontgomery = 8,
    /// a·b − (a + b)·(a − b), through the field's `mul_sub` (one reduction for Fp's wide
    /// product).
    MulSub = 9,
}

impl FieldOp {
    /// Every operation.
    pub const ALL: [FieldOp; 10] = [
        FieldOp::Add,
        FieldOp::Sub,
        FieldOp::Neg,
        FieldOp::Double,
        FieldOp::Mul,
        FieldOp::Square,
        FieldOp::Inverse,
        FieldOp::ToMontgomery,
        FieldOp::FromMontgomery,
        FieldOp::MulSub,
    ];
}

/// Curve operations of the test kernels (codes shared with tools/kernels/ops.cuh). P and Q are given
/// in blst's Jacobian layout and converted to XYZZ on the device; A is affine. Every operation
/// returns its XYZZ result converted to affine and to Jacobian.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum CurveOp {
    /// P + Q, full XYZZ addition.
    Add = 0,
    /// P + A, mixed addition.
    AddMixed = 1,
    /// 2P.
    Double = 2,
    /// 2A (affine doubling).
    DoubleAffine = 3,
    /// −P.
    Negate = 4,
    /// P itself (tests the conversions Jacobian → XYZZ → affine / Jacobian).
    Convert = 5,
    /// −A.
    NegateAffine = 6,
}

impl CurveOp {
    /// Every operation.
    pub const ALL: [CurveOp; 7] = [
        CurveOp::Add,
        CurveOp::AddMixed,
        CurveOp::Double,
        CurveOp::DoubleAffine,
        CurveOp::Negate,
        CurveOp::Convert,
        CurveOp::NegateAffine,
    ];
}

const BLOCK: u32 = 128;

fn grid(n: usize) -> LaunchConfig {
    let blocks = (n as u64).div_ceil(BLOCK as u64).clamp(1, 1 << 16) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn same_len(lens: &[usize]) -> Result<usize> {
    if lens.windows(2).all(|w| w[0] == w[1]) {
        Ok(lens[0])
    } else {
        Err(Error::invalid(format!(
            "operands of different lengths: {lens:?}"
        )))
    }
}

impl TestKernels {
    fn field_op<T: Plain>(
        dev: &CudaDevice,
        f: &CudaFunction,
        op: FieldOp,
        a: &[T],
        b: &[T],
    ) -> Result<Vec<T>> {
        let n = same_len(&[a.len(), b.len()])?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let (da, db) = (dev.upload(a)?, dev.upload(b)?);
        let mut out = dev.alloc::<T>(n)?;
        let (code, len) = (op as u32, n as u64);
        let mut l = dev.stream().launch_builder(f);
        l.arg(&code)
            .arg(da.raw())
            .arg(db.raw())
            .arg(out.raw_mut())
            .arg(&len);
        // SAFETY: the kernel reads n values from each input and writes n to `out`, all of which
        // hold at least n values of T's layout (the kernel's argument types).
        unsafe { l.launch(grid(n)) }.map_err(|e| dev.err(e))?;
        dev.download(&out)
    }

    /// Applies `op` to Fr elements (Montgomery limbs) pairwise: `op(a[i], b[i])`.
    pub fn fr_op(&self, dev: &CudaDevice, op: FieldOp, a: &[Fr], b: &[Fr]) -> Result<Vec<Fr>> {
        Self::field_op(dev, &self.fr_op, op, a, b)
    }
    /// Applies `op` to Fp elements pairwise.
    pub fn fp_op(&self, dev: &CudaDevice, op: FieldOp, a: &[Fp], b: &[Fp]) -> Result<Vec<Fp>> {
        Self::field_op(dev, &self.fp_op, op, a, b)
    }
    /// Applies `op` to Fp2 elements pairwise.
    pub fn fp2_op(&self, dev: &CudaDevice, op: FieldOp, a: &[Fp2], b: &[Fp2]) -> Result<Vec<Fp2>> {
        Self::field_op(dev, &self.fp2_op, op, a, b)
    }

    #[allow(clippy::type_complexity)]
    fn curve_op<J: Plain, A: Plain>(
        dev: &CudaDevice,
        f: &CudaFunction,
        op: CurveOp,
        p: &[J],
        q: &[J],
        a: &[A],
    ) -> Result<(Vec<A>, Vec<J>)> {
        let n = same_len(&[p.len(), q.len(), a.len()])?;
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let (dp, dq, da) = (dev.upload(p)?, dev.upload(q)?, dev.upload(a)?);
        let mut out_a = dev.alloc::<A>(n)?;
        let mut out_j = dev.alloc::<J>(n)?;
        let (code, len) = (op as u32, n as u64);
        let mut l = dev.stream().launch_builder(f);
        l.arg(&code)
            .arg(dp.raw())
            .arg(dq.raw())
            .arg(da.raw())
            .arg(out_a.raw_mut())
            .arg(out_j.raw_mut())
            .arg(&len);
        // SAFETY: every buffer holds n values of the layout the kernel expects for its argument.
        unsafe { l.launch(grid(n)) }.map_err(|e| dev.err(e))?;
        Ok((dev.download(&out_a)?, dev.download(&out_j)?))
    }

    /// Applies `op` to G1 inputs (see [`CurveOp`]); returns the results as affine points and as
    /// Jacobian points.
    pub fn g1_op(
        &self,
        dev: &CudaDevice,
        op: CurveOp,
        p: &[G1Jacobian],
        q: &[G1Jacobian],
        a: &[G1Affine],
    ) -> Result<(Vec<G1Affine>, Vec<G1Jacobian>)> {
        Self::curve_op(dev, &self.g1_op, op, p, q, a)
    }

    /// Applies `op` to G2 inputs (see [`CurveOp`]).
    pub fn g2_op(
        &self,
        dev: &CudaDevice,
        op: CurveOp,
        p: &[G2Jacobian],
        q: &[G2Jacobian],
        a: &[G2Affine],
    ) -> Result<(Vec<G2Affine>, Vec<G2Jacobian>)> {
        Self::curve_op(dev, &self.g2_op, op, p, q, a)
    }
}

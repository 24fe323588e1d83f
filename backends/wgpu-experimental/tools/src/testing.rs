//! Element-wise runs of the field and curve kernels (the backend's `shaders/testing.wgsl`), for
//! tests that compare them with blst. Not used by the backend's operations.

use bellows_core::{
    layout::{Fp, Fr},
    Error, Result,
};

use bellows_wgpu::{
    gpu::{Gpu, Module, Slice},
    msm::MsmGroup,
    plain::{bytes, bytes_mut, Plain},
    shader::GroupKind,
    WgpuBackend,
};

/// A field operation of `fr_ops` / `fp_ops`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum FieldOp {
    /// a + b.
    Add = 0,
    /// a − b.
    Sub = 1,
    /// a·b.
    Mul = 2,
    /// −a.
    Neg = 3,
    /// a².
    Sqr = 4,
    /// The canonical integer of a (Montgomery form undone).
    FromMont = 5,
}

/// A curve kernel of testing.wgsl.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CurveOp {
    /// p + q with q affine (`madd-2008-s`).
    AddAffine,
    /// p + q (`add-2008-s`).
    Add,
    /// 2p (`dbl-2008-s-1`).
    Double,
}

impl CurveOp {
    fn entry(self) -> &'static str {
        match self {
            CurveOp::AddAffine => "curve_madd",
            CurveOp::Add => "curve_add",
            CurveOp::Double => "curve_dbl",
        }
    }
}

/// A point in XYZZ coordinates (x = X/ZZ, y = Y/ZZZ, ZZ³ = ZZZ²; ZZ = 0 the identity), as the
/// kernels keep accumulators: coordinates of type `F` ([`Fp`] for G1,
/// [`Fp2`](bellows_core::layout::Fp2) for G2).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Xyzz<F> {
    /// X.
    pub x: F,
    /// Y.
    pub y: F,
    /// ZZ.
    pub zz: F,
    /// ZZZ.
    pub zzz: F,
}

// SAFETY: #[repr(C)] over four coordinates of a Plain type of 48 or 96 bytes: no padding.
unsafe impl<F: Plain> Plain for Xyzz<F> {}

#[allow(clippy::too_many_arguments)]
fn run_raw(
    gpu: &Gpu,
    module: Module,
    entry: &'static str,
    op: u32,
    k: u32,
    a: &[u8],
    b: &[u8],
    count: usize,
    out: &mut [u8],
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let ina = gpu.upload(a, "a")?;
    let inb = gpu.upload(b, "b")?;
    let outp = gpu.storage(out.len() as u64, "out")?;
    let kernel = gpu.kernel(module, entry)?;
    let mut p = [0u32; 16];
    p[0] = count as u32;
    p[1] = op;
    p[2] = k;
    let mut batch = gpu.batch();
    let bind = [Slice::from(&ina), Slice::from(&inb), Slice::from(&outp)];
    batch.dispatch(&kernel, &bind, p, count as u64);
    batch.submit()?;
    gpu.read(&outp, 0, out)
}

fn field_ops<T: Plain + Default>(
    backend: &WgpuBackend,
    entry: &'static str,
    op: FieldOp,
    a: &[T],
    b: &[T],
) -> Result<Vec<T>> {
    if a.len() != b.len() {
        return Err(Error::invalid("operands of different lengths"));
    }
    let mut out = vec![T::default(); a.len()];
    backend.with_gpu(entry, |gpu| {
        let m = Module::Testing(GroupKind::G1);
        run_raw(
            gpu,
            m,
            entry,
            op as u32,
            0,
            bytes(a),
            bytes(b),
            a.len(),
            bytes_mut(&mut out),
        )
    })?;
    Ok(out)
}

/// `op` on Fr elements, element by element, on the device.
pub fn fr_ops(backend: &WgpuBackend, op: FieldOp, a: &[Fr], b: &[Fr]) -> Result<Vec<Fr>> {
    field_ops(backend, "fr_ops", op, a, b)
}

/// `op` on Fp elements, element by element, on the device.
pub fn fp_ops(backend: &WgpuBackend, op: FieldOp, a: &[Fp], b: &[Fp]) -> Result<Vec<Fp>> {
    field_ops(backend, "fp_ops", op, a, b)
}

/// `op` on the points `p` (XYZZ) and `q` (XYZZ, or affine points of `G` for
/// [`CurveOp::AddAffine`]; ignored by [`CurveOp::Double`]), on the device; Jacobian results.
pub fn curve_ops<G: MsmGroup, F: Plain, Q: Plain>(
    backend: &WgpuBackend,
    op: CurveOp,
    p: &[Xyzz<F>],
    q: &[Q],
) -> Result<Vec<G::Jacobian>> {
    if p.len() != q.len() {
        return Err(Error::invalid("operands of different lengths"));
    }
    let mut out = vec![G::Jacobian::default(); p.len()];
    backend.with_gpu("curve_ops", |gpu| {
        run_raw(
            gpu,
            Module::Testing(G::KIND),
            op.entry(),
            0,
            0,
            bytes(p),
            bytes(q),
            p.len(),
            bytes_mut(&mut out),
        )
    })?;
    Ok(out)
}

//! The kernels' field and curve arithmetic against blst, element by element, on the adapter:
//! random values plus the edge cases (0, 1, p − 1, equal and opposite points, the identity).

// The backend's own tests' helpers (the backend on the machine's adapter, or a skip).
#[path = "../../tests/common/mod.rs"]
mod common;

use bellows_core::layout::{Fp, Fp2, Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian};
use bellows_wgpu::msm::{G1, G2};
use bellows_wgpu_tools::testing::{curve_ops, fp_ops, fr_ops, CurveOp, FieldOp, Xyzz};
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn scalars(n: usize, seed: u64) -> Vec<blstrs::Scalar> {
    let mut r = rng(seed);
    let mut v: Vec<blstrs::Scalar> = (0..n).map(|_| blstrs::Scalar::random(&mut r)).collect();
    // Edge cases first: 0, 1, −1, 2.
    v[0] = blstrs::Scalar::ZERO;
    v[1] = blstrs::Scalar::ONE;
    v[2] = -blstrs::Scalar::ONE;
    v[3] = blstrs::Scalar::from(2u64);
    v
}

/// Random Fp elements (coordinates of random G1 points), with 0, 1, −1 and 2 first.
fn fps(n: usize, seed: u64) -> Vec<Fp> {
    let pts = g1_points(n.div_ceil(2), seed);
    let mut v: Vec<Fp> = pts
        .iter()
        .flat_map(|p| {
            let l = G1Affine::from(*p);
            [l.x, l.y]
        })
        .take(n)
        .collect();
    v[0] = Fp::default();
    v[1] = Fp::ONE;
    v[2] = host_neg(&Fp::ONE);
    v[3] = host_fp(HostOp::Add, &Fp::ONE, &Fp::ONE);
    v
}

/// A blst Fp operation on layout values.
#[derive(Clone, Copy, Debug)]
enum HostOp {
    Add,
    Sub,
    Mul,
}

fn host_fp(op: HostOp, a: &Fp, b: &Fp) -> Fp {
    let f = match op {
        HostOp::Add => blst::blst_fp_add,
        HostOp::Sub => blst::blst_fp_sub,
        HostOp::Mul => blst::blst_fp_mul,
    };
    let mut r = Fp::default();
    // SAFETY: layout::Fp is #[repr(C)] over [u64; 6], blst_fp's representation (asserted in
    // bellows-core), so the three pointers are valid, aligned blst_fp pointers for the call.
    unsafe {
        f(
            (&mut r as *mut Fp).cast(),
            (a as *const Fp).cast(),
            (b as *const Fp).cast(),
        )
    };
    r
}

fn host_neg(a: &Fp) -> Fp {
    let mut r = Fp::default();
    // SAFETY: as in host_fp.
    unsafe { blst::blst_fp_cneg((&mut r as *mut Fp).cast(), (a as *const Fp).cast(), true) };
    r
}

fn host_sqr(a: &Fp) -> Fp {
    let mut r = Fp::default();
    // SAFETY: as in host_fp.
    unsafe { blst::blst_fp_sqr((&mut r as *mut Fp).cast(), (a as *const Fp).cast()) };
    r
}

/// Runs `check` on `backend` when there is one (no adapter: the test passes, as everywhere).
fn on(backend: Option<bellows_wgpu::WgpuBackend>, check: fn(&bellows_wgpu::WgpuBackend)) {
    if let Some(b) = backend {
        check(&b);
    }
}

/// One test a name: `CHECK` on the backend its function makes.
macro_rules! tests_on {
    ($check:ident: $($(#[$doc:meta])* $name:ident => $backend:path,)+) => {
        $($(#[$doc])* #[test] fn $name() { on($backend(), $check); })+
    };
}

tests_on! { fr_arithmetic:
    fr_arithmetic_matches_blst => common::backend,
    fr_arithmetic_matches_blst_with_the_other_products => common::other_products,
}

fn fr_arithmetic(b: &bellows_wgpu::WgpuBackend) {
    let n = 257;
    let (xa, xb) = (scalars(n, 1), scalars(n, 2));
    let mut xb = xb;
    xb[5] = xa[5]; // a − a
    xb[6] = -xa[6]; // a + (−a)
    let a: Vec<Fr> = xa.iter().map(|&s| s.into()).collect();
    let bb: Vec<Fr> = xb.iter().map(|&s| s.into()).collect();
    let cases: [(FieldOp, FrFn); 5] = [
        (FieldOp::Add, |a, b| a + b),
        (FieldOp::Sub, |a, b| a - b),
        (FieldOp::Mul, |a, b| a * b),
        (FieldOp::Neg, |a, _| -a),
        (FieldOp::Sqr, |a, _| a.square()),
    ];
    for (op, f) in cases {
        let got = fr_ops(b, op, &a, &bb).unwrap();
        for i in 0..n {
            assert_eq!(got[i], Fr::from(f(xa[i], xb[i])), "{op:?} at {i}");
        }
    }
    // Canonical form: the limbs of to_repr (little-endian bytes).
    let got = fr_ops(b, FieldOp::FromMont, &a, &bb).unwrap();
    for i in 0..n {
        let repr = ff::PrimeField::to_repr(&xa[i]);
        let want: Vec<u64> = repr
            .as_ref()
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got[i].0.to_vec(), want, "from_mont at {i}");
    }
}

tests_on! { fp_arithmetic:
    fp_arithmetic_matches_blst => common::backend,
    fp_arithmetic_matches_blst_with_the_other_products => common::other_products,
    /// Fp with the MSM's other arithmetic form (`msm-arith`; straight-line code on lavapipe,
    /// the default form of GPUs).
    fp_arithmetic_matches_blst_with_the_other_arithmetic => common::other_arith,
}

/// The kernels use 64-bit integer limb products by default exactly on hardware adapters that
/// offer them: not on Mesa's lavapipe (a software adapter, whose compiler is far slower on
/// them), so CI runs the portable path by default and the 64-bit one in the `…other_products`
/// tests.
#[test]
fn int64_follows_the_adapter() {
    let Some(b) = common::backend() else { return };
    let g = b.gpu();
    assert_eq!(
        g.int64,
        g.offers_int64 && g.device_type != wgpu::DeviceType::Cpu,
        "{}: 64-bit products by default exactly on hardware adapters that offer them",
        g.name
    );
    eprintln!(
        "adapter {}: 64-bit integer products {}",
        b.gpu().name,
        b.gpu().int64
    );
}

fn fp_arithmetic(b: &bellows_wgpu::WgpuBackend) {
    let n = 257;
    let (a, mut bb) = (fps(n, 3), fps(n, 4));
    bb[5] = a[5];
    bb[6] = host_neg(&a[6]);
    let cases: [(FieldOp, FpFn); 5] = [
        (FieldOp::Add, |x, y| host_fp(HostOp::Add, x, y)),
        (FieldOp::Sub, |x, y| host_fp(HostOp::Sub, x, y)),
        (FieldOp::Mul, |x, y| host_fp(HostOp::Mul, x, y)),
        (FieldOp::Neg, |x, _| host_neg(x)),
        (FieldOp::Sqr, |x, _| host_sqr(x)),
    ];
    for (op, f) in cases {
        let got = fp_ops(b, op, &a, &bb).unwrap();
        for i in 0..n {
            assert_eq!(got[i], f(&a[i], &bb[i]), "{op:?} at {i}");
        }
    }
}

/// A host Fp operation.
type FpFn = fn(&Fp, &Fp) -> Fp;
/// A host Fr operation.
type FrFn = fn(blstrs::Scalar, blstrs::Scalar) -> blstrs::Scalar;

fn g1_points(n: usize, seed: u64) -> Vec<blstrs::G1Affine> {
    let mut r = rng(seed);
    (0..n)
        .map(|_| blstrs::G1Projective::random(&mut r).to_affine())
        .collect()
}

fn g2_points(n: usize, seed: u64) -> Vec<blstrs::G2Affine> {
    let mut r = rng(seed);
    (0..n)
        .map(|_| blstrs::G2Projective::random(&mut r).to_affine())
        .collect()
}

/// Host arithmetic on the coordinates of a group, through blst (for building XYZZ inputs).
trait Coord: Copy + Default + PartialEq + std::fmt::Debug {
    fn mul(a: &Self, b: &Self) -> Self;
    fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

impl Coord for Fp {
    fn mul(a: &Self, b: &Self) -> Self {
        host_fp(HostOp::Mul, a, b)
    }
}

impl Coord for Fp2 {
    fn mul(a: &Self, b: &Self) -> Self {
        let mut r = Fp2::default();
        // SAFETY: layout::Fp2 is #[repr(C)] over two Fp, blst_fp2's representation (asserted in
        // bellows-core); the pointers are valid for the call.
        unsafe {
            blst::blst_fp2_mul(
                (&mut r as *mut Fp2).cast(),
                (a as *const Fp2).cast(),
                (b as *const Fp2).cast(),
            )
        };
        r
    }
}

/// (x, y) as XYZZ with Z = z: (x·z², y·z³, z², z³); the identity stays all zero.
fn to_xyzz<F: Coord>(x: F, y: F, z: F) -> Xyzz<F> {
    if x.is_zero() && y.is_zero() {
        return Xyzz::default();
    }
    let zz = F::mul(&z, &z);
    let zzz = F::mul(&zz, &z);
    Xyzz {
        x: F::mul(&x, &zz),
        y: F::mul(&y, &zzz),
        zz,
        zzz,
    }
}

/// Every curve kernel on pairs of points (with q = p, q = −p and identities mixed in), compared
/// with blst on affine encodings; the XYZZ inputs carry random Z so the formulas see
/// non-trivial ZZ and ZZZ.
macro_rules! curve_test {
    // The group's types, named once.
    ($name:ident, $backend:path, G1) => {
        curve_test! { $name, $backend, G1, g1_points, blstrs::G1Projective, blstrs::G1Affine, G1Affine, Fp, G1Jacobian }
    };
    ($name:ident, $backend:path, G2) => {
        curve_test! { $name, $backend, G2, g2_points, blstrs::G2Projective, blstrs::G2Affine, G2Affine, Fp2, G2Jacobian }
    };
    ($name:ident, $backend:path, $grp:ty, $points:ident, $proj:ty, $aff:ty, $laff:ty, $coord:ty, $jac:ty) => {
        #[test]
        fn $name() {
            let Some(b) = $backend() else { return };
            let n = 24;
            let mut p = $points(n, 5);
            let mut q = $points(n, 6);
            q[1] = p[1]; // p + p
            q[2] = -p[2]; // p + (−p)
            p[3] = <$aff as group::prime::PrimeCurveAffine>::identity();
            q[4] = <$aff as group::prime::PrimeCurveAffine>::identity();
            p[5] = <$aff as group::prime::PrimeCurveAffine>::identity();
            q[5] = p[5];
            // Random Z values: the x coordinates of other random points.
            let zs: Vec<$laff> = $points(2 * n, 7).into_iter().map(<$laff>::from).collect();
            let pl: Vec<$laff> = p.iter().map(|&x| x.into()).collect();
            let ql: Vec<$laff> = q.iter().map(|&x| x.into()).collect();
            let px: Vec<Xyzz<$coord>> =
                (0..n).map(|i| to_xyzz(pl[i].x, pl[i].y, zs[i].x)).collect();
            let qx: Vec<Xyzz<$coord>> = (0..n)
                .map(|i| to_xyzz(ql[i].x, ql[i].y, zs[n + i].x))
                .collect();
            let check = |got: Vec<$jac>, want: &dyn Fn(usize) -> $proj, what: &str| {
                for i in 0..n {
                    let g: $proj = got[i].into();
                    assert_eq!(g.to_affine(), want(i).to_affine(), "{what} at {i}");
                }
            };
            let pp = |i: usize| <$proj>::from(p[i]);
            let qp = |i: usize| <$proj>::from(q[i]);
            check(
                curve_ops::<$grp, _, _>(&b, CurveOp::AddAffine, &px, &ql).unwrap(),
                &|i| pp(i) + qp(i),
                "p + q affine",
            );
            check(
                curve_ops::<$grp, _, _>(&b, CurveOp::Add, &px, &qx).unwrap(),
                &|i| pp(i) + qp(i),
                "p + q",
            );
            check(
                curve_ops::<$grp, _, _>(&b, CurveOp::Double, &px, &qx).unwrap(),
                &|i| pp(i).double(),
                "2p",
            );
        }
    };
}

curve_test!(g1_arithmetic_matches_blst, common::backend, G1);
curve_test!(
    g1_arithmetic_matches_blst_with_the_other_products,
    common::other_products,
    G1
);
curve_test!(g2_arithmetic_matches_blst, common::g2_backend, G2);
curve_test!(
    g1_arithmetic_matches_blst_with_the_other_arithmetic,
    common::other_arith_curves,
    G1
);

//! Field test vectors (Fr, Fp, Fp2) and their blst results.

use bellows_core::{
    layout::{Fp, Fp2, Fr},
    Result,
};
use ff::{Field, PrimeField};
use rand::RngCore;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::{compare, failed, CheckResult};
use bellows_cuda::Plain;

use crate::elementwise::FieldOp;

/// A field whose kernel results can be checked against blstrs.
pub trait FieldCase: Plain + std::fmt::Debug + PartialEq {
    /// Short name ("fr", "fp", "fp2").
    const NAME: &'static str;
    /// Montgomery-form inputs at the edges: 0, 1, −1, ±2, ±1/2, 2^k ± 1 for k around the limb
    /// boundaries, and raw limb patterns (p − 1, p − 2, 1, 2^k) read as Montgomery values.
    fn edge_cases() -> Vec<Self>;
    /// Canonical integers (limbs < p) at the edges, for [`FieldOp::ToMontgomery`].
    fn integer_edge_cases() -> Vec<Self>;
    /// A uniformly random element (Montgomery form).
    fn random(rng: &mut ChaCha8Rng) -> Self;
    /// The canonical integer limbs of an element (host-side from-Montgomery).
    fn integer(self) -> Self;
    /// blst's result of `op` on (a, b).
    fn expected(op: FieldOp, a: Self, b: Self) -> Self;
}

/// Bit positions whose neighbourhoods (2^k − 1, 2^k, 2^k + 1) are tested: around every 32-bit
/// limb boundary and the top of the fields.
const EDGE_BITS: [u32; 14] = [1, 31, 32, 33, 63, 64, 65, 127, 128, 129, 191, 192, 253, 254];
const EDGE_BITS_FP: [u32; 8] = [255, 256, 257, 319, 320, 321, 379, 380];

fn sub_u64(l: &[u64], s: u64) -> Vec<u64> {
    let mut v = l.to_vec();
    let mut borrow = s;
    for x in v.iter_mut() {
        let (d, b) = x.overflowing_sub(borrow);
        *x = d;
        borrow = u64::from(b);
    }
    v
}

fn pow2_limbs(k: u32, n: usize) -> Vec<u64> {
    let mut v = vec![0u64; n];
    v[(k / 64) as usize] = 1u64 << (k % 64);
    v
}

type Scalar = blstrs::Scalar;

fn fr_s(a: Fr) -> Scalar {
    Scalar::from(a)
}

fn fr_from_int(l: &[u64]) -> Scalar {
    let mut b = [0u8; 32];
    for (i, x) in l.iter().enumerate() {
        b[8 * i..8 * i + 8].copy_from_slice(&x.to_le_bytes());
    }
    Scalar::from_repr_vartime(b).expect("integer below r")
}

fn fr_int(s: Scalar) -> Fr {
    let b = s.to_repr();
    let mut l = [0u64; 4];
    for (i, x) in l.iter_mut().enumerate() {
        *x = u64::from_le_bytes(b.as_ref()[8 * i..8 * i + 8].try_into().unwrap());
    }
    Fr(l)
}

impl FieldCase for Fr {
    const NAME: &'static str = "fr";

    fn edge_cases() -> Vec<Self> {
        let two = Scalar::from(2u64);
        let half = two.invert().unwrap();
        let mut v: Vec<Scalar> = vec![
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            two,
            -two,
            half,
            -half,
        ];
        for k in EDGE_BITS {
            let p = two.pow_vartime([u64::from(k)]);
            v.extend([p - Scalar::ONE, p, p + Scalar::ONE]);
        }
        let mut out: Vec<Fr> = v.into_iter().map(Fr::from).collect();
        // Raw Montgomery limbs (any value below r is some element's representation).
        out.push(Fr(sub_u64(&Fr::MODULUS, 1).try_into().unwrap()));
        out.push(Fr(sub_u64(&Fr::MODULUS, 2).try_into().unwrap()));
        out.push(Fr([1, 0, 0, 0]));
        for k in [31u32, 32, 64, 128, 192, 254] {
            out.push(Fr(pow2_limbs(k, 4).try_into().unwrap()));
        }
        out.push(Fr([u64::MAX, u64::MAX, u64::MAX, 0x3fff_ffff_ffff_ffff]));
        out
    }

    fn integer_edge_cases() -> Vec<Self> {
        let mut out = vec![Fr([0; 4]), Fr([1, 0, 0, 0]), Fr([2, 0, 0, 0])];
        out.push(Fr(sub_u64(&Fr::MODULUS, 1).try_into().unwrap()));
        out.push(Fr(sub_u64(&Fr::MODULUS, 2).try_into().unwrap()));
        for k in EDGE_BITS {
            let p = pow2_limbs(k, 4);
            out.push(Fr(p.clone().try_into().unwrap()));
            out.push(Fr(sub_u64(&p, 1).try_into().unwrap()));
        }
        out
    }

    fn random(rng: &mut ChaCha8Rng) -> Self {
        Fr::from(Scalar::random(rng))
    }

    fn integer(self) -> Self {
        fr_int(fr_s(self))
    }

    fn expected(op: FieldOp, a: Self, b: Self) -> Self {
        let (x, y) = (fr_s(a), fr_s(b));
        let r = match op {
            FieldOp::Add => x + y,
            FieldOp::Sub => x - y,
            FieldOp::Neg => -x,
            FieldOp::Double => x.double(),
            FieldOp::Mul => x * y,
            FieldOp::Square => x.square(),
            FieldOp::Inverse => x.invert().unwrap_or(Scalar::ZERO),
            FieldOp::ToMontgomery => fr_from_int(&a.0),
            FieldOp::FromMontgomery => return fr_int(x),
            FieldOp::MulSub => x * y - (x + y) * (x - y),
        };
        Fr::from(r)
    }
}

/// Safe calls into blst's Fp and Fp2 arithmetic (blstrs does not export its Fp types).
mod blst_ref {
    use blst::{blst_fp, blst_fp2};

    macro_rules! binop {
        ($name:ident, $t:ty, $f:path) => {
            pub fn $name(a: &$t, b: &$t) -> $t {
                let mut r = <$t>::default();
                // SAFETY: blst reads two initialised values and writes one; all pointers are to
                // live, properly aligned values of the right type.
                unsafe { $f(&mut r, a, b) };
                r
            }
        };
    }
    macro_rules! unop {
        ($name:ident, $t:ty, $f:path) => {
            pub fn $name(a: &$t) -> $t {
                let mut r = <$t>::default();
                // SAFETY: as above, one input.
                unsafe { $f(&mut r, a) };
                r
            }
        };
    }
    binop!(fp_add, blst_fp, blst::blst_fp_add);
    binop!(fp_sub, blst_fp, blst::blst_fp_sub);
    binop!(fp_mul, blst_fp, blst::blst_fp_mul);
    unop!(fp_sqr, blst_fp, blst::blst_fp_sqr);
    unop!(fp_inverse, blst_fp, blst::blst_fp_inverse);
    unop!(fp_to_mont, blst_fp, blst::blst_fp_to);
    unop!(fp_from_mont, blst_fp, blst::blst_fp_from);
    binop!(fp2_add, blst_fp2, blst::blst_fp2_add);
    binop!(fp2_sub, blst_fp2, blst::blst_fp2_sub);
    binop!(fp2_mul, blst_fp2, blst::blst_fp2_mul);
    unop!(fp2_sqr, blst_fp2, blst::blst_fp2_sqr);
    unop!(fp2_inverse, blst_fp2, blst::blst_fp2_inverse);

    pub fn fp_neg(a: &blst_fp) -> blst_fp {
        let mut r = blst_fp::default();
        // SAFETY: as above; flag true negates.
        unsafe { blst::blst_fp_cneg(&mut r, a, true) };
        r
    }
    pub fn fp2_neg(a: &blst_fp2) -> blst_fp2 {
        let mut r = blst_fp2::default();
        // SAFETY: as above.
        unsafe { blst::blst_fp2_cneg(&mut r, a, true) };
        r
    }
    /// An element from 64 uniformly random bytes, reduced mod p (statistically uniform).
    pub fn fp_from_bytes(b: &[u8; 64]) -> blst_fp {
        let mut r = blst_fp::default();
        // SAFETY: blst reads exactly `len` bytes from the given buffer.
        unsafe { blst::blst_fp_from_le_bytes(&mut r, b.as_ptr(), b.len()) };
        r
    }
}

use blst_ref::*;

fn bfp(a: Fp) -> blst::blst_fp {
    blst::blst_fp { l: a.0 }
}

fn lfp(a: blst::blst_fp) -> Fp {
    Fp(a.l)
}

fn fp_is_zero(a: &blst::blst_fp) -> bool {
    a.l.iter().all(|&x| x == 0)
}

fn fp_pow2(k: u32) -> blst::blst_fp {
    // 2^k as an integer, converted into Montgomery form (k < 381).
    fp_to_mont(&blst::blst_fp {
        l: pow2_limbs(k, 6).try_into().unwrap(),
    })
}

impl FieldCase for Fp {
    const NAME: &'static str = "fp";

    fn edge_cases() -> Vec<Self> {
        let zero = blst::blst_fp::default();
        let one = fp_to_mont(&blst::blst_fp {
            l: [1, 0, 0, 0, 0, 0],
        });
        let two = fp_add(&one, &one);
        let half = fp_inverse(&two);
        let mut v = vec![
            zero,
            one,
            fp_neg(&one),
            two,
            fp_neg(&two),
            half,
            fp_neg(&half),
        ];
        for k in EDGE_BITS.iter().chain(EDGE_BITS_FP.iter()) {
            let p = fp_pow2(*k);
            v.extend([fp_sub(&p, &one), p, fp_add(&p, &one)]);
        }
        let mut out: Vec<Fp> = v.into_iter().map(lfp).collect();
        out.push(Fp(sub_u64(&Fp::MODULUS, 1).try_into().unwrap()));
        out.push(Fp(sub_u64(&Fp::MODULUS, 2).try_into().unwrap()));
        out.push(Fp([1, 0, 0, 0, 0, 0]));
        for k in [31u32, 32, 64, 128, 192, 256, 320, 380] {
            out.push(Fp(pow2_limbs(k, 6).try_into().unwrap()));
        }
        out.push(Fp([
            u64::MAX,
            u64::MAX,
            u64::MAX,
            u64::MAX,
            u64::MAX,
            0x0fff_ffff_ffff_ffff,
        ]));
        out
    }

    fn integer_edge_cases() -> Vec<Self> {
        let mut out = vec![Fp([0; 6]), Fp([1, 0, 0, 0, 0, 0]), Fp([2, 0, 0, 0, 0, 0])];
        out.push(Fp(sub_u64(&Fp::MODULUS, 1).try_into().unwrap()));
        out.push(Fp(sub_u64(&Fp::MODULUS, 2).try_into().unwrap()));
        for k in EDGE_BITS.iter().chain(EDGE_BITS_FP.iter()) {
            let p = pow2_limbs(*k, 6);
            out.push(Fp(p.clone().try_into().unwrap()));
            out.push(Fp(sub_u64(&p, 1).try_into().unwrap()));
        }
        out
    }

    fn random(rng: &mut ChaCha8Rng) -> Self {
        let mut b = [0u8; 64];
        rng.fill_bytes(&mut b);
        lfp(fp_from_bytes(&b))
    }

    fn integer(self) -> Self {
        lfp(fp_from_mont(&bfp(self)))
    }

    fn expected(op: FieldOp, a: Self, b: Self) -> Self {
        let (x, y) = (bfp(a), bfp(b));
        lfp(match op {
            FieldOp::Add => fp_add(&x, &y),
            FieldOp::Sub => fp_sub(&x, &y),
            FieldOp::Neg => fp_neg(&x),
            FieldOp::Double => fp_add(&x, &x),
            FieldOp::Mul => fp_mul(&x, &y),
            FieldOp::Square => fp_sqr(&x),
            FieldOp::Inverse if fp_is_zero(&x) => x,
            FieldOp::Inverse => fp_inverse(&x),
            FieldOp::ToMontgomery => fp_to_mont(&x),
            FieldOp::FromMontgomery => fp_from_mont(&x),
            FieldOp::MulSub => fp_sub(&fp_mul(&x, &y), &fp_mul(&fp_add(&x, &y), &fp_sub(&x, &y))),
        })
    }
}

fn bfp2(a: Fp2) -> blst::blst_fp2 {
    blst::blst_fp2 {
        fp: [bfp(a.c0), bfp(a.c1)],
    }
}

fn lfp2(a: blst::blst_fp2) -> Fp2 {
    Fp2 {
        c0: lfp(a.fp[0]),
        c1: lfp(a.fp[1]),
    }
}

impl FieldCase for Fp2 {
    const NAME: &'static str = "fp2";

    fn edge_cases() -> Vec<Self> {
        // Pairs of a few Fp edge values: 0, 1, −1, ±1/2, 2^k ± 1, raw p − 1, raw 2^380.
        let e = Fp::edge_cases();
        let picks = [0usize, 1, 2, 5, 9, 20, e.len() - 1, e.len() - 4];
        let mut out = Vec::new();
        for &i in &picks {
            for &j in &picks {
                out.push(Fp2 { c0: e[i], c1: e[j] });
            }
        }
        out
    }

    fn integer_edge_cases() -> Vec<Self> {
        let e = Fp::integer_edge_cases();
        let mut out = Vec::new();
        for i in (0..e.len()).step_by(3) {
            for j in (0..e.len()).step_by(5) {
                out.push(Fp2 { c0: e[i], c1: e[j] });
            }
        }
        out
    }

    fn random(rng: &mut ChaCha8Rng) -> Self {
        Fp2 {
            c0: Fp::random(rng),
            c1: Fp::random(rng),
        }
    }

    fn integer(self) -> Self {
        Fp2 {
            c0: self.c0.integer(),
            c1: self.c1.integer(),
        }
    }

    fn expected(op: FieldOp, a: Self, b: Self) -> Self {
        let (x, y) = (bfp2(a), bfp2(b));
        lfp2(match op {
            FieldOp::Add => fp2_add(&x, &y),
            FieldOp::Sub => fp2_sub(&x, &y),
            FieldOp::Neg => fp2_neg(&x),
            FieldOp::Double => fp2_add(&x, &x),
            FieldOp::Mul => fp2_mul(&x, &y),
            FieldOp::Square => fp2_sqr(&x),
            FieldOp::Inverse if fp_is_zero(&x.fp[0]) && fp_is_zero(&x.fp[1]) => x,
            FieldOp::Inverse => fp2_inverse(&x),
            FieldOp::MulSub => fp2_sub(
                &fp2_mul(&x, &y),
                &fp2_mul(&fp2_add(&x, &y), &fp2_sub(&x, &y)),
            ),
            FieldOp::ToMontgomery | FieldOp::FromMontgomery => {
                return Fp2 {
                    c0: Fp::expected(op, a.c0, b.c0),
                    c1: Fp::expected(op, a.c1, b.c1),
                }
            }
        })
    }
}

fn is_binary(op: FieldOp) -> bool {
    matches!(
        op,
        FieldOp::Add | FieldOp::Sub | FieldOp::Mul | FieldOp::MulSub
    )
}

/// Inputs for `op`: every pair of edge cases for binary operations (each edge case once for
/// unary ones), then `n_random` random pairs.
pub fn field_inputs<F: FieldCase>(
    op: FieldOp,
    rng: &mut ChaCha8Rng,
    n_random: usize,
) -> (Vec<F>, Vec<F>) {
    let integer = op == FieldOp::ToMontgomery;
    let edges = if integer {
        F::integer_edge_cases()
    } else {
        F::edge_cases()
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    if is_binary(op) {
        for x in &edges {
            for y in &edges {
                a.push(*x);
                b.push(*y);
            }
        }
    } else {
        for x in &edges {
            a.push(*x);
            b.push(F::random(rng));
        }
    }
    for _ in 0..n_random {
        let x = F::random(rng);
        a.push(if integer { x.integer() } else { x });
        b.push(F::random(rng));
    }
    (a, b)
}

/// Runs every field operation of `F` through `exec` and compares with blst.
pub fn run_field_checks<F: FieldCase>(
    mut exec: impl FnMut(FieldOp, &[F], &[F]) -> Result<Vec<F>>,
    rng: &mut ChaCha8Rng,
    n_random: usize,
) -> Vec<CheckResult> {
    FieldOp::ALL
        .iter()
        .map(|&op| {
            // Inversion costs ~400 multiplications per element on the host reference too.
            let n = if op == FieldOp::Inverse {
                n_random / 8
            } else {
                n_random
            };
            let (a, b) = field_inputs::<F>(op, rng, n);
            let name = format!("{} {:?}", F::NAME, op);
            let expected: Vec<F> = a
                .par_iter()
                .zip(b.par_iter())
                .map(|(x, y)| F::expected(op, *x, *y))
                .collect();
            match exec(op, &a, &b) {
                Ok(got) => compare(name, &expected, &got, |i| {
                    format!("({:?}, {:?})", a[i], b[i])
                }),
                Err(e) => failed(name, e),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn edge_cases_are_canonical() {
        // Little-endian limbs compared from the top.
        fn below(x: &[u64], m: &[u64]) -> bool {
            x.iter().rev().cmp(m.iter().rev()) == std::cmp::Ordering::Less
        }
        for x in Fr::edge_cases().into_iter().chain(Fr::integer_edge_cases()) {
            assert!(below(&x.0, &Fr::MODULUS), "{x:?}");
        }
        for x in Fp::edge_cases().into_iter().chain(Fp::integer_edge_cases()) {
            assert!(below(&x.0, &Fp::MODULUS), "{x:?}");
        }
        assert!(!below(&Fr::MODULUS, &Fr::MODULUS));
        assert!(Fr::edge_cases().len() > 40);
        // −1 is among them, as p − 1 in Montgomery form.
        assert!(Fr::edge_cases().contains(&Fr::from(-blstrs::Scalar::ONE)));
    }

    #[test]
    fn expected_values_are_consistent() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let a = Fr::random(&mut rng);
        // to_mont(from_mont(a)) == a, and the same for Fp and Fp2.
        assert_eq!(Fr::expected(FieldOp::ToMontgomery, a.integer(), a), a);
        let b = Fp::random(&mut rng);
        assert_eq!(Fp::expected(FieldOp::ToMontgomery, b.integer(), b), b);
        let c = Fp2::random(&mut rng);
        assert_eq!(Fp2::expected(FieldOp::ToMontgomery, c.integer(), c), c);
        assert_eq!(
            Fr::expected(FieldOp::Inverse, Fr::default(), a),
            Fr::default()
        );
        assert_eq!(
            Fr::expected(FieldOp::FromMontgomery, Fr::from(blstrs::Scalar::ONE), a),
            Fr([1, 0, 0, 0])
        );
    }
}

//! The Montgomery constants the kernels use, as 32-bit limbs, computed here from blstrs and
//! checked against the literals in the production kernels' ff/bls12_381.cuh (a wrong literal
//! there would be a silent wrong answer on the device).

use bellows_core::layout::{Fp, Fr};
use ff::{Field, PrimeField};

/// The constants of one prime field in the kernels' 32-bit limb form.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldConstants {
    /// The modulus p.
    modulus: Vec<u32>,
    /// R mod p (the Montgomery form of 1).
    one: Vec<u32>,
    /// R² mod p (to convert into Montgomery form).
    r2: Vec<u32>,
    /// p − 2 (Fermat inversion exponent).
    p_minus_2: Vec<u32>,
    /// −p⁻¹ mod 2^32.
    m0: u32,
}

/// Splits little-endian u64 limbs into little-endian u32 limbs.
fn to_u32_limbs(l: &[u64]) -> Vec<u32> {
    l.iter()
        .flat_map(|&x| [x as u32, (x >> 32) as u32])
        .collect()
}

fn m0(p0: u32) -> u32 {
    // Newton iteration for p⁻¹ mod 2^32: each step doubles the number of correct bits.
    let mut inv: u32 = 1;
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u32.wrapping_sub(p0.wrapping_mul(inv)));
    }
    inv.wrapping_neg()
}

fn sub_small(l: &[u64], s: u64) -> Vec<u64> {
    let mut v = l.to_vec();
    let mut borrow = s;
    for x in v.iter_mut() {
        let (d, b) = x.overflowing_sub(borrow);
        *x = d;
        borrow = u64::from(b);
    }
    v
}

/// Fr's constants, from blstrs.
fn fr() -> FieldConstants {
    let modulus = Fr::MODULUS;
    let one = Fr::from(blstrs::Scalar::ONE).0;
    // R² mod r as an integer is the Montgomery form of the element R (ONE's limbs read as an
    // integer): R·R mod r.
    let r_int = blstrs::Scalar::from_repr_vartime(le_bytes_32(&one)).expect("R mod r < r");
    let r2 = Fr::from(r_int).0;
    constants(&modulus, &one, &r2)
}

/// The constants of the field with `modulus` whose Montgomery forms of 1 and of R are `one`
/// and `r2` (the rest follows from the modulus).
fn constants(modulus: &[u64], one: &[u64], r2: &[u64]) -> FieldConstants {
    FieldConstants {
        modulus: to_u32_limbs(modulus),
        one: to_u32_limbs(one),
        r2: to_u32_limbs(r2),
        p_minus_2: to_u32_limbs(&sub_small(modulus, 2)),
        m0: m0(modulus[0] as u32),
    }
}

/// Fp's constants, from blstrs.
fn fp() -> FieldConstants {
    let modulus = Fp::MODULUS;
    // blst's Montgomery form of 1 is R mod p; that of the integer R is R² mod p.
    let mut one = blst::blst_fp::default();
    let mut r2 = blst::blst_fp::default();
    // SAFETY: blst reads one initialised blst_fp and writes one.
    unsafe {
        blst::blst_fp_to(
            &mut one,
            &blst::blst_fp {
                l: [1, 0, 0, 0, 0, 0],
            },
        );
        blst::blst_fp_to(&mut r2, &one);
    }
    constants(&modulus, &one.l, &r2.l)
}

fn le_bytes_32(l: &[u64; 4]) -> [u8; 32] {
    let mut b = [0u8; 32];
    for (i, x) in l.iter().enumerate() {
        b[8 * i..8 * i + 8].copy_from_slice(&x.to_le_bytes());
    }
    b
}

/// The u32 literals of array `name` in the kernels' ff/bls12_381.cuh.
fn cuh_array(name: &str) -> Vec<u32> {
    let src = include_str!("../../kernels/ff/bls12_381.cuh");
    let start = src
        .find(&format!("{name}["))
        .unwrap_or_else(|| panic!("{name} not in the header"));
    let body = &src[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    body.split(',')
        .map(|s| u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap())
        .collect()
}

fn cuh_m0(params: &str) -> u32 {
    let src = include_str!("../../kernels/ff/bls12_381.cuh");
    let s = &src[src.find(&format!("struct {params}")).unwrap()..];
    let s = &s[s.find("M0 = ").unwrap() + 5..];
    u32::from_str_radix(s[..s.find('u').unwrap()].trim_start_matches("0x"), 16).unwrap()
}

#[test]
fn kernel_literals_match_blstrs() {
    for (prefix, params, c) in [("FR", "FrParams", fr()), ("FP", "FpParams", fp())] {
        assert_eq!(
            cuh_array(&format!("{prefix}_MOD")),
            c.modulus,
            "{prefix} modulus"
        );
        assert_eq!(cuh_array(&format!("{prefix}_ONE")), c.one, "{prefix} one");
        assert_eq!(cuh_array(&format!("{prefix}_RR")), c.r2, "{prefix} R^2");
        assert_eq!(
            cuh_array(&format!("{prefix}_PM2")),
            c.p_minus_2,
            "{prefix} p-2"
        );
        assert_eq!(cuh_m0(params), c.m0, "{prefix} M0");
    }
}

#[test]
fn constants_are_what_they_claim() {
    for c in [fr(), fp()] {
        // m0·p ≡ −1 mod 2^32.
        assert_eq!(c.m0.wrapping_mul(c.modulus[0]), u32::MAX);
        // p has a spare top bit, which the kernels' carry handling relies on.
        assert!(c.modulus.last().unwrap() >> 31 == 0);
    }
    assert_eq!(fr().m0, 0xffff_ffff);
    // ONE and R² read as integers are R and R² mod r, with R = 2^256.
    let r = blstrs::Scalar::from(2u64).pow_vartime([256u64]);
    let limbs = |v: &[u32]| -> [u8; 32] {
        let mut b = [0u8; 32];
        for (i, x) in v.iter().enumerate() {
            b[4 * i..4 * i + 4].copy_from_slice(&x.to_le_bytes());
        }
        b
    };
    let c = fr();
    assert_eq!(blstrs::Scalar::from_repr_vartime(limbs(&c.one)).unwrap(), r);
    assert_eq!(
        blstrs::Scalar::from_repr_vartime(limbs(&c.r2)).unwrap(),
        r * r
    );
    assert_eq!(
        blstrs::Scalar::from_repr_vartime(limbs(&c.p_minus_2)).unwrap(),
        -blstrs::Scalar::from(2u64)
    );
    // Fp: R = 2^384, so R mod p = 2^384 − k·p: adding R to p − R... checked through the
    // integers: (one + 2 + p − 2) as u32 limbs; simplest exact check: one < p and
    // one ≡ 2^384 (mod p) via 2^384 = (2^384 − p·q); here with u128-free limb arithmetic:
    // ONE + p·q = 2^384 for q = floor(2^384 / p) = 9 (p ≈ 2^380.7).
    let c = fp();
    let mut acc = [0u64; 13];
    for (i, &l) in c.one.iter().enumerate() {
        acc[i] += u64::from(l);
    }
    for (i, &l) in c.modulus.iter().enumerate() {
        acc[i] += 9 * u64::from(l);
    }
    for i in 0..12 {
        acc[i + 1] += acc[i] >> 32;
        acc[i] &= 0xffff_ffff;
    }
    assert!(
        acc[..12].iter().all(|&x| x == 0) && acc[12] == 1,
        "ONE + 9p = 2^384"
    );
    assert_eq!(c.p_minus_2[0], c.modulus[0] - 2);
}

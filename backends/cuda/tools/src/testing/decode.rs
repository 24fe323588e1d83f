//! The decode kernels (`kernels/ec/decode.cuh`) against blst's deserialisation: valid points and
//! encodings chosen to draw every verdict, each verdict and decoded point compared.

use bellows_core::{
    groth16::io::{
        codec::{PointDefect, UncompressedPoint},
        PointCheck,
    },
    layout::{G1Affine, G2Affine},
    Result,
};
use bellows_cuda::decode::{
    VERDICT_ENCODING, VERDICT_IDENTITY, VERDICT_NOT_IN_GROUP, VERDICT_NOT_ON_CURVE, VERDICT_OK,
};
use group::{Curve, Group};
use rand::RngCore;
use rand_chacha::ChaCha8Rng;

use super::{failed, CheckResult};

/// What blst (through bellows-core's codec, curve check only, the identity allowed) makes of one
/// encoding: the kernel's verdict for it, and the point when one is decoded.
fn host_verdict<P: UncompressedPoint>(bytes: &[u8]) -> (u8, Option<P>) {
    match P::decode(bytes, PointCheck::CurveOnly, true) {
        Ok(p) if bool::from(p.is_identity()) => (VERDICT_IDENTITY, Some(p)),
        Ok(p) => (VERDICT_OK, Some(p)),
        Err(PointDefect::Encoding) => (VERDICT_ENCODING, None),
        Err(PointDefect::NotOnCurve) => (VERDICT_NOT_ON_CURVE, None),
        Err(PointDefect::NotInSubgroup) => (VERDICT_NOT_IN_GROUP, None),
        // The identity is allowed above.
        Err(PointDefect::Infinity) => (VERDICT_IDENTITY, None),
    }
}

/// Encodings of `size` bytes beside `valid` points' own (at least two): the identity, every
/// flag combination, each coordinate at p and p − 1, points moved off the curve, (0, 2) on G1's
/// curve, and random bytes with the flags clear.
pub fn decode_cases(valid: Vec<Vec<u8>>, size: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<u8>> {
    let p = bellows_core::backend::encoded::modulus_be();
    let mut cases = valid.clone();
    let mut identity = vec![0u8; size];
    identity[0] = 0x40;
    cases.push(identity.clone());
    for flags in [0x80u8, 0x20, 0xa0, 0xc0, 0xe0, 0x60] {
        let mut c = valid[0].clone();
        c[0] |= flags;
        cases.push(c);
        let mut c = identity.clone();
        c[0] = flags | 0x40;
        cases.push(c);
    }
    // The infinity flag with a stray bit elsewhere.
    let mut c = identity.clone();
    c[size - 1] = 1;
    cases.push(c);
    for k in 0..size / 48 {
        for minus in [0u8, 1] {
            let mut c = valid[1].clone();
            c[48 * k..48 * (k + 1)].copy_from_slice(&p);
            c[48 * k + 47] -= minus;
            cases.push(c);
        }
    }
    // Off the curve: the last byte of y changed.
    for v in valid.iter().take(8) {
        let mut c = v.clone();
        c[size - 1] ^= 1;
        cases.push(c);
    }
    // x = 0, y = 2: on G1's curve (0 + 4 = 2²), refused by blst.
    if size == 96 {
        let mut c = vec![0u8; 96];
        c[95] = 2;
        cases.push(c);
    }
    for _ in 0..32 {
        let mut c = vec![0u8; size];
        rng.fill_bytes(&mut c);
        c[0] &= 0x1f;
        cases.push(c);
    }
    cases
}

/// Compares `exec`'s verdicts and points for `cases` with blst's (point type `H`, the kernels'
/// layout `L`): one result for the verdicts and points, one for the verdicts the cases drew
/// (each of `kinds` must come up).
fn check<H, L>(
    name: &str,
    cases: &[Vec<u8>],
    kinds: usize,
    exec: impl FnOnce(&[u8]) -> Result<(Vec<L>, Vec<u8>)>,
) -> Vec<CheckResult>
where
    H: UncompressedPoint + Into<L>,
    L: PartialEq + Copy,
{
    let (points, verdicts) = match exec(&cases.concat()) {
        Ok(r) => r,
        Err(e) => return vec![failed(format!("{name} decode"), e)],
    };
    if points.len() != cases.len() || verdicts.len() != cases.len() {
        return vec![failed(
            format!("{name} decode"),
            format!(
                "{} points and {} verdicts for {} encodings",
                points.len(),
                verdicts.len(),
                cases.len()
            ),
        )];
    }
    let mut seen = [0usize; 5];
    let mut mismatches = 0;
    let mut first = None;
    for (i, c) in cases.iter().enumerate() {
        let (want, point) = host_verdict::<H>(c);
        seen[want as usize] += 1;
        let point_ok = point.is_none_or(|p| points[i] == p.into());
        if verdicts[i] != want || !point_ok {
            mismatches += 1;
            first.get_or_insert_with(|| {
                format!(
                    "case {i} ({:02x?}…): verdict {} (blst: {want}){}",
                    &c[..4],
                    verdicts[i],
                    if point_ok { "" } else { ", another point" }
                )
            });
        }
    }
    let missing = seen[..kinds].iter().filter(|&&k| k == 0).count();
    vec![
        CheckResult {
            name: format!("{name} decode"),
            compared: cases.len(),
            mismatches,
            first_mismatch: first,
        },
        CheckResult {
            name: format!("{name} decode verdicts drawn"),
            compared: kinds,
            mismatches: missing,
            first_mismatch: (missing > 0).then(|| format!("verdict counts {seen:?}")),
        },
    ]
}

/// G1 (64 random points) and G2 (32) encodings decoded by `g1` and `g2`, compared with blst.
/// G2 has no (0, y) case: x = 0 is not on its curve.
pub fn run_decode_checks(
    g1: impl FnOnce(&[u8]) -> Result<(Vec<G1Affine>, Vec<u8>)>,
    g2: impl FnOnce(&[u8]) -> Result<(Vec<G2Affine>, Vec<u8>)>,
    rng: &mut ChaCha8Rng,
) -> Vec<CheckResult> {
    let v1: Vec<Vec<u8>> = (0..64)
        .map(|_| {
            blstrs::G1Projective::random(&mut *rng)
                .to_affine()
                .to_uncompressed()
                .to_vec()
        })
        .collect();
    let v2: Vec<Vec<u8>> = (0..32)
        .map(|_| {
            blstrs::G2Projective::random(&mut *rng)
                .to_affine()
                .to_uncompressed()
                .to_vec()
        })
        .collect();
    let c1 = decode_cases(v1, 96, rng);
    let c2 = decode_cases(v2, 192, rng);
    let mut r = check::<blstrs::G1Affine, G1Affine>("g1", &c1, 5, g1);
    r.extend(check::<blstrs::G2Affine, G2Affine>("g2", &c2, 4, g2));
    r
}

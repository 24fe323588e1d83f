//! Point and scalar encodings used by the file formats.
//!
//! Points use the zcash/IETF serialisation of BLS12-381 (big-endian coordinates, flag bits in the
//! top three bits of the first byte), uncompressed: 96 bytes for G1, 192 for G2. Decoding goes
//! through blst directly so that a rejection says *why* (bad encoding, off the curve, outside the
//! subgroup, infinity). Sections of many points are decoded and encoded in parallel (rayon), and a
//! failure reports the lowest failing index, whatever the thread count.
//!
//! Scalars cross files as decimal strings of their canonical integer (public inputs).

use blstrs::{G1Affine, G2Affine, Scalar};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

/// How thoroughly points read from a file are checked.
///
/// A point that fails a check is rejected with an error naming the section and index. Points at
/// infinity are always rejected in the IC and query sections, as bellperson does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PointCheck {
    /// On the curve **and** in the prime-order subgroup (the default). Use this for any file you
    /// did not write yourself: a point outside the subgroup can break soundness or leak
    /// information. Costs one subgroup check per point, by far the largest part of reading.
    #[default]
    Full,
    /// On the curve only (and a valid encoding): several times faster to read. Points with a
    /// cofactor component are **accepted**. Only for files from a trusted source, e.g. written by
    /// this machine, or a file whose digest was matched against a trusted manifest.
    CurveOnly,
    /// On the curve (point by point) **and** in the prime-order subgroup, the subgroup part
    /// checked for each group of the whole file at once by a randomised bucket test
    /// ([`crate::groth16::subgroup`]): a file with any point outside the subgroup is refused except with
    /// probability at most 2^−128, whoever made it, at a fraction of [`PointCheck::Full`]'s
    /// cost. A refused file's error names the first bad point, exactly as `Full`'s does. Applies
    /// to whole parameter and verifying-key files; single points decoded on their own get
    /// `Full`'s check.
    Batched,
}

/// Why a point was rejected (defined with the backend interface, which decodes encoded bases
/// by the same rules).
pub use crate::backend::PointDefect;

/// A curve point with an uncompressed file encoding.
pub trait UncompressedPoint:
    crate::groth16::subgroup::SubgroupPoint + PrimeCurveAffine + Copy + Send + Sync + Sized + 'static
{
    /// Encoded size in bytes.
    const SIZE: usize;
    /// Group name for messages (`"G1"`, `"G2"`).
    const GROUP: &'static str;

    /// blst's decoding of exactly [`Self::SIZE`] bytes: the flag bits, the encoding and the
    /// curve equation, not the subgroup ([`crate::backend::encoded::decode_g1`]).
    fn deserialize(bytes: &[u8]) -> Result<Self, PointDefect>;

    /// Decodes one point; `bytes.len() == Self::SIZE`.
    fn decode(bytes: &[u8], check: PointCheck, allow_identity: bool) -> Result<Self, PointDefect> {
        assert_eq!(
            bytes.len(),
            Self::SIZE,
            "caller passes exactly one encoded point"
        );
        finish(
            Self::deserialize(bytes)?,
            check,
            allow_identity,
            Self::in_subgroup,
        )
    }

    /// Encodes one point into `out` (`out.len() == Self::SIZE`).
    fn encode(&self, out: &mut [u8]);
}

impl UncompressedPoint for G1Affine {
    const SIZE: usize = 96;
    const GROUP: &'static str = "G1";

    fn deserialize(bytes: &[u8]) -> Result<Self, PointDefect> {
        crate::backend::encoded::decode_g1(bytes)
    }

    fn encode(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }
}

impl UncompressedPoint for G2Affine {
    const SIZE: usize = 192;
    const GROUP: &'static str = "G2";

    fn deserialize(bytes: &[u8]) -> Result<Self, PointDefect> {
        crate::backend::encoded::decode_g2(bytes)
    }

    fn encode(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }
}

fn finish<P: PrimeCurveAffine>(
    p: P,
    check: PointCheck,
    allow_identity: bool,
    in_subgroup: impl Fn(&P) -> bool,
) -> Result<P, PointDefect> {
    if bool::from(p.is_identity()) {
        return if allow_identity {
            Ok(p)
        } else {
            Err(PointDefect::Infinity)
        };
    }
    // `Batched` is applied to whole sections by `decode_section`; a point decoded on its own
    // gets the full per-point check.
    if matches!(check, PointCheck::Full | PointCheck::Batched) && !in_subgroup(&p) {
        return Err(PointDefect::NotInSubgroup);
    }
    Ok(p)
}

/// Points per parallel task when decoding or encoding a section.
const CHUNK: usize = 1 << 10;

/// Decodes `bytes.len() / P::SIZE` consecutive points in parallel.
///
/// `bytes.len()` must be a multiple of `P::SIZE` (the caller checked the section length). On
/// failure returns the lowest failing index and its defect.
pub fn decode_section<P: UncompressedPoint>(
    bytes: &[u8],
    check: PointCheck,
    allow_identity: bool,
    identity: P,
) -> Result<Vec<P>, (usize, PointDefect)> {
    decode_section_with_progress(bytes, check, allow_identity, identity, &|_| {})
}

/// As [`decode_section`], calling `progress(k)` (from any thread) as each run of `k` points has
/// been decoded.
pub fn decode_section_with_progress<P: UncompressedPoint>(
    bytes: &[u8],
    check: PointCheck,
    allow_identity: bool,
    identity: P,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<P>, (usize, PointDefect)> {
    debug_assert_eq!(bytes.len() % P::SIZE, 0);
    // `Batched`: on the curve point by point, then the subgroup for the whole section at once.
    let (check, batched) = match check {
        PointCheck::Batched => (PointCheck::CurveOnly, true),
        other => (other, false),
    };
    let mut out = crate::page_advice::filled(identity, bytes.len() / P::SIZE);
    decode_into(bytes, &mut out, check, allow_identity, progress)?;
    if batched {
        if let Some((_, i)) = crate::groth16::subgroup::first_outside(&[&out[..]]) {
            return Err((i, PointDefect::NotInSubgroup));
        }
    }
    Ok(out)
}

/// Decodes the consecutive points of `bytes` into `out` (`out.len() == bytes.len() / P::SIZE`)
/// in parallel, each with `check` alone (`Batched` is checked per point here, as `Full`: a
/// caller that batches the subgroup test decodes with `CurveOnly` and tests the points after).
/// On failure returns the lowest failing index and its defect; `progress(k)` is called (from
/// any thread) as each run of `k` points is decoded.
pub(crate) fn decode_into<P: UncompressedPoint>(
    bytes: &[u8],
    out: &mut [P],
    check: PointCheck,
    allow_identity: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(), (usize, PointDefect)> {
    debug_assert_eq!(bytes.len(), out.len() * P::SIZE);
    let first_bad = out
        .par_chunks_mut(CHUNK)
        .zip(bytes.par_chunks(CHUNK * P::SIZE))
        .enumerate()
        .filter_map(|(c, (dst, src))| {
            for (k, (d, s)) in dst.iter_mut().zip(src.chunks_exact(P::SIZE)).enumerate() {
                match P::decode(s, check, allow_identity) {
                    Ok(p) => *d = p,
                    Err(e) => return Some((c * CHUNK + k, e)),
                }
            }
            progress(dst.len() as u64);
            None
        })
        .min_by_key(|(i, _)| *i);
    match first_bad {
        Some(bad) => Err(bad),
        None => Ok(()),
    }
}

/// Encodes points into `out` (`out.len() == points.len() * P::SIZE`) in parallel.
pub fn encode_section<P: UncompressedPoint>(points: &[P], out: &mut [u8]) {
    assert_eq!(out.len(), points.len() * P::SIZE, "output buffer size");
    out.par_chunks_mut(CHUNK * P::SIZE)
        .zip(points.par_chunks(CHUNK))
        .for_each(|(dst, src)| {
            for (d, p) in dst.chunks_exact_mut(P::SIZE).zip(src) {
                p.encode(d);
            }
        });
}

/// Why a decimal string is not a field element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecimalError {
    /// The empty string.
    Empty,
    /// A character that is not an ASCII digit, at this byte position.
    NotADigit(usize, char),
    /// The integer is ≥ r, the order of the scalar field.
    TooLarge,
}

impl std::fmt::Display for DecimalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecimalError::Empty => f.write_str("empty string, expected a decimal integer"),
            DecimalError::NotADigit(pos, ch) => write!(
                f,
                "not a non-negative decimal integer: {ch:?} at position {pos} (only the digits \
                 0-9 are allowed)"
            ),
            DecimalError::TooLarge => write!(
                f,
                "not a field element: the value is not less than the scalar field order r = {}",
                field_order_decimal()
            ),
        }
    }
}

/// r, the order of the BLS12-381 scalar field, little-endian 64-bit limbs.
const R_LIMBS: [u64; 4] = [
    0xffff_ffff_0000_0001,
    0x53bd_a402_fffe_5bfe,
    0x3339_d808_09a1_d805,
    0x73ed_a753_299d_7d48,
];

/// r in decimal.
pub fn field_order_decimal() -> String {
    limbs_to_decimal(R_LIMBS)
}

/// Parses a non-negative decimal integer (ASCII digits only; leading zeros allowed) below r.
pub fn scalar_from_decimal(s: &str) -> Result<Scalar, DecimalError> {
    if s.is_empty() {
        return Err(DecimalError::Empty);
    }
    let mut limbs = [0u64; 4];
    for (pos, ch) in s.char_indices() {
        let d = match ch.to_digit(10) {
            Some(d) if ch.is_ascii_digit() => u64::from(d),
            _ => return Err(DecimalError::NotADigit(pos, ch)),
        };
        // limbs = limbs * 10 + d over 256 bits; a carry out means ≥ 2^256 > r.
        let mut carry = d as u128;
        for l in limbs.iter_mut() {
            let t = (*l as u128) * 10 + carry;
            *l = t as u64;
            carry = t >> 64;
        }
        if carry != 0 {
            // Report bad characters first, even after an overflow.
            if let Some((p, c)) = s[pos..].char_indices().find(|(_, c)| !c.is_ascii_digit()) {
                return Err(DecimalError::NotADigit(pos + p, c));
            }
            return Err(DecimalError::TooLarge);
        }
    }
    Option::from(Scalar::from_u64s_le(&limbs)).ok_or(DecimalError::TooLarge)
}

/// The canonical integer of `s` in decimal (no leading zeros; `"0"` for zero).
pub fn scalar_to_decimal(s: &Scalar) -> String {
    let bytes = s.to_bytes_le();
    let mut limbs = [0u64; 4];
    for (l, b) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
        *l = u64::from_le_bytes(b.try_into().expect("8 bytes"));
    }
    limbs_to_decimal(limbs)
}

/// Decimal digits of a 256-bit integer: repeated division by 10^19, most significant limb first.
fn limbs_to_decimal(mut limbs: [u64; 4]) -> String {
    const BASE: u64 = 10_000_000_000_000_000_000; // 10^19 < 2^64
    let mut groups = Vec::new();
    while limbs.iter().any(|&l| l != 0) {
        let mut rem: u128 = 0;
        for l in limbs.iter_mut().rev() {
            let cur = (rem << 64) | (*l as u128);
            *l = (cur / BASE as u128) as u64;
            rem = cur % BASE as u128;
        }
        groups.push(rem as u64);
    }
    let mut out = match groups.pop() {
        None => return "0".to_string(),
        Some(top) => top.to_string(),
    };
    for g in groups.iter().rev() {
        out.push_str(&format!("{g:019}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;

    #[test]
    fn decimal_round_trip_and_bounds() {
        assert_eq!(scalar_from_decimal("0").unwrap(), Scalar::ZERO);
        assert_eq!(scalar_from_decimal("000123").unwrap(), Scalar::from(123u64));
        assert_eq!(scalar_to_decimal(&Scalar::ZERO), "0");
        assert_eq!(
            scalar_to_decimal(&Scalar::from(u64::MAX)),
            "18446744073709551615"
        );
        let r = field_order_decimal();
        assert_eq!(
            r,
            "52435875175126190479447740508185965837690552500527637822603658699938581184513"
        );
        let r_minus_1 = scalar_to_decimal(&-Scalar::ONE);
        assert_eq!(
            r_minus_1,
            "52435875175126190479447740508185965837690552500527637822603658699938581184512"
        );
        assert_eq!(scalar_from_decimal(&r_minus_1).unwrap(), -Scalar::ONE);
        assert_eq!(scalar_from_decimal(&r), Err(DecimalError::TooLarge));
        assert_eq!(
            scalar_from_decimal(&"9".repeat(100)),
            Err(DecimalError::TooLarge)
        );
        assert_eq!(
            scalar_from_decimal("12a"),
            Err(DecimalError::NotADigit(2, 'a'))
        );
        assert_eq!(
            scalar_from_decimal("-1"),
            Err(DecimalError::NotADigit(0, '-'))
        );
        assert_eq!(scalar_from_decimal(""), Err(DecimalError::Empty));
        // Non-ASCII digits (e.g. Arabic-Indic) are refused.
        assert_eq!(
            scalar_from_decimal("١"),
            Err(DecimalError::NotADigit(0, '١'))
        );
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for _ in 0..200 {
            let s = Scalar::random(&mut rng);
            assert_eq!(scalar_from_decimal(&scalar_to_decimal(&s)).unwrap(), s);
        }
    }

    use rand_core::SeedableRng;
}

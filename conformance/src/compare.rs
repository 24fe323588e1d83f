//! Exact comparison on canonical encodings, reporting the first element that differs.
//!
//! Scalars are compared as their canonical 32-byte encodings (`to_repr`), after checking that the
//! candidate's limbs are a reduced Montgomery representation (limbs ≥ r are a mismatch even when
//! they reduce to the right value: the crossing layout requires canonical values). Points are
//! compared as compressed affine encodings (48 / 96 bytes), since Jacobian coordinates of one
//! point are not unique.

use bellows_core::layout::{Fr, G1Jacobian, G2Jacobian};
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::PrimeField;
use group::{Curve, Group};
use serde::Serialize;

/// The first difference between the reference's and the candidate's output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// Where: which size, batch entry or job (e.g. `"2^5, vector 2"`).
    pub context: String,
    /// Index of the first differing element within that output.
    pub index: usize,
    /// The reference's value (hex of the canonical encoding).
    pub expected: String,
    /// The candidate's value.
    pub got: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}, element {}: expected {}, got {}",
            self.context, self.index, self.expected, self.got
        )
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 + 2 * bytes.len());
    s.push_str("0x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn is_reduced(x: &Fr) -> bool {
    // Compare limbs with the modulus, most significant first.
    for i in (0..4).rev() {
        if x.0[i] != Fr::MODULUS[i] {
            return x.0[i] < Fr::MODULUS[i];
        }
    }
    false
}

/// Canonical big-endian hex of a scalar, or a note with its raw limbs when it is not reduced.
pub fn show_fr(x: &Fr) -> String {
    if !is_reduced(x) {
        return format!("non-canonical limbs {:016x?}", x.0);
    }
    let mut repr = Scalar::from(*x).to_repr();
    repr.as_mut().reverse();
    hex(repr.as_ref())
}

/// Compressed encoding of a G1 point, as hex (`identity` for the point at infinity).
pub fn show_g1(p: &G1Jacobian) -> String {
    let q = G1Projective::from(*p);
    if bool::from(q.is_identity()) {
        return "identity".into();
    }
    hex(&q.to_affine().to_compressed())
}

/// Compressed encoding of a G2 point, as hex.
pub fn show_g2(p: &G2Jacobian) -> String {
    let q = G2Projective::from(*p);
    if bool::from(q.is_identity()) {
        return "identity".into();
    }
    hex(&q.to_affine().to_compressed())
}

fn first_diff<T>(
    expected: &[T],
    got: &[T],
    context: &str,
    same: impl Fn(&T, &T) -> bool,
    show: impl Fn(&T) -> String,
) -> Result<(), Mismatch> {
    if expected.len() != got.len() {
        return Err(Mismatch {
            context: context.to_string(),
            index: expected.len().min(got.len()),
            expected: format!("{} elements", expected.len()),
            got: format!("{} elements", got.len()),
        });
    }
    match expected.iter().zip(got).position(|(e, g)| !same(e, g)) {
        None => Ok(()),
        Some(i) => Err(Mismatch {
            context: context.to_string(),
            index: i,
            expected: show(&expected[i]),
            got: show(&got[i]),
        }),
    }
}

/// Scalars equal element by element, and canonical.
pub fn fr(expected: &[Fr], got: &[Fr], context: &str) -> Result<(), Mismatch> {
    first_diff(
        expected,
        got,
        context,
        |e, g| e == g && is_reduced(g),
        show_fr,
    )
}

/// G1 points equal as points (canonical encodings).
pub fn g1(expected: &[G1Jacobian], got: &[G1Jacobian], context: &str) -> Result<(), Mismatch> {
    first_diff(
        expected,
        got,
        context,
        |e, g| show_g1(e) == show_g1(g),
        show_g1,
    )
}

/// G2 points equal as points (canonical encodings).
pub fn g2(expected: &[G2Jacobian], got: &[G2Jacobian], context: &str) -> Result<(), Mismatch> {
    first_diff(
        expected,
        got,
        context,
        |e, g| show_g2(e) == show_g2(g),
        show_g2,
    )
}

/// Byte strings (e.g. proof encodings) equal.
pub fn bytes(expected: &[u8], got: &[u8], context: &str) -> Result<(), Mismatch> {
    if expected == got {
        return Ok(());
    }
    let i = expected
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(expected.len().min(got.len()));
    Err(Mismatch {
        context: context.to_string(),
        index: i,
        expected: hex(expected),
        got: hex(got),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    #[test]
    fn scalars_compare_canonically() {
        let a = vec![Fr::ONE, Fr::from(Scalar::from(5u64))];
        assert!(fr(&a, &a, "x").is_ok());
        let mut b = a.clone();
        b[1] = Fr::from(Scalar::from(6u64));
        let m = fr(&a, &b, "2^1").unwrap_err();
        assert_eq!(m.index, 1);
        assert_eq!(m.expected, format!("0x{}05", "0".repeat(62)));
        // The modulus itself is a non-canonical encoding of zero.
        let zero = vec![Fr::default()];
        let m = fr(&zero, &[Fr(Fr::MODULUS)], "z").unwrap_err();
        assert!(m.got.starts_with("non-canonical"), "{}", m.got);
        assert!(show_fr(&Fr::from(-Scalar::ONE)).starts_with("0x73eda753"));
    }

    #[test]
    fn points_compare_as_points() {
        let g = G1Projective::generator();
        // The same point in two Jacobian representations (Z = 1, and Z ≠ 1 after arithmetic).
        let j1 = G1Jacobian::from(g);
        let doubled_z = G1Jacobian::from(g.double() - g);
        assert_ne!(j1, doubled_z);
        assert!(g1(&[j1], &[doubled_z], "same point").is_ok());
        let m = g1(&[j1], &[G1Jacobian::from(g.double())], "job 0").unwrap_err();
        assert_eq!((m.index, m.context.as_str()), (0, "job 0"));
        assert_eq!(show_g1(&G1Jacobian::default()), "identity");
        assert!(g2(
            &[G2Jacobian::from(G2Projective::generator())],
            &[G2Jacobian::default()],
            "g2"
        )
        .is_err());
        let m = bytes(b"abc", b"abd", "proof 0").unwrap_err();
        assert_eq!(m.index, 2);
    }
}

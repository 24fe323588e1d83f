//! The memory layout in which scalars and points cross to a backend.
//!
//! Every type here is `#[repr(C)]` and has exactly blst's layout (which is also blstrs' layout:
//! blstrs wraps blst with `#[repr(transparent)]`): little-endian 64-bit limbs holding the value in
//! **Montgomery form** (`x·R mod p`, R = 2^256 for Fr and 2^384 for Fp). A host slice of blstrs
//! values can therefore be viewed as a slice of these types, and handed to a device, without a
//! single conversion. The views ([`fr_slice`], [`g1_affine_slice`], ...) are zero-copy.
//!
//! | type | blst type | bytes | meaning |
//! |---|---|---|---|
//! | [`Fr`] | `blst_fr` | 32 | scalar field element, 4 limbs, Montgomery |
//! | [`Fp`] | `blst_fp` | 48 | base field element, 6 limbs, Montgomery |
//! | [`Fp2`] | `blst_fp2` | 96 | `c0 + c1·u`, u² = −1 |
//! | [`G1Affine`] | `blst_p1_affine` | 96 | (x, y); the identity is all zeros |
//! | [`G2Affine`] | `blst_p2_affine` | 192 | (x, y) over Fp2; the identity is all zeros |
//! | [`G1Jacobian`] | `blst_p1` | 144 | Jacobian (X, Y, Z), x = X/Z², y = Y/Z³; identity has Z = 0 |
//! | [`G2Jacobian`] | `blst_p2` | 288 | as above over Fp2 |

#![allow(unsafe_code)]

use std::mem::{align_of, size_of};

/// Scalar field element (Fr of BLS12-381), Montgomery form, 4 little-endian u64 limbs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fr(pub [u64; 4]);

/// Base field element (Fp of BLS12-381), Montgomery form, 6 little-endian u64 limbs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fp(pub [u64; 6]);

/// Quadratic extension element `c0 + c1·u` with u² = −1.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fp2 {
    /// Real part.
    pub c0: Fp,
    /// Coefficient of u.
    pub c1: Fp,
}

/// G1 point in affine coordinates; all-zero is the point at infinity (blst's convention).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct G1Affine {
    /// x coordinate.
    pub x: Fp,
    /// y coordinate.
    pub y: Fp,
}

/// G2 point in affine coordinates; all-zero is the point at infinity.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct G2Affine {
    /// x coordinate.
    pub x: Fp2,
    /// y coordinate.
    pub y: Fp2,
}

/// G1 point in Jacobian coordinates (blst_p1); Z = 0 is the identity.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct G1Jacobian {
    /// X.
    pub x: Fp,
    /// Y.
    pub y: Fp,
    /// Z.
    pub z: Fp,
}

/// G2 point in Jacobian coordinates (blst_p2); Z = 0 is the identity.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct G2Jacobian {
    /// X.
    pub x: Fp2,
    /// Y.
    pub y: Fp2,
    /// Z.
    pub z: Fp2,
}

/// Compile-time proof that a layout type and a blstrs type have the same size and alignment.
macro_rules! same_layout {
    ($ours:ty, $theirs:ty, $blst:ty, $bytes:expr) => {
        const _: () = assert!(size_of::<$ours>() == $bytes);
        const _: () = assert!(size_of::<$theirs>() == $bytes);
        const _: () = assert!(size_of::<$blst>() == $bytes);
        const _: () = assert!(align_of::<$ours>() == align_of::<$theirs>());
        const _: () = assert!(align_of::<$ours>() == align_of::<$blst>());
    };
}
same_layout!(Fr, blstrs::Scalar, blst::blst_fr, 32);
same_layout!(Fp, blst::blst_fp, blst::blst_fp, 48);
same_layout!(Fp2, blst::blst_fp2, blst::blst_fp2, 96);
same_layout!(G1Affine, blstrs::G1Affine, blst::blst_p1_affine, 96);
same_layout!(G2Affine, blstrs::G2Affine, blst::blst_p2_affine, 192);
same_layout!(G1Jacobian, blstrs::G1Projective, blst::blst_p1, 144);
same_layout!(G2Jacobian, blstrs::G2Projective, blst::blst_p2, 288);

/// Zero-copy conversions between a layout type and its blstrs twin: slice views both ways, and
/// `From` for single values through them.
macro_rules! views {
    ($ours:ty, $theirs:ty, $slice:ident, $slice_mut:ident, $back:ident, $back_mut:ident) => {
        /// Views a blstrs slice in the crossing layout, without copying.
        pub fn $slice(s: &[$theirs]) -> &[$ours] {
            // SAFETY: both types are plain data with identical size and alignment (asserted at
            // compile time above); blstrs' type is repr(transparent) over the blst struct whose
            // field order our repr(C) struct reproduces, so every bit pattern means the same value.
            unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<$ours>(), s.len()) }
        }
        /// Views a mutable blstrs slice in the crossing layout, without copying.
        pub fn $slice_mut(s: &mut [$theirs]) -> &mut [$ours] {
            // SAFETY: as for the shared view; the borrow is unique and carried over.
            unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<$ours>(), s.len()) }
        }
        /// Views a crossing-layout slice as blstrs values, without copying.
        ///
        /// The values are taken as they are: a layout value that is not a canonical Montgomery
        /// representation (limbs ≥ the modulus) gives a blstrs value with unspecified arithmetic.
        /// Values produced by a conforming backend are always canonical.
        pub fn $back(s: &[$ours]) -> &[$theirs] {
            // SAFETY: identical size, alignment and field layout (see above).
            unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<$theirs>(), s.len()) }
        }
        /// Mutable counterpart of the view above.
        pub fn $back_mut(s: &mut [$ours]) -> &mut [$theirs] {
            // SAFETY: identical size, alignment and field layout; unique borrow carried over.
            unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<$theirs>(), s.len()) }
        }
        impl From<$theirs> for $ours {
            fn from(x: $theirs) -> Self {
                $slice(std::slice::from_ref(&x))[0]
            }
        }
        impl From<$ours> for $theirs {
            fn from(x: $ours) -> Self {
                $back(std::slice::from_ref(&x))[0]
            }
        }
    };
}
views!(
    Fr,
    blstrs::Scalar,
    fr_slice,
    fr_slice_mut,
    scalars,
    scalars_mut
);
views!(
    G1Affine,
    blstrs::G1Affine,
    g1_affine_slice,
    g1_affine_slice_mut,
    g1_affines,
    g1_affines_mut
);
views!(
    G2Affine,
    blstrs::G2Affine,
    g2_affine_slice,
    g2_affine_slice_mut,
    g2_affines,
    g2_affines_mut
);
views!(
    G1Jacobian,
    blstrs::G1Projective,
    g1_jacobian_slice,
    g1_jacobian_slice_mut,
    g1_projectives,
    g1_projectives_mut
);
views!(
    G2Jacobian,
    blstrs::G2Projective,
    g2_jacobian_slice,
    g2_jacobian_slice_mut,
    g2_projectives,
    g2_projectives_mut
);

impl Fr {
    /// Montgomery R mod r, i.e. the representation of 1.
    pub const ONE: Fr = Fr([
        0x0000_0001_ffff_fffe,
        0x5884_b7fa_0003_4802,
        0x998c_4fef_ecbc_4ff5,
        0x1824_b159_acc5_056f,
    ]);
    /// The scalar field modulus r, little-endian limbs (not Montgomery).
    pub const MODULUS: [u64; 4] = [
        0xffff_ffff_0000_0001,
        0x53bd_a402_fffe_5bfe,
        0x3339_d808_09a1_d805,
        0x73ed_a753_299d_7d48,
    ];
}

impl Fp {
    /// The base field modulus p, little-endian limbs (not Montgomery).
    pub const MODULUS: [u64; 6] = [
        0xb9fe_ffff_ffff_aaab,
        0x1eab_fffe_b153_ffff,
        0x6730_d2a0_f6b0_f624,
        0x6477_4b84_f385_12bf,
        0x4b1b_a7b6_434b_acd7,
        0x1a01_11ea_397f_e69a,
    ];
    /// Montgomery R mod p, i.e. the representation of 1.
    pub const ONE: Fp = Fp([
        0x7609_0000_0002_fffd,
        0xebf4_000b_c40c_0002,
        0x5f48_9857_53c7_58ba,
        0x77ce_5853_7052_5745,
        0x5c07_1a97_a256_ec6d,
        0x15f6_5ec3_fa80_e493,
    ]);
}

impl G1Jacobian {
    /// True for the identity (Z = 0).
    pub fn is_identity(&self) -> bool {
        self.z.0.iter().all(|&l| l == 0)
    }
}

impl G2Jacobian {
    /// True for the identity (Z = 0).
    pub fn is_identity(&self) -> bool {
        self.z
            .c0
            .0
            .iter()
            .chain(self.z.c1.0.iter())
            .all(|&l| l == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::{Field, PrimeField};
    use group::{prime::PrimeCurveAffine, Curve, Group};

    #[test]
    fn montgomery_one_matches_blstrs() {
        assert_eq!(Fr::from(blstrs::Scalar::ONE), Fr::ONE);
        // blst keeps the generator with Z = 1, i.e. Z = R mod p in Montgomery form.
        let g = G1Jacobian::from(blstrs::G1Projective::generator());
        assert_eq!(g.z, Fp::ONE);
    }

    #[test]
    fn montgomery_r_is_2_pow_256_mod_r() {
        // R = 2^256 mod r. Compute 2^256 with field arithmetic on canonical integers and compare
        // with the limbs of ONE, which blst stores as R.
        let two = blstrs::Scalar::from(2u64);
        let r = two.pow_vartime([256u64]);
        let mut canonical = [0u64; 4];
        for (i, chunk) in r.to_repr().as_ref().chunks(8).enumerate() {
            canonical[i] = u64::from_le_bytes(chunk.try_into().unwrap());
        }
        assert_eq!(canonical, Fr::ONE.0);
        // The modulus constant is the field's.
        let minus_one = -blstrs::Scalar::ONE;
        let mut m1 = [0u64; 4];
        for (i, chunk) in minus_one.to_repr().as_ref().chunks(8).enumerate() {
            m1[i] = u64::from_le_bytes(chunk.try_into().unwrap());
        }
        let mut expect = Fr::MODULUS;
        expect[0] -= 1;
        assert_eq!(m1, expect);
    }

    #[test]
    fn identity_encodings() {
        let id = G1Affine::from(blstrs::G1Affine::identity());
        assert_eq!(id, G1Affine::default());
        let idj = G1Jacobian::from(blstrs::G1Projective::identity());
        assert!(idj.is_identity());
        let g = G1Jacobian::from(blstrs::G1Projective::generator());
        assert!(!g.is_identity());
        let g2 = G2Jacobian::from(blstrs::G2Projective::generator());
        assert!(!g2.is_identity());
        assert!(G2Jacobian::from(blstrs::G2Projective::identity()).is_identity());
    }

    #[test]
    fn views_round_trip() {
        let v: Vec<blstrs::Scalar> = (0..10u64).map(blstrs::Scalar::from).collect();
        let f = fr_slice(&v);
        assert_eq!(scalars(f), &v[..]);
        let p: Vec<blstrs::G1Affine> = (1..5u64)
            .map(|i| (blstrs::G1Projective::generator() * blstrs::Scalar::from(i)).to_affine())
            .collect();
        let back: Vec<blstrs::G1Affine> = g1_affine_slice(&p).iter().map(|&x| x.into()).collect();
        assert_eq!(back, p);
    }
}

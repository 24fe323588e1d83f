//! Points on the curve but outside the prime-order subgroup, for the tests that plant them.

use blstrs::{G1Affine, G2Affine};

/// An on-curve G1 point outside the prime-order subgroup: the first x whose x³ + 4 is a square,
/// decompressed without the subgroup check (so the cofactor component stays).
pub fn g1_outside_subgroup() -> G1Affine {
    (1u8..=255)
        .find_map(|x| {
            let mut enc = [0u8; 48];
            enc[0] = 0x80; // compressed, y sign 0
            enc[47] = x;
            Option::<G1Affine>::from(G1Affine::from_compressed_unchecked(&enc))
        })
        .filter(|p| bool::from(p.is_on_curve()) && !bool::from(p.is_torsion_free()))
        .expect("a small x gives a point with a cofactor component")
}

/// The same in G2, x = (k, 0).
pub fn g2_outside_subgroup() -> G2Affine {
    (1u8..=255)
        .find_map(|x| {
            let mut enc = [0u8; 96];
            enc[0] = 0x80;
            enc[95] = x;
            Option::<G2Affine>::from(G2Affine::from_compressed_unchecked(&enc))
        })
        .filter(|p| bool::from(p.is_on_curve()) && !bool::from(p.is_torsion_free()))
        .expect("a small x gives a point with a cofactor component")
}

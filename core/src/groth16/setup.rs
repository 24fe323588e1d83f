//! (in progress)

/// Marker α of benchmark-only parameters: a fixed point nobody knows the discrete log of.
pub fn benchmark_marker_g1() -> blstrs::G1Affine {
    use group::Curve;
    blstrs::G1Projective::hash_to_curve(
        b"bellows benchmark-only parameters: proofs made with them do not verify",
        b"BELLOWS-BENCH-MARKER-V1",
        &[],
    )
    .to_affine()
}

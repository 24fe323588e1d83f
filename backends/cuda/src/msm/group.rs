//! The two groups the device MSM runs in, G1 and G2: their layouts, their kernels, and the
//! host's last step (Horner's rule over the window sums, on blst).

use bellows_backend_api::layout::{G1Affine, G1Jacobian, G2Affine, G2Jacobian};
use blstrs::{G1Projective, G2Projective};
use group::Group as _;

use super::kernels::{GroupKernels, MsmKernels};
use crate::{
    buffers::Plain,
    points::{G1Xyzz, G2Xyzz},
};

/// A group the device MSM runs in.
pub trait MsmGroup: 'static {
    /// Affine points (blst layout).
    type Affine: Plain;
    /// The device's accumulator.
    type Xyzz: Plain;
    /// Results (blst's Jacobian layout).
    type Jacobian: Plain;
    /// "G1" or "G2".
    const NAME: &'static str;
    /// Device memory one MSM pass needs per scalar beyond its bases (scalar, sorted entries,
    /// buckets, partial sums), with room to spare, for every window width: the rule that sizes
    /// the passes of an MSM too large for one ([`super::plan::pass_bytes`] is the bound of one
    /// pass).
    const PASS_BYTES_PER_SCALAR: u64;
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn kernels(k: &MsmKernels) -> &GroupKernels;
    /// Σ_w 2^(c·w)·sums\[w\] + extra (Horner's rule on the host).
    fn combine(window_sums: &[Self::Jacobian], extra: &Self::Jacobian, c: u32) -> Self::Jacobian;
}

/// G1 marker.
pub struct G1;
/// G2 marker.
pub struct G2;

/// `impl MsmGroup` for one group: its types, kernels, and Horner's rule over blstrs' projective
/// points.
macro_rules! msm_group {
    (
        $marker:ty, $name:literal, $per_scalar:literal, $affine:ty, $xyzz:ty, $jac:ty, $proj:ty,
        $kernels:ident
    ) => {
        #[allow(private_interfaces)]
        impl MsmGroup for $marker {
            type Affine = $affine;
            type Xyzz = $xyzz;
            type Jacobian = $jac;
            const NAME: &'static str = $name;
            const PASS_BYTES_PER_SCALAR: u64 = $per_scalar;
            fn kernels(k: &MsmKernels) -> &GroupKernels {
                &k.$kernels
            }
            fn combine(window_sums: &[$jac], extra: &$jac, c: u32) -> $jac {
                let mut acc = <$proj>::identity();
                for s in window_sums.iter().rev() {
                    for _ in 0..c {
                        acc = acc.double();
                    }
                    acc += <$proj>::from(*s);
                }
                acc += <$proj>::from(*extra);
                acc.into()
            }
        }
    };
}
msm_group!(
    G1,
    "G1",
    320,
    G1Affine,
    G1Xyzz,
    G1Jacobian,
    G1Projective,
    g1
);
msm_group!(
    G2,
    "G2",
    640,
    G2Affine,
    G2Xyzz,
    G2Jacobian,
    G2Projective,
    g2
);

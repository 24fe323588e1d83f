//! Point types the device accumulates in, mirrored from the kernels' layouts.

use bellows_backend_api::layout::{Fp, Fp2};

/// A G1 point in XYZZ coordinates (x = X/ZZ, y = Y/ZZZ, ZZ³ = ZZZ²; identity ZZ = 0), the
/// device's accumulator format. Same limb layout as the kernels' `Xyzz<Fp>`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct G1Xyzz {
    /// X.
    pub x: Fp,
    /// Y.
    pub y: Fp,
    /// ZZ.
    pub zz: Fp,
    /// ZZZ.
    pub zzz: Fp,
}

/// A G2 point in XYZZ coordinates over Fp2 (see [`G1Xyzz`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct G2Xyzz {
    /// X.
    pub x: Fp2,
    /// Y.
    pub y: Fp2,
    /// ZZ.
    pub zz: Fp2,
    /// ZZZ.
    pub zzz: Fp2,
}

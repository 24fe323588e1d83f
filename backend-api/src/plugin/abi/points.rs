//! Scalars and points across the boundary: fixed-size arrays of Montgomery limbs with the layout
//! types' exact bytes, so that slices are reinterpreted in place, never converted.

#![allow(unsafe_code)]

use std::mem::{align_of, size_of};

use abi_stable::StableAbi;

use crate::layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian};

macro_rules! limbs_type {
    ($(#[$doc:meta])* $name:ident, $ours:ty, $limbs:expr) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name(pub [u64; $limbs]);

        const _: () = assert!(size_of::<$name>() == size_of::<$ours>());
        const _: () = assert!(align_of::<$name>() == align_of::<$ours>());

        impl $name {
            /// Views layout values as FFI values, without copying.
            pub fn from_layout(s: &[$ours]) -> &[$name] {
                // SAFETY: both are plain `#[repr(C)]` aggregates of `u64` limbs with the same size
                // and alignment (asserted above), in the same limb order: every bit pattern means
                // the same value in both.
                unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<$name>(), s.len()) }
            }
            /// Mutable counterpart of [`Self::from_layout`].
            pub fn from_layout_mut(s: &mut [$ours]) -> &mut [$name] {
                // SAFETY: as above; the unique borrow is carried over.
                unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<$name>(), s.len()) }
            }
            /// Views FFI values as layout values, without copying.
            pub fn to_layout(s: &[$name]) -> &[$ours] {
                // SAFETY: as in `from_layout`.
                unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<$ours>(), s.len()) }
            }
            /// Mutable counterpart of [`Self::to_layout`].
            pub fn to_layout_mut(s: &mut [$name]) -> &mut [$ours] {
                // SAFETY: as in `from_layout`; the unique borrow is carried over.
                unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<$ours>(), s.len()) }
            }
        }
    };
}

limbs_type!(
    /// [`Fr`] as 4 Montgomery limbs.
    FfiFr, Fr, 4
);
limbs_type!(
    /// [`G1Affine`] as 12 limbs: x, y (Fp, 6 Montgomery limbs each).
    FfiG1Affine, G1Affine, 12
);
limbs_type!(
    /// [`G2Affine`] as 24 limbs: x.c0, x.c1, y.c0, y.c1.
    FfiG2Affine, G2Affine, 24
);
limbs_type!(
    /// [`G1Jacobian`] as 18 limbs: X, Y, Z.
    FfiG1Jacobian, G1Jacobian, 18
);
limbs_type!(
    /// [`G2Jacobian`] as 36 limbs: X, Y, Z over Fp2.
    FfiG2Jacobian, G2Jacobian, 36
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_are_zero_copy() {
        let v = vec![Fr([1, 2, 3, 4]), Fr::ONE];
        let f = FfiFr::from_layout(&v);
        assert_eq!(f[0].0, [1, 2, 3, 4]);
        assert_eq!(f.as_ptr().cast::<u8>(), v.as_ptr().cast::<u8>());
        assert_eq!(FfiFr::to_layout(f), &v[..]);
    }
}

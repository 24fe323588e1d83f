//! Conversions between Bellows' Groth16 types and bellperson 0.27's, in memory (the
//! `bellperson` feature).
//!
//! Both crates hold the same blstrs points in the same order, so converting
//! [`Parameters`] moves or clones the five `Arc`ed queries (no point is copied) and converting a
//! [`VerifyingKey`] or [`Proof`] copies a handful of points. Nothing is re-checked: bellperson's
//! types, like ours, only ever hold points that were checked when they were read.
//!
//! ```
//! # use bellows_core::groth16::Parameters;
//! # fn demo(theirs: bellperson::groth16::Parameters<blstrs::Bls12>) {
//! let ours: Parameters = theirs.into();                               // no copy of the queries
//! let back: bellperson::groth16::Parameters<blstrs::Bls12> = (&ours).into(); // Arc clones
//! # }
//! ```

use bellperson::groth16 as bp;
use blstrs::Bls12;

use super::{Parameters, Proof, VerifyingKey};

/// `From` both ways between one of our types and bellperson's, which have the same fields (each
/// converted with `Into`), and from a reference of either by cloning it.
macro_rules! convert_both_ways {
    ($ours:ty, $theirs:ty, [$($field:ident),+ $(,)?]) => {
        #[allow(clippy::useless_conversion)]
        impl From<$theirs> for $ours {
            fn from(x: $theirs) -> Self {
                Self { $($field: x.$field.into()),+ }
            }
        }

        impl From<&$theirs> for $ours {
            fn from(x: &$theirs) -> Self {
                x.clone().into()
            }
        }

        #[allow(clippy::useless_conversion)]
        impl From<$ours> for $theirs {
            fn from(x: $ours) -> Self {
                Self { $($field: x.$field.into()),+ }
            }
        }

        impl From<&$ours> for $theirs {
            fn from(x: &$ours) -> Self {
                x.clone().into()
            }
        }
    };
}

convert_both_ways!(
    VerifyingKey,
    bp::VerifyingKey<Bls12>,
    [alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, ic]
);
convert_both_ways!(Parameters, bp::Parameters<Bls12>, [vk, h, l, a, b_g1, b_g2]);
convert_both_ways!(Proof, bp::Proof<Bls12>, [a, b, c]);

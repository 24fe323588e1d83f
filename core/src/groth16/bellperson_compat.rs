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

impl From<bp::VerifyingKey<Bls12>> for VerifyingKey {
    fn from(vk: bp::VerifyingKey<Bls12>) -> Self {
        VerifyingKey {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic,
        }
    }
}

impl From<&bp::VerifyingKey<Bls12>> for VerifyingKey {
    fn from(vk: &bp::VerifyingKey<Bls12>) -> Self {
        vk.clone().into()
    }
}

impl From<VerifyingKey> for bp::VerifyingKey<Bls12> {
    fn from(vk: VerifyingKey) -> Self {
        bp::VerifyingKey {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic,
        }
    }
}

impl From<&VerifyingKey> for bp::VerifyingKey<Bls12> {
    fn from(vk: &VerifyingKey) -> Self {
        vk.clone().into()
    }
}

impl From<bp::Parameters<Bls12>> for Parameters {
    fn from(p: bp::Parameters<Bls12>) -> Self {
        Parameters {
            vk: p.vk.into(),
            h: p.h,
            l: p.l,
            a: p.a,
            b_g1: p.b_g1,
            b_g2: p.b_g2,
        }
    }
}

impl From<&bp::Parameters<Bls12>> for Parameters {
    fn from(p: &bp::Parameters<Bls12>) -> Self {
        p.clone().into()
    }
}

impl From<Parameters> for bp::Parameters<Bls12> {
    fn from(p: Parameters) -> Self {
        bp::Parameters {
            vk: p.vk.into(),
            h: p.h,
            l: p.l,
            a: p.a,
            b_g1: p.b_g1,
            b_g2: p.b_g2,
        }
    }
}

impl From<&Parameters> for bp::Parameters<Bls12> {
    fn from(p: &Parameters) -> Self {
        p.clone().into()
    }
}

impl From<bp::Proof<Bls12>> for Proof {
    fn from(p: bp::Proof<Bls12>) -> Self {
        Proof {
            a: p.a,
            b: p.b,
            c: p.c,
        }
    }
}

impl From<&bp::Proof<Bls12>> for Proof {
    fn from(p: &bp::Proof<Bls12>) -> Self {
        Proof {
            a: p.a,
            b: p.b,
            c: p.c,
        }
    }
}

impl From<Proof> for bp::Proof<Bls12> {
    fn from(p: Proof) -> Self {
        bp::Proof {
            a: p.a,
            b: p.b,
            c: p.c,
        }
    }
}

impl From<&Proof> for bp::Proof<Bls12> {
    fn from(p: &Proof) -> Self {
        (*p).into()
    }
}

//! Curve test vectors (G1, G2) and their blst results.
//!
//! Inputs cover random points (Jacobian with random Z, from scalar multiplications), the
//! identity in every operand position, P = Q (with different Z), P = −Q, A = ±P, and the
//! generator with Z = 1. Each device result is checked twice: its affine form must equal blst's
//! `to_affine` bit for bit, and its Jacobian form must be the same point as blst's (projective
//! equality, as Jacobian coordinates are not unique).

use bellows_core::Result;
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::{compare, failed, CheckResult};
use crate::elementwise::CurveOp;

macro_rules! curve_checks {
    ($fn_name:ident, $name:literal, $proj:ty, $aff:ty, $ljac:ty, $laff:ty) => {
        /// Runs every curve operation through `exec` and compares with blst.
        #[allow(clippy::type_complexity)]
        pub fn $fn_name(
            mut exec: impl FnMut(
                CurveOp,
                &[$ljac],
                &[$ljac],
                &[$laff],
            ) -> Result<(Vec<$laff>, Vec<$ljac>)>,
            rng: &mut ChaCha8Rng,
            n_random: usize,
        ) -> Vec<CheckResult> {
            let g = <$proj>::generator();
            let rand_point = |rng: &mut ChaCha8Rng| g * blstrs::Scalar::random(rng);
            let id = <$proj>::identity();
            // (P, Q, A) triples.
            let mut cases: Vec<($proj, $proj, $aff)> = Vec::new();
            let p = rand_point(rng);
            let q = rand_point(rng);
            let pa = p.to_affine();
            cases.push((id, q, pa));
            cases.push((p, id, <$aff>::identity()));
            cases.push((id, id, <$aff>::identity()));
            cases.push((id, id, pa));
            cases.push((p, <$proj>::from(pa), pa)); // P = Q with different Z; A = P
            cases.push((p, -p, -pa)); // P = −Q; A = −P
            cases.push((g, g, g.to_affine())); // Z = 1
            cases.push((g, -g, (-g).to_affine()));
            cases.push((p.double(), p + p, (p + p).to_affine()));
            for _ in 0..n_random {
                cases.push((
                    rand_point(rng),
                    rand_point(rng),
                    rand_point(rng).to_affine(),
                ));
            }
            let pj: Vec<$ljac> = cases.iter().map(|c| c.0.into()).collect();
            let qj: Vec<$ljac> = cases.iter().map(|c| c.1.into()).collect();
            let aa: Vec<$laff> = cases.iter().map(|c| c.2.into()).collect();
            let mut out = Vec::new();
            for op in CurveOp::ALL {
                let expected: Vec<$proj> = cases
                    .par_iter()
                    .map(|(p, q, a)| match op {
                        CurveOp::Add => p + q,
                        CurveOp::AddMixed => p + <$proj>::from(*a),
                        CurveOp::Double => p.double(),
                        CurveOp::DoubleAffine => <$proj>::from(*a).double(),
                        CurveOp::Negate => -p,
                        CurveOp::Convert => *p,
                        CurveOp::NegateAffine => -<$proj>::from(*a),
                    })
                    .collect();
                let name = format!("{} {:?}", $name, op);
                let describe = |i: usize| format!("case {i} of {}", cases.len());
                match exec(op, &pj, &qj, &aa) {
                    Ok((affine, jac)) => {
                        let want: Vec<$laff> =
                            expected.iter().map(|e| e.to_affine().into()).collect();
                        out.push(compare(
                            format!("{name} (affine)"),
                            &want,
                            &affine,
                            describe,
                        ));
                        let got: Vec<$proj> = jac.iter().map(|j| (*j).into()).collect();
                        out.push(compare(
                            format!("{name} (jacobian)"),
                            &expected,
                            &got,
                            describe,
                        ));
                    }
                    Err(e) => out.push(failed(name, e)),
                }
            }
            out
        }
    };
}

curve_checks!(
    run_g1_checks,
    "g1",
    blstrs::G1Projective,
    blstrs::G1Affine,
    bellows_core::layout::G1Jacobian,
    bellows_core::layout::G1Affine
);
curve_checks!(
    run_g2_checks,
    "g2",
    blstrs::G2Projective,
    blstrs::G2Affine,
    bellows_core::layout::G2Jacobian,
    bellows_core::layout::G2Affine
);

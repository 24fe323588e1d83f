//! Bases from encodings (`load_bases_g1_encoded` / `_g2_encoded`, optional): the points a
//! backend decodes from a file's bytes must give the MSMs the reference gives over the decoded
//! points, and a bad encoding must be refused at the lowest bad index with blst's reason. A
//! backend that answers `Unsupported` passes: the caller then decodes on the host.

use bellows_core::{
    backend::{EncodedLoad, EncodedPoints, PointDefect},
    Error, Result,
};
use group::prime::PrimeCurveAffine;

use super::{
    cand,
    msm::{compare_jobs, run_jobs, GroupKind, JobSpec, G1, G2},
    needs, refr, Check, CheckResult, Ctx, Fail,
};
use crate::data;

/// Encoded points held in memory, lent to the candidate.
struct Encoded {
    bytes: Vec<u8>,
    size: usize,
}

impl EncodedPoints for Encoded {
    fn len(&self) -> u64 {
        (self.bytes.len() / self.size) as u64
    }
    fn read(&self, first: u64, buf: &mut [u8]) -> Result<()> {
        let at = first as usize * self.size;
        let src = self.bytes.get(at..at + buf.len()).ok_or_else(|| {
            Error::invalid(format!(
                "read of {} bytes from point {first} outside the {} points",
                buf.len(),
                self.len()
            ))
        })?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// A group whose points the candidate can take encoded.
trait EncodedGroup: GroupKind {
    const SIZE: usize;
    fn encode(p: &Self::Aff) -> Vec<u8>;
    fn load_encoded(b: &dyn bellows_core::Backend, e: &Encoded) -> Result<EncodedLoad>;
}

impl EncodedGroup for G1 {
    const SIZE: usize = 96;
    fn encode(p: &Self::Aff) -> Vec<u8> {
        p.to_uncompressed().to_vec()
    }
    fn load_encoded(b: &dyn bellows_core::Backend, e: &Encoded) -> Result<EncodedLoad> {
        b.load_bases_g1_encoded(e)
    }
}

impl EncodedGroup for G2 {
    const SIZE: usize = 192;
    fn encode(p: &Self::Aff) -> Vec<u8> {
        p.to_uncompressed().to_vec()
    }
    fn load_encoded(b: &dyn bellows_core::Backend, e: &Encoded) -> Result<EncodedLoad> {
        b.load_bases_g2_encoded(e)
    }
}

fn encoded<G: EncodedGroup>(points: &[G::Aff]) -> Encoded {
    Encoded {
        bytes: points.iter().flat_map(G::encode).collect(),
        size: G::SIZE,
    }
}

/// Every shared point of `G` (no identity among them), loaded encoded by the candidate and
/// decoded by the reference, then two jobs compared; `Ok(false)` when the candidate does not
/// offer the encoded load.
fn same_msms<G: EncodedGroup>(ctx: &Ctx, stream: u64) -> std::result::Result<bool, Fail> {
    let pts = G::points(ctx);
    let n = pts.len();
    let hc = match G::load_encoded(&*ctx.cand, &encoded::<G>(&pts)) {
        Err(Error::Unsupported { .. }) => return Ok(false),
        r => match cand(r, &format!("load_bases_{}_encoded", G::NAME))? {
            EncodedLoad::Loaded(h) => h,
            EncodedLoad::Refused { index, defect } => {
                return Err(Fail::Error(format!(
                    "candidate refused valid point {index} of {n}: {defect}"
                )))
            }
        },
    };
    if hc.len != n as u64 {
        let _ = ctx.cand.free_bases(hc);
        return Err(Fail::Error(format!(
            "load_bases_{}_encoded: handle of {} points, {n} were given",
            G::NAME,
            hc.len
        )));
    }
    let hr = refr(G::load(&*ctx.refb, pts.clone()), "load")?;
    let jobs: [JobSpec; 2] = [
        (0, data::random_scalars(n, ctx.seed, stream)),
        (n / 3, data::random_scalars(n - n / 3, ctx.seed, stream + 1)),
    ];
    let r = (|| {
        let want = refr(run_jobs::<G>(&*ctx.refb, hr, &jobs), "msm")?;
        let got = cand(run_jobs::<G>(&*ctx.cand, hc, &jobs), "msm")?;
        compare_jobs::<G>(&want, &got, &format!("{} bases from encodings", G::NAME))
    })();
    let _ = ctx.refb.free_bases(hr);
    let freed = cand(ctx.cand.free_bases(hc), "free_bases");
    r.and(freed).map(|()| true)
}

fn loads(ctx: &Ctx) -> CheckResult {
    if !same_msms::<G1>(ctx, 36_000)? {
        return Ok(());
    }
    if ctx.caps.msm_g2 {
        same_msms::<G2>(ctx, 36_100)?;
    }
    Ok(())
}

/// The shared G1 points with bad encodings planted, each expected refused at the lowest bad
/// index: far apart, so that a backend reading in pieces is checked past its first piece.
fn refusals(ctx: &Ctx) -> CheckResult {
    let pts = G1::points(ctx);
    let n = pts.len();
    let good = encoded::<G1>(&pts);
    let identity = blstrs::G1Affine::identity().to_uncompressed();
    // (where, what is written there) planted together; the lowest is expected, with its defect.
    type Write = Box<dyn Fn(&mut [u8])>;
    type Plant = (usize, Write);
    let off_curve: Write = Box::new(|b: &mut [u8]| b[95] ^= 1);
    let cases: Vec<(Vec<Plant>, usize, PointDefect)> = vec![
        (vec![(n - 2, off_curve)], n - 2, PointDefect::NotOnCurve),
        (
            vec![
                (n - 1, Box::new(|b: &mut [u8]| b[95] ^= 1)),
                (
                    n / 2,
                    Box::new(move |b: &mut [u8]| b.copy_from_slice(&identity)),
                ),
            ],
            n / 2,
            PointDefect::Infinity,
        ),
        (
            vec![(3, Box::new(|b: &mut [u8]| b[0] |= 0x80))],
            3,
            PointDefect::Encoding,
        ),
        (
            vec![(
                n - 3,
                Box::new(|b: &mut [u8]| {
                    b[..48].copy_from_slice(&bellows_core::backend::encoded::modulus_be())
                }),
            )],
            n - 3,
            PointDefect::Encoding,
        ),
    ];
    for (plants, want_at, want) in cases {
        let mut e = Encoded {
            bytes: good.bytes.clone(),
            size: 96,
        };
        for (at, write) in &plants {
            write(&mut e.bytes[96 * at..96 * (at + 1)]);
        }
        match ctx.cand.load_bases_g1_encoded(&e) {
            Err(Error::Unsupported { .. }) => return Ok(()),
            Ok(EncodedLoad::Refused { index, defect })
                if index == want_at as u64 && defect == want => {}
            Ok(EncodedLoad::Loaded(h)) => {
                let _ = ctx.cand.free_bases(h);
                return Err(Fail::Error(format!(
                    "candidate accepted {n} points with point {want_at} bad ({want})"
                )));
            }
            other => {
                return Err(Fail::Error(format!(
                    "point {want_at} of {n} should be refused as {want:?}: got {other:?}"
                )))
            }
        }
    }
    Ok(())
}

/// The encoded-bases checks.
pub fn checks(ctx: &Ctx) -> Vec<Check> {
    let n = (1usize << ctx.k) + 1;
    vec![
        Check::new(
            "bases from encodings",
            format!("{n} G1 (and G2) points decoded by the backend, 2 jobs; optional"),
            needs::g1,
            loads,
        ),
        Check::new(
            "encoded bases refused",
            format!("bad flags, coordinate = p, off the curve, identity among {n}; optional"),
            needs::g1,
            refusals,
        ),
    ]
}

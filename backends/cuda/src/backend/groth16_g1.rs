//! The Groth16 G1 phase on one lane of a GPU ([`Backend::groth16_g1`] and
//! [`Backend::groth16_g1_g2`] for the proofs a GPU was given): the quotient on the device (h
//! never leaves it), the H MSM over h, the L, A and B₁ MSMs over the assignments, and with G2
//! bases the B₂ MSM over the same device copies of the assignments.
//!
//! One stream does it all, in that order: the quotient's uploads and transforms overlap one
//! another ([`Quotient::upload_and_compute`]), and the assignments' copies run under the
//! quotient's last transforms. Running the quotient with the H MSM and the assignments' MSMs at
//! once on two lanes of the GPU was tried and was no faster (docs/benchmarks.md).
//!
//! [`Backend::groth16_g1`]: bellows_backend_api::Backend::groth16_g1
//! [`Backend::groth16_g1_g2`]: bellows_backend_api::Backend::groth16_g1_g2
//! [`Quotient::upload_and_compute`]: crate::quotient::Quotient::upload_and_compute

use bellows_backend_api::{
    backend::{G1G2Sums, MsmJob, ProofAssignment},
    layout::{Fr, G1Affine, G1Jacobian, G2Affine},
    Result,
};

use super::lanes::Held;
use crate::{
    buffers::DeviceVec,
    device::CudaDevice,
    msm::{words_as_fr, ScalarSource, G1, G2},
    residency::{passes, ResidentSet},
};

/// The G1 phase of some proofs on the lane `held`: a, b, c hold their vectors. With `g2`, then
/// B₂' of each proof over those G2 bases, reading the assignments the G1 phase uploaded (h's
/// buffer is freed first); without, the second vector is empty. `lane_room`: device bytes the
/// lane may use now (asked before each allocation plan).
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    held: &Held<'_>,
    lane_room: &dyn Fn() -> Result<u64>,
    a: &[Fr],
    b: &[Fr],
    c: &[Fr],
    log_n: u32,
    proofs: &[ProofAssignment<'_>],
    sets: [&ResidentSet<G1Affine>; 4],
    g2: Option<&ResidentSet<G2Affine>>,
) -> Result<G1G2Sums> {
    let dev = held.dev;
    let f = held.features;
    let n = 1usize << log_n;
    let [sh, sl, sa, sb] = sets;
    // a, b, c up, each vector's transforms queued after its upload and running under the
    // next one's copy; then the quotient's pointwise steps and last transform. The
    // assignments' copies follow c's on the copy stream, under c's transforms and the
    // quotient's last steps, when the room allows their buffers beside a, b and c (a peak
    // higher by their size); otherwise they are allocated once the quotient frees b and c,
    // and copied after it.
    // The density bitmaps go with the assignments (a 2^27 aux bitmap is 16 MB; uploaded
    // once, not once an MSM pass).
    let dens_host = densities(proofs);
    let assignments: Vec<&[Fr]> = proofs.iter().flat_map(|p| [p.inputs, p.aux]).collect();
    let with_dens: Vec<&[Fr]> = assignments
        .iter()
        .copied()
        .chain(dens_host.iter().map(Vec::as_slice))
        .collect();
    let words: usize = 3 * a.len() + with_dens.iter().map(|v| v.len()).sum::<usize>();
    let beside = lane_room()? >= (words * std::mem::size_of::<Fr>()) as u64;
    let also: &[&[Fr]] = if beside { &with_dens } else { &[] };
    let (da, early) = f
        .quotient
        .upload_and_compute(dev, &f.ntt, a, b, c, log_n, also)?;
    // Proof j's inputs at 2j, its aux assignment at 2j + 1; then the densities, three a
    // proof (`densities`).
    let mut assigned = if beside {
        early
    } else {
        with_dens
            .iter()
            .map(|v| upload(dev, v))
            .collect::<Result<Vec<_>>>()?
    };
    let dens_dev = assigned.split_off(assignments.len());
    let dens = |j: usize, which: usize| dens_dev.get(3 * j + which).filter(|d| !d.is_empty());
    let msm = |s: &ResidentSet<G1Affine>, (start, sc, density, dd): DeviceJob<'_>| {
        let tuning = f.msm.tuning();
        let (pass, room) = passes::<G1>(s, sc.len(), lane_room()?, &tuning, dev.label())?;
        f.msm
            .run::<G1>(dev, s.source(), start, sc, density, dd, pass, room)
    };
    let sum = |s: &ResidentSet<G1Affine>, [i, x]: [DeviceJob<'_>; 2]| -> Result<G1Jacobian> {
        let (i, x) = (msm(s, i)?, msm(s, x)?);
        Ok((blstrs::G1Projective::from(i) + blstrs::G1Projective::from(x)).into())
    };
    let mut out = Vec::with_capacity(proofs.len());
    for (j, p) in proofs.iter().enumerate() {
        let h = msm(sh, (0, ScalarSource::Device(&da, j * n, n - 1), None, None))?;
        let aux = ScalarSource::Device(&assigned[2 * j + 1], 0, p.aux.len());
        let l = msm(sl, (0, aux, None, None))?;
        let a = sum(sa, on_device(&assigned, j, p.a_jobs(), [None, dens(j, 0)]))?;
        let b_jobs = on_device(&assigned, j, p.b_jobs()?, [dens(j, 1), dens(j, 2)]);
        let b = sum(sb, b_jobs)?;
        out.push([h, l, a, b]);
    }
    let Some(s2) = g2 else {
        return Ok((out, Vec::new()));
    };
    // h's memory back to the pool before the G2 passes plan theirs.
    drop(da);
    let msm2 = |(start, sc, density, dd): DeviceJob<'_>| {
        let tuning = f.msm.tuning();
        let (pass, room) = passes::<G2>(s2, sc.len(), lane_room()?, &tuning, dev.label())?;
        f.msm
            .run::<G2>(dev, s2.source(), start, sc, density, dd, pass, room)
    };
    let mut out2 = Vec::with_capacity(proofs.len());
    for (j, p) in proofs.iter().enumerate() {
        let [i, x] = on_device(&assigned, j, p.b_jobs()?, [dens(j, 1), dens(j, 2)]);
        let (i, x) = (msm2(i)?, msm2(x)?);
        out2.push((blstrs::G2Projective::from(i) + blstrs::G2Projective::from(x)).into());
    }
    Ok((out, out2))
}

/// An MSM over scalars on the device: the first base's index, the scalars, their density, and
/// the density's device copy.
type DeviceJob<'b> = (
    usize,
    ScalarSource<'b>,
    Option<&'b [u64]>,
    Option<&'b DeviceVec<Fr>>,
);

/// A pair of jobs of proof `j` ([`ProofAssignment::a_jobs`], [`ProofAssignment::b_jobs`]: over
/// its inputs, then its aux assignment) over the device copies of those vectors, `assigned[2j]`
/// and `assigned[2j + 1]`, and of their densities, `dens` (see [`densities`]).
fn on_device<'b>(
    assigned: &'b [DeviceVec<Fr>],
    j: usize,
    [i, x]: [MsmJob<'b>; 2],
    dens: [Option<&'b DeviceVec<Fr>>; 2],
) -> [DeviceJob<'b>; 2] {
    let job = |m: MsmJob<'b>, d: &'b DeviceVec<Fr>, dd: Option<&'b DeviceVec<Fr>>| {
        (
            m.start,
            ScalarSource::Device(d, 0, m.scalars.len()),
            m.density,
            dd.filter(|_| m.density.is_some()),
        )
    };
    [
        job(i, &assigned[2 * j], dens[0]),
        job(x, &assigned[2 * j + 1], dens[1]),
    ]
}

/// The density bitmaps of each proof that the G1 phase uploads once, in this order: A's over
/// the aux, B's over the inputs, B's over the aux (B₁ and B₂ read the same two); each laid out
/// as [`words_as_fr`] pads it, an empty one as no value.
fn densities(proofs: &[ProofAssignment<'_>]) -> Vec<Vec<Fr>> {
    proofs
        .iter()
        .flat_map(|p| [p.a_aux_density, p.b_input_density, p.b_aux_density])
        .map(words_as_fr)
        .collect()
}

/// Host values into new device memory through the pinned staging (copy stream).
fn upload(dev: &CudaDevice, host: &[Fr]) -> Result<DeviceVec<Fr>> {
    let mut d = dev.alloc_uninit::<Fr>(host.len())?;
    dev.upload_staged(host, &mut d, |_, _| Ok(()))?;
    Ok(d)
}

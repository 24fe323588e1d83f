//! The Groth16 G1 phase on one lane of a GPU ([`Backend::groth16_g1`] and
//! [`Backend::groth16_g1_g2`] for the proofs a GPU was given): the quotient on the device (h
//! never leaves it), the H MSM over h, the L, A and B₁ MSMs over the assignments, and with G2
//! bases the B₂ MSM over the same device copies of the assignments.
//!
//! One stream does it all, in that order: the quotient's uploads and transforms overlap one
//! another ([`quotient_upload`]), and the assignments' copies run under the quotient's last
//! transforms. Running the quotient with the H MSM and the assignments' MSMs at once on two
//! lanes of the GPU was built and measured in run 77 (commit fa96a3f, option `split-phase`):
//! no faster (K = 27, 90 % bits: 2.11 against 2.12 s; K = 24 dense 764.1 against 762.3 ms);
//! two MSMs at once took 0.97× the time of one after the other (docs/benchmarks.md, "H200 run
//! 77", where the likely reason, not profiled, is given).
//!
//! [`Backend::groth16_g1`]: bellows_core::Backend::groth16_g1
//! [`Backend::groth16_g1_g2`]: bellows_core::Backend::groth16_g1_g2

use bellows_core::{
    backend::{ntt::coset_generator, G1G2Sums, MsmJob, NttConfig, Ordering, ProofAssignment},
    layout::{Fr, G1Affine, G1Jacobian, G2Affine},
    Error, Result,
};
use cudarc::driver::{DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use ff::Field;

use super::{CudaBackend, FrArg, Held, ResidentSet};
use crate::{
    memory::DeviceVec,
    msm::{ScalarSource, G1, G2},
    CudaDevice,
};

impl CudaBackend {
    /// The G1 phase of some proofs on the lane `held`: a, b, c hold their vectors. With `g2`,
    /// then B₂' of each proof over those G2 bases, reading the assignments the G1 phase
    /// uploaded (h's buffer is freed first); without, the second vector is empty.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn g1_phase_on(
        &self,
        held: &Held<'_>,
        a: &[Fr],
        b: &[Fr],
        c: &[Fr],
        log_n: u32,
        proofs: &[ProofAssignment<'_>],
        sets: [&ResidentSet<G1Affine>; 4],
        g2: Option<&ResidentSet<G2Affine>>,
    ) -> Result<G1G2Sums> {
        let (k, dev) = (held.k, held.dev);
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
        let beside =
            self.room(k)? / self.streams() as u64 >= (words * std::mem::size_of::<Fr>()) as u64;
        let (da, early) =
            quotient_upload(dev, a, b, c, log_n, if beside { &with_dens } else { &[] })?;
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
            let (pass, room) = self.msm_room::<G1>(k, s, sc.len())?;
            dev.msm_density::<G1>(s.source(), start, sc, density, dd, pass, room)
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
            let (pass, room) = self.msm_room::<G2>(k, s2, sc.len())?;
            dev.msm_density::<G2>(s2.source(), start, sc, density, dd, pass, room)
        };
        let mut out2 = Vec::with_capacity(proofs.len());
        for (j, p) in proofs.iter().enumerate() {
            let [i, x] = on_device(&assigned, j, p.b_jobs()?, [dens(j, 1), dens(j, 2)]);
            let (i, x) = (msm2(i)?, msm2(x)?);
            out2.push((blstrs::G2Projective::from(i) + blstrs::G2Projective::from(x)).into());
        }
        Ok((out, out2))
    }
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
/// as [`crate::msm::words_as_fr`] pads it, an empty one as no value.
fn densities(proofs: &[ProofAssignment<'_>]) -> Vec<Vec<Fr>> {
    proofs
        .iter()
        .flat_map(|p| [p.a_aux_density, p.b_input_density, p.b_aux_density])
        .map(crate::msm::words_as_fr)
        .collect()
}

/// Host values into new device memory through the pinned staging (copy stream).
fn upload(dev: &CudaDevice, host: &[Fr]) -> Result<DeviceVec<Fr>> {
    let mut d = dev.alloc_uninit::<Fr>(host.len())?;
    dev.upload_staged(host, &mut d, |_, _| Ok(()))?;
    Ok(d)
}

/// The quotient of host vectors a, b, c (see [`bellows_core::backend::Ntt::h_poly`]), h
/// returned on the device.
///
/// h = (coset_iNTT(A·B) − C)/Z, where A and B are a's and b's evaluations on the coset, C is c's
/// coefficient vector and Z = g^n − 1 is Z's constant value on the coset: the inverse coset
/// transform is linear and undoes the forward coset transform of c's coefficients, so c only
/// goes through the inverse transform, six transforms instead of seven (run 66).
///
/// The three buffers are allocated first and every copy is ordered after that point alone
/// ([`CudaDevice::upload_staged_after`]), and each vector's transforms are queued right after
/// its own upload: so the copy engine fills b while the compute stream transforms a, and c
/// while it transforms b, instead of each copy waiting for the transforms queued before it
/// (runs 56–57 at 2^27: 624 ms of copies and transforms one after the other before the H MSM;
/// 480 ms with this order, run 59). The vectors of `also` (the assignments) get their buffers
/// beside a, b and c and are copied after c, under c's transform and the quotient's last
/// steps; they are returned in order.
pub(super) fn quotient_upload(
    dev: &CudaDevice,
    a: &[Fr],
    b: &[Fr],
    c: &[Fr],
    log_n: u32,
    also: &[&[Fr]],
) -> Result<(DeviceVec<Fr>, Vec<DeviceVec<Fr>>)> {
    let mut da = dev.alloc_uninit::<Fr>(a.len())?;
    let mut db = dev.alloc_uninit::<Fr>(b.len())?;
    let mut dc = dev.alloc_uninit::<Fr>(c.len())?;
    let mut more = also
        .iter()
        .map(|v| dev.alloc_uninit::<Fr>(v.len()))
        .collect::<Result<Vec<_>>>()?;
    let allocated = dev.stream().record_event(None).map_err(|e| dev.err(e))?;
    for (host, d) in [(a, &mut da), (b, &mut db)] {
        dev.upload_staged_after(host, d, &allocated, |_, _| Ok(()))?;
        to_coset(dev, d, log_n)?;
    }
    dev.upload_staged_after(c, &mut dc, &allocated, |_, _| Ok(()))?;
    dev.ntt_device(&mut dc, log_n, &NttConfig::inverse())?;
    quotient_finish(dev, &mut da, &db, &dc, log_n)?;
    // Queued after the quotient on the compute stream, so it does not wait for these copies;
    // on the copy stream they follow c's.
    for (host, d) in also.iter().zip(more.iter_mut()) {
        dev.upload_staged_after(host, d, &allocated, |_, _| Ok(()))?;
    }
    Ok((da, more))
}

/// Evaluations → evaluations on the coset (inverse transform, then the forward coset
/// transform), queued on the compute stream.
fn to_coset(dev: &CudaDevice, v: &mut DeviceVec<Fr>, log_n: u32) -> Result<()> {
    let inv = NttConfig::inverse().with_orders(Ordering::Natural, Ordering::BitReversed);
    let fwd_coset = NttConfig::forward()
        .with_coset(true)
        .with_orders(Ordering::BitReversed, Ordering::Natural);
    dev.ntt_device(v, log_n, &inv)?;
    dev.ntt_device(v, log_n, &fwd_coset)
}

/// A·B on the coset, the inverse coset transform, then (· − C)/Z: `a` receives h (`a`, `b` hold
/// the coset evaluations, `c` the coefficients, all in natural order).
fn quotient_finish(
    dev: &CudaDevice,
    a: &mut DeviceVec<Fr>,
    b: &DeviceVec<Fr>,
    c: &DeviceVec<Fr>,
    log_n: u32,
) -> Result<()> {
    // Z(g·ω^j) = g^n − 1 for every j.
    let n = 1u64 << log_n;
    let z = coset_generator().pow_vartime([n]) - blstrs::Scalar::ONE;
    let z_inv: blstrs::Scalar =
        Option::from(z.invert()).ok_or_else(|| Error::invalid("Z vanishes on the coset"))?;
    let z_inv = FrArg(blst::blst_fr::from(z_inv).l);
    let len = a.len() as u64;
    let stream = dev.stream();
    let cfg = LaunchConfig {
        grid_dim: (len.div_ceil(256).clamp(1, 1 << 16) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let pa = a.buf.device_ptr_mut(stream).0;
    let (pb, pc) = (b.buf.device_ptr(stream).0, c.buf.device_ptr(stream).0);
    let mut l = stream.launch_builder(&dev.k.quotient_product);
    l.arg(&pa).arg(&pb).arg(&len);
    // SAFETY: reads and writes len elements of a, reads len of b (equal lengths).
    unsafe { l.launch(cfg) }.map_err(|e| dev.err(e))?;
    let inv_coset = NttConfig::inverse().with_coset(true);
    dev.ntt_device(a, log_n, &inv_coset)?;
    let pa = a.buf.device_ptr_mut(stream).0;
    let mut l = stream.launch_builder(&dev.k.quotient_finish);
    l.arg(&pa).arg(&pc).arg(&z_inv).arg(&len);
    // SAFETY: reads and writes len elements of a, reads len of c (equal lengths).
    unsafe { l.launch(cfg) }.map_err(|e| dev.err(e))?;
    Ok(())
}

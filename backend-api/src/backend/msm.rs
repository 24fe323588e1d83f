//! Multi-scalar multiplication over resident bases.
//!
//! ## Design
//! Groth16 multiplies the same SRS points (the parameters' h, l, a, b_g1, b_g2 queries) by new
//! scalars for every proof. A backend therefore takes the points once, through
//! [`Msm::load_bases_g1`] / [`Msm::load_bases_g2`], and answers with a [`BasesHandle`]; every later
//! MSM names the handle, a range of the points, and the scalars. What "resident" means is the
//! backend's choice: the CPU backend keeps a reference to the host memory (zero-copy: the points a
//! parameters file was decoded into), a GPU backend copies to device memory, or pins the host pages
//! and streams them when the device is short of memory.
//!
//! Calls are batched: one [`Msm::msm_g1`] call carries many [`MsmJob`]s over one handle (one per
//! proof of a batch), so a device can pipeline scalar uploads of job k+1 with the buckets of job k
//! and defer the result copy, as cuzk/supraseal do.
//!
//! A job may carry a density bitmap ([`MsmJob::density`]) so that the prover hands over whole
//! assignments instead of filtered copies of them; a backend honours it however suits it (the
//! CPU backend gathers the used scalars, a GPU kernel reads the bitmap).
//!
//! Scalars arrive in the crossing layout ([`Fr`], Montgomery); the backend converts them to
//! canonical form itself. Results are Jacobian points in blst's layout.

use std::sync::Arc;

use super::encoded::{EncodedLoad, EncodedPoints};
use crate::{
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Result,
};

/// Which group a set of bases lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub enum Group {
    /// G1 (96-byte affine points).
    G1,
    /// G2 (192-byte affine points).
    G2,
}

/// Handle to bases made resident on a backend. Returned by `load_bases_*`, valid until
/// [`Msm::free_bases`]. Handles are plain values: copying one does not copy the points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct BasesHandle {
    /// Backend-chosen identifier.
    pub id: u64,
    /// Group of the points.
    pub group: Group,
    /// Number of points.
    pub len: u64,
}

/// Host memory holding points, shared with a backend for as long as it keeps a handle to it.
///
/// Implemented for `Vec`s of both the crossing layout and blstrs' types, so parameters loaded from
/// disk are handed over without copying.
pub trait PointSource<T>: Send + Sync {
    /// The points.
    fn points(&self) -> &[T];
}

impl<T: Send + Sync> PointSource<T> for Vec<T> {
    fn points(&self) -> &[T] {
        self
    }
}
impl PointSource<G1Affine> for Vec<blstrs::G1Affine> {
    fn points(&self) -> &[G1Affine] {
        crate::layout::g1_affine_slice(self)
    }
}
impl PointSource<G2Affine> for Vec<blstrs::G2Affine> {
    fn points(&self) -> &[G2Affine] {
        crate::layout::g2_affine_slice(self)
    }
}

/// Shared, reference-counted points handed to [`Msm::load_bases_g1`] / [`Msm::load_bases_g2`].
pub type SharedPoints<T> = Arc<dyn PointSource<T>>;

/// One MSM of a batch: `Σ scalars[i] · bases[start + i]`, or, with a density bitmap, the same
/// sum over the used scalars only.
///
/// ## Density
/// Groth16's A and B queries omit the points of variables that never occur, so the scalars of
/// such an MSM are the assignment *filtered* by a density. Instead of gathering a filtered copy,
/// a job carries the whole assignment and the density as a bitmap: bit `i % 64` of word `i / 64`
/// set means scalar `i` is used. Used scalar `i` multiplies base `start + (number of set bits
/// before i)`; unused scalars are skipped. The bitmap has exactly `scalars.len().div_ceil(64)`
/// words and no bit set at or beyond `scalars.len()` ([`MsmJob::check`]).
///
/// Build jobs with [`MsmJob::new`] and [`MsmJob::with_density`]; the struct may gain fields.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct MsmJob<'a> {
    /// Index of the first base point used.
    pub start: usize,
    /// The scalars; without a density, `scalars.len()` points are used from `start` on.
    pub scalars: &'a [Fr],
    /// Which scalars are used (see the type's documentation); `None`: all of them.
    pub density: Option<&'a [u64]>,
}

/// Number of `u64` words of a density bitmap over `n` scalars.
pub fn density_words(n: usize) -> usize {
    n.div_ceil(64)
}

/// Checks that `bits` is a density bitmap over `n` scalars (length, no stray bits past `n`) and
/// returns the number of set bits.
pub fn check_density(bits: &[u64], n: usize) -> Result<usize> {
    let want = density_words(n);
    if bits.len() != want {
        return Err(crate::Error::invalid(format!(
            "density bitmap of {} words for {n} scalars; expected {want}",
            bits.len()
        )));
    }
    if !n.is_multiple_of(64) {
        if let Some(&last) = bits.last() {
            if last >> (n % 64) != 0 {
                return Err(crate::Error::invalid(format!(
                    "density bitmap has bits set past its {n} scalars"
                )));
            }
        }
    }
    Ok(bits.iter().map(|w| w.count_ones() as usize).sum())
}

/// Whether bit `i` of a density bitmap is set.
#[inline]
pub fn density_bit(bits: &[u64], i: usize) -> bool {
    bits[i / 64] >> (i % 64) & 1 == 1
}

/// Checks a batch of jobs against `handle` and the `out_len` result slots: what every
/// backend's `msm_g1` / `msm_g2` checks first.
pub fn check_batch(handle: &BasesHandle, jobs: &[MsmJob<'_>], out_len: usize) -> Result<()> {
    if out_len != jobs.len() {
        return Err(crate::Error::invalid(format!(
            "MSM batch of {} jobs given {} output slots",
            jobs.len(),
            out_len
        )));
    }
    jobs.iter().try_for_each(|j| j.check(handle))
}

impl<'a> MsmJob<'a> {
    /// `Σ scalars[i] · bases[start + i]`.
    pub fn new(start: usize, scalars: &'a [Fr]) -> Self {
        Self {
            start,
            scalars,
            density: None,
        }
    }

    /// The same job over the used scalars of `bits` only (see the type's documentation).
    pub fn with_density(mut self, bits: &'a [u64]) -> Self {
        self.density = Some(bits);
        self
    }

    /// Number of base points the job reads (the used scalars). For a density job whose bitmap
    /// is malformed this is the number of set bits; [`MsmJob::check`] first.
    pub fn bases_len(&self) -> usize {
        match self.density {
            None => self.scalars.len(),
            Some(bits) => bits.iter().map(|w| w.count_ones() as usize).sum(),
        }
    }

    /// Checks the density bitmap (if any) and that the bases the job reads lie within `handle`.
    pub fn check(&self, handle: &BasesHandle) -> Result<()> {
        let used = match self.density {
            None => self.scalars.len(),
            Some(bits) => check_density(bits, self.scalars.len())?,
        };
        match self.start.checked_add(used) {
            Some(end) if end as u64 <= handle.len => Ok(()),
            _ => Err(crate::Error::invalid(format!(
                "MSM range {}..{} is outside the {} resident bases of handle {}",
                self.start,
                self.start.saturating_add(used),
                handle.len,
                handle.id
            ))),
        }
    }

    /// The scalars of the used positions, in order: borrowed without a density, gathered into a
    /// new vector with one (for backends that filter on their side).
    pub fn used_scalars(&self) -> std::borrow::Cow<'a, [Fr]> {
        match self.density {
            None => std::borrow::Cow::Borrowed(self.scalars),
            Some(bits) => std::borrow::Cow::Owned(
                self.scalars
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| density_bit(bits, *i))
                    .map(|(_, s)| *s)
                    .collect(),
            ),
        }
    }
}

/// Multi-scalar multiplication in G1 and G2 over resident bases.
pub trait Msm {
    /// Makes G1 points resident and returns their handle.
    fn load_bases_g1(&self, bases: SharedPoints<G1Affine>) -> Result<BasesHandle>;
    /// Makes G2 points resident and returns their handle. Optional (capability `msm_g2`): the
    /// default answers [`crate::Error::Unsupported`].
    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        drop(bases);
        Err(crate::Error::unsupported(
            std::any::type_name::<Self>(),
            "load_bases_g2",
        ))
    }
    /// Makes resident the G1 points `points` encodes, decoded and checked by the backend
    /// itself ([`super::encoded`]: a valid encoding, on the curve, not the identity), without the
    /// host decoding them first. Optional: the default answers [`crate::Error::Unsupported`]
    /// before reading anything, and the caller decodes on the host and calls
    /// [`Msm::load_bases_g1`]. A refused point is an [`EncodedLoad::Refused`], with nothing kept;
    /// a handle returned keeps no reference to `points`.
    fn load_bases_g1_encoded(&self, points: &dyn EncodedPoints) -> Result<EncodedLoad> {
        let _ = points;
        Err(crate::Error::unsupported(
            std::any::type_name::<Self>(),
            "load_bases_g1_encoded",
        ))
    }
    /// As [`Msm::load_bases_g1_encoded`] for G2 points.
    fn load_bases_g2_encoded(&self, points: &dyn EncodedPoints) -> Result<EncodedLoad> {
        let _ = points;
        Err(crate::Error::unsupported(
            std::any::type_name::<Self>(),
            "load_bases_g2_encoded",
        ))
    }
    /// Releases resident bases. Using the handle afterwards is an [`crate::Error::InvalidInput`].
    fn free_bases(&self, handle: BasesHandle) -> Result<()>;
    /// Whether the backend still reads the points it was given for `handle` after the load
    /// returned (it keeps a reference: it computes from them, or streams a part not held in
    /// its own memory). `false` lets whoever lent them (the plugin host, which lends host memory
    /// until `free_bases`) drop them at once: a set held whole in device memory needs no host
    /// copy. The default: `true`.
    fn bases_need_host(&self, handle: BasesHandle) -> Result<bool> {
        let _ = handle;
        Ok(true)
    }
    /// Runs every job over the G1 bases of `handle`; `out[k]` receives job k's result. Jobs
    /// may carry densities ([`MsmJob`]).
    fn msm_g1(&self, handle: BasesHandle, jobs: &[MsmJob], out: &mut [G1Jacobian]) -> Result<()>;
    /// Runs every job over the G2 bases of `handle`; `out[k]` receives job k's result. Optional
    /// (capability `msm_g2`): the default answers [`crate::Error::Unsupported`].
    fn msm_g2(&self, handle: BasesHandle, jobs: &[MsmJob], out: &mut [G2Jacobian]) -> Result<()> {
        let _ = (handle, jobs, out);
        Err(crate::Error::unsupported(
            std::any::type_name::<Self>(),
            "msm_g2",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle(len: u64) -> BasesHandle {
        BasesHandle {
            id: 1,
            group: Group::G1,
            len,
        }
    }

    #[test]
    fn density_jobs_are_checked_and_filtered() {
        let sc: Vec<Fr> = (0..70u64).map(|i| Fr([i, 0, 0, 0])).collect();
        // Bits 0, 3, 64 and 69 set: four used scalars.
        let bits = [0b1001u64, 1 | 1 << 5];
        let job = MsmJob::new(10, &sc).with_density(&bits);
        assert_eq!(check_density(&bits, 70).unwrap(), 4);
        assert_eq!(job.bases_len(), 4);
        job.check(&handle(14)).unwrap();
        assert!(matches!(
            job.check(&handle(13)),
            Err(crate::Error::InvalidInput(_))
        ));
        let used: Vec<u64> = job.used_scalars().iter().map(|f| f.0[0]).collect();
        assert_eq!(used, [0, 3, 64, 69]);
        // Without a density every scalar is used, borrowed.
        let plain = MsmJob::new(0, &sc);
        assert_eq!(plain.bases_len(), 70);
        assert!(matches!(
            plain.used_scalars(),
            std::borrow::Cow::Borrowed(_)
        ));
        // Wrong length, stray bits past the scalars.
        for bad in [&[0b1001u64][..], &[0, 0, 0][..], &[0, 1 << 6][..]] {
            let e = MsmJob::new(0, &sc).with_density(bad).check(&handle(100));
            assert!(matches!(e, Err(crate::Error::InvalidInput(_))), "{bad:?}");
        }
        // All clear: nothing used, any start up to the end is fine.
        let none = [0u64, 0];
        let j = MsmJob::new(5, &sc).with_density(&none);
        j.check(&handle(5)).unwrap();
        assert!(j.used_scalars().is_empty());
        // A multiple of 64 needs no mask; an empty job has an empty bitmap.
        assert_eq!(check_density(&[u64::MAX], 64).unwrap(), 64);
        assert_eq!(check_density(&[], 0).unwrap(), 0);
        assert_eq!(density_words(0), 0);
        assert_eq!(density_words(65), 2);
        assert!(density_bit(&bits, 69) && !density_bit(&bits, 68));
    }

    #[test]
    fn g2_is_optional() {
        struct NoG2;
        impl Msm for NoG2 {
            fn load_bases_g1(&self, _: SharedPoints<G1Affine>) -> Result<BasesHandle> {
                Ok(handle(0))
            }
            fn free_bases(&self, _: BasesHandle) -> Result<()> {
                Ok(())
            }
            fn msm_g1(&self, _: BasesHandle, _: &[MsmJob<'_>], _: &mut [G1Jacobian]) -> Result<()> {
                Ok(())
            }
        }
        let e = NoG2.msm_g2(handle(0), &[], &mut []).unwrap_err();
        assert!(
            e.is_recoverable() && e.to_string().contains("msm_g2"),
            "{e}"
        );
        let pts: SharedPoints<G2Affine> = Arc::new(Vec::<G2Affine>::new());
        assert!(matches!(
            NoG2.load_bases_g2(pts),
            Err(crate::Error::Unsupported { .. })
        ));
    }
}

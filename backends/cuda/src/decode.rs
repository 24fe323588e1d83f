//! Parameter points decoded on the GPU from a parameters file's encoding (`kernels/ec/decode.cuh`:
//! uncompressed, big-endian, flags in the first byte), with the curve check and blst's verdict
//! for each point.
//!
//! [`Decode::into_device`] is the key load's: a section's bytes are read into the lane's pinned
//! staging buffers, copied to where the points will live, and decoded there in place
//! (`load_bases_g1_encoded`; docs/cuda.md, "Parameter points"). [`Decode::g1_from_host`] and
//! [`Decode::g2_from_host`] serve the device check program, which compares them with blst.

use bellows_backend_api::{
    backend::{EncodedPoints, PointDefect},
    layout::{Fr, G1Affine, G2Affine},
    Error, Result,
};
use cudarc::driver::{CudaFunction, PushKernelArg};

use crate::{
    buffers::{words, words_mut, DeviceVec, PinnedVec, Plain},
    device::CudaDevice,
    error::NAME,
    launch::{ptr, ptr_mut, stride_cfg},
    transfer::STAGE_FR,
};

/// A point decoded ([`Decode`]'s verdicts are the kernel's, `kernels/ec/decode.cuh`).
pub const VERDICT_OK: u8 = 0;
/// The identity: the infinity flag and no other bit set (the all-zero point written).
pub const VERDICT_IDENTITY: u8 = 1;
/// A compression or sort flag, an infinity flag with other bits set, or a coordinate ≥ p.
pub const VERDICT_ENCODING: u8 = 2;
/// Coordinates below p off the curve.
pub const VERDICT_NOT_ON_CURVE: u8 = 3;
/// (0, ±√b): on the curve, refused as blst refuses it.
pub const VERDICT_NOT_IN_GROUP: u8 = 4;

/// The refusal a verdict other than [`VERDICT_OK`] stands for (the identity is refused in a
/// key's sections, as the host's decoding refuses it).
pub fn defect_of(verdict: u8) -> Result<PointDefect> {
    match verdict {
        VERDICT_IDENTITY => Ok(PointDefect::Infinity),
        VERDICT_ENCODING => Ok(PointDefect::Encoding),
        VERDICT_NOT_ON_CURVE => Ok(PointDefect::NotOnCurve),
        VERDICT_NOT_IN_GROUP => Ok(PointDefect::NotInSubgroup),
        other => Err(Error::Backend {
            name: NAME.into(),
            reason: format!("the decode kernel gave verdict {other}, which it has none of"),
        }),
    }
}

/// The lowest index among the first `len` verdict bytes of `v` that is not [`VERDICT_OK`],
/// with its verdict (waits for a pending copy into `v`).
fn first_refused(v: &PinnedVec<Fr>, len: usize) -> Result<Option<(usize, u8)>> {
    let w = words(v.as_slice()?);
    for (k, word) in w.iter().enumerate().take(len.div_ceil(8)) {
        if *word == 0 {
            continue;
        }
        let bytes = word.to_le_bytes();
        if let Some(j) = (0..8).find(|&j| bytes[j] != VERDICT_OK && 8 * k + j < len) {
            return Ok(Some((8 * k + j, bytes[j])));
        }
    }
    Ok(None)
}

/// The lowest refused point of the piece (first point, points) whose verdicts `v` holds, if a
/// piece is given, as an index among all points, with its verdict.
fn refused_in(v: &PinnedVec<Fr>, piece: Option<(usize, usize)>) -> Result<Option<(u64, u8)>> {
    let Some((first, len)) = piece else {
        return Ok(None);
    };
    Ok(first_refused(v, len)?.map(|(j, verdict)| ((first + j) as u64, verdict)))
}

/// The decode kernels of one GPU.
pub struct Decode {
    g1: CudaFunction,
    g2: CudaFunction,
}

impl Decode {
    /// Loads the kernels from `dev`'s module.
    pub fn new(dev: &CudaDevice) -> Result<Self> {
        Ok(Self {
            g1: dev.function("bellows_decode_g1")?,
            g2: dev.function("bellows_decode_g2")?,
        })
    }

    /// Decodes the G1 encodings in `encoded` (96 bytes each) on lane `dev`: the points in blst's
    /// layout (zero where the verdict is not [`VERDICT_OK`]) and a verdict each.
    pub fn g1_from_host(
        &self,
        dev: &CudaDevice,
        encoded: &[u8],
    ) -> Result<(Vec<G1Affine>, Vec<u8>)> {
        self.run::<G1Affine>(&self.g1, dev, encoded)
    }

    /// As [`Decode::g1_from_host`] for G2 encodings (192 bytes each).
    pub fn g2_from_host(
        &self,
        dev: &CudaDevice,
        encoded: &[u8],
    ) -> Result<(Vec<G2Affine>, Vec<u8>)> {
        self.run::<G2Affine>(&self.g2, dev, encoded)
    }

    /// Reads the encodings of `points` piece by piece into lane `dev`'s pinned staging buffers,
    /// copies each piece to its place in `dst` and decodes it there in place (an encoding is as
    /// long as its decoded point), while the host reads the next piece. Returns the lowest
    /// refused point and its verdict, if any: `dst` then holds no usable set. Pieces are checked
    /// in order, each two pieces later, so a refusal stops the reading soon after.
    pub fn into_device<A: Plain>(
        &self,
        dev: &CudaDevice,
        points: &dyn EncodedPoints,
        dst: &mut DeviceVec<A>,
    ) -> Result<Option<(u64, u8)>> {
        let size = A::WORDS * 8;
        let f = match size {
            96 => &self.g1,
            192 => &self.g2,
            _ => return Err(Error::invalid(format!("no encoding is {size} bytes long"))),
        };
        let n = dst.len();
        if points.len() != n as u64 {
            return Err(Error::invalid(format!(
                "{} encoded points for a buffer of {n}",
                points.len()
            )));
        }
        if n == 0 {
            return Ok(None);
        }
        let per_piece = STAGE_FR * 4 / A::WORDS;
        // A verdict byte per point, in 32-byte elements; each slot's copied back to the host.
        let frs = per_piece.div_ceil(32);
        let mut dverd = [dev.alloc_uninit::<Fr>(frs)?, dev.alloc_uninit::<Fr>(frs)?];
        let mut hverd = [dev.alloc_pinned::<Fr>(frs)?, dev.alloc_pinned::<Fr>(frs)?];
        let base = ptr_mut(dst, dev);
        let found = dev.with_staging(|st| {
            // (first point, points) of the piece each slot holds, not yet checked.
            let mut pending: [Option<(usize, usize)>; 2] = [None, None];
            let pieces = n.div_ceil(per_piece);
            for k in 0..pieces {
                let i = k % 2;
                if let Some(ev) = st.done[i].take() {
                    ev.synchronize().map_err(|e| dev.err(e))?;
                }
                if let Some(bad) = refused_in(&hverd[i], pending[i].take())? {
                    return Ok(Some(bad));
                }
                let first = k * per_piece;
                let len = per_piece.min(n - first);
                let staged = &mut words_mut(st.bufs[i].as_mut_slice()?)[..len * A::WORDS];
                // SAFETY: the same memory viewed as bytes (u8 has no alignment and no invalid
                // values); `staged` is not used while this view lives.
                let bytes = unsafe {
                    std::slice::from_raw_parts_mut(staged.as_mut_ptr().cast::<u8>(), len * size)
                };
                points.read(first as u64, bytes)?;
                let at = base + (first * size) as u64;
                // SAFETY: the source is pinned memory not written again before the event
                // recorded below has completed (waited for above, two pieces later); the
                // destination, points first..first + len of `dst`, lies inside it.
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(at, staged, dev.stream().cu_stream())
                }
                .map_err(|e| dev.err(e))?;
                let (pv, count) = (ptr_mut(&mut dverd[i], dev), len as u64);
                let mut l = dev.stream().launch_builder(f);
                l.arg(&at).arg(&at).arg(&pv).arg(&count);
                // SAFETY: the kernel decodes the `len` points at `at` (inside `dst`) in place,
                // each point's bytes read whole before its point is written (ec/decode.cuh), and
                // writes `len` verdict bytes into `dverd[i]` (room for `per_piece` ≥ len).
                unsafe { l.launch(stride_cfg(count)) }.map_err(|e| dev.err(e))?;
                dev.download_pinned(&dverd[i], &mut hverd[i])?;
                st.done[i] = Some(dev.stream().record_event(None).map_err(|e| dev.err(e))?);
                pending[i] = Some((first, len));
            }
            // The last two pieces, the older first.
            for i in [pieces % 2, (pieces + 1) % 2] {
                if let Some(ev) = &st.done[i] {
                    ev.synchronize().map_err(|e| dev.err(e))?;
                }
                if let Some(bad) = refused_in(&hverd[i], pending[i].take())? {
                    return Ok(Some(bad));
                }
            }
            Ok(None)
        });
        // Nothing queued may outlive the verdict buffers, whatever ended the loop.
        let synced = dev.synchronize();
        let found = found?;
        synced?;
        Ok(found)
    }

    /// An encoding is exactly as long as the decoded affine point (96 or 192 bytes), so the
    /// bytes travel in a buffer of `A`s.
    fn run<A: Plain>(
        &self,
        f: &CudaFunction,
        dev: &CudaDevice,
        encoded: &[u8],
    ) -> Result<(Vec<A>, Vec<u8>)> {
        let size = std::mem::size_of::<A>();
        if !encoded.len().is_multiple_of(size) {
            return Err(bellows_backend_api::Error::invalid(format!(
                "{} bytes are not a whole number of {size}-byte encodings",
                encoded.len()
            )));
        }
        let n = encoded.len() / size;
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let mut host = vec![A::default(); n];
        for (w, b) in words_mut(&mut host).iter_mut().zip(encoded.chunks_exact(8)) {
            *w = u64::from_ne_bytes(b.try_into().expect("8 bytes"));
        }
        let input = dev.upload(&host)?;
        let mut out = dev.alloc::<A>(n)?;
        // A verdict byte per point, in 32-byte elements.
        let mut verdicts = dev.alloc::<Fr>(n.div_ceil(32))?;
        let (pi, po, pv) = (
            ptr(&input, dev),
            ptr_mut(&mut out, dev),
            ptr_mut(&mut verdicts, dev),
        );
        let len = n as u64;
        let mut l = dev.stream().launch_builder(f);
        l.arg(&pi).arg(&po).arg(&pv).arg(&len);
        // SAFETY: the kernel reads n encodings of `size` bytes from `input` (n·size bytes), writes
        // at most n points into `out` (n values) and n bytes into `verdicts` (≥ n bytes).
        unsafe { l.launch(stride_cfg(len)) }.map_err(|e| dev.err(e))?;
        let points = dev.download(&out)?;
        let v = dev.download(&verdicts)?;
        let bytes: Vec<u8> = words(&v)
            .iter()
            .flat_map(|w| w.to_ne_bytes())
            .take(n)
            .collect();
        Ok((points, bytes))
    }
}

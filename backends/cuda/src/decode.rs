//! Parameter points decoded on the GPU from a parameters file's encoding (`kernels/ec/decode.cuh`:
//! uncompressed, big-endian, flags in the first byte), with the curve check and blst's verdict
//! for each point.
//!
//! For now this is what the device check program compares with blst (`bellows-cuda-check`); the
//! key load that will send a file's bytes here instead of decoding them on the host is issue 42's
//! next step (docs/cuda.md, "Parameter points").

use bellows_backend_api::{
    layout::{Fr, G1Affine, G2Affine},
    Result,
};
use cudarc::driver::{CudaFunction, PushKernelArg};

use crate::{
    buffers::{words, words_mut, Plain},
    device::CudaDevice,
    launch::{ptr, ptr_mut, stride_cfg},
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

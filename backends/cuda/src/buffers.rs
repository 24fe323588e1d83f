//! Device buffers and pinned host buffers of blst-layout values (allocated and filled by the
//! device's transfers, `src/transfer.rs`).
//!
//! Every value that crosses to the device is a plain array of little-endian u64 limbs
//! ([`Plain`]), so buffers are cudarc `u64` allocations viewed as slices of the value type; no
//! value is converted on the way.

use std::marker::PhantomData;

use bellows_backend_api::layout::{Fp, Fp2, Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian};
use cudarc::driver::{CudaEvent, CudaSlice, PinnedHostSlice};

use crate::{
    error::driver_error,
    points::{G1Xyzz, G2Xyzz},
};

/// A value type that is exactly `WORDS` little-endian u64 limbs with no padding (blst's layout),
/// so that a slice of it can be copied as a slice of u64.
///
/// # Safety
/// Implementors must be `#[repr(C)]` (or transparent) aggregates of u64 arrays, of size
/// `8 · WORDS` and alignment 8, for which every bit pattern is a valid value.
pub unsafe trait Plain: Copy + Default + Send + Sync + 'static {
    /// Number of u64 limbs in one value.
    const WORDS: usize;
}

macro_rules! plain {
    ($($t:ty => $w:expr),* $(,)?) => {$(
        // SAFETY: the layout types are #[repr(C)] structs of [u64; N] arrays (see
        // bellows_backend_api::layout and crate::points); the size is asserted just below.
        unsafe impl Plain for $t {
            const WORDS: usize = $w;
        }
        const _: () = assert!(std::mem::size_of::<$t>() == 8 * $w);
        const _: () = assert!(std::mem::align_of::<$t>() == 8);
    )*};
}
plain!(
    Fr => 4,
    Fp => 6,
    Fp2 => 12,
    G1Affine => 12,
    G2Affine => 24,
    G1Jacobian => 18,
    G2Jacobian => 36,
    G1Xyzz => 24,
    G2Xyzz => 48,
);

/// Views plain values as their u64 limbs.
pub fn words<T: Plain>(s: &[T]) -> &[u64] {
    // SAFETY: T is WORDS u64 limbs with no padding and alignment 8 (Plain's contract), so the
    // memory of the slice is exactly len·WORDS initialised u64s.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u64>(), s.len() * T::WORDS) }
}

/// Mutable counterpart of [`words`].
pub fn words_mut<T: Plain>(s: &mut [T]) -> &mut [u64] {
    // SAFETY: as in `words`; every u64 pattern is a valid T, and the borrow is carried over.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u64>(), s.len() * T::WORDS) }
}

/// Views whole groups of u64 limbs as plain values. `w.len()` must be a multiple of `T::WORDS`.
pub(crate) fn from_words_mut<T: Plain>(w: &mut [u64]) -> &mut [T] {
    debug_assert_eq!(w.len() % T::WORDS, 0);
    // SAFETY: u64 slices are 8-aligned, T has alignment 8 and every bit pattern is valid (Plain);
    // the length is rounded down to whole values.
    unsafe { std::slice::from_raw_parts_mut(w.as_mut_ptr().cast::<T>(), w.len() / T::WORDS) }
}

/// Shared counterpart of [`from_words_mut`].
pub(crate) fn from_words<T: Plain>(w: &[u64]) -> &[T] {
    debug_assert_eq!(w.len() % T::WORDS, 0);
    // SAFETY: as in `from_words_mut`.
    unsafe { std::slice::from_raw_parts(w.as_ptr().cast::<T>(), w.len() / T::WORDS) }
}

/// A buffer of `len` values of type `T` in device memory. Made by [`crate::CudaDevice::alloc`]
/// or [`crate::CudaDevice::upload`] (`src/transfer.rs`); freed (stream-ordered) when dropped.
pub struct DeviceVec<T: Plain> {
    pub(crate) buf: CudaSlice<u64>,
    pub(crate) len: usize,
    pub(crate) _t: PhantomData<T>,
}

impl<T: Plain> DeviceVec<T> {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when the buffer holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.len * T::WORDS * 8
    }
    /// The memory as cudarc's slice of u64 limbs, for kernels launched by other crates (the
    /// tools' test kernels).
    pub fn raw(&self) -> &CudaSlice<u64> {
        &self.buf
    }
    /// Mutable counterpart of [`DeviceVec::raw`].
    pub fn raw_mut(&mut self) -> &mut CudaSlice<u64> {
        &mut self.buf
    }
}

/// Page-locked host memory holding `len` values of type `T`, from which copies to and from the
/// device run asynchronously at full bus speed. Made by [`crate::CudaDevice::alloc_pinned`].
/// (Allocated without write-combining, so the CPU reads it at normal speed.)
pub struct PinnedVec<T: Plain> {
    pub(crate) buf: PinnedHostSlice<u64>,
    pub(crate) len: usize,
    pub(crate) _t: PhantomData<T>,
}

impl<T: Plain> PinnedVec<T> {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when the buffer holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The values (waits for a pending copy into this buffer first).
    pub fn as_slice(&self) -> bellows_backend_api::Result<&[T]> {
        let w = self.buf.as_slice().map_err(|e| driver_error("pinned", e))?;
        Ok(from_words(w))
    }
    /// The values, mutably (waits for a pending copy first).
    pub fn as_mut_slice(&mut self) -> bellows_backend_api::Result<&mut [T]> {
        let w = self
            .buf
            .as_mut_slice()
            .map_err(|e| driver_error("pinned", e))?;
        Ok(from_words_mut(w))
    }
}

/// Two pinned buffers used in turn by [`crate::CudaDevice::upload_staged`], each with the event
/// that marks the end of the last copy reading it.
pub(crate) struct Staging {
    pub bufs: [PinnedVec<Fr>; 2],
    pub done: [Option<CudaEvent>; 2],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_views_round_trip() {
        let mut v = vec![Fr([1, 2, 3, 4]), Fr([5, 6, 7, 8])];
        assert_eq!(words(&v), &[1, 2, 3, 4, 5, 6, 7, 8]);
        words_mut(&mut v)[5] = 60;
        assert_eq!(v[1], Fr([5, 60, 7, 8]));
        let mut w = vec![9u64; 12];
        let p: &mut [Fp2] = from_words_mut(&mut w);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].c1.0, [9; 6]);
    }
}

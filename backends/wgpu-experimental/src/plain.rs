//! Byte views of the crossing layout, for uploads and readbacks without copies.

use bellows_backend_api::layout::{Fp, Fp2, Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian};

/// Types that are plain little-endian integers with no padding: every byte pattern is a value.
///
/// # Safety
/// The implementing type must be `#[repr(C)]` (or transparent) over `u64` limbs only, with no
/// padding bytes.
pub unsafe trait Plain: Copy + 'static {}

// SAFETY: each is #[repr(C)] over [u64; N] fields only (bellows_backend_api::layout asserts the sizes
// against blst: 32, 96, 192, 144, 288 bytes, i.e. no padding).
unsafe impl Plain for Fr {}
// SAFETY: as above.
unsafe impl Plain for G1Affine {}
// SAFETY: as above.
unsafe impl Plain for G2Affine {}
// SAFETY: as above.
unsafe impl Plain for G1Jacobian {}
// SAFETY: as above.
unsafe impl Plain for G2Jacobian {}
// SAFETY: Fp is #[repr(C)] over [u64; 6] (48 bytes, asserted against blst in bellows-core).
unsafe impl Plain for Fp {}
// SAFETY: Fp2 is #[repr(C)] over two Fp (96 bytes, asserted against blst in bellows-core).
unsafe impl Plain for Fp2 {}

/// The bytes of `v`.
pub fn bytes<T: Plain>(v: &[T]) -> &[u8] {
    // SAFETY: `T: Plain` has no padding, so every byte of the slice is initialised; the length
    // is the slice's size in bytes and u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// The bytes of `v`, writable.
pub fn bytes_mut<T: Plain>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `bytes`; and any byte pattern written is a valid `T` (plain integers).
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

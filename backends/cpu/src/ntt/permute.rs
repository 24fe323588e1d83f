//! In-place bit-reversal permutation, cache-blocked and parallel.
//!
//! An index of `L` bits is split as `(t, m, l)`: `b` top bits, `L − 2b` middle bits, `b` low
//! bits. Its bit reversal is `(rev l, rev m, rev t)`, so the permutation exchanges the
//! `2^b × 2^b` tile of middle value `m` with the tile of `rev m`, transposing (and reversing) it on
//! the way (the tiled scheme of Carter & Gatlin, "Towards an optimal bit-reversal permutation
//! program", FOCS 1998). Each tile is copied to a small buffer first, so every row of memory is
//! read once and written once; tile pairs are independent rayon tasks.

use rayon::prelude::*;

use super::twiddle::bitrev;

/// log2 of the tile side: 16 elements of 32 bytes = 512 contiguous bytes per tile row.
const TILE_LOG: u32 = 4;

/// Up to this size (8 MiB of scalars, within the L3 cache) a plain serial swap loop is fastest:
/// measured on 2 cores, the tiled version only pays off from 2^20 (8.6 ms against 16 ms), and
/// threads only add overhead below that.
const SIMPLE_MAX_LOG: u32 = 18;

/// Tile pairs per rayon task (each pair moves 16 KiB).
const TASK_TILES: usize = 64;

/// Shares a raw pointer between tasks that touch disjoint elements.
#[derive(Clone, Copy)]
struct SharedMut<T>(*mut T);
// SAFETY: each task reads and writes only the two tiles it owns (see `bitrev_permute`).
unsafe impl<T: Send> Send for SharedMut<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedMut<T> {}

impl<T> SharedMut<T> {
    /// The pointer (a method, so closures capture the whole `Sync` wrapper, not its field).
    fn ptr(self) -> *mut T {
        self.0
    }
}

/// Permutes `x` (length `2^L`) so that element `i` moves to `bitrev_L(i)`.
pub(crate) fn bitrev_permute<T: Copy + Send + Sync + Default>(x: &mut [T]) {
    let n = x.len();
    if n <= 2 {
        return;
    }
    debug_assert!(n.is_power_of_two());
    let bits = n.trailing_zeros();
    if bits <= SIMPLE_MAX_LOG {
        for i in 0..n {
            let j = bitrev(i, bits);
            if i < j {
                x.swap(i, j);
            }
        }
        return;
    }
    let b = TILE_LOG;
    let side = 1usize << b;
    let mid_bits = bits - 2 * b;
    let top_stride = 1usize << (bits - b);
    let base = SharedMut(x.as_mut_ptr());
    let index = move |t: usize, m: usize, l: usize| (t * top_stride) | (m << b) | l;
    (0..1usize << mid_bits)
        .into_par_iter()
        .with_min_len(TASK_TILES)
        .for_each_init(
            || {
                (
                    vec![T::default(); side * side],
                    vec![T::default(); side * side],
                )
            },
            |(ta, tb), m| {
                let m2 = bitrev(m, mid_bits);
                if m > m2 {
                    return;
                }
                let p = base.ptr();
                let rev = |v: usize| bitrev(v, b);
                // SAFETY: every index is < n by construction; this task alone owns the tiles of
                // middle values m and m2 (m ≤ m2, and the task for m2 returns early when m2 ≠ m);
                // `x` is exclusively borrowed for the whole call.
                unsafe {
                    for t in 0..side {
                        for l in 0..side {
                            ta[t * side + l] = *p.add(index(t, m, l));
                            tb[t * side + l] = *p.add(index(t, m2, l));
                        }
                    }
                    for t in 0..side {
                        for l in 0..side {
                            let src = rev(l) * side + rev(t);
                            *p.add(index(t, m, l)) = tb[src];
                            if m != m2 {
                                *p.add(index(t, m2, l)) = ta[src];
                            }
                        }
                    }
                }
            },
        );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_definition() {
        for bits in (0..=12u32).chain([19, 20]) {
            let n = 1usize << bits;
            let mut v: Vec<u32> = (0..n as u32).collect();
            bitrev_permute(&mut v);
            for (i, &x) in v.iter().enumerate() {
                assert_eq!(x as usize, bitrev(i, bits), "bits = {bits}, i = {i}");
            }
        }
    }
}

//! Advice to the kernel about large host buffers (Linux; elsewhere every call does nothing).
//!
//! A fresh multi-gigabyte buffer is backed page by page as it is first written: one fault per
//! 4 KiB, each costing microseconds in a virtual machine, and a thread that fills a buffer in
//! sequence (a circuit's witness code) pays them all on its own. Two remedies, both advisory and
//! neither changing what the memory holds:
//! - [`advise_huge`]: `MADV_HUGEPAGE`, so that with transparent huge pages in `madvise` mode (a
//!   common default) the buffer is backed by 2 MiB pages: 512 times fewer faults.
//! - [`populate`]: `MADV_POPULATE_WRITE` (Linux 5.14), which makes the kernel back a range now,
//!   without user-space writes: another thread can run it ahead of the writer.
//!
//! Failures (an older kernel, a range the kernel refuses) are ignored: the buffer is then backed
//! on first touch as usual.

#![allow(unsafe_code)]

use std::mem::MaybeUninit;

/// Buffers smaller than this are left alone (the advice would cost more than it saves).
const MIN_BYTES: usize = 8 << 20;

/// The page-aligned part of [addr, addr + bytes), if it is worth advising.
fn aligned(start: usize, bytes: usize) -> Option<(usize, usize)> {
    if bytes < MIN_BYTES {
        return None;
    }
    const PAGE: usize = 4096;
    let first = start.div_ceil(PAGE) * PAGE;
    let last = (start + bytes) / PAGE * PAGE;
    (last > first).then_some((first, last - first))
}

/// # Safety
/// [start, start + bytes) must lie inside one live allocation of this process.
#[cfg(target_os = "linux")]
unsafe fn madvise(start: usize, bytes: usize, advice: libc::c_int) {
    if let Some((addr, len)) = aligned(start, bytes) {
        // SAFETY: per the contract the page-aligned sub-range lies inside memory this process
        // owns. MADV_HUGEPAGE and MADV_POPULATE_WRITE change how the range is backed, never its
        // contents, and touch no byte from user space (so another thread may be writing it);
        // the result is ignored.
        unsafe {
            libc::madvise(addr as *mut libc::c_void, len, advice);
        }
    }
}

/// Asks for transparent huge pages behind `buf` (see the module docs).
pub fn advise_huge<T>(buf: &mut [MaybeUninit<T>]) {
    #[cfg(target_os = "linux")]
    // SAFETY: the range is `buf`, borrowed for the call.
    unsafe {
        madvise(
            buf.as_mut_ptr() as usize,
            std::mem::size_of_val(buf),
            libc::MADV_HUGEPAGE,
        )
    };
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

/// `n` copies of `value`, written on every core into memory advised for huge pages: a key's
/// section of points is gigabytes, and `vec![value; n]` backs it page by page on one thread
/// while its decoding runs on every core (docs/benchmarks.md, "Filecoin": the load's host side
/// with and without).
pub fn filled<P: Copy + Send + Sync>(value: P, n: usize) -> Vec<P> {
    use rayon::prelude::*;
    let mut out = Vec::with_capacity(n);
    advise_huge(out.spare_capacity_mut());
    out.par_extend(rayon::iter::repeat_n(value, n));
    out
}

/// Backs `bytes` bytes from `start` with memory now (see the module docs), from a thread other
/// than the one writing them: the kernel backs the pages without reading or writing their bytes.
///
/// # Safety
/// [start, start + bytes) must lie inside one allocation that stays alive during the call.
pub unsafe fn populate(start: *const u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: forwarded contract.
    unsafe {
        madvise(start as usize, bytes, libc::MADV_POPULATE_WRITE)
    };
    #[cfg(not(target_os = "linux"))]
    let _ = (start, bytes);
}

//! Steps 4 and 5 of a pass (kernels/msm/accumulate.cuh): the sorted entries cut into equal
//! chunks, one per thread, each summing its runs of one bucket with mixed additions; then the
//! fix-up of the buckets that span chunks (a warp each for those that span many).

use bellows_backend_api::Result;
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};

use super::{digits::Digits, shape::Shape};
use crate::{
    buffers::DeviceVec,
    device::CudaDevice,
    launch::{launch_cfg, ptr_mut, U32Buf},
    msm::{
        group::MsmGroup,
        kernels::{MsmKernels, BLOCK},
        plan::{MIN_CHUNK, TARGET_THREADS},
        profile::Phases,
    },
};

/// Accumulates the pass's `max_entries` (at most) entries over the bases at `bases_ptr` into
/// zeroed buckets, which it returns; frees the entries once they are summed. `ph` marks
/// "alloc", "accumulate", "fixup" and "free".
pub(crate) fn run<G: MsmGroup>(
    dev: &CudaDevice,
    k: &MsmKernels,
    shape: &Shape,
    d: &mut Digits,
    bases_ptr: u64,
    max_entries: u64,
    ph: &mut Phases<'_>,
) -> Result<DeviceVec<G::Xyzz>> {
    let kern = G::kernels(k);
    let keys = shape.keys;
    let offsets_ptr = d.offsets.ptr(dev);
    // Chunks of L entries, L chosen on the device from the real count (`chunk32 = 0`,
    // msm::effective_chunk): TARGET_THREADS threads, fewer for small MSMs.
    let chunk32 = 0u32;
    let threads = max_entries.div_ceil(MIN_CHUNK).clamp(1, TARGET_THREADS);
    let mut buckets = dev.alloc::<G::Xyzz>(keys as usize)?;
    ph.mark("alloc");
    let mut heads = dev.alloc_uninit::<G::Xyzz>(threads as usize)?;
    let mut tails = dev.alloc_uninit::<G::Xyzz>(threads as usize)?;
    let entries_ptr = d.args.entries;
    let (b_ptr, h_ptr, t_ptr) = (
        ptr_mut(&mut buckets, dev),
        ptr_mut(&mut heads, dev),
        ptr_mut(&mut tails, dev),
    );
    let mut l = dev.stream().launch_builder(&kern.accumulate);
    l.arg(&bases_ptr)
        .arg(&entries_ptr)
        .arg(&offsets_ptr)
        .arg(&keys)
        .arg(&chunk32)
        .arg(&threads)
        .arg(&b_ptr)
        .arg(&h_ptr)
        .arg(&t_ptr);
    // SAFETY: thread t reads entries [t·L, (t+1)·L) below the total, the offsets (keys + 1),
    // bases below start + used (checked by the caller), and writes buckets[key < keys],
    // heads[t], tails[t] (threads long; L = max(⌈total / threads⌉, 8), so threads·L ≥ total).
    unsafe { l.launch(launch_cfg(threads, BLOCK)) }.map_err(|e| dev.err(e))?;
    ph.mark("accumulate");
    // Buckets spanning more than 32 chunks are listed for a warp each; there are at most
    // threads / 32 + 1 of them (their spans overlap only at their ends).
    let big_cap = threads / 32 + 2;
    let mut big = U32Buf::uninit(dev, big_cap)?;
    let mut big_count = U32Buf::zeroed(dev, 1)?;
    let (big_ptr, big_count_ptr) = (big.ptr(dev), big_count.ptr(dev));
    // The two fix-up kernels take the same arguments: `fixup` with a thread per key (launched
    // first), then `fixup_big` with a warp per listed bucket in 64-thread blocks.
    let fixup = |f: &CudaFunction, cfg: LaunchConfig| -> Result<()> {
        let mut l = dev.stream().launch_builder(f);
        l.arg(&offsets_ptr)
            .arg(&keys)
            .arg(&chunk32)
            .arg(&threads)
            .arg(&h_ptr)
            .arg(&t_ptr)
            .arg(&b_ptr)
            .arg(&big_ptr)
            .arg(&big_count_ptr);
        // SAFETY: `fixup`: thread = key < keys reads offsets and the heads/tails of the chunks
        // its bucket spans (all written by the accumulation), writes buckets[key] or one slot of
        // `big` (at most big_cap are listed, see above). `fixup_big`: warp w < big_count reads
        // big[w] (written by `fixup`), the offsets and the chunk partials of that bucket, and
        // writes its bucket; 64-thread blocks, 64 XYZZ of shared memory each (static).
        unsafe { l.launch(cfg) }.map_err(|e| dev.err(e))?;
        Ok(())
    };
    fixup(&kern.fixup, launch_cfg(keys as u64, BLOCK))?;
    fixup(&kern.fixup_big, launch_cfg(big_cap * 32, 64))?;
    drop((big, big_count));
    ph.mark("fixup");
    drop((heads, tails, d.entries.take()));
    ph.mark("free");
    Ok(buckets)
}

//! Step 3 of a pass: every digit's entry written at its bucket's cursor, a counting sort of all
//! (window, digit) pairs by bucket. By key ranges (`msm::scatter_range`, launches of the digit
//! kernel that each write behind the cursors of part of the buckets), or through bins of keys
//! (kernels/msm/bins.cuh) where there are many buckets and the scratch fits
//! ([`plan::bin_shift`]).

use bellows_backend_api::{layout::Fr, Error, Result};
use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::{
    digits::{launch_digits, DigitArgs, Digits},
    shape::Shape,
};
use crate::{
    device::CudaDevice,
    launch::{launch_cfg, ptr_mut, stride_cfg, U32Buf},
    msm::{
        config::MsmConfig,
        kernels::{MsmKernels, BIN_BLOCK},
        plan,
        profile::Phases,
    },
};

/// Scatters the pass's digits: binned when `d.bin_shift` says so and its scratch (8 bytes an
/// entry, sized by the scan's total: one wait for the device here) fits `scratch_room` and the
/// driver gives it; by key ranges otherwise. `ph` marks "bin" between the binned scatter's two
/// steps.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    dev: &CudaDevice,
    k: &MsmKernels,
    cfg: &MsmConfig,
    shape: &Shape,
    d: &mut Digits,
    n: u64,
    scratch_room: u64,
    ph: &mut Phases<'_>,
) -> Result<()> {
    let keys = shape.keys;
    let binned = match d.bin_shift {
        Some(shift) => {
            let total = d.counts.read(dev, keys as u64)?;
            if total == 0 || u64::from(total) * 8 > scratch_room {
                None
            } else {
                match dev.alloc_uninit::<Fr>(total.div_ceil(4) as usize) {
                    Ok(scratch) => Some((shift, total, scratch)),
                    // Out of memory for the scratch: the scatter by key ranges.
                    Err(Error::OutOfMemory { .. }) => None,
                    Err(e) => return Err(e),
                }
            }
        }
        None => None,
    };
    let args = d.args;
    if let Some((shift, total, mut scratch)) = binned {
        let bins = keys.div_ceil(1 << shift);
        let mut cursors = U32Buf::uninit(dev, u64::from(bins))?;
        let (cursors_ptr, offsets_ptr) = (cursors.ptr(dev), d.offsets.ptr(dev));
        let scratch_ptr = ptr_mut(&mut scratch, dev);
        let mut l = dev.stream().launch_builder(&k.bin_start);
        l.arg(&offsets_ptr).arg(&shift).arg(&bins).arg(&cursors_ptr);
        // SAFETY: bin b < bins reads offsets[b << shift] (below keys, as bins =
        // ⌈keys / 2^shift⌉; the offsets hold keys + 1 values) and writes cursors[b].
        unsafe { l.launch(stride_cfg(u64::from(bins))) }.map_err(|e| dev.err(e))?;
        // The kernel reads the list's length itself; blocks past it return at once.
        let blocks = n
            .div_ceil(u64::from(BIN_BLOCK))
            .min(u64::from(dev.multiprocessors()?) * 8) as u32;
        let mut l = dev.stream().launch_builder(&k.bin);
        l.arg(&args)
            .arg(&shift)
            .arg(&bins)
            .arg(&cursors_ptr)
            .arg(&scratch_ptr);
        // SAFETY: as the digit pass for the listed scalars (indices below n, written by the
        // count pass, their number in listed_count), densities and ranks; a block's pairs go to
        // runs reserved from its bins' cursors, each run inside its bin's region of [0, total)
        // (the scan's offsets, so the regions hold exactly the digits the count pass counted),
        // and the scratch holds total u64 (⌈total / 4⌉ Fr); 2·bins u32 of dynamic shared memory
        // (bins ≤ MAX_BINS: 32 KiB, under the default 48 KiB).
        unsafe {
            l.launch(LaunchConfig {
                grid_dim: (blocks.max(1), 1, 1),
                block_dim: (BIN_BLOCK, 1, 1),
                shared_mem_bytes: 8 * bins,
            })
        }
        .map_err(|e| dev.err(e))?;
        ph.mark("bin");
        let total_ptr = offsets_ptr + u64::from(keys) * 4;
        let mut l = dev.stream().launch_builder(&k.place);
        l.arg(&scratch_ptr)
            .arg(&total_ptr)
            .arg(&args.counts)
            .arg(&args.entries);
        // SAFETY: thread j < total (offsets[keys]) reads pair j of the scratch (all written by
        // the binning) and writes its entry at its key's cursor (key < keys), which stays below
        // the next key's offset, inside the entries (≥ total long).
        unsafe { l.launch(launch_cfg(u64::from(total), BIN_BLOCK)) }.map_err(|e| dev.err(e))?;
        // Freed in stream order, after the placing reads them.
        drop((scratch, cursors, d.listed.take()));
    } else {
        // Each launch finds its key range on the device (msm::scatter_range), from the scan's
        // total: few entries a scalar, and the launches past the first return at once.
        let passes = plan::scatter_passes(keys, cfg).min(keys);
        for pass in 0..passes {
            launch_digits(
                dev,
                k,
                &DigitArgs {
                    pass,
                    passes,
                    ..args
                },
                1,
            )?;
        }
    }
    Ok(())
}

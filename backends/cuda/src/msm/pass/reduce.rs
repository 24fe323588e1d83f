//! Step 6 of a pass (kernels/msm/window.cuh): each window's Σ_j (j + 1)·B_j from its buckets,
//! flat or in two levels, by tree reductions; the sum of the bases whose scalar is 1; and the
//! window sums back to Jacobian form for the host's Horner step.

use bellows_backend_api::Result;
use cudarc::driver::PushKernelArg;

use super::{digits::Digits, shape::Shape};
use crate::{
    buffers::{DeviceVec, Plain},
    device::CudaDevice,
    launch::{launch_cfg, ptr_mut},
    msm::{
        config::MsmConfig,
        group::MsmGroup,
        kernels::{MsmKernels, BLOCK},
        plan::{flat_window_pass, segment_len, ONES_PER, UPPER_SEGMENT},
        profile::Phases,
    },
};

/// The window sums of the pass's `buckets` (freed once read), then the sum of the bases at
/// `bases_ptr` whose scalar is 1, as `windows + 1` Jacobian points on the device (the window
/// sums, then the ones' sum); releases the pass's digit buffers. `ph` marks "segments",
/// "window-reduce", "ones" and "finish".
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<G: MsmGroup>(
    dev: &CudaDevice,
    k: &MsmKernels,
    cfg: &MsmConfig,
    shape: &Shape,
    d: Digits,
    buckets: DeviceVec<G::Xyzz>,
    bases_ptr: u64,
    n: u64,
    ph: &mut Phases<'_>,
) -> Result<DeviceVec<G::Jacobian>> {
    let kern = G::kernels(k);
    let r = Reducer {
        dev,
        k,
        per: cfg.reduce_per,
    };
    let half = shape.half;
    let mut buckets = buckets;
    let b_ptr = ptr_mut(&mut buckets, dev);
    // Window sums, out[w] for w < windows (out[windows] = the sum of the bases whose scalar is
    // 1, below).
    let seg = segment_len(half, cfg);
    let windows = shape.sum_windows;
    let mut sums = dev.alloc_uninit::<G::Xyzz>(windows as usize + 1)?;
    let sums_ptr = ptr_mut(&mut sums, dev);
    if flat_window_pass(half / seg, windows, cfg) {
        r.window_sums_flat::<G>(b_ptr, half, seg, 1, windows, sums_ptr)?;
        drop(buckets);
        ph.mark("segments");
    } else {
        r.window_sums::<G>(b_ptr, half, seg, windows, sums_ptr, ph)?;
        drop(buckets);
    }
    ph.mark("window-reduce");

    let ones_threads = n.div_ceil(ONES_PER as u64);
    let mut ones_out = dev.alloc_uninit::<G::Xyzz>(ones_threads as usize)?;
    let ones_out_ptr = ptr_mut(&mut ones_out, dev);
    let (ones_ptr, ones_count_ptr) = (d.args.ones, d.args.ones_count);
    let mut l = dev.stream().launch_builder(&kern.sum_listed);
    l.arg(&bases_ptr)
        .arg(&ones_ptr)
        .arg(&ones_count_ptr)
        .arg(&ONES_PER)
        .arg(&ones_threads)
        .arg(&ones_out_ptr);
    // SAFETY: reads ones[j] for j below the count (≤ n) and the bases they name; writes
    // ones_threads points.
    unsafe { l.launch(launch_cfg(ones_threads, BLOCK)) }.map_err(|e| dev.err(e))?;
    let last_ptr = sums_ptr + windows as u64 * (G::Xyzz::WORDS as u64 * 8);
    r.reduce_groups::<G>(ones_out_ptr, 1, ones_threads as u32, last_ptr)?;

    let mut jac = dev.alloc_uninit::<G::Jacobian>(windows as usize + 1)?;
    let jac_ptr = ptr_mut(&mut jac, dev);
    let count = windows + 1;
    let mut l = dev.stream().launch_builder(&kern.to_jacobian);
    l.arg(&sums_ptr).arg(&count).arg(&jac_ptr);
    // SAFETY: converts windows + 1 points between buffers of that length.
    unsafe { l.launch(launch_cfg(count as u64, BLOCK)) }.map_err(|e| dev.err(e))?;
    ph.mark("ones");
    drop((sums, ones_out, d));
    ph.mark("finish");
    Ok(jac)
}

/// The window pass and the tree reductions on one lane, with `per` inputs a thread in a
/// reduction step.
struct Reducer<'a> {
    dev: &'a CudaDevice,
    k: &'a MsmKernels,
    per: u32,
}

impl Reducer<'_> {
    /// The window sums Σ_j (j + 1)·B_{w,j} of `windows` sets of `half` buckets (at `buckets`)
    /// into `out[0..windows)`, in two levels (kernels/msm/window.cuh, `window_horner`). Level 0
    /// cuts the buckets into segments of `seg`, whose weighted sums A_g are reduced per window to
    /// R_0 and whose plain sums T_g are level 1's inputs; level 1 is the flat pass over the T_g
    /// with weights from 0 and segments of [`UPPER_SEGMENT`] (short chains: its few thousand
    /// threads wait on their additions one after another, so deeper levels of long segments
    /// cost more than they save), reduced to R_1; then R_0 += seg·R_1. `ph` marks "segments"
    /// after level 0.
    fn window_sums<G: MsmGroup>(
        &self,
        buckets: u64,
        half: u32,
        seg: u32,
        windows: u32,
        out: u64,
        ph: &mut Phases<'_>,
    ) -> Result<()> {
        let dev = self.dev;
        let seg0 = seg.min(half);
        let segs = half / seg0;
        let mut acc = dev.alloc_uninit::<G::Xyzz>((segs * windows) as usize)?;
        let acc_ptr = ptr_mut(&mut acc, dev);
        let mut total = dev.alloc_uninit::<G::Xyzz>((segs * windows) as usize)?;
        let total_ptr = ptr_mut(&mut total, dev);
        // SAFETY: acc and total hold segs·windows points each, what the level writes.
        unsafe { self.launch_segments::<G>(buckets, half, seg0, windows, 1, acc_ptr, total_ptr) }?;
        ph.mark("segments");
        self.reduce_groups::<G>(acc_ptr, windows, segs, out)?;
        if segs > 1 {
            let mut r1 = dev.alloc_uninit::<G::Xyzz>(windows as usize)?;
            let r1_ptr = ptr_mut(&mut r1, dev);
            self.window_sums_flat::<G>(total_ptr, segs, UPPER_SEGMENT, 0, windows, r1_ptr)?;
            let shift = seg0.trailing_zeros();
            let kern = G::kernels(self.k);
            let mut l = dev.stream().launch_builder(&kern.window_horner);
            l.arg(&out).arg(&r1_ptr).arg(&shift).arg(&windows);
            // SAFETY: reads and writes `windows` points at `out` (the caller's), reads `windows`
            // at r1 (allocated with that many).
            unsafe { l.launch(launch_cfg(u64::from(windows), BLOCK)) }.map_err(|e| dev.err(e))?;
            // Freed in stream order, after the kernels that read it.
            drop(r1);
        }
        drop((acc, total));
        Ok(())
    }

    /// The flat window pass ([`flat_window_pass`] says when it runs; also level 1 of
    /// [`Reducer::window_sums`]): Σ_j (j + w0)·in_{w,j} over `windows` sets of `len` points at
    /// `input`, in segments of `seg` (at most `len`) each adding lo·(its plain sum) by
    /// double-and-add, then a tree reduction per window into `out`.
    fn window_sums_flat<G: MsmGroup>(
        &self,
        input: u64,
        len: u32,
        seg: u32,
        w0: u32,
        windows: u32,
        out: u64,
    ) -> Result<()> {
        let dev = self.dev;
        let seg = seg.min(len);
        let segs = len / seg;
        let mut seg_out = dev.alloc_uninit::<G::Xyzz>((segs * windows) as usize)?;
        let seg_ptr = ptr_mut(&mut seg_out, dev);
        // SAFETY: seg_out holds segs·windows points; flat: no totals are written.
        unsafe { self.launch_segments::<G>(input, len, seg, windows, w0, seg_ptr, 0) }?;
        self.reduce_groups::<G>(seg_ptr, windows, segs, out)?;
        drop(seg_out);
        Ok(())
    }

    /// Queues `window_segments` over `windows` sets of `len` points at `input` in segments of
    /// `seg`, weights from `w0`: flat (each segment's offset added by double-and-add) when
    /// `total` is 0, else each segment's plain sum written to `total`.
    ///
    /// # Safety
    /// `input` holds windows·len points; `acc`, and `total` unless 0, hold windows·len/seg.
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_segments<G: MsmGroup>(
        &self,
        input: u64,
        len: u32,
        seg: u32,
        windows: u32,
        w0: u32,
        acc: u64,
        total: u64,
    ) -> Result<()> {
        let kern = G::kernels(self.k);
        let flat = u32::from(total == 0);
        let threads = u64::from(len / seg) * u64::from(windows);
        let mut l = self.dev.stream().launch_builder(&kern.window_segments);
        l.arg(&input)
            .arg(&len)
            .arg(&seg)
            .arg(&windows)
            .arg(&w0)
            .arg(&flat)
            .arg(&acc)
            .arg(&total);
        // SAFETY: the caller's contract: the kernel reads windows·len points at `input` and
        // writes windows·len/seg at `acc` and, not flat, at `total`.
        unsafe { l.launch(launch_cfg(threads, BLOCK)) }.map_err(|e| self.dev.err(e))?;
        Ok(())
    }

    /// Sums `groups` groups of `len` XYZZ points at `input` down to one point a group, written
    /// to `out` (room for `groups` points), by tree reduction. Returns nothing until the stream
    /// runs.
    fn reduce_groups<G: MsmGroup>(
        &self,
        input: u64,
        groups: u32,
        len: u32,
        out: u64,
    ) -> Result<()> {
        let dev = self.dev;
        let kern = G::kernels(self.k);
        let mut cur = input;
        let mut cur_len = len;
        let mut keep: Vec<DeviceVec<G::Xyzz>> = Vec::new();
        let per = self.per;
        loop {
            let parts = cur_len.div_ceil(per);
            let dst = if parts == 1 {
                out
            } else {
                let mut v = dev.alloc_uninit::<G::Xyzz>(groups as usize * parts as usize)?;
                let p = ptr_mut(&mut v, dev);
                keep.push(v);
                p
            };
            let threads = groups as u64 * parts as u64;
            let mut l = dev.stream().launch_builder(&kern.reduce);
            l.arg(&cur).arg(&groups).arg(&cur_len).arg(&per).arg(&dst);
            // SAFETY: reads groups·cur_len points at `cur`, writes groups·parts points at `dst`,
            // both allocations of at least that size.
            unsafe { l.launch(launch_cfg(threads, BLOCK)) }.map_err(|e| dev.err(e))?;
            if parts == 1 {
                return Ok(());
            }
            cur = dst;
            cur_len = parts;
        }
    }
}

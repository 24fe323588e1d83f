//! Precomputed window multiples of a resident set of bases (the fixed-base form of Pippenger's
//! method; kernels/msm/digits.cuh explains it): built on the device when a set is loaded with
//! option `msm-precompute=on`, read by MSMs large enough for it to pay.

use bellows_backend_api::{Error, Result};
use cudarc::driver::PushKernelArg;

use super::{
    group::MsmGroup,
    kernels::{MsmKernels, BLOCK},
    plan::window_count,
};
use crate::{
    buffers::{DeviceVec, Plain},
    device::CudaDevice,
    launch::{launch_cfg, ptr_mut},
};

/// Points of a table built per launch pair (the XYZZ scratch: 0.8 GB in G1, 1.6 GB in G2).
const TABLE_CHUNK: usize = 1 << 22;
/// Points one thread converts to affine per inversion when building a table.
const TABLE_PER: u32 = 32;

/// Precomputed window multiples of a resident set of bases: `windows` blocks of `len` points, block w holding 2^(c·w)·P_i at w·len + i, block 0
/// the bases themselves.
pub struct PrecomputedTable<T: Plain> {
    pub(crate) points: DeviceVec<T>,
    pub(crate) len: usize,
    pub(crate) c: u32,
    pub(crate) windows: u32,
}

impl<T: Plain> PrecomputedTable<T> {
    /// Bases per window.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it holds no base.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Window width.
    pub fn c(&self) -> u32 {
        self.c
    }
    /// Windows (blocks of `len` points).
    pub fn windows(&self) -> u32 {
        self.windows
    }
    /// Device bytes it takes.
    pub fn bytes(&self) -> u64 {
        self.points.bytes() as u64
    }
    /// Device bytes a table of `len` points of `point_bytes` each would take with windows of
    /// `c` bits.
    pub fn bytes_for(len: usize, point_bytes: u64, c: u32) -> u64 {
        len as u64 * window_count(c) as u64 * point_bytes
    }
}

impl<T: Plain> PrecomputedTable<T> {
    /// Builds the precomputed table of `bases` with windows of `c` bits (2..=31): window w from
    /// window w − 1 by c doublings (XYZZ), then to affine with one inversion per
    /// [`TABLE_PER`] points, [`TABLE_CHUNK`] points at a time. Waits for the device. Fails
    /// cleanly (the device keeps nothing) when memory runs out.
    pub(crate) fn build<G: MsmGroup<Affine = T>>(
        dev: &CudaDevice,
        kernels: &MsmKernels,
        bases: &DeviceVec<T>,
        c: u32,
    ) -> Result<Self> {
        if !(2..=31).contains(&c) {
            return Err(Error::invalid(format!(
                "precomputed window of {c} bits (2 to 31)"
            )));
        }
        let len = bases.len();
        let windows = window_count(c);
        if (len as u64) * windows as u64 >= 1u64 << 31 {
            return Err(Error::invalid(format!(
                "a precomputed table of {windows} windows of {len} {} points (at most 2^31 \
                 points in all)",
                G::NAME
            )));
        }
        let kern = G::kernels(kernels);
        let words = G::Affine::WORDS;
        let size = (words * 8) as u64;
        let mut table = dev.alloc_uninit::<G::Affine>(len * windows as usize)?;
        if len > 0 {
            let mut first = table.buf.slice_mut(0..len * words);
            dev.stream()
                .memcpy_dtod(&bases.buf, &mut first)
                .map_err(|e| dev.err(e))?;
        }
        let chunk = TABLE_CHUNK.min(len.max(1));
        let mut scratch = dev.alloc_uninit::<G::Xyzz>(chunk)?;
        let scratch_ptr = ptr_mut(&mut scratch, dev);
        let table_ptr = ptr_mut(&mut table, dev);
        for w in 1..windows as u64 {
            for off in (0..len).step_by(chunk) {
                let count = (len - off).min(chunk) as u64;
                let prev = table_ptr + ((w - 1) * len as u64 + off as u64) * size;
                let out = table_ptr + (w * len as u64 + off as u64) * size;
                let mut l = dev.stream().launch_builder(&kern.table_double);
                l.arg(&prev).arg(&count).arg(&c).arg(&scratch_ptr);
                // SAFETY: thread t < count reads point t of window w − 1 (written before, in
                // stream order) and writes scratch[t] (chunk ≥ count points).
                unsafe { l.launch(launch_cfg(count, BLOCK)) }.map_err(|e| dev.err(e))?;
                let threads = count.div_ceil(TABLE_PER as u64);
                let mut l = dev.stream().launch_builder(&kern.batch_to_affine);
                l.arg(&scratch_ptr)
                    .arg(&count)
                    .arg(&threads)
                    .arg(&TABLE_PER)
                    .arg(&out);
                // SAFETY: thread t reads scratch[i] and writes out[i] for i = t + k·threads
                // below count: window w's points off .. off + count of the table.
                unsafe { l.launch(launch_cfg(threads, BLOCK)) }.map_err(|e| dev.err(e))?;
            }
        }
        dev.synchronize()?;
        drop(scratch);
        Ok(Self {
            points: table,
            len,
            c,
            windows,
        })
    }
}

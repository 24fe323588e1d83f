//! Steps 1 and 2 of a pass (kernels/msm/digits.cuh): the pass's buffers, the density's rank
//! words, the scalars' upload with each chunk's digits counted into the histogram of bucket
//! keys as soon as it has landed, and the scan of the histogram into the buckets' offsets.

use bellows_backend_api::{layout::Fr, Result};
use cudarc::driver::{DeviceRepr, PushKernelArg};

use super::shape::Shape;
use crate::{
    buffers::DeviceVec,
    device::CudaDevice,
    launch::{launch_cfg, ptr, ptr_mut, stride_cfg, U32Buf},
    msm::{
        kernels::MsmKernels,
        sources::{words_as_fr, PassDensity, ScalarSource},
    },
};

/// The digit passes' arguments; mirrors `msm::DigitArgs` in kernels/msm/digits.cuh field for
/// field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DigitArgs {
    pub scalars: u64,
    pub n: u64,
    pub first: u64,
    pub density: u64,
    pub rank: u64,
    pub c: u32,
    pub windows: u32,
    pub counts: u64,
    pub entries: u64,
    pub ones: u64,
    pub ones_count: u64,
    pub stride: u64,
    pub keys: u32,
    pub pass: u32,
    pub passes: u32,
    pub listed: u64,
    pub listed_count: u64,
}
// SAFETY: a #[repr(C)] struct of integers whose layout matches the kernel's parameter type.
unsafe impl DeviceRepr for DigitArgs {}

/// A pass's digit buffers, made by [`Digits::allocate`] and released step by step: the entries
/// after the accumulation, the list of scalars with digits after the binning, the rest with
/// the pass.
pub(crate) struct Digits {
    /// The kernels' view of the buffers below.
    pub args: DigitArgs,
    /// Bins of 2^shift keys for the binned scatter, where it may run.
    pub bin_shift: Option<u32>,
    /// The sorted entries, one per digit (`max_entries` long).
    pub entries: Option<U32Buf>,
    /// The scalars with digits and their number (the binned scatter's), where it may run.
    pub listed: Option<(U32Buf, U32Buf)>,
    /// The histogram of bucket keys, then the buckets' cursors (keys + 1 values).
    pub counts: U32Buf,
    /// The buckets' offsets (keys + 1 values; the last is the entries' total).
    pub offsets: U32Buf,
    /// Buffers that live as long as the pass.
    kept: Kept,
}

/// The scalars' and the density's device copies (when the pass made them), the rank words, and
/// the list of scalars equal to 1 with its count.
struct Kept {
    scalars: Option<DeviceVec<Fr>>,
    _density: Option<DeviceVec<Fr>>,
    _rank: Option<U32Buf>,
    _ones: U32Buf,
    _ones_count: U32Buf,
}

impl Digits {
    /// Allocates the pass's buffers (and queues the density's rank words): the scalars' copy
    /// when they are in host memory, the histogram, offsets, entries (`max_entries`), the list
    /// of ones, and the list of scalars with digits where the binned scatter may run.
    #[allow(clippy::too_many_arguments)]
    pub fn allocate(
        dev: &CudaDevice,
        k: &MsmKernels,
        shape: &Shape,
        scalars: ScalarSource<'_>,
        density: Option<PassDensity<'_>>,
        first_bit: u64,
        max_entries: u64,
        bin_shift: Option<u32>,
    ) -> Result<Self> {
        let n = scalars.len() as u64;
        let keys = shape.keys;
        let mut scalars_own = match scalars {
            ScalarSource::Host(_) => Some(dev.alloc_uninit::<Fr>(scalars.len())?),
            ScalarSource::Device(..) => None,
        };
        let (density_own, density_ptr, mut rank) = match density {
            Some(pd) => {
                let (owned, dd_ptr, words) = match pd {
                    PassDensity::Host(d) => {
                        let dd = dev.upload(words_as_fr(d).as_slice())?;
                        let p = ptr(&dd, dev);
                        (Some(dd), p, d.len() as u64)
                    }
                    PassDensity::Device { ptr, words } => (None, ptr, words),
                };
                let mut rank = U32Buf::uninit(dev, words)?;
                let rank_ptr = rank.ptr(dev);
                let mut l = dev.stream().launch_builder(&k.popcount);
                l.arg(&dd_ptr).arg(&words).arg(&rank_ptr);
                // SAFETY: reads `words` u64 at dd_ptr (uploaded just above, padded, or inside
                // the caller's device copy of the bitmap: PassDensity::Device), writes `words`
                // u32 at rank.
                unsafe { l.launch(stride_cfg(words)) }.map_err(|e| dev.err(e))?;
                scan_u32(dev, k, rank_ptr, words)?;
                (owned, dd_ptr, Some(rank))
            }
            None => (None, 0, None),
        };
        let mut counts = U32Buf::zeroed(dev, keys as u64 + 1)?;
        let offsets = U32Buf::uninit(dev, keys as u64 + 1)?;
        let mut entries = U32Buf::uninit(dev, max_entries)?;
        let mut ones = U32Buf::uninit(dev, n)?;
        let mut ones_count = U32Buf::zeroed(dev, 1)?;
        // Where the binned scatter may run, the count pass lists the scalars with digits.
        let mut listed = match bin_shift {
            Some(_) => Some((U32Buf::uninit(dev, n)?, U32Buf::zeroed(dev, 1)?)),
            None => None,
        };
        let (listed_ptr, listed_count_ptr) = match listed.as_mut() {
            Some((l, c)) => (l.ptr(dev), c.ptr(dev)),
            None => (0, 0),
        };
        let scalars_ptr = match (&scalars, scalars_own.as_mut()) {
            (ScalarSource::Device(v, off, _), _) => ptr(v, dev) + *off as u64 * 32,
            (ScalarSource::Host(_), Some(d)) => ptr_mut(d, dev),
            (ScalarSource::Host(_), None) => unreachable!("allocated above"),
        };
        let args = DigitArgs {
            scalars: scalars_ptr,
            n,
            first: first_bit,
            density: density_ptr,
            rank: rank.as_mut().map_or(0, |r| r.ptr(dev)),
            c: shape.c,
            windows: shape.windows,
            counts: counts.ptr(dev),
            entries: entries.ptr(dev),
            ones: ones.ptr(dev),
            ones_count: ones_count.ptr(dev),
            stride: shape.stride,
            keys,
            pass: 0,
            passes: 1,
            listed: listed_ptr,
            listed_count: listed_count_ptr,
        };
        Ok(Self {
            args,
            bin_shift,
            entries: Some(entries),
            listed,
            counts,
            offsets,
            kept: Kept {
                scalars: scalars_own,
                _density: density_own,
                _rank: rank,
                _ones: ones,
                _ones_count: ones_count,
            },
        })
    }

    /// Step 1: counts every scalar's digits into the histogram (and lists the scalars equal to
    /// 1, and those with digits where the binned scatter may run). Scalars in host memory are
    /// uploaded through pinned staging, each chunk counted as soon as it has landed.
    pub fn count(
        &mut self,
        dev: &CudaDevice,
        k: &MsmKernels,
        scalars: ScalarSource<'_>,
    ) -> Result<()> {
        let args = self.args;
        match (scalars, self.kept.scalars.as_mut()) {
            (ScalarSource::Host(host), Some(d)) => dev.upload_staged(host, d, |off, len| {
                let chunk_args = DigitArgs {
                    scalars: args.scalars + off as u64 * 32,
                    n: len as u64,
                    first: args.first + off as u64,
                    ..args
                };
                launch_digits(dev, k, &chunk_args, 0)
            }),
            _ => launch_digits(dev, k, &args, 0),
        }
    }

    /// Step 2: the buckets' offsets, the exclusive scan of the histogram (its extra last slot,
    /// zero, becomes the total), copied to `offsets`; `counts` keeps them as the cursors of the
    /// scatter.
    pub fn scan(&mut self, dev: &CudaDevice, k: &MsmKernels) -> Result<()> {
        scan_u32(dev, k, self.args.counts, self.args.keys as u64 + 1)?;
        dev.stream()
            .memcpy_dtod(&self.counts.buf.buf, &mut self.offsets.buf.buf)
            .map(|_| ())
            .map_err(|e| dev.err(e))
    }
}

/// Queues the digit kernel over `args` (`scatter` 0: count; 1: scatter the launch's key range).
pub(crate) fn launch_digits(
    dev: &CudaDevice,
    k: &MsmKernels,
    args: &DigitArgs,
    scatter: u32,
) -> Result<()> {
    let mut l = dev.stream().launch_builder(&k.digits);
    l.arg(args).arg(&scatter);
    // SAFETY: scalar i < n reads scalars[i] and (with a density) density[(first + i) / 64] and
    // rank[(first + i) / 64]; it updates counts[key] for keys below windows·2^(c−1) and writes
    // one entry per non-zero digit below the total of the histogram (≤ n·windows) or one index
    // into `ones` (n long); a scatter launch also reads counts[keys], the scan's total (counts
    // holds keys + 1 values).
    unsafe { l.launch(stride_cfg(args.n)) }
        .map(|_| ())
        .map_err(|e| dev.err(e))
}

/// Exclusive prefix sum of `n` u32 values at device address `data`, in place.
fn scan_u32(dev: &CudaDevice, k: &MsmKernels, data: u64, n: u64) -> Result<()> {
    let blocks = n.div_ceil(1024).max(1);
    let mut sums = U32Buf::uninit(dev, blocks)?;
    let sums_ptr = sums.ptr(dev);
    let mut l = dev.stream().launch_builder(&k.scan_blocks);
    l.arg(&data).arg(&n).arg(&sums_ptr);
    // SAFETY: block b reads and writes data[1024·b ..][..1024] within n, writes sums[b].
    unsafe { l.launch(launch_cfg(blocks * 256, 256)) }.map_err(|e| dev.err(e))?;
    if blocks > 1 {
        scan_u32(dev, k, sums_ptr, blocks)?;
        let mut l = dev.stream().launch_builder(&k.scan_add);
        l.arg(&data).arg(&n).arg(&sums_ptr);
        // SAFETY: reads sums[i / 1024] (blocks values) and updates data[i], i < n.
        unsafe { l.launch(stride_cfg(n)) }.map_err(|e| dev.err(e))?;
    }
    // `sums` is freed in stream order, after the kernels that read it.
    Ok(())
}

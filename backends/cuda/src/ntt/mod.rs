//! Forward, inverse and coset NTTs over Fr on the device, every size 2^0..=2^27, batched, with
//! natural or bit-reversed input and output (the conventions of
//! [`bellows_core::backend::ntt`]). The algorithms are described in kernels/ntt.cuh; [`plan`](mod@plan)
//! chooses the passes; [`tables`] computes the host-side constants.
//!
//! Per device, the twiddle table (for the largest size used so far) and the coset tables are
//! computed once and kept in device memory.

pub mod plan;
pub mod tables;

use bellows_core::{
    backend::ntt::{batch_size, NttConfig, NttDirection},
    layout::Fr,
    Error, Result,
};
use std::sync::atomic::Ordering as AtomicOrdering;

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};

pub use plan::{plan, Plan, MAX_LOG_N};

use crate::{
    memory::{DeviceVec, PinnedVec, Plain},
    CudaDevice,
};
use plan::NttPassArgs;

/// Which pass kernel the device's NTTs run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NttKernel {
    /// Two stages per shared-memory round trip (radix-4 steps in registers, 16-byte swizzled
    /// shared-memory accesses, butterflies specialised per direction). The default.
    #[default]
    Radix4,
    /// One radix-2 stage per round trip: the previous kernel, kept so that the check program
    /// can measure the two side by side. Same results, bit for bit.
    Radix2,
}

/// Smallest twiddle table built (2^15 entries, 1 MiB), so that small sizes share one table.
const MIN_TW_LOG: u32 = 16;
/// Most vectors per launch (grid y dimension).
const MAX_BATCH_PER_LAUNCH: usize = 65_535;

/// The per-device NTT constants.
pub(crate) struct DeviceTables {
    /// The table holds ω_N^e for N = 2^tw_log, e ∈ [0, N/2].
    tw_log: u32,
    twiddles: CudaSlice<u64>,
    /// [LO(g) | HI(g)], see [`tables::coset_tables`].
    coset: CudaSlice<u64>,
    /// Per log_n, [LO(g⁻¹) | HI(g⁻¹)·n⁻¹] (see [`tables::inverse_coset_tables`]), built on first
    /// use of an inverse coset transform of that size.
    inverse_coset: Vec<Option<CudaSlice<u64>>>,
}

/// Checks the shape and size; returns the batch size.
fn check(len: usize, log_n: u32) -> Result<usize> {
    let batch = batch_size(len, log_n)?;
    if log_n > MAX_LOG_N {
        return Err(Error::unsupported(
            "cuda",
            format!(
                "NTT of size 2^{log_n}: the device transform supports sizes up to 2^{MAX_LOG_N}"
            ),
        ));
    }
    Ok(batch)
}

impl CudaDevice {
    /// Chooses the pass kernel of this device's later NTTs (default [`NttKernel::Radix4`]).
    pub fn set_ntt_kernel(&self, kernel: NttKernel) {
        self.ntt_radix2
            .store(kernel == NttKernel::Radix2, AtomicOrdering::Relaxed);
    }

    /// The pass kernel this device's NTTs run.
    pub fn ntt_kernel(&self) -> NttKernel {
        if self.ntt_radix2.load(AtomicOrdering::Relaxed) {
            NttKernel::Radix2
        } else {
            NttKernel::Radix4
        }
    }

    /// Transforms every 2^log_n-element vector of host `data` in place: copies it to the device,
    /// transforms and copies it back (synchronous).
    pub fn ntt(&self, data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
        if check(data.len(), log_n)? == 0 {
            return Ok(());
        }
        let mut d = self.upload(data)?;
        self.ntt_device(&mut d, log_n, cfg)?;
        self.download_into(&d, data)
    }

    /// As [`CudaDevice::ntt`], from and to page-locked host memory (asynchronous copies at full
    /// bus speed; synchronous as a whole).
    pub fn ntt_pinned(&self, data: &mut PinnedVec<Fr>, log_n: u32, cfg: &NttConfig) -> Result<()> {
        if check(data.len(), log_n)? == 0 {
            return Ok(());
        }
        let mut d = self.alloc_uninit::<Fr>(data.len())?;
        self.upload_pinned(data, &mut d)?;
        self.ntt_device(&mut d, log_n, cfg)?;
        self.download_pinned(&d, data)?;
        self.synchronize()
    }

    /// Queues the transform of every 2^log_n-element vector of device-resident `data` on the
    /// device's stream; no host transfer and no synchronisation.
    pub fn ntt_device(&self, data: &mut DeviceVec<Fr>, log_n: u32, cfg: &NttConfig) -> Result<()> {
        let batch = check(data.len(), log_n)?;
        let plan = plan(log_n, cfg);
        if batch == 0 || plan.passes.is_empty() {
            return Ok(());
        }
        self.ensure_tables(log_n, cfg.coset && cfg.direction == NttDirection::Inverse)?;
        let guard = self
            .tables
            .lock()
            .map_err(|_| Error::Pipeline("NTT tables lock poisoned".into()))?;
        let tables = guard.as_ref().expect("ensure_tables filled the tables");
        let stream = self.stream();
        let (base, _s0) = data.buf.device_ptr_mut(stream);
        let (twiddles, _s1) = tables.twiddles.device_ptr(stream);
        let (coset, _s2) = tables.coset.device_ptr(stream);
        let inverse_coset = match &tables.inverse_coset[log_n as usize] {
            Some(t) => t.device_ptr(stream).0,
            None => 0,
        };
        let pass_kernel = match self.ntt_kernel() {
            NttKernel::Radix4 => &self.k.ntt_pass,
            NttKernel::Radix2 => &self.k.ntt_pass_radix2,
        };
        let n = 1u64 << log_n;
        let vec_bytes = n * (Fr::WORDS as u64) * 8;
        for first in (0..batch).step_by(MAX_BATCH_PER_LAUNCH) {
            let vectors = MAX_BATCH_PER_LAUNCH.min(batch - first) as u32;
            let ptr = base + first as u64 * vec_bytes;
            for pass in &plan.passes {
                let args = NttPassArgs::new(
                    log_n,
                    pass,
                    ptr,
                    twiddles,
                    tables.tw_log,
                    coset,
                    inverse_coset,
                );
                let cfg = LaunchConfig {
                    grid_dim: (pass.tiles(log_n) as u32, vectors, 1),
                    block_dim: (pass.threads(), 1, 1),
                    shared_mem_bytes: pass.shared_bytes(),
                };
                let mut l = stream.launch_builder(pass_kernel);
                l.arg(&args);
                // SAFETY: the pass touches exactly the `vectors` vectors of n elements at `ptr`,
                // inside `data`; the tables hold N/2 + 1 twiddles (N ≥ n) and 4·2^14 coset
                // factors; shared memory is sized by the pass (≤ the 64 KiB limit set at load).
                unsafe { l.launch(cfg) }.map_err(|e| self.err(e))?;
            }
            if plan.bitrev_after {
                let (kernel, cfg) = if plan::tiled_bitrev(log_n) {
                    let tiles = 1u32 << (log_n - 2 * plan::BITREV_TILE_BITS);
                    (
                        &self.k.bitrev_tiled,
                        LaunchConfig {
                            grid_dim: (tiles, vectors, 1),
                            block_dim: (256, 1, 1),
                            shared_mem_bytes: 0,
                        },
                    )
                } else {
                    let blocks = (n.div_ceil(256)).min(1 << 14) as u32;
                    (
                        &self.k.bitrev,
                        LaunchConfig {
                            grid_dim: (blocks, vectors, 1),
                            block_dim: (256, 1, 1),
                            shared_mem_bytes: 0,
                        },
                    )
                };
                let mut l = stream.launch_builder(kernel);
                l.arg(&ptr).arg(&log_n);
                // SAFETY: permutes the `vectors` vectors of n elements at `ptr`, inside `data`.
                unsafe { l.launch(cfg) }.map_err(|e| self.err(e))?;
            }
        }
        Ok(())
    }

    /// Builds (or grows) the twiddle table to cover 2^log_n, the coset table, and (when
    /// `inverse_coset`) the inverse coset table of this size; each once.
    fn ensure_tables(&self, log_n: u32, inverse_coset: bool) -> Result<()> {
        let mut guard = self
            .tables
            .lock()
            .map_err(|_| Error::Pipeline("NTT tables lock poisoned".into()))?;
        // The tables are shared by the GPU's lanes: before an old table is dropped, every
        // stream of the context must be done with it, and a new one must be complete before
        // the lock is released (another lane's kernels read it with no event between).
        let mut changed = false;
        if guard.as_ref().is_none_or(|t| t.tw_log < log_n) {
            changed = true;
            self.synchronize_all()?;
            let tw_log = log_n.max(MIN_TW_LOG);
            let (lo_bits, lo, hi, count) = tables::twiddle_parts(tw_log);
            let (dlo, dhi) = (self.upload(&lo)?, self.upload(&hi)?);
            let mut table = self.alloc_uninit::<Fr>(count as usize)?;
            let cfg = LaunchConfig {
                grid_dim: (count.div_ceil(256).min(1 << 16) as u32, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut l = self.stream().launch_builder(&self.k.expand_table);
            l.arg(&mut table.buf)
                .arg(&dlo.buf)
                .arg(&dhi.buf)
                .arg(&lo_bits)
                .arg(&count);
            // SAFETY: writes `count` values into `table` (count long), reading lo (2^lo_bits
            // values) and hi ((count − 1) >> lo_bits + 1 values) only.
            unsafe { l.launch(cfg) }.map_err(|e| self.err(e))?;
            let (coset, inverse) = match guard.take() {
                Some(old) => (old.coset, old.inverse_coset),
                None => (
                    self.upload(&tables::coset_tables())?.buf,
                    vec![None; MAX_LOG_N as usize + 1],
                ),
            };
            *guard = Some(DeviceTables {
                tw_log,
                twiddles: table.buf,
                coset,
                inverse_coset: inverse,
            });
        }
        let t = guard.as_mut().expect("filled above");
        if inverse_coset && t.inverse_coset[log_n as usize].is_none() {
            changed = true;
            t.inverse_coset[log_n as usize] =
                Some(self.upload(&tables::inverse_coset_tables(log_n))?.buf);
        }
        if changed {
            self.synchronize()?;
        }
        Ok(())
    }

    /// The device's twiddle table, copied back (for checks): (tw_log, ω^e for e ∈ [0, N/2]).
    pub fn twiddle_table(&self, log_n: u32) -> Result<(u32, Vec<Fr>)> {
        if log_n > MAX_LOG_N {
            return Err(Error::invalid(format!("2^{log_n} exceeds 2^{MAX_LOG_N}")));
        }
        self.ensure_tables(log_n, false)?;
        let guard = self
            .tables
            .lock()
            .map_err(|_| Error::Pipeline("NTT tables lock poisoned".into()))?;
        let t = guard.as_ref().expect("ensure_tables filled the tables");
        let mut out = vec![Fr::default(); t.twiddles.len() / Fr::WORDS];
        self.stream()
            .memcpy_dtoh(&t.twiddles, crate::memory::words_mut(&mut out))
            .map_err(|e| self.err(e))?;
        self.synchronize()?;
        Ok((t.tw_log, out))
    }
}

//! Forward, inverse and coset NTTs over Fr on the device, every size 2^0..=2^27, batched, with
//! natural or bit-reversed input and output (the conventions of
//! [`bellows_backend_api::backend::ntt`]). The algorithms are described in kernels/ntt/ntt.cuh;
//! [`plan`](mod@plan) chooses the passes; [`tables`] computes the host-side constants.
//!
//! [`Ntt`] holds the NTT kernels of one GPU and its tables: the twiddle table (for the largest
//! size used so far) and the coset tables, computed once and kept in device memory, shared by
//! the GPU's lanes.

pub mod plan;
pub mod tables;

use bellows_backend_api::{
    backend::ntt::{batch_size, NttConfig, NttDirection},
    layout::Fr,
    Error, Result,
};
use std::sync::{Mutex, MutexGuard};

use cudarc::driver::{
    sys, CudaFunction, CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg,
};

pub use plan::{plan, Plan, MAX_LOG_N};

use crate::{
    buffers::{words_mut, DeviceVec, PinnedVec, Plain},
    device::CudaDevice,
};
use plan::NttPassArgs;

/// Largest dynamic shared memory the pass kernel asks for (a tile of 2^11 elements).
const MAX_DYNAMIC_SHARED: usize = 64 * 1024;

/// Smallest twiddle table built (2^15 entries, 1 MiB), so that small sizes share one table.
const MIN_TW_LOG: u32 = 16;
/// Most vectors per launch (grid y dimension).
const MAX_BATCH_PER_LAUNCH: usize = 65_535;

/// The per-device NTT constants.
struct DeviceTables {
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

/// The NTT of one GPU: its kernels and its tables, shared by the GPU's lanes (every method takes
/// the lane, a [`CudaDevice`] of that GPU, whose stream runs the work).
pub struct Ntt {
    expand_table: CudaFunction,
    bitrev: CudaFunction,
    bitrev_tiled: CudaFunction,
    pass: CudaFunction,
    /// Changed only with every stream of the context synchronised (see `ensure_tables`).
    tables: Mutex<Option<DeviceTables>>,
}

impl Ntt {
    /// Loads the NTT kernels from `dev`'s module (any lane of the GPU).
    pub fn new(dev: &CudaDevice) -> Result<Self> {
        let pass = dev.function("bellows_ntt_pass")?;
        pass.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            MAX_DYNAMIC_SHARED as i32,
        )
        .map_err(|e| dev.err(e))?;
        Ok(Self {
            expand_table: dev.function("bellows_expand_table")?,
            bitrev: dev.function("bellows_bitrev")?,
            bitrev_tiled: dev.function("bellows_bitrev_tiled")?,
            pass,
            tables: Mutex::new(None),
        })
    }

    /// The kernels, by name (for [`CudaDevice::kernel_report`]).
    pub fn kernels(&self) -> Vec<(&'static str, &CudaFunction)> {
        vec![
            ("bellows_ntt_pass", &self.pass),
            ("bellows_bitrev", &self.bitrev),
            ("bellows_bitrev_tiled", &self.bitrev_tiled),
            ("bellows_expand_table", &self.expand_table),
        ]
    }

    fn tables(&self) -> Result<MutexGuard<'_, Option<DeviceTables>>> {
        self.tables
            .lock()
            .map_err(|_| Error::Pipeline("NTT tables lock poisoned".into()))
    }

    /// Transforms every 2^log_n-element vector of host `data` in place on lane `dev`: copies it
    /// to the device, transforms and copies it back (synchronous).
    pub fn transform(
        &self,
        dev: &CudaDevice,
        data: &mut [Fr],
        log_n: u32,
        cfg: &NttConfig,
    ) -> Result<()> {
        if check(data.len(), log_n)? == 0 {
            return Ok(());
        }
        let mut d = dev.upload(data)?;
        self.transform_device(dev, &mut d, log_n, cfg)?;
        dev.download_into(&d, data)
    }

    /// As [`Ntt::transform`], from and to page-locked host memory (asynchronous copies at full
    /// bus speed; synchronous as a whole).
    pub fn transform_pinned(
        &self,
        dev: &CudaDevice,
        data: &mut PinnedVec<Fr>,
        log_n: u32,
        cfg: &NttConfig,
    ) -> Result<()> {
        if check(data.len(), log_n)? == 0 {
            return Ok(());
        }
        let mut d = dev.alloc_uninit::<Fr>(data.len())?;
        dev.upload_pinned(data, &mut d)?;
        self.transform_device(dev, &mut d, log_n, cfg)?;
        dev.download_pinned(&d, data)?;
        dev.synchronize()
    }

    /// Queues the transform of every 2^log_n-element vector of device-resident `data` on
    /// `dev`'s stream; no host transfer and no synchronisation.
    pub fn transform_device(
        &self,
        dev: &CudaDevice,
        data: &mut DeviceVec<Fr>,
        log_n: u32,
        cfg: &NttConfig,
    ) -> Result<()> {
        let batch = check(data.len(), log_n)?;
        let plan = plan(log_n, cfg);
        if batch == 0 || plan.passes.is_empty() {
            return Ok(());
        }
        self.ensure_tables(
            dev,
            log_n,
            cfg.coset && cfg.direction == NttDirection::Inverse,
        )?;
        let guard = self.tables()?;
        let tables = guard.as_ref().expect("ensure_tables filled the tables");
        let stream = dev.stream();
        let (base, _s0) = data.buf.device_ptr_mut(stream);
        let (twiddles, _s1) = tables.twiddles.device_ptr(stream);
        let (coset, _s2) = tables.coset.device_ptr(stream);
        let inverse_coset = match &tables.inverse_coset[log_n as usize] {
            Some(t) => t.device_ptr(stream).0,
            None => 0,
        };
        let pass_kernel = &self.pass;
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
                unsafe { l.launch(cfg) }.map_err(|e| dev.err(e))?;
            }
            if plan.bitrev_after {
                let (kernel, cfg) = if plan::tiled_bitrev(log_n) {
                    let tiles = 1u32 << (log_n - 2 * plan::BITREV_TILE_BITS);
                    (
                        &self.bitrev_tiled,
                        LaunchConfig {
                            grid_dim: (tiles, vectors, 1),
                            block_dim: (256, 1, 1),
                            shared_mem_bytes: 0,
                        },
                    )
                } else {
                    let blocks = (n.div_ceil(256)).min(1 << 14) as u32;
                    (
                        &self.bitrev,
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
                unsafe { l.launch(cfg) }.map_err(|e| dev.err(e))?;
            }
        }
        Ok(())
    }

    /// Builds (or grows) the twiddle table to cover 2^log_n, the coset table, and (when
    /// `inverse_coset`) the inverse coset table of this size; each once.
    fn ensure_tables(&self, dev: &CudaDevice, log_n: u32, inverse_coset: bool) -> Result<()> {
        let mut guard = self.tables()?;
        // The tables are shared by the GPU's lanes: before an old table is dropped, every
        // stream of the context must be done with it, and a new one must be complete before
        // the lock is released (another lane's kernels read it with no event between).
        let mut changed = false;
        if guard.as_ref().is_none_or(|t| t.tw_log < log_n) {
            changed = true;
            dev.synchronize_all()?;
            let tw_log = log_n.max(MIN_TW_LOG);
            let (lo_bits, lo, hi, count) = tables::twiddle_parts(tw_log);
            let (dlo, dhi) = (dev.upload(&lo)?, dev.upload(&hi)?);
            let mut table = dev.alloc_uninit::<Fr>(count as usize)?;
            let cfg = LaunchConfig {
                grid_dim: (count.div_ceil(256).min(1 << 16) as u32, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut l = dev.stream().launch_builder(&self.expand_table);
            l.arg(&mut table.buf)
                .arg(&dlo.buf)
                .arg(&dhi.buf)
                .arg(&lo_bits)
                .arg(&count);
            // SAFETY: writes `count` values into `table` (count long), reading lo (2^lo_bits
            // values) and hi ((count − 1) >> lo_bits + 1 values) only.
            unsafe { l.launch(cfg) }.map_err(|e| dev.err(e))?;
            let (coset, inverse) = match guard.take() {
                Some(old) => (old.coset, old.inverse_coset),
                None => (
                    dev.upload(&tables::coset_tables())?.buf,
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
                Some(dev.upload(&tables::inverse_coset_tables(log_n))?.buf);
        }
        if changed {
            dev.synchronize()?;
        }
        Ok(())
    }

    /// The device's twiddle table, copied back (for checks): (tw_log, ω^e for e ∈ [0, N/2]).
    pub fn twiddle_table(&self, dev: &CudaDevice, log_n: u32) -> Result<(u32, Vec<Fr>)> {
        if log_n > MAX_LOG_N {
            return Err(Error::invalid(format!("2^{log_n} exceeds 2^{MAX_LOG_N}")));
        }
        self.ensure_tables(dev, log_n, false)?;
        let guard = self.tables()?;
        let t = guard.as_ref().expect("ensure_tables filled the tables");
        let mut out = vec![Fr::default(); t.twiddles.len() / Fr::WORDS];
        dev.stream()
            .memcpy_dtoh(&t.twiddles, words_mut(&mut out))
            .map_err(|e| dev.err(e))?;
        dev.synchronize()?;
        Ok((t.tw_log, out))
    }
}

//! One CUDA device: its context, a stream, the loaded kernels and the per-device NTT tables.
//!
//! cudarc is used with dynamic loading, so nothing of CUDA is needed to build; at run time the
//! driver library (libcuda) must be present. [`CudaDevice::new`] checks that first (cudarc would
//! panic on the first driver call otherwise) and turns every failure into a
//! [`bellows_core::Error`]: no driver, no kernels in this build, no such device, a GPU older than
//! Hopper, or any driver error. Work is queued in order on one stream; the methods that return
//! host data synchronise it.

use std::{
    marker::PhantomData,
    panic::{catch_unwind, AssertUnwindSafe},
    sync::{atomic::AtomicBool, Arc, Mutex},
};

use bellows_core::{layout::Fr, Error, Result};
use cudarc::{
    driver::{
        result::DriverError,
        sys::{self, CUresult},
        CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream,
    },
    nvrtc::Ptx,
};

use crate::{
    kernels::{self, names},
    memory::{words, words_mut, DeviceVec, PinnedVec, Plain},
    ntt::DeviceTables,
};

/// Largest dynamic shared memory a kernel of ours asks for (the NTT tile of 2^11 elements).
pub(crate) const MAX_DYNAMIC_SHARED: usize = 64 * 1024;

/// True when the CUDA driver library (libcuda) can be loaded on this machine.
pub fn driver_available() -> bool {
    // SAFETY: this only tries to dlopen the driver library by its usual names and closes it
    // again; loading libcuda runs its initialisers, which is what every CUDA program does.
    unsafe { sys::is_culib_present() }
}

/// The no-driver error, or Ok when the driver library is present.
pub(crate) fn require_driver(present: bool) -> Result<()> {
    if present {
        Ok(())
    } else {
        Err(Error::Backend {
            name: "cuda".into(),
            reason: "the CUDA driver library (libcuda.so) was not found: no NVIDIA driver is \
                     installed on this machine, or it is not on the library path"
                .into(),
        })
    }
}

/// The default memory pool of `ctx`'s device (with the context bound to this thread): every
/// stream-ordered allocation of the backend comes from it.
fn default_pool(ctx: &CudaContext) -> std::result::Result<sys::CUmemoryPool, DriverError> {
    ctx.bind_to_thread()?;
    // SAFETY: the device handle is the context's own device; its default pool lives as long as
    // the context.
    unsafe { cudarc::driver::result::device::get_default_mem_pool(ctx.cu_device()) }
}

/// A u64 attribute of the default pool (reserved or used bytes).
fn pool_attribute(
    ctx: &CudaContext,
    attr: sys::CUmemPool_attribute,
) -> std::result::Result<u64, DriverError> {
    let pool = default_pool(ctx)?;
    let mut v = 0u64;
    // SAFETY: a valid pool (above); the attributes read here are u64 values, written into `v`.
    unsafe {
        cudarc::driver::result::mem_pool::get_attribute(pool, attr, (&mut v as *mut u64).cast())?
    };
    Ok(v)
}

/// Sets the release threshold of the default pool: the bytes of freed memory it keeps at a
/// synchronisation instead of returning them to the driver.
fn set_release_threshold(ctx: &CudaContext, bytes: u64) -> std::result::Result<(), DriverError> {
    let pool = default_pool(ctx)?;
    let mut v = bytes;
    // SAFETY: a valid pool (above); the release threshold is a u64 attribute, read from `v`.
    unsafe {
        cudarc::driver::result::mem_pool::set_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut v as *mut u64).cast(),
        )
    }
}

/// Returns the default pool's idle memory to the driver. The caller has synchronised the
/// streams whose frees should count (a free not yet observed by the host stays outstanding).
fn trim_idle(ctx: &CudaContext) -> std::result::Result<(), DriverError> {
    let pool = default_pool(ctx)?;
    // SAFETY: a valid pool (above); trimming releases only memory no allocation uses.
    unsafe { cudarc::driver::result::mem_pool::trim_to(pool, 0) }
}

/// Converts a driver error into the core error type.
pub(crate) fn driver_error(device: &str, e: DriverError) -> Error {
    Error::Device {
        device: device.to_string(),
        reason: e.to_string(),
    }
}

/// The kernels of the embedded fatbin, loaded into one context (shared by its lanes).
#[derive(Clone)]
pub(crate) struct Kernels {
    _module: Arc<CudaModule>,
    pub expand_table: CudaFunction,
    pub bitrev: CudaFunction,
    pub bitrev_tiled: CudaFunction,
    pub ntt_pass: CudaFunction,
    pub ntt_pass_radix2: CudaFunction,
    pub quotient_product: CudaFunction,
    pub quotient_finish: CudaFunction,
    pub scan_blocks: CudaFunction,
    pub scan_add: CudaFunction,
    pub popcount: CudaFunction,
    pub msm_digits: CudaFunction,
    pub msm_bin_start: CudaFunction,
    pub msm_bin: CudaFunction,
    pub msm_place: CudaFunction,
    pub msm_pad_counts: CudaFunction,
    pub msm_shift_offsets: CudaFunction,
    pub fill_u32: CudaFunction,
    pub msm_g1: crate::msm::GroupKernels,
    pub msm_g2: crate::msm::GroupKernels,
}

/// The test and benchmark kernels of the second fatbin (`testing` feature), loaded on first use.
#[cfg(feature = "testing")]
pub(crate) struct TestKernels {
    _module: Arc<CudaModule>,
    pub fr_op: CudaFunction,
    pub fp_op: CudaFunction,
    pub fp2_op: CudaFunction,
    pub g1_op: CudaFunction,
    pub g2_op: CudaFunction,
    pub bench_fr_mul: CudaFunction,
    pub bench_fr_mul_generic: CudaFunction,
    pub bench_fp_mul: CudaFunction,
    pub bench_fp_sqr: CudaFunction,
    pub bench_fp_sqr_plain: CudaFunction,
    pub bench_fp2_mul: CudaFunction,
    pub bench_g1_madd: CudaFunction,
    pub bench_g1_madd_plain: CudaFunction,
    pub bench_g2_madd: CudaFunction,
}

/// Resource use of one kernel as the driver reports it.
#[derive(Clone, Debug)]
pub struct KernelInfo {
    /// The kernel's name.
    pub name: &'static str,
    /// Registers per thread.
    pub registers: i32,
    /// Local memory (stack and spills) per thread, bytes.
    pub local_bytes: i32,
}

/// A CUDA GPU with the Bellows kernels loaded.
pub struct CudaDevice {
    ordinal: usize,
    label: String,
    name: String,
    capability: (i32, i32),
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    pub(crate) k: Kernels,
    #[cfg(feature = "testing")]
    test_k: std::sync::OnceLock<TestKernels>,
    /// Shared by every lane of the GPU ([`CudaDevice::lane`]); changed only with every stream of
    /// the context synchronised (see `ensure_tables`).
    pub(crate) tables: Arc<Mutex<Option<DeviceTables>>>,
    /// The copy stream (host-to-device uploads, ordered with `stream` by events).
    copy_stream: Arc<CudaStream>,
    /// Pinned staging buffers of [`CudaDevice::upload_staged`], made on first use.
    staging: Mutex<Option<Staging>>,
    /// Whether NTTs run the radix-2 pass kernel ([`crate::ntt::NttKernel`]).
    pub(crate) ntt_radix2: AtomicBool,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("ordinal", &self.ordinal)
            .field("name", &self.name)
            .field("capability", &self.capability)
            .finish()
    }
}

impl CudaDevice {
    /// Opens device `ordinal`, loads the kernels and creates a stream.
    ///
    /// Errors: [`Error::Backend`] without a driver or without compiled kernels;
    /// [`Error::Unsupported`] for a GPU older than compute capability 9.0 (the kernels are built
    /// for Hopper); [`Error::Device`] for any driver failure (e.g. no such device).
    pub fn new(ordinal: usize) -> Result<Self> {
        require_driver(driver_available())?;
        let fatbin = kernels::fatbin()?;
        catch_unwind(AssertUnwindSafe(|| Self::open(ordinal, fatbin))).unwrap_or_else(|panic| {
            let what = bellows_core::error::panic_message(&*panic);
            Err(Error::Backend {
                name: "cuda".into(),
                reason: format!("the CUDA driver library failed during initialisation: {what}"),
            })
        })
    }

    /// Number of CUDA devices (0 when the driver reports none).
    pub fn count() -> Result<usize> {
        require_driver(driver_available())?;
        catch_unwind(CudaContext::device_count)
            .map_err(|_| Error::Backend {
                name: "cuda".into(),
                reason: "the CUDA driver library failed during initialisation".into(),
            })?
            .map(|n| n.max(0) as usize)
            .or_else(|e| match e.0 {
                CUresult::CUDA_ERROR_NO_DEVICE => Ok(0),
                _ => Err(driver_error("cuda", e)),
            })
    }

    fn open(ordinal: usize, fatbin: &[u8]) -> Result<Self> {
        let label = format!("cuda:{ordinal}");
        let err = |e: DriverError| driver_error(&label, e);
        let ctx = CudaContext::new(ordinal).map_err(err)?;
        let name = ctx.name().map_err(err)?;
        let capability = ctx.compute_capability().map_err(err)?;
        if capability.0 < 9 {
            return Err(Error::unsupported(
                "cuda",
                format!(
                    "{label} ({name}) has compute capability {}.{}; the kernels are built for \
                     9.0 (Hopper) or newer",
                    capability.0, capability.1
                ),
            ));
        }
        // One stream, ordered by hand: cudarc's per-buffer event tracking is not needed.
        // SAFETY: called before any buffer or stream of this context exists.
        unsafe { ctx.disable_event_tracking() };
        // Freed device memory stays in the pool for the next allocation until `trim_pool`
        // (the driver's default returns it at every synchronisation, and mapping it again costs
        // time on every call; see `set_pool_release`).
        set_release_threshold(&ctx, u64::MAX).map_err(err)?;
        let stream = ctx.new_stream().map_err(err)?;
        let copy_stream = ctx.new_stream().map_err(err)?;
        let mut image = Vec::with_capacity(fatbin.len());
        image.extend_from_slice(fatbin);
        let module = ctx.load_module(Ptx::from_binary(image)).map_err(err)?;
        let f = |n: &str| module.load_function(n).map_err(err);
        let group_kernels = |g: &str| -> Result<crate::msm::GroupKernels> {
            let k = |op: &str| f(&format!("bellows_msm_{g}_{op}"));
            Ok(crate::msm::GroupKernels {
                accumulate: k("accumulate")?,
                accumulate_points: k("accumulate_points")?,
                affine_first: k("affine_first")?,
                affine_round: k("affine_round")?,
                fixup: k("fixup")?,
                fixup_big: k("fixup_big")?,
                window_segments: k("window_segments")?,
                window_horner: k("window_horner")?,
                reduce: k("reduce")?,
                sum_listed: k("sum_listed")?,
                to_jacobian: k("to_jacobian")?,
                table_double: k("table_double")?,
                batch_to_affine: k("batch_to_affine")?,
            })
        };
        let k = Kernels {
            expand_table: f(names::EXPAND_TABLE)?,
            bitrev: f(names::BITREV)?,
            bitrev_tiled: f(names::BITREV_TILED)?,
            ntt_pass: f(names::NTT_PASS)?,
            ntt_pass_radix2: f(names::NTT_PASS_RADIX2)?,
            quotient_product: f(names::QUOTIENT_PRODUCT)?,
            quotient_finish: f(names::QUOTIENT_FINISH)?,
            scan_blocks: f(names::SCAN_BLOCKS)?,
            scan_add: f(names::SCAN_ADD)?,
            popcount: f(names::POPCOUNT)?,
            msm_digits: f(names::MSM_DIGITS)?,
            msm_bin_start: f(names::MSM_BIN_START)?,
            msm_bin: f(names::MSM_BIN)?,
            msm_place: f(names::MSM_PLACE)?,
            msm_pad_counts: f(names::MSM_PAD_COUNTS)?,
            msm_shift_offsets: f(names::MSM_SHIFT_OFFSETS)?,
            fill_u32: f(names::FILL_U32)?,
            msm_g1: group_kernels("g1")?,
            msm_g2: group_kernels("g2")?,
            _module: module,
        };
        for pass in [&k.ntt_pass, &k.ntt_pass_radix2] {
            pass.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                MAX_DYNAMIC_SHARED as i32,
            )
            .map_err(err)?;
        }
        Ok(Self {
            ordinal,
            label,
            name,
            capability,
            ctx,
            stream,
            k,
            #[cfg(feature = "testing")]
            test_k: std::sync::OnceLock::new(),
            tables: Arc::new(Mutex::new(None)),
            copy_stream,
            staging: Mutex::new(None),
            ntt_radix2: AtomicBool::new(false),
        })
    }

    /// Another lane on the same GPU: the same context, kernels and NTT tables, with a compute
    /// stream, a copy stream and pinned staging buffers of its own, so that calls on two lanes
    /// run concurrently (one's transfers beside the other's kernels). Device memory allocated
    /// on one lane may be read by another once the allocating call has synchronised (every
    /// public operation of this type does before it returns results).
    pub fn lane(&self) -> Result<Self> {
        let err = |e: DriverError| driver_error(&self.label, e);
        let stream = self.ctx.new_stream().map_err(err)?;
        let copy_stream = self.ctx.new_stream().map_err(err)?;
        Ok(Self {
            ordinal: self.ordinal,
            label: self.label.clone(),
            name: self.name.clone(),
            capability: self.capability,
            ctx: self.ctx.clone(),
            stream,
            k: self.k.clone(),
            #[cfg(feature = "testing")]
            test_k: std::sync::OnceLock::new(),
            tables: self.tables.clone(),
            copy_stream,
            staging: Mutex::new(None),
            ntt_radix2: AtomicBool::new(self.ntt_radix2.load(std::sync::atomic::Ordering::Relaxed)),
        })
    }

    /// The test and benchmark kernels, loaded from their fatbin on first use.
    #[cfg(feature = "testing")]
    pub(crate) fn test_kernels(&self) -> Result<&TestKernels> {
        if let Some(t) = self.test_k.get() {
            return Ok(t);
        }
        let fatbin = kernels::testing_fatbin()?;
        let err = |e: DriverError| driver_error(&self.label, e);
        let module = self
            .ctx
            .load_module(Ptx::from_binary(fatbin.to_vec()))
            .map_err(err)?;
        let f = |n: &str| module.load_function(n).map_err(err);
        let t = TestKernels {
            fr_op: f(names::FR_OP)?,
            fp_op: f(names::FP_OP)?,
            fp2_op: f(names::FP2_OP)?,
            g1_op: f(names::G1_OP)?,
            g2_op: f(names::G2_OP)?,
            bench_fr_mul: f(names::BENCH_FR_MUL)?,
            bench_fr_mul_generic: f(names::BENCH_FR_MUL_GENERIC)?,
            bench_fp_mul: f(names::BENCH_FP_MUL)?,
            bench_fp_sqr: f(names::BENCH_FP_SQR)?,
            bench_fp_sqr_plain: f(names::BENCH_FP_SQR_PLAIN)?,
            bench_fp2_mul: f(names::BENCH_FP2_MUL)?,
            bench_g1_madd: f(names::BENCH_G1_MADD)?,
            bench_g1_madd_plain: f(names::BENCH_G1_MADD_PLAIN)?,
            bench_g2_madd: f(names::BENCH_G2_MADD)?,
            _module: module,
        };
        // Two threads may load at once; the first stored wins and the other module is dropped.
        Ok(self.test_k.get_or_init(|| t))
    }

    /// The driver context (shared by the GPU's lanes).
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The device index.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }
    /// The device's name as the driver reports it (e.g. "NVIDIA H200").
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.capability
    }
    /// Free and total device memory in bytes. Free counts the memory that the context's pool
    /// holds but no allocation uses (freed by earlier calls and kept for the next ones, see
    /// [`CudaDevice::set_pool_release`]): it is this process's to allocate again.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        let (free, total) = self.ctx.mem_get_info().map_err(|e| self.err(e))?;
        let idle = self.pool_idle_bytes().unwrap_or(0);
        Ok((free.saturating_add(idle).min(total), total))
    }

    /// Whether device memory freed by a call goes back to the driver at every synchronisation
    /// (`true`, the driver's default) or stays in the context's pool for the next allocation
    /// until [`CudaDevice::trim_pool`] (`false`, this backend's default: a call then allocates
    /// without mapping fresh pages; `bellows serve` trims after an idle spell). Applies to
    /// every lane of the GPU (one pool per device).
    pub fn set_pool_release(&self, at_sync: bool) -> Result<()> {
        set_release_threshold(&self.ctx, if at_sync { 0 } else { u64::MAX })
            .map_err(|e| self.err(e))
    }

    /// Bytes the device's default pool holds beyond what live allocations use.
    pub fn pool_idle_bytes(&self) -> Result<usize> {
        use sys::CUmemPool_attribute::*;
        let get = |attr| pool_attribute(&self.ctx, attr).map_err(|e| self.err(e));
        let reserved = get(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?;
        let used = get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?;
        Ok(reserved.saturating_sub(used) as usize)
    }
    /// Number of streaming multiprocessors.
    pub fn multiprocessors(&self) -> Result<u32> {
        self.ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map(|n| n as u32)
            .map_err(|e| self.err(e))
    }

    /// Registers and local memory of every kernel (from the loaded modules; the test kernels'
    /// too with the `testing` feature).
    pub fn kernel_report(&self) -> Result<Vec<KernelInfo>> {
        let k = &self.k;
        #[allow(unused_mut)]
        let mut list: Vec<(&'static str, &CudaFunction)> = vec![
            (names::NTT_PASS, &k.ntt_pass),
            (names::NTT_PASS_RADIX2, &k.ntt_pass_radix2),
            (names::BITREV, &k.bitrev),
            (names::BITREV_TILED, &k.bitrev_tiled),
            (names::EXPAND_TABLE, &k.expand_table),
            ("bellows_msm_g1_accumulate", &k.msm_g1.accumulate),
            ("bellows_msm_g2_accumulate", &k.msm_g2.accumulate),
            (
                "bellows_msm_g1_accumulate_points",
                &k.msm_g1.accumulate_points,
            ),
            (
                "bellows_msm_g2_accumulate_points",
                &k.msm_g2.accumulate_points,
            ),
            ("bellows_msm_g1_affine_first", &k.msm_g1.affine_first),
            ("bellows_msm_g1_affine_round", &k.msm_g1.affine_round),
            ("bellows_msm_g2_affine_first", &k.msm_g2.affine_first),
            ("bellows_msm_g2_affine_round", &k.msm_g2.affine_round),
            ("bellows_msm_g2_window_segments", &k.msm_g2.window_segments),
            ("bellows_msm_g1_table_double", &k.msm_g1.table_double),
            ("bellows_msm_g2_table_double", &k.msm_g2.table_double),
            ("bellows_msm_g1_batch_to_affine", &k.msm_g1.batch_to_affine),
            ("bellows_msm_g2_batch_to_affine", &k.msm_g2.batch_to_affine),
        ];
        #[cfg(feature = "testing")]
        {
            let t = self.test_kernels()?;
            list.extend([
                (names::BENCH_FR_MUL, &t.bench_fr_mul),
                (names::BENCH_FR_MUL_GENERIC, &t.bench_fr_mul_generic),
                (names::BENCH_FP_MUL, &t.bench_fp_mul),
                (names::BENCH_FP_SQR, &t.bench_fp_sqr),
                (names::BENCH_FP_SQR_PLAIN, &t.bench_fp_sqr_plain),
                (names::BENCH_FP2_MUL, &t.bench_fp2_mul),
                (names::BENCH_G1_MADD, &t.bench_g1_madd),
                (names::BENCH_G1_MADD_PLAIN, &t.bench_g1_madd_plain),
                (names::BENCH_G2_MADD, &t.bench_g2_madd),
                (names::FR_OP, &t.fr_op),
                (names::FP_OP, &t.fp_op),
                (names::FP2_OP, &t.fp2_op),
                (names::G1_OP, &t.g1_op),
                (names::G2_OP, &t.g2_op),
            ]);
        }
        list.iter()
            .map(|(name, f)| {
                Ok(KernelInfo {
                    name,
                    registers: f.num_regs().map_err(|e| self.err(e))?,
                    local_bytes: f.local_size_bytes().map_err(|e| self.err(e))?,
                })
            })
            .collect()
    }

    /// The device's label in errors and reports ("cuda:0").
    pub fn label(&self) -> &str {
        &self.label
    }
    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
    pub(crate) fn err(&self, e: DriverError) -> Error {
        driver_error(&self.label, e)
    }

    /// Maps an allocation failure to [`Error::OutOfMemory`] (recoverable), others to Device.
    fn alloc_err(&self, e: DriverError, bytes: usize) -> Error {
        if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            let available = self
                .ctx
                .mem_get_info()
                .map(|(free, _)| free as u64)
                .unwrap_or(0);
            Error::OutOfMemory {
                device: self.label.clone(),
                requested: bytes as u64,
                available,
            }
        } else {
            self.err(e)
        }
    }

    /// Runs an allocation; when it fails for lack of memory while the pool holds idle memory
    /// (kept from earlier calls, possibly in pieces too small for this request), waits for the
    /// GPU's streams, returns the idle memory to the driver and tries once more.
    fn retry_out_of_memory<R>(
        &self,
        f: impl Fn() -> std::result::Result<R, DriverError>,
    ) -> std::result::Result<R, DriverError> {
        match f() {
            Err(e) if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                if self.pool_idle_bytes().unwrap_or(0) == 0 {
                    return Err(e);
                }
                self.ctx.synchronize()?;
                trim_idle(&self.ctx)?;
                f()
            }
            r => r,
        }
    }

    /// Uninitialised device memory for `len` values (internal: callers overwrite all of it).
    pub(crate) fn alloc_uninit<T: Plain>(&self, len: usize) -> Result<DeviceVec<T>> {
        let n = len
            .checked_mul(T::WORDS)
            .ok_or_else(|| Error::invalid("allocation too large"))?;
        // SAFETY: u64 has no invalid bit patterns; the contents are only read after a kernel or
        // a copy has written them (every internal caller fills the buffer first).
        let buf = self
            .retry_out_of_memory(|| unsafe { self.stream.alloc::<u64>(n.max(1)) })
            .map_err(|e| self.alloc_err(e, n * 8))?;
        Ok(DeviceVec {
            buf,
            len,
            _t: PhantomData,
        })
    }

    /// Zeroed device memory for `len` values.
    pub fn alloc<T: Plain>(&self, len: usize) -> Result<DeviceVec<T>> {
        let n = len
            .checked_mul(T::WORDS)
            .ok_or_else(|| Error::invalid("allocation too large"))?;
        let buf = self
            .retry_out_of_memory(|| self.stream.alloc_zeros::<u64>(n.max(1)))
            .map_err(|e| self.alloc_err(e, n * 8))?;
        Ok(DeviceVec {
            buf,
            len,
            _t: PhantomData,
        })
    }

    /// Copies host values into new device memory.
    pub fn upload<T: Plain>(&self, host: &[T]) -> Result<DeviceVec<T>> {
        let mut d = self.alloc_uninit::<T>(host.len())?;
        self.upload_into(host, &mut d)?;
        Ok(d)
    }

    /// Copies host values into existing device memory of the same length.
    pub fn upload_into<T: Plain>(&self, host: &[T], dst: &mut DeviceVec<T>) -> Result<()> {
        check_len(host.len(), dst.len)?;
        if host.is_empty() {
            return Ok(());
        }
        let mut view = dst.buf.slice_mut(..host.len() * T::WORDS);
        self.stream
            .memcpy_htod(words(host), &mut view)
            .map_err(|e| self.err(e))
    }

    /// Copies device values back into a new host vector (synchronises the stream).
    pub fn download<T: Plain>(&self, src: &DeviceVec<T>) -> Result<Vec<T>> {
        let mut v = vec![T::default(); src.len];
        self.download_into(src, &mut v)?;
        Ok(v)
    }

    /// Copies device values into a host slice of the same length (synchronises the stream).
    pub fn download_into<T: Plain>(&self, src: &DeviceVec<T>, dst: &mut [T]) -> Result<()> {
        check_len(dst.len(), src.len)?;
        if dst.is_empty() {
            return Ok(());
        }
        let view = src.buf.slice(..dst.len() * T::WORDS);
        self.stream
            .memcpy_dtoh(&view, words_mut(dst))
            .map_err(|e| self.err(e))?;
        self.synchronize()
    }

    /// Page-locked host memory for `len` values (zeroed).
    pub fn alloc_pinned<T: Plain>(&self, len: usize) -> Result<PinnedVec<T>> {
        let n = len
            .checked_mul(T::WORDS)
            .ok_or_else(|| Error::invalid("allocation too large"))?;
        // SAFETY: flags 0 = plain page-locked memory (readable at normal speed by the CPU); the
        // memory is zeroed below before anyone reads it.
        let mut buf = unsafe { self.ctx.alloc_pinned_with_flags::<u64>(n.max(1), 0) }
            .map_err(|e| self.alloc_err(e, n * 8))?;
        buf.as_mut_slice().map_err(|e| self.err(e))?.fill(0);
        Ok(PinnedVec {
            buf,
            len,
            _t: PhantomData,
        })
    }

    /// Queues an asynchronous copy from pinned host memory to the device.
    pub fn upload_pinned<T: Plain>(
        &self,
        src: &PinnedVec<T>,
        dst: &mut DeviceVec<T>,
    ) -> Result<()> {
        check_len(src.len, dst.len)?;
        if src.len == 0 {
            return Ok(());
        }
        let mut view = dst.buf.slice_mut(..src.len * T::WORDS);
        self.stream
            .memcpy_htod(&src.buf, &mut view)
            .map_err(|e| self.err(e))
    }

    /// Queues an asynchronous copy from the device to pinned host memory; the host data is
    /// ready after [`CudaDevice::synchronize`] (or when [`PinnedVec::as_slice`] returns).
    pub fn download_pinned<T: Plain>(
        &self,
        src: &DeviceVec<T>,
        dst: &mut PinnedVec<T>,
    ) -> Result<()> {
        check_len(dst.len, src.len)?;
        if src.len == 0 {
            return Ok(());
        }
        let view = src.buf.slice(..src.len * T::WORDS);
        self.stream
            .memcpy_dtoh(&view, &mut dst.buf)
            .map_err(|e| self.err(e))
    }

    /// Returns the memory that stream-ordered frees gave back to the device's default pool to
    /// the driver (cuMemPoolTrimTo to zero), so free memory returns to its baseline after a job.
    pub fn trim_pool(&self) -> Result<()> {
        self.synchronize()?;
        trim_idle(&self.ctx).map_err(|e| self.err(e))
    }

    /// Waits for all queued work.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(|e| self.err(e))
    }

    /// Waits for the work queued on every stream of the GPU's context (every lane's).
    pub(crate) fn synchronize_all(&self) -> Result<()> {
        self.ctx.synchronize().map_err(|e| self.err(e))
    }

    /// Runs `f` (which queues work on this device) between two device events and returns the
    /// device time between them in milliseconds (synchronises).
    pub fn time_ms(&self, f: impl FnOnce(&Self) -> Result<()>) -> Result<f64> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.stream.record_event(flags).map_err(|e| self.err(e))?;
        f(self)?;
        let stop = self.stream.record_event(flags).map_err(|e| self.err(e))?;
        stop.synchronize().map_err(|e| self.err(e))?;
        start
            .elapsed_ms(&stop)
            .map(f64::from)
            .map_err(|e| self.err(e))
    }
}

/// Fr values per pinned staging buffer (64 MiB).
const STAGE_FR: usize = 1 << 21;

/// Two pinned buffers used in turn by [`CudaDevice::upload_staged`], each with the event that
/// marks the end of the last copy reading it.
pub(crate) struct Staging {
    bufs: [PinnedVec<Fr>; 2],
    done: [Option<CudaEvent>; 2],
}

impl CudaDevice {
    /// Queues the copy of `src` to device address `dst` on the copy stream and makes the compute
    /// stream wait for it; returns the event recorded after the copy.
    ///
    /// # Safety
    /// `src` is page-locked host memory that stays allocated and unwritten until the returned
    /// event has completed; `[dst, dst + 8·src.len())` is device memory of the caller's.
    unsafe fn copy_in_order(&self, dst: u64, src: &[u64]) -> Result<CudaEvent> {
        // SAFETY: forwarded contract.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(dst, src, self.copy_stream.cu_stream())
        }
        .map_err(|e| self.err(e))?;
        let ev = self
            .copy_stream
            .record_event(None)
            .map_err(|e| self.err(e))?;
        self.stream.wait(&ev).map_err(|e| self.err(e))?;
        Ok(ev)
    }

    /// Copies host values into device memory through two pinned staging buffers: the CPU fills
    /// one (on all cores) while the copy engine drains the other on the dedicated copy stream,
    /// so a copy from pageable memory needs no driver-side staging and overlaps whatever the compute
    /// stream is doing. After each chunk's copy is queued, the compute stream is made to wait for
    /// it and `after_chunk(offset, len)` (in values) is called, so a kernel it launches may read
    /// the chunk while the next one is still being copied.
    ///
    /// Host memory this backend lent ([`crate::host_pool::is_pinned`]) is pinned already: its
    /// chunks are copied straight from it, with no staging copy and no CPU work. The caller keeps
    /// `host` alive until the compute stream has passed the copies (every caller synchronises
    /// before returning).
    pub fn upload_staged<T: Plain>(
        &self,
        host: &[T],
        dst: &mut DeviceVec<T>,
        after_chunk: impl FnMut(usize, usize) -> Result<()>,
    ) -> Result<()> {
        // The destination was allocated in the compute stream's order: the copies wait for it.
        let ready = self.stream.record_event(None).map_err(|e| self.err(e))?;
        self.upload_staged_after(host, dst, &ready, after_chunk)
    }

    /// [`CudaDevice::upload_staged`] with the copies ordered after `ready`, an event recorded on
    /// the compute stream once every destination was allocated, instead of after everything
    /// queued on the compute stream so far: so uploads made this way in turn with kernels
    /// between them (each vector's transforms queued after its own upload) do not wait for
    /// those kernels, and the copy engine runs under them. The compute stream still waits for
    /// each chunk's copy before anything queued on it afterwards.
    pub fn upload_staged_after<T: Plain>(
        &self,
        host: &[T],
        dst: &mut DeviceVec<T>,
        ready: &CudaEvent,
        mut after_chunk: impl FnMut(usize, usize) -> Result<()>,
    ) -> Result<()> {
        use rayon::prelude::*;
        check_len(host.len(), dst.len)?;
        if host.is_empty() {
            return Ok(());
        }
        let per_chunk = STAGE_FR * 4 / T::WORDS;
        if crate::host_pool::is_pinned(host.as_ptr().cast(), std::mem::size_of_val(host)) {
            let base = {
                use cudarc::driver::DevicePtrMut;
                dst.buf.device_ptr_mut(&self.stream).0
            };
            self.copy_stream.wait(ready).map_err(|e| self.err(e))?;
            for (k, chunk) in host.chunks(per_chunk).enumerate() {
                let offset = (k * per_chunk * T::WORDS * 8) as u64;
                // SAFETY: the source is page-locked memory this process's lender handed out,
                // alive until the caller synchronises (contract above); the destination lies
                // inside `dst` (same length as `host`, checked).
                unsafe { self.copy_in_order(base + offset, words(chunk)) }?;
                after_chunk(k * per_chunk, chunk.len())?;
            }
            return Ok(());
        }
        let mut guard = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(Staging {
                bufs: [self.alloc_pinned(STAGE_FR)?, self.alloc_pinned(STAGE_FR)?],
                done: [None, None],
            });
        }
        let st = guard.as_mut().expect("made above");
        let base = {
            use cudarc::driver::DevicePtrMut;
            dst.buf.device_ptr_mut(&self.stream).0
        };
        self.copy_stream.wait(ready).map_err(|e| self.err(e))?;
        for (k, chunk) in host.chunks(per_chunk).enumerate() {
            let i = k % 2;
            if let Some(ev) = st.done[i].take() {
                ev.synchronize().map_err(|e| self.err(e))?;
            }
            let src = words(chunk);
            let pinned = &mut words_mut(st.bufs[i].as_mut_slice()?)[..src.len()];
            pinned
                .par_chunks_mut(1 << 16)
                .zip(src.par_chunks(1 << 16))
                .for_each(|(d, s)| d.copy_from_slice(s));
            let offset = (k * per_chunk * T::WORDS * 8) as u64;
            // SAFETY: the source is pinned host memory that is not written again before the
            // event recorded just after this copy has completed (waited for above); the
            // destination lies inside `dst` (same length as `host`, checked).
            st.done[i] = Some(unsafe { self.copy_in_order(base + offset, pinned) }?);
            after_chunk(k * per_chunk, chunk.len())?;
        }
        Ok(())
    }
}

fn check_len(a: usize, b: usize) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "length mismatch: {a} values vs a buffer of {b}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_driver_is_a_clear_error() {
        let e = require_driver(false).unwrap_err();
        assert!(matches!(e, Error::Backend { .. }), "{e:?}");
        assert!(e.to_string().contains("CUDA driver library"), "{e}");
        assert!(require_driver(true).is_ok());
    }

    /// On a machine without a GPU (here, CI) opening a device fails with a clear error and never
    /// panics; on a machine with a GPU it must succeed (when the kernels are compiled in).
    #[test]
    fn new_without_gpu_returns_error() {
        let r = CudaDevice::new(0);
        if !driver_available() {
            let e = r.unwrap_err();
            assert!(
                e.to_string()
                    .contains("CUDA driver library (libcuda.so) was not found"),
                "{e}"
            );
            assert!(CudaDevice::count().is_err());
        } else if let Err(e) = r {
            // A driver without a usable device, or a build without kernels.
            assert!(
                matches!(
                    e,
                    Error::Device { .. } | Error::Backend { .. } | Error::Unsupported { .. }
                ),
                "{e:?}"
            );
        }
    }
}

//! One CUDA device: its context, a compute stream and a copy stream, and the loaded module of
//! the embedded fatbin. Each feature (`ntt`, `msm`, `quotient`) takes the kernel handles it
//! launches from the module itself; transfers are in [`crate::transfer`].
//!
//! cudarc is used with dynamic loading, so nothing of CUDA is needed to build; at run time the
//! driver library (libcuda) must be present. [`CudaDevice::new`] checks that first (cudarc would
//! panic on the first driver call otherwise) and turns every failure into a
//! [`bellows_backend_api::Error`]: no driver, no kernels in this build, no such device, a GPU older than
//! Hopper, or any driver error. Work is queued in order on the compute stream; the methods that
//! return host data synchronise it.

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    sync::{Arc, Mutex},
};

use bellows_backend_api::{Error, Result};
use cudarc::{
    driver::{
        result::DriverError,
        sys::{self, CUresult},
        CudaContext, CudaFunction, CudaModule, CudaStream,
    },
    nvrtc::Ptx,
};

use crate::{buffers::Staging, error::driver_error, fatbin, pool};

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

/// A CUDA GPU with the Bellows kernels loaded: one lane of it (see [`CudaDevice::lane`]).
pub struct CudaDevice {
    ordinal: usize,
    label: String,
    name: String,
    capability: (i32, i32),
    ctx: Arc<CudaContext>,
    /// The module of the embedded fatbin, shared by the GPU's lanes.
    module: Arc<CudaModule>,
    /// The compute stream: every kernel and allocation of this lane, in order.
    pub(crate) stream: Arc<CudaStream>,
    /// The copy stream (host-to-device uploads, ordered with `stream` by events).
    pub(crate) copy_stream: Arc<CudaStream>,
    /// Pinned staging buffers of [`CudaDevice::upload_staged`], made on first use.
    pub(crate) staging: Mutex<Option<Staging>>,
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
    /// Opens device `ordinal`, loads the kernels' module and creates its streams.
    ///
    /// Errors: [`Error::Backend`] without a driver or without compiled kernels;
    /// [`Error::Unsupported`] for a GPU older than compute capability 9.0 (the kernels are built
    /// for Hopper); [`Error::Device`] for any driver failure (e.g. no such device).
    pub fn new(ordinal: usize) -> Result<Self> {
        require_driver(driver_available())?;
        let fatbin = fatbin::fatbin()?;
        catch_unwind(AssertUnwindSafe(|| Self::open(ordinal, fatbin))).unwrap_or_else(|panic| {
            let what = bellows_backend_api::error::panic_message(&*panic);
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
        pool::set_release_threshold(&ctx, u64::MAX).map_err(err)?;
        let stream = ctx.new_stream().map_err(err)?;
        let copy_stream = ctx.new_stream().map_err(err)?;
        let module = Self::load(&ctx, fatbin).map_err(err)?;
        Ok(Self {
            ordinal,
            label,
            name,
            capability,
            ctx,
            module,
            stream,
            copy_stream,
            staging: Mutex::new(None),
        })
    }

    /// Loads a fatbin into `ctx`.
    fn load(
        ctx: &Arc<CudaContext>,
        fatbin: &[u8],
    ) -> std::result::Result<Arc<CudaModule>, DriverError> {
        let mut image = Vec::with_capacity(fatbin.len());
        image.extend_from_slice(fatbin);
        ctx.load_module(Ptx::from_binary(image))
    }

    /// Another lane on the same GPU: the same context and module, with a compute stream, a copy
    /// stream and pinned staging buffers of its own, so that calls on two lanes run concurrently
    /// (one's transfers beside the other's kernels). Device memory allocated on one lane may be
    /// read by another once the allocating call has synchronised (every public operation of the
    /// backend does before it returns results).
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
            module: self.module.clone(),
            stream,
            copy_stream,
            staging: Mutex::new(None),
        })
    }

    /// Entry point `name` of the embedded fatbin (each feature loads its own kernels).
    pub(crate) fn function(&self, name: &str) -> Result<CudaFunction> {
        self.module.load_function(name).map_err(|e| self.err(e))
    }

    /// Loads another fatbin into the GPU's context (the tools crate's test and benchmark
    /// kernels); its functions launch on [`CudaDevice::stream`] like the backend's own.
    pub fn load_module(&self, fatbin: &[u8]) -> Result<Arc<CudaModule>> {
        Self::load(&self.ctx, fatbin).map_err(|e| self.err(e))
    }

    /// The driver context (shared by the GPU's lanes).
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The compute stream, on which this lane queues all its work (for kernels launched by other
    /// crates, such as the tools' test kernels).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A driver error of this device as a Bellows error ([`Error::Device`]).
    pub fn err(&self, e: DriverError) -> Error {
        driver_error(&self.label, e)
    }

    /// The device index.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }
    /// The device's name as the driver reports it (e.g. "NVIDIA H200").
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The device's label in errors and reports ("cuda:0").
    pub fn label(&self) -> &str {
        &self.label
    }
    /// Compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.capability
    }
    /// Number of streaming multiprocessors.
    pub fn multiprocessors(&self) -> Result<u32> {
        self.ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map(|n| n as u32)
            .map_err(|e| self.err(e))
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
        pool::set_release_threshold(&self.ctx, if at_sync { 0 } else { u64::MAX })
            .map_err(|e| self.err(e))
    }

    /// Bytes the device's default pool holds beyond what live allocations use.
    pub fn pool_idle_bytes(&self) -> Result<usize> {
        pool::idle_bytes(&self.ctx).map_err(|e| self.err(e))
    }

    /// Returns the memory that stream-ordered frees gave back to the device's default pool to
    /// the driver (cuMemPoolTrimTo to zero), so free memory returns to its baseline after a job.
    pub fn trim_pool(&self) -> Result<()> {
        self.synchronize()?;
        pool::trim_idle(&self.ctx).map_err(|e| self.err(e))
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

    /// Registers and local memory of each kernel of `list` (name, handle), as the features
    /// list theirs (`Ntt::kernels`, `Msm::kernels`, `Quotient::kernels`).
    pub fn kernel_report(&self, list: &[(&'static str, &CudaFunction)]) -> Result<Vec<KernelInfo>> {
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

//! Moving data: device allocations (stream-ordered, with one retry after trimming the pool),
//! copies between host and device memory, pinned host buffers, and the staged upload through
//! two pinned buffers on the copy stream, ordered with the compute stream by events.

use std::marker::PhantomData;

use bellows_backend_api::{Error, Result};
use cudarc::driver::{result::DriverError, sys::CUresult, CudaEvent};

use crate::{
    buffers::{words, words_mut, DeviceVec, PinnedVec, Plain, Staging},
    device::CudaDevice,
    host_pool, pool,
};

/// Fr values per pinned staging buffer (64 MiB).
pub(crate) const STAGE_FR: usize = 1 << 21;

impl CudaDevice {
    /// Maps an allocation failure to [`Error::OutOfMemory`] (recoverable), others to Device.
    fn alloc_err(&self, e: DriverError, bytes: usize) -> Error {
        if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            let available = self
                .context()
                .mem_get_info()
                .map(|(free, _)| free as u64)
                .unwrap_or(0);
            Error::OutOfMemory {
                device: self.label().to_string(),
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
                self.context().synchronize()?;
                pool::trim_idle(self.context())?;
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
        let mut buf = unsafe { self.context().alloc_pinned_with_flags::<u64>(n.max(1), 0) }
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
    /// Host memory this backend lent ([`host_pool::is_pinned`]) is pinned already: its
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
        if host_pool::is_pinned(host.as_ptr().cast(), std::mem::size_of_val(host)) {
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
        self.with_staging(|st| {
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
        })
    }

    /// Runs `f` with this lane's two pinned staging buffers ([`STAGE_FR`] values each, made on
    /// first use), held for the duration. Whoever writes a buffer first waits for its event,
    /// and records a new one after the last work queued that reads it.
    pub(crate) fn with_staging<R>(&self, f: impl FnOnce(&mut Staging) -> Result<R>) -> Result<R> {
        let mut guard = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(Staging {
                bufs: [self.alloc_pinned(STAGE_FR)?, self.alloc_pinned(STAGE_FR)?],
                done: [None, None],
            });
        }
        f(guard.as_mut().expect("made above"))
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

//! Where the lender's pinned blocks come from on a GPU machine: the driver, by [`PinMethod`].

use std::{
    collections::HashSet,
    ptr::NonNull,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex, MutexGuard,
    },
};

use bellows_backend_api::{backend::HOST_ALIGN, page_advice, Error, Result};
use cudarc::driver::CudaContext;
use rayon::prelude::*;

use super::RawHost;
use crate::error::NAME;

/// How [`DriverHost`] page-locks a block (option `pin-method`, docs/cuda.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PinMethod {
    /// `cuMemHostAlloc` (portable): the driver allocates, zeroes, pins and maps each block
    /// itself, one page at a time on the calling thread. A 32 GiB key's load stalls behind it
    /// (docs/benchmarks.md, "32 GiB PoRep C2").
    Alloc,
    /// The default: memory of this process, advised for huge pages and backed on every core
    /// (`MADV_POPULATE_WRITE`), then `cuMemHostRegister` (portable). The backing is spread over
    /// the cores, and a load running beside it goes on (docs/benchmarks.md, "32 GiB PoRep
    /// C2"). Once the driver refuses to register a block, that block and every later one are
    /// allocated as `Alloc` does.
    #[default]
    Register,
}

impl std::str::FromStr for PinMethod {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "alloc" => Ok(PinMethod::Alloc),
            "register" => Ok(PinMethod::Register),
            other => Err(Error::invalid(format!(
                "option pin-method={other:?}: expected `register` (blocks backed on every core, \
                 then registered) or `alloc` (the driver allocates each pinned block)"
            ))),
        }
    }
}

/// Alignment of a registered block: a transparent huge page.
const HUGE_PAGE: usize = 2 << 20;

/// Bytes each core backs at a time when a block is registered.
const POPULATE_STEP: usize = 64 << 20;

/// Page-locked memory from the driver, by [`PinMethod`].
pub struct DriverHost(Box<dyn RawHost>);

impl DriverHost {
    /// Blocks page-locked in `ctx` (kept alive while the source is) by `method`.
    pub fn new(ctx: Arc<CudaContext>, method: PinMethod) -> Self {
        let allocated = Allocated(ctx.clone());
        Self(match method {
            PinMethod::Alloc => Box::new(allocated),
            PinMethod::Register => Box::new(OrElse::new(Registered(ctx), allocated)),
        })
    }
}

impl RawHost for DriverHost {
    fn alloc(&self, bytes: usize) -> Result<NonNull<u8>> {
        self.0.alloc(bytes)
    }

    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        // SAFETY: forwarded contract (the block came from this source's `alloc`).
        unsafe { self.0.free(ptr, bytes) }
    }
}

/// Blocks from `first` until it refuses one, then from `then`; each block goes back to its
/// source. A refusal is taken as the host's answer for the rest of the run: on a host that
/// refuses every registration, asking again would back each block twice (once for the refused
/// registration, once by `then`).
struct OrElse<A, B> {
    first: A,
    then: B,
    /// Blocks that came from `then`.
    from_then: Mutex<HashSet<usize>>,
    /// Whether `first` refused a block (logged at warn once).
    refused: AtomicBool,
}

impl<A: RawHost, B: RawHost> OrElse<A, B> {
    /// Blocks from `first`, else from `then`.
    fn new(first: A, then: B) -> Self {
        Self {
            first,
            then,
            from_then: Mutex::new(HashSet::new()),
            refused: AtomicBool::new(false),
        }
    }

    fn others(&self) -> MutexGuard<'_, HashSet<usize>> {
        self.from_then.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<A: RawHost, B: RawHost> RawHost for OrElse<A, B> {
    fn alloc(&self, bytes: usize) -> Result<NonNull<u8>> {
        if !self.refused.load(Ordering::Relaxed) {
            match self.first.alloc(bytes) {
                Ok(p) => return Ok(p),
                // Two blocks asked for at once may both be refused: one warning.
                Err(e) if !self.refused.swap(true, Ordering::Relaxed) => tracing::warn!(
                    "{e}; this block and the later ones are allocated the other way \
                     (pin-method=alloc)"
                ),
                Err(e) => tracing::debug!("{e}; allocated the other way"),
            }
        }
        let p = self.then.alloc(bytes)?;
        self.others().insert(p.as_ptr() as usize);
        Ok(p)
    }

    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        let from_then = self.others().remove(&(ptr.as_ptr() as usize));
        // SAFETY: forwarded contract; the block goes back to the source that made it.
        unsafe {
            if from_then {
                self.then.free(ptr, bytes)
            } else {
                self.first.free(ptr, bytes)
            }
        }
    }
}

/// [`PinMethod::Alloc`]'s blocks: `cuMemHostAlloc`, portable.
struct Allocated(Arc<CudaContext>);

impl RawHost for Allocated {
    fn alloc(&self, bytes: usize) -> Result<NonNull<u8>> {
        let err = |e: cudarc::driver::DriverError| Error::Backend {
            name: NAME.into(),
            reason: format!("page-locking {bytes} bytes of host memory: {e}"),
        };
        self.0.bind_to_thread().map_err(err)?;
        // SAFETY: a plain allocation call with the portable flag (1); the result is checked.
        let p = unsafe {
            cudarc::driver::result::malloc_host(
                bytes,
                cudarc::driver::sys::CU_MEMHOSTALLOC_PORTABLE,
            )
        }
        .map_err(err)?;
        let p = NonNull::new(p.cast::<u8>()).ok_or_else(|| Error::Backend {
            name: NAME.into(),
            reason: "cuMemHostAlloc returned null".into(),
        })?;
        // Driver allocations are page-aligned.
        debug_assert_eq!(p.as_ptr() as usize % HOST_ALIGN, 0);
        Ok(p)
    }

    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        let _ = self.0.bind_to_thread();
        // SAFETY: per the contract, from cuMemHostAlloc in this context, released once.
        if let Err(e) = unsafe { cudarc::driver::result::free_host(ptr.as_ptr().cast()) } {
            tracing::warn!("releasing {bytes} bytes of pinned host memory: {e}");
        }
    }
}

/// [`PinMethod::Register`]'s blocks: see there.
struct Registered(Arc<CudaContext>);

impl RawHost for Registered {
    fn alloc(&self, bytes: usize) -> Result<NonNull<u8>> {
        self.0.bind_to_thread().map_err(|e| Error::Backend {
            name: NAME.into(),
            reason: format!("page-locking {bytes} bytes of host memory: {e}"),
        })?;
        let layout = std::alloc::Layout::from_size_align(bytes, HUGE_PAGE)
            .map_err(|e| Error::invalid(format!("a pinned block of {bytes} bytes: {e}")))?;
        // SAFETY: bytes > 0 (the lender never asks for none); the result is checked.
        let p =
            NonNull::new(unsafe { std::alloc::alloc(layout) }).ok_or_else(|| Error::Backend {
                name: NAME.into(),
                reason: format!("allocating {bytes} bytes of host memory to page-lock"),
            })?;
        // SAFETY: [p, p + bytes) is the allocation just made, not yet shared.
        let buf = unsafe {
            std::slice::from_raw_parts_mut(p.as_ptr().cast::<std::mem::MaybeUninit<u8>>(), bytes)
        };
        page_advice::advise_huge(buf);
        let start = p.as_ptr() as usize;
        (0..bytes.div_ceil(POPULATE_STEP))
            .into_par_iter()
            .for_each(|i| {
                let at = i * POPULATE_STEP;
                // SAFETY: inside the allocation (at < bytes, the length clamped to it), which
                // lives until this function returns it or frees it.
                unsafe {
                    page_advice::populate((start + at) as *const u8, POPULATE_STEP.min(bytes - at))
                };
            });
        // SAFETY: the range is this process's allocation, alive until unregistered in `free`.
        let r = unsafe {
            cudarc::driver::sys::cuMemHostRegister_v2(
                p.as_ptr().cast(),
                bytes,
                cudarc::driver::sys::CU_MEMHOSTREGISTER_PORTABLE,
            )
        };
        if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
            // SAFETY: allocated above with this layout, not registered, released once.
            unsafe { std::alloc::dealloc(p.as_ptr(), layout) };
            return Err(Error::Backend {
                name: NAME.into(),
                reason: format!("registering {bytes} bytes of host memory: {r:?}"),
            });
        }
        Ok(p)
    }

    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        let _ = self.0.bind_to_thread();
        // SAFETY: per the contract, registered by `alloc` in this context with this size and
        // layout, released once.
        unsafe {
            let r = cudarc::driver::sys::cuMemHostUnregister(ptr.as_ptr().cast());
            if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
                tracing::warn!("unregistering {bytes} bytes of pinned host memory: {r:?}");
            }
            std::alloc::dealloc(
                ptr.as_ptr(),
                std::alloc::Layout::from_size_align_unchecked(bytes, HUGE_PAGE),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::Heap;
    use super::*;

    #[test]
    fn after_a_refusal_blocks_come_from_the_other_source_and_go_back_there() {
        let host = OrElse::new(Heap::refusing(&[3000]), Heap::refusing(&[]));
        let a = host.alloc(1000).unwrap();
        let b = host.alloc(3000).unwrap();
        let c = host.alloc(1000).unwrap();
        assert!(host.first.owns(a) && !host.then.owns(a));
        assert!(host.then.owns(b) && host.then.owns(c) && !host.first.owns(b));
        // The refused source is not asked again after its refusal.
        assert_eq!(host.first.allocs.load(Ordering::SeqCst), 2);
        // SAFETY: each block from `alloc` above with its size, freed once.
        unsafe {
            host.free(b, 3000);
            host.free(a, 1000);
            host.free(c, 1000);
        }
        assert_eq!(host.first.frees.load(Ordering::SeqCst), 1);
        assert_eq!(host.then.frees.load(Ordering::SeqCst), 2);
        assert!(host.others().is_empty());
        // Both refusing: the second source's error.
        let host = OrElse::new(Heap::refusing(&[8]), Heap::refusing(&[8]));
        assert!(host.alloc(8).is_err() && host.others().is_empty());
    }
}

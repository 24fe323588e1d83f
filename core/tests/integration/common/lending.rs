//! The CPU backend lending host memory from the heap (aligned as `alloc_host` promises), up to a
//! limit, and checking that every block comes back once, with the size it was lent with.

use std::{
    collections::HashMap,
    ptr::NonNull,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Mutex,
    },
};

use bellows_core::{
    backend::{MemoryPool, HOST_ALIGN},
    Backend, BackendInfo, Result,
};

pub struct Lending {
    pub inner: bellows_cpu::CpuBackend,
    /// Blocks lent now: start → bytes.
    pub lent: Mutex<HashMap<usize, usize>>,
    pub allocs: AtomicUsize,
    pub frees: AtomicUsize,
    /// Larger requests are declined.
    pub limit: usize,
    /// The size of every request, in order.
    pub asked: Mutex<Vec<usize>>,
    /// The sizes `reserve_host` was given, in order.
    pub reserved: Mutex<Vec<usize>>,
}

impl Lending {
    pub fn with_limit(limit: usize) -> Self {
        Self {
            inner: bellows_cpu::CpuBackend::new(),
            lent: Default::default(),
            allocs: Default::default(),
            frees: Default::default(),
            limit,
            asked: Default::default(),
            reserved: Default::default(),
        }
    }
}

bellows_core::forward_ntt!(Lending, inner);
bellows_core::forward_msm!(Lending, inner);

impl MemoryPool for Lending {
    fn alloc_host(&self, bytes: usize) -> Result<Option<NonNull<u8>>> {
        self.asked.lock().unwrap().push(bytes);
        if bytes > self.limit {
            return Ok(None);
        }
        let layout = std::alloc::Layout::from_size_align(bytes, HOST_ALIGN).unwrap();
        // SAFETY: HostVec never asks for zero bytes.
        let p = NonNull::new(unsafe { std::alloc::alloc(layout) }).unwrap();
        self.lent.lock().unwrap().insert(p.as_ptr() as usize, bytes);
        self.allocs.fetch_add(1, Ordering::SeqCst);
        Ok(Some(p))
    }

    unsafe fn free_host(&self, ptr: NonNull<u8>, bytes: usize) -> Result<()> {
        let had = self.lent.lock().unwrap().remove(&(ptr.as_ptr() as usize));
        assert_eq!(
            had,
            Some(bytes),
            "a block returned twice, or with another size"
        );
        self.frees.fetch_add(1, Ordering::SeqCst);
        let layout = std::alloc::Layout::from_size_align(bytes, HOST_ALIGN).unwrap();
        // SAFETY: lent above with this layout.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
        Ok(())
    }

    fn reserve_host(&self, sizes: &[usize]) -> Result<()> {
        self.reserved.lock().unwrap().extend_from_slice(sizes);
        Ok(())
    }
}

impl Backend for Lending {
    fn info(&self) -> BackendInfo {
        self.inner.info()
    }
}

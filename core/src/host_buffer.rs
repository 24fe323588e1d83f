//! [`HostVec`]: the host buffer synthesis writes a proof's vectors into — a growable-once vector
//! whose memory a backend may lend (aligned, pinned), else the heap.
//!
//! A device backend copies a proof's evaluations (a, b, c) and assignments to the device. From
//! ordinary (pageable) memory the driver cannot copy directly: the CUDA backend first copies
//! every byte into pinned staging buffers on the CPU, several times slower than a direct copy
//! (docs/cuda.md). [`crate::backend::MemoryPool::alloc_host`] lets the backend
//! hand out page-locked memory instead, so that synthesis writes where the device reads. The
//! memory is also already backed, so the writer takes no page faults.
//!
//! `HostVec` owns either such a block (freed through the backend, which it keeps alive) or a
//! plain `Vec`. It dereferences to a slice; its length is fixed after filling (it never
//! reallocates itself, except [`HostVec::resize_with_value`] and [`HostVec::push`] past its
//! capacity, which move to the heap). Tests: core/tests/integration/host_vec.rs.

use std::{
    mem::{size_of, MaybeUninit},
    ops::{Deref, DerefMut},
    ptr::NonNull,
    sync::Arc,
};

use rayon::prelude::*;

use crate::{backend::HOST_ALIGN, Backend};

/// A block from [`crate::backend::MemoryPool::alloc_host`].
struct Block<T> {
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
    backend: Arc<dyn Backend>,
}

enum Storage<T> {
    Heap(Vec<T>),
    Backend(Block<T>),
}

/// A host vector of plain values (field elements), in a backend's memory or on the heap.
pub struct HostVec<T: Copy> {
    storage: Storage<T>,
}

// SAFETY: a backend block is owned exclusively by this vector (no other reference to it exists
// until it is freed), like a Vec's buffer; T is Send and Sync as required, and the backend is
// `Send + Sync` (`Backend`'s bound).
unsafe impl<T: Copy + Send> Send for HostVec<T> {}
// SAFETY: as above; shared access only reads.
unsafe impl<T: Copy + Sync> Sync for HostVec<T> {}

impl<T: Copy> HostVec<T> {
    /// An empty vector with room for `cap` values, from `backend`'s host memory when it gives
    /// some ([`crate::backend::MemoryPool::alloc_host`]), else from the heap. A backend's error
    /// is not fatal: it is logged and the heap is used.
    pub fn with_capacity_in(cap: usize, backend: Option<&Arc<dyn Backend>>) -> Self {
        if let Some(b) = backend {
            if cap > 0 && std::mem::align_of::<T>() <= HOST_ALIGN {
                if let Some(bytes) = cap.checked_mul(size_of::<T>()) {
                    match b.alloc_host(bytes) {
                        Ok(Some(p)) if (p.as_ptr() as usize).is_multiple_of(HOST_ALIGN) => {
                            return Self {
                                storage: Storage::Backend(Block {
                                    ptr: p.cast(),
                                    len: 0,
                                    cap,
                                    backend: b.clone(),
                                }),
                            };
                        }
                        Ok(Some(p)) => {
                            tracing::warn!(
                                "backend {} gave misaligned host memory; using the heap",
                                b.info().name
                            );
                            // SAFETY: p came from alloc_host(bytes) on b and is freed once, unused.
                            let _ = unsafe { b.free_host(p, bytes) };
                        }
                        Ok(None) => {}
                        Err(e) => tracing::warn!(
                            "backend {} could not give {bytes} bytes of host memory ({e}); \
                             using the heap",
                            b.info().name
                        ),
                    }
                }
            }
        }
        Self {
            storage: Storage::Heap(Vec::with_capacity(cap)),
        }
    }

    /// Whether the memory came from a backend.
    pub fn is_backend_memory(&self) -> bool {
        matches!(self.storage, Storage::Backend(_))
    }

    /// Room for values without moving.
    pub fn capacity(&self) -> usize {
        match &self.storage {
            Storage::Heap(v) => v.capacity(),
            Storage::Backend(b) => b.cap,
        }
    }

    /// The unwritten part of the buffer, `len..capacity`.
    pub fn spare_capacity_mut(&mut self) -> &mut [MaybeUninit<T>] {
        match &mut self.storage {
            Storage::Heap(v) => v.spare_capacity_mut(),
            // SAFETY: [len, cap) lies inside the block, which this vector owns exclusively;
            // MaybeUninit makes no claim about the contents.
            Storage::Backend(b) => unsafe {
                std::slice::from_raw_parts_mut(
                    b.ptr.as_ptr().add(b.len).cast::<MaybeUninit<T>>(),
                    b.cap - b.len,
                )
            },
        }
    }

    /// Sets the length.
    ///
    /// # Safety
    /// `len ≤ capacity`, and the first `len` values have been written.
    pub unsafe fn set_len(&mut self, len: usize) {
        match &mut self.storage {
            // SAFETY: forwarded contract.
            Storage::Heap(v) => unsafe { v.set_len(len) },
            Storage::Backend(b) => {
                debug_assert!(len <= b.cap);
                b.len = len;
            }
        }
    }

    /// Appends a value; past the capacity the values move to the heap, which grows as a `Vec`
    /// does (direct synthesis pushes one value at a time into heap vectors).
    pub fn push(&mut self, value: T) {
        match &mut self.storage {
            Storage::Heap(v) => v.push(value),
            Storage::Backend(b) if b.len < b.cap => {
                // SAFETY: len < cap: the slot lies inside the block, owned exclusively.
                unsafe { b.ptr.as_ptr().add(b.len).write(value) };
                b.len += 1;
            }
            Storage::Backend(_) => {
                let mut v: Vec<T> = Vec::with_capacity(self.len() * 2 + 1);
                v.extend_from_slice(self);
                v.push(value);
                self.storage = Storage::Heap(v);
            }
        }
    }

    /// Extends (or truncates) to `len` values, new ones `zero`, written in parallel. Past the
    /// capacity the values move to the heap (one copy): callers size the buffer so that this
    /// does not happen on their fast path.
    pub fn resize_with_value(&mut self, len: usize, zero: T)
    where
        T: Send + Sync,
    {
        let cur = self.len();
        if len <= cur {
            // SAFETY: shrinking; the first len values stay written.
            unsafe { self.set_len(len) };
            return;
        }
        if len > self.capacity() {
            let mut v: Vec<T> = Vec::with_capacity(len);
            v.extend_from_slice(self);
            v.resize(len, zero);
            self.storage = Storage::Heap(v);
            return;
        }
        self.spare_capacity_mut()[..len - cur]
            .par_chunks_mut(1 << 16)
            .for_each(|c| {
                for x in c {
                    x.write(zero);
                }
            });
        // SAFETY: len ≤ capacity (checked) and [cur, len) was written just above.
        unsafe { self.set_len(len) };
    }

    /// The values as a `Vec` (moved when on the heap, copied out of a backend block).
    pub fn into_vec(mut self) -> Vec<T> {
        match std::mem::replace(&mut self.storage, Storage::Heap(Vec::new())) {
            Storage::Heap(v) => v,
            Storage::Backend(b) => {
                // SAFETY: the first len values of the block were written (set_len's contract).
                let v = unsafe { std::slice::from_raw_parts(b.ptr.as_ptr(), b.len) }.to_vec();
                drop(b);
                v
            }
        }
    }
}

impl<T> Drop for Block<T> {
    fn drop(&mut self) {
        let bytes = self.cap * size_of::<T>();
        // SAFETY: the block came from alloc_host(bytes) on this backend (with_capacity_in), is
        // freed only here (a Block is never copied), and no reference into it outlives it.
        if let Err(e) = unsafe { self.backend.free_host(self.ptr.cast(), bytes) } {
            tracing::warn!("returning {bytes} bytes of host memory to the backend: {e}");
        }
    }
}

impl<T: Copy> Deref for HostVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.storage {
            Storage::Heap(v) => v,
            // SAFETY: the first len values of the block were written (set_len's contract); the
            // block lives as long as self.
            Storage::Backend(b) => unsafe { std::slice::from_raw_parts(b.ptr.as_ptr(), b.len) },
        }
    }
}

impl<T: Copy> DerefMut for HostVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.storage {
            Storage::Heap(v) => v,
            // SAFETY: as in deref; &mut self gives exclusive access.
            Storage::Backend(b) => unsafe { std::slice::from_raw_parts_mut(b.ptr.as_ptr(), b.len) },
        }
    }
}

impl<T: Copy> From<Vec<T>> for HostVec<T> {
    fn from(v: Vec<T>) -> Self {
        Self {
            storage: Storage::Heap(v),
        }
    }
}

impl<T: Copy> Default for HostVec<T> {
    fn default() -> Self {
        Vec::new().into()
    }
}

/// A copy on the heap (clones are for tests and tools, not the proving path).
impl<T: Copy> Clone for HostVec<T> {
    fn clone(&self) -> Self {
        self.to_vec().into()
    }
}

impl<T: Copy + std::fmt::Debug> std::fmt::Debug for HostVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Copy + PartialEq> PartialEq for HostVec<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Copy + Eq> Eq for HostVec<T> {}

impl<T: Copy + PartialEq> PartialEq<Vec<T>> for HostVec<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        **self == **other
    }
}

impl<T: Copy + PartialEq> PartialEq<HostVec<T>> for Vec<T> {
    fn eq(&self, other: &HostVec<T>) -> bool {
        **self == **other
    }
}

//! [`MemoryPool`]: a backend's memory management — what is free, what it may use, host memory
//! it pins or lends — and [`plan_tier`], how a large working set degrades instead of failing.
//!
//! ## Design
//! Out-of-memory is an expected condition, not a crash. A backend reports free/total memory of its
//! device and honours a byte budget; callers that must place a large working set (resident SRS
//! bases, a batch of NTT vectors) ask [`plan_tier`] which [`Tier`] fits, and degrade from full
//! pre-staging to partial staging to streaming instead of failing. Pinning registers host memory
//! with the driver so copies from it are asynchronous; on a host-only backend it is a no-op.
//! Trimming returns memory cached by stream-ordered allocators to the driver (cuMemPoolTrimTo), so
//! the next allocation sees it as free. Free and total memory of the host itself is
//! [`crate::host_memory::host_memory_info`].

// The trait declares `unsafe fn`s (pinning and freeing raw host memory): their contracts are in
// their `# Safety` sections.
#![allow(unsafe_code)]

use std::sync::Mutex;

use crate::Result;

/// Memory of one device (or of the host, for the CPU backend).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryInfo {
    /// Bytes free now.
    pub free: u64,
    /// Bytes in total.
    pub total: u64,
    /// The byte budget in force, if any.
    pub budget: Option<u64>,
}

impl MemoryInfo {
    /// Bytes usable under the budget, keeping `margin` bytes of the free memory untouched.
    pub fn usable(&self, margin: u64) -> u64 {
        let free = self.free.saturating_sub(margin);
        match self.budget {
            Some(b) => free.min(b),
            None => free,
        }
    }
}

/// The byte budget a backend holds ([`MemoryPool::set_memory_budget`]; `None`: no budget), set
/// and read from any thread. Every backend keeps one; the host-memory backends report it with
/// the host's memory ([`MemoryBudget::host_info`]).
#[derive(Debug, Default)]
pub struct MemoryBudget(Mutex<Option<u64>>);

impl MemoryBudget {
    /// A budget of `bytes` (`None`: no budget), as a configuration's `memory_budget` gives it.
    pub fn new(bytes: Option<u64>) -> Self {
        Self(Mutex::new(bytes))
    }

    /// The budget in force.
    pub fn get(&self) -> Option<u64> {
        // A plain value, replaced whole: a poisoned lock still holds a valid one.
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets (or clears, with `None`) the budget; what [`MemoryPool::set_memory_budget`] does.
    pub fn set(&self, bytes: Option<u64>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = bytes;
    }

    /// The host's free and total memory ([`crate::host_memory::host_memory_info`]) under this
    /// budget: what a backend computing in host memory answers to
    /// [`MemoryPool::memory_info`].
    pub fn host_info(&self) -> MemoryInfo {
        MemoryInfo {
            budget: self.get(),
            ..crate::host_memory::host_memory_info()
        }
    }
}

/// How much of a working set is placed ahead on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Everything fits: stage it all ahead.
    Full,
    /// Stage this many bytes ahead; the rest is streamed.
    Partial(u64),
    /// Stream through chunks of this many bytes, double-buffered.
    Streaming(u64),
}

/// Picks the tier for a working set of `full` bytes that can also be processed in chunks of at
/// least `min_chunk` bytes (two chunks in flight when streaming), given `usable` bytes.
/// Fails with [`crate::Error::OutOfMemory`] only when not even two minimal chunks fit.
pub fn plan_tier(full: u64, min_chunk: u64, usable: u64, device: &str) -> Result<Tier> {
    if full <= usable {
        Ok(Tier::Full)
    } else if usable >= full / 2 && usable >= 2 * min_chunk {
        // Stage as much as possible, leave room for two streaming chunks.
        Ok(Tier::Partial(usable - 2 * min_chunk))
    } else if usable >= 2 * min_chunk {
        Ok(Tier::Streaming(usable / 2))
    } else {
        Err(crate::Error::OutOfMemory {
            device: device.to_string(),
            requested: 2 * min_chunk,
            available: usable,
        })
    }
}

/// Memory management of a backend.
pub trait MemoryPool {
    /// Free and total memory of the backend's device. The default answers
    /// [`crate::Error::Unsupported`].
    fn memory_info(&self) -> Result<MemoryInfo> {
        Err(crate::Error::unsupported(
            std::any::type_name::<Self>(),
            "memory_info",
        ))
    }

    /// Sets (or clears, with `None`) the number of bytes the backend may use. The default
    /// answers [`crate::Error::Unsupported`].
    fn set_memory_budget(&self, bytes: Option<u64>) -> Result<()> {
        let _ = bytes;
        Err(crate::Error::unsupported(
            std::any::type_name::<Self>(),
            "set_memory_budget",
        ))
    }

    /// Registers host memory for fast asynchronous copies. Returns whether it is now pinned
    /// (`false` on backends where pinning means nothing). The default does nothing.
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay allocated until [`MemoryPool::unpin_host`] is called for it.
    unsafe fn pin_host(&self, ptr: *const u8, len: usize) -> Result<bool> {
        let _ = (ptr, len);
        Ok(false)
    }

    /// Undoes [`MemoryPool::pin_host`]. The default does nothing.
    ///
    /// # Safety
    /// `ptr` must have been pinned by `pin_host` on this backend, or not be pinned at all.
    unsafe fn unpin_host(&self, ptr: *const u8) -> Result<()> {
        let _ = ptr;
        Ok(())
    }

    /// Returns memory cached by the backend's pools to the device. The default does nothing.
    fn trim(&self) -> Result<()> {
        Ok(())
    }

    /// Host memory for vectors the backend's device will read (a proof's evaluations and
    /// assignments): `bytes` bytes, aligned to [`HOST_ALIGN`], which the caller writes and later
    /// returns with [`MemoryPool::free_host`]. A device backend gives page-locked (pinned)
    /// memory, which its copy engine reads directly: no staging copy, no page faults while
    /// synthesis writes it. `Ok(None)`: the backend has none to give (the default, and a device
    /// backend past its pinned-memory limit); the caller then uses its own heap (the prover's
    /// `HostVec` in bellows-core does either).
    fn alloc_host(&self, bytes: usize) -> Result<Option<std::ptr::NonNull<u8>>> {
        let _ = bytes;
        Ok(None)
    }

    /// Returns memory from [`MemoryPool::alloc_host`]. The default does nothing (its
    /// `alloc_host` gives none).
    ///
    /// # Safety
    /// `ptr` was returned by `alloc_host(bytes)` on this backend, is not freed twice, and no
    /// reference into it is used afterwards.
    unsafe fn free_host(&self, ptr: std::ptr::NonNull<u8>, bytes: usize) -> Result<()> {
        let _ = (ptr, bytes);
        Ok(())
    }

    /// Gets host memory ready, ahead of need, for [`MemoryPool::alloc_host`] requests of these
    /// sizes (one block per entry): a device backend page-locks the blocks now, once, rather
    /// than on the critical path of the proofs that will use them (pinning takes the driver's
    /// locks and stalls the device calls of the moment). A prover calls it when it knows the
    /// sizes of its partitions and how many it holds at once. Blocks not asked for are given
    /// back later like any idle block. The default does nothing.
    fn reserve_host(&self, sizes: &[usize]) -> Result<()> {
        let _ = sizes;
        Ok(())
    }
}

/// Alignment of [`MemoryPool::alloc_host`] memory: enough for any element type the prover
/// stores there (and a cache line).
pub const HOST_ALIGN: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_degrade_instead_of_failing() {
        assert_eq!(plan_tier(100, 10, 200, "d").unwrap(), Tier::Full);
        assert_eq!(plan_tier(100, 10, 60, "d").unwrap(), Tier::Partial(40));
        assert_eq!(plan_tier(100, 10, 30, "d").unwrap(), Tier::Streaming(15));
        let e = plan_tier(100, 10, 19, "d").unwrap_err();
        assert!(e.is_recoverable());
        assert!(e.to_string().contains("out of memory"));
    }

    #[test]
    fn budget_caps_usable() {
        let m = MemoryInfo {
            free: 1000,
            total: 2000,
            budget: Some(300),
        };
        assert_eq!(m.usable(100), 300);
        let m = MemoryInfo { budget: None, ..m };
        assert_eq!(m.usable(100), 900);
    }

    #[test]
    fn a_budget_is_set_cleared_and_reported_with_the_host() {
        let b = MemoryBudget::new(Some(7));
        assert_eq!(b.get(), Some(7));
        assert_eq!(b.host_info().budget, Some(7));
        b.set(None);
        assert_eq!(b.get(), None);
        let m = b.host_info();
        assert_eq!(m.budget, None);
        assert!(m.free <= m.total);
    }
}

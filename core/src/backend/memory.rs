//! Device and host memory: what is free, what we may use, and how allocation degrades.
//!
//! ## Design
//! Out-of-memory is an expected condition, not a crash. A backend reports free/total memory of its
//! device and honours a byte budget; callers that must place a large working set (resident SRS
//! bases, a batch of NTT vectors) ask [`plan_tier`] which [`Tier`] fits, and degrade from full
//! pre-staging to partial staging to streaming instead of failing. Pinning registers host memory
//! with the driver so copies from it are asynchronous; on a host-only backend it is a no-op.
//! Trimming returns memory cached by stream-ordered allocators to the driver (cuMemPoolTrimTo), so
//! the next allocation sees it as free.

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
}

/// Free and total host memory from `/proc/meminfo` (zeros where that is unavailable).
pub fn host_memory_info() -> MemoryInfo {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .unwrap_or(0)
    };
    MemoryInfo {
        free: field("MemAvailable:"),
        total: field("MemTotal:"),
        budget: None,
    }
}

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
    fn host_memory_is_reported() {
        let m = host_memory_info();
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(m.total > 0 && m.free <= m.total);
        }
    }
}

//! The device's default memory pool, from which every stream-ordered allocation of the backend
//! comes (`cuMemAllocAsync`): its release threshold, its idle bytes, and trimming it.
//!
//! Freed device memory stays in the pool for the next allocation until it is trimmed, instead of
//! going back to the driver at every synchronisation (the driver's default), because mapping it
//! again costs time on every call; see [`crate::device::CudaDevice::set_pool_release`].

use cudarc::driver::{result::DriverError, sys, CudaContext};

/// The default memory pool of `ctx`'s device (with the context bound to this thread).
fn default_pool(ctx: &CudaContext) -> Result<sys::CUmemoryPool, DriverError> {
    ctx.bind_to_thread()?;
    // SAFETY: the device handle is the context's own device; its default pool lives as long as
    // the context.
    unsafe { cudarc::driver::result::device::get_default_mem_pool(ctx.cu_device()) }
}

/// A u64 attribute of the default pool (reserved or used bytes).
fn attribute(ctx: &CudaContext, attr: sys::CUmemPool_attribute) -> Result<u64, DriverError> {
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
pub(crate) fn set_release_threshold(ctx: &CudaContext, bytes: u64) -> Result<(), DriverError> {
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
pub(crate) fn trim_idle(ctx: &CudaContext) -> Result<(), DriverError> {
    let pool = default_pool(ctx)?;
    // SAFETY: a valid pool (above); trimming releases only memory no allocation uses.
    unsafe { cudarc::driver::result::mem_pool::trim_to(pool, 0) }
}

/// Bytes the pool holds beyond what live allocations use.
pub(crate) fn idle_bytes(ctx: &CudaContext) -> Result<usize, DriverError> {
    use sys::CUmemPool_attribute::*;
    let reserved = attribute(ctx, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?;
    let used = attribute(ctx, CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?;
    Ok(reserved.saturating_sub(used) as usize)
}

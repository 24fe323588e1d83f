//! Launch shapes, device addresses of buffers, and u32 scratch: what the features' launches
//! share.

use bellows_backend_api::{layout::Fr, Result};
use cudarc::driver::{DevicePtr, DevicePtrMut, LaunchConfig};

use crate::{
    buffers::{DeviceVec, Plain},
    device::CudaDevice,
};

/// A 1-D launch of `threads` threads in blocks of `block`.
pub(crate) fn launch_cfg(threads: u64, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (threads.div_ceil(block as u64).max(1) as u32, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A grid-stride launch over `n` items (blocks of 256, at most 2^16 of them).
pub(crate) fn stride_cfg(n: u64) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(256).clamp(1, 1 << 16) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The device address of a buffer, for reading in work queued on `dev`'s stream.
pub(crate) fn ptr<T: Plain>(v: &DeviceVec<T>, dev: &CudaDevice) -> u64 {
    v.buf.device_ptr(dev.stream()).0
}

/// The device address of a buffer, for writing in work queued on `dev`'s stream.
pub(crate) fn ptr_mut<T: Plain>(v: &mut DeviceVec<T>, dev: &CudaDevice) -> u64 {
    v.buf.device_ptr_mut(dev.stream()).0
}

/// u32 device scratch (the kernels' counters and indices), as halves of u64 words.
pub(crate) struct U32Buf {
    pub buf: DeviceVec<Fr>,
}

impl U32Buf {
    /// Zeroed room for `len` u32 values.
    pub fn zeroed(dev: &CudaDevice, len: u64) -> Result<Self> {
        let frs = (len.max(1)).div_ceil(8) as usize;
        Ok(Self {
            buf: dev.alloc::<Fr>(frs)?,
        })
    }
    /// Uninitialised room for `len` u32 values.
    pub fn uninit(dev: &CudaDevice, len: u64) -> Result<Self> {
        let frs = (len.max(1)).div_ceil(8) as usize;
        Ok(Self {
            buf: dev.alloc_uninit::<Fr>(frs)?,
        })
    }
    /// Its device address.
    pub fn ptr(&mut self, dev: &CudaDevice) -> u64 {
        ptr_mut(&mut self.buf, dev)
    }
    /// Value `i` (waits for the stream).
    pub fn read(&self, dev: &CudaDevice, i: u64) -> Result<u32> {
        let word = (i / 2) as usize;
        let view = self.buf.buf.slice(word..word + 1);
        let mut host = [0u64; 1];
        dev.stream()
            .memcpy_dtoh(&view, &mut host)
            .map_err(|e| dev.err(e))?;
        dev.synchronize()?;
        Ok((host[0] >> (32 * (i % 2))) as u32)
    }
}

//! One GPU as the tools drive it: a [`CudaDevice`] with the backend's features (NTT, MSM,
//! quotient) loaded, as [`bellows_cuda::CudaBackend`] holds them for each of its GPUs.

use bellows_core::Result;
use bellows_cuda::{
    msm::{Msm, MsmConfig},
    ntt::Ntt,
    quotient::Quotient,
    CudaDevice, KernelInfo,
};

/// A device and its features.
pub struct Gpu {
    /// The device (the first lane of the GPU).
    pub dev: CudaDevice,
    /// The NTT kernels and tables.
    pub ntt: Ntt,
    /// The MSM kernels and tuning.
    pub msm: Msm,
    /// The quotient's kernels.
    pub quotient: Quotient,
}

impl Gpu {
    /// Opens device `ordinal` with the MSM tuning `msm`.
    pub fn open(ordinal: usize, msm: MsmConfig) -> Result<Self> {
        let dev = CudaDevice::new(ordinal)?;
        Ok(Self {
            ntt: Ntt::new(&dev)?,
            msm: Msm::new(&dev, msm)?,
            quotient: Quotient::new(&dev)?,
            dev,
        })
    }

    /// Registers and local memory of every production kernel.
    pub fn kernel_report(&self) -> Result<Vec<KernelInfo>> {
        let mut list = self.ntt.kernels();
        list.extend(self.msm.kernels());
        list.extend(self.quotient.kernels());
        self.dev.kernel_report(&list)
    }
}

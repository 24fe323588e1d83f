//! The MSM's kernel handles of one GPU, loaded from the device's module by name.

use bellows_backend_api::Result;
use cudarc::driver::CudaFunction;

use crate::device::CudaDevice;

/// Threads per block of the MSM kernels (their `__launch_bounds__`).
pub(crate) const BLOCK: u32 = 128;
/// Threads of a block of the binning kernel (`BIN_BLOCK` in kernels/msm/kernels.cuh).
pub(crate) const BIN_BLOCK: u32 = 256;

/// The entry points of one group (`BELLOWS_MSM_GROUP` in kernels/msm/kernels.cuh), named
/// `bellows_msm_{g1,g2}_{op}` for each op below, in this order.
macro_rules! group_kernels {
    ($($op:ident),* $(,)?) => {
        /// The group-specific kernels of one group.
        pub(crate) struct GroupKernels {
            $(pub $op: CudaFunction,)*
        }

        impl GroupKernels {
            fn load(dev: &CudaDevice, group: &str) -> Result<Self> {
                Ok(Self {
                    $($op: dev.function(&format!("bellows_msm_{group}_{}", stringify!($op)))?,)*
                })
            }

            /// Each kernel with its name, for group `g1` or `g2`.
            fn list(&self, g1: bool) -> Vec<(&'static str, &CudaFunction)> {
                vec![$(
                    (
                        if g1 {
                            concat!("bellows_msm_g1_", stringify!($op))
                        } else {
                            concat!("bellows_msm_g2_", stringify!($op))
                        },
                        &self.$op,
                    ),
                )*]
            }
        }
    };
}

group_kernels!(
    accumulate,
    fixup,
    fixup_big,
    window_segments,
    window_horner,
    reduce,
    sum_listed,
    to_jacobian,
    table_double,
    batch_to_affine,
);

/// Every MSM kernel of one GPU.
pub(crate) struct MsmKernels {
    pub scan_blocks: CudaFunction,
    pub scan_add: CudaFunction,
    pub popcount: CudaFunction,
    pub digits: CudaFunction,
    pub bin_start: CudaFunction,
    pub bin: CudaFunction,
    pub place: CudaFunction,
    pub g1: GroupKernels,
    pub g2: GroupKernels,
}

impl MsmKernels {
    /// Loads them from `dev`'s module.
    pub fn load(dev: &CudaDevice) -> Result<Self> {
        Ok(Self {
            scan_blocks: dev.function("bellows_scan_blocks")?,
            scan_add: dev.function("bellows_scan_add")?,
            popcount: dev.function("bellows_popcount")?,
            digits: dev.function("bellows_msm_digits")?,
            bin_start: dev.function("bellows_msm_bin_start")?,
            bin: dev.function("bellows_msm_bin")?,
            place: dev.function("bellows_msm_place")?,
            g1: GroupKernels::load(dev, "g1")?,
            g2: GroupKernels::load(dev, "g2")?,
        })
    }

    /// Each kernel with its name.
    pub fn list(&self) -> Vec<(&'static str, &CudaFunction)> {
        let mut v = vec![
            ("bellows_scan_blocks", &self.scan_blocks),
            ("bellows_scan_add", &self.scan_add),
            ("bellows_popcount", &self.popcount),
            ("bellows_msm_digits", &self.digits),
            ("bellows_msm_bin_start", &self.bin_start),
            ("bellows_msm_bin", &self.bin),
            ("bellows_msm_place", &self.place),
        ];
        v.extend(self.g1.list(true));
        v.extend(self.g2.list(false));
        v
    }
}

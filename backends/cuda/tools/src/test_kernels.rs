//! The test and benchmark kernels (kernels/testing.cu), compiled ahead of time by build.rs into
//! a fatbin of their own and loaded into a backend device's context on demand; without nvcc at
//! build time the fatbin is empty and [`TestKernels::load`] says so.

use bellows_core::Result;
use bellows_cuda::{fatbin::no_kernels_error, CudaDevice, KernelInfo};
use cudarc::driver::{CudaFunction, CudaModule};

#[cfg(bellows_testing_kernels)]
static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bellows_testing.fatbin"));
#[cfg(not(bellows_testing_kernels))]
static FATBIN: &[u8] = &[];

/// The embedded test-kernel fatbin, or the "not compiled in" error.
pub fn fatbin() -> Result<&'static [u8]> {
    if FATBIN.is_empty() {
        Err(no_kernels_error())
    } else {
        Ok(FATBIN)
    }
}

/// Defines [`TestKernels`] from the entry points' names.
macro_rules! test_kernels {
    ($($field:ident),* $(,)?) => {
        /// The test and benchmark kernels, loaded into one GPU's context; they launch on the
        /// stream of the lane given to each call.
        pub struct TestKernels {
            _module: std::sync::Arc<CudaModule>,
            $(pub(crate) $field: CudaFunction,)*
        }

        impl TestKernels {
            /// Loads the fatbin into `dev`'s context.
            pub fn load(dev: &CudaDevice) -> Result<Self> {
                let module = dev.load_module(fatbin()?)?;
                let f = |n: &str| module.load_function(n).map_err(|e| dev.err(e));
                Ok(Self {
                    $($field: f(concat!("bellows_", stringify!($field)))?,)*
                    _module: module,
                })
            }

            /// Registers and local memory of every test kernel.
            pub fn report(&self, dev: &CudaDevice) -> Result<Vec<KernelInfo>> {
                dev.kernel_report(&[
                    $((concat!("bellows_", stringify!($field)), &self.$field),)*
                ])
            }
        }
    };
}

test_kernels!(
    fr_op,
    fp_op,
    fp2_op,
    g1_op,
    g2_op,
    bench_fr_mul,
    bench_fr_mul_generic,
    bench_fp_mul,
    bench_fp_sqr,
    bench_fp_sqr_plain,
    bench_fp2_mul,
    bench_g1_madd,
    bench_g1_madd_plain,
    bench_g2_madd,
);

#[cfg(test)]
mod tests {
    use super::*;

    fn contains(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    /// With the production kernels compiled in, the test kernels are too (the same nvcc), and
    /// they hold the entry points the tools load.
    #[test]
    fn the_test_fatbin_holds_the_test_kernels() {
        if std::env::var("BELLOWS_REQUIRE_KERNELS").is_ok_and(|v| v == "1") {
            assert!(
                fatbin().is_ok(),
                "BELLOWS_REQUIRE_KERNELS=1 but no test kernels"
            );
        }
        let Ok(t) = fatbin() else { return };
        assert_eq!(t[..4], bellows_cuda::fatbin::FATBIN_MAGIC);
        for name in ["bellows_fr_op", "bellows_g2_op", "bellows_bench_g2_madd"] {
            assert!(contains(t, name.as_bytes()), "{name} missing");
        }
        assert!(!contains(t, b"bellows_msm_digits"));
    }
}

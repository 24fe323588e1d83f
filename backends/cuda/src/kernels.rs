//! The kernels, compiled ahead of time by build.rs and embedded in the library.
//!
//! build.rs runs nvcc once, at build time, over `kernels/bellows.cu` and produces a fatbin holding
//! sm_90 machine code (Hopper) and compute_90 PTX (which the driver compiles for newer GPUs).
//! Ahead-of-time compilation rather than NVRTC at run time: the kernels are fixed, so compiling
//! them on every user's machine would only add NVRTC as a run-time dependency, a first-use delay
//! and a disk cache to manage; and CI compiles exactly what ships, so a kernel that does not
//! compile fails CI. When no nvcc was found at build time the fatbin is empty and every device
//! entry point reports [`no_kernels_error`].

use bellows_core::{Error, Result};

#[cfg(bellows_kernels)]
static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bellows.fatbin"));
#[cfg(not(bellows_kernels))]
static FATBIN: &[u8] = &[];

/// The test and benchmark kernels (kernels/testing.cu), with the `testing` feature.
#[cfg(all(feature = "testing", bellows_testing_kernels))]
static TESTING_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bellows_testing.fatbin"));
#[cfg(all(feature = "testing", not(bellows_testing_kernels)))]
static TESTING_FATBIN: &[u8] = &[];

/// The embedded test-kernel fatbin (`testing` feature), or the "not compiled in" error.
#[cfg(feature = "testing")]
pub fn testing_fatbin() -> Result<&'static [u8]> {
    if TESTING_FATBIN.is_empty() {
        Err(no_kernels_error())
    } else {
        Ok(TESTING_FATBIN)
    }
}

/// True when the kernels were compiled into this build.
pub const KERNELS_COMPILED: bool = cfg!(bellows_kernels);

/// The magic number that opens an NVIDIA fatbin (little-endian 0xBA55ED50).
pub const FATBIN_MAGIC: [u8; 4] = [0x50, 0xed, 0x55, 0xba];

/// The embedded fatbin, or the "not compiled in" error.
pub fn fatbin() -> Result<&'static [u8]> {
    if FATBIN.is_empty() {
        Err(no_kernels_error())
    } else {
        Ok(FATBIN)
    }
}

/// The error every entry point returns in a build without kernels.
pub fn no_kernels_error() -> Error {
    Error::Backend {
        name: "cuda".into(),
        reason: "kernels were not compiled in (no nvcc at build time); rebuild with nvcc \
                 available (NVCC, CUDA_HOME or PATH)"
            .into(),
    }
}

/// Entry points of the fatbin, by their extern "C" names.
pub(crate) mod names {
    #[cfg(feature = "testing")]
    pub use super::testing_names::*;
    pub const EXPAND_TABLE: &str = "bellows_expand_table";
    pub const BITREV: &str = "bellows_bitrev";
    pub const BITREV_TILED: &str = "bellows_bitrev_tiled";
    pub const NTT_PASS: &str = "bellows_ntt_pass";
    pub const NTT_PASS_RADIX2: &str = "bellows_ntt_pass_radix2";
    pub const QUOTIENT_PRODUCT: &str = "bellows_quotient_product";
    pub const QUOTIENT_FINISH: &str = "bellows_quotient_finish";
    pub const SCAN_BLOCKS: &str = "bellows_scan_blocks";
    pub const SCAN_ADD: &str = "bellows_scan_add";
    pub const POPCOUNT: &str = "bellows_popcount";
    pub const MSM_DIGITS: &str = "bellows_msm_digits";
    pub const MSM_BIN_START: &str = "bellows_msm_bin_start";
    pub const MSM_BIN: &str = "bellows_msm_bin";
    pub const MSM_PLACE: &str = "bellows_msm_place";
    pub const MSM_PAD_COUNTS: &str = "bellows_msm_pad_counts";
    pub const MSM_SHIFT_OFFSETS: &str = "bellows_msm_shift_offsets";
    pub const FILL_U32: &str = "bellows_fill_u32";
}

/// Entry points of the test-kernel fatbin.
#[cfg(feature = "testing")]
pub(crate) mod testing_names {
    pub const FR_OP: &str = "bellows_fr_op";
    pub const FP_OP: &str = "bellows_fp_op";
    pub const FP2_OP: &str = "bellows_fp2_op";
    pub const G1_OP: &str = "bellows_g1_op";
    pub const G2_OP: &str = "bellows_g2_op";
    pub const BENCH_FR_MUL: &str = "bellows_bench_fr_mul";
    pub const BENCH_FR_MUL_GENERIC: &str = "bellows_bench_fr_mul_generic";
    pub const BENCH_FP_MUL: &str = "bellows_bench_fp_mul";
    pub const BENCH_FP_SQR: &str = "bellows_bench_fp_sqr";
    pub const BENCH_FP_SQR_PLAIN: &str = "bellows_bench_fp_sqr_plain";
    pub const BENCH_FP2_MUL: &str = "bellows_bench_fp2_mul";
    pub const BENCH_G1_MADD: &str = "bellows_bench_g1_madd";
    pub const BENCH_G1_MADD_PLAIN: &str = "bellows_bench_g1_madd_plain";
    pub const BENCH_G2_MADD: &str = "bellows_bench_g2_madd";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fatbin_matches_build_configuration() {
        let r = fatbin();
        assert_eq!(r.is_ok(), KERNELS_COMPILED);
        if std::env::var("BELLOWS_REQUIRE_KERNELS").is_ok_and(|v| v == "1") {
            // CI: nvcc was installed, so the kernels must be in the build.
            assert!(
                r.is_ok(),
                "BELLOWS_REQUIRE_KERNELS=1 but the build has no kernels"
            );
        }
        match r {
            Ok(bytes) => {
                assert!(bytes.len() > 1024, "fatbin of {} bytes", bytes.len());
                assert_eq!(bytes[..4], FATBIN_MAGIC);
            }
            Err(e) => assert!(
                e.to_string().contains("kernels were not compiled in"),
                "{e}"
            ),
        }
    }

    fn contains(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn test_kernels_live_outside_the_production_fatbin() {
        let Ok(prod) = fatbin() else { return };
        assert!(contains(prod, names::NTT_PASS.as_bytes()));
        assert!(contains(prod, names::MSM_DIGITS.as_bytes()));
        for name in ["bellows_fr_op", "bellows_g2_op", "bellows_bench_g1_madd"] {
            assert!(
                !contains(prod, name.as_bytes()),
                "{name} in the production fatbin"
            );
        }
        #[cfg(feature = "testing")]
        {
            let t = testing_fatbin().expect("the testing fatbin is built with the kernels");
            assert_eq!(t[..4], FATBIN_MAGIC);
            assert!(contains(t, names::FR_OP.as_bytes()));
            assert!(contains(t, names::BENCH_G2_MADD.as_bytes()));
        }
    }
}

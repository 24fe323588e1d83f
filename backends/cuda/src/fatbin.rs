//! The kernels, compiled ahead of time by build.rs and embedded in the library.
//!
//! build.rs runs nvcc once, at build time, over `kernels/backend.cu` and produces a fatbin holding
//! sm_90 machine code (Hopper) and compute_90 PTX (which the driver compiles for newer GPUs).
//! Ahead-of-time compilation rather than NVRTC at run time: the kernels are fixed, so compiling
//! them on every user's machine would only add NVRTC as a run-time dependency, a first-use delay
//! and a disk cache to manage; and CI compiles exactly what ships, so a kernel that does not
//! compile fails CI. When no nvcc was found at build time the fatbin is empty and every device
//! entry point reports [`no_kernels_error`].

use bellows_backend_api::{Error, Result};

#[cfg(bellows_kernels)]
static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bellows.fatbin"));
#[cfg(not(bellows_kernels))]
static FATBIN: &[u8] = &[];

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

    /// The production fatbin holds the backend's entry points and none of the tools' test and
    /// benchmark kernels, nor the paths deleted from the tree.
    #[test]
    fn only_production_kernels_are_embedded() {
        let Ok(prod) = fatbin() else { return };
        for name in [
            "bellows_ntt_pass",
            "bellows_msm_digits",
            "bellows_quotient_finish",
        ] {
            assert!(contains(prod, name.as_bytes()), "{name} missing");
        }
        for name in [
            "bellows_fr_op",
            "bellows_g2_op",
            "bellows_bench_g1_madd",
            "bellows_ntt_pass_radix2",
            "bellows_msm_g1_affine_round",
        ] {
            assert!(
                !contains(prod, name.as_bytes()),
                "{name} in the production fatbin"
            );
        }
    }
}

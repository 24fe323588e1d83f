// Bellows CUDA kernels: the production translation unit, compiled ahead of time by build.rs into
// the fatbin that src/fatbin.rs embeds: every kernel the backend launches (the test and benchmark
// kernels are the tools crate's, backends/cuda/tools/kernels). Every entry point is extern "C" so
// the Rust side finds it by its plain name. Layouts of all arguments are blst's (see
// ff/bls12_381.cuh) or mirrored #[repr(C)] structs in the Rust crate.
#include "ec/decode.cuh"
#include "msm/kernels.cuh"
#include "ntt/kernels.cuh"

using namespace bellows;

// ---- Parameter points ----------------------------------------------------------------------------

// n points as a parameters file encodes them (ec/decode.cuh) decoded into blst's affine layout, a
// verdict each; a point whose verdict is not DECODE_OK is left unwritten (except the identity).
// `in` may be `out` (the key load decodes in place): an encoding is as long as its point, and each
// thread reads its point's bytes whole before writing it.
extern "C" __global__ void bellows_decode_g1(const uint8_t* in, G1Affine* out, uint8_t* verdicts,
                                             uint64_t n) {
    for (uint64_t i = global_thread(); i < n; i += grid_threads())
        verdicts[i] = decode_g1(in + 96 * i, out + i);
}

extern "C" __global__ void bellows_decode_g2(const uint8_t* in, G2Affine* out, uint8_t* verdicts,
                                             uint64_t n) {
    for (uint64_t i = global_thread(); i < n; i += grid_threads())
        verdicts[i] = decode_g2(in + 192 * i, out + i);
}

// ---- Groth16 quotient ---------------------------------------------------------------------------

// The quotient h = (coset_iNTT(A·B) − C)/Z in two steps around the inverse coset transform, where
// A, B are a's and b's evaluations on the coset and C is c's coefficient vector (Z is the constant
// g^n − 1 on the coset, and the inverse coset transform is linear, so c needs no trip to the coset
// and back: that saves one transform of three vectors' seven).
// Step 1, on the coset evaluations: a[i] ← a[i]·b[i].
extern "C" __global__ void bellows_quotient_product(Fr* a, const Fr* b, uint64_t n) {
    for (uint64_t i = global_thread(); i < n; i += grid_threads()) {
        Fr x = ld_fr((const uint4*)(a + i)) * ldg_fr((const uint4*)(b + i));
        st_fr((uint4*)(a + i), x);
    }
}

// Step 2, on coefficients (both in natural order): a[i] ← (a[i] − c[i])·z_inv.
extern "C" __global__ void bellows_quotient_finish(Fr* a, const Fr* c, Fr z_inv, uint64_t n) {
    for (uint64_t i = global_thread(); i < n; i += grid_threads()) {
        Fr x = Fr::sub(ld_fr((const uint4*)(a + i)), ldg_fr((const uint4*)(c + i))) * z_inv;
        st_fr((uint4*)(a + i), x);
    }
}

// Bellows CUDA test kernels: variants of the production fields, built only to measure what the
// production forms gain over them (bellows-cuda-check's throughput table) and checked against
// blst like the production forms (tests/emulation.rs, fields 3 and 5). Same layouts as Fr, Fp.
#pragma once

#include "ff/bls12_381.cuh"

namespace bellows {

// Fr through the generic reduction only (no special low limbs): kept to measure what the special
// case gains (bellows_bench_fr_mul_generic).
struct FrGenericParams : FrParams {
    static constexpr bool LOW_LIMBS_ONE_FFFFFFFF = false;
};

// Fp with squares as products and a·b − c·d as two products: kept to measure what the dedicated
// squaring and mul_sub gain (bellows_bench_fp_sqr_plain, bellows_bench_g1_madd_plain).
struct FpPlainParams : FpParams {
    static constexpr bool SQR_SUB = false;
};

typedef Mont<FrGenericParams> FrGeneric;
typedef Mont<FpPlainParams> FpPlain;

}  // namespace bellows

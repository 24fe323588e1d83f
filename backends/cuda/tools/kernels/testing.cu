// Bellows CUDA test and benchmark kernels: compiled by the tools crate's build.rs into a fatbin of
// their own, so the production library carries none of them. The element-wise entry points run
// one field or curve operation per thread for bit-exact checks against blst (bellows-cuda-check);
// the benchmark kernels measure arithmetic throughput.
#include "ops.cuh"
#include "util/device.cuh"

using namespace bellows;

namespace {

template <class F>
__device__ void field_op_kernel(uint32_t op, const F* a, const F* b, F* out, uint64_t n) {
    for (uint64_t i = global_thread(); i < n; i += grid_threads()) out[i] = field_apply<F>(op, a[i], b[i]);
}

template <class F>
__device__ void curve_op_kernel(uint32_t op, const Jacobian<F>* p, const Jacobian<F>* q,
                                const Affine<F>* a, Affine<F>* out_affine,
                                Jacobian<F>* out_jacobian, uint64_t n) {
    for (uint64_t i = global_thread(); i < n; i += grid_threads()) {
        Xyzz<F> r = curve_apply<F>(op, p[i], q[i], a[i]);
        out_affine[i] = op_to_affine<F>(r);
        out_jacobian[i] = op_to_jacobian<F>(r);
    }
}

// Throughput: four independent chains per thread, `iters` rounds of x_j ← x_j·y, or of
// x_j ← x_j² with SQUARE.
template <class F, bool SQUARE = false>
__device__ void bench_mul_kernel(const F* in, F* out, uint32_t iters) {
    uint64_t t = global_thread();
    F y = in[2 * t], x0 = in[2 * t + 1];
    F x1 = F::add(x0, y), x2 = F::sub(x0, y), x3 = F::dbl(x0);
    for (uint32_t i = 0; i < iters; i++) {
        if constexpr (SQUARE) {
            x0 = F::sqr(x0);
            x1 = F::sqr(x1);
            x2 = F::sqr(x2);
            x3 = F::sqr(x3);
        } else {
            x0 = F::mul(x0, y);
            x1 = F::mul(x1, y);
            x2 = F::mul(x2, y);
            x3 = F::mul(x3, y);
        }
    }
    out[t] = F::add(F::add(x0, x1), F::add(x2, x3));
}

// Throughput: one XYZZ accumulator per thread adding `iters` affine points from a table of
// mask + 1 entries (small enough to stay in cache, so the kernel measures arithmetic).
template <class F>
__device__ void bench_madd_kernel(const Affine<F>* pts, uint32_t mask, Xyzz<F>* out,
                                  uint32_t iters) {
    uint64_t t = global_thread();
    uint32_t j = (uint32_t)t;
    Xyzz<F> acc = Xyzz<F>::from_affine(pts[j & mask]);
    for (uint32_t i = 0; i < iters; i++) acc = Xyzz<F>::add_affine(acc, pts[(j + i + 1) & mask]);
    out[t] = acc;
}

}  // namespace

// ---- element-wise test entry points -----------------------------------------------------------

extern "C" __global__ void bellows_fr_op(uint32_t op, const Fr* a, const Fr* b, Fr* out, uint64_t n) {
    field_op_kernel<Fr>(op, a, b, out, n);
}
extern "C" __global__ void bellows_fp_op(uint32_t op, const Fp* a, const Fp* b, Fp* out, uint64_t n) {
    field_op_kernel<Fp>(op, a, b, out, n);
}
extern "C" __global__ void bellows_fp2_op(uint32_t op, const Fp2* a, const Fp2* b, Fp2* out,
                                          uint64_t n) {
    field_op_kernel<Fp2>(op, a, b, out, n);
}
extern "C" __global__ void bellows_g1_op(uint32_t op, const G1Jacobian* p, const G1Jacobian* q,
                                         const G1Affine* a, G1Affine* out_affine,
                                         G1Jacobian* out_jacobian, uint64_t n) {
    curve_op_kernel<Fp>(op, p, q, a, out_affine, out_jacobian, n);
}
extern "C" __global__ void bellows_g2_op(uint32_t op, const G2Jacobian* p, const G2Jacobian* q,
                                         const G2Affine* a, G2Affine* out_affine,
                                         G2Jacobian* out_jacobian, uint64_t n) {
    curve_op_kernel<Fp2>(op, p, q, a, out_affine, out_jacobian, n);
}

// ---- benchmarks ---------------------------------------------------------------------------------

extern "C" __global__ void bellows_bench_fr_mul(const Fr* in, Fr* out, uint32_t iters) {
    bench_mul_kernel<Fr>(in, out, iters);
}
extern "C" __global__ void bellows_bench_fr_mul_generic(const FrGeneric* in, FrGeneric* out,
                                                        uint32_t iters) {
    bench_mul_kernel<FrGeneric>(in, out, iters);
}
extern "C" __global__ void bellows_bench_fp_mul(const Fp* in, Fp* out, uint32_t iters) {
    bench_mul_kernel<Fp>(in, out, iters);
}
// Squares: Fp's dedicated squaring, and FpPlain's (a product), same layout.
extern "C" __global__ void bellows_bench_fp_sqr(const Fp* in, Fp* out, uint32_t iters) {
    bench_mul_kernel<Fp, true>(in, out, iters);
}
extern "C" __global__ void bellows_bench_fp_sqr_plain(const FpPlain* in, FpPlain* out, uint32_t iters) {
    bench_mul_kernel<FpPlain, true>(in, out, iters);
}
extern "C" __global__ void bellows_bench_fp2_mul(const Fp2* in, Fp2* out, uint32_t iters) {
    bench_mul_kernel<Fp2>(in, out, iters);
}
extern "C" __global__ void bellows_bench_g1_madd(const G1Affine* pts, uint32_t mask, G1Xyzz* out,
                                                 uint32_t iters) {
    bench_madd_kernel<Fp>(pts, mask, out, iters);
}
// G1 mixed additions over FpPlain: squares as products and Y3 as two products (the formulas
// before the dedicated squaring and mul_sub).
extern "C" __global__ void bellows_bench_g1_madd_plain(const Affine<FpPlain>* pts, uint32_t mask,
                                                       Xyzz<FpPlain>* out, uint32_t iters) {
    bench_madd_kernel<FpPlain>(pts, mask, out, iters);
}
extern "C" __global__ void bellows_bench_g2_madd(const G2Affine* pts, uint32_t mask, G2Xyzz* out,
                                                 uint32_t iters) {
    bench_madd_kernel<Fp2>(pts, mask, out, iters);
}


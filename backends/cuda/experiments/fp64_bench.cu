// Throughput of the Fp product in its two forms (integer: field.cuh; FP64: fp_dp.cuh), alone and
// mixed, and of the G1 mixed addition built on each. A stand-alone program (no Rust), for the
// device tool:  nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -o fp64-bench fp64_bench.cu
// Every variant computes the same values from the same inputs, and the program checks that their
// outputs agree bit for bit before it prints a time.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../kernels/curve.cuh"

using namespace bellows;

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

// The same twelve limbs as another field type of the same layout (Fp ↔ FpD).
template <class To, class From>
__device__ __forceinline__ To as(const From& x) {
    To r;
#pragma unroll
    for (int i = 0; i < 12; i++) r.v[i] = x.v[i];
    return r;
}

// MODE: 0 all integer, 1 all FP64, 2 two chains of each in every thread, 3 warps alternate.
template <int MODE, int MINB>
__global__ void __launch_bounds__(128, MINB) mul_kernel(const Fp* in, Fp* out, uint32_t iters) {
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    Fp y = in[2 * t], x0 = in[2 * t + 1];
    Fp x1 = Fp::add(x0, y), x2 = Fp::sub(x0, y), x3 = Fp::dbl(x0);
    const bool dpw = (threadIdx.x >> 5) & 1;
    if (MODE == 0 || (MODE == 3 && !dpw)) {
        for (uint32_t i = 0; i < iters; i++) {
            x0 = Fp::mul(x0, y); x1 = Fp::mul(x1, y); x2 = Fp::mul(x2, y); x3 = Fp::mul(x3, y);
        }
    } else if (MODE == 1 || MODE == 3) {
        FpD yd = as<FpD, Fp>(y), a = as<FpD, Fp>(x0), b = as<FpD, Fp>(x1), c = as<FpD, Fp>(x2), d = as<FpD, Fp>(x3);
        for (uint32_t i = 0; i < iters; i++) {
            a = FpD::mul(a, yd); b = FpD::mul(b, yd); c = FpD::mul(c, yd); d = FpD::mul(d, yd);
        }
        x0 = as<Fp, FpD>(a); x1 = as<Fp, FpD>(b); x2 = as<Fp, FpD>(c); x3 = as<Fp, FpD>(d);
    } else {
        FpD yd = as<FpD, Fp>(y), c = as<FpD, Fp>(x2), d = as<FpD, Fp>(x3);
        for (uint32_t i = 0; i < iters; i++) {
            x0 = Fp::mul(x0, y); c = FpD::mul(c, yd); x1 = Fp::mul(x1, y); d = FpD::mul(d, yd);
        }
        x2 = as<Fp, FpD>(c); x3 = as<Fp, FpD>(d);
    }
    out[4 * t] = x0; out[4 * t + 1] = x1; out[4 * t + 2] = x2; out[4 * t + 3] = x3;
}

// One XYZZ accumulator per thread adding `iters` affine points from a small table (in cache).
// MODE: 0 integer, 1 FP64, 3 warps alternate.
template <class F>
__device__ __forceinline__ void madd_loop(const G1Affine* pts, uint32_t mask, G1Xyzz* out, uint32_t iters, uint64_t t) {
    const uint32_t j = (uint32_t)t;
    const Affine<F>* p = reinterpret_cast<const Affine<F>*>(pts);
    Xyzz<F> acc = Xyzz<F>::from_affine(p[j & mask]);
    for (uint32_t i = 0; i < iters; i++) acc = Xyzz<F>::add_affine(acc, p[(j + i + 1) & mask]);
    reinterpret_cast<Xyzz<F>*>(out)[t] = acc;
}
template <int MODE>
__global__ void __launch_bounds__(128, 3) madd_kernel(const G1Affine* pts, uint32_t mask, G1Xyzz* out, uint32_t iters) {
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const bool dpw = (threadIdx.x >> 5) & 1;
    if (MODE == 0 || (MODE == 3 && !dpw)) madd_loop<Fp>(pts, mask, out, iters, t);
    else madd_loop<FpD>(pts, mask, out, iters, t);
}

// The fastest of five timed launches after a warm-up one (device events), in ms.
template <class L>
static float fastest(cudaEvent_t e0, cudaEvent_t e1, L launch) {
    float best = 1e30f;
    for (int r = 0; r < 6; r++) {
        CK(cudaEventRecord(e0));
        launch();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0 && ms < best) best = ms;
    }
    return best;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd32() {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

int main(int argc, char** argv) {
    int blocks_per_sm = argc > 1 ? atoi(argv[1]) : 8;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount;
    printf("device %s, %d SMs\n", prop.name, sms);

    // ---- products ----
    const uint32_t threads = 128, blocks = sms * blocks_per_sm;
    const uint64_t nt = (uint64_t)threads * blocks;
    std::vector<uint32_t> h(2 * nt * 12);
    for (auto& w : h) w = rnd32();
    for (uint64_t i = 0; i < 2 * nt; i++) h[i * 12 + 11] &= 0x0fffffff;  // below p
    Fp *din, *dout;
    CK(cudaMalloc(&din, 2 * nt * sizeof(Fp)));
    CK(cudaMalloc(&dout, 4 * nt * sizeof(Fp)));
    CK(cudaMemcpy(din, h.data(), 2 * nt * sizeof(Fp), cudaMemcpyHostToDevice));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const uint32_t iters = 64;
    std::vector<uint32_t> ref(4 * nt * 12), got(4 * nt * 12);
    // Each mode twice: at most 128 registers (four blocks of 128 threads a multiprocessor, the
    // same occupancy for every mode) and unconstrained.
    const char* names[8] = {"integer/4blk", "fp64/4blk", "mixed-in-thread/4blk", "mixed-warps/4blk",
                            "integer", "fp64", "mixed-in-thread", "mixed-warps"};
    void (*kernels[8])(const Fp*, Fp*, uint32_t) = {mul_kernel<0, 4>, mul_kernel<1, 4>, mul_kernel<2, 4>, mul_kernel<3, 4>,
                                                     mul_kernel<0, 1>, mul_kernel<1, 1>, mul_kernel<2, 1>, mul_kernel<3, 1>};
    for (int m = 0; m < 8; m++) {
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, kernels[m]));
        const float best = fastest(e0, e1, [&] { kernels[m]<<<blocks, threads>>>(din, dout, iters); });
        CK(cudaMemcpy(m == 0 ? ref.data() : got.data(), dout, 4 * nt * sizeof(Fp), cudaMemcpyDeviceToHost));
        bool same = m == 0 || memcmp(ref.data(), got.data(), ref.size() * 4) == 0;
        const double products = (double)nt * 4 * iters;
        printf("RESULT mul %-16s regs=%3d %8.3f ms  %6.2f G products/s  same=%s\n", names[m], fa.numRegs, best,
               products / best / 1e6, same ? "yes" : "NO");
        if (!same) return 2;
    }

    // ---- G1 mixed additions: random coordinates below p (not curve points: the formulas are
    // exact field arithmetic either way, and random values never meet the exceptional branches),
    // a table of 1024 in cache, so the kernel measures arithmetic. ----
    const uint32_t mthreads = 128, mblocks = sms * 3 * 4, table = 1024;
    const uint64_t mt = (uint64_t)mthreads * mblocks;
    std::vector<uint32_t> hp(table * 24);
    for (auto& w : hp) w = rnd32();
    for (uint32_t i = 0; i < 2 * table; i++) hp[i * 12 + 11] &= 0x0fffffff;
    G1Affine* dpts;
    G1Xyzz* dacc;
    CK(cudaMalloc(&dpts, table * sizeof(G1Affine)));
    CK(cudaMalloc(&dacc, mt * sizeof(G1Xyzz)));
    CK(cudaMemcpy(dpts, hp.data(), table * sizeof(G1Affine), cudaMemcpyHostToDevice));
    const uint32_t miters = 256;
    std::vector<uint32_t> mref(mt * 48), mgot(mt * 48);
    const char* mnames[3] = {"integer", "fp64", "mixed-warps"};
    void (*mk[3])(const G1Affine*, uint32_t, G1Xyzz*, uint32_t) = {madd_kernel<0>, madd_kernel<1>, madd_kernel<3>};
    for (int m = 0; m < 3; m++) {
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, mk[m]));
        const float best = fastest(e0, e1, [&] { mk[m]<<<mblocks, mthreads>>>(dpts, table - 1, dacc, miters); });
        CK(cudaMemcpy(m == 0 ? mref.data() : mgot.data(), dacc, mt * sizeof(G1Xyzz), cudaMemcpyDeviceToHost));
        bool same = m == 0 || memcmp(mref.data(), mgot.data(), mref.size() * 4) == 0;
        printf("RESULT madd %-16s regs=%3d spill=%zu %8.3f ms  %6.3f G additions/s  same=%s\n", mnames[m], fa.numRegs,
               fa.localSizeBytes, best, (double)mt * miters / best / 1e6, same ? "yes" : "NO");
        if (!same) return 2;
    }
    return 0;
}

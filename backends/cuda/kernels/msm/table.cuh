// Bellows CUDA kernels, MSM: building a table of precomputed window multiples (msm/msm.cuh,
// "Precomputed window multiples").
#pragma once

#include "msm/common.cuh"

namespace bellows {
namespace msm {

// Thread t < count: 2^c·prev[t] in XYZZ (c doublings of the affine point; the identity stays
// the identity, as does a point of order two, which the prime-order groups do not hold anyway).
template <class F>
BL_HD void table_double_body(const Affine<F>* prev, uint64_t count, uint32_t c, uint64_t t, Xyzz<F>* out) {
    if (t >= count) return;
    Xyzz<F> p = Xyzz<F>::dbl_affine(load_affine(prev + t));
    for (uint32_t k = 1; k < c; k++) p = Xyzz<F>::dbl(p);
    out[t] = p;
}

// out[i] = in[i] in affine form for i = t + k·threads (k < per, i < count), with one inversion
// per thread by Montgomery's trick (P. L. Montgomery, Math. Comp. 48, 1987): the forward sweep
// keeps the running product of the ZZZ in out[i].x, the backward sweep peels 1/ZZZ_i off the
// inverted total; then 1/ZZ = (ZZ/ZZZ)² since ZZ³ = ZZZ² (as Xyzz::to_affine). The identity
// (ZZZ = 0) is left out of the product and written as (0, 0).
template <class F>
BL_HD void batch_to_affine_body(const Xyzz<F>* in, uint64_t count, uint64_t threads, uint32_t per,
                                uint64_t t, Affine<F>* out) {
    if (t >= count) return;
    uint64_t m64 = (count - 1 - t) / threads + 1;
    const uint32_t m = m64 < per ? (uint32_t)m64 : per;
    F acc = F::one();
    for (uint32_t k = 0; k < m; k++) {
        const uint64_t i = t + (uint64_t)k * threads;
        const F z = load_coord(&in[i].zzz);
        if (!z.is_zero()) acc = F::mul(acc, z);
        out[i].x = acc;
    }
    F inv = F::inv(acc);  // 1/(ZZZ_0 ⋯ ZZZ_(m−1)) over the non-identity points
    for (uint32_t k = m; k-- > 0;) {
        const uint64_t i = t + (uint64_t)k * threads;
        const Xyzz<F> p = in[i];
        if (p.zzz.is_zero()) {
            out[i] = Affine<F>::identity();
            continue;
        }
        // out[i − threads].x still holds the product before i (the sweep runs downwards).
        const F before = k > 0 ? out[i - threads].x : F::one();
        const F zi = F::mul(inv, before);  // 1/ZZZ_i
        inv = F::mul(inv, p.zzz);
        const F s = F::mul(p.zz, zi);  // ZZ/ZZZ, whose square is 1/ZZ
        out[i] = Affine<F>{F::mul(p.x, F::sqr(s)), F::mul(p.y, zi)};
    }
}

}  // namespace msm
}  // namespace bellows

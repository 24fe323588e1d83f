// Bellows CUDA kernels, MSM step 6 (msm/msm.cuh): the window sums Σ_j (j + 1)·B_j by segments in one
// or two levels, tree reductions, and the sum of the bases whose scalar is 1.
#pragma once

#include "ec/curve.cuh"

namespace bellows {
namespace msm {

// k·P for a small k (double-and-add from the top bit).
template <class F>
BL_HD Xyzz<F> mul_small(const Xyzz<F>& p, uint32_t k) {
    Xyzz<F> r = Xyzz<F>::identity();
    if (k == 0) return r;
    int top = 31;
    while (!((k >> top) & 1)) top--;
    r = p;
    for (int b = top - 1; b >= 0; b--) {
        r = Xyzz<F>::dbl(r);
        if ((k >> b) & 1) r = Xyzz<F>::add(r, p);
    }
    return r;
}

// Pass 6a, thread t = (window w, segment g) over `len` inputs a window, in segments of seg_len
// from lo = g·seg_len: running = Σ_{j∈seg} in_{w,j} and, by running sums from the top down,
// acc = Σ_{j∈seg} (j − lo + w0)·in_{w,j}. With `flat` (one level), lo·running is added to acc by double-and-add (log2 lo doublings), so acc is the segment's
// share of Σ_j (j + w0)·in_{w,j}; otherwise running goes to total[t] (when `total` is given)
// for the next level (window_horner below), which needs no doublings of the segments at all.
template <class F>
BL_HD void window_segment_body(const Xyzz<F>* in, uint32_t len, uint32_t seg_len, uint32_t windows,
                               uint32_t w0, bool flat, uint64_t t, Xyzz<F>* out, Xyzz<F>* total) {
    const uint32_t segs = len / seg_len;
    if (t >= (uint64_t)segs * windows) return;
    const uint32_t w = (uint32_t)(t / segs), lo = (uint32_t)(t % segs) * seg_len;
    const Xyzz<F>* b = in + (uint64_t)w * len;
    Xyzz<F> running = Xyzz<F>::identity(), acc = Xyzz<F>::identity();
    // With w0 = 0 the bottom input has weight 0: it joins the running sum only.
    const uint32_t first = w0 ? lo : lo + 1;
    for (uint32_t j = lo + seg_len; j-- > first;) {
        running = Xyzz<F>::add(running, b[j]);
        acc = Xyzz<F>::add(acc, running);
    }
    if (!w0) running = Xyzz<F>::add(running, b[lo]);
    if (flat) {
        if (lo != 0) acc = Xyzz<F>::add(acc, mul_small(running, lo));
    } else if (total) {
        total[t] = running;
    }
    out[t] = acc;
}

// Pass 6c, thread w < windows: r[w] += 2^shift·y[w]. The window sum Σ_j (j + 1)·B_j over
// segments of L = 2^shift buckets is Σ_g A_g + L·Σ_g g·T_g (A_g the segment's acc, T_g its
// running total, lo_g = L·g), and Σ_g g·T_g is the same problem, one level up, over the T_g
// with weights from 0 (w0 = 0; src/msm/pass/reduce.rs solves it with the flat pass): so the reduced sums
// R_0 of the A_g and R_1 of level 1 combine as R_0 + L·R_1.
template <class F>
BL_HD void window_horner_body(Xyzz<F>* r, const Xyzz<F>* y, uint32_t shift, uint32_t windows,
                              uint64_t t) {
    if (t >= windows) return;
    Xyzz<F> p = y[t];
    for (uint32_t k = 0; k < shift; k++) p = Xyzz<F>::dbl(p);
    r[t] = Xyzz<F>::add(r[t], p);
}

// Tree reduction step, thread t = (group, part): out[group·parts + part] = Σ of `per`
// consecutive inputs of the group (groups of `len` inputs; parts = ⌈len / per⌉).
template <class F>
BL_HD void reduce_body(const Xyzz<F>* in, uint32_t groups, uint32_t len, uint32_t per, uint64_t t,
                       Xyzz<F>* out) {
    const uint32_t parts = (len + per - 1) / per;
    if (t >= (uint64_t)groups * parts) return;
    const uint32_t g = (uint32_t)(t / parts), p = (uint32_t)(t % parts);
    const uint32_t first = p * per;
    const uint32_t last = first + per < len ? first + per : len;
    Xyzz<F> acc = Xyzz<F>::identity();
    for (uint32_t j = first; j < last; j++) acc = Xyzz<F>::add(acc, in[(uint64_t)g * len + j]);
    out[t] = acc;
}

// Sum of the bases listed in idx[0..*count), thread t taking `per` of them.
template <class F>
BL_HD void sum_listed_body(const Affine<F>* bases, const uint32_t* idx, const uint32_t* count,
                           uint32_t per, uint64_t t, Xyzz<F>* out) {
    const uint64_t first = t * per;
    const uint32_t n = *count;
    Xyzz<F> acc = Xyzz<F>::identity();
    for (uint64_t j = first; j < first + per && j < n; j++) acc = Xyzz<F>::add_affine(acc, bases[idx[j]]);
    out[t] = acc;
}

}  // namespace msm
}  // namespace bellows

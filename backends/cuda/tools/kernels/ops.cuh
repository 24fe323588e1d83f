// Bellows CUDA test kernels: element-wise operation dispatch shared by the test kernels (testing.cu)
// and the host emulation (emulation.cpp), so both run exactly the same code path per element.
#pragma once

#include "ec/curve.cuh"
#include "variants.cuh"

namespace bellows {

// Field operation codes. Mirrored by `FieldOp` in src/elementwise.rs.
enum FieldOpCode : uint32_t {
    OP_ADD = 0,
    OP_SUB = 1,
    OP_NEG = 2,
    OP_DBL = 3,
    OP_MUL = 4,
    OP_SQR = 5,
    OP_INV = 6,
    OP_TO_MONT = 7,
    OP_FROM_MONT = 8,
    OP_MUL_SUB = 9,  // a·b − (a + b)·(a − b)
};

template <class F>
BL_HD F field_apply(uint32_t op, const F& a, const F& b) {
    switch (op) {
        case OP_ADD: return F::add(a, b);
        case OP_SUB: return F::sub(a, b);
        case OP_NEG: return F::neg(a);
        case OP_DBL: return F::dbl(a);
        case OP_MUL: return F::mul(a, b);
        case OP_SQR: return F::sqr(a);
        case OP_INV: return F::inv(a);
        case OP_TO_MONT: return F::to_mont(a);
        case OP_FROM_MONT: return F::from_mont(a);
        case OP_MUL_SUB: return F::mul_sub(a, b, F::add(a, b), F::sub(a, b));
        default: return F::zero();
    }
}

// Curve operation codes. Mirrored by `CurveOp` in src/elementwise.rs. P and Q arrive in blst's Jacobian
// layout and are converted to XYZZ on the device; A is affine.
enum CurveOpCode : uint32_t {
    OP_ADD_XYZZ = 0,    // P + Q (full XYZZ addition)
    OP_ADD_MIXED = 1,   // P + A (XYZZ + affine)
    OP_DBL_XYZZ = 2,    // 2P
    OP_DBL_AFFINE = 3,  // 2A
    OP_NEG_XYZZ = 4,    // −P
    OP_CONVERT = 5,     // P unchanged (Jacobian → XYZZ → outputs)
    OP_NEG_AFFINE = 6,  // −A (affine negation)
};

// Out-of-line wrappers: the test kernels dispatch over every operation, and inlining all of them
// into one function multiplies the compile time for nothing.
template <class F>
BL_NOINLINE Xyzz<F> op_add(const Xyzz<F>& p, const Xyzz<F>& q) { return Xyzz<F>::add(p, q); }
template <class F>
BL_NOINLINE Xyzz<F> op_add_affine(const Xyzz<F>& p, const Affine<F>& a) {
    return Xyzz<F>::add_affine(p, a);
}
template <class F>
BL_NOINLINE Xyzz<F> op_dbl(const Xyzz<F>& p) { return Xyzz<F>::dbl(p); }
template <class F>
BL_NOINLINE Affine<F> op_to_affine(const Xyzz<F>& p) { return Xyzz<F>::to_affine(p); }
template <class F>
BL_NOINLINE Jacobian<F> op_to_jacobian(const Xyzz<F>& p) { return Xyzz<F>::to_jacobian(p); }

template <class F>
BL_HD Xyzz<F> curve_apply(uint32_t op, const Jacobian<F>& pj, const Jacobian<F>& qj,
                          const Affine<F>& a) {
    typedef Xyzz<F> X;
    X p = X::from_jacobian(pj);
    switch (op) {
        case OP_ADD_XYZZ: return op_add<F>(p, X::from_jacobian(qj));
        case OP_ADD_MIXED: return op_add_affine<F>(p, a);
        case OP_DBL_XYZZ: return op_dbl<F>(p);
        case OP_DBL_AFFINE: return X::dbl_affine_cold(a);
        case OP_NEG_XYZZ: return X::neg(p);
        case OP_CONVERT: return p;
        case OP_NEG_AFFINE: return X::from_affine(Affine<F>::neg(a));
        default: return X::identity();
    }
}

}  // namespace bellows

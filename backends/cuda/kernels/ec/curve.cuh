// Bellows CUDA kernels: short-Weierstrass curve arithmetic (y² = x³ + b, a = 0) for G1 (over Fp)
// and G2 (over Fp2) of BLS12-381.
//
// Coordinates. Accumulators are extended Jacobian "XYZZ" points (X, Y, ZZ, ZZZ) with x = X/ZZ,
// y = Y/ZZZ and ZZ³ = ZZZ²; the identity has ZZ = 0. Inputs to mixed additions are affine points
// in blst's layout, whose identity is the all-zero (x, y). The formulas are those of the
// Explicit-Formulas Database (D. J. Bernstein, T. Lange, https://hyperelliptic.org/EFD/
// g1p/auto-shortw-xyzz.html): "add-2008-s", "madd-2008-s", "dbl-2008-s-1" and "mdbl-2008-s-1"
// (attributed there to Sutherland, 2008). The EFD formulas are
// incomplete: they assume distinct, non-identity, non-opposite inputs. Every function below
// handles the identity, P = Q (falls back to doubling) and P = −Q (gives the identity) exactly.
#pragma once

#include "ff/bls12_381.cuh"

namespace bellows {

template <class F>
struct Affine {
    F x, y;
    BL_HD bool is_identity() const { return x.is_zero() && y.is_zero(); }
    static BL_HD Affine identity() { return Affine{F::zero(), F::zero()}; }
    static BL_HD Affine neg(const Affine& p) { return Affine{p.x, F::neg(p.y)}; }
};

// blst's Jacobian layout (X, Y, Z), x = X/Z², y = Y/Z³, identity Z = 0.
template <class F>
struct Jacobian {
    F x, y, z;
};

template <class F>
struct Xyzz {
    F x, y, zz, zzz;

    static BL_HD Xyzz identity() { return Xyzz{F::zero(), F::zero(), F::zero(), F::zero()}; }
    BL_HD bool is_identity() const { return zz.is_zero(); }

    static BL_HD Xyzz from_affine(const Affine<F>& p) {
        if (p.is_identity()) return identity();
        return Xyzz{p.x, p.y, F::one(), F::one()};
    }

    // (X, Y, Z) → (X, Y, Z², Z³); Z = 0 stays the identity.
    static BL_HD Xyzz from_jacobian(const Jacobian<F>& p) {
        F zz = F::sqr(p.z);
        return Xyzz{p.x, p.y, zz, F::mul(zz, p.z)};
    }

    // (X, Y, ZZ, ZZZ) → (X·ZZ², Y·ZZZ², ZZZ): with Z' = ZZZ, X'/Z'² = X·ZZ²/ZZ³ = X/ZZ and
    // Y'/Z'³ = Y·ZZZ²/ZZZ³ = Y/ZZZ. The identity keeps Z' = 0.
    static BL_HD Jacobian<F> to_jacobian(const Xyzz& p) {
        return Jacobian<F>{F::mul(p.x, F::sqr(p.zz)), F::mul(p.y, F::sqr(p.zzz)), p.zzz};
    }

    // One inversion: I = 1/ZZZ, 1/ZZ = (ZZ·I)² since ZZ³ = ZZZ². The identity maps to (0, 0).
    static BL_HD Affine<F> to_affine(const Xyzz& p) {
        if (p.is_identity()) return Affine<F>::identity();
        F i = F::inv(p.zzz);
        F t = F::mul(p.zz, i);
        return Affine<F>{F::mul(p.x, F::sqr(t)), F::mul(p.y, i)};
    }

    static BL_HD Xyzz neg(const Xyzz& p) { return Xyzz{p.x, F::neg(p.y), p.zz, p.zzz}; }

    // dbl-2008-s-1: U = 2Y, V = U², W = U·V, S = X·V, M = 3X², X3 = M² − 2S,
    // Y3 = M(S − X3) − W·Y, ZZ3 = V·ZZ, ZZZ3 = W·ZZZ. The identity (ZZ = 0) and a point with
    // Y = 0 (order two) both give ZZ3 = 0, the identity, as they should.
    static BL_HD Xyzz dbl(const Xyzz& p) {
        Xyzz d = dbl_unscaled(p.x, p.y);
        return Xyzz{d.x, d.y, F::mul(d.zz, p.zz), F::mul(d.zzz, p.zzz)};
    }

    // mdbl-2008-s-1: doubling of an affine point (ZZ = ZZZ = 1).
    static BL_HD Xyzz dbl_affine(const Affine<F>& q) {
        if (q.is_identity()) return identity();
        return dbl_unscaled(q.x, q.y);
    }

    // The doubling of (X, Y) common to both: (X3, Y3, V, W), which is the double of an affine
    // point; `dbl` scales V and W by the input's ZZ and ZZZ. Inlined: no call in either.
    static BL_HD Xyzz dbl_unscaled(const F& x, const F& y) {
        F u = F::dbl(y);
        F v = F::sqr(u);
        F w = F::mul(u, v);
        F s = F::mul(x, v);
        F x2 = F::sqr(x);
        F m = F::add(F::dbl(x2), x2);
        F x3 = F::sub(F::sqr(m), F::dbl(s));
        F y3 = F::mul_sub(m, F::sub(s, x3), w, y);
        return Xyzz{x3, y3, v, w};
    }

    // The doublings reached from an addition of equal points: rare, so called out of line.
    static BL_NOINLINE Xyzz dbl_cold(const Xyzz& p) { return dbl(p); }
    static BL_NOINLINE Xyzz dbl_affine_cold(const Affine<F>& q) { return dbl_affine(q); }

    // madd-2008-s: P (XYZZ) + Q (affine). U2 = X2·ZZ1, S2 = Y2·ZZZ1, P = U2 − X1, R = S2 − Y1,
    // PP = P², PPP = P·PP, Q = X1·PP, X3 = R² − PPP − 2Q, Y3 = R(Q − X3) − Y1·PPP,
    // ZZ3 = ZZ1·PP, ZZZ3 = ZZZ1·PPP. P = 0 means equal x: a doubling when R = 0, else P = −Q.
    static BL_HD Xyzz add_affine(const Xyzz& p, const Affine<F>& q) {
        if (q.is_identity()) return p;
        if (p.is_identity()) return from_affine(q);
        F u2 = F::mul(q.x, p.zz);
        F s2 = F::mul(q.y, p.zzz);
        F h = F::sub(u2, p.x);
        F r = F::sub(s2, p.y);
        if (h.is_zero()) {
            if (r.is_zero()) return dbl_affine_cold(q);
            return identity();
        }
        F pp = F::sqr(h);
        F ppp = F::mul(h, pp);
        F qq = F::mul(p.x, pp);
        F x3 = F::sub(F::sub(F::sqr(r), ppp), F::dbl(qq));
        F y3 = F::mul_sub(r, F::sub(qq, x3), p.y, ppp);
        return Xyzz{x3, y3, F::mul(p.zz, pp), F::mul(p.zzz, ppp)};
    }

    // add-2008-s: P1 + P2, both XYZZ. U1 = X1·ZZ2, U2 = X2·ZZ1, S1 = Y1·ZZZ2, S2 = Y2·ZZZ1,
    // P = U2 − U1, R = S2 − S1, PP = P², PPP = P·PP, Q = U1·PP, X3 = R² − PPP − 2Q,
    // Y3 = R(Q − X3) − S1·PPP, ZZ3 = ZZ1·ZZ2·PP, ZZZ3 = ZZZ1·ZZZ2·PPP.
    static BL_HD Xyzz add(const Xyzz& p, const Xyzz& q) {
        if (q.is_identity()) return p;
        if (p.is_identity()) return q;
        F u1 = F::mul(p.x, q.zz);
        F u2 = F::mul(q.x, p.zz);
        F s1 = F::mul(p.y, q.zzz);
        F s2 = F::mul(q.y, p.zzz);
        F h = F::sub(u2, u1);
        F r = F::sub(s2, s1);
        if (h.is_zero()) {
            if (r.is_zero()) return dbl_cold(p);
            return identity();
        }
        F pp = F::sqr(h);
        F ppp = F::mul(h, pp);
        F qq = F::mul(u1, pp);
        F x3 = F::sub(F::sub(F::sqr(r), ppp), F::dbl(qq));
        F y3 = F::mul_sub(r, F::sub(qq, x3), s1, ppp);
        return Xyzz{x3, y3, F::mul(F::mul(p.zz, q.zz), pp), F::mul(F::mul(p.zzz, q.zzz), ppp)};
    }
};

typedef Affine<Fp> G1Affine;
typedef Affine<Fp2> G2Affine;
typedef Jacobian<Fp> G1Jacobian;
typedef Jacobian<Fp2> G2Jacobian;
typedef Xyzz<Fp> G1Xyzz;
typedef Xyzz<Fp2> G2Xyzz;

}  // namespace bellows

// Bellows WGSL kernels: Fp2 = Fp[u] / (u² + 1), the field of G2's coordinates.
//
// An element is c0 + c1·u, each coefficient in the Montgomery form of field.wgsl; in memory
// c0's 12 limbs then c1's, as blst's `blst_fp2` (an array of two `blst_fp`). The multiplication
// uses Karatsuba's three products: (a0 + a1u)(b0 + b1u) = (a0b0 − a1b1) + ((a0 + a1)(b0 + b1) −
// a0b0 − a1b1)u; the squaring (a0 + a1)(a0 − a1) + 2a0a1·u.

struct Fp2 {
    c0: Fp,
    c1: Fp,
}

fn fp2_zero() -> Fp2 {
    return Fp2(fp_zero(), fp_zero());
}

fn fp2_one() -> Fp2 {
    return Fp2(fp_one(), fp_zero());
}

fn fp2_is_zero(a: Fp2) -> bool {
    return fp_is_zero(a.c0) && fp_is_zero(a.c1);
}

fn fp2_eq(a: Fp2, b: Fp2) -> bool {
    return fp_eq(a.c0, b.c0) && fp_eq(a.c1, b.c1);
}

fn fp2_add(a: Fp2, b: Fp2) -> Fp2 {
    return Fp2(fp_add(a.c0, b.c0), fp_add(a.c1, b.c1));
}

fn fp2_dbl(a: Fp2) -> Fp2 {
    return Fp2(fp_dbl(a.c0), fp_dbl(a.c1));
}

fn fp2_sub(a: Fp2, b: Fp2) -> Fp2 {
    return Fp2(fp_sub(a.c0, b.c0), fp_sub(a.c1, b.c1));
}

fn fp2_neg(a: Fp2) -> Fp2 {
    return Fp2(fp_neg(a.c0), fp_neg(a.c1));
}

// The three products of Karatsuba's multiplication in one loop: one inlined copy of fp_mul per
// call (see curve.wgsl's `muls`).
fn fp2_mul(a: Fp2, b: Fp2) -> Fp2 {
    var x = array<Fp, 3>(a.c0, a.c1, fp_add(a.c0, a.c1));
    var y = array<Fp, 3>(b.c0, b.c1, fp_add(b.c0, b.c1));
    var v: array<Fp, 3>;
    for (var i = 0u; i < 3u; i++) {
        v[i] = fp_mul(x[i], y[i]);
    }
    return Fp2(fp_sub(v[0], v[1]), fp_sub(fp_sub(v[2], v[0]), v[1]));
}

// (a0 + a1)(a0 − a1) + 2a0a1·u, the two products in one loop.
fn fp2_sqr(a: Fp2) -> Fp2 {
    var x = array<Fp, 2>(fp_add(a.c0, a.c1), a.c0);
    var y = array<Fp, 2>(fp_sub(a.c0, a.c1), a.c1);
    var v: array<Fp, 2>;
    for (var i = 0u; i < 2u; i++) {
        v[i] = fp_mul(x[i], y[i]);
    }
    return Fp2(v[0], fp_dbl(v[1]));
}

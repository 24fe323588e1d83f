// Bellows WGSL kernels: short-Weierstrass arithmetic (y² = x³ + b, a = 0) over a field (template).
//
// Instantiated by the host once per group: `$E` is the function prefix (g1, g2), `$Q` the
// coordinate field's prefix (fp, fp2) and `$K` its type (Fp, Fp2).
//
// Accumulators are extended Jacobian "XYZZ" points (X, Y, ZZ, ZZZ) with x = X/ZZ, y = Y/ZZZ and
// ZZ³ = ZZZ²; the identity has ZZ = 0. Affine inputs are in blst's layout, whose identity is the
// all-zero (x, y). The formulas are those of the Explicit-Formulas Database (D. J. Bernstein,
// T. Lange, https://hyperelliptic.org/EFD/g1p/auto-shortw-xyzz.html): "add-2008-s",
// "madd-2008-s" and "dbl-2008-s-1" (attributed there to Sutherland, 2008). They assume distinct,
// non-identity, non-opposite inputs; every function below also handles the identity, P = Q (a
// doubling) and P = −Q (the identity) exactly, which is what makes the MSM a function of its
// inputs whatever order the buckets are summed in. The same design as the CUDA backend's
// kernels (backends/cuda/kernels/curve.cuh).

struct $EAffine {
    x: $K,
    y: $K,
}

struct $EXyzz {
    x: $K,
    y: $K,
    zz: $K,
    zzz: $K,
}

struct $EJacobian {
    x: $K,
    y: $K,
    z: $K,
}

fn $E_identity() -> $EXyzz {
    return $EXyzz($Q_zero(), $Q_zero(), $Q_zero(), $Q_zero());
}

fn $E_is_identity(p: $EXyzz) -> bool {
    return $Q_is_zero(p.zz);
}

fn $E_affine_is_identity(p: $EAffine) -> bool {
    return $Q_is_zero(p.x) && $Q_is_zero(p.y);
}

fn $E_affine_neg(p: $EAffine) -> $EAffine {
    return $EAffine(p.x, $Q_neg(p.y));
}

fn $E_from_affine(p: $EAffine) -> $EXyzz {
    if ($E_affine_is_identity(p)) {
        return $E_identity();
    }
    return $EXyzz(p.x, p.y, $Q_one(), $Q_one());
}

// Up to four independent products, written as one loop: the formulas below group their
// products into such batches, which keeps the source short; compilers unroll the loop.
fn $E_muls(a: array<$K, 4>, b: array<$K, 4>, k: u32) -> array<$K, 4> {
    var x = a;
    var y = b;
    var r: array<$K, 4>;
    for (var i = 0u; i < k; i++) {
        r[i] = $Q_mul(x[i], y[i]);
    }
    return r;
}

// (X, Y, ZZ, ZZZ) → Jacobian (X·ZZ², Y·ZZZ², ZZZ): with Z' = ZZZ, X'/Z'² = X·ZZ²/ZZ³ = X/ZZ and
// Y'/Z'³ = Y·ZZZ²/ZZZ³ = Y/ZZZ. The identity keeps Z' = 0, blst's Jacobian identity.
fn $E_to_jacobian(p: $EXyzz) -> $EJacobian {
    let z = $Q_zero();
    let sq = $E_muls(array<$K, 4>(p.zz, p.zzz, z, z), array<$K, 4>(p.zz, p.zzz, z, z), 2u);
    let r = $E_muls(array<$K, 4>(p.x, p.y, z, z), array<$K, 4>(sq[0], sq[1], z, z), 2u);
    return $EJacobian(r[0], r[1], p.zzz);
}

// dbl-2008-s-1: U = 2Y, V = U², W = U·V, S = X·V, M = 3X², X3 = M² − 2S, Y3 = M(S − X3) − W·Y,
// ZZ3 = V·ZZ, ZZZ3 = W·ZZZ. The identity and a point with Y = 0 both give ZZ3 = 0.
// Batches: (V, X²), (W, S, M²), (M(S − X3), W·Y, ZZ3, ZZZ3).
fn $E_dbl(p: $EXyzz) -> $EXyzz {
    let z = $Q_zero();
    let u = $Q_dbl(p.y);
    let b1 = $E_muls(array<$K, 4>(u, p.x, z, z), array<$K, 4>(u, p.x, z, z), 2u);
    let v = b1[0];
    let m = $Q_add($Q_dbl(b1[1]), b1[1]);
    let b2 = $E_muls(array<$K, 4>(u, p.x, m, z), array<$K, 4>(v, v, m, z), 3u);
    let w = b2[0];
    let s = b2[1];
    let x3 = $Q_sub(b2[2], $Q_dbl(s));
    let b3 = $E_muls(array<$K, 4>(m, w, v, w), array<$K, 4>($Q_sub(s, x3), p.y, p.zz, p.zzz), 4u);
    return $EXyzz(x3, $Q_sub(b3[0], b3[1]), b3[2], b3[3]);
}

// madd-2008-s: P (XYZZ) + Q (affine). U2 = X2·ZZ1, S2 = Y2·ZZZ1, P = U2 − X1, R = S2 − Y1,
// PP = P², PPP = P·PP, Q = X1·PP, X3 = R² − PPP − 2Q, Y3 = R(Q − X3) − Y1·PPP, ZZ3 = ZZ1·PP,
// ZZZ3 = ZZZ1·PPP. P = 0 means equal x: a doubling when R = 0, else P = −Q.
// Batches: (U2, S2), (PP, R²), (PPP, Q), (R(Q − X3), Y1·PPP, ZZ3, ZZZ3).
fn $E_add_affine(p: $EXyzz, q: $EAffine) -> $EXyzz {
    var out = p;
    if (!$E_affine_is_identity(q)) {
        if ($E_is_identity(p)) {
            out = $E_from_affine(q);
        } else {
            let z = $Q_zero();
            let b1 = $E_muls(array<$K, 4>(q.x, q.y, z, z), array<$K, 4>(p.zz, p.zzz, z, z), 2u);
            let h = $Q_sub(b1[0], p.x);
            let r = $Q_sub(b1[1], p.y);
            if ($Q_is_zero(h)) {
                if ($Q_is_zero(r)) {
                    out = $E_dbl($E_from_affine(q));
                } else {
                    out = $E_identity();
                }
            } else {
                let b2 = $E_muls(array<$K, 4>(h, r, z, z), array<$K, 4>(h, r, z, z), 2u);
                let pp = b2[0];
                let b3 = $E_muls(array<$K, 4>(h, p.x, z, z), array<$K, 4>(pp, pp, z, z), 2u);
                let ppp = b3[0];
                let qq = b3[1];
                let x3 = $Q_sub($Q_sub(b2[1], ppp), $Q_dbl(qq));
                let b4 = $E_muls(array<$K, 4>(r, p.y, p.zz, p.zzz), array<$K, 4>($Q_sub(qq, x3), ppp, pp, ppp), 4u);
                out = $EXyzz(x3, $Q_sub(b4[0], b4[1]), b4[2], b4[3]);
            }
        }
    }
    return out;
}

// add-2008-s: P1 + P2, both XYZZ. U1 = X1·ZZ2, U2 = X2·ZZ1, S1 = Y1·ZZZ2, S2 = Y2·ZZZ1,
// P = U2 − U1, R = S2 − S1, PP = P², PPP = P·PP, Q = U1·PP, X3 = R² − PPP − 2Q,
// Y3 = R(Q − X3) − S1·PPP, ZZ3 = ZZ1·ZZ2·PP, ZZZ3 = ZZZ1·ZZZ2·PPP.
// Batches: (U1, U2, S1, S2), (PP, R², ZZ1·ZZ2, ZZZ1·ZZZ2), (PPP, Q), (R(Q − X3), S1·PPP, ZZ3, ZZZ3).
fn $E_add(p: $EXyzz, q: $EXyzz) -> $EXyzz {
    var out = p;
    if (!$E_is_identity(q)) {
        if ($E_is_identity(p)) {
            out = q;
        } else {
            let z = $Q_zero();
            let b1 = $E_muls(array<$K, 4>(p.x, q.x, p.y, q.y), array<$K, 4>(q.zz, p.zz, q.zzz, p.zzz), 4u);
            let u1 = b1[0];
            let s1 = b1[2];
            let h = $Q_sub(b1[1], u1);
            let r = $Q_sub(b1[3], s1);
            if ($Q_is_zero(h)) {
                if ($Q_is_zero(r)) {
                    out = $E_dbl(p);
                } else {
                    out = $E_identity();
                }
            } else {
                let b2 = $E_muls(array<$K, 4>(h, r, p.zz, p.zzz), array<$K, 4>(h, r, q.zz, q.zzz), 4u);
                let pp = b2[0];
                let b3 = $E_muls(array<$K, 4>(h, u1, z, z), array<$K, 4>(pp, pp, z, z), 2u);
                let ppp = b3[0];
                let qq = b3[1];
                let x3 = $Q_sub($Q_sub(b2[1], ppp), $Q_dbl(qq));
                let b4 = $E_muls(array<$K, 4>(r, s1, b2[2], b2[3]), array<$K, 4>($Q_sub(qq, x3), ppp, pp, ppp), 4u);
                out = $EXyzz(x3, $Q_sub(b4[0], b4[1]), b4[2], b4[3]);
            }
        }
    }
    return out;
}

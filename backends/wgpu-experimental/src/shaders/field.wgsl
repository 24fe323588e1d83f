// Bellows WGSL kernels: a prime field in Montgomery form (template).
//
// Instantiated by the host (src/shader.rs) once per field: `$T` is the type name (Fr, Fp), `$F`
// the function prefix (fr, fp), `$N` the number of 32-bit limbs, `$MOD`, `$ONE` and `$M0` the
// modulus limbs, R mod p and −p⁻¹ mod 2^32.
//
// Representation: N little-endian 32-bit limbs holding x·R mod p with R = 2^(32N), always fully
// reduced (in [0, p)). This is blst's own representation bit for bit (blst keeps the same value,
// with the same R, as N/2 little-endian 64-bit limbs), so host slices of blstrs values are read
// by the kernels as they are, and every result is unique, hence bit-exact with blst's.
//
// Multiplication: Montgomery's reduction (P. L. Montgomery, "Modular multiplication without trial
// division", Math. Comp. 44, 1985), interleaved limb by limb with the schoolbook product in the
// CIOS order of Koç, Acar and Kaliski ("Analyzing and comparing Montgomery multiplication
// algorithms", IEEE Micro 16(3), 1996); limb products from common.wgsl's `mac`.
//
// Compile time shapes the code (measured on Mesa's lavapipe, whose LLVM back end compiles every
// kernel with all calls inlined, in time that grows faster than linearly with its size; see
// docs/wgpu.md): the linear-time operations (add, subtract, negate, compare, reduce) are
// generated in Rust as straight-line code on `let` values, with no array variables, which
// compiles many times faster than loops over array variables; the multiplication's limb
// loops have constant bounds, which compilers unroll into registers.

alias $T = array<u32, $N>;

const $F_MOD_C = $T($MOD);
const $F_ONE_C = $T($ONE);
const $F_M0: u32 = $M0u;

fn $F_zero() -> $T {
    return $T();
}

// The Montgomery form of 1 (R mod p).
fn $F_one() -> $T {
    return $F_ONE_C;
}

// $F_is_zero, $F_eq, $F_reduce_once, $F_add, $F_dbl, $F_sub and $F_neg are generated as
// straight-line code (src/shader.rs, `field_linear`).

// a·b·R⁻¹ mod p (CIOS). The running sum t has N + 2 limbs; with p < 2^(32N − 1), as for both
// BLS12-381 fields, t stays below 2p and the extra limbs are 0 or 1.
fn $F_mul(a: $T, b: $T) -> $T {
    var x = a;
    var y = b;
    var m = $F_MOD_C;
    var t: array<u32, $N + 2>;
    for (var i = 0u; i < $Nu; i++) {
        // t += x · y[i]
        let yi = y[i];
        var c = 0u;
        for (var j = 0u; j < $Nu; j++) {
            let w = mac(x[j], yi, t[j], c);
            t[j] = w.x;
            c = w.y;
        }
        let s = t[$Nu] + c;
        t[$Nu + 1u] = select(0u, 1u, s < c);
        t[$Nu] = s;
        // t = (t + q·p) / 2^32 with q = t[0]·(−p⁻¹) mod 2^32, which zeroes the low limb.
        let q = t[0] * $F_M0;
        var w = mac(q, m[0], t[0], 0u);
        c = w.y;
        for (var j = 1u; j < $Nu; j++) {
            w = mac(q, m[j], t[j], c);
            t[j - 1u] = w.x;
            c = w.y;
        }
        let s2 = t[$Nu] + c;
        t[$Nu - 1u] = s2;
        t[$Nu] = t[$Nu + 1u] + select(0u, 1u, s2 < c);
    }
    var r: $T;
    for (var i = 0u; i < $Nu; i++) {
        r[i] = t[i];
    }
    return $F_reduce_once(r, t[$Nu]);
}

fn $F_sqr(a: $T) -> $T {
    return $F_mul(a, a);
}

// Montgomery form → canonical integer (a·R⁻¹: a Montgomery product with the integer 1).
fn $F_from_mont(a: $T) -> $T {
    var one: $T;
    one[0] = 1u;
    return $F_mul(a, one);
}

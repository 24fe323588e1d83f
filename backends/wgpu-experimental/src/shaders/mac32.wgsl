// Bellows WGSL kernels: the 32 × 32 → 64-bit limb product in portable WGSL.
//
// WGSL has 32-bit integers only (no u64, no high-word multiply), so the 64-bit product of two
// 32-bit limbs is assembled here from 16-bit halves: the low word is the wrapping product `a * b`
// (one multiply), the high word comes from the four 16 × 16 → 32-bit partial products, which
// cannot overflow a u32 (schoolbook multiplication, base 2^16). About 25 instructions per limb
// product where a GPU's native wide multiply-add takes one or two (see mac64.wgsl).

// High word of the 64-bit product a·b.
fn mul_hi(a: u32, b: u32) -> u32 {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    // Bits 16..48 of the product: at most 3·(2^16 − 1) + 2^16 − 1 < 2^18, no overflow.
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
}

// a·b + c + d as (low, high) words; never overflows 64 bits: (2^32 − 1)² + 2·(2^32 − 1) = 2^64 − 1.
fn mac(a: u32, b: u32, c: u32, d: u32) -> vec2<u32> {
    let lo = a * b;
    var hi = mul_hi(a, b);
    let s = lo + c;
    hi += select(0u, 1u, s < lo);
    let t = s + d;
    hi += select(0u, 1u, t < s);
    return vec2<u32>(t, hi);
}


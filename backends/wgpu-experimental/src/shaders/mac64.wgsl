// Bellows WGSL kernels: the 32 × 32 → 64-bit limb product with 64-bit integers.
//
// Used where the adapter offers 64-bit integers in shaders (wgpu's SHADER_INT64: Vulkan's
// shaderInt64, e.g. NVIDIA and AMD GPUs, Mesa's lavapipe) — naga accepts `u64` in WGSL then.
// The product of two zero-extended 32-bit words plus two more words cannot overflow 64 bits
// ((2^32 − 1)² + 2·(2^32 − 1) = 2^64 − 1), and a GPU compiler maps it onto its wide
// multiply-add (NVIDIA: IMAD.WIDE.U32) instead of the four 16-bit partial products of mac32.wgsl.
// Same function, same results: only the instructions differ.

// a·b + c + d as (low, high) words.
fn mac(a: u32, b: u32, c: u32, d: u32) -> vec2<u32> {
    let p = u64(a) * u64(b) + u64(c) + u64(d);
    return vec2<u32>(u32(p), u32(p >> 32u));
}


// Bellows WGSL kernels: what every module shares.
//
// The limb product `mac` comes from one of two files, chosen by the host (src/shader.rs) per
// device: mac32.wgsl (portable WGSL, 32-bit integers only) or mac64.wgsl (64-bit integers, where
// the adapter offers wgpu's SHADER_INT64).

// Threads per workgroup of the one-thread-per-item kernels.
const WG: u32 = 64u;

// The linear index of this thread in a dispatch of (x, y, 1) workgroups of WG threads: the host
// spreads large dispatches over y because a dimension is limited to 65535 workgroups.
fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// Bit reversal of the low `bits` bits of i (bits = 0 leaves 0).
fn bit_reverse(i: u32, bits: u32) -> u32 {
    if (bits == 0u) {
        return 0u;
    }
    return reverseBits(i) >> (32u - bits);
}

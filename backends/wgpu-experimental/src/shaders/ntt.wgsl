// Bellows WGSL kernels: radix-2 NTT stages, bit reversal and the element-wise passes of the
// Groth16 quotient, over Fr (field.wgsl instantiated as `fr`).
//
// A batch of vectors of n = 2^log_n elements lies back to back in `data` (8 words per element).
// Each stage is one dispatch of batch·n/2 threads, one butterfly each:
// - decimation in frequency (Gentleman & Sande, "Fast Fourier transforms — for fun and profit",
//   AFIPS 1966), natural → bit-reversed order, stages m = n/2, n/4, …, 1:
//   (u, v) → (u + v, (u − v)·ω_2m^j);
// - decimation in time (Cooley & Tukey, "An algorithm for the machine calculation of complex
//   Fourier series", Math. Comp. 19, 1965), bit-reversed → natural, stages m = 1, 2, …, n/2:
//   (u, v) → (u + v·ω_2m^j, u − v·ω_2m^j);
// where j is the butterfly's position in its block of 2m and ω_2m^j = ω_n^(j·n/2m) is read from
// the table `tw` of ω_n^0 … ω_n^(n/2 − 1) (ω or ω⁻¹ for the inverse transform).
// From 2^9 up, `dif_block` and `dit_block` run up to 9 stages per pass in workgroup memory
// (see there); the radix-2 stages serve smaller sizes.

struct Params {
    // log2 of the vector size n.
    log_n: u32,
    // Stage: log2 of the half block m (radix-2 stages); first stage of a block pass.
    log_m: u32,
    // Number of threads (items) of the dispatch.
    count: u32,
    // Kernel-specific: bit-reversed positions (mul_powers), stages per block (block passes).
    flag: u32,
    // log2 of the low power table's size (mul_powers, expand_powers).
    log_lo: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> tw: array<u32>;
@group(0) @binding(3) var<storage, read_write> aux: array<u32>;
@group(0) @binding(4) var<storage, read_write> aux2: array<u32>;

fn load_data(i: u32) -> Fr {
    var r: Fr;
    for (var k = 0u; k < 8u; k++) {
        r[k] = data[i * 8u + k];
    }
    return r;
}

fn store_data(i: u32, v: Fr) {
    var x = v;
    for (var k = 0u; k < 8u; k++) {
        data[i * 8u + k] = x[k];
    }
}

fn load_tw(i: u32) -> Fr {
    var r: Fr;
    for (var k = 0u; k < 8u; k++) {
        r[k] = tw[i * 8u + k];
    }
    return r;
}

fn load_aux(i: u32) -> Fr {
    var r: Fr;
    for (var k = 0u; k < 8u; k++) {
        r[k] = aux[i * 8u + k];
    }
    return r;
}

fn load_aux2(i: u32) -> Fr {
    var r: Fr;
    for (var k = 0u; k < 8u; k++) {
        r[k] = aux2[i * 8u + k];
    }
    return r;
}

// Thread t of a radix-2 stage: (first index, second index, twiddle index).
fn butterfly_indices(t: u32) -> vec3<u32> {
    let half_log = P.log_n - 1u;
    let v = t >> half_log;
    let k = t & ((1u << half_log) - 1u);
    let j = k & ((1u << P.log_m) - 1u);
    let block = k >> P.log_m;
    let i0 = (v << P.log_n) + (block << (P.log_m + 1u)) + j;
    return vec3<u32>(i0, i0 + (1u << P.log_m), j << (half_log - P.log_m));
}

@compute @workgroup_size(WG)
fn dif_stage(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= P.count) {
        return;
    }
    let ix = butterfly_indices(t);
    let u = load_data(ix.x);
    let v = load_data(ix.y);
    store_data(ix.x, fr_add(u, v));
    store_data(ix.y, fr_mul(fr_sub(u, v), load_tw(ix.z)));
}

@compute @workgroup_size(WG)
fn dit_stage(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= P.count) {
        return;
    }
    let ix = butterfly_indices(t);
    let u = load_data(ix.x);
    let v = fr_mul(load_data(ix.y), load_tw(ix.z));
    store_data(ix.x, fr_add(u, v));
    store_data(ix.y, fr_sub(u, v));
}

// In-place bit-reversal permutation of every vector: thread i swaps i and bitrev(i) once.
@compute @workgroup_size(WG)
fn bit_reverse_permute(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= P.count) {
        return;
    }
    let mask = (1u << P.log_n) - 1u;
    let i = t & mask;
    let r = bit_reverse(i, P.log_n);
    if (i < r) {
        let base = t - i;
        let a = load_data(base + i);
        let b = load_data(base + r);
        store_data(base + i, b);
        store_data(base + r, a);
    }
}

// The power x^i from the two-level table in `tw`: lo = x^0 … x^(2^L − 1) at 0.., then hi =
// c·x^0, c·x^(2^L), c·x^(2·2^L), … at 2^L.. (c a constant folded into the hi table), so that
// c·x^i = hi[i >> L] · lo[i mod 2^L]: two small tables instead of one of n entries.
fn power(i: u32) -> Fr {
    let lo = i & ((1u << P.log_lo) - 1u);
    let hi = i >> P.log_lo;
    return fr_mul(load_tw((1u << P.log_lo) + hi), load_tw(lo));
}

// data[s] *= c·x^i, where i is the position of storage index s within its vector (i = s, or
// bitrev(s) when flag = 1): coset shifts g^(±i) and the 1/n of inverse transforms.
@compute @workgroup_size(WG)
fn mul_powers(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= P.count) {
        return;
    }
    let s = t & ((1u << P.log_n) - 1u);
    var i = s;
    if (P.flag == 1u) {
        i = bit_reverse(s, P.log_n);
    }
    store_data(t, fr_mul(load_data(t), power(i)));
}

// data[i] = c·x^i for i < count: expands the two-level table into a full one (twiddle tables).
@compute @workgroup_size(WG)
fn expand_powers(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= P.count) {
        return;
    }
    store_data(t, power(t));
}

// data[i] = (data[i]·aux[i] − aux2[i]) · tw[0]: the quotient's pointwise step on the coset,
// tw[0] = 1/Z(g) = 1/(g^n − 1).
@compute @workgroup_size(WG)
fn quotient_pointwise(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= P.count) {
        return;
    }
    let ab = fr_mul(load_data(t), load_aux(t));
    store_data(t, fr_mul(fr_sub(ab, load_aux2(t)), load_tw(0u)));
}

// ---- Passes of several stages in workgroup memory ----
//
// A block of BLOCK = 2^9 elements of one vector whose indices differ only in bits
// [b, b + 9) — i = high·2^(b+9) + t·2^b + low for t < BLOCK — holds every butterfly of the stages
// log_m ∈ [b, b + 9): a workgroup loads one block, runs P.flag such stages on it in workgroup
// memory (one butterfly per thread per stage, barriers between), and stores it back. So a
// transform of 2^log_n needs ⌈log_n / 9⌉ passes over memory instead of log_n (the "four-step" /
// "six-step" idea of Bailey, "FFTs in external or hierarchical memory", 1990, on a GPU's memory
// hierarchy). P.log_m is the lowest stage of the pass, P.log_lo the block's low bit b.

const BLOCK_LOG: u32 = 9u;
const BLOCK: u32 = 512u;
const BLOCK_THREADS: u32 = 256u;

var<workgroup> tile: array<Fr, BLOCK>;

// Global index of element t of block `blk` (blocks numbered over the whole batch).
fn block_index(blk: u32, t: u32) -> u32 {
    let per_vec_log = P.log_n - BLOCK_LOG;
    let v = blk >> per_vec_log;
    let r = blk & ((1u << per_vec_log) - 1u);
    let b = P.log_lo;
    let low = r & ((1u << b) - 1u);
    let high = r >> b;
    return (v << P.log_n) + (high << (b + BLOCK_LOG)) + (t << b) + low;
}

// The butterfly q of stage log_m in a block: local indices (t0, t0 + 2^k) and the twiddle index.
fn block_butterfly(blk: u32, q: u32, log_m: u32) -> vec3<u32> {
    let k = log_m - P.log_lo;
    let t0 = ((q >> k) << (k + 1u)) | (q & ((1u << k) - 1u));
    let r = blk & ((1u << (P.log_n - BLOCK_LOG)) - 1u);
    let low = r & ((1u << P.log_lo) - 1u);
    let j = ((t0 & ((1u << k) - 1u)) << P.log_lo) | low;
    return vec3<u32>(t0, t0 + (1u << k), j << (P.log_n - 1u - log_m));
}

fn block_load(blk: u32, lid: u32) {
    tile[lid] = load_data(block_index(blk, lid));
    tile[lid + BLOCK_THREADS] = load_data(block_index(blk, lid + BLOCK_THREADS));
    workgroupBarrier();
}

fn block_store(blk: u32, lid: u32) {
    workgroupBarrier();
    store_data(block_index(blk, lid), tile[lid]);
    store_data(block_index(blk, lid + BLOCK_THREADS), tile[lid + BLOCK_THREADS]);
}

// Stages log_m = P.log_m + P.flag − 1 down to P.log_m, decimation in frequency.
@compute @workgroup_size(BLOCK_THREADS)
fn dif_block(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_id) lid: vec3<u32>) {
    let blk = wid.x + wid.y * nwg.x;
    block_load(blk, lid.x);
    for (var s = P.flag; s > 0u; s--) {
        let log_m = P.log_m + s - 1u;
        let ix = block_butterfly(blk, lid.x, log_m);
        let u = tile[ix.x];
        let v = tile[ix.y];
        tile[ix.x] = fr_add(u, v);
        tile[ix.y] = fr_mul(fr_sub(u, v), load_tw(ix.z));
        workgroupBarrier();
    }
    block_store(blk, lid.x);
}

// Stages log_m = P.log_m up to P.log_m + P.flag − 1, decimation in time.
@compute @workgroup_size(BLOCK_THREADS)
fn dit_block(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_id) lid: vec3<u32>) {
    let blk = wid.x + wid.y * nwg.x;
    block_load(blk, lid.x);
    for (var s = 0u; s < P.flag; s++) {
        let log_m = P.log_m + s;
        let ix = block_butterfly(blk, lid.x, log_m);
        let u = tile[ix.x];
        let v = fr_mul(tile[ix.y], load_tw(ix.z));
        tile[ix.x] = fr_add(u, v);
        tile[ix.y] = fr_sub(u, v);
        workgroupBarrier();
    }
    block_store(blk, lid.x);
}

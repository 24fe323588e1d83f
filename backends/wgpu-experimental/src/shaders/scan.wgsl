// Bellows WGSL kernels: exclusive prefix sums of u32 arrays (the MSM's bucket offsets).
//
// Two kernels and a recursion on the host (src/msm.rs): `scan_blocks` scans blocks of SCAN_BLOCK
// elements in workgroup memory (each thread sums SCAN_PER elements serially, then the threads'
// sums are scanned by the Hillis–Steele doubling steps, W. D. Hillis and G. L. Steele, "Data
// parallel algorithms", CACM 29(12), 1986) and writes each block's total to `sums`; the host
// scans `sums` the same way (recursively) and `scan_add` adds each block's offset back.

const SCAN_THREADS: u32 = 256u;
const SCAN_PER: u32 = 4u;
const SCAN_BLOCK: u32 = 1024u;

struct Params {
    // Number of elements.
    count: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    pad3: u32,
    pad4: u32,
    pad5: u32,
    pad6: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> sums: array<u32>;

var<workgroup> partial: array<u32, SCAN_THREADS>;

// The block index of a workgroup in a (x, y) dispatch.
fn block_id(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

@compute @workgroup_size(SCAN_THREADS)
fn scan_blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_id) lid: vec3<u32>) {
    let block = block_id(wid, nwg);
    let first = block * SCAN_BLOCK + lid.x * SCAN_PER;
    var v: array<u32, SCAN_PER>;
    var total = 0u;
    for (var k = 0u; k < SCAN_PER; k++) {
        let i = first + k;
        var x = 0u;
        if (i < P.count) {
            x = data[i];
        }
        v[k] = total;
        total += x;
    }
    partial[lid.x] = total;
    workgroupBarrier();
    // Inclusive scan of the threads' totals.
    for (var d = 1u; d < SCAN_THREADS; d <<= 1u) {
        var add = 0u;
        if (lid.x >= d) {
            add = partial[lid.x - d];
        }
        workgroupBarrier();
        partial[lid.x] += add;
        workgroupBarrier();
    }
    let before = partial[lid.x] - total;
    for (var k = 0u; k < SCAN_PER; k++) {
        let i = first + k;
        if (i < P.count) {
            data[i] = before + v[k];
        }
    }
    if (lid.x == SCAN_THREADS - 1u) {
        sums[block] = partial[lid.x];
    }
}

// data[i] += sums[block of i] (the scanned block totals).
@compute @workgroup_size(SCAN_THREADS)
fn scan_add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_id) lid: vec3<u32>) {
    let block = block_id(wid, nwg);
    let add = sums[block];
    for (var k = 0u; k < SCAN_PER; k++) {
        let i = block * SCAN_BLOCK + lid.x * SCAN_PER + k;
        if (i < P.count) {
            data[i] += add;
        }
    }
}

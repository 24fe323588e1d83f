// Bellows WGSL kernels: Pippenger multi-scalar multiplication over resident bases (template,
// instantiated per group: `$G` the group prefix, `$K` the coordinate type, `$W` its words).
//
// Algorithm: N. Pippenger's bucket method ("On the evaluation of powers and related problems",
// FOCS 1976), arranged as the CUDA backend's (backends/cuda/kernels/msm.cuh), as a sort:
// each scalar is cut into windows of c bits, written as signed digits in [−2^(c−1), 2^(c−1)]
// (a digit above 2^(c−1) becomes d − 2^c with a carry into the next window, so a window needs
// 2^(c−1) buckets), each (window, |digit|) pair names a bucket key = w·2^(c−1) + |d| − 1, and
//     MSM = Σ_w 2^(c·w) · Σ_j (j + 1) · B_{w,j},   B_{w,j} = Σ_{i : |d_{i,w}| = j + 1} ±P_i.
// Passes (one dispatch each, driven by src/msm.rs):
//   1. digits (flag 0): every scalar (Montgomery → canonical) counts its non-zero digits into a
//      histogram of keys (atomics);
//   2. the host's prefix sum (scan.wgsl) turns the histogram into each bucket's offset;
//   3. digits (flag 1): every digit writes (point index | sign bit) at its bucket's cursor: a
//      counting sort of all (window, digit) pairs by bucket;
//   4. accumulate: the sorted entries are cut into equal chunks of L, one per thread, so the
//      work is balanced whatever the digit distribution; a run of one bucket wholly inside a
//      chunk is that bucket's sum, a run touching the chunk's ends becomes a head/tail partial;
//   5. fixup: a bucket spanning chunks t0 < t1 is tail[t0] + head[t0 + 1] + … + head[t1];
//   6. window segments: Σ_{j∈seg} (j + 1)·B_j over segments of S buckets, from a running sum
//      plus lo·Σ B_j by double-and-add;
//   7. reduce: the segments of each window added by a tree; 8. to_jacobian.
// The host finishes with Horner's rule over the window sums. Group additions are exact, so the
// order of the entries in a bucket (atomics make it vary) changes no result.

const SIGN_BIT: u32 = 0x80000000u;

struct Params {
    // Number of scalars.
    n: u32,
    // Window bits c.
    c: u32,
    // Number of windows (c · windows ≥ 256).
    windows: u32,
    // Number of bucket keys (windows · 2^(c − 1)).
    keys: u32,
    // Entries per accumulation chunk (L).
    chunk: u32,
    // Accumulation threads (heads at partials[0..threads), tails at partials[threads..]).
    threads: u32,
    // Buckets per window segment (S), segments per window.
    seg_len: u32,
    segs: u32,
    // Reduce: groups, inputs per group, inputs per thread.
    groups: u32,
    len: u32,
    per: u32,
    // Partials read from / written to, in points.
    in_off: u32,
    out_off: u32,
    // Digits: 0 count, 1 scatter.
    flag: u32,
    // Number of items of the dispatch.
    count: u32,
    // Index of the pass's first base within the bound bases.
    base_off: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> scalars: array<u32>;
@group(0) @binding(2) var<storage, read_write> bases: array<u32>;
@group(0) @binding(3) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> entries: array<u32>;
@group(0) @binding(6) var<storage, read_write> buckets: array<u32>;
@group(0) @binding(7) var<storage, read_write> partials: array<u32>;

// Words of one affine point, one XYZZ point, one Jacobian point.
const AFF_WORDS: u32 = 2u * $Wu;
const XYZZ_WORDS: u32 = 4u * $Wu;
const JAC_WORDS: u32 = 3u * $Wu;

fn load_scalar(i: u32) -> Fr {
    var r: Fr;
    for (var k = 0u; k < 8u; k++) {
        r[k] = scalars[i * 8u + k];
    }
    return r;
}

fn load_base(e: u32) -> $GAffine {
    let i = (e & ~SIGN_BIT) + P.base_off;
    let o = i * AFF_WORDS;
    let p = $GAffine(ld_bases(o), ld_bases(o + $Wu));
    if ((e & SIGN_BIT) != 0u) {
        return $G_affine_neg(p);
    }
    return p;
}

fn load_bucket(i: u32) -> $GXyzz {
    let o = i * XYZZ_WORDS;
    return $GXyzz(ld_buckets(o), ld_buckets(o + $Wu), ld_buckets(o + 2u * $Wu), ld_buckets(o + 3u * $Wu));
}

fn store_bucket(i: u32, p: $GXyzz) {
    let o = i * XYZZ_WORDS;
    st_buckets(o, p.x);
    st_buckets(o + $Wu, p.y);
    st_buckets(o + 2u * $Wu, p.zz);
    st_buckets(o + 3u * $Wu, p.zzz);
}

fn load_partial(i: u32) -> $GXyzz {
    let o = i * XYZZ_WORDS;
    return $GXyzz(ld_partials(o), ld_partials(o + $Wu), ld_partials(o + 2u * $Wu), ld_partials(o + 3u * $Wu));
}

fn store_partial(i: u32, p: $GXyzz) {
    let o = i * XYZZ_WORDS;
    st_partials(o, p.x);
    st_partials(o + $Wu, p.y);
    st_partials(o + 2u * $Wu, p.zz);
    st_partials(o + 3u * $Wu, p.zzz);
}

// Bits [pos, pos + c) of a canonical scalar (8 little-endian limbs), c ≤ 16; bits past 255 are 0.
fn window_bits(k: Fr, pos: u32, c: u32) -> u32 {
    var x = k;
    let limb = pos >> 5u;
    let shift = pos & 31u;
    if (limb >= 8u) {
        return 0u;
    }
    var v = x[limb] >> shift;
    if (shift != 0u && limb + 1u < 8u) {
        v |= x[limb + 1u] << (32u - shift);
    }
    return v & ((1u << c) - 1u);
}

// Passes 1 and 3: count (flag 0) or scatter (flag 1) the signed digits of scalar i.
@compute @workgroup_size(WG)
fn digits(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= P.n) {
        return;
    }
    let k = fr_from_mont(load_scalar(i));
    if (fr_is_zero(k)) {
        return;
    }
    let half = 1u << (P.c - 1u);
    let full = 1u << P.c;
    var carry = 0u;
    for (var w = 0u; w < P.windows; w++) {
        let d = window_bits(k, w * P.c, P.c) + carry;
        var mag = d;
        var sign = 0u;
        carry = 0u;
        if (d > half) {
            mag = full - d;
            sign = SIGN_BIT;
            carry = 1u;
        }
        if (mag != 0u) {
            let key = w * half + mag - 1u;
            let pos = atomicAdd(&counts[key], 1u);
            if (P.flag == 1u) {
                entries[pos] = i | sign;
            }
        }
    }
}

// The largest key whose offset is ≤ pos, over offsets[0..=keys] (offsets[keys] = total > pos).
fn find_key(pos: u32) -> u32 {
    var lo = 0u;
    var hi = P.keys;
    while (hi - lo > 1u) {
        let mid = lo + ((hi - lo) >> 1u);
        if (offsets[mid] <= pos) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Pass 4, thread t: entries [t·L, (t + 1)·L), one mixed addition per entry in one flat loop.
@compute @workgroup_size(WG)
fn accumulate(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    let total = offsets[P.keys];
    if (t >= P.threads || t * P.chunk >= total) {
        return;
    }
    let start = t * P.chunk;
    let end = min(start + P.chunk, total);
    var key = find_key(start);
    var b0 = offsets[key];
    var b1 = offsets[key + 1u];
    var run_start = start;
    var acc = $G_identity();
    for (var j = start; j < end; j++) {
        if (j == b1) {
            // Bucket `key` ends here: complete inside the chunk, its sum; else a head partial.
            if (b0 >= start) {
                store_bucket(key, acc);
            } else {
                store_partial(t, acc);
            }
            loop {
                key += 1u;
                b0 = b1;
                b1 = offsets[key + 1u];
                if (b1 > j) {
                    break;
                }
            }
            run_start = j;
            acc = $G_identity();
        }
        acc = $G_add_affine(acc, load_base(entries[j]));
    }
    if (b0 >= start && b1 <= end) {
        store_bucket(key, acc);
    } else {
        if (run_start == start) {
            store_partial(t, acc);
        }
        store_partial(P.threads + t, acc);
    }
}

// Pass 5, thread = key: a bucket spanning chunks t0 < t1 is tail[t0] + head[t0 + 1] + … + head[t1].
// Spans of more than FIXUP_SERIAL chunks (a bucket holding a large share of all digits, as equal
// scalars or a top window of carries give) are listed for `fixup_big`: the list's length is
// counts[keys + 1], its entries counts[keys + 2 …] (the cursors of the scatter pass are dead by
// now). A loop of thousands of additions would also trip the loop limiter of Mesa's lavapipe
// (65535 iterations of all loops nested in one outermost loop, about 300 additions), which ends
// such a loop early without a word.
const FIXUP_SERIAL: u32 = 32u;

@compute @workgroup_size(WG)
fn fixup(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let key = linear_id(gid, nwg);
    if (key >= P.keys) {
        return;
    }
    let b0 = offsets[key];
    let b1 = offsets[key + 1u];
    if (b0 == b1) {
        return;
    }
    let t0 = b0 / P.chunk;
    let t1 = (b1 - 1u) / P.chunk;
    if (t0 == t1) {
        return;
    }
    if (t1 - t0 > FIXUP_SERIAL) {
        let at = atomicAdd(&counts[P.keys + 1u], 1u);
        atomicStore(&counts[P.keys + 2u + at], key);
        return;
    }
    var acc = load_partial(P.threads + t0);
    for (var t = t0 + 1u; t <= t1; t++) {
        acc = $G_add(acc, load_partial(t));
    }
    store_bucket(key, acc);
}

// Pass 5b: the listed buckets, one workgroup each (workgroup g takes list entries g, g + G, …):
// each of the FIXUP_THREADS threads sums a strided share of the span's heads (thread 0 starts
// from the tail of the first chunk), then a tree in workgroup memory adds the threads' sums.
const FIXUP_THREADS: u32 = $FIXUP_THREADSu;
var<workgroup> fixup_acc: array<$GXyzz, FIXUP_THREADS>;
var<workgroup> big_total: u32;

@compute @workgroup_size(FIXUP_THREADS)
fn fixup_big(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_id) lid: vec3<u32>) {
    let groups = nwg.x * nwg.y;
    if (lid.x == 0u) {
        big_total = atomicLoad(&counts[P.keys + 1u]);
    }
    let total = workgroupUniformLoad(&big_total);
    for (var g = wid.x + wid.y * nwg.x; g < total; g += groups) {
        let key = atomicLoad(&counts[P.keys + 2u + g]);
        let t0 = offsets[key] / P.chunk;
        let t1 = (offsets[key + 1u] - 1u) / P.chunk;
        var acc = $G_identity();
        let first = t0 + 1u + lid.x;
        if (lid.x == 0u) {
            acc = load_partial(P.threads + t0);
        }
        for (var t = first; t <= t1; t += FIXUP_THREADS) {
            acc = $G_add(acc, load_partial(t));
        }
        fixup_acc[lid.x] = acc;
        workgroupBarrier();
        for (var width = FIXUP_THREADS / 2u; width > 0u; width /= 2u) {
            if (lid.x < width) {
                fixup_acc[lid.x] = $G_add(fixup_acc[lid.x], fixup_acc[lid.x + width]);
            }
            workgroupBarrier();
        }
        if (lid.x == 0u) {
            store_bucket(key, fixup_acc[0]);
        }
        workgroupBarrier();
    }
}

// Pass 6, thread t = (window, segment): Σ_{j ∈ segment} (j + 1)·B_{w,j} into partials[out_off + t].
@compute @workgroup_size(WG)
fn window_segments(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= P.segs * P.windows) {
        return;
    }
    let half = 1u << (P.c - 1u);
    let w = t / P.segs;
    let lo = (t % P.segs) * P.seg_len;
    let base = w * half;
    // One loop, one call of the addition (one inlined copy of the formulas; see curve.wgsl):
    // steps [0, 2S): from the top bucket down, alternately running += B_j and acc += running,
    // so that acc = Σ (j − lo + 1)·B_j; the weight of bucket j is j + 1, so lo·running is
    // missing: steps [2S, 2S + 2·top) compute m = lo·running by double-and-add from the top bit
    // of lo, and the last step adds m to acc.
    var running = $G_identity();
    var acc = $G_identity();
    var m = $G_identity();
    let steps_a = 2u * P.seg_len;
    var top = 0u;
    var steps = steps_a;
    if (lo != 0u) {
        top = 31u - countLeadingZeros(lo);
        steps = steps_a + 2u * top + 1u;
    }
    for (var s = 0u; s < steps; s++) {
        var x = acc;
        var y = running;
        // 0: running, 1: acc, 2: m, 3: nothing.
        var dest = 1u;
        if (s < steps_a) {
            if ((s & 1u) == 0u) {
                x = running;
                y = load_bucket(base + lo + P.seg_len - 1u - s / 2u);
                dest = 0u;
            }
        } else {
            if (s == steps_a) {
                m = running;
            }
            let u = s - steps_a;
            if (u == 2u * top) {
                y = m;
            } else {
                x = m;
                dest = 2u;
                if ((u & 1u) == 0u) {
                    y = m;
                } else if (((lo >> (top - 1u - u / 2u)) & 1u) == 0u) {
                    dest = 3u;
                }
            }
        }
        if (dest != 3u) {
            let z = $G_add(x, y);
            if (dest == 0u) {
                running = z;
            } else if (dest == 1u) {
                acc = z;
            } else {
                m = z;
            }
        }
    }
    store_partial(P.out_off + t, acc);
}

// Pass 7, thread t = (group, part): partials[out_off + t] = Σ of `per` consecutive inputs of the
// group (groups of `len` inputs at in_off; parts = ⌈len / per⌉).
@compute @workgroup_size(WG)
fn reduce(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    let parts = (P.len + P.per - 1u) / P.per;
    if (t >= P.groups * parts) {
        return;
    }
    let g = t / parts;
    let first = (t % parts) * P.per;
    let last = min(first + P.per, P.len);
    var acc = $G_identity();
    for (var j = first; j < last; j++) {
        acc = $G_add(acc, load_partial(P.in_off + g * P.len + j));
    }
    store_partial(P.out_off + t, acc);
}

// Pass 8, thread = window: the window sums as Jacobian points, packed at word
// out_off · XYZZ_WORDS of `partials`.
@compute @workgroup_size(WG)
fn to_jacobian(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg);
    if (t >= P.count) {
        return;
    }
    let j = $G_to_jacobian(load_partial(P.in_off + t));
    let o = P.out_off * XYZZ_WORDS + t * JAC_WORDS;
    st_partials(o, j.x);
    st_partials(o + $Wu, j.y);
    st_partials(o + 2u * $Wu, j.z);
}

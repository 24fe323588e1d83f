// Bellows WGSL kernels: element-wise field and curve operations, one item per thread, for the
// tests that compare the kernels' arithmetic with blst (template: `$G`, `$K`, `$Q`, `$W` as in
// msm.wgsl). Not used by the backend's operations.

struct Params {
    // Number of items.
    count: u32,
    // Operation (see each kernel).
    op: u32,
    // Unused.
    k: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    pad3: u32,
    pad4: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> ina: array<u32>;
@group(0) @binding(2) var<storage, read_write> inb: array<u32>;
@group(0) @binding(3) var<storage, read_write> outp: array<u32>;

fn fr_at(a: bool, i: u32) -> Fr {
    var r: Fr;
    for (var k = 0u; k < 8u; k++) {
        if (a) {
            r[k] = ina[i * 8u + k];
        } else {
            r[k] = inb[i * 8u + k];
        }
    }
    return r;
}

fn fp_at(a: bool, o: u32) -> Fp {
    var r: Fp;
    for (var k = 0u; k < 12u; k++) {
        if (a) {
            r[k] = ina[o + k];
        } else {
            r[k] = inb[o + k];
        }
    }
    return r;
}

fn put_fr(i: u32, v: Fr) {
    var x = v;
    for (var k = 0u; k < 8u; k++) {
        outp[i * 8u + k] = x[k];
    }
}

fn put_fp(o: u32, v: Fp) {
    var x = v;
    for (var k = 0u; k < 12u; k++) {
        outp[o + k] = x[k];
    }
}

// op: 0 a + b, 1 a − b, 2 a·b, 3 −a, 4 a² , 5 from Montgomery form (canonical a).
@compute @workgroup_size(WG)
fn fr_ops(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= P.count) {
        return;
    }
    let a = fr_at(true, i);
    let b = fr_at(false, i);
    var r: Fr;
    switch P.op {
        case 0u: { r = fr_add(a, b); }
        case 1u: { r = fr_sub(a, b); }
        case 2u: { r = fr_mul(a, b); }
        case 3u: { r = fr_neg(a); }
        case 4u: { r = fr_sqr(a); }
        default: { r = fr_from_mont(a); }
    }
    put_fr(i, r);
}

// The same operations over Fp.
@compute @workgroup_size(WG)
fn fp_ops(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= P.count) {
        return;
    }
    let a = fp_at(true, i * 12u);
    let b = fp_at(false, i * 12u);
    var r: Fp;
    switch P.op {
        case 0u: { r = fp_add(a, b); }
        case 1u: { r = fp_sub(a, b); }
        case 2u: { r = fp_mul(a, b); }
        case 3u: { r = fp_neg(a); }
        case 4u: { r = fp_sqr(a); }
        default: { r = fp_from_mont(a); }
    }
    put_fp(i * 12u, r);
}

fn coord_at(a: bool, o: u32) -> $K {
    return ld_coord(a, o);
}

// XYZZ point i of `ina` (a = true) or `inb`.
fn xyzz_at(a: bool, i: u32) -> $GXyzz {
    let o = i * 4u * $Wu;
    return $GXyzz(coord_at(a, o), coord_at(a, o + $Wu), coord_at(a, o + 2u * $Wu), coord_at(a, o + 3u * $Wu));
}

// Affine point i of `inb`.
fn affine_at(i: u32) -> $GAffine {
    let o = i * 2u * $Wu;
    return $GAffine(coord_at(false, o), coord_at(false, o + $Wu));
}

fn put_point(i: u32, p: $GXyzz) {
    let j = $G_to_jacobian(p);
    let o = i * 3u * $Wu;
    st_coord(o, j.x);
    st_coord(o + $Wu, j.y);
    st_coord(o + 2u * $Wu, j.z);
}

// Curve operations, one kernel each (so that each inlines only its own formulas), on XYZZ
// points p = ina[i] and XYZZ q = inb[i] (or affine q for madd), written as Jacobian points.

// p + q, q affine (madd-2008-s).
@compute @workgroup_size(WG)
fn curve_madd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i < P.count) {
        put_point(i, $G_add_affine(xyzz_at(true, i), affine_at(i)));
    }
}

// p + q (add-2008-s).
@compute @workgroup_size(WG)
fn curve_add(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i < P.count) {
        put_point(i, $G_add(xyzz_at(true, i), xyzz_at(false, i)));
    }
}

// 2p (dbl-2008-s-1).
@compute @workgroup_size(WG)
fn curve_dbl(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i < P.count) {
        put_point(i, $G_dbl(xyzz_at(true, i)));
    }
}

//! WGSL sources: our kernels in `src/shaders/`, assembled into modules.
//!
//! WGSL has no generics, so the field (`field.wgsl`) and curve (`curve.wgsl`) code is written once
//! as a template with `$`-placeholders and instantiated here per field (Fr, Fp) and per group
//! (G1 over Fp, G2 over Fp2), with the constants of each field computed from its modulus
//! ([`FieldConsts`]). A module is the concatenation of the pieces one set of kernels needs.

use bellows_backend_api::layout::{Fp, Fr};

const COMMON: &str = include_str!("shaders/common.wgsl");
const MAC32: &str = include_str!("shaders/mac32.wgsl");
const MAC64: &str = include_str!("shaders/mac64.wgsl");
const FIELD: &str = include_str!("shaders/field.wgsl");
const FP2: &str = include_str!("shaders/fp2.wgsl");
const CURVE: &str = include_str!("shaders/curve.wgsl");
const NTT: &str = include_str!("shaders/ntt.wgsl");
const SCAN: &str = include_str!("shaders/scan.wgsl");
const MSM: &str = include_str!("shaders/msm.wgsl");
const TESTING: &str = include_str!("shaders/testing.wgsl");

/// The constants a Montgomery field needs in the kernels, as 32-bit limbs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldConsts {
    /// The modulus p, little-endian.
    pub modulus: Vec<u32>,
    /// R mod p with R = 2^(32·limbs): the Montgomery form of 1.
    pub one: Vec<u32>,
    /// −p⁻¹ mod 2^32.
    pub m0: u32,
}

/// Little-endian u64 limbs as twice as many little-endian u32 limbs.
pub fn u32_limbs(x: &[u64]) -> Vec<u32> {
    x.iter()
        .flat_map(|&l| [l as u32, (l >> 32) as u32])
        .collect()
}

impl FieldConsts {
    /// The constants of the field with modulus `p` (odd, little-endian u64 limbs), computed:
    /// R mod p by doubling 1 modulo p 64·limbs times, −p⁻¹ mod 2^32 by Newton's iteration
    /// x ← x(2 − px), which doubles the number of correct low bits at each step.
    pub fn from_modulus(p: &[u64]) -> Self {
        let modulus = u32_limbs(p);
        let mut r = vec![0u32; modulus.len()];
        r[0] = 1;
        for _ in 0..32 * modulus.len() {
            r = double_mod(&r, &modulus);
        }
        let p0 = modulus[0];
        let mut inv = 1u32; // correct to 1 bit (p is odd)
        for _ in 0..5 {
            inv = inv.wrapping_mul(2u32.wrapping_sub(p0.wrapping_mul(inv)));
        }
        Self {
            modulus,
            one: r,
            m0: inv.wrapping_neg(),
        }
    }

    /// Fr of BLS12-381.
    pub fn fr() -> Self {
        Self::from_modulus(&Fr::MODULUS)
    }

    /// Fp of BLS12-381.
    pub fn fp() -> Self {
        Self::from_modulus(&Fp::MODULUS)
    }
}

/// 2x mod m for x < m (little-endian u32 limbs).
fn double_mod(x: &[u32], m: &[u32]) -> Vec<u32> {
    let mut d = Vec::with_capacity(x.len());
    let mut carry = 0u32;
    for &l in x {
        d.push((l << 1) | carry);
        carry = l >> 31;
    }
    // Subtract m when 2x ≥ m.
    let mut diff = Vec::with_capacity(x.len());
    let mut borrow = 0u64;
    for (a, b) in d.iter().zip(m) {
        let t = (*a as u64).wrapping_sub(*b as u64).wrapping_sub(borrow);
        diff.push(t as u32);
        borrow = (t >> 63) & 1;
    }
    if carry == 1 || borrow == 0 {
        diff
    } else {
        d
    }
}

fn wgsl_list(limbs: &[u32]) -> String {
    limbs
        .iter()
        .map(|l| format!("0x{l:08x}u"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Straight-line code for a carry (or borrow) chain over `n` limbs: `limb(i, carry_in)` for each
/// limb, where `carry_in` is `0u` for the lowest limb and `{carry}{i − 1}` (the carry variable the
/// limb below defined) above it.
fn limb_chain(n: usize, carry: &str, limb: impl Fn(usize, &str) -> String) -> String {
    (0..n)
        .map(|i| {
            let carry_in = if i == 0 {
                "0u".to_string()
            } else {
                format!("{carry}{}", i - 1)
            };
            limb(i, &carry_in)
        })
        .collect()
}

/// The linear-time operations of a field as straight-line WGSL on `let` values (no loops, no
/// array variables): `P_is_zero`, `P_eq`, `P_reduce_once`, `P_add`, `P_dbl`, `P_sub`, `P_neg`
/// for prefix P and type `ty`. Branch-free: conditional corrections are selected limb by limb.
pub fn field_linear(ty: &str, p: &str, c: &FieldConsts) -> String {
    let n = c.modulus.len();
    let m = |i: usize| format!("0x{:08x}u", c.modulus[i]);
    let join = |f: &dyn Fn(usize) -> String, sep: &str| (0..n).map(f).collect::<Vec<_>>().join(sep);
    let mut s = String::new();
    s += &format!(
        "fn {p}_is_zero(a: {ty}) -> bool {{\n    return ({}) == 0u;\n}}\n\n",
        join(&|i| format!("a[{i}]"), " | ")
    );
    s += &format!(
        "fn {p}_eq(a: {ty}, b: {ty}) -> bool {{\n    return ({}) == 0u;\n}}\n\n",
        join(&|i| format!("(a[{i}] ^ b[{i}])"), " | ")
    );
    // r − p when hi·2^(32N) + r ≥ p, else r.
    s += &format!("// r − p when hi·2^(32N) + r ≥ p, else r (requires hi·2^(32N) + r < 2p).\nfn {p}_reduce_once(r: {ty}, hi: u32) -> {ty} {{\n");
    s += &limb_chain(n, "b", |i, bin| {
        format!(
            "    let e{i} = r[{i}] - {mi};\n    let d{i} = e{i} - {bin};\n    let b{i} = select(0u, 1u, r[{i}] < {mi}) + select(0u, 1u, e{i} < {bin});\n",
            mi = m(i)
        )
    });
    s += &format!(
        "    let take = hi != 0u || b{} == 0u;\n    return {ty}({});\n}}\n\n",
        n - 1,
        join(&|i| format!("select(r[{i}], d{i}, take)"), ", ")
    );
    s += &format!("fn {p}_add(a: {ty}, b: {ty}) -> {ty} {{\n");
    s += &limb_chain(n, "c", |i, cin| {
        format!(
            "    let s{i} = a[{i}] + b[{i}];\n    let r{i} = s{i} + {cin};\n    let c{i} = select(0u, 1u, s{i} < a[{i}]) + select(0u, 1u, r{i} < s{i});\n"
        )
    });
    s += &format!(
        "    return {p}_reduce_once({ty}({}), c{});\n}}\n\n",
        join(&|i| format!("r{i}"), ", "),
        n - 1
    );
    s += &format!("fn {p}_dbl(a: {ty}) -> {ty} {{\n    return {p}_add(a, a);\n}}\n\n");
    // a − b, plus p (masked in) when that borrowed.
    s += &format!("// a − b, plus p (masked in) when that borrowed.\nfn {p}_sub(a: {ty}, b: {ty}) -> {ty} {{\n");
    s += &limb_chain(n, "b", |i, bin| {
        format!(
            "    let e{i} = a[{i}] - b[{i}];\n    let d{i} = e{i} - {bin};\n    let b{i} = select(0u, 1u, a[{i}] < b[{i}]) + select(0u, 1u, e{i} < {bin});\n"
        )
    });
    s += &format!("    let mask = 0u - b{};\n", n - 1);
    s += &limb_chain(n, "c", |i, cin| {
        format!(
            "    let m{i} = {mi} & mask;\n    let s{i} = d{i} + m{i};\n    let r{i} = s{i} + {cin};\n    let c{i} = select(0u, 1u, s{i} < m{i}) + select(0u, 1u, r{i} < s{i});\n",
            mi = m(i)
        )
    });
    s += &format!(
        "    return {ty}({});\n}}\n\n",
        join(&|i| format!("r{i}"), ", ")
    );
    // p − a, 0 for 0.
    s += &format!(
        "// p − a; 0 for 0 (p masked out).\nfn {p}_neg(a: {ty}) -> {ty} {{\n    let mask = select(0xffffffffu, 0u, {p}_is_zero(a));\n"
    );
    s += &limb_chain(n, "b", |i, bin| {
        format!(
            "    let m{i} = {mi} & mask;\n    let e{i} = m{i} - a[{i}];\n    let d{i} = e{i} - {bin};\n    let b{i} = select(0u, 1u, m{i} < a[{i}]) + select(0u, 1u, e{i} < {bin});\n",
            mi = m(i)
        )
    });
    s += &format!(
        "    return {ty}({});\n}}\n\n",
        join(&|i| format!("d{i}"), ", ")
    );
    s
}

/// `field.wgsl` instantiated as type `ty` with function prefix `prefix`, with its
/// [`field_linear`] operations.
pub fn field(ty: &str, prefix: &str, c: &FieldConsts) -> String {
    field_template(ty, prefix, c) + &field_linear(ty, prefix, c)
}

fn field_template(ty: &str, prefix: &str, c: &FieldConsts) -> String {
    FIELD
        .replace("$MOD", &wgsl_list(&c.modulus))
        .replace("$ONE", &wgsl_list(&c.one))
        .replace("$M0", &format!("0x{:08x}", c.m0))
        .replace("$N", &c.modulus.len().to_string())
        .replace("$T", ty)
        .replace("$F", prefix)
}

/// `field.wgsl` as [`field`] makes it, with the multiplication as straight-line code
/// ([`field_mul_straight`]) instead of the template's limb loops.
pub fn field_straight(ty: &str, prefix: &str, c: &FieldConsts) -> String {
    let t = field_template(ty, prefix, c);
    let head = format!("fn {prefix}_mul(");
    let next = format!("fn {prefix}_sqr(");
    match (t.find(&head), t.find(&next)) {
        (Some(a), Some(b)) if a < b => {
            t[..a].to_string()
                + &field_mul_straight(ty, prefix, c)
                + "\n"
                + &t[b..]
                + &field_linear(ty, prefix, c)
        }
        _ => unreachable!("field.wgsl defines {head}…) before {next}…)"),
    }
}

/// `P_mul` as straight-line WGSL (MSM option `msm-arith=straight`): the same CIOS steps as
/// field.wgsl's loops, in the same order (so the same results), with every limb index a constant
/// and the running sum in scalar variables — no array indexed by a loop variable, which a
/// compiler that does not unroll the loops must keep in (slow, per-thread) local memory. Longer
/// text (about 300 limb products for Fp), which costs software adapters compile time.
pub fn field_mul_straight(ty: &str, p: &str, c: &FieldConsts) -> String {
    let n = c.modulus.len();
    let mut s = format!(
        "// a·b·R⁻¹ mod p: CIOS as in field.wgsl, straight-line (src/shader.rs, field_mul_straight).\n\
         fn {p}_mul(a: {ty}, b: {ty}) -> {ty} {{\n"
    );
    for j in 0..n + 2 {
        s += &format!("    var t{j} = 0u;\n");
    }
    s += "    var c = 0u;\n    var w = vec2<u32>(0u, 0u);\n    var q = 0u;\n    var s0 = 0u;\n";
    for i in 0..n {
        s += "    c = 0u;\n";
        for j in 0..n {
            s += &format!("    w = mac(a[{j}], b[{i}], t{j}, c); t{j} = w.x; c = w.y;\n");
        }
        s += &format!(
            "    s0 = t{n} + c; t{n1} = select(0u, 1u, s0 < c); t{n} = s0;\n    q = t0 * 0x{m0:08x}u;\n    \
             w = mac(q, 0x{p0:08x}u, t0, 0u); c = w.y;\n",
            n1 = n + 1,
            m0 = c.m0,
            p0 = c.modulus[0]
        );
        for j in 1..n {
            s += &format!(
                "    w = mac(q, 0x{pj:08x}u, t{j}, c); t{jm} = w.x; c = w.y;\n",
                pj = c.modulus[j],
                jm = j - 1
            );
        }
        s += &format!(
            "    s0 = t{n} + c; t{nm} = s0; t{n} = t{n1} + select(0u, 1u, s0 < c);\n",
            nm = n - 1,
            n1 = n + 1
        );
    }
    let limbs: Vec<String> = (0..n).map(|j| format!("t{j}")).collect();
    s += &format!(
        "    return {p}_reduce_once({ty}({}), t{n});\n}}\n",
        limbs.join(", ")
    );
    s
}

/// curve.wgsl's batches of products (`E_muls`) with constant indices instead of a loop over
/// array variables (MSM option `msm-arith=straight`).
fn curve_straight(text: String, prefix: &str, field_prefix: &str, field_ty: &str) -> String {
    let looped = format!(
        "fn {prefix}_muls(a: array<{field_ty}, 4>, b: array<{field_ty}, 4>, k: u32) -> array<{field_ty}, 4> {{\n    \
         var x = a;\n    var y = b;\n    var r: array<{field_ty}, 4>;\n    for (var i = 0u; i < k; i++) {{\n        \
         r[i] = {field_prefix}_mul(x[i], y[i]);\n    }}\n    return r;\n}}\n"
    );
    let straight = format!(
        "fn {prefix}_muls(a: array<{field_ty}, 4>, b: array<{field_ty}, 4>, k: u32) -> array<{field_ty}, 4> {{\n    \
         var r: array<{field_ty}, 4>;\n    r[0] = {field_prefix}_mul(a[0], b[0]);\n    \
         r[1] = {field_prefix}_mul(a[1], b[1]);\n    if (k > 2u) {{\n        r[2] = {field_prefix}_mul(a[2], b[2]);\n    }}\n    \
         if (k > 3u) {{\n        r[3] = {field_prefix}_mul(a[3], b[3]);\n    }}\n    return r;\n}}\n"
    );
    assert!(text.contains(&looped), "curve.wgsl's {prefix}_muls changed");
    text.replacen(&looped, &straight, 1)
}

/// `curve.wgsl` instantiated for group `prefix` over the field `field_prefix` of type
/// `field_ty`.
pub fn curve(prefix: &str, field_prefix: &str, field_ty: &str) -> String {
    CURVE
        .replace("$E", prefix)
        .replace("$Q", field_prefix)
        .replace("$K", field_ty)
}

/// Which group a group-generic module is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupKind {
    /// G1, coordinates in Fp (12 words each).
    G1,
    /// G2, coordinates in Fp2 (24 words each).
    G2,
}

impl GroupKind {
    /// The function prefix of the group's curve code.
    pub fn prefix(self) -> &'static str {
        match self {
            GroupKind::G1 => "g1",
            GroupKind::G2 => "g2",
        }
    }
    /// 32-bit words of one coordinate.
    pub fn coord_words(self) -> usize {
        match self {
            GroupKind::G1 => 12,
            GroupKind::G2 => 24,
        }
    }
}

/// What every module shares, with the limb product `mac` of 64-bit integers (`wide`: the device
/// was opened with wgpu's `SHADER_INT64`) or of 16-bit halves (portable WGSL).
pub fn common(wide: bool) -> String {
    [COMMON, if wide { MAC64 } else { MAC32 }].concat()
}

/// Fields and curve code a group module needs: Fr (digits), Fp, Fp2 for G2, the curve
/// (`straight`: multiplications and product batches as straight-line code).
fn group_arith(g: GroupKind, wide: bool, straight: bool) -> String {
    let mut s = common(wide);
    let f = if straight { field_straight } else { field };
    s.push_str(&f("Fr", "fr", &FieldConsts::fr()));
    s.push_str(&f("Fp", "fp", &FieldConsts::fp()));
    let (prefix, fp, ft) = match g {
        GroupKind::G1 => ("g1", "fp", "Fp"),
        GroupKind::G2 => {
            s.push_str(FP2);
            ("g2", "fp2", "Fp2")
        }
    };
    let c = curve(prefix, fp, ft);
    s.push_str(&if straight {
        curve_straight(c, prefix, fp, ft)
    } else {
        c
    });
    s
}

/// Group-generic kernel text: `$G` is the group prefix, `$K` its coordinate type, `$Q` the
/// coordinate field's prefix and `$W` the words of one coordinate.
fn group_template(text: &str, g: GroupKind) -> String {
    let (q, k) = match g {
        GroupKind::G1 => ("fp", "Fp"),
        GroupKind::G2 => ("fp2", "Fp2"),
    };
    let fixup_threads = match g {
        // Workgroup memory of 32 XYZZ points: 6 KiB (G1), 12 KiB (G2).
        GroupKind::G1 => "32",
        GroupKind::G2 => "32",
    };
    text.replace("$FIXUP_THREADS", fixup_threads)
        .replace("$G", g.prefix())
        .replace("$Q", q)
        .replace("$K", k)
        .replace("$W", &g.coord_words().to_string())
}

/// The NTT module: radix-2 stages, bit reversal, power tables, the quotient's pointwise step
/// (`wide`: with 64-bit integer limb products, see [`common`]).
pub fn ntt_module(wide: bool) -> String {
    [&common(wide), &field("Fr", "fr", &FieldConsts::fr()), NTT].concat()
}

/// The prefix-sum module (no field arithmetic).
pub fn scan_module(wide: bool) -> String {
    [&common(wide), SCAN].concat()
}

/// `ld_NAME(word offset) -> coordinate` and `st_NAME(word offset, coordinate)` over the storage
/// array `buf`: WGSL cannot pass a storage array to a function, so each buffer gets its own
/// accessors.
fn coord_access(name: &str, buf: &str, g: GroupKind) -> String {
    let fp = format!(
        "fn ld_{name}_fp(o: u32) -> Fp {{\n    var r: Fp;\n    for (var k = 0u; k < 12u; k++) {{\n        \
         r[k] = {buf}[o + k];\n    }}\n    return r;\n}}\n\n\
         fn st_{name}_fp(o: u32, v: Fp) {{\n    var x = v;\n    for (var k = 0u; k < 12u; k++) {{\n        \
         {buf}[o + k] = x[k];\n    }}\n}}\n\n"
    );
    let coord = match g {
        GroupKind::G1 => format!(
            "fn ld_{name}(o: u32) -> Fp {{\n    return ld_{name}_fp(o);\n}}\n\n\
             fn st_{name}(o: u32, v: Fp) {{\n    st_{name}_fp(o, v);\n}}\n\n"
        ),
        GroupKind::G2 => format!(
            "fn ld_{name}(o: u32) -> Fp2 {{\n    return Fp2(ld_{name}_fp(o), ld_{name}_fp(o + 12u));\n}}\n\n\
             fn st_{name}(o: u32, v: Fp2) {{\n    st_{name}_fp(o, v.c0);\n    st_{name}_fp(o + 12u, v.c1);\n}}\n\n"
        ),
    };
    fp + &coord
}

/// `module` with `wg` threads per workgroup for its one-thread-per-item kernels (`WG` in
/// common.wgsl, 64 in the text; `linear_id` follows it).
pub fn with_workgroup(module: &str, wg: u32) -> String {
    const DEFAULT: &str = "const WG: u32 = 64u;";
    debug_assert!(module.contains(DEFAULT));
    module.replacen(DEFAULT, &format!("const WG: u32 = {wg}u;"), 1)
}

/// The MSM module of a group: digits, bucket accumulation and window reduction.
pub fn msm_module(g: GroupKind, wide: bool) -> String {
    msm_module_with(g, wide, false)
}

/// [`msm_module`], with its arithmetic as straight-line code when `straight` (MSM option
/// `msm-arith=straight`: [`field_mul_straight`], constant-index product batches and point
/// loads).
pub fn msm_module_with(g: GroupKind, wide: bool, straight: bool) -> String {
    let mut s = group_arith(g, wide, straight);
    s.push_str(&group_template(MSM, g));
    for (name, buf) in [
        ("bases", "bases"),
        ("buckets", "buckets"),
        ("partials", "partials"),
    ] {
        s.push_str(&if straight {
            coord_access_straight(name, buf, g)
        } else {
            coord_access(name, buf, g)
        });
    }
    s
}

/// [`coord_access`] with the twelve words of an Fp named one by one instead of a loop.
fn coord_access_straight(name: &str, buf: &str, g: GroupKind) -> String {
    let words: Vec<String> = (0..12).map(|k| format!("{buf}[o + {k}u]")).collect();
    let stores: String = (0..12)
        .map(|k| format!("    {buf}[o + {k}u] = v[{k}];\n"))
        .collect();
    let fp = format!(
        "fn ld_{name}_fp(o: u32) -> Fp {{\n    return Fp({});\n}}\n\n\
         fn st_{name}_fp(o: u32, v: Fp) {{\n{stores}}}\n\n",
        words.join(", ")
    );
    let full = coord_access(name, buf, g);
    // Keep the group's accessors (after the Fp ones) as they are.
    let at = full
        .find(&format!("fn ld_{name}(o: u32)"))
        .unwrap_or(full.len());
    fp + &full[at..]
}

/// The module of element-wise test kernels of a group (field and curve operations one thread per
/// item, for the tests that compare them with blst).
pub fn testing_module(g: GroupKind, wide: bool) -> String {
    testing_module_with(g, wide, false)
}

/// [`testing_module`] with the MSM's arithmetic as straight-line code when `straight` (so the
/// element-by-element checks also cover `msm-arith=straight`).
pub fn testing_module_with(g: GroupKind, wide: bool, straight: bool) -> String {
    let mut s = group_arith(g, wide, straight);
    s.push_str(&group_template(TESTING, g));
    s.push_str(&coord_access("outp", "outp", g));
    s.push_str(match g {
        GroupKind::G1 => {
            "fn ld_coord(a: bool, o: u32) -> Fp {\n    return fp_at(a, o);\n}\n\n\
             fn st_coord(o: u32, v: Fp) {\n    st_outp(o, v);\n}\n"
        }
        GroupKind::G2 => {
            "fn ld_coord(a: bool, o: u32) -> Fp2 {\n    return Fp2(fp_at(a, o), fp_at(a, o + 12u));\n}\n\n\
             fn st_coord(o: u32, v: Fp2) {\n    st_outp(o, v);\n}\n"
        }
    });
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_constants_match_blst() {
        let fr = FieldConsts::fr();
        assert_eq!(fr.one, u32_limbs(&Fr::ONE.0));
        assert_eq!(fr.modulus[0].wrapping_mul(fr.m0), u32::MAX, "p·(−p⁻¹) = −1");
        let fp = FieldConsts::fp();
        assert_eq!(fp.one, u32_limbs(&Fp::ONE.0));
        assert_eq!(fp.modulus[0].wrapping_mul(fp.m0), u32::MAX);
        assert_eq!(fr.m0, 0xffff_ffff, "r ≡ 1 mod 2^32");
    }

    /// Every module parses and validates as wgpu will (naga's WGSL front end and validator), so
    /// a broken kernel fails here on any machine, not first on a GPU: G2's MSM kernels, for one,
    /// do not run on the software adapter of CI.
    #[test]
    fn every_module_validates() {
        for wide in [false, true] {
            for (name, m) in [
                ("ntt", ntt_module(wide)),
                ("scan", scan_module(wide)),
                ("msm g1", msm_module(GroupKind::G1, wide)),
                ("msm g2", msm_module(GroupKind::G2, wide)),
                ("testing g1", testing_module(GroupKind::G1, wide)),
                (
                    "msm g1, 256 threads per workgroup",
                    with_workgroup(&msm_module(GroupKind::G1, wide), 256),
                ),
                (
                    "msm g1 straight",
                    msm_module_with(GroupKind::G1, wide, true),
                ),
                (
                    "msm g2 straight",
                    msm_module_with(GroupKind::G2, wide, true),
                ),
                ("testing g2", testing_module(GroupKind::G2, wide)),
            ] {
                let module = naga::front::wgsl::parse_str(&m)
                    .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&m)));
                // The portable modules need no optional capability; the wide ones 64-bit
                // integers only.
                let caps = if wide {
                    naga::valid::Capabilities::SHADER_INT64
                } else {
                    naga::valid::Capabilities::default()
                };
                naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
                    .validate(&module)
                    .unwrap_or_else(|e| panic!("{name} (wide {wide}): {}", e.emit_to_string(&m)));
            }
        }
    }

    #[test]
    fn the_workgroup_size_is_replaced() {
        let m = with_workgroup(&msm_module(GroupKind::G1, false), 128);
        assert!(m.contains("const WG: u32 = 128u;"));
        assert!(!m.contains("const WG: u32 = 64u;"));
    }

    #[test]
    fn templates_leave_no_placeholder() {
        for m in [
            ntt_module(false),
            scan_module(true),
            msm_module(GroupKind::G1, true),
            msm_module(GroupKind::G2, false),
            testing_module(GroupKind::G1, false),
            testing_module(GroupKind::G2, true),
        ] {
            assert!(!m.contains('$'), "{}", &m[m.find('$').unwrap()..][..40]);
        }
    }
}

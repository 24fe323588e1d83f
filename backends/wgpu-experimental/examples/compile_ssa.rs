//! Experiment: compile time of generated straight-line (SSA, no arrays in memory) Fp code.
use std::time::Instant;
use bellows_wgpu::{shader::{FieldConsts}, WgpuBackend};

fn gen(n: usize, c: &FieldConsts) -> String {
    let mut s = String::new();
    // add
    s += "fn g_add(a: Fp, b: Fp) -> Fp {\n";
    for i in 0..n {
        let cin = if i == 0 { "0u".to_string() } else { format!("c{}", i - 1) };
        s += &format!("  let s{i} = a[{i}] + b[{i}]; let r{i} = s{i} + {cin}; let c{i} = select(0u, 1u, s{i} < a[{i}]) + select(0u, 1u, r{i} < s{i});\n");
    }
    s += &g_reduce(n, c, "r", &format!("c{}", n - 1));
    s += "}\n";
    // mul CIOS
    s += "fn g_mul(a: Fp, b: Fp) -> Fp {\n";
    for j in 0..=n+1 { s += &format!("  var t{j} = 0u;\n"); }
    s += "  var w: vec2<u32>; var c = 0u; var q = 0u; var s = 0u;\n";
    for i in 0..n {
        s += "  c = 0u;\n";
        for j in 0..n { s += &format!("  w = mac(a[{j}], b[{i}], t{j}, c); t{j} = w.x; c = w.y;\n"); }
        s += &format!("  s = t{n} + c; t{} = select(0u, 1u, s < c); t{n} = s;\n", n + 1);
        s += &format!("  q = t0 * 0x{:08x}u; w = mac(q, 0x{:08x}u, t0, 0u); c = w.y;\n", c.m0, c.modulus[0]);
        for j in 1..n { s += &format!("  w = mac(q, 0x{:08x}u, t{j}, c); t{} = w.x; c = w.y;\n", c.modulus[j], j - 1); }
        s += &format!("  s = t{n} + c; t{} = s; t{n} = t{} + select(0u, 1u, s < c);\n", n - 1, n + 1);
    }
    s += &g_reduce(n, c, "t", &format!("t{n}"));
    s += "}\n";
    s
}

fn g_reduce(n: usize, c: &FieldConsts, r: &str, hi: &str) -> String {
    let mut s = String::new();
    for i in 0..n {
        let bin = if i == 0 { "0u".to_string() } else { format!("b{}", i - 1) };
        s += &format!("  let e{i} = {r}{i} - 0x{:08x}u; let d{i} = e{i} - {bin}; let b{i} = select(0u, 1u, {r}{i} < 0x{:08x}u) + select(0u, 1u, e{i} < {bin});\n", c.modulus[i], c.modulus[i]);
    }
    s += &format!("  let take = {hi} != 0u || b{} == 0u;\n  return Fp(", n - 1);
    s += &(0..n).map(|i| format!("select({r}{i}, d{i}, take)")).collect::<Vec<_>>().join(", ");
    s += ");\n";
    s
}

fn main() {
    let b = WgpuBackend::new().expect("adapter");
    let dev = &b.gpu().device;
    let c = FieldConsts::fp();
    for (op, k) in [("add", 8usize), ("add", 32), ("mul", 1), ("mul", 8), ("mul", 32)] {
        let mut body = String::new();
        for _ in 0..k { body.push_str(&format!("    x = g_{op}(x, y);\n")); }
        let src = format!("{}alias Fp = array<u32, 12>;\n{}\n@group(0) @binding(0) var<storage, read_write> d: array<u32>;\n@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {{\n    var x: Fp; var y: Fp;\n    for (var i = 0u; i < 12u; i++) {{ x[i] = d[g.x * 12u + i]; y[i] = d[i]; }}\n{body}    for (var i = 0u; i < 12u; i++) {{ d[g.x * 12u + i] = x[i]; }}\n}}\n",
            include_str!("../src/shaders/common.wgsl"), gen(12, &c));
        let t = Instant::now();
        let m = dev.create_shader_module(wgpu::ShaderModuleDescriptor { label: None, source: wgpu::ShaderSource::Wgsl(src.into()) });
        let t1 = t.elapsed().as_secs_f64();
        let _p = dev.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: None, layout: None, module: &m, entry_point: Some("main"), compilation_options: Default::default(), cache: None });
        println!("ssa {op} k={k}: naga {t1:.2} s, pipeline {:.2} s", t.elapsed().as_secs_f64() - t1);
    }
}

//! Experiment: compile time of K chained Fp multiplications on the default adapter.
use std::time::Instant;
use bellows_wgpu::{shader::{self, FieldConsts, Loops}, WgpuBackend};

fn main() {
    let b = WgpuBackend::new().expect("adapter");
    let dev = &b.gpu().device;
    for loops in [Loops::Rolled, Loops::Unrolled] {
        for (op, k) in [("mul", 8usize), ("add", 8), ("sub", 8), ("add", 32), ("sub", 32)] {
            let mut body = String::new();
            for _ in 0..k { body.push_str(&format!("    x = fp_{op}(x, y);\n")); }
            let src = format!("{}{}\nstruct Params {{ a: vec4<u32>, b: vec4<u32>, c: vec4<u32>, d: vec4<u32>, zero: u32, p0: u32, p1: u32, p2: u32 }}\n@group(0) @binding(0) var<uniform> P: Params;\n@group(0) @binding(1) var<storage, read_write> d: array<u32>;\n@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {{\n    var x: Fp; var y: Fp;\n    for (var i = 0u; i < 12u; i++) {{ x[i] = d[g.x * 12u + i]; y[i] = d[i]; }}\n{body}    for (var i = 0u; i < 12u; i++) {{ d[g.x * 12u + i] = x[i]; }}\n}}\n",
                include_str!("../src/shaders/common.wgsl"), shader::field("Fp", "fp", &FieldConsts::fp(), loops));
            let t = Instant::now();
            let m = dev.create_shader_module(wgpu::ShaderModuleDescriptor { label: None, source: wgpu::ShaderSource::Wgsl(src.into()) });
            let t1 = t.elapsed().as_secs_f64();
            let _p = dev.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: None, layout: None, module: &m, entry_point: Some("main"), compilation_options: Default::default(), cache: None });
            println!("{loops:?} {op} k={k}: naga {t1:.2} s, pipeline {:.2} s", t.elapsed().as_secs_f64() - t1);
        }
    }
}

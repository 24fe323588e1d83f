//! Compiles kernels one at a time on the default adapter and prints how long each took
//! (`cargo run -p bellows-wgpu-tools --example compile_times -- [MODULE ENTRY]...`): the cost of our
//! WGSL on a driver's compiler (Mesa's lavapipe runs LLVM on every kernel). `BELLOWS_WGPU_INT64`
//! (`auto`, `on`, `off`) sets the backend option `int64` (which limb products the kernels use).

use std::time::Instant;

use bellows_wgpu::{gpu::Module, shader::GroupKind, WgpuBackend};

fn module(name: &str) -> Module {
    match name {
        "ntt" => Module::Ntt,
        "scan" => Module::Scan,
        "msm-g1" => Module::Msm(GroupKind::G1),
        "msm-g2" => Module::Msm(GroupKind::G2),
        "test-g1" => Module::Testing(GroupKind::G1),
        "test-g2" => Module::Testing(GroupKind::G2),
        other => panic!("unknown module {other}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut cfg = bellows_core::BackendConfig::new();
    if let Ok(v) = std::env::var("BELLOWS_WGPU_INT64") {
        cfg = cfg.option("int64", v);
    }
    let b = WgpuBackend::with_config(&cfg).expect("an adapter");
    println!(
        "adapter: {} (64-bit limb products: {})",
        b.gpu().name,
        b.gpu().int64
    );
    for pair in args.chunks(2) {
        let (m, e) = (module(&pair[0]), pair[1].clone());
        let e: &'static str = Box::leak(e.into_boxed_str());
        let t = Instant::now();
        let r = b.with_gpu("compile", |g| g.kernel(m, e).map(|_| ()));
        println!(
            "{:>8} {:<20} {:>8.2} s {:?}",
            pair[0],
            e,
            t.elapsed().as_secs_f64(),
            r.err()
        );
    }
}

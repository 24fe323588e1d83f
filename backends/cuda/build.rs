//! Compiles the CUDA kernels ahead of time into a fatbin (sm_90 machine code + compute_90 PTX)
//! that src/kernels.rs embeds; with the `testing` feature, the test and benchmark kernels
//! (kernels/testing.cu) into a second one.
//!
//! nvcc is looked up as `$NVCC`, then `$CUDA_HOME/bin/nvcc`, `$CUDA_PATH/bin/nvcc`, then `nvcc` on
//! `PATH`. Without nvcc the crate still builds (with a warning) and every device entry point
//! reports that the kernels were not compiled in. With `BELLOWS_REQUIRE_KERNELS=1` (set in CI) a
//! missing nvcc or a kernel that does not compile fails the build.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
    thread,
};

const SOURCES: &str = "kernels";
/// The production kernels.
const ENTRY: &str = "kernels/bellows.cu";
/// The test and benchmark kernels, built only with the `testing` feature.
const TESTING_ENTRY: &str = "kernels/testing.cu";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(bellows_kernels)");
    println!("cargo::rustc-check-cfg=cfg(bellows_testing_kernels)");
    // The device sources only: kernels/emulation.cpp is the host tests' and needs no nvcc run.
    for entry in fs::read_dir(SOURCES).expect("kernels/ exists").flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "cu" || e == "cuh") {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    for var in [
        "NVCC",
        "CUDA_HOME",
        "CUDA_PATH",
        "PATH",
        "BELLOWS_REQUIRE_KERNELS",
        "BELLOWS_NVCC_FLAGS",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let require = env::var("BELLOWS_REQUIRE_KERNELS").is_ok_and(|v| v == "1");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let testing = env::var_os("CARGO_FEATURE_TESTING").is_some();
    let out = out_dir.join("bellows.fatbin");
    let testing_out = out_dir.join("bellows_testing.fatbin");

    let Some(nvcc) = find_nvcc() else {
        let why = "no nvcc found (set NVCC or CUDA_HOME, or put nvcc on PATH)";
        give_up(require, &out, why);
        if testing {
            fs::write(&testing_out, []).expect("write empty fatbin");
        }
        return;
    };
    // The two translation units compile at the same time (nvcc is single-threaded per unit
    // except for its `--threads` over the two targets).
    let prod = thread::spawn({
        let nvcc = nvcc.clone();
        let out = out.clone();
        move || compile(&nvcc, ENTRY, &out)
    });
    let test = testing.then(|| compile(&nvcc, TESTING_ENTRY, &testing_out));
    let prod = prod.join().expect("nvcc thread");
    match prod {
        Ok(()) => println!("cargo:rustc-cfg=bellows_kernels"),
        Err(msg) => give_up(require, &out, &msg),
    }
    match test {
        Some(Ok(())) => println!("cargo:rustc-cfg=bellows_testing_kernels"),
        Some(Err(msg)) => give_up(require, &testing_out, &msg),
        None => {}
    }
}

/// Compiles one translation unit into a fatbin (sm_90 machine code + compute_90 PTX).
fn compile(nvcc: &Path, entry: &str, out: &Path) -> Result<(), String> {
    let mut cmd = Command::new(nvcc);
    cmd.args([
        "--fatbin",
        "-O3",
        "-std=c++17",
        "--threads",
        "2",
        "-gencode=arch=compute_90,code=sm_90",
        "-gencode=arch=compute_90,code=compute_90",
        "-o",
    ])
    .arg(out)
    .arg(entry);
    if let Ok(extra) = env::var("BELLOWS_NVCC_FLAGS") {
        cmd.args(extra.split_whitespace());
    }
    match cmd.output() {
        Ok(o) if o.status.success() && fs::metadata(out).is_ok_and(|m| m.len() > 0) => Ok(()),
        Ok(o) => {
            let stderr = String::from_utf8_lossy(&o.stderr);
            Err(format!(
                "{} {entry} failed ({}):\n{stderr}",
                nvcc.display(),
                o.status
            ))
        }
        Err(e) => Err(format!("could not run {}: {e}", nvcc.display())),
    }
}

/// Without kernels: fail when they are required, else warn and embed an empty fatbin.
fn give_up(require: bool, out: &Path, why: &str) {
    if require {
        panic!("BELLOWS_REQUIRE_KERNELS=1 but the CUDA kernels were not built: {why}");
    }
    for line in why.lines().take(20) {
        println!("cargo:warning=bellows-cuda: {line}");
    }
    println!("cargo:warning=bellows-cuda: building without kernels; the CUDA backend will report that at run time");
    fs::write(out, []).expect("write empty fatbin");
}

fn find_nvcc() -> Option<PathBuf> {
    if let Some(p) = env::var_os("NVCC") {
        return Some(PathBuf::from(p));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = env::var_os(var) {
            let p = PathBuf::from(home).join("bin").join("nvcc");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    env::var_os("PATH").and_then(|paths| {
        env::split_paths(&paths)
            .map(|d| d.join("nvcc"))
            .find(|p| p.is_file())
    })
}

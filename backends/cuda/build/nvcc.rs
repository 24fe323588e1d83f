//! Compiling one CUDA translation unit ahead of time into a fatbin (sm_90 machine code +
//! compute_90 PTX): shared by the build scripts of bellows-cuda (the production kernels) and
//! bellows-cuda-tools (the test and benchmark kernels), each including this file.
//!
//! nvcc is looked up as `$NVCC`, then `$CUDA_HOME/bin/nvcc`, `$CUDA_PATH/bin/nvcc`, then `nvcc` on
//! `PATH`; `BELLOWS_NVCC_FLAGS` adds flags. Without nvcc the crate still builds (with a warning)
//! and embeds an empty fatbin, which its device code reports at run time. With
//! `BELLOWS_REQUIRE_KERNELS=1` (set in CI) a missing nvcc or a kernel that does not compile fails
//! the build.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

/// One translation unit to compile.
pub struct Unit<'a> {
    /// The `.cu` file, relative to the crate's folder.
    pub entry: &'a str,
    /// Include folders (`-I`), relative to the crate's folder; every file below them is watched.
    pub include: &'a [&'a str],
    /// The fatbin's file name in `OUT_DIR`.
    pub out: &'a str,
    /// The `cfg` set when the fatbin holds kernels.
    pub cfg: &'a str,
    /// The crate, in warnings.
    pub what: &'a str,
}

/// Compiles `unit` into `$OUT_DIR/unit.out` and sets `unit.cfg`; or, without nvcc (and not
/// required), writes an empty fatbin and warns.
pub fn build(unit: &Unit<'_>) {
    println!("cargo::rustc-check-cfg=cfg({})", unit.cfg);
    for dir in unit.include {
        // A folder: cargo looks at every file below it.
        println!("cargo:rerun-if-changed={dir}");
    }
    println!("cargo:rerun-if-changed={}", unit.entry);
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
    let out = out_dir.join(unit.out);
    let result = match find_nvcc() {
        Some(nvcc) => compile(&nvcc, unit, &out),
        None => Err("no nvcc found (set NVCC or CUDA_HOME, or put nvcc on PATH)".to_string()),
    };
    match result {
        Ok(()) => println!("cargo:rustc-cfg={}", unit.cfg),
        Err(why) => give_up(require, unit, &out, &why),
    }
}

/// Runs nvcc over the unit.
fn compile(nvcc: &Path, unit: &Unit<'_>, out: &Path) -> Result<(), String> {
    let mut cmd = Command::new(nvcc);
    cmd.args([
        "--fatbin",
        "-O3",
        "-std=c++17",
        "--threads",
        "2",
        "-gencode=arch=compute_90,code=sm_90",
        "-gencode=arch=compute_90,code=compute_90",
    ]);
    for dir in unit.include {
        cmd.arg("-I").arg(dir);
    }
    cmd.arg("-o").arg(out).arg(unit.entry);
    if let Ok(extra) = env::var("BELLOWS_NVCC_FLAGS") {
        cmd.args(extra.split_whitespace());
    }
    match cmd.output() {
        Ok(o) if o.status.success() && fs::metadata(out).is_ok_and(|m| m.len() > 0) => Ok(()),
        Ok(o) => {
            let stderr = String::from_utf8_lossy(&o.stderr);
            Err(format!(
                "{} {} failed ({}):\n{stderr}",
                nvcc.display(),
                unit.entry,
                o.status
            ))
        }
        Err(e) => Err(format!("could not run {}: {e}", nvcc.display())),
    }
}

/// Without kernels: fail when they are required, else warn and embed an empty fatbin.
fn give_up(require: bool, unit: &Unit<'_>, out: &Path, why: &str) {
    if require {
        panic!("BELLOWS_REQUIRE_KERNELS=1 but the CUDA kernels were not built: {why}");
    }
    for line in why.lines().take(20) {
        println!("cargo:warning={}: {line}", unit.what);
    }
    println!(
        "cargo:warning={}: building without kernels ({}); that is reported at run time",
        unit.what, unit.entry
    );
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

//! `bellows-cuda-pin`: what page-locking host memory costs a parameter load running beside it.
//!
//! A 32 GiB PoRep's first proof pins about 32 GiB of host blocks ahead of its partitions while
//! its key loads, and the load made almost no progress until the pinning was done: it read its
//! file at a tenth of the disk's rate and decoded nothing (docs/benchmarks.md, "32 GiB PoRep
//! C2"). This program measures that in a minute, with no 32 GiB setup: the host side of a load
//! (each G1 section of a parameters file decoded with the curve-only check, then dropped, as
//! `ProvingKey::load_file` does before each upload) alone, the pinning of `--gib` GiB in blocks
//! of `--block-gib` GiB alone by each method, and the two at once, in alternating rounds.
//!
//! Methods:
//! - `alloc`: `cuMemHostAlloc` (portable), as the CUDA backend's host pool pins today;
//! - `register`: memory this program allocates, advised for huge pages and backed on every core
//!   (`MADV_POPULATE_WRITE`), then `cuMemHostRegister` (portable): the backing, outside the
//!   driver, is timed apart from the registration.
//!
//! ```text
//! bellows-cuda-pin [--params FILE | --log K] [--gib 32] [--block-gib 4] [--rounds 2]
//! ```
//!
//! Without `--params`, benchmark-only parameters of a 2^K synthetic circuit (default K = 24)
//! are written to a temporary file first (left in the page cache, as a file just set up is).
//! Each result is one line: `RESULT what=… seconds=…`.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
    time::Instant,
};

use bellows_core::{
    circuits::SyntheticCircuit,
    groth16::{
        io::{write_parameters_file, ParamsFile, ParamsSection, PointCheck},
        setup::generate_benchmark_parameters,
    },
};
use cudarc::driver::{sys, CudaContext};
use rayon::prelude::*;

const GIB: usize = 1 << 30;

fn usage() -> ExitCode {
    eprintln!(
        "usage: bellows-cuda-pin [--params FILE | --log K] [--gib N] [--block-gib N] [--rounds N]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let (mut log, mut gib, mut block_gib, mut rounds) = (24u32, 32usize, 4usize, 2usize);
    let mut params: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let Some(v) = args.next() else {
            return usage();
        };
        let ok = match a.as_str() {
            "--params" => {
                params = Some(v.into());
                true
            }
            "--log" => v.parse().map(|x| log = x).is_ok(),
            "--gib" => v.parse().map(|x| gib = x).is_ok(),
            "--block-gib" => v.parse().map(|x| block_gib = x).is_ok(),
            "--rounds" => v.parse().map(|x| rounds = x).is_ok(),
            _ => false,
        };
        if !ok {
            return usage();
        }
    }
    if gib == 0 || block_gib == 0 || rounds == 0 {
        return usage();
    }
    match run(params, log, gib, block_gib, rounds) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

type Res<T> = std::result::Result<T, String>;

fn run(params: Option<PathBuf>, log: u32, gib: usize, block_gib: usize, rounds: usize) -> Res<()> {
    if !bellows_cuda::driver_available() {
        return Err("no CUDA driver (libcuda) on this machine".into());
    }
    let ctx = CudaContext::new(0).map_err(|e| format!("opening GPU 0: {e}"))?;
    let (path, made) = match params {
        Some(p) => (p, false),
        None => {
            let t = Instant::now();
            let p = std::env::temp_dir().join(format!("bellows-pin-{}.params", std::process::id()));
            let circuit = SyntheticCircuit::new(log, 0).map_err(|e| e.to_string())?;
            let params = generate_benchmark_parameters(circuit, 1).map_err(|e| e.to_string())?;
            write_parameters_file(&params, &p).map_err(|e| e.to_string())?;
            eprintln!(
                "parameters 2^{log} written in {:.1} s: {}",
                t.elapsed().as_secs_f64(),
                p.display()
            );
            (p, true)
        }
    };
    let blocks: Vec<usize> = {
        let mut left = gib * GIB;
        let mut v = Vec::new();
        while left > 0 {
            let b = left.min(block_gib * GIB);
            v.push(b);
            left -= b;
        }
        v
    };
    let result = (|| -> Res<()> {
        for round in 0..rounds {
            let s = load(&path)?;
            println!("RESULT round={round} what=load-alone seconds={s:.2}");
            for method in [Method::Alloc, Method::Register] {
                let p = pin(&ctx, method, &blocks)?;
                println!(
                    "RESULT round={round} what=pin-alone method={} seconds={:.2} backing_s={:.2} \
                     gb_per_s={:.2}",
                    method.name(),
                    p.seconds,
                    p.backing,
                    (gib * GIB) as f64 / 1e9 / p.seconds
                );
                let (l, p) = std::thread::scope(|scope| {
                    let pinning = scope.spawn(|| pin(&ctx, method, &blocks));
                    let l = load(&path);
                    (l, pinning.join().expect("pinning does not panic"))
                });
                let (l, p) = (l?, p?);
                println!(
                    "RESULT round={round} what=beside method={} load_s={l:.2} pin_s={:.2} \
                     backing_s={:.2}",
                    method.name(),
                    p.seconds,
                    p.backing
                );
            }
        }
        Ok(())
    })();
    if made {
        let _ = std::fs::remove_file(&path);
    }
    result
}

/// The host side of a key load: every G1 section decoded (curve-only) and dropped in turn.
fn load(path: &Path) -> Res<f64> {
    let t = Instant::now();
    let file = ParamsFile::open(path).map_err(|e| e.to_string())?;
    for which in [
        ParamsSection::H,
        ParamsSection::L,
        ParamsSection::A,
        ParamsSection::BG1,
    ] {
        let points = file
            .decode_g1(which, PointCheck::CurveOnly, &|_| {})
            .map_err(|e| e.to_string())?;
        std::hint::black_box(&points);
    }
    Ok(t.elapsed().as_secs_f64())
}

#[derive(Clone, Copy)]
enum Method {
    Alloc,
    Register,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Alloc => "alloc",
            Method::Register => "register",
        }
    }
}

struct Pinned {
    /// Wall time of the whole pinning.
    seconds: f64,
    /// Of which backing the memory before registering it (`register` only).
    backing: f64,
}

/// Pins `blocks` by `method`, one after the other, then releases them all.
fn pin(ctx: &Arc<CudaContext>, method: Method, blocks: &[usize]) -> Res<Pinned> {
    ctx.bind_to_thread().map_err(|e| e.to_string())?;
    let t = Instant::now();
    let mut backing = 0.0;
    let mut held: Vec<(*mut u8, usize)> = Vec::new();
    let mut failed = None;
    for &bytes in blocks {
        match method {
            Method::Alloc => {
                // SAFETY: a plain allocation call; the result is checked.
                match unsafe {
                    cudarc::driver::result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_PORTABLE)
                } {
                    Ok(p) => held.push((p.cast(), bytes)),
                    Err(e) => {
                        failed = Some(format!("cuMemHostAlloc of {bytes} bytes: {e}"));
                        break;
                    }
                }
            }
            Method::Register => {
                let b = Instant::now();
                let layout =
                    std::alloc::Layout::from_size_align(bytes, 2 << 20).expect("valid layout");
                // SAFETY: bytes > 0; the result is checked for null.
                let p = unsafe { std::alloc::alloc(layout) };
                if p.is_null() {
                    failed = Some(format!("allocating {bytes} bytes"));
                    break;
                }
                // SAFETY: [p, p + bytes) is the allocation just made, alive until released below.
                let buf = unsafe {
                    std::slice::from_raw_parts_mut(p.cast::<std::mem::MaybeUninit<u8>>(), bytes)
                };
                bellows_core::hostmem::advise_huge(buf);
                let start = p as usize;
                (0..bytes.div_ceil(64 << 20)).into_par_iter().for_each(|i| {
                    let at = i * (64 << 20);
                    // SAFETY: inside the allocation (at < bytes, length clamped to it).
                    unsafe {
                        bellows_core::hostmem::populate(
                            (start + at) as *const u8,
                            (64 << 20).min(bytes - at),
                        )
                    };
                });
                backing += b.elapsed().as_secs_f64();
                // SAFETY: the range is this program's allocation, alive until unregistered.
                let r = unsafe {
                    sys::cuMemHostRegister_v2(p.cast(), bytes, sys::CU_MEMHOSTREGISTER_PORTABLE)
                };
                if r != sys::CUresult::CUDA_SUCCESS {
                    // SAFETY: allocated above with this layout, not registered.
                    unsafe { std::alloc::dealloc(p, layout) };
                    failed = Some(format!("cuMemHostRegister of {bytes} bytes: {r:?}"));
                    break;
                }
                held.push((p, bytes));
            }
        }
    }
    let seconds = t.elapsed().as_secs_f64();
    for (p, bytes) in held {
        match method {
            // SAFETY: from cuMemHostAlloc above, freed once.
            Method::Alloc => unsafe {
                let _ = cudarc::driver::result::free_host(p.cast());
            },
            // SAFETY: registered above, then allocated with this layout; released once.
            Method::Register => unsafe {
                sys::cuMemHostUnregister(p.cast());
                std::alloc::dealloc(
                    p,
                    std::alloc::Layout::from_size_align(bytes, 2 << 20).expect("valid layout"),
                );
            },
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(Pinned { seconds, backing }),
    }
}

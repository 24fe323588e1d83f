//! `bellows-cuda-pin`: what page-locking host memory costs a parameter load running beside it.
//!
//! A 32 GiB PoRep's first proof pins about 32 GiB of host blocks ahead of its partitions while
//! its key loads, and the load made almost no progress until the pinning was done: it read its
//! file at a tenth of the disk's rate and decoded nothing (docs/benchmarks.md, "32 GiB PoRep
//! C2"). This program measures that in a minute, with no 32 GiB setup: the host side of a load
//! (each G1 section of a parameters file decoded with the curve-only check, then dropped, as
//! `ProvingKey::load_file` did before each upload) and the whole load onto the GPU (the key
//! made resident by `ProvingKey::load_file`, the GPU decoding the file's bytes), each alone; the
//! pinning of `--gib` GiB in blocks of `--block-gib` GiB alone by each method; and each load
//! beside each pinning, in alternating rounds.
//!
//! The methods are the host pool's own (`bellows_cuda::host_pool::DriverHost`, option
//! `pin-method`):
//! - `alloc`: `cuMemHostAlloc` (portable);
//! - `register`, the default: memory of the process, advised for huge pages and backed on
//!   every core (`MADV_POPULATE_WRITE`), then `cuMemHostRegister` (portable).
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
        prover::G2Policy,
        setup::generate_benchmark_parameters,
        ProvingKey,
    },
    Backend, BackendConfig,
};
use bellows_cuda::backend::CudaBackend;
use bellows_cuda::host_pool::{DriverHost, PinMethod, RawHost};
use cudarc::driver::CudaContext;

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
        let backend: Arc<dyn Backend> = Arc::new(
            CudaBackend::with_config(&BackendConfig::default()).map_err(|e| e.to_string())?,
        );
        let loads: [(&str, &(dyn Fn() -> Res<f64> + Sync)); 2] = [
            ("host", &|| load(&path)),
            ("device", &|| load_onto(&path, &backend)),
        ];
        for round in 0..rounds {
            for (kind, load) in loads {
                let s = load()?;
                println!("RESULT round={round} what=load-alone load={kind} seconds={s:.2}");
            }
            for (method, name) in [
                (PinMethod::Alloc, "alloc"),
                (PinMethod::Register, "register"),
            ] {
                let p = pin(&ctx, method, &blocks)?;
                println!(
                    "RESULT round={round} what=pin-alone method={name} seconds={p:.2} \
                     gb_per_s={:.2}",
                    (gib * GIB) as f64 / 1e9 / p
                );
                for (kind, load) in loads {
                    let (l, p) = std::thread::scope(|scope| {
                        let pinning = scope.spawn(|| pin(&ctx, method, &blocks));
                        let l = load();
                        (l, pinning.join().expect("pinning does not panic"))
                    });
                    let (l, p) = (l?, p?);
                    println!(
                        "RESULT round={round} what=beside method={name} load={kind} \
                         load_s={l:.2} pin_s={p:.2}"
                    );
                }
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

/// The whole key load onto the GPU of `backend`, as `porep c2` makes it (curve-only: the GPU
/// decodes the file's bytes), then the key dropped.
fn load_onto(path: &Path, backend: &Arc<dyn Backend>) -> Res<f64> {
    let t = Instant::now();
    let file = ParamsFile::open(path).map_err(|e| e.to_string())?;
    let key = ProvingKey::load_file(
        &file,
        PointCheck::CurveOnly,
        backend.clone(),
        G2Policy::Auto,
        &|_| {},
    )
    .map_err(|e| e.to_string())?;
    let s = t.elapsed().as_secs_f64();
    drop(key);
    Ok(s)
}

/// Pins `blocks` by `method` through the host pool's own source, one after the other, then
/// releases them all; returns the seconds the pinning took.
fn pin(ctx: &Arc<CudaContext>, method: PinMethod, blocks: &[usize]) -> Res<f64> {
    let host = DriverHost::new(ctx.clone(), method);
    let t = Instant::now();
    let mut held = Vec::new();
    let mut failed = None;
    for &bytes in blocks {
        match host.alloc(bytes) {
            Ok(p) => held.push((p, bytes)),
            Err(e) => {
                failed = Some(e.to_string());
                break;
            }
        }
    }
    let seconds = t.elapsed().as_secs_f64();
    for (p, bytes) in held {
        // SAFETY: from `alloc(bytes)` of this source just above, released once.
        unsafe { host.free(p, bytes) };
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(seconds),
    }
}

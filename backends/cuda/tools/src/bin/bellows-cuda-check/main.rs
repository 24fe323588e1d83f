//! `bellows-cuda-check`: runs every Bellows CUDA kernel on a GPU against blst / the CPU backend,
//! bit for bit, and measures throughput. Exits non-zero on any mismatch or error.
//!
//! ```text
//! bellows-cuda-check [--device N] [--max-log N] [--quick] [--no-check] [--no-bench] [--repeats N]
//! ```
//!
//! Built on a development machine (`cargo build --release -p bellows-cuda-tools --bin
//! bellows-cuda-check`, with nvcc available so the kernels are embedded) and carried to the GPU
//! machine, which needs only the NVIDIA driver. docs/cuda.md has the whole procedure.

mod checks;
mod perf;

use std::{process::ExitCode, time::Instant};

use bellows_cuda::{fatbin, msm::MsmConfig};
use bellows_cuda_tools::{test_kernels, testing::CheckResult, Gpu, TestKernels};

/// Command-line options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Device index.
    pub device: usize,
    /// Largest NTT size checked and measured (log2).
    pub max_log: u32,
    /// Fewer random vectors and repeats.
    pub quick: bool,
    /// Run the correctness checks.
    pub check: bool,
    /// Run the measurements.
    pub bench: bool,
    /// Timed repeats per measurement (median reported).
    pub repeats: usize,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        device: 0,
        max_log: 27,
        quick: false,
        check: true,
        bench: true,
        repeats: 7,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |name: &str| -> Result<u64, String> {
            args.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match a.as_str() {
            "--device" => o.device = num("--device")? as usize,
            "--max-log" => o.max_log = num("--max-log")? as u32,
            "--repeats" => o.repeats = (num("--repeats")? as usize).max(1),
            "--quick" => o.quick = true,
            "--no-check" => o.check = false,
            "--no-bench" => o.bench = false,
            "-h" | "--help" => {
                return Err(
                    "usage: bellows-cuda-check [--device N] [--max-log N] [--quick] [--no-check] \
                            [--no-bench] [--repeats N]"
                        .into(),
                )
            }
            other => return Err(format!("unknown argument {other} (try --help)")),
        }
    }
    if o.max_log > bellows_cuda::ntt::MAX_LOG_N {
        return Err(format!(
            "--max-log is at most {}",
            bellows_cuda::ntt::MAX_LOG_N
        ));
    }
    if o.quick {
        o.repeats = o.repeats.min(3);
    }
    Ok(o)
}

/// Prints a line and flushes, so a log shows progress even if the run is cut short.
pub fn say(s: impl AsRef<str>) {
    use std::io::Write;
    println!("{}", s.as_ref());
    let _ = std::io::stdout().flush();
}

fn main() -> ExitCode {
    let opts = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    say(format!(
        "bellows-cuda-check {} ({:?})",
        env!("CARGO_PKG_VERSION"),
        opts
    ));
    say(format!(
        "kernels compiled in: {} ({} bytes of fatbin); host threads: {}",
        fatbin::KERNELS_COMPILED,
        fatbin::fatbin().map(|f| f.len()).unwrap_or(0),
        rayon::current_num_threads()
    ));
    say(format!(
        "test kernels compiled in: {} bytes of fatbin",
        test_kernels::fatbin().map(|f| f.len()).unwrap_or(0)
    ));
    let (gpu, tk) = match Gpu::open(opts.device, MsmConfig::default())
        .and_then(|g| TestKernels::load(&g.dev).map(|t| (g, t)))
    {
        Ok(x) => x,
        Err(e) => {
            say(format!("FAIL cannot open the device: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let dev = &gpu.dev;
    let (free, total) = dev.memory_info().unwrap_or((0, 0));
    say(format!(
        "device {}: {} (compute capability {}.{}, {} SMs, {:.1} GiB free of {:.1} GiB)",
        dev.label(),
        dev.name(),
        dev.compute_capability().0,
        dev.compute_capability().1,
        dev.multiprocessors().unwrap_or(0),
        free as f64 / (1u64 << 30) as f64,
        total as f64 / (1u64 << 30) as f64
    ));
    match gpu.kernel_report().and_then(|mut r| {
        tk.report(dev).map(|t| {
            r.extend(t);
            r
        })
    }) {
        Ok(r) => {
            for k in r {
                say(format!(
                    "  kernel {:<24} {:>3} registers, {:>5} B local (stack/spill) per thread",
                    k.name, k.registers, k.local_bytes
                ));
            }
        }
        Err(e) => say(format!("  (no kernel report: {e})")),
    }

    let mut results: Vec<CheckResult> = Vec::new();
    if opts.check {
        results.extend(checks::run(&gpu, &tk, &opts));
    }
    let mut perf_lines = Vec::new();
    if opts.bench {
        match perf::run(&gpu, &tk, &opts) {
            Ok(lines) => perf_lines = lines,
            Err(e) => results.push(CheckResult {
                name: "measurements".into(),
                compared: 0,
                mismatches: 1,
                first_mismatch: Some(format!("error: {e}")),
            }),
        }
    }

    let failed: Vec<&CheckResult> = results.iter().filter(|r| !r.passed()).collect();
    let compared: usize = results.iter().map(|r| r.compared).sum();
    say("");
    say("==================== summary ====================");
    say(format!("device: {} ({})", dev.name(), dev.label()));
    if opts.check {
        say(format!(
            "correctness: {} checks, {} values compared bit for bit, {} failed",
            results.len(),
            compared,
            failed.len()
        ));
        for f in &failed {
            say(format!("{f}"));
        }
    }
    for l in &perf_lines {
        say(l);
    }
    say(format!(
        "total time {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    if failed.is_empty() {
        say("RESULT: PASS");
        ExitCode::SUCCESS
    } else {
        say("RESULT: FAIL");
        ExitCode::FAILURE
    }
}

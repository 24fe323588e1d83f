//! Measurements: arithmetic throughput and NTT times, device events, warm-up, median of repeats.

use std::time::Instant;

use bellows_core::{
    backend::{
        ntt::{NttConfig, Ordering},
        Ntt,
    },
    layout::Fr,
    Result,
};
use bellows_cuda::CudaDevice;
use bellows_cuda_tools::{
    bench::{median, BenchField, BenchGroup, Shape},
    testing, Gpu, TestKernels,
};

use crate::{say, Options};

/// Runs the measurements; returns the summary lines.
pub fn run(gpu: &Gpu, tk: &TestKernels, o: &Options) -> Result<Vec<String>> {
    let (dev, ntt) = (&gpu.dev, &gpu.ntt);
    let mut lines = Vec::new();
    let sms = dev.multiprocessors()?;
    let reps = o.repeats;
    let blocks = sms * 16;
    say(format!("\n## arithmetic throughput ({blocks} blocks, device events, median of {reps} after a warm-up)"));
    let fields = [
        ("Fr mul", BenchField::Fr, 256, 1024, 55.0),
        (
            "Fr mul (generic reduction)",
            BenchField::FrGeneric,
            256,
            1024,
            0.0,
        ),
        ("Fp mul", BenchField::Fp, 256, 512, 25.0),
        ("Fp sqr", BenchField::FpSqr, 256, 512, 0.0),
        (
            "Fp sqr (as a product)",
            BenchField::FpSqrPlain,
            256,
            512,
            0.0,
        ),
        ("Fp2 mul", BenchField::Fp2, 128, 256, 0.0),
    ];
    let shape = |threads, iters| Shape {
        blocks,
        threads,
        iters,
        repeats: reps,
    };
    for (name, f, threads, iters, goal) in fields {
        let t = tk.bench_mul(dev, f, shape(threads, iters))?;
        let g = t.ops_per_sec() / 1e9;
        let goal = if goal > 0.0 {
            format!(
                " (goal ≥ {goal} G/s: {})",
                if g >= goal { "met" } else { "NOT met" }
            )
        } else {
            String::new()
        };
        let l = format!(
            "{name:<28} {g:>8.2} G/s   ({} per run, median {:.3} ms){goal}",
            t.ops_per_run,
            t.median_ms()
        );
        say(&l);
        lines.push(l);
    }
    for (name, g, threads, iters) in [
        ("G1 madd", BenchGroup::G1, 128, 256),
        ("G1 madd (plain squares, Y3)", BenchGroup::G1Plain, 128, 256),
        ("G2 madd", BenchGroup::G2, 64, 128),
    ] {
        let t = tk.bench_madd(dev, g, 1024, shape(threads, iters))?;
        let l = format!(
            "{name:<28} {:>8.3} G/s   (XYZZ + affine, {} per run, median {:.3} ms)",
            t.ops_per_sec() / 1e9,
            t.ops_per_run,
            t.median_ms()
        );
        say(&l);
        lines.push(l);
    }

    say(format!(
        "\n## NTT (ms; device = events around the kernels on resident data; +pinned = with copies \
         from/to page-locked memory; +pageable = wall clock of ntt(&mut [Fr]); cpu = bellows-cpu on \
         {} threads, wall clock)",
        rayon::current_num_threads()
    ));
    let header = format!(
        "{:<26} {:>9} {:>10} {:>11} {:>10}",
        "size / configuration", "device", "+pinned", "+pageable", "cpu"
    );
    say(&header);
    lines.push(String::new());
    lines.push("NTT (ms, medians)".into());
    lines.push(header);
    let cpu = bellows_cpu::CpuBackend::new();
    let configs = [
        ("fwd N->R", NttConfig::forward()),
        (
            "fwd N->N",
            NttConfig::forward().with_orders(Ordering::Natural, Ordering::Natural),
        ),
        (
            "inv coset R->N",
            NttConfig::inverse()
                .with_coset(true)
                .with_orders(Ordering::BitReversed, Ordering::Natural),
        ),
    ];
    for log_n in [20u32, 24, 27].into_iter().filter(|&l| l <= o.max_log) {
        let data = testing::random_vector(0xbe7c + u64::from(log_n), 1 << log_n);
        for (ci, (cname, cfg)) in configs.iter().enumerate() {
            let cfg = if ci == 0 {
                cfg.with_orders(Ordering::Natural, Ordering::BitReversed)
            } else {
                *cfg
            };
            // Device only.
            let mut d = dev.upload(&data)?;
            ntt.transform_device(dev, &mut d, log_n, &cfg)?;
            dev.synchronize()?;
            let dev_ms: Vec<f64> = (0..reps)
                .map(|_| dev.time_ms(|x| ntt.transform_device(x, &mut d, log_n, &cfg)))
                .collect::<Result<_>>()?;
            drop(d);
            // With copies from / to pinned memory, all on the device's stream.
            let mut p = dev.alloc_pinned::<Fr>(data.len())?;
            p.as_mut_slice()?.copy_from_slice(&data);
            let mut d = dev.alloc::<Fr>(data.len())?;
            let mut pinned = |x: &CudaDevice| -> Result<()> {
                x.upload_pinned(&p, &mut d)?;
                ntt.transform_device(x, &mut d, log_n, &cfg)?;
                x.download_pinned(&d, &mut p)
            };
            pinned(dev)?;
            dev.synchronize()?;
            let pin_ms: Vec<f64> = (0..reps)
                .map(|_| dev.time_ms(&mut pinned))
                .collect::<Result<_>>()?;
            drop((p, d));
            // The simple host path (pageable memory, allocation included).
            let mut v = data.clone();
            ntt.transform(dev, &mut v, log_n, &cfg)?;
            let page_reps = if log_n >= 27 { 2 } else { reps.min(5) };
            let page_ms: Vec<f64> = (0..page_reps)
                .map(|_| {
                    let t = Instant::now();
                    ntt.transform(dev, &mut v, log_n, &cfg)
                        .map(|_| t.elapsed().as_secs_f64() * 1e3)
                })
                .collect::<Result<_>>()?;
            // The CPU backend on this machine's cores (at 2^27 one configuration, two runs: a
            // run takes seconds).
            let cpu_ms = if log_n >= 27 && ci > 0 {
                None
            } else {
                let mut v = data.clone();
                if log_n < 27 {
                    cpu.ntt(&mut v, log_n, &cfg)?;
                }
                let cpu_reps = if log_n >= 27 { 2 } else { reps.min(3) };
                let ms: Vec<f64> = (0..cpu_reps)
                    .map(|_| {
                        let t = Instant::now();
                        cpu.ntt(&mut v, log_n, &cfg)
                            .map(|_| t.elapsed().as_secs_f64() * 1e3)
                    })
                    .collect::<Result<_>>()?;
                Some(median(&ms))
            };
            let cpu_col = cpu_ms.map_or_else(|| "-".to_string(), |m| format!("{m:.1}"));
            let l = format!(
                "2^{log_n} {cname:<20} {:>9.3} {:>10.3} {:>11.3} {:>10}",
                median(&dev_ms),
                median(&pin_ms),
                median(&page_ms),
                cpu_col
            );
            say(&l);
            lines.push(l);
        }
    }
    lines.extend(every_config(gpu, o)?);
    lines.push("goals: NTT 2^24 ≤ 6 ms and 2^27 ≤ 50 ms on device".into());
    Ok(lines)
}

/// Device time of all 16 configurations at 2^24 and 2^27.
fn every_config(gpu: &Gpu, o: &Options) -> Result<Vec<String>> {
    let (dev, ntt) = (&gpu.dev, &gpu.ntt);
    let reps = o.repeats;
    let mut lines = vec![
        String::new(),
        "NTT, every configuration, device only (ms, medians)".to_string(),
    ];
    say(&lines[1]);
    for log_n in [24u32, 27].into_iter().filter(|&l| l <= o.max_log) {
        let data = testing::random_vector(0xa11c + u64::from(log_n), 1 << log_n);
        let mut d = dev.upload(&data)?;
        let mut worst = (0.0f64, String::new());
        for cfg in testing::all_ntt_configs() {
            ntt.transform_device(dev, &mut d, log_n, &cfg)?;
            dev.synchronize()?;
            let ms: Vec<f64> = (0..reps)
                .map(|_| dev.time_ms(|x| ntt.transform_device(x, &mut d, log_n, &cfg)))
                .collect::<Result<_>>()?;
            let t = median(&ms);
            let name = testing::describe(&cfg);
            if t > worst.0 {
                worst = (t, name.clone());
            }
            let l = format!("2^{log_n} {name:<20} {t:>9.3}");
            say(&l);
            lines.push(l);
        }
        let l = format!(
            "2^{log_n} slowest configuration: {} at {:.3} ms",
            worst.1, worst.0
        );
        say(&l);
        lines.push(l);
    }
    Ok(lines)
}

//! Correctness: every kernel against blst / the CPU backend, bit for bit.

use std::time::Instant;

use bellows_core::{
    backend::ntt::{NttConfig, Ordering},
    layout::{Fp, Fp2, Fr},
};
use bellows_cuda::ntt::tables;
use bellows_cuda_tools::{
    testing::{self, compare, failed, CheckResult, NttCheckPlan},
    Gpu, TestKernels,
};
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{say, Options};

fn report(section: &str, started: Instant, r: &[CheckResult]) {
    for c in r {
        say(format!("{c}"));
    }
    let bad = r.iter().filter(|c| !c.passed()).count();
    say(format!(
        "-- {section}: {} checks, {bad} failed, {:.1} s",
        r.len(),
        started.elapsed().as_secs_f64()
    ));
}

/// Runs all correctness checks and prints each result as it completes.
pub fn run(gpu: &Gpu, tk: &TestKernels, o: &Options) -> Vec<CheckResult> {
    let dev = &gpu.dev;
    let mut all = Vec::new();
    let mut rng = ChaCha8Rng::seed_from_u64(0xb5e1_1005);
    let scale = if o.quick { 8 } else { 1 };

    say("\n## field arithmetic (Fr, Fp, Fp2) vs blst");
    let t = Instant::now();
    let mut r = testing::run_field_checks::<Fr>(
        |op, a, b| tk.fr_op(dev, op, a, b),
        &mut rng,
        (1 << 17) / scale,
    );
    r.extend(testing::run_field_checks::<Fp>(
        |op, a, b| tk.fp_op(dev, op, a, b),
        &mut rng,
        (1 << 16) / scale,
    ));
    r.extend(testing::run_field_checks::<Fp2>(
        |op, a, b| tk.fp2_op(dev, op, a, b),
        &mut rng,
        (1 << 14) / scale,
    ));
    report("field", t, &r);
    all.extend(r);

    say("\n## curve arithmetic (G1, G2 in XYZZ) vs blst");
    let t = Instant::now();
    let mut r = testing::run_g1_checks(
        |op, p, q, a| tk.g1_op(dev, op, p, q, a),
        &mut rng,
        8192 / scale,
    );
    r.extend(testing::run_g2_checks(
        |op, p, q, a| tk.g2_op(dev, op, p, q, a),
        &mut rng,
        2048 / scale,
    ));
    report("curve", t, &r);
    all.extend(r);

    say("\n## parameter points decoded on the device vs blst");
    let t = Instant::now();
    let r = match bellows_cuda::decode::Decode::new(dev) {
        Ok(d) => testing::run_decode_checks(
            |b| d.g1_from_host(dev, b),
            |b| d.g2_from_host(dev, b),
            &mut rng,
        ),
        Err(e) => vec![failed("decode kernels", e)],
    };
    report("decode", t, &r);
    all.extend(r);

    say("\n## NTT twiddle table vs blstrs");
    let t = Instant::now();
    let r = vec![twiddle_check(gpu, o.max_log, &mut rng)];
    report("twiddles", t, &r);
    all.extend(r);

    say("\n## NTT vs the CPU backend (bellows-cpu), element for element");
    let t = Instant::now();
    let configs = testing::all_ntt_configs();
    let mut plans: Vec<NttCheckPlan> = Vec::new();
    // Every configuration at every size up to 2^16 (one or two passes), three vectors a call.
    let small_max = if o.quick { 12 } else { 16 };
    for log_n in 0..=small_max.min(o.max_log) {
        plans.push(NttCheckPlan {
            log_n,
            batch: 3,
            configs: configs.clone(),
        });
    }
    // Batches: more vectors than one launch takes (65 535), and a mid-size batch.
    plans.push(NttCheckPlan {
        log_n: 2,
        batch: 70_000,
        configs: vec![configs[5], configs[10]],
    });
    plans.push(NttCheckPlan {
        log_n: 10,
        batch: 200,
        configs: vec![configs[3], configs[12]],
    });
    // Large sizes, one vector, two configurations each, rotating through all sixteen.
    for (next, log_n) in ((small_max + 1)..=o.max_log).enumerate() {
        let pick = vec![configs[next % 16], configs[(next + 7) % 16]];
        plans.push(NttCheckPlan {
            log_n,
            batch: 1,
            configs: pick,
        });
    }
    for p in &plans {
        let t1 = Instant::now();
        let r = testing::run_ntt_checks(
            |d, l, c| gpu.ntt.transform(dev, d, l, c),
            0x5eed ^ u64::from(p.log_n),
            std::slice::from_ref(p),
        );
        let bad = r.iter().filter(|c| !c.passed()).count();
        if p.log_n > 12 || bad > 0 {
            for c in &r {
                say(format!("{c}"));
            }
        } else {
            say(format!(
                "ok   ntt 2^{} x{}: {} checks ({} configurations), {} values",
                p.log_n,
                p.batch,
                r.len(),
                p.configs.len(),
                r.iter().map(|c| c.compared).sum::<usize>()
            ));
        }
        if p.log_n > 20 {
            say(format!("     ({:.1} s)", t1.elapsed().as_secs_f64()));
        }
        all.extend(r);
    }
    // The pinned-memory path gives the same result as the pageable one.
    let r = pinned_path_check(gpu, o.max_log.min(20));
    say(format!("{r}"));
    all.push(r);
    // Round trip on the device at the largest size.
    let r = round_trip_check(gpu, o.max_log);
    say(format!("{r}"));
    all.push(r);

    say("\n## device memory pool");
    let t2 = Instant::now();
    let r = pool_checks(dev);
    report("memory pool", t2, &r);
    all.extend(r);
    let bad = all.iter().filter(|c| !c.passed()).count();
    say(format!(
        "-- all checks so far: {} checks, {bad} failed, NTT section {:.1} s",
        all.len(),
        t.elapsed().as_secs_f64()
    ));
    all
}

/// The device's twiddle table for 2^max_log against ω^e from blstrs at sampled and edge indices.
fn twiddle_check(gpu: &Gpu, max_log: u32, rng: &mut ChaCha8Rng) -> CheckResult {
    let name = format!("twiddle table (ω_N^e, N ≥ 2^{max_log})");
    let (tw_log, table) = match gpu.ntt.twiddle_table(&gpu.dev, max_log) {
        Ok(t) => t,
        Err(e) => return failed(name, e),
    };
    let w = tables::omega(tw_log);
    let count = table.len() as u64;
    let mut idx: Vec<u64> = vec![0, 1, 2, 3, count / 2, count - 2, count - 1];
    idx.extend((0..20_000).map(|_| rng.gen_range(0..count)));
    idx.retain(|&e| e < count);
    let expected: Vec<Fr> = idx.iter().map(|&e| Fr::from(w.pow_vartime([e]))).collect();
    let got: Vec<Fr> = idx.iter().map(|&e| table[e as usize]).collect();
    let mut r = compare(format!("{name}, {count} entries"), &expected, &got, |i| {
        format!("e = {}", idx[i])
    });
    if count != (1u64 << (tw_log - 1)) + 1 {
        r.mismatches += 1;
        r.first_mismatch = Some(format!("table has {count} entries for N = 2^{tw_log}"));
    }
    r
}

fn pinned_path_check(gpu: &Gpu, log_n: u32) -> CheckResult {
    let dev = &gpu.dev;
    let name = format!("ntt 2^{log_n} pinned path equals pageable path");
    let cfg = NttConfig::forward()
        .with_coset(true)
        .with_orders(Ordering::Natural, Ordering::BitReversed);
    let data = testing::random_vector(77, 1 << log_n);
    let mut a = data.clone();
    if let Err(e) = gpu.ntt.transform(dev, &mut a, log_n, &cfg) {
        return failed(name, e);
    }
    let run = || -> bellows_core::Result<Vec<Fr>> {
        let mut p = dev.alloc_pinned::<Fr>(data.len())?;
        p.as_mut_slice()?.copy_from_slice(&data);
        gpu.ntt.transform_pinned(dev, &mut p, log_n, &cfg)?;
        Ok(p.as_slice()?.to_vec())
    };
    match run() {
        Ok(b) => compare(name, &a, &b, |i| format!("element {i}")),
        Err(e) => failed(name, e),
    }
}

fn round_trip_check(gpu: &Gpu, log_n: u32) -> CheckResult {
    let dev = &gpu.dev;
    let name = format!("ntt 2^{log_n} inverse coset (forward coset x) = x, on device");
    let data = testing::random_vector(78, 1 << log_n);
    let run = || -> bellows_core::Result<Vec<Fr>> {
        let mut d = dev.upload(&data)?;
        let fwd = NttConfig::forward()
            .with_coset(true)
            .with_orders(Ordering::Natural, Ordering::BitReversed);
        let inv = NttConfig::inverse()
            .with_coset(true)
            .with_orders(Ordering::BitReversed, Ordering::Natural);
        gpu.ntt.transform_device(dev, &mut d, log_n, &fwd)?;
        gpu.ntt.transform_device(dev, &mut d, log_n, &inv)?;
        dev.download(&d)
    };
    match run() {
        Ok(b) => compare(name, &data, &b, |i| format!("element {i}")),
        Err(e) => failed(name, e),
    }
}

/// A check of one condition: passed, or failed with `why`.
fn condition(name: impl Into<String>, ok: bool, why: impl FnOnce() -> String) -> CheckResult {
    CheckResult {
        name: name.into(),
        compared: 1,
        mismatches: usize::from(!ok),
        first_mismatch: (!ok).then(why),
    }
}

/// The pool keeps what a job freed and counts it as free; `trim_pool` returns the driver's free
/// memory to its baseline; an allocation larger than any piece the pool kept succeeds (the
/// pool is trimmed and the allocation retried) instead of failing for memory the pool holds.
fn pool_checks(dev: &bellows_cuda::CudaDevice) -> Vec<CheckResult> {
    const GIB: usize = 1 << 30;
    const SLACK: usize = 256 << 20;
    let gib = |b: usize| b as f64 / GIB as f64;
    let run = || -> bellows_core::Result<Vec<CheckResult>> {
        let mut out = Vec::new();
        dev.trim_pool()?;
        let (free0, _) = dev.memory_info()?;
        let raw =
            || -> bellows_core::Result<usize> { Ok(dev.memory_info()?.0 - dev.pool_idle_bytes()?) };
        let raw0 = raw()?;
        // A job's worth of scratch: eight buffers of 1 GiB, freed again.
        let bufs = (0..8)
            .map(|_| dev.alloc::<Fr>(GIB / 32))
            .collect::<bellows_core::Result<Vec<_>>>()?;
        drop(bufs);
        dev.synchronize()?;
        let idle = dev.pool_idle_bytes()?;
        out.push(condition(
            "freed memory stays in the pool and counts as free",
            idle >= 8 * GIB && dev.memory_info()?.0 + SLACK >= free0,
            || {
                format!(
                    "pool idle {:.2} GiB, free {:.2} GiB (baseline {:.2} GiB)",
                    gib(idle),
                    gib(dev.memory_info().map(|m| m.0).unwrap_or(0)),
                    gib(free0)
                )
            },
        ));
        dev.trim_pool()?;
        let (idle, raw1) = (dev.pool_idle_bytes()?, raw()?);
        out.push(condition(
            "trim returns the driver's free memory to its baseline",
            idle <= SLACK && raw1 + SLACK >= raw0,
            || {
                format!(
                    "pool idle {:.2} GiB after trim, driver free {:.2} GiB (baseline {:.2} GiB)",
                    gib(idle),
                    gib(raw1),
                    gib(raw0)
                )
            },
        ));
        // Nearly all free memory in 1 GiB pieces, freed into the pool; then one allocation of
        // almost all of it, which no piece can hold.
        let want = free0.saturating_sub(4 * GIB);
        let pieces = (0..want / GIB)
            .map(|_| dev.alloc::<Fr>(GIB / 32))
            .collect::<bellows_core::Result<Vec<_>>>()?;
        drop(pieces);
        dev.synchronize()?;
        let held = dev.pool_idle_bytes()?;
        let big = dev.alloc::<Fr>(want / 32);
        out.push(condition(
            format!(
                "one {:.1} GiB allocation with {:.1} GiB held idle in 1 GiB pieces",
                gib(want),
                gib(held)
            ),
            big.is_ok(),
            || format!("{:?}", big.as_ref().err()),
        ));
        drop(big);
        dev.trim_pool()?;
        Ok(out)
    };
    run().unwrap_or_else(|e| vec![failed("device memory pool", e)])
}

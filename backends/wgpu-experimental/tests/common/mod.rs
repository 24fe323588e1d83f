//! What the tests of this crate share: the backend on the machine's adapter, or a skip.

use bellows_wgpu::WgpuBackend;

/// `n` random scalars from `seed`.
#[allow(dead_code)]
pub fn scalars(n: usize, seed: u64) -> Vec<bellows_core::layout::Fr> {
    use ff::Field;
    use rand::SeedableRng;
    let mut r = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| blstrs::Scalar::random(&mut r).into())
        .collect()
}

/// Whether this run must not skip for want of an adapter: in CI (`CI` set to anything but
/// `false`/`0`), or when `BELLOWS_WGPU_REQUIRED=1`. .ci/run installs Mesa's lavapipe, a software
/// Vulkan adapter, so that these tests always have one there.
pub fn adapter_required() -> bool {
    let on = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    on("CI") || on("BELLOWS_WGPU_REQUIRED")
}

/// The backend on the default adapter. Without one: a panic (test failure) where an adapter is
/// required ([`adapter_required`]), else `None` with a note on stderr (the test passes vacuously
/// and says so).
pub fn backend() -> Option<WgpuBackend> {
    match WgpuBackend::new() {
        Ok(b) => Some(b),
        Err(e) if adapter_required() => {
            panic!("no usable wgpu adapter, and this run requires one (CI or BELLOWS_WGPU_REQUIRED): {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED: no usable wgpu adapter on this machine: {e}");
            None
        }
    }
}

/// The backend with the other limb products than the default's: option `int64=off` where the
/// default uses 64-bit integers (GPUs), `int64=on` where it does not but the adapter offers
/// them (Mesa's lavapipe, where `auto` is off); `None` where the adapter has no 64-bit integers
/// (then the default is the only path).
#[allow(dead_code)]
pub fn other_products() -> Option<WgpuBackend> {
    let b = backend()?;
    if !b.gpu().offers_int64 {
        eprintln!(
            "SKIPPED: adapter {} has no 64-bit integers: one path only",
            b.gpu().name
        );
        return None;
    }
    let want = if b.gpu().int64 { "off" } else { "on" };
    Some(switched(&b, "int64", want, |g| g.int64))
}

/// The default backend again with option `key=value`, which must change what `what` reads.
fn switched<T: PartialEq + std::fmt::Debug>(
    default: &WgpuBackend,
    key: &str,
    value: &str,
    what: impl Fn(&bellows_wgpu::gpu::Gpu) -> T,
) -> WgpuBackend {
    let cfg = bellows_core::BackendConfig::new().option(key, value);
    let other = WgpuBackend::with_config(&cfg).expect("the adapter again");
    assert_ne!(
        what(other.gpu()),
        what(default.gpu()),
        "{key}={value} switches the path"
    );
    other
}

/// The backend with G1's MSM arithmetic in the other form than the default's (option
/// `msm-arith`): `straight` where the default runs loops (software adapters, CI), `loops` where
/// it runs straight-line code (GPUs). The element-by-element checks follow that form.
#[allow(dead_code)]
pub fn other_arith() -> Option<WgpuBackend> {
    let b = backend()?;
    let want = if b.gpu().msm_straight {
        "loops"
    } else {
        "straight"
    };
    Some(switched(&b, "msm-arith", want, |g| g.msm_straight))
}

/// [`other_arith`] for the curve kernels, whose straight-line form Mesa's lavapipe compiles in
/// about five minutes: on a software adapter only with `BELLOWS_WGPU_MSM_VARIANTS=1` (the
/// variable of the MSM's other kernel texts, tests/msm.rs).
#[allow(dead_code)]
pub fn other_arith_curves() -> Option<WgpuBackend> {
    let b = backend()?;
    if b.gpu().device_type == wgpu::DeviceType::Cpu
        && std::env::var("BELLOWS_WGPU_MSM_VARIANTS").as_deref() != Ok("1")
    {
        eprintln!(
            "SKIPPED on the software adapter {}: set BELLOWS_WGPU_MSM_VARIANTS=1 (about five \
             minutes of compiling)",
            b.gpu().name
        );
        return None;
    }
    drop(b);
    other_arith()
}

/// The backend for tests of the G2 kernels: where the default adapter runs G2 on the device
/// (GPUs), or where `BELLOWS_WGPU_G2=1` asks for it on a software adapter (whose compiler takes
/// minutes over the G2 kernels, so CI leaves them out there: `g2=host` is the default on it).
/// Otherwise `None` with a note.
#[allow(dead_code)]
pub fn g2_backend() -> Option<WgpuBackend> {
    use bellows_core::Backend;
    let b = backend()?;
    if b.info().capabilities.msm_g2 {
        return Some(b);
    }
    if std::env::var("BELLOWS_WGPU_G2").is_ok_and(|v| v == "1") {
        let cfg = bellows_core::BackendConfig::new().option("g2", "device");
        return Some(WgpuBackend::with_config(&cfg).expect("the adapter again"));
    }
    eprintln!(
        "SKIPPED: G2 runs on the host on this adapter ({}); BELLOWS_WGPU_G2=1 runs the G2 kernels \
         anyway",
        b.gpu().name
    );
    None
}

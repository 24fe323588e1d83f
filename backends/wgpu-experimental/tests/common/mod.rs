//! What the tests of this crate share: the backend on the machine's adapter, or a skip.

use bellows_wgpu::WgpuBackend;

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

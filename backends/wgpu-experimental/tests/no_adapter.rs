//! Without any adapter the backend is a clear error, never a panic: the Vulkan loader is pointed
//! at a driver file that does not exist (this test is alone in its binary, so no other test sees
//! the setting).

use bellows_core::{BackendConfig, Error};
use bellows_wgpu::WgpuBackend;

#[test]
fn no_adapter_is_a_clear_error() {
    std::env::set_var("VK_ICD_FILENAMES", "/nonexistent/bellows-no-driver.json");
    std::env::set_var("VK_DRIVER_FILES", "/nonexistent/bellows-no-driver.json");
    let e = WgpuBackend::new().unwrap_err();
    match &e {
        Error::Backend { name, reason } => {
            assert_eq!(name, "wgpu");
            assert!(reason.contains("found no GPU adapter"), "{reason}");
            assert!(reason.contains("mesa-vulkan-drivers"), "{reason}");
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
    // Asking for an adapter by name or index changes nothing: still the same clear error.
    let e = WgpuBackend::with_config(&BackendConfig::new().option("adapter", "1")).unwrap_err();
    assert!(e.to_string().contains("found no GPU adapter"), "{e}");
}

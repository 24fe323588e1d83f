//! The backend's name in errors, and driver errors as Bellows errors.

use bellows_backend_api::Error;
use cudarc::driver::result::DriverError;

/// Name of the backend, as given to `--backend`.
pub const NAME: &str = "cuda";

/// Converts a driver error into the core error type, naming the device (`cuda:0`).
pub(crate) fn driver_error(device: &str, e: DriverError) -> Error {
    Error::Device {
        device: device.to_string(),
        reason: e.to_string(),
    }
}

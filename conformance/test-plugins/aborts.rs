//! Test plugin: a valid plugin whose backend constructor aborts the process (as a plugin that
//! fails a C++ assertion or calls `abort()` would). `bellows backends` must survive it: it
//! probes plugins in a child process and lists this one as unavailable.

use bellows_backend_api::{BackendConfig, Result};
use bellows_cpu::CpuBackend;

fn create(_cfg: &BackendConfig) -> Result<CpuBackend> {
    std::process::abort()
}

bellows_backend_api::export_backend!(create);

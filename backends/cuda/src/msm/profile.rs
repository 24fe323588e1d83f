//! The MSM's phase timer (tuning `profile`, `BELLOWS_MSM_PROFILE=1`): synchronises after each
//! phase and prints the times on stderr; off by default, when it costs nothing.

use crate::device::CudaDevice;

/// The phase times of one pass.
pub(crate) struct Phases<'a> {
    dev: &'a CudaDevice,
    on: bool,
    last: std::time::Instant,
    times: Vec<(&'static str, f64)>,
}

impl<'a> Phases<'a> {
    /// A timer for a pass on `dev`; `on` from the tuning.
    pub fn new(dev: &'a CudaDevice, on: bool) -> Self {
        Self {
            dev,
            on,
            last: std::time::Instant::now(),
            times: Vec::new(),
        }
    }

    /// Ends phase `name` (waits for the device when on).
    pub fn mark(&mut self, name: &'static str) {
        if self.on {
            let _ = self.dev.synchronize();
            let now = std::time::Instant::now();
            self.times
                .push((name, (now - self.last).as_secs_f64() * 1e3));
            self.last = now;
        }
    }

    /// Prints the pass's phases: `msm-profile G1 n=… c=…: setup 0.12, … ms`.
    pub fn report(&self, what: &str, n: u64, c: u32) {
        if self.on {
            let parts: Vec<String> = self
                .times
                .iter()
                .map(|(k, v)| format!("{k} {v:.2}"))
                .collect();
            eprintln!("msm-profile {what} n={n} c={c}: {} ms", parts.join(", "));
        }
    }
}

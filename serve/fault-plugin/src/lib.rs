//! A fault-injecting backend for the tests of `bellows serve`: the CPU backend whose composite
//! G1 phase fails after doing its work, as a device that is lost or runs out of memory in the
//! middle of a partition would. Built as the plugin `libbellows_backend_faulty.so` (and as a
//! library, so in-process tests use the same type).
//!
//! Options (`--backend-opt KEY=VALUE`, or `options` in a serve configuration):
//! - `fault`: `device` (an [`Error::Device`], the default), `oom` (an [`Error::OutOfMemory`]) or
//!   `panic` (a panic, which the plugin glue turns into an error);
//! - `fail_calls`: how many G1-phase calls fail, counted from the first; `all` (the default)
//!   or a number (`0`: a correct backend).
//!
//! NOT a backend to prove with: it exists to show that a partition whose device fails is
//! retried elsewhere and its job still completes.

use std::sync::atomic::{AtomicU64, Ordering};

use bellows_backend_api::{
    backend::G1PhaseInput, layout::G1Jacobian, Backend, BackendConfig, BackendInfo, Error, Result,
};
use bellows_cpu::CpuBackend;

/// Which error the faulty G1 phase reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A device error (a lost device).
    Device,
    /// Device out of memory.
    OutOfMemory,
    /// A panic inside the backend.
    Panic,
}

/// The CPU backend with faults injected in `groth16_g1` (see the crate docs).
pub struct FaultyBackend {
    inner: CpuBackend,
    fault: Fault,
    /// Calls that fail, counted from the first; `None`: all.
    fail_calls: Option<u64>,
    calls: AtomicU64,
    failures: AtomicU64,
}

impl FaultyBackend {
    /// A faulty backend from its options (see the crate docs).
    pub fn with_config(cfg: &BackendConfig) -> Result<Self> {
        let fault = match cfg.get_option("fault").unwrap_or("device") {
            "device" => Fault::Device,
            "oom" => Fault::OutOfMemory,
            "panic" => Fault::Panic,
            other => {
                return Err(Error::invalid(format!(
                    "faulty backend: option fault={other:?}: expected device, oom or panic"
                )))
            }
        };
        let fail_calls = match cfg.get_option("fail_calls").unwrap_or("all") {
            "all" => None,
            n => Some(n.parse().map_err(|_| {
                Error::invalid(format!(
                    "faulty backend: option fail_calls={n:?}: expected `all` or a number"
                ))
            })?),
        };
        Ok(Self {
            inner: CpuBackend::with_config(cfg)?,
            fault,
            fail_calls,
            calls: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        })
    }

    /// G1-phase calls that failed so far.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::SeqCst)
    }
}

bellows_backend_api::forward_primitives!(FaultyBackend, inner);

impl Backend for FaultyBackend {
    fn info(&self) -> BackendInfo {
        let mut i = self.inner.info();
        i.name = "faulty".into();
        i.description = "CPU backend with injected G1-phase faults (tests only)".into();
        i
    }

    fn groth16_g1(&self, input: &mut G1PhaseInput<'_>) -> Result<Vec<[G1Jacobian; 4]>> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        // The work is done first: the fault strikes in the middle of the partition, after the
        // device has been busy with it, not at the door.
        let result = self.inner.groth16_g1(input)?;
        if self.fail_calls.is_some_and(|n| call >= n) {
            return Ok(result);
        }
        self.failures.fetch_add(1, Ordering::SeqCst);
        match self.fault {
            Fault::Device => Err(Error::Device {
                device: "faulty0".into(),
                reason: format!("injected device fault in G1-phase call {call}"),
            }),
            Fault::OutOfMemory => Err(Error::OutOfMemory {
                device: "faulty0".into(),
                requested: 1 << 40,
                available: 1 << 20,
            }),
            Fault::Panic => panic!("faulty backend: injected panic in G1-phase call {call}"),
        }
    }
}

bellows_backend_api::export_backend!(FaultyBackend::with_config);

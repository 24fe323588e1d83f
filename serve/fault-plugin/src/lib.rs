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

use bellows_core::{
    backend::{
        BasesHandle, G1PhaseInput, MemoryInfo, MemoryPool, Msm, MsmJob, Ntt, NttConfig,
        SharedPoints,
    },
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Backend, BackendConfig, BackendInfo, Error, Result,
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

impl Ntt for FaultyBackend {
    fn ntt(&self, d: &mut [Fr], l: u32, c: &NttConfig) -> Result<()> {
        self.inner.ntt(d, l, c)
    }
    fn h_poly(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr], l: u32) -> Result<()> {
        self.inner.h_poly(a, b, c, l)
    }
}

impl Msm for FaultyBackend {
    fn load_bases_g1(&self, b: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        self.inner.load_bases_g1(b)
    }
    fn load_bases_g2(&self, b: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        self.inner.load_bases_g2(b)
    }
    fn free_bases(&self, h: BasesHandle) -> Result<()> {
        self.inner.free_bases(h)
    }
    fn msm_g1(&self, h: BasesHandle, j: &[MsmJob<'_>], o: &mut [G1Jacobian]) -> Result<()> {
        self.inner.msm_g1(h, j, o)
    }
    fn msm_g2(&self, h: BasesHandle, j: &[MsmJob<'_>], o: &mut [G2Jacobian]) -> Result<()> {
        self.inner.msm_g2(h, j, o)
    }
}

impl MemoryPool for FaultyBackend {
    fn memory_info(&self) -> Result<MemoryInfo> {
        self.inner.memory_info()
    }
    fn set_memory_budget(&self, b: Option<u64>) -> Result<()> {
        self.inner.set_memory_budget(b)
    }
    fn trim(&self) -> Result<()> {
        self.inner.trim()
    }
}

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

bellows_core::export_backend!(FaultyBackend::with_config);

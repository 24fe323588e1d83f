//! Test plugin: the CPU backend with one deliberate fault, chosen at creation by
//! `BackendConfig::device` as an index into [`MODES`] (`modes.rs`): a panic in one call (caught by
//! the export glue and returned as an error), an error returned by one call, or a malformed answer
//! (wrong number of MSM results, a handle of the wrong length). Mode `ok` is a correct backend.

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{ROption, RResult, RSlice, RSliceMut, RVec},
};
use bellows_backend_api::{
    backend::G1PhaseInput,
    layout::G1Jacobian,
    plugin::{
        abi::{
            FfiBackendInfo, FfiBasesHandle, FfiError, FfiFr, FfiG1Affine, FfiG1Handles,
            FfiG1Jacobian, FfiG2Affine, FfiG2Jacobian, FfiMemoryInfo, FfiMsmJob, FfiNttConfig,
            FfiProofAssignment,
        },
        export::Exported,
        BackendObject, FfiBackend, FfiBackend_TO,
    },
    Backend, BackendConfig, BackendInfo, Error, Result,
};
use bellows_cpu::CpuBackend;

include!("modes.rs");

/// The CPU backend with a fault injected in the calls `mode` names.
struct Faulty {
    mode: &'static str,
    inner: CpuBackend,
}

impl Faulty {
    /// The hook before every forwarded primitive: fails or panics in the call `mode` names.
    fn at(&self, call: &str) -> Result<()> {
        match self.mode.split_once(':') {
            Some(("panic", c)) if c == call => panic!("faulty plugin: deliberate panic in {call}"),
            Some(("error", c)) if c == call => Err(deliberate_error(call)),
            _ => Ok(()),
        }
    }
}

fn deliberate_error(call: &str) -> Error {
    match call {
        "ntt" => Error::Device {
            device: "faulty0".into(),
            reason: "deliberate device error".into(),
        },
        "h_poly" => Error::invalid("deliberate invalid input"),
        "load_bases_g1" => Error::unsupported("faulty", "load_bases_g1"),
        "msm_g1" => Error::OutOfMemory {
            device: "faulty0".into(),
            requested: 1 << 40,
            available: 1 << 20,
        },
        _ => Error::Backend {
            name: "faulty".into(),
            reason: format!("deliberate error in {call}"),
        },
    }
}

impl Drop for Faulty {
    fn drop(&mut self) {
        if self.mode == "panic:drop" {
            panic!("faulty plugin: deliberate panic in drop");
        }
    }
}

bellows_backend_api::forward_primitives!(Faulty, inner, Faulty::at);

impl Backend for Faulty {
    fn info(&self) -> BackendInfo {
        if self.mode == "panic:info" {
            panic!("faulty plugin: deliberate panic in info");
        }
        let mut i = self.inner.info();
        i.name = "faulty".into();
        i.description = self.mode.into();
        i
    }
    fn groth16_g1(&self, input: &mut G1PhaseInput<'_>) -> Result<Vec<[G1Jacobian; 4]>> {
        self.at("groth16_g1")?;
        self.inner.groth16_g1(input)
    }
}

/// Passes every call through to a correct object, then spoils the answer `mode` names.
struct Distort {
    inner: BackendObject,
    mode: &'static str,
}

impl FfiBackend for Distort {
    fn info(&self) -> RResult<FfiBackendInfo, FfiError> {
        self.inner.info()
    }
    fn ntt(&self, d: RSliceMut<'_, FfiFr>, l: u32, c: FfiNttConfig) -> RResult<(), FfiError> {
        self.inner.ntt(d, l, c)
    }
    fn h_poly(
        &self,
        a: RSliceMut<'_, FfiFr>,
        b: RSliceMut<'_, FfiFr>,
        c: RSliceMut<'_, FfiFr>,
        l: u32,
    ) -> RResult<(), FfiError> {
        self.inner.h_poly(a, b, c, l)
    }
    unsafe fn load_bases_g1(
        &self,
        p: *const FfiG1Affine,
        len: u64,
    ) -> RResult<FfiBasesHandle, FfiError> {
        // SAFETY: the host's contract is passed on unchanged.
        let r = unsafe { self.inner.load_bases_g1(p, len) };
        match r {
            RResult::ROk(mut h) if self.mode == "wrong-length:load_bases_g1" => {
                h.len += 1;
                RResult::ROk(h)
            }
            other => other,
        }
    }
    unsafe fn load_bases_g2(
        &self,
        p: *const FfiG2Affine,
        len: u64,
    ) -> RResult<FfiBasesHandle, FfiError> {
        // SAFETY: the host's contract is passed on unchanged.
        unsafe { self.inner.load_bases_g2(p, len) }
    }
    fn free_bases(&self, h: FfiBasesHandle) -> RResult<(), FfiError> {
        self.inner.free_bases(h)
    }
    fn msm_g1(
        &self,
        h: FfiBasesHandle,
        j: RSlice<'_, FfiMsmJob<'_>>,
    ) -> RResult<RVec<FfiG1Jacobian>, FfiError> {
        match self.inner.msm_g1(h, j) {
            RResult::ROk(mut v) if self.mode == "wrong-length:msm_g1" => {
                v.push(FfiG1Jacobian([0; 18]));
                RResult::ROk(v)
            }
            other => other,
        }
    }
    fn msm_g2(
        &self,
        h: FfiBasesHandle,
        j: RSlice<'_, FfiMsmJob<'_>>,
    ) -> RResult<RVec<FfiG2Jacobian>, FfiError> {
        match self.inner.msm_g2(h, j) {
            RResult::ROk(_) if self.mode == "wrong-length:msm_g2" => RResult::ROk(RVec::new()),
            other => other,
        }
    }
    fn memory_info(&self) -> RResult<FfiMemoryInfo, FfiError> {
        self.inner.memory_info()
    }
    fn set_memory_budget(&self, b: ROption<u64>) -> RResult<(), FfiError> {
        self.inner.set_memory_budget(b)
    }
    unsafe fn pin_host(&self, p: *const u8, len: u64) -> RResult<bool, FfiError> {
        // SAFETY: the host's contract is passed on unchanged.
        unsafe { self.inner.pin_host(p, len) }
    }
    unsafe fn unpin_host(&self, p: *const u8) -> RResult<(), FfiError> {
        // SAFETY: the host's contract is passed on unchanged.
        unsafe { self.inner.unpin_host(p) }
    }
    fn trim(&self) -> RResult<(), FfiError> {
        self.inner.trim()
    }
    fn groth16_g1(
        &self,
        a: RSliceMut<'_, FfiFr>,
        b: RSliceMut<'_, FfiFr>,
        c: RSliceMut<'_, FfiFr>,
        l: u32,
        proofs: RSlice<'_, FfiProofAssignment<'_>>,
        handles: FfiG1Handles,
    ) -> RResult<RVec<FfiG1Jacobian>, FfiError> {
        match self.inner.groth16_g1(a, b, c, l, proofs, handles) {
            RResult::ROk(mut v) if self.mode == "wrong-length:groth16_g1" => {
                v.push(FfiG1Jacobian([0; 18]));
                RResult::ROk(v)
            }
            other => other,
        }
    }
}

fn create(cfg: &BackendConfig) -> Result<BackendObject> {
    let mode = *MODES
        .get(cfg.device)
        .ok_or_else(|| Error::invalid(format!("no fault mode {}", cfg.device)))?;
    match mode {
        "panic:create" => panic!("faulty plugin: deliberate panic in create"),
        "error:create" => return Err(deliberate_error("create")),
        _ => {}
    }
    let inner = CpuBackend::new();
    let object = Exported::into_object(Faulty { mode, inner });
    Ok(if mode.starts_with("wrong-length:") {
        FfiBackend_TO::from_value(
            Distort {
                inner: object,
                mode,
            },
            TD_Opaque,
        )
    } else {
        object
    })
}

bellows_backend_api::export_backend_object!(create);

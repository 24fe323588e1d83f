//! Data that crosses the plugin boundary: `#[repr(C)]`, [`StableAbi`] types and their conversions
//! to and from the core types.
//!
//! ## Layout of field elements and points
//! Scalars and points cross as fixed-size arrays of little-endian `u64` limbs in **blst's Montgomery
//! layout**, exactly the bytes of [`crate::layout`] (and of blstrs): [`FfiFr`] is 4 limbs,
//! [`FfiG1Affine`] 12 (x then y, 6 limbs each), [`FfiG2Affine`] 24 (x.c0, x.c1, y.c0, y.c1),
//! [`FfiG1Jacobian`] 18 (X, Y, Z), [`FfiG2Jacobian`] 36. The identity is all zeros (affine) or
//! Z = 0 (Jacobian). Slices are reinterpreted in place, never converted.
//!
//! ## Errors
//! Every entry point returns `RResult<_, FfiError>`. [`FfiError::code`] carries the category of
//! [`crate::Error`] ([`codes`]); unknown codes (from a newer plugin) are read as
//! [`codes::OTHER`], so the error type can gain categories without breaking the layout.

#![allow(unsafe_code)]

use std::{
    any::Any,
    mem::{align_of, size_of},
    path::Path,
};

use abi_stable::{
    std_types::{ROption, RSlice, RString, RVec, Tuple2},
    StableAbi,
};

use crate::{
    backend::{
        BackendConfig, BackendInfo, BasesHandle, Capabilities, DeviceInfo, G1Handles, Group,
        MemoryInfo, MsmJob, NttConfig, NttDirection, Ordering, ProofAssignment,
    },
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Error,
};

/// Error categories carried in [`FfiError::code`].
pub mod codes {
    /// Any other failure; [`super::FfiError::message`] says what. Read as [`crate::Error::Plugin`].
    pub const OTHER: u32 = 0;
    /// [`crate::Error::OutOfMemory`]: `subject` = device, `requested`, `available`.
    pub const OUT_OF_MEMORY: u32 = 1;
    /// [`crate::Error::Unsupported`]: `subject` = backend, `message` = operation.
    pub const UNSUPPORTED: u32 = 2;
    /// [`crate::Error::InvalidInput`]: `message`.
    pub const INVALID_INPUT: u32 = 3;
    /// [`crate::Error::Device`]: `subject` = device, `message` = reason.
    pub const DEVICE: u32 = 4;
    /// The plugin panicked: `subject` = the entry point, `message` = the panic message.
    pub const PANIC: u32 = 5;
    /// [`crate::Error::Backend`]: `subject` = backend name, `message` = reason.
    pub const BACKEND: u32 = 6;
}

/// An error value returned by a plugin entry point.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiError {
    /// Category, one of [`codes`].
    pub code: u32,
    /// Message (meaning depends on `code`, see [`codes`]).
    pub message: RString,
    /// Device, backend or entry point the error is about (see [`codes`]).
    pub subject: RString,
    /// Bytes requested (out-of-memory only, else 0).
    pub requested: u64,
    /// Bytes available (out-of-memory only, else 0).
    pub available: u64,
}

impl FfiError {
    fn new(code: u32, message: impl Into<RString>, subject: impl Into<RString>) -> Self {
        Self {
            code,
            message: message.into(),
            subject: subject.into(),
            requested: 0,
            available: 0,
        }
    }

    /// A caught panic of entry point `call`, with the panic's message when it has one.
    pub fn panic(call: &str, payload: &(dyn Any + Send)) -> Self {
        Self::new(codes::PANIC, crate::error::panic_message(payload), call)
    }

    /// An [`crate::Error::Unsupported`] of `operation` on backend `backend`.
    pub fn unsupported(backend: &str, operation: &str) -> Self {
        Self::new(codes::UNSUPPORTED, operation, backend)
    }

    /// A generic failure ([`codes::OTHER`]).
    pub fn other(message: impl Into<String>) -> Self {
        Self::new(codes::OTHER, message.into(), "")
    }

    /// Converts to the host's error, naming the plugin file `path`. The categories
    /// out-of-memory, unsupported, invalid input, device and backend error are kept; a panic and
    /// any other failure (an unknown code from a newer plugin included) become [`Error::Plugin`].
    pub fn into_error(self, path: &Path) -> Error {
        let file = path.display();
        match self.code {
            codes::OUT_OF_MEMORY => Error::OutOfMemory {
                device: format!("{} (plugin {file})", self.subject),
                requested: self.requested,
                available: self.available,
            },
            codes::UNSUPPORTED => Error::Unsupported {
                backend: format!("{} (plugin {file})", self.subject),
                operation: self.message.into(),
            },
            codes::INVALID_INPUT => {
                Error::InvalidInput(format!("{} (plugin {file})", self.message))
            }
            codes::DEVICE => Error::Device {
                device: format!("{} (plugin {file})", self.subject),
                reason: self.message.into(),
            },
            codes::BACKEND => Error::Backend {
                name: format!("{} (plugin {file})", self.subject),
                reason: self.message.into(),
            },
            codes::PANIC => Error::Plugin {
                path: path.to_path_buf(),
                reason: format!("panicked in {}: {}", self.subject, self.message),
            },
            _ => Error::Plugin {
                path: path.to_path_buf(),
                reason: self.message.into(),
            },
        }
    }
}

impl From<&Error> for FfiError {
    fn from(e: &Error) -> Self {
        match e {
            Error::OutOfMemory {
                device,
                requested,
                available,
            } => Self {
                code: codes::OUT_OF_MEMORY,
                message: RString::from(e.to_string()),
                subject: device.as_str().into(),
                requested: *requested,
                available: *available,
            },
            Error::Unsupported { backend, operation } => {
                Self::new(codes::UNSUPPORTED, operation.as_str(), backend.as_str())
            }
            Error::InvalidInput(m) => Self::new(codes::INVALID_INPUT, m.as_str(), ""),
            Error::Device { device, reason } => {
                Self::new(codes::DEVICE, reason.as_str(), device.as_str())
            }
            Error::Backend { name, reason } => {
                Self::new(codes::BACKEND, reason.as_str(), name.as_str())
            }
            other => Self::new(codes::OTHER, other.to_string(), ""),
        }
    }
}

macro_rules! limbs_type {
    ($(#[$doc:meta])* $name:ident, $ours:ty, $limbs:expr) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name(pub [u64; $limbs]);

        const _: () = assert!(size_of::<$name>() == size_of::<$ours>());
        const _: () = assert!(align_of::<$name>() == align_of::<$ours>());

        impl $name {
            /// Views layout values as FFI values, without copying.
            pub fn from_layout(s: &[$ours]) -> &[$name] {
                // SAFETY: both are plain `#[repr(C)]` aggregates of `u64` limbs with the same size
                // and alignment (asserted above), in the same limb order: every bit pattern means
                // the same value in both.
                unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<$name>(), s.len()) }
            }
            /// Mutable counterpart of [`Self::from_layout`].
            pub fn from_layout_mut(s: &mut [$ours]) -> &mut [$name] {
                // SAFETY: as above; the unique borrow is carried over.
                unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<$name>(), s.len()) }
            }
            /// Views FFI values as layout values, without copying.
            pub fn to_layout(s: &[$name]) -> &[$ours] {
                // SAFETY: as in `from_layout`.
                unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<$ours>(), s.len()) }
            }
            /// Mutable counterpart of [`Self::to_layout`].
            pub fn to_layout_mut(s: &mut [$name]) -> &mut [$ours] {
                // SAFETY: as in `from_layout`; the unique borrow is carried over.
                unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<$ours>(), s.len()) }
            }
        }
    };
}

limbs_type!(
    /// [`Fr`] as 4 Montgomery limbs.
    FfiFr, Fr, 4
);
limbs_type!(
    /// [`G1Affine`] as 12 limbs: x, y (Fp, 6 Montgomery limbs each).
    FfiG1Affine, G1Affine, 12
);
limbs_type!(
    /// [`G2Affine`] as 24 limbs: x.c0, x.c1, y.c0, y.c1.
    FfiG2Affine, G2Affine, 24
);
limbs_type!(
    /// [`G1Jacobian`] as 18 limbs: X, Y, Z.
    FfiG1Jacobian, G1Jacobian, 18
);
limbs_type!(
    /// [`G2Jacobian`] as 36 limbs: X, Y, Z over Fp2.
    FfiG2Jacobian, G2Jacobian, 36
);

/// [`NttConfig`] across the boundary; enums as `u8` codes (0 = `Forward`/`Natural`,
/// 1 = `Inverse`/`BitReversed`).
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiNttConfig {
    /// 0 forward, 1 inverse.
    pub direction: u8,
    /// 1 for a coset transform.
    pub coset: u8,
    /// 0 natural, 1 bit-reversed.
    pub input_order: u8,
    /// 0 natural, 1 bit-reversed.
    pub output_order: u8,
}

fn order_code(o: Ordering) -> u8 {
    match o {
        Ordering::Natural => 0,
        Ordering::BitReversed => 1,
    }
}

fn order_from(c: u8) -> Result<Ordering, FfiError> {
    match c {
        0 => Ok(Ordering::Natural),
        1 => Ok(Ordering::BitReversed),
        _ => Err(FfiError::new(
            codes::INVALID_INPUT,
            format!("unknown NTT ordering code {c}"),
            "",
        )),
    }
}

impl From<&NttConfig> for FfiNttConfig {
    fn from(c: &NttConfig) -> Self {
        Self {
            direction: match c.direction {
                NttDirection::Forward => 0,
                NttDirection::Inverse => 1,
            },
            coset: u8::from(c.coset),
            input_order: order_code(c.input_order),
            output_order: order_code(c.output_order),
        }
    }
}

impl FfiNttConfig {
    /// Back to [`NttConfig`]; unknown codes are an invalid-input error.
    pub fn to_config(self) -> Result<NttConfig, FfiError> {
        let direction = match self.direction {
            0 => NttDirection::Forward,
            1 => NttDirection::Inverse,
            d => {
                return Err(FfiError::new(
                    codes::INVALID_INPUT,
                    format!("unknown NTT direction code {d}"),
                    "",
                ))
            }
        };
        let base = match direction {
            NttDirection::Forward => NttConfig::forward(),
            NttDirection::Inverse => NttConfig::inverse(),
        };
        Ok(base.with_coset(self.coset != 0).with_orders(
            order_from(self.input_order)?,
            order_from(self.output_order)?,
        ))
    }
}

/// [`BasesHandle`] across the boundary (group: 1 = G1, 2 = G2).
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiBasesHandle {
    /// Backend-chosen identifier.
    pub id: u64,
    /// 1 = G1, 2 = G2.
    pub group: u8,
    /// Number of points.
    pub len: u64,
}

impl From<BasesHandle> for FfiBasesHandle {
    fn from(h: BasesHandle) -> Self {
        Self {
            id: h.id,
            group: match h.group {
                Group::G1 => 1,
                Group::G2 => 2,
            },
            len: h.len,
        }
    }
}

impl FfiBasesHandle {
    /// Back to [`BasesHandle`]; an unknown group code is `None`.
    pub fn to_handle(self) -> Option<BasesHandle> {
        let group = match self.group {
            1 => Group::G1,
            2 => Group::G2,
            _ => return None,
        };
        Some(BasesHandle {
            id: self.id,
            group,
            len: self.len,
        })
    }
}

/// One MSM job ([`MsmJob`]): `Σ scalars[i] · bases[start + i]`, or over the used scalars of
/// `density` only.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct FfiMsmJob<'a> {
    /// Index of the first base point.
    pub start: u64,
    /// The scalars.
    pub scalars: RSlice<'a, FfiFr>,
    /// Density bitmap over `scalars` (layout of [`MsmJob`]); empty: every scalar is used.
    pub density: RSlice<'a, u64>,
}

impl<'a> FfiMsmJob<'a> {
    /// The job as it crosses (a density job over no scalars crosses as a plain one: the same
    /// empty sum).
    pub fn from_job(j: &MsmJob<'a>) -> Self {
        Self {
            start: j.start as u64,
            scalars: RSlice::from_slice(FfiFr::from_layout(j.scalars)),
            density: RSlice::from_slice(j.density.unwrap_or(&[])),
        }
    }

    /// Back to [`MsmJob`]; a start that does not fit in `usize` is an invalid-input error.
    pub fn to_job(&self) -> Result<MsmJob<'a>, Error> {
        let start = usize::try_from(self.start).map_err(|_| {
            Error::invalid(format!("MSM start {} does not fit in usize", self.start))
        })?;
        let job = MsmJob::new(start, FfiFr::to_layout(self.scalars.as_slice()));
        let bits = self.density.as_slice();
        Ok(if bits.is_empty() {
            job
        } else {
            job.with_density(bits)
        })
    }
}

/// [`ProofAssignment`] across the boundary: one proof of a G1 phase.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct FfiProofAssignment<'a> {
    /// Public inputs, the constant one first.
    pub inputs: RSlice<'a, FfiFr>,
    /// Private variables.
    pub aux: RSlice<'a, FfiFr>,
    /// Density bitmap of the aux variables in A.
    pub a_aux_density: RSlice<'a, u64>,
    /// Density bitmap of the inputs in B.
    pub b_input_density: RSlice<'a, u64>,
    /// Density bitmap of the aux variables in B.
    pub b_aux_density: RSlice<'a, u64>,
}

impl<'a> From<&ProofAssignment<'a>> for FfiProofAssignment<'a> {
    fn from(p: &ProofAssignment<'a>) -> Self {
        Self {
            inputs: RSlice::from_slice(FfiFr::from_layout(p.inputs)),
            aux: RSlice::from_slice(FfiFr::from_layout(p.aux)),
            a_aux_density: RSlice::from_slice(p.a_aux_density),
            b_input_density: RSlice::from_slice(p.b_input_density),
            b_aux_density: RSlice::from_slice(p.b_aux_density),
        }
    }
}

impl<'a> From<&FfiProofAssignment<'a>> for ProofAssignment<'a> {
    fn from(p: &FfiProofAssignment<'a>) -> Self {
        Self {
            inputs: FfiFr::to_layout(p.inputs.as_slice()),
            aux: FfiFr::to_layout(p.aux.as_slice()),
            a_aux_density: p.a_aux_density.as_slice(),
            b_input_density: p.b_input_density.as_slice(),
            b_aux_density: p.b_aux_density.as_slice(),
        }
    }
}

/// [`G1Handles`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiG1Handles {
    /// The h query.
    pub h: FfiBasesHandle,
    /// The l query.
    pub l: FfiBasesHandle,
    /// The a query.
    pub a: FfiBasesHandle,
    /// The b_g1 query.
    pub b_g1: FfiBasesHandle,
}

impl From<G1Handles> for FfiG1Handles {
    fn from(h: G1Handles) -> Self {
        Self {
            h: h.h.into(),
            l: h.l.into(),
            a: h.a.into(),
            b_g1: h.b_g1.into(),
        }
    }
}

impl FfiG1Handles {
    /// Back to [`G1Handles`]; an unknown group code is `None`.
    pub fn to_handles(self) -> Option<G1Handles> {
        Some(G1Handles {
            h: self.h.to_handle()?,
            l: self.l.to_handle()?,
            a: self.a.to_handle()?,
            b_g1: self.b_g1.to_handle()?,
        })
    }
}

/// [`MemoryInfo`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiMemoryInfo {
    /// Bytes free now.
    pub free: u64,
    /// Bytes in total.
    pub total: u64,
    /// The byte budget in force, if any.
    pub budget: ROption<u64>,
}

impl From<MemoryInfo> for FfiMemoryInfo {
    fn from(m: MemoryInfo) -> Self {
        Self {
            free: m.free,
            total: m.total,
            budget: m.budget.into(),
        }
    }
}

impl From<FfiMemoryInfo> for MemoryInfo {
    fn from(m: FfiMemoryInfo) -> Self {
        Self {
            free: m.free,
            total: m.total,
            budget: m.budget.into(),
        }
    }
}

/// [`BackendConfig`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiBackendConfig {
    /// Device index.
    pub device: u64,
    /// Worker threads for host work (`RNone`: the backend's default).
    pub threads: ROption<u64>,
    /// Byte budget (`RNone`: free memory less the backend's margin).
    pub memory_budget: ROption<u64>,
    /// Backend options ([`BackendConfig::options`]), as (key, value) pairs in key order.
    pub options: RVec<Tuple2<RString, RString>>,
}

impl From<&BackendConfig> for FfiBackendConfig {
    fn from(c: &BackendConfig) -> Self {
        Self {
            device: c.device as u64,
            threads: c.threads.map(|t| t as u64).into(),
            memory_budget: c.memory_budget.into(),
            options: c
                .options
                .iter()
                .map(|(k, v)| Tuple2(RString::from(k.as_str()), RString::from(v.as_str())))
                .collect(),
        }
    }
}

impl From<FfiBackendConfig> for BackendConfig {
    fn from(c: FfiBackendConfig) -> Self {
        BackendConfig {
            device: c.device as usize,
            threads: c.threads.into_option().map(|t| t as usize),
            memory_budget: c.memory_budget.into_option(),
            options: c
                .options
                .into_iter()
                .map(|Tuple2(k, v)| (k.into_string(), v.into_string()))
                .collect(),
        }
    }
}

/// Bits of [`FfiCapabilities::flags`].
pub mod capability_bits {
    /// [`crate::Capabilities::ntt`].
    pub const NTT: u64 = 1 << 0;
    /// [`crate::Capabilities::coset_ntt`].
    pub const COSET_NTT: u64 = 1 << 1;
    /// [`crate::Capabilities::fused_h_poly`].
    pub const FUSED_H_POLY: u64 = 1 << 2;
    /// [`crate::Capabilities::msm_g1`].
    pub const MSM_G1: u64 = 1 << 3;
    /// [`crate::Capabilities::msm_g2`].
    pub const MSM_G2: u64 = 1 << 4;
    /// [`crate::Capabilities::resident_bases`].
    pub const RESIDENT_BASES: u64 = 1 << 5;
    /// [`crate::Capabilities::concurrent`].
    pub const CONCURRENT: u64 = 1 << 6;
    /// [`crate::Capabilities::accelerator`].
    pub const ACCELERATOR: u64 = 1 << 7;
}

/// [`Capabilities`] as flag bits (unknown bits are ignored, so new ones can be added).
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiCapabilities {
    /// Bits of [`capability_bits`].
    pub flags: u64,
    /// Largest supported log2 NTT size.
    pub max_log_ntt: u32,
}

impl From<&Capabilities> for FfiCapabilities {
    fn from(c: &Capabilities) -> Self {
        use capability_bits::*;
        let bit = |on: bool, b: u64| if on { b } else { 0 };
        Self {
            flags: bit(c.ntt, NTT)
                | bit(c.coset_ntt, COSET_NTT)
                | bit(c.fused_h_poly, FUSED_H_POLY)
                | bit(c.msm_g1, MSM_G1)
                | bit(c.msm_g2, MSM_G2)
                | bit(c.resident_bases, RESIDENT_BASES)
                | bit(c.concurrent, CONCURRENT)
                | bit(c.accelerator, ACCELERATOR),
            max_log_ntt: c.max_log_ntt,
        }
    }
}

impl From<FfiCapabilities> for Capabilities {
    fn from(c: FfiCapabilities) -> Self {
        use capability_bits::*;
        let has = |b: u64| c.flags & b != 0;
        Capabilities {
            ntt: has(NTT),
            coset_ntt: has(COSET_NTT),
            fused_h_poly: has(FUSED_H_POLY),
            msm_g1: has(MSM_G1),
            msm_g2: has(MSM_G2),
            resident_bases: has(RESIDENT_BASES),
            concurrent: has(CONCURRENT),
            accelerator: has(ACCELERATOR),
            max_log_ntt: c.max_log_ntt,
            ..Capabilities::default()
        }
    }
}

/// [`DeviceInfo`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiDeviceInfo {
    /// Human-readable name.
    pub name: RString,
    /// Total memory in bytes.
    pub memory_total: u64,
}

/// [`BackendInfo`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiBackendInfo {
    /// Name used with `--backend`.
    pub name: RString,
    /// Backend version.
    pub version: RString,
    /// One line on what it is.
    pub description: RString,
    /// Devices driven.
    pub devices: RVec<FfiDeviceInfo>,
    /// What it offers.
    pub capabilities: FfiCapabilities,
}

impl From<&BackendInfo> for FfiBackendInfo {
    fn from(i: &BackendInfo) -> Self {
        Self {
            name: i.name.as_str().into(),
            version: i.version.as_str().into(),
            description: i.description.as_str().into(),
            devices: i
                .devices
                .iter()
                .map(|d| FfiDeviceInfo {
                    name: d.name.as_str().into(),
                    memory_total: d.memory_total,
                })
                .collect(),
            capabilities: (&i.capabilities).into(),
        }
    }
}

impl From<FfiBackendInfo> for BackendInfo {
    fn from(i: FfiBackendInfo) -> Self {
        Self {
            name: i.name.into(),
            version: i.version.into(),
            description: i.description.into(),
            devices: i
                .devices
                .into_iter()
                .map(|d| DeviceInfo::new(d.name, d.memory_total))
                .collect(),
            capabilities: i.capabilities.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn error_categories_survive_the_round_trip() {
        let path = PathBuf::from("/x/libbellows_backend_v.so");
        let oom = Error::OutOfMemory {
            device: "gpu0".into(),
            requested: 10,
            available: 3,
        };
        match FfiError::from(&oom).into_error(&path) {
            Error::OutOfMemory {
                device,
                requested: 10,
                available: 3,
            } => {
                assert!(device.contains("gpu0") && device.contains("libbellows_backend_v.so"))
            }
            e => panic!("wrong kind: {e:?}"),
        }
        let uns = Error::unsupported("v", "msm_g2");
        match FfiError::from(&uns).into_error(&path) {
            Error::Unsupported { backend, operation } => {
                assert!(backend.starts_with("v (plugin /x/"));
                assert_eq!(operation, "msm_g2");
            }
            e => panic!("wrong kind: {e:?}"),
        }
        match FfiError::from(&Error::invalid("bad length")).into_error(&path) {
            Error::InvalidInput(m) => assert!(m.starts_with("bad length (plugin /x/")),
            e => panic!("wrong kind: {e:?}"),
        }
        let dev = Error::Device {
            device: "gpu1".into(),
            reason: "ECC".into(),
        };
        assert!(
            matches!(FfiError::from(&dev).into_error(&path), Error::Device { reason, .. } if reason == "ECC")
        );
        let other = Error::Pipeline("gone".into());
        match FfiError::from(&other).into_error(&path) {
            Error::Plugin { path: p, reason } => {
                assert_eq!(p, path);
                assert_eq!(reason, "pipeline: gone");
            }
            e => panic!("wrong kind: {e:?}"),
        }
        let be = Error::Backend {
            name: "acme".into(),
            reason: "firmware too old".into(),
        };
        let ffi = FfiError::from(&be);
        assert_eq!(ffi.code, codes::BACKEND);
        match ffi.into_error(&path) {
            Error::Backend { name, reason } => {
                assert_eq!(name, "acme (plugin /x/libbellows_backend_v.so)");
                assert_eq!(reason, "firmware too old");
            }
            e => panic!("wrong kind: {e:?}"),
        }
        // An unknown code from a newer plugin is a generic plugin error.
        let future = FfiError {
            code: 99,
            ..FfiError::other("new kind")
        };
        assert!(matches!(future.into_error(&path), Error::Plugin { .. }));
    }

    #[test]
    fn panic_payloads_become_messages() {
        let e = FfiError::panic("msm_g1", &"boom");
        assert_eq!(
            (e.code, e.message.as_str(), e.subject.as_str()),
            (codes::PANIC, "boom", "msm_g1")
        );
        let e = FfiError::panic("ntt", &String::from("formatted 7"));
        let err = e.into_error(Path::new("p.so"));
        assert_eq!(err.to_string(), "plugin p.so: panicked in ntt: formatted 7");
        let e = FfiError::panic("ntt", &42u32);
        assert_eq!(e.message.as_str(), "(no message)");
    }

    #[test]
    fn configs_round_trip() {
        for dir in [NttConfig::forward(), NttConfig::inverse()] {
            for coset in [false, true] {
                for i in [Ordering::Natural, Ordering::BitReversed] {
                    for o in [Ordering::Natural, Ordering::BitReversed] {
                        let c = dir.with_coset(coset).with_orders(i, o);
                        assert_eq!(FfiNttConfig::from(&c).to_config().unwrap(), c);
                    }
                }
            }
        }
        let bad = FfiNttConfig {
            direction: 2,
            coset: 0,
            input_order: 0,
            output_order: 0,
        };
        assert_eq!(bad.to_config().unwrap_err().code, codes::INVALID_INPUT);

        let cfg = BackendConfig {
            device: 3,
            threads: Some(2),
            memory_budget: Some(1 << 30),
            ..BackendConfig::default()
        }
        .option("devices", "0,1")
        .option("tier", "streaming")
        .option("", "empty key and = in value=");
        let ffi = FfiBackendConfig::from(&cfg);
        assert_eq!(ffi.options.len(), 3);
        assert_eq!(BackendConfig::from(ffi), cfg);
        assert_eq!(cfg.get_option("devices"), Some("0,1"));
        let d = BackendConfig::default();
        assert_eq!(BackendConfig::from(FfiBackendConfig::from(&d)), d);

        let h = BasesHandle {
            id: 9,
            group: Group::G2,
            len: 77,
        };
        assert_eq!(FfiBasesHandle::from(h).to_handle(), Some(h));
        assert_eq!(
            FfiBasesHandle {
                group: 0,
                ..FfiBasesHandle::from(h)
            }
            .to_handle(),
            None
        );
    }

    #[test]
    fn info_round_trips() {
        let mut caps = Capabilities::all(20);
        caps.fused_h_poly = true;
        caps.concurrent = false;
        caps.accelerator = true;
        let info = BackendInfo::new("v", "1.2.3", "d")
            .with_device(DeviceInfo::new("dev", 5))
            .with_capabilities(caps);
        let ffi = FfiBackendInfo::from(&info);
        assert_ne!(ffi.capabilities.flags & capability_bits::ACCELERATOR, 0);
        assert_eq!(BackendInfo::from(ffi), info);
        // Each flag maps to its own bit.
        let setters: [fn(&mut Capabilities); 8] = [
            |c: &mut Capabilities| c.ntt = true,
            |c: &mut Capabilities| c.coset_ntt = true,
            |c: &mut Capabilities| c.fused_h_poly = true,
            |c: &mut Capabilities| c.msm_g1 = true,
            |c: &mut Capabilities| c.msm_g2 = true,
            |c: &mut Capabilities| c.resident_bases = true,
            |c: &mut Capabilities| c.concurrent = true,
            |c: &mut Capabilities| c.accelerator = true,
        ];
        for (i, set) in setters.into_iter().enumerate() {
            let mut c = Capabilities::none();
            set(&mut c);
            let f = FfiCapabilities::from(&c);
            assert_eq!(f.flags, 1 << i);
            assert_eq!(Capabilities::from(f), c);
        }
    }

    #[test]
    fn msm_jobs_cross_with_their_density() {
        let sc = vec![Fr::ONE; 70];
        let bits = [u64::MAX, 0b101];
        let j = MsmJob::new(5, &sc).with_density(&bits);
        let f = FfiMsmJob::from_job(&j);
        assert_eq!(f.density.as_slice(), &bits);
        assert_eq!(
            f.scalars.as_slice().as_ptr().cast::<u8>(),
            sc.as_ptr().cast::<u8>()
        );
        let back = f.to_job().unwrap();
        assert_eq!((back.start, back.scalars.len()), (5, 70));
        assert_eq!(back.density, Some(&bits[..]));
        let plain = FfiMsmJob::from_job(&MsmJob::new(0, &sc));
        assert!(plain.density.is_empty());
        assert_eq!(plain.to_job().unwrap().density, None);
    }

    #[test]
    fn views_are_zero_copy() {
        let v = vec![Fr([1, 2, 3, 4]), Fr::ONE];
        let f = FfiFr::from_layout(&v);
        assert_eq!(f[0].0, [1, 2, 3, 4]);
        assert_eq!(f.as_ptr().cast::<u8>(), v.as_ptr().cast::<u8>());
        assert_eq!(FfiFr::to_layout(f), &v[..]);
    }
}

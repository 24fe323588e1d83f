//! Errors across the boundary: [`FfiError`] and its categories ([`codes`]).

use std::{any::Any, path::Path};

use abi_stable::{std_types::RString, StableAbi};

use crate::Error;

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
    pub(super) fn new(code: u32, message: impl Into<RString>, subject: impl Into<RString>) -> Self {
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
}

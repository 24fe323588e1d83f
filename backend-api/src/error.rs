//! The one error type of Bellows.
//!
//! Every fallible operation in the core, in the built-in backends and (after conversion) in plugins
//! returns [`Error`]. Two categories are expected and recoverable rather than bugs:
//! [`Error::OutOfMemory`] (a device or host budget was exceeded; the caller may retry with a smaller
//! batch or another tier) and [`Error::Unsupported`] (a backend does not offer an operation; the
//! caller may route the work elsewhere).

use std::path::PathBuf;

/// Result alias used throughout Bellows.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Categorised error for every Bellows operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A memory budget (device or host) cannot hold the request. Recoverable.
    #[error("out of memory on {device}: requested {requested} bytes, {available} bytes available")]
    OutOfMemory {
        /// Device or pool that ran out (e.g. `"cuda:0"`, `"host"`).
        device: String,
        /// Bytes that were requested.
        requested: u64,
        /// Bytes that were available when the request failed.
        available: u64,
    },
    /// The backend does not implement this operation. Recoverable: route the work elsewhere.
    #[error("backend {backend} does not support {operation}")]
    Unsupported {
        /// Name of the backend.
        backend: String,
        /// The operation that was asked for.
        operation: String,
    },
    /// An argument has the wrong shape (length, size, range, handle).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A parameter, key, proof or input file is malformed.
    #[error("malformed {what}: {reason}")]
    Malformed {
        /// What was being read (e.g. `"parameters file section h, point 12"`).
        what: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A point that is not on the curve or not in the prime-order subgroup.
    #[error("invalid point in {what}: {reason}")]
    InvalidPoint {
        /// Where the point came from.
        what: String,
        /// `"not on the curve"`, `"not in the subgroup"`, `"point at infinity"`, ...
        reason: String,
    },
    /// The circuit's constraints are not satisfied by its witness.
    #[error("circuit is not satisfied: {0}")]
    Unsatisfied(String),
    /// Circuit synthesis failed for another reason.
    #[error("synthesis failed: {0}")]
    Synthesis(String),
    /// A proof did not verify.
    #[error("proof is invalid: {0}")]
    VerificationFailed(String),
    /// No backend by this name, or a backend failed to initialise.
    #[error("backend {name}: {reason}")]
    Backend {
        /// Backend name or plugin path.
        name: String,
        /// The cause.
        reason: String,
    },
    /// A plugin could not be loaded or misbehaved.
    #[error("plugin {path}: {reason}")]
    Plugin {
        /// File the plugin was loaded from.
        path: PathBuf,
        /// The cause.
        reason: String,
    },
    /// I/O error with the file or context it happened on.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A device (GPU) error that is not out-of-memory.
    #[error("device error on {device}: {reason}")]
    Device {
        /// Device name.
        device: String,
        /// Driver or kernel message.
        reason: String,
    },
    /// The pipeline was cancelled or a worker went away.
    #[error("pipeline: {0}")]
    Pipeline(String),
}

impl Error {
    /// Shorthand for [`Error::InvalidInput`].
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidInput(msg.into())
    }

    /// Shorthand for [`Error::Malformed`].
    pub fn malformed(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Malformed {
            what: what.into(),
            reason: reason.into(),
        }
    }

    /// Shorthand for [`Error::Unsupported`].
    pub fn unsupported(backend: impl Into<String>, operation: impl Into<String>) -> Self {
        Error::Unsupported {
            backend: backend.into(),
            operation: operation.into(),
        }
    }

    /// Wraps an I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// True for errors a caller may recover from by retrying smaller or elsewhere.
    pub fn is_recoverable(&self) -> bool {
        matches!(self, Error::OutOfMemory { .. } | Error::Unsupported { .. })
    }
}

/// The message of a caught panic (`catch_unwind`'s payload): its text when it has one (a
/// `&str` or `String` payload, as `panic!` makes), else `"(no message)"`.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

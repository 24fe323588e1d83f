//! The daemon's error type, and its mapping onto gRPC status codes.

/// Result alias of the daemon.
pub type Result<T, E = ServeError> = std::result::Result<T, E>;

/// What can go wrong in the daemon or its client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// An error of the prover core (bad input, unsatisfied circuit, device error, ...).
    #[error(transparent)]
    Core(#[from] bellows_core::Error),
    /// The job store (journal) failed.
    #[error("job store: {0}")]
    Store(String),
    /// No job by this id (never submitted, or expired and purged).
    #[error("no job {0} (never submitted, or its results expired)")]
    NoSuchJob(u64),
    /// A request the daemon refuses (limits, missing fields, unknown circuit).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// A kind of job this daemon was not built to prove (a PoRep C2 job without the cargo
    /// feature `filecoin`).
    #[error("unsupported request: {0}")]
    Unsupported(String),
    /// The daemon is at a configured limit (queue full); try again later.
    #[error("busy: {0}")]
    Busy(String),
    /// The caller may not do this (an identity that is not an admin).
    #[error("not allowed: {0}")]
    Denied(String),
    /// A bad configuration file or flag.
    #[error("configuration: {0}")]
    Config(String),
    /// Talking to a daemon failed (client side).
    #[error("daemon at {addr}: {reason}")]
    Connect {
        /// The address tried.
        addr: String,
        /// The cause.
        reason: String,
    },
    /// The daemon answered with an error (client side).
    #[error("daemon: {0}")]
    Rpc(String),
    /// An I/O error, with what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl ServeError {
    /// Shorthand for [`ServeError::Invalid`].
    pub fn invalid(msg: impl Into<String>) -> Self {
        ServeError::Invalid(msg.into())
    }

    /// Shorthand for [`ServeError::Io`].
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        ServeError::Io {
            context: context.into(),
            source,
        }
    }
}

impl From<rusqlite::Error> for ServeError {
    fn from(e: rusqlite::Error) -> Self {
        ServeError::Store(e.to_string())
    }
}

/// How long a client should wait before retrying a call refused as unavailable.
const RETRY_AFTER_MS: &str = "1000";

impl From<ServeError> for tonic::Status {
    fn from(e: ServeError) -> Self {
        use bellows_core::Error as E;
        let msg = e.to_string();
        match &e {
            ServeError::NoSuchJob(_) => tonic::Status::not_found(msg),
            ServeError::Invalid(_) => tonic::Status::invalid_argument(msg),
            ServeError::Busy(_) => tonic::Status::resource_exhausted(msg),
            ServeError::Unsupported(_) => tonic::Status::unimplemented(msg),
            ServeError::Denied(_) => tonic::Status::permission_denied(msg),
            // The store is down or unreachable: nothing was acknowledged, and the same call
            // succeeds once it is back. UNAVAILABLE is what gRPC clients retry, and the
            // pushback says when (the gRPC retry design's `grpc-retry-pushback-ms`).
            ServeError::Store(_) => {
                let mut s = tonic::Status::unavailable(format!(
                    "{msg} (the daemon's job store is unavailable; nothing was recorded: retry \
                     later)"
                ));
                if let Ok(v) = RETRY_AFTER_MS.parse() {
                    s.metadata_mut().insert("grpc-retry-pushback-ms", v);
                }
                s
            }
            ServeError::Core(c) => match c {
                E::OutOfMemory { .. } => tonic::Status::resource_exhausted(msg),
                E::Unsupported { .. } => tonic::Status::unimplemented(msg),
                E::InvalidInput(_)
                | E::Malformed { .. }
                | E::InvalidPoint { .. }
                | E::Unsatisfied(_)
                | E::Synthesis(_) => tonic::Status::invalid_argument(msg),
                E::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                    tonic::Status::not_found(msg)
                }
                _ => tonic::Status::internal(msg),
            },
            ServeError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                tonic::Status::not_found(msg)
            }
            _ => tonic::Status::internal(msg),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_that_is_down_is_unavailable_with_a_pushback() {
        // #43 item 11: before, INTERNAL, which clients do not retry.
        let s = tonic::Status::from(ServeError::Store("connection refused".into()));
        assert_eq!(s.code(), tonic::Code::Unavailable);
        assert!(s.message().contains("retry later"), "{}", s.message());
        assert_eq!(
            s.metadata().get("grpc-retry-pushback-ms").unwrap(),
            RETRY_AFTER_MS
        );
        let s = tonic::Status::from(ServeError::Denied("x".into()));
        assert_eq!(s.code(), tonic::Code::PermissionDenied);
    }
}

//! The daemon's gRPC listeners: TCP addresses and unix sockets, bound before the journal is
//! touched (a daemon that cannot serve fails no job), each serving one API until shutdown.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};

use crate::{
    config::Listen,
    error::{Result, ServeError},
};

/// A bound gRPC listener: TCP or a unix socket.
pub(super) enum Listener {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener, PathBuf),
}

impl Listener {
    /// Binds `at`; a unix socket gets the permissions `mode` (who may connect: the file
    /// system decides, and each peer's user id is its identity).
    pub(super) async fn bind(at: &Listen, mode: u32) -> Result<Self> {
        match at {
            Listen::Tcp(addr) => tokio::net::TcpListener::bind(addr)
                .await
                .map(Listener::Tcp)
                .map_err(|e| ServeError::io(format!("listening on {addr}"), e)),
            Listen::Unix(path) => {
                remove_stale_socket(path).await?;
                let l = tokio::net::UnixListener::bind(path).map_err(|e| {
                    ServeError::io(format!("listening on unix:{}", path.display()), e)
                })?;
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(
                    |e| ServeError::io(format!("setting the permissions of {}", path.display()), e),
                )?;
                Ok(Listener::Unix(l, path.clone()))
            }
        }
    }

    /// Where it listens: `IP:PORT` (the real port when 0 was asked for) or `unix:PATH`.
    pub(super) fn local(&self) -> Result<String> {
        match self {
            Listener::Tcp(l) => l
                .local_addr()
                .map(|a| a.to_string())
                .map_err(|e| ServeError::io("reading the bound address", e)),
            Listener::Unix(_, p) => Ok(format!("unix:{}", p.display())),
        }
    }

    /// Whether it is a unix socket.
    pub(super) fn is_unix(&self) -> bool {
        matches!(self, Listener::Unix(..))
    }

    /// Serves `router` on this listener until `shutdown` completes (a unix socket's file is
    /// removed then).
    pub(super) async fn serve(
        self,
        router: tonic::transport::server::Router,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> std::result::Result<(), tonic::transport::Error> {
        match self {
            Listener::Tcp(l) => {
                router
                    .serve_with_incoming_shutdown(TcpListenerStream::new(l), shutdown)
                    .await
            }
            Listener::Unix(l, path) => {
                let r = router
                    .serve_with_incoming_shutdown(UnixListenerStream::new(l), shutdown)
                    .await;
                let _ = std::fs::remove_file(path);
                r
            }
        }
    }
}

/// Removes a socket file left by a daemon that is gone (one that still answers is in use).
async fn remove_stale_socket(path: &Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !m.file_type().is_socket() {
        return Err(ServeError::Config(format!(
            "unix:{}: something that is not a socket is in the way",
            path.display()
        )));
    }
    if tokio::net::UnixStream::connect(path).await.is_ok() {
        return Err(ServeError::Config(format!(
            "unix:{}: another process is listening there",
            path.display()
        )));
    }
    std::fs::remove_file(path)
        .map_err(|e| ServeError::io(format!("removing the stale socket {}", path.display()), e))
}

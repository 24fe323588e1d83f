//! TLS for the gRPC listener, and mutual TLS (docs/serve.md, "TLS and mutual TLS").
//!
//! The daemon serves TLS when it has a certificate and key (`tls_cert`, `tls_key`); with a
//! client CA (`tls_client_ca`) it serves only clients that present a certificate signed by that
//! CA (mutual TLS). Clients give the CA that signed the daemon's certificate (`--tls-ca`) and,
//! for mutual TLS, their own certificate and key (`--tls-cert`, `--tls-key`).
//!
//! The files are PEM. They are read and parsed here first, so that a missing, unreadable or
//! malformed file is an error that names the file and says what was expected; the TLS itself is
//! tonic's (rustls, with the `ring` provider).

use std::path::{Path, PathBuf};

use rustls_pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

use crate::error::{Result, ServeError};

/// Reads a PEM file holding one or more certificates; returns its bytes after checking them.
pub fn read_certificates(path: &Path, what: &str) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path)
        .map_err(|e| ServeError::io(format!("reading {what} {}", path.display()), e))?;
    let mut n = 0;
    for c in CertificateDer::pem_slice_iter(&bytes) {
        c.map_err(|e| {
            ServeError::Config(format!("{what} {}: malformed PEM ({e})", path.display()))
        })?;
        n += 1;
    }
    if n == 0 {
        return Err(ServeError::Config(format!(
            "{what} {}: no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)",
            path.display()
        )));
    }
    Ok(bytes)
}

/// Reads a PEM file holding a private key (PKCS#8, PKCS#1 RSA or SEC1 EC); returns its bytes
/// after checking it.
pub fn read_private_key(path: &Path, what: &str) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path)
        .map_err(|e| ServeError::io(format!("reading {what} {}", path.display()), e))?;
    match PrivateKeyDer::from_pem_slice(&bytes) {
        Ok(_) => Ok(bytes),
        Err(rustls_pki_types::pem::Error::NoItemsFound) => Err(ServeError::Config(format!(
            "{what} {}: no private key in it (expected PEM: -----BEGIN PRIVATE KEY-----, \
             -----BEGIN RSA PRIVATE KEY----- or -----BEGIN EC PRIVATE KEY-----)",
            path.display()
        ))),
        Err(e) => Err(ServeError::Config(format!(
            "{what} {}: malformed PEM ({e})",
            path.display()
        ))),
    }
}

/// An error and its causes, on one line (tonic's transport errors keep the reason in `source`).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

/// The daemon's TLS settings (paths as configured).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerTls {
    /// The daemon's certificate chain (PEM), leaf first.
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// Mutual TLS: serve only clients whose certificate this CA (PEM) signed.
    pub client_ca: Option<PathBuf>,
}

impl ServerTls {
    /// Reads and checks the files and builds tonic's configuration; also checks that rustls
    /// accepts them together (the key matches the certificate).
    pub fn load(&self) -> Result<ServerTlsConfig> {
        let cert = read_certificates(&self.cert, "TLS certificate (tls_cert)")?;
        let key = read_private_key(&self.key, "TLS key (tls_key)")?;
        let mut cfg = ServerTlsConfig::new().identity(Identity::from_pem(cert, key));
        if let Some(ca) = &self.client_ca {
            let ca = read_certificates(ca, "client CA (tls_client_ca)")?;
            cfg = cfg
                .client_ca_root(Certificate::from_pem(ca))
                .client_auth_optional(false);
        }
        // Building the acceptor checks the key against the certificate and the CA's
        // certificates; do it now, so that a bad pair fails the start and not the first client.
        tonic::transport::Server::builder()
            .tls_config(cfg.clone())
            .map_err(|e| {
                ServeError::Config(format!(
                    "TLS certificate {} with key {}{}: {}",
                    self.cert.display(),
                    self.key.display(),
                    self.client_ca
                        .as_ref()
                        .map(|c| format!(" and client CA {}", c.display()))
                        .unwrap_or_default(),
                    error_chain(&e)
                ))
            })?;
        Ok(cfg)
    }
}

/// A client's TLS settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientTls {
    /// The CA (PEM) that signed the daemon's certificate.
    pub ca: PathBuf,
    /// Mutual TLS: this client's certificate (PEM), signed by the daemon's client CA.
    pub cert: Option<PathBuf>,
    /// Mutual TLS: this client's private key (PEM).
    pub key: Option<PathBuf>,
    /// The name the daemon's certificate must carry [default: the host of the address].
    pub domain: Option<String>,
}

impl ClientTls {
    /// The client TLS settings from explicit paths, else the environment (`BELLOWS_TLS_CA`,
    /// `BELLOWS_TLS_CERT`, `BELLOWS_TLS_KEY`). `None`: plain text. A certificate without a key
    /// (or a key without a certificate, or either without a CA) is an error.
    pub fn resolve(
        ca: Option<&Path>,
        cert: Option<&Path>,
        key: Option<&Path>,
        domain: Option<&str>,
    ) -> Result<Option<Self>> {
        let env = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let ca = ca.map(Path::to_path_buf).or_else(|| env("BELLOWS_TLS_CA"));
        let cert = cert
            .map(Path::to_path_buf)
            .or_else(|| env("BELLOWS_TLS_CERT"));
        let key = key
            .map(Path::to_path_buf)
            .or_else(|| env("BELLOWS_TLS_KEY"));
        match (&cert, &key) {
            (Some(_), None) => {
                return Err(ServeError::Config(
                    "a client certificate (--tls-cert) needs its key (--tls-key)".into(),
                ))
            }
            (None, Some(_)) => {
                return Err(ServeError::Config(
                    "a client key (--tls-key) needs its certificate (--tls-cert)".into(),
                ))
            }
            _ => {}
        }
        let Some(ca) = ca else {
            if cert.is_some() {
                return Err(ServeError::Config(
                    "a client certificate is for a TLS daemon: give the CA that signed the \
                     daemon's certificate too (--tls-ca FILE)"
                        .into(),
                ));
            }
            if domain.is_some() {
                return Err(ServeError::Config(
                    "--tls-domain is for a TLS daemon: give --tls-ca FILE too".into(),
                ));
            }
            return Ok(None);
        };
        Ok(Some(Self {
            ca,
            cert,
            key,
            domain: domain.map(str::to_string),
        }))
    }

    /// Reads and checks the files and builds tonic's configuration.
    pub fn load(&self) -> Result<ClientTlsConfig> {
        let ca = read_certificates(&self.ca, "TLS CA certificate (--tls-ca)")?;
        let mut cfg = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca));
        if let (Some(c), Some(k)) = (&self.cert, &self.key) {
            let cert = read_certificates(c, "client certificate (--tls-cert)")?;
            let key = read_private_key(k, "client key (--tls-key)")?;
            cfg = cfg.identity(Identity::from_pem(cert, key));
        }
        if let Some(d) = &self.domain {
            cfg = cfg.domain_name(d.clone());
        }
        Ok(cfg)
    }
}

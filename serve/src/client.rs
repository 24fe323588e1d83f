//! A client of the daemon (what `bellows submit/status/await/cancel` and `prove --daemon` use).

use tonic::{
    metadata::MetadataValue, service::interceptor::InterceptedService, transport::Channel, Request,
    Status,
};

use crate::{
    error::{Result, ServeError},
    proto::prover_client::ProverClient,
    tls::{error_chain, ClientTls},
};

/// The default daemon address for clients: `BELLOWS_DAEMON`, else the daemon's default.
pub fn default_addr() -> String {
    std::env::var("BELLOWS_DAEMON").unwrap_or_else(|_| crate::config::DEFAULT_LISTEN.into())
}

/// The token a client sends: read from `file` when given, else `BELLOWS_TOKEN`, else none.
pub fn token(file: Option<&std::path::Path>) -> Result<Option<String>> {
    if let Some(p) = file {
        crate::config::warn_if_readable_by_others(p, "token file");
        let t = std::fs::read_to_string(p)
            .map_err(|e| ServeError::io(format!("reading token file {}", p.display()), e))?;
        return Ok(Some(t.trim().to_string()));
    }
    Ok(std::env::var("BELLOWS_TOKEN")
        .ok()
        .filter(|t| !t.is_empty()))
}

/// Adds `authorization: Bearer TOKEN` to every request.
#[derive(Clone, Debug)]
pub struct Bearer(Option<MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

/// A connected client.
pub type Client = ProverClient<InterceptedService<Channel, Bearer>>;

/// Connects to the daemon at `addr` (`HOST:PORT` or `http://HOST:PORT`) in plain text.
pub async fn connect(addr: &str, token: Option<String>) -> Result<Client> {
    connect_with(addr, token, None).await
}

/// Connects to the daemon at `addr` (`HOST:PORT`, `http://HOST:PORT` or `https://HOST:PORT`),
/// over TLS when `tls` is given (then a bare `HOST:PORT` means `https://`).
pub async fn connect_with(
    addr: &str,
    token: Option<String>,
    tls: Option<&ClientTls>,
) -> Result<Client> {
    let err = |reason: String| ServeError::Connect {
        addr: addr.to_string(),
        reason,
    };
    let url = match (addr.split_once("://"), tls) {
        // A unix socket: tonic's channel takes `unix:PATH` as it is.
        _ if addr.starts_with("unix:") => {
            if tls.is_some() {
                return Err(err(
                    "TLS options were given for a unix socket: connect without them".into(),
                ));
            }
            addr.to_string()
        }
        (None, None) => format!("http://{addr}"),
        (None, Some(_)) => format!("https://{addr}"),
        (Some(("http", _)), None) | (Some(("https", _)), Some(_)) => addr.to_string(),

        (Some(("http", _)), Some(_)) => {
            return Err(err(
                "the address says http:// (plain text) but TLS options were given: write \
                 https:// or HOST:PORT"
                    .into(),
            ))
        }
        (Some(("https", _)), None) => {
            return Err(err(
                "https:// needs the CA that signed the daemon's certificate (--tls-ca FILE or \
                 BELLOWS_TLS_CA)"
                    .into(),
            ))
        }
        (Some((scheme, _)), _) => {
            return Err(err(format!(
                "unknown scheme {scheme}:// (HOST:PORT, http:// or https://)"
            )))
        }
    };
    // `Endpoint::from_shared` (not `Channel`'s) reads `unix:PATH` as a socket.
    let mut endpoint = tonic::transport::Endpoint::from_shared(url)
        .map_err(|e| err(e.to_string()))?
        .connect_timeout(std::time::Duration::from_secs(10));
    if let Some(t) = tls {
        endpoint = endpoint
            .tls_config(t.load()?)
            .map_err(|e| err(format!("TLS: {}", error_chain(&e))))?;
    }
    let channel = endpoint.connect().await.map_err(|e| {
        err(format!(
            "{}{}",
            error_chain(&e),
            connect_hint(&error_chain(&e), tls.is_some())
        ))
    })?;
    // One cheap call right away: a daemon that speaks TLS to a plain-text client (or refuses a
    // client certificate) shows only as a connection closed on the first call, and this is
    // the call where that can be said, so that a later failure (a daemon that stopped
    // mid-call) is never blamed on TLS.
    probe(&channel, tls).await.map_err(err)?;
    let bearer = match token {
        Some(t) => Some(
            format!("Bearer {t}")
                .parse()
                .map_err(|_| err("the token has characters a header cannot carry".into()))?,
        ),
        None => None,
    };
    Ok(
        ProverClient::with_interceptor(channel, Bearer(bearer))
            .max_decoding_message_size(256 << 20),
    )
}

/// With TLS 1.3 the daemon checks a client certificate after the client considers the
/// handshake done, and a plain-text client of a TLS daemon is only told by a closed connection:
/// both show on the first call, without the reason. One cheap call (Backends) right after
/// connecting turns that into an error that says what the daemon wants, from what this client
/// sent.
async fn probe(channel: &Channel, tls: Option<&ClientTls>) -> std::result::Result<(), String> {
    let mut c = ProverClient::new(channel.clone());
    let Err(s) = c.backends(crate::proto::BackendsRequest {}).await else {
        return Ok(());
    };
    match s.code() {
        // The call reached the service (a token missing is for the first real call to report).
        tonic::Code::Unauthenticated
        | tonic::Code::PermissionDenied
        | tonic::Code::Unimplemented => Ok(()),
        _ => {
            let detail = error_text(&s);
            let Some(t) = tls else {
                return Err(format!(
                    "the daemon closed the connection on the first call ({detail}){}",
                    connect_hint(&detail, false)
                ));
            };
            // The daemon's alert, when it arrived in time, already says why (with a hint).
            if detail.contains("(mutual TLS)") || detail.contains("refused this client's") {
                return Err(format!(
                    "the daemon closed the connection after the TLS handshake: {detail}"
                ));
            }
            Err(if t.cert.is_some() {
                format!(
                    "the daemon closed the connection after the TLS handshake: it refused this \
                     client's certificate (--tls-cert): it must be signed by the daemon's client \
                     CA (tls_client_ca), be valid now and be made for client authentication \
                     ({detail})"
                )
            } else {
                format!(
                    "the daemon closed the connection after the TLS handshake: it requires a \
                     client certificate (mutual TLS): give --tls-cert and --tls-key, signed by \
                     the daemon's client CA ({detail})"
                )
            })
        }
    }
}

/// What to try, given why connecting or a call failed (TLS on one side only, a certificate the
/// other side refused).
fn connect_hint(reason: &str, tls: bool) -> String {
    let r = reason.to_ascii_lowercase();
    let hint = if r.contains("certificaterequired") || r.contains("certificate required") {
        "; the daemon requires a client certificate (mutual TLS): give --tls-cert and --tls-key"
    } else if r.contains("unknownca") || r.contains("unknown ca") || r.contains("badcertificate") {
        "; the daemon refused this client's certificate (--tls-cert): it must be signed by the \
         daemon's client CA (tls_client_ca), be valid now and be made for client authentication"
    } else if r.contains("unknownissuer") || r.contains("unknown issuer") {
        "; the daemon's certificate is not signed by the CA given with --tls-ca"
    } else if r.contains("notvalidforname") || r.contains("not valid for name") {
        "; the daemon's certificate does not name this host: connect by a name it carries, or \
         give --tls-domain NAME"
    } else if tls && (r.contains("invalidcontenttype") || r.contains("corrupt message")) {
        "; the daemon does not speak TLS there (connect without --tls-ca)"
    } else if tls {
        "; is `bellows serve` running there with TLS?"
    } else if r.contains("connection reset")
        || r.contains("broken pipe")
        || r.contains("h2 protocol error")
        || r.contains("frame with invalid size")
        || r.contains("connection closed")
        || r.contains("unexpected eof")
    {
        "; if the daemon serves TLS, give the CA that signed its certificate (--tls-ca FILE or \
         BELLOWS_TLS_CA)"
    } else {
        return format!(
            " (is `bellows serve` running there? the default is {})",
            crate::config::DEFAULT_LISTEN
        );
    };
    hint.to_string()
}

/// A status's message with the chain of its source (what the transport said).
fn error_text(s: &Status) -> String {
    let mut msg = s.message().to_string();
    if let Some(src) = std::error::Error::source(s) {
        let chain = error_chain(src);
        if !msg.contains(&chain) {
            msg = format!("{msg}: {chain}");
        }
    }
    msg
}

/// A daemon's error status as a [`ServeError`]. The connection was checked when it was made
/// ([`connect_with`]), so a connection lost now is the daemon stopping or the network, never
/// TLS on one side only.
pub fn rpc_error(s: Status) -> ServeError {
    let msg = error_text(&s);
    let hint = match s.code() {
        tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
            if !msg.contains("job store") =>
        {
            "; the connection to the daemon was lost (it stopped, or the network failed): a \
             job it accepted is journaled, `bellows status` and `bellows await JOB` find it \
             again"
        }
        _ => "",
    };
    ServeError::Rpc(format!("{msg} ({:?}){hint}", s.code()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_lost_mid_call_is_not_blamed_on_tls() {
        // #43 item 11: before, a submit cut by a daemon crash suggested TLS.
        let e = rpc_error(Status::unavailable(
            "transport error: connection reset by peer",
        ))
        .to_string();
        assert!(e.contains("connection to the daemon was lost"), "{e}");
        assert!(!e.contains("TLS") && !e.contains("tls-ca"), "{e}");
    }
}

//! A client of the daemon (what `bellows submit/status/await/cancel` and `prove --daemon` use).

use tonic::{
    metadata::MetadataValue, service::interceptor::InterceptedService, transport::Channel, Request,
    Status,
};

use crate::{
    error::{Result, ServeError},
    proto::prover_client::ProverClient,
};

/// The default daemon address for clients: `BELLOWS_DAEMON`, else the daemon's default.
pub fn default_addr() -> String {
    std::env::var("BELLOWS_DAEMON").unwrap_or_else(|_| crate::config::DEFAULT_LISTEN.into())
}

/// The token a client sends: read from `file` when given, else `BELLOWS_TOKEN`, else none.
pub fn token(file: Option<&std::path::Path>) -> Result<Option<String>> {
    if let Some(p) = file {
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

/// Connects to the daemon at `addr` (`HOST:PORT` or `http://HOST:PORT`).
pub async fn connect(addr: &str, token: Option<String>) -> Result<Client> {
    let url = if addr.contains("://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    };
    let err = |reason: String| ServeError::Connect {
        addr: addr.to_string(),
        reason,
    };
    let endpoint = Channel::from_shared(url).map_err(|e| err(e.to_string()))?;
    let channel = endpoint
        .connect_timeout(std::time::Duration::from_secs(10))
        .connect()
        .await
        .map_err(|e| {
            err(format!(
                "{e} (is `bellows serve` running there? the default is {})",
                crate::config::DEFAULT_LISTEN
            ))
        })?;
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

/// A daemon's error status as a [`ServeError`].
pub fn rpc_error(s: Status) -> ServeError {
    ServeError::Rpc(format!("{} ({:?})", s.message(), s.code()))
}

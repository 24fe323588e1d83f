//! Who a gRPC request comes from: the bearer-token check and the caller's [`Identity`],
//! attached to every request by one interceptor, so that every service on the listener (this
//! crate's `bellows.v1.Prover`, and any other API added beside it) gets the same answer.

use std::sync::Arc;

use tonic::{Request, Status};

use crate::identity::Identity;

/// The named tokens a daemon accepts (`token_file`): `(name, token)`.
pub type Tokens = Vec<(String, String)>;

/// Compares two byte strings in time independent of where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The interceptor: requires `authorization: Bearer TOKEN` when the daemon has tokens, and
/// attaches the caller's [`Identity`] to the request (see [`crate::identity`]).
#[derive(Clone, Debug)]
pub struct Auth {
    tokens: Option<Arc<Tokens>>,
    /// A request without a token passes, identified by its connection (a wrong token is
    /// still refused).
    optional: bool,
}

impl Auth {
    /// Requires one of `tokens` (none: every request passes, identified by its connection).
    pub fn new(tokens: Option<Tokens>) -> Self {
        Self {
            tokens: tokens.map(Arc::new),
            optional: false,
        }
    }

    /// The same check, except that a request without a token passes, identified by its
    /// connection: for a unix socket whose permissions already decide who connects, serving
    /// clients that send no token (Curio's cuzk client) as the user they are.
    pub fn token_optional(&self) -> Self {
        Self {
            tokens: self.tokens.clone(),
            optional: true,
        }
    }

    /// The name of the token the request carries; an error when tokens are required and it
    /// carries none or a wrong one.
    fn token_name(&self, req: &Request<()>) -> Result<Option<String>, Status> {
        let Some(tokens) = &self.tokens else {
            return Ok(None);
        };
        let given = req
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let Some(given) = given else {
            if self.optional {
                return Ok(None);
            }
            return Err(Status::unauthenticated(
                "this daemon requires a token (authorization: Bearer TOKEN; the client's \
                 --token-file or BELLOWS_TOKEN)",
            ));
        };
        // Every token is compared, so the time taken does not say which one came close.
        let mut found = None;
        for (name, token) in tokens.iter() {
            if same_secret(given.as_bytes(), token.as_bytes()) {
                found = Some(name.clone());
            }
        }
        found
            .map(Some)
            .ok_or_else(|| Status::unauthenticated("wrong token"))
    }
}

/// The identity of a request's connection and token (the order of [`crate::identity`]).
pub fn identify(req: &Request<()>, token_name: Option<&str>) -> Identity {
    if let Some(cert) = req.peer_certs().as_deref().and_then(|c| c.first()) {
        return Identity::tls(cert.as_ref());
    }
    if let Some(name) = token_name {
        return Identity::token(name);
    }
    if let Some(cred) = req
        .extensions()
        .get::<tonic::transport::server::UdsConnectInfo>()
        .and_then(|u| u.peer_cred)
    {
        return Identity::uid(cred.uid());
    }
    Identity::local()
}

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        let name = self.token_name(&req)?;
        let who = identify(&req, name.as_deref());
        req.extensions_mut().insert(who);
        Ok(req)
    }
}

/// The identity [`Auth`] attached to `req`. A request that did not pass through it is refused
/// (no job can be given to an unknown caller).
pub fn caller<T>(req: &Request<T>) -> Result<Identity, Status> {
    req.extensions().get::<Identity>().cloned().ok_or_else(|| {
        Status::internal(
            "the request carries no identity (it did not pass the daemon's authentication)",
        )
    })
}

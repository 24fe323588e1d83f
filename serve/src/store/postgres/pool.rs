//! The connections of [`PgStore`]: a small pool of blocking clients, checked before reuse,
//! reconnected after the server restarts, with deadlocks and serialisation failures repeated
//! (the store module's docs, "Connections").

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

use postgres::{error::SqlState, Client, Config, NoTls};

use crate::error::{Result, ServeError};

/// Idle connections kept.
const MAX_IDLE: usize = 8;

/// A connection idle longer than this is checked before use.
const CHECK_AFTER: Duration = Duration::from_secs(2);

/// A PostgreSQL error in words: the server's message (and detail) when it sent one.
fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => match d.detail() {
            Some(detail) => format!("{} ({}; {detail})", d.message(), d.code().code()),
            None => format!("{} ({})", d.message(), d.code().code()),
        },
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(x) = src {
                s.push_str(": ");
                s.push_str(&x.to_string());
                src = x.source();
            }
            s
        }
    }
}

/// Whether repeating the transaction may succeed (a deadlock or a serialisation failure).
fn transient(e: &postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE
    )
}

/// The shared job store of a fleet (see the module docs).
pub struct PgStore {
    config: Config,
    /// The URL without its password (for messages).
    target: String,
    idle: Mutex<Vec<(Client, Instant)>>,
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // Closing a blocking client runs its own small runtime, which must not happen on an
        // async thread: close them on a fresh one.
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|e| e.into_inner()));
        if !idle.is_empty() {
            std::thread::scope(|s| {
                s.spawn(move || drop(idle));
            });
        }
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// `url` with any password replaced by `***` (URL form `postgres://user:pw@…` and key=value
/// form `password=pw`).
pub fn redact(url: &str) -> String {
    if !url.contains("://") {
        return url
            .split_whitespace()
            .map(|kv| {
                if kv.starts_with("password=") {
                    "password=***"
                } else {
                    kv
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
    }
    // postgres://user:password@host/db
    if let Some(scheme_end) = url.find("://") {
        let rest = &url[scheme_end + 3..];
        if let Some(at) = rest.find('@') {
            if let Some(colon) = rest[..at].find(':') {
                return format!(
                    "{}{}:***{}",
                    &url[..scheme_end + 3],
                    &rest[..colon],
                    &rest[at..]
                );
            }
        }
    }
    url.to_string()
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db?…`, libpq's URL and
    /// key=value forms), with `password` if given (it overrides one in the URL), and applies
    /// pending migrations.
    pub fn connect(url: &str, password: Option<&str>) -> Result<Self> {
        let target = redact(url);
        let mut config: Config = url.parse().map_err(|e: postgres::Error| {
            ServeError::Config(format!(
                "store {target:?} is not a PostgreSQL URL: {}",
                describe(&e)
            ))
        })?;
        if config.get_ssl_mode() == postgres::config::SslMode::Require {
            // Said here, before connecting: the driver would only answer that the server does
            // not support TLS, which is not what is wrong.
            return Err(ServeError::Config(format!(
                "store {target:?} asks for TLS (sslmode=require), and this build's PostgreSQL \
                 client has no TLS: use sslmode=disable (or prefer) on a private network, or \
                 put a TLS tunnel in front of the database"
            )));
        }
        if let Some(p) = password {
            config.password(p);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("bellows");
        }
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(30));
        let store = Self {
            config,
            target,
            idle: Mutex::new(Vec::new()),
        };
        store.run("applying migrations", super::migrate)??;
        Ok(store)
    }

    /// Where it connects (without the password).
    pub fn target(&self) -> &str {
        &self.target
    }

    fn checkout(&self) -> Result<Client> {
        loop {
            let next = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            match next {
                Some((mut c, since)) => {
                    if c.is_closed() {
                        continue;
                    }
                    if since.elapsed() > CHECK_AFTER && c.is_valid(Duration::from_secs(5)).is_err()
                    {
                        continue;
                    }
                    return Ok(c);
                }
                None => {
                    return self.config.connect(NoTls).map_err(|e| {
                        ServeError::Store(format!(
                            "connecting to {}: {}",
                            self.target,
                            describe(&e)
                        ))
                    })
                }
            }
        }
    }

    fn put_back(&self, c: Client) {
        if c.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push((c, Instant::now()));
        }
    }

    /// Runs `f` on a pooled connection, repeating it after a deadlock or serialisation failure,
    /// and once on a fresh connection when the pooled one turns out closed (the server restarted:
    /// then every idle connection is dropped too). Every call through here is safe to repeat.
    pub(super) fn run<T>(
        &self,
        what: &str,
        f: impl FnMut(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T> {
        self.run_with(what, true, f)
    }

    pub(super) fn run_with<T>(
        &self,
        what: &str,
        repeat_closed: bool,
        mut f: impl FnMut(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T> {
        let mut attempt = 0;
        let mut reconnected = false;
        loop {
            let mut c = self.checkout()?;
            let r = f(&mut c);
            let closed = c.is_closed();
            self.put_back(c);
            match r {
                Ok(v) => return Ok(v),
                Err(e) if transient(&e) && attempt < 8 => attempt += 1,
                Err(_) if closed && repeat_closed && !reconnected => {
                    // The other idle connections are most likely dead too.
                    reconnected = true;
                    drop(std::mem::take(
                        &mut *self.idle.lock().unwrap_or_else(|e| e.into_inner()),
                    ));
                }
                Err(e) => {
                    return Err(ServeError::Store(format!(
                        "{what} ({}): {}",
                        self.target,
                        describe(&e)
                    )))
                }
            }
        }
    }
}

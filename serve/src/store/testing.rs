//! Helpers for tests against a real PostgreSQL (this crate's and the command line's).
//!
//! The tests read the server's URL from `BELLOWS_TEST_POSTGRES` (`.ci/run` starts a server and
//! sets it). Without it they skip with a message on a developer's machine, and fail where a
//! database is required: `CI=true` or `BELLOWS_POSTGRES_REQUIRED=1`.

use postgres::{Client, Config, NoTls};

use crate::error::{Result, ServeError};

/// The variable holding the test server's URL.
pub const URL_VAR: &str = "BELLOWS_TEST_POSTGRES";

/// Whether a missing database fails the tests (`CI=true` or `BELLOWS_POSTGRES_REQUIRED=1`).
pub fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
        || std::env::var("BELLOWS_POSTGRES_REQUIRED").is_ok_and(|v| v == "1")
}

/// The test server's URL; `None` (after saying why on stderr) when there is none and none is
/// required. Panics when one is required and missing or unreachable.
pub fn server_url(test: &str) -> Option<String> {
    let url = match std::env::var(URL_VAR) {
        Ok(u) if !u.is_empty() => u,
        _ => {
            assert!(
                !required(),
                "{test}: {URL_VAR} is not set, and a PostgreSQL server is required here (CI=true \
                 or BELLOWS_POSTGRES_REQUIRED=1); .ci/run starts one"
            );
            eprintln!("{test}: skipped: no PostgreSQL ({URL_VAR} is not set)");
            return None;
        }
    };
    match url.parse::<Config>().and_then(|c| c.connect(NoTls)) {
        Ok(_) => Some(url),
        Err(e) => {
            assert!(
                !required(),
                "{test}: PostgreSQL at {URL_VAR} is unreachable: {e}"
            );
            eprintln!("{test}: skipped: PostgreSQL at {URL_VAR} is unreachable: {e}");
            None
        }
    }
}

/// Creates database `name` (dropping an older one of that name) on the server at `url` and
/// returns a URL for it (same user, password, host and port).
pub fn fresh_database(url: &str, name: &str) -> Result<String> {
    let err = |e: postgres::Error| ServeError::Store(format!("test database {name}: {e}"));
    let config: Config = url.parse().map_err(err)?;
    let mut c: Client = config.connect(NoTls).map_err(err)?;
    c.batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .map_err(err)?;
    c.batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .map_err(err)?;
    let user = config.get_user().unwrap_or("postgres");
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        Some(postgres::config::Host::Unix(p)) => {
            return Ok(format!(
                "host={} port={} user={user} dbname={name}",
                p.display(),
                config.get_ports().first().copied().unwrap_or(5432)
            ))
        }
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let password = config
        .get_password()
        .map(|p| format!(" password={}", String::from_utf8_lossy(p)))
        .unwrap_or_default();
    Ok(format!(
        "host={host} port={port} user={user}{password} dbname={name}"
    ))
}

//! A plugin's log events on standard error (feature `plugin-log`).
//!
//! A plugin carries its own copy of `tracing`'s statics, which the host's subscriber never sees:
//! without a subscriber of its own, its events (the CUDA backend's memory tiers and tables, say)
//! are lost. [`init`] installs one, once per plugin, writing to standard error under the host's
//! filter: `BELLOWS_LOG` (the `bellows` CLI sets it to its own, from `-v` or `RUST_LOG`), else
//! `RUST_LOG`, else warnings only.

use std::sync::Once;

/// Installs the plugin's subscriber (once; later calls do nothing) and says so at debug level,
/// naming the plugin `name`.
pub fn init(name: &str) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let filter = std::env::var("BELLOWS_LOG")
            .or_else(|_| std::env::var("RUST_LOG"))
            .unwrap_or_else(|_| "warn".into());
        let installed = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(&filter))
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .try_init()
            .is_ok();
        if installed {
            tracing::debug!("{name}: its log events go to standard error (filter {filter:?})");
        }
    });
}

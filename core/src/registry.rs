//! Built-in backends, registered at link time with `inventory`, and selection by name.
//!
//! A built-in backend crate submits one [`BuiltinBackend`]; a binary that links it (e.g.
//! `use bellows_cpu as _;`) sees it in [`builtin_backends`]. `inventory` does not cross a
//! dynamically loaded library, so plugins are found by the plugin loader, not here.

use std::sync::Arc;

use crate::{
    backend::{Backend, BackendConfig},
    Error, Result,
};

/// A backend compiled into the binary.
pub struct BuiltinBackend {
    /// Name used with `--backend`.
    pub name: &'static str,
    /// One line on what it is.
    pub description: &'static str,
    /// Constructor.
    pub create: fn(&BackendConfig) -> Result<Arc<dyn Backend>>,
}

inventory::collect!(BuiltinBackend);

/// Every built-in backend linked into this binary, sorted by name.
pub fn builtin_backends() -> Vec<&'static BuiltinBackend> {
    let mut v: Vec<_> = inventory::iter::<BuiltinBackend>.into_iter().collect();
    v.sort_by_key(|b| b.name);
    v
}

/// Creates the built-in backend called `name`.
pub fn create_builtin(name: &str, cfg: &BackendConfig) -> Result<Arc<dyn Backend>> {
    let all = builtin_backends();
    match all.iter().find(|b| b.name == name) {
        Some(b) => (b.create)(cfg),
        None => Err(Error::Backend {
            name: name.to_string(),
            reason: format!(
                "no built-in backend by this name (built-in: {})",
                all.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

/// Resolves a `--backend` argument to a backend: a built-in name first; plugins (a name found on
/// the plugin search path, or a path to a `.so`) are resolved by the plugin loader.
pub fn resolve(name_or_path: &str, cfg: &BackendConfig) -> Result<Arc<dyn Backend>> {
    create_builtin(name_or_path, cfg)
}

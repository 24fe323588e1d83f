//! Built-in backends: a backend crate compiled into a binary registers itself here at link time
//! (with `inventory`), and [`create_builtin`] makes one by name.
//!
//! A built-in backend crate submits one [`BuiltinBackend`]; a binary that links it (e.g.
//! `use bellows_cpu as _;`, or a dependency on the `bellows` crate, whose default `cpu` feature
//! links the CPU backend) sees it in [`builtin_backends`]. `inventory` does not cross a
//! dynamically loaded library, so plugins are found by bellows-core's plugin loader instead;
//! bellows-core's `registry::resolve` tries both.

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

/// The names of the built-in backends, comma-separated, or, when no backend crate is linked at
/// all, what to link: the list error messages give.
pub fn builtin_names() -> String {
    let all = builtin_backends();
    if all.is_empty() {
        "none: no backend crate is linked into this program; depend on the `bellows` crate (its \
         default `cpu` feature links the CPU backend) or link one yourself with \
         `use bellows_cpu as _;`"
            .to_string()
    } else {
        all.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
    }
}

/// Creates the built-in backend called `name`.
pub fn create_builtin(name: &str, cfg: &BackendConfig) -> Result<Arc<dyn Backend>> {
    match builtin_backends().iter().find(|b| b.name == name) {
        Some(b) => (b.create)(cfg),
        None => Err(Error::Backend {
            name: name.to_string(),
            reason: format!(
                "no built-in backend by this name (built-in: {})",
                builtin_names()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_list_what_is_built_in() {
        // No backend crate is linked into this crate's tests.
        let e = match create_builtin("no-such-backend", &BackendConfig::default()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("created a backend that is not linked"),
        };
        assert!(e.contains("no-such-backend"), "{e}");
        assert!(e.contains(&builtin_names()), "{e}");
        assert!(builtin_names().contains("use bellows_cpu as _;"));
    }
}

//! Built-in backends, registered at link time with `inventory`, and selection by name.
//!
//! A built-in backend crate submits one [`BuiltinBackend`]; a binary that links it (e.g.
//! `use bellows_cpu as _;`, or a dependency on the `bellows` crate, whose default `cpu` feature
//! links the CPU backend) sees it in [`builtin_backends`]. `inventory` does not cross a
//! dynamically loaded library, so plugins are found by the plugin loader
//! ([`crate::plugin::loader`]); [`resolve`] tries both.

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

/// What the error messages say when no backend crate is linked at all.
const NONE_LINKED: &str = "none: no backend crate is linked into this program; depend on the \
     `bellows` crate (its default `cpu` feature links the CPU backend) or link one yourself \
     with `use bellows_cpu as _;`";

/// Creates the built-in backend called `name`.
pub fn create_builtin(name: &str, cfg: &BackendConfig) -> Result<Arc<dyn Backend>> {
    let all = builtin_backends();
    match all.iter().find(|b| b.name == name) {
        Some(b) => (b.create)(cfg),
        None => Err(Error::Backend {
            name: name.to_string(),
            reason: format!(
                "no built-in backend by this name (built-in: {})",
                if all.is_empty() {
                    NONE_LINKED.to_string()
                } else {
                    all.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
                }
            ),
        }),
    }
}

/// Whether a `--backend` argument names a file rather than a backend: it contains a path
/// separator or ends with the shared-library suffix (`.so`).
pub fn is_path_argument(arg: &str) -> bool {
    arg.contains(std::path::MAIN_SEPARATOR)
        || arg.contains('/')
        || arg.ends_with(std::env::consts::DLL_SUFFIX)
}

/// Resolves a `--backend NAME|PATH` argument to a backend:
/// 1. a path (see [`is_path_argument`]) is loaded as a plugin file;
/// 2. otherwise a built-in backend of that name;
/// 3. otherwise `libbellows_backend_NAME.so` along the plugin search path
///    ([`crate::plugin::loader`]: `BELLOWS_PLUGIN_PATH`, the executable's folder, then
///    `~/.local/lib/bellows`).
///
/// Every failure says what was tried: the built-in names and the directories searched.
pub fn resolve(name_or_path: &str, cfg: &BackendConfig) -> Result<Arc<dyn Backend>> {
    if is_path_argument(name_or_path) {
        let b: Arc<dyn Backend> =
            crate::plugin::load_backend(std::path::Path::new(name_or_path), cfg)?;
        return Ok(b);
    }
    let all = builtin_backends();
    if all.iter().any(|b| b.name == name_or_path) {
        return create_builtin(name_or_path, cfg);
    }
    if let Some(path) = crate::plugin::find_plugin(name_or_path) {
        let b: Arc<dyn Backend> = crate::plugin::load_backend(&path, cfg)?;
        return Ok(b);
    }
    let dirs: Vec<String> = crate::plugin::search_dirs()
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    Err(Error::Backend {
        name: name_or_path.to_string(),
        reason: format!(
            "not a built-in backend (built-in: {}) and no plugin file {} in the plugin search path ({})",
            if all.is_empty() { NONE_LINKED.to_string() } else { all.iter().map(|b| b.name).collect::<Vec<_>>().join(", ") },
            crate::plugin::loader::plugin_file_name(name_or_path),
            if dirs.is_empty() { "empty".to_string() } else { dirs.join(":") },
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_arguments_are_recognised() {
        assert!(is_path_argument("./libx.so"));
        assert!(is_path_argument("/opt/a/libbellows_backend_cuda.so"));
        assert!(is_path_argument(&format!(
            "libv{}",
            std::env::consts::DLL_SUFFIX
        )));
        assert!(!is_path_argument("cpu"));
        assert!(!is_path_argument("cuda"));
    }

    #[test]
    fn unknown_names_say_what_was_searched() {
        let e = match resolve("no-such-backend-xyz", &BackendConfig::default()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("resolved a backend that does not exist"),
        };
        assert!(e.contains("no-such-backend-xyz"), "{e}");
        assert!(e.contains("libbellows_backend_no-such-backend-xyz"), "{e}");
        assert!(e.contains("plugin search path"), "{e}");
    }

    #[test]
    fn missing_plugin_file_is_a_plugin_error() {
        match resolve(
            "/nonexistent/dir/libbellows_backend_x.so",
            &BackendConfig::default(),
        ) {
            Err(Error::Plugin { path, reason }) => {
                assert_eq!(
                    path,
                    std::path::Path::new("/nonexistent/dir/libbellows_backend_x.so")
                );
                assert_eq!(reason, "file not found");
            }
            Err(e) => panic!("wrong error: {e}"),
            Ok(_) => panic!("loaded a file that does not exist"),
        }
    }
}

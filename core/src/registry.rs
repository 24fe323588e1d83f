//! Selecting a backend by name or path: the built-in backends, registered at link time with
//! `inventory` ([`bellows_backend_api::builtin`], re-exported here), and plugin files found by the
//! plugin loader ([`crate::plugin::loader`]); [`resolve`] tries both.

use std::sync::Arc;

pub use bellows_backend_api::builtin::{
    builtin_backends, builtin_names, create_builtin, BuiltinBackend,
};

use crate::{
    backend::{Backend, BackendConfig},
    Error, Result,
};

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
    if builtin_backends().iter().any(|b| b.name == name_or_path) {
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
            builtin_names(),
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

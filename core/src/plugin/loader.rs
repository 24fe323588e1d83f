//! Finding and loading plugin files.
//!
//! ## Search path
//! A plugin called `NAME` is the file `libbellows_backend_NAME.so` (`.dylib` on macOS). It is
//! looked for, in order, in:
//! 1. every directory of `BELLOWS_PLUGIN_PATH` (colon-separated, like `PATH`);
//! 2. the directory of the running executable;
//! 3. the user's library folder `$XDG_DATA_HOME/../lib/bellows`, i.e. `~/.local/lib/bellows`
//!    (precisely: `$BELLOWS_USER_LIB_DIR` if set — for tests — else `$HOME/.local/lib/bellows`).
//!
//! ## Loading
//! Each file is opened once per process with abi_stable's `lib_header_from_path` (not
//! `RootModule::load_from_file`, which caches one module per interface type and would silently
//! return the first plugin for every later path) and is never unloaded; several plugins live side
//! by side. Before anything of the plugin runs beyond its library initialisers, its interface
//! version is compared with the host's ([`super::check_interface_version`]); then abi_stable
//! checks the layout of every type of the interface. Any failure is an [`Error::Plugin`] naming the file.
//!
//! Loading a plugin runs its code in the host process: only load plugins you trust as you would
//! trust a linked library. What the loader guarantees is that a plugin that is not one, is built
//! for another interface, panics, or returns malformed answers gives an error instead of
//! undefined behaviour or a crash.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use abi_stable::library::{lib_header_from_path, LibraryError};

use super::{
    abi::FfiBackendConfig,
    host::PluginBackend,
    interface::{check_interface_version, BackendModuleRef},
};
use crate::{
    backend::{BackendConfig, BackendInfo},
    Error, Result,
};

/// Environment variable with extra plugin directories (colon-separated), searched first.
pub const PLUGIN_PATH_ENV: &str = "BELLOWS_PLUGIN_PATH";

/// Environment variable overriding the user's library folder (default `~/.local/lib/bellows`).
pub const USER_LIB_DIR_ENV: &str = "BELLOWS_USER_LIB_DIR";

/// File-name prefix of a plugin, before its name.
pub const FILE_PREFIX: &str = "libbellows_backend_";

/// File name of the plugin called `name`: `libbellows_backend_NAME.so` (`.dylib` on macOS).
pub fn plugin_file_name(name: &str) -> String {
    format!("{FILE_PREFIX}{name}{}", std::env::consts::DLL_SUFFIX)
}

/// The plugin name of a file name, if it follows the `libbellows_backend_NAME.so` pattern.
pub fn plugin_name_of(file: &Path) -> Option<String> {
    let f = file.file_name()?.to_str()?;
    let name = f
        .strip_prefix(FILE_PREFIX)?
        .strip_suffix(std::env::consts::DLL_SUFFIX)?;
    (!name.is_empty()).then(|| name.to_string())
}

/// The user's library folder: `$BELLOWS_USER_LIB_DIR`, else `$HOME/.local/lib/bellows`.
pub fn user_lib_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os(USER_LIB_DIR_ENV) {
        return Some(PathBuf::from(d));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/lib/bellows"))
}

/// The directories searched for plugins, in order (see the module docs); duplicates removed.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os(PLUGIN_PATH_ENV) {
        dirs.extend(std::env::split_paths(&p).filter(|d| !d.as_os_str().is_empty()));
    }
    if let Some(d) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        dirs.push(d);
    }
    dirs.extend(user_lib_dir());
    let mut seen = Vec::new();
    dirs.retain(|d| {
        let key = d.canonicalize().unwrap_or_else(|_| d.clone());
        if seen.contains(&key) {
            false
        } else {
            seen.push(key);
            true
        }
    });
    dirs
}

/// Whether `name` is usable as a plugin name (letters, digits, `_` and `-`).
pub fn is_plugin_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The first `libbellows_backend_NAME.so` along [`search_dirs`].
pub fn find_plugin(name: &str) -> Option<PathBuf> {
    if !is_plugin_name(name) {
        return None;
    }
    let file = plugin_file_name(name);
    search_dirs()
        .into_iter()
        .map(|d| d.join(&file))
        .find(|p| p.is_file())
}

/// Modules already loaded, by canonical path. Libraries are never unloaded.
fn loaded() -> &'static Mutex<HashMap<PathBuf, BackendModuleRef>> {
    static LOADED: std::sync::OnceLock<Mutex<HashMap<PathBuf, BackendModuleRef>>> =
        std::sync::OnceLock::new();
    LOADED.get_or_init(Default::default)
}

fn plugin_err(path: &Path, reason: impl Into<String>) -> Error {
    Error::Plugin {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn library_error(path: &Path, e: LibraryError) -> Error {
    let reason = match e {
        LibraryError::OpenError { err, .. } => format!("cannot open the shared library: {err}"),
        LibraryError::GetSymbolError { .. } => format!(
            "not a Bellows plugin: the library exports no plugin root module (symbol {}); \
             build it with bellows_backend_api::export_backend!",
            super::export::ROOT_SYMBOL
        ),
        LibraryError::InvalidAbiHeader(h) => {
            format!("built with an incompatible abi_stable ({h:?}); this host uses abi_stable 0.11")
        }
        LibraryError::IncompatibleVersionNumber {
            expected_version,
            actual_version,
            ..
        } => format!(
            "plugin interface version {actual_version}, but this host speaks {expected_version}"
        ),
        LibraryError::AbiInstability(e) => format!(
            "the plugin's interface types differ from the host's (built against another \
             bellows-backend-api?): {e}"
        ),
        LibraryError::RootModule { err, .. } => format!("the plugin's root module failed: {err}"),
        other => other.to_string(),
    };
    plugin_err(path, reason)
}

/// Loads (once per process) the root module of the plugin file `path`, checking its interface
/// version and type layouts.
pub fn load_module(path: &Path) -> Result<BackendModuleRef> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => plugin_err(path, "file not found"),
        _ => plugin_err(path, format!("cannot read the file: {e}")),
    })?;
    if !meta.is_file() {
        return Err(plugin_err(path, "not a regular file"));
    }
    let key = path
        .canonicalize()
        .map_err(|e| plugin_err(path, format!("cannot resolve the path: {e}")))?;
    // Held across the load so one file is never opened by two threads at once.
    let mut map = loaded().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(m) = map.get(&key) {
        return Ok(*m);
    }
    let header = lib_header_from_path(&key).map_err(|e| library_error(path, e))?;
    let theirs = header.version_strings();
    check_interface_version(theirs.version.as_str()).map_err(|reason| plugin_err(path, reason))?;
    let module = header
        .init_root_module::<BackendModuleRef>()
        .map_err(|e| library_error(path, e))?;
    map.insert(key, module);
    Ok(module)
}

/// Loads the plugin file `path` and creates its backend with `cfg`.
pub fn load_backend(path: &Path, cfg: &BackendConfig) -> Result<Arc<PluginBackend>> {
    let module = load_module(path)?;
    let object = (module.create())(FfiBackendConfig::from(cfg))
        .into_result()
        .map_err(|e| e.into_error(path))?;
    Ok(Arc::new(PluginBackend::new(object, path)?))
}

/// One candidate file found by [`discover`].
#[derive(Debug)]
pub struct Discovered {
    /// The file.
    pub path: PathBuf,
    /// The plugin name its file name gives (`libbellows_backend_NAME.so` → `NAME`).
    pub name: String,
    /// The backend's info (from a backend created with the default configuration), or why the
    /// file could not be loaded or the backend not created.
    pub result: Result<BackendInfo>,
}

/// A plugin file found along the search path, not loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The file.
    pub path: PathBuf,
    /// The plugin name its file name gives (`libbellows_backend_NAME.so` → `NAME`).
    pub name: String,
}

/// Every `libbellows_backend_NAME.so` along [`search_dirs`] that is a regular file (or a link to
/// one) with a valid plugin name — exactly what [`find_plugin`] can find —, in search order,
/// sorted by name within a folder. Nothing is loaded.
pub fn candidates() -> Vec<Candidate> {
    let mut out = Vec::new();
    for dir in search_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<Candidate> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter_map(|path| {
                let name = plugin_name_of(&path)?;
                (is_plugin_name(&name) && path.is_file()).then_some(Candidate { path, name })
            })
            .collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(files);
    }
    out
}

/// Loads the plugin file `path` and returns its backend's info (from a backend created with the
/// default configuration), in this process.
pub fn probe(path: &Path) -> Result<BackendInfo> {
    load_backend(path, &BackendConfig::default()).map(|b| crate::Backend::info(&*b))
}

/// Every plugin file of [`candidates`], each with its backend's info or the reason it failed, in
/// search order (a name found twice is listed twice: the first one wins in [`find_plugin`]).
///
/// This loads every plugin **into this process**: a plugin that aborts or crashes in its library
/// initialisers or constructor takes the process down with it. `bellows backends` therefore
/// probes each file in a child process instead (see [`probe`]).
pub fn discover() -> Vec<Discovered> {
    candidates()
        .into_iter()
        .map(|c| Discovered {
            result: probe(&c.path),
            path: c.path,
            name: c.name,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_come_from_file_names() {
        let f = plugin_file_name("vendor");
        assert_eq!(plugin_name_of(Path::new(&f)).as_deref(), Some("vendor"));
        assert_eq!(plugin_name_of(Path::new("libbellows_backend_.so")), None);
        assert_eq!(plugin_name_of(Path::new("libother.so")), None);
        assert!(is_plugin_name("cuda-12_x"));
        assert!(!is_plugin_name("a b") && !is_plugin_name("") && !is_plugin_name("../x"));
    }
}

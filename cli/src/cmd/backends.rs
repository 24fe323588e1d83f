//! `bellows backends`: the backends this binary can use.
//!
//! Plugin files are probed each in a child process (`bellows __probe-plugin FILE`, which loads
//! the plugin, creates its backend with the default configuration and prints the backend's info
//! as JSON): loading a plugin runs its code, and a plugin that aborts or crashes in its
//! initialisers or constructor must not take the listing down with it. A child that dies, hangs
//! past [`PROBE_TIMEOUT`] or prints nothing usable is listed as unavailable, with the reason.

use clap::Args;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bellows_core::{BackendConfig, BackendInfo};

use crate::error::Result;
use crate::outln;

/// `bellows backends --help`.
pub const BACKENDS_ABOUT: &str = "List the backends this binary can use: the built-in ones, then \
every plugin file (libbellows_backend_NAME.so) found along BELLOWS_PLUGIN_PATH, the executable's \
folder and ~/.local/lib/bellows, with their version, the devices they drive and their \
capabilities (NTT sizes, coset transforms, fused quotient, G1/G2 MSM, resident bases, \
concurrency). A plugin that fails to load is listed with its file and the reason.\n\n\
A backend is chosen with `--backend NAME` on the computing commands (prove, bench, demo).\n\n\
Examples:\n  bellows backends\n  bellows backends --json";

/// `bellows backends`.
#[derive(Debug, Args)]
pub struct BackendsArgs {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `bellows __probe-plugin FILE` (internal).
#[derive(Debug, Args)]
pub struct ProbePluginArgs {
    /// The plugin file.
    pub path: PathBuf,
}

/// How long one plugin may take to load and describe itself.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// One listed backend.
#[derive(Debug, serde::Serialize)]
struct Entry {
    /// Where it comes from: `"built-in"`, or `"plugin"` (then `path` names the file).
    source: &'static str,
    /// The plugin file, for plugins.
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<PathBuf>,
    /// Whether `--backend NAME` selects this entry (the built-in of a name first, then the
    /// first plugin file of that name along the search path).
    selected_by_name: bool,
    /// Identity and abilities; `None` with `error` when it failed to initialise.
    #[serde(flatten)]
    info: Option<BackendInfo>,
    /// Why the backend could not be opened, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// What the probing child prints.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
enum ProbeAnswer {
    /// The backend's info.
    Info(BackendInfo),
    /// Why the plugin could not be loaded or its backend created.
    Error(String),
}

/// `bellows __probe-plugin FILE`: loads the plugin here and prints a [`ProbeAnswer`].
pub fn probe_child(args: &ProbePluginArgs) -> Result<()> {
    let answer = match bellows_core::plugin::probe(&args.path) {
        Ok(info) => ProbeAnswer::Info(info),
        Err(e) => ProbeAnswer::Error(e.to_string()),
    };
    let text = serde_json::to_string(&answer)
        .map_err(|e| bellows_core::Error::invalid(format!("serialising the answer: {e}")))?;
    outln!("{text}");
    Ok(())
}

/// Why a child ended without an answer, in words.
fn exit_reason(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                4 => " (SIGILL)",
                6 => " (SIGABRT: the plugin aborted)",
                7 => " (SIGBUS)",
                8 => " (SIGFPE)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV: the plugin crashed)",
                _ => "",
            };
            return format!("killed by signal {sig}{name}");
        }
    }
    match status.code() {
        Some(c) => format!("exited with code {c}"),
        None => "ended abnormally".into(),
    }
}

/// Loads the plugin `path` in a child process (see the module docs).
fn probe_in_child(path: &Path) -> std::result::Result<BackendInfo, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut child = Command::new(exe)
        .arg("__probe-plugin")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start a process to load it: {e}"))?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() > PROBE_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "loading it took more than {} s (the plugin hangs in its constructor?)",
                    PROBE_TIMEOUT.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("waiting for the process that loads it: {e}")),
        }
    };
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    match serde_json::from_str::<ProbeAnswer>(out.trim()) {
        Ok(ProbeAnswer::Info(info)) if status.success() => Ok(info),
        Ok(ProbeAnswer::Error(e)) => Err(e),
        _ => {
            let last = err.lines().rev().find(|l| !l.trim().is_empty());
            Err(format!(
                "the plugin took down the process that loaded it: {}{}",
                exit_reason(status),
                last.map(|l| format!("; its last words: {}", l.trim()))
                    .unwrap_or_default()
            ))
        }
    }
}

/// Every backend to list: the built-in ones, then every plugin file found on the plugin search
/// path (`BELLOWS_PLUGIN_PATH`, the executable's folder, the user's library folder), each with its
/// info or the reason it failed to load.
fn entries() -> Vec<Entry> {
    let mut list = builtin_entries();
    let mut named: Vec<String> = list
        .iter()
        .filter_map(|e| e.info.as_ref().map(|i| i.name.clone()))
        .collect();
    for c in bellows_core::plugin::candidates() {
        // `--backend NAME` finds the built-in of that name first, then the first file.
        let selected = !named.contains(&c.name);
        named.push(c.name.clone());
        let (info, error) = match probe_in_child(&c.path) {
            Ok(info) => (info, None),
            Err(e) => (BackendInfo::new(c.name, "", ""), Some(e)),
        };
        list.push(Entry {
            source: "plugin",
            path: Some(c.path),
            selected_by_name: selected,
            info: Some(info),
            error,
        });
    }
    list
}

fn builtin_entries() -> Vec<Entry> {
    bellows_core::registry::builtin_backends()
        .into_iter()
        .map(|b| match (b.create)(&BackendConfig::default()) {
            Ok(backend) => Entry {
                source: "built-in",
                path: None,
                selected_by_name: true,
                info: Some(backend.info()),
                error: None,
            },
            Err(e) => Entry {
                source: "built-in",
                path: None,
                selected_by_name: true,
                info: Some(BackendInfo::new(b.name, "", b.description)),
                error: Some(e.to_string()),
            },
        })
        .collect()
}

/// Runs the command.
pub fn run(args: &BackendsArgs) -> Result<()> {
    let list = entries();
    if args.json {
        let text = serde_json::to_string_pretty(&list)
            .map_err(|e| bellows_core::Error::invalid(format!("serialising the list: {e}")))?;
        outln!("{text}");
        return Ok(());
    }
    if list.is_empty() {
        outln!("no backends are linked into this binary and no plugin was found");
        return Ok(());
    }
    for e in &list {
        let Some(info) = &e.info else { continue };
        let how = if e.selected_by_name {
            format!("--backend {}", info.name)
        } else {
            match &e.path {
                Some(p) => format!(
                    "--backend {} (the name selects an earlier entry)",
                    p.display()
                ),
                None => String::new(),
            }
        };
        match &e.path {
            Some(p) => outln!(
                "{} {} (plugin: {}; {how})",
                info.name,
                info.version,
                p.display()
            ),
            None => outln!("{} {} (built-in; {how})", info.name, info.version),
        }
        if !info.description.is_empty() {
            outln!("  {}", info.description);
        }
        if let Some(err) = &e.error {
            outln!("  unavailable: {err}");
            continue;
        }
        for (i, d) in info.devices.iter().enumerate() {
            // A backend that cannot tell the device's memory (wgpu) reports 0: say nothing.
            if d.memory_total == 0 {
                outln!("  device {i}: {}", d.name);
                continue;
            }
            outln!(
                "  device {i}: {} ({:.1} GiB)",
                d.name,
                d.memory_total as f64 / (1u64 << 30) as f64
            );
        }
        outln!("  capabilities: {}", info.capabilities.summary());
    }
    Ok(())
}

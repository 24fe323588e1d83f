//! `bellows backends`: the backends this binary can use.

use bellows_core::{BackendConfig, BackendInfo, Result};

use crate::cli::BackendsArgs;

/// One listed backend.
#[derive(Debug, serde::Serialize)]
struct Entry {
    /// Where it comes from: `"built-in"`, or `"plugin"` (then `path` names the file).
    source: &'static str,
    /// The plugin file, for plugins.
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<std::path::PathBuf>,
    /// Identity and abilities; `None` with `error` when it failed to initialise.
    #[serde(flatten)]
    info: Option<BackendInfo>,
    /// Why the backend could not be opened, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Every backend to list: the built-in ones, then every plugin file found on the plugin search
/// path (`BELLOWS_PLUGIN_PATH`, the executable's folder, the user's library folder), each with its
/// info or the reason it failed to load.
fn entries() -> Vec<Entry> {
    let mut list = builtin_entries();
    list.extend(
        bellows_core::plugin::discover()
            .into_iter()
            .map(|d| match d.result {
                Ok(info) => Entry {
                    source: "plugin",
                    path: Some(d.path),
                    info: Some(info),
                    error: None,
                },
                Err(e) => Entry {
                    source: "plugin",
                    path: Some(d.path),
                    info: Some(BackendInfo::new(d.name, "", "")),
                    error: Some(e.to_string()),
                },
            }),
    );
    list
}

fn builtin_entries() -> Vec<Entry> {
    bellows_core::registry::builtin_backends()
        .into_iter()
        .map(|b| match (b.create)(&BackendConfig::default()) {
            Ok(backend) => Entry {
                source: "built-in",
                path: None,
                info: Some(backend.info()),
                error: None,
            },
            Err(e) => Entry {
                source: "built-in",
                path: None,
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
        println!("{text}");
        return Ok(());
    }
    if list.is_empty() {
        println!("no backends are linked into this binary and no plugin was found");
        return Ok(());
    }
    for e in &list {
        let Some(info) = &e.info else { continue };
        match &e.path {
            Some(p) => println!(
                "{} {} ({}: {})",
                info.name,
                info.version,
                e.source,
                p.display()
            ),
            None => println!("{} {} ({})", info.name, info.version, e.source),
        }
        if !info.description.is_empty() {
            println!("  {}", info.description);
        }
        if let Some(err) = &e.error {
            println!("  unavailable: {err}");
            continue;
        }
        for (i, d) in info.devices.iter().enumerate() {
            println!(
                "  device {i}: {} ({:.1} GiB)",
                d.name,
                d.memory_total as f64 / (1u64 << 30) as f64
            );
        }
        println!("  capabilities: {}", info.capabilities.summary());
    }
    Ok(())
}

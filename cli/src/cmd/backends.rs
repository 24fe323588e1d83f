//! `bellows backends`: the backends this binary can use.

use bellows_core::{BackendConfig, BackendInfo, Result};

use crate::cli::BackendsArgs;

/// One listed backend.
#[derive(Debug, serde::Serialize)]
struct Entry {
    /// Where it comes from: `"built-in"` (plugins will add `"plugin"` with a path).
    source: &'static str,
    /// Identity and abilities; `None` with `error` when it failed to initialise.
    #[serde(flatten)]
    info: Option<BackendInfo>,
    /// Why the backend could not be opened, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Every backend to list: the built-in ones. Extension point: the plugin loader's discoveries
/// are appended here (source `"plugin"`).
fn entries() -> Vec<Entry> {
    bellows_core::registry::builtin_backends()
        .into_iter()
        .map(|b| match (b.create)(&BackendConfig::default()) {
            Ok(backend) => Entry {
                source: "built-in",
                info: Some(backend.info()),
                error: None,
            },
            Err(e) => Entry {
                source: "built-in",
                info: Some(BackendInfo {
                    name: b.name.to_string(),
                    description: b.description.to_string(),
                    ..BackendInfo::default()
                }),
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
        println!("no backends are linked into this binary");
        return Ok(());
    }
    for e in &list {
        let Some(info) = &e.info else { continue };
        println!("{} {} ({})", info.name, info.version, e.source);
        println!("  {}", info.description);
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

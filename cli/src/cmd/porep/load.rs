//! `bellows porep load`: a parameters file loaded with a given check and timed, on the host or
//! as a proving key resident on a backend.

use std::path::PathBuf;

use bellows_filecoin::Check;
use clap::Args;

use crate::backend_opts::{g2_policy, open as open_backend, BackendArg};
use crate::cli::Globals;
use crate::error::Result;

pub(super) const LOAD_ABOUT: &str = "Load (decode and check) a parameters file and report the \
time and the points checked per second: for comparing the checks \
(--check auto|batched|full|digest|curve-only) on one file. Nothing is written.\n\n\
With --onto BACKEND the file is loaded as `porep c2` loads it, as a proving key resident on that \
backend, and the whole load is timed: with --check curve-only a GPU backend is handed the file's \
bytes and decodes the points itself, where they will live.\n\nExamples:\n  \
bellows porep load --params v28-….params --check full\n  \
bellows porep load --params v28-….params --check curve-only --onto cuda";

/// `bellows porep load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The parameters file.
    #[arg(long, value_name = "FILE")]
    pub params: PathBuf,
    /// The check: auto (digest for a published file, else batched), batched, full, digest,
    /// curve-only.
    #[arg(long, value_name = "CHECK", default_value = "auto",
          value_parser = ["auto", "batched", "full", "digest", "curve-only"])]
    pub check: String,
    /// For --check digest: a manifest in parameters.json's format [default: the
    /// parameters.json filecoin-proofs 19.1 carries].
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Load the parameters as a proving key resident on this backend (with its default
    /// options, the G2 MSM where `--g2 auto` puts it), as `porep c2` does, and time that.
    #[arg(long, value_name = "BACKEND")]
    pub onto: Option<String>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn load(a: &LoadArgs, g: &Globals) -> Result<()> {
    let check: Check = a.check.parse()?;
    let r = match &a.onto {
        None => {
            bellows_filecoin::params::load_with_manifest(
                &a.params,
                check,
                a.manifest.as_deref(),
                |_| Ok(()),
            )?
            .1
        }
        Some(name) => {
            let arg = BackendArg {
                backend: name.clone(),
                backend_opt: Vec::new(),
                devices: "all".into(),
                g2: "auto".into(),
            };
            let backend = open_backend(&arg, g)?;
            let (key, r) = bellows_filecoin::params::load_key(
                &a.params,
                check,
                a.manifest.as_deref(),
                None,
                |_| Ok(()),
                backend,
                g2_policy(&arg)?,
            )?;
            tracing::info!("key resident on {name}: {:?}", key.lens());
            r
        }
    };
    let secs = r.elapsed.as_secs_f64();
    let rate = r.points as f64 / secs.max(1e-9);
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "file": a.params.display().to_string(),
                "bytes": r.shape.file_bytes,
                "points": r.points,
                "check": r.check.name(),
                "onto": a.onto,
                "seconds": secs,
                "points_per_second": rate,
                "digest": r.digest,
            })
        );
    } else {
        println!(
            "{}: {} points ({} bytes), check {}{}: {:.2} s, {:.0} points/s{}",
            a.params.display(),
            r.points,
            r.shape.file_bytes,
            r.check.name(),
            a.onto
                .as_ref()
                .map(|b| format!(", onto {b}"))
                .unwrap_or_default(),
            secs,
            rate,
            r.digest
                .map(|d| format!(", digest {d} matches parameters.json"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

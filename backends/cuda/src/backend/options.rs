//! The backend's options (`--backend-opt KEY=VALUE`, `BackendConfig::option`), read once when
//! the backend is created; docs/cuda.md lists them. The MSM's tuning knobs are
//! [`MsmConfig`]'s.

use bellows_backend_api::{backend::BackendConfig, units::parse_bytes, Error, Result};

use crate::{device::CudaDevice, error::NAME, host_pool::PinMethod, msm::MsmConfig};

/// Most lanes (option `streams`) per GPU.
pub const MAX_STREAMS: usize = 8;

/// What the options say.
pub(crate) struct Options {
    /// Lanes per GPU (`streams`, default 1).
    pub streams: usize,
    /// Freed device memory returned to the driver at every synchronisation (`pool-release=sync`)
    /// instead of kept in the pool until trimmed (`trim`, default).
    pub release_at_sync: bool,
    /// The G2 MSM runs in the G1 phase's call (`g2-in-g1-call`, default on).
    pub g2_in_g1_call: bool,
    /// The device memory budget per GPU: `BackendConfig::memory_budget`, else
    /// `gpu-memory-limit`; None: free memory less the safety margin.
    pub budget: Option<u64>,
    /// Most pinned host memory lent (`pinned-host-limit`; None: half the host's memory).
    pub host_limit: Option<u64>,
    /// How pinned host blocks are made (`pin-method`, default `register`).
    pub pin_method: PinMethod,
    /// The MSM's tuning.
    pub msm: MsmConfig,
}

impl Options {
    /// Parses every option; a bad value is an error naming it, before any device is opened.
    pub fn parse(cfg: &BackendConfig) -> Result<Self> {
        Ok(Self {
            streams: stream_count(cfg)?,
            release_at_sync: pool_release_at_sync(cfg)?,
            g2_in_g1_call: g2_in_g1_call(cfg)?,
            budget: match cfg.memory_budget {
                Some(b) => Some(b),
                None => bytes_option(cfg, "gpu-memory-limit")?,
            },
            host_limit: bytes_option(cfg, "pinned-host-limit")?,
            pin_method: cfg
                .get_option("pin-method")
                .map(str::parse)
                .transpose()?
                .unwrap_or_default(),
            msm: MsmConfig::from_options(cfg)?,
        })
    }
}

/// A byte-size option (`8GiB`, `512M`, `1.5GB`: bellows_backend_api::units), if given.
fn bytes_option(cfg: &BackendConfig, key: &str) -> Result<Option<u64>> {
    cfg.get_option(key)
        .map(|v| parse_bytes(v).map_err(|e| Error::invalid(format!("option {key}={v:?}: {e}"))))
        .transpose()
}

/// Lanes per GPU from option `streams` (default 1, at most [`MAX_STREAMS`]).
fn stream_count(cfg: &BackendConfig) -> Result<usize> {
    match cfg.get_option("streams").map(str::trim) {
        None => Ok(1),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_STREAMS).contains(&n) => Ok(n),
            _ => Err(Error::invalid(format!(
                "option streams={v:?}: expected a number of calls in flight per GPU from 1 to \
                 {MAX_STREAMS}"
            ))),
        },
    }
}

/// Option `pool-release`: `trim` (default; device memory freed by a call stays in the driver's
/// pool for the next call until `trim`) or `sync` (the driver's default: returned at every
/// synchronisation, so other processes see it free between calls). True for `sync`.
fn pool_release_at_sync(cfg: &BackendConfig) -> Result<bool> {
    match cfg.get_option("pool-release").map(str::trim) {
        None | Some("trim") => Ok(false),
        Some("sync") => Ok(true),
        Some(v) => Err(Error::invalid(format!(
            "option pool-release={v:?}: expected `trim` (freed device memory is kept for the \
             next call until the backend is trimmed) or `sync` (returned to the driver at \
             every synchronisation)"
        ))),
    }
}

/// Option `g2-in-g1-call`: `on` (default) or `off`.
fn g2_in_g1_call(cfg: &BackendConfig) -> Result<bool> {
    match cfg.get_option("g2-in-g1-call").map(str::trim) {
        None | Some("on") => Ok(true),
        Some("off") => Ok(false),
        Some(v) => Err(Error::invalid(format!(
            "option g2-in-g1-call={v:?}: expected `on` (the G2 MSM of a proof runs in the G1 \
             phase's call, reading the assignments already in device memory) or `off` (a call \
             of its own, uploading them again)"
        ))),
    }
}

/// The GPU ordinals named by option `devices` (`all` or a comma-separated list); without the
/// option, `device` alone when it is set (non-zero), else every GPU.
pub(crate) fn device_list(cfg: &BackendConfig) -> Result<Vec<usize>> {
    match cfg.get_option("devices").map(str::trim) {
        None if cfg.device != 0 => Ok(vec![cfg.device]),
        None | Some("all") | Some("") => {
            let n = CudaDevice::count()?;
            if n == 0 {
                return Err(Error::Backend {
                    name: NAME.into(),
                    reason: "the NVIDIA driver reports no CUDA device on this machine".into(),
                });
            }
            Ok((0..n).collect())
        }
        Some(list) => list
            .split(',')
            .map(|x| {
                x.trim().parse::<usize>().map_err(|_| {
                    Error::invalid(format!(
                        "option devices={list:?}: {x:?} is not a device index (give `all` or a \
                         list like 0,1)"
                    ))
                })
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_take_the_workspace_units() {
        let get = |v: &str| {
            bytes_option(
                &BackendConfig::default().option("gpu-memory-limit", v),
                "gpu-memory-limit",
            )
        };
        assert_eq!(get("1024").unwrap(), Some(1024));
        assert_eq!(get("8GiB").unwrap(), Some(8 << 30));
        assert_eq!(get("512M").unwrap(), Some(512 << 20));
        assert_eq!(get("4MiB").unwrap(), Some(4 << 20));
        // GB is decimal, as everywhere in the workspace (it was binary here once).
        assert_eq!(get("8GB").unwrap(), Some(8_000_000_000));
        assert_eq!(
            bytes_option(&BackendConfig::default(), "gpu-memory-limit").unwrap(),
            None
        );
        for bad in ["lots", "3 parsecs", "-1G"] {
            let e = get(bad).unwrap_err().to_string();
            assert!(e.contains("gpu-memory-limit"), "{bad}: {e}");
        }
        let mut cfg = BackendConfig::default().option("gpu-memory-limit", "1GiB");
        cfg.memory_budget = Some(5);
        assert_eq!(Options::parse(&cfg).unwrap().budget, Some(5));
        let cfg = BackendConfig::default().option("pinned-host-limit", "0");
        assert_eq!(Options::parse(&cfg).unwrap().host_limit, Some(0));
    }

    #[test]
    fn pin_methods_parse() {
        let parse = |v: &str| Options::parse(&BackendConfig::default().option("pin-method", v));
        assert_eq!(
            Options::parse(&BackendConfig::default())
                .unwrap()
                .pin_method,
            PinMethod::Register
        );
        assert_eq!(parse("alloc").unwrap().pin_method, PinMethod::Alloc);
        assert_eq!(parse(" register").unwrap().pin_method, PinMethod::Register);
        let e = parse("mlock").err().unwrap().to_string();
        assert!(e.contains("pin-method") && e.contains("register"), "{e}");
    }

    #[test]
    fn stream_counts_parse() {
        let mut cfg = BackendConfig::default();
        assert_eq!(stream_count(&cfg).unwrap(), 1);
        for (v, want) in [("1", Some(1)), ("2", Some(2)), (" 8 ", Some(8))] {
            cfg = cfg.option("streams", v);
            assert_eq!(stream_count(&cfg).ok(), want, "{v}");
        }
        for bad in ["0", "9", "two", ""] {
            cfg = cfg.option("streams", bad);
            let e = stream_count(&cfg).unwrap_err().to_string();
            assert!(e.contains("streams"), "{bad}: {e}");
        }
    }

    #[test]
    fn pool_release_options_parse() {
        let cfg = BackendConfig::default();
        assert!(!pool_release_at_sync(&cfg).unwrap());
        assert!(!pool_release_at_sync(&cfg.clone().option("pool-release", "trim")).unwrap());
        assert!(pool_release_at_sync(&cfg.clone().option("pool-release", " sync")).unwrap());
        for bad in ["never", "", "0"] {
            let e = pool_release_at_sync(&cfg.clone().option("pool-release", bad))
                .unwrap_err()
                .to_string();
            assert!(e.contains("pool-release"), "{bad}: {e}");
        }
    }

    #[test]
    fn g2_in_g1_call_options_parse() {
        let cfg = BackendConfig::default();
        assert!(g2_in_g1_call(&cfg).unwrap());
        assert!(g2_in_g1_call(&cfg.clone().option("g2-in-g1-call", "on")).unwrap());
        assert!(!g2_in_g1_call(&cfg.clone().option("g2-in-g1-call", " off ")).unwrap());
        for bad in ["yes", "", "0"] {
            let e = g2_in_g1_call(&cfg.clone().option("g2-in-g1-call", bad))
                .unwrap_err()
                .to_string();
            assert!(e.contains("g2-in-g1-call"), "{bad}: {e}");
        }
    }

    #[test]
    fn device_lists_parse() {
        let cfg = BackendConfig::default().option("devices", "1, 3");
        assert_eq!(device_list(&cfg).unwrap(), vec![1, 3]);
        let cfg = BackendConfig::default().option("devices", "zero");
        assert!(device_list(&cfg)
            .unwrap_err()
            .to_string()
            .contains("not a device index"));
        let mut cfg = BackendConfig::default();
        cfg.device = 2;
        assert_eq!(device_list(&cfg).unwrap(), vec![2]);
        // Without the option and with the default device 0: every GPU (none here: an error
        // naming the missing driver, on a machine without one).
        if !crate::device::driver_available() {
            assert!(device_list(&BackendConfig::default()).is_err());
        }
    }
}

//! The MSM's tuning: one struct, filled once from the backend's options when the backend is
//! created ([`MsmConfig::from_options`]). Every default is the fastest measured setting; a knob
//! is for the exception (docs/cuda.md lists them in one table, docs/benchmarks.md has the
//! numbers behind the defaults).
//!
//! Each knob also has an environment variable (`BELLOWS_MSM_*`, [`KNOBS`]) that overrides it,
//! for timing one setting against another in one process: `bellows bench --alternate-env` and
//! `bellows-cuda-msm --sweep` change the variable between calls, so the overrides are applied by
//! one function, [`MsmConfig::with_env_overrides`], when an MSM starts (eleven lookups a call,
//! nothing against an MSM's milliseconds), not read again at every decision. An override that
//! does not parse is ignored; `auto` restores a knob's automatic choice.

use bellows_backend_api::{backend::BackendConfig, Error, Result};

/// Window width of precomputed tables unless told otherwise (`msm-precompute-window`): 13
/// windows of 20 bits. Wider windows mean fewer additions but a bucket set 2^(c−1) long to sort
/// into and sum, and larger tables read at random.
pub const TABLE_WINDOW: u32 = 20;
/// Bucket keys a bin of the binned scatter holds by default: the placing step writes behind the
/// cursors of about one bin at a time, 2^15 × 32 bytes of partly written sectors, a small part
/// of the L2 cache.
pub const BIN_KEYS: u32 = 1 << 15;
/// Buckets per thread in the window pass by default (its cost: 2·len additions a segment, and
/// in the flat pass the double-and-add of the segment's offset, so shorter segments are slower).
pub const SEGMENT: u32 = 32;
/// Inputs per thread in a tree-reduction step by default: these steps run a few thousand
/// threads at most, so a thread's chain of additions is their time, and shorter chains in more
/// steps pay.
pub const REDUCE_PER: u32 = 8;

/// Every tuning knob: its backend option (`--backend-opt KEY=VALUE`) and the environment
/// variable that overrides it.
pub const KNOBS: [(&str, &str); 11] = [
    ("msm-window", "BELLOWS_MSM_WINDOW"),
    ("msm-table", "BELLOWS_MSM_TABLE"),
    ("msm-scatter", "BELLOWS_MSM_SCATTER"),
    ("msm-bin-keys", "BELLOWS_MSM_BIN_KEYS"),
    ("msm-scatter-passes", "BELLOWS_MSM_SCATTER_PASSES"),
    ("msm-segment", "BELLOWS_MSM_SEGMENT"),
    ("msm-reduce-per", "BELLOWS_MSM_REDUCE_PER"),
    ("msm-window-pass", "BELLOWS_MSM_WINDOW_PASS"),
    ("msm-density", "BELLOWS_MSM_DENSITY"),
    ("msm-whole-pass", "BELLOWS_MSM_WHOLE_PASS"),
    ("msm-profile", "BELLOWS_MSM_PROFILE"),
];

/// When an MSM over a set with a precomputed table reads the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TableUse {
    /// When its estimated additions are fewer than without it (default).
    #[default]
    Auto,
    /// Always (the checks use it to reach the table path at small sizes).
    Always,
    /// Never: the table's first window as plain bases (old-against-new timings).
    Never,
}

/// How a pass scatters its digits to their buckets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scatter {
    /// Binned above 2^19 bucket keys, by key ranges below (default).
    #[default]
    Auto,
    /// Launches by key range.
    Ranges,
    /// Two steps through bins of keys, wherever they can run.
    Bins,
}

/// How the window pass sums each window's buckets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WindowPass {
    /// In two levels from 2^17 segments on, flat below (default).
    #[default]
    Auto,
    /// One level, each segment adding its offset's multiple by double-and-add.
    Flat,
    /// Two levels.
    Levels,
}

/// The MSM's tuning. `Default` is the production configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MsmConfig {
    /// Window width in bits (2 to 24) of MSMs that read no table. Default `None`: by size,
    /// log2(n) − 3 between 4 and 16, and 20 from 2^26 scalars on ([`super::plan::window_bits`]).
    pub window: Option<u32>,
    /// When a set's precomputed table is read. Default [`TableUse::Auto`].
    pub table: TableUse,
    /// How digits are scattered. Default [`Scatter::Auto`].
    pub scatter: Scatter,
    /// Bucket keys a bin holds (a power of two, 2^4 to 2^24; more when the keys need more than
    /// 4096 bins). Default [`BIN_KEYS`], 2^15.
    pub bin_keys: u32,
    /// Launches of the scatter by key ranges (1 to 64). Default `None`: one per 2^17 bucket
    /// keys, at most 8 ([`super::plan::scatter_passes`]).
    pub scatter_passes: Option<u32>,
    /// Buckets a thread sums in the window pass (a power of two up to 1024). Default
    /// [`SEGMENT`], 32.
    pub segment: u32,
    /// Inputs a thread adds in a tree-reduction step (2 to 64). Default [`REDUCE_PER`], 8.
    pub reduce_per: u32,
    /// Flat or two-level window pass. Default [`WindowPass::Auto`].
    pub window_pass: WindowPass,
    /// Whether passes read a device copy of the density bitmap in place when the caller made
    /// one (`true`, default), or copy each pass's words from the host.
    pub density_in_place: bool,
    /// Whether an MSM whose one-pass bound fits the room runs in one pass (`true`, default), or
    /// passes are always sized by the per-scalar rule.
    pub whole_pass: bool,
    /// Print each pass's phase times on stderr, synchronising between phases. Default `false`.
    pub profile: bool,
    /// Window width of the precomputed tables built when a set of bases is loaded, where the
    /// device has room for them (options `msm-precompute` and `msm-precompute-window`, 8 to 28).
    /// Default `Some(TABLE_WINDOW)`: tables wherever they fit (`msm-precompute=off`: none).
    pub precompute: Option<u32>,
}

impl Default for MsmConfig {
    fn default() -> Self {
        Self {
            window: None,
            table: TableUse::Auto,
            scatter: Scatter::Auto,
            bin_keys: BIN_KEYS,
            scatter_passes: None,
            segment: SEGMENT,
            reduce_per: REDUCE_PER,
            window_pass: WindowPass::Auto,
            density_in_place: true,
            whole_pass: true,
            profile: false,
            precompute: Some(TABLE_WINDOW),
        }
    }
}

impl MsmConfig {
    /// The tuning named by the backend options (every key of [`KNOBS`], and `msm-precompute`,
    /// `msm-precompute-window`), the defaults for the rest. A value that does not parse is an
    /// error naming the option.
    pub fn from_options(cfg: &BackendConfig) -> Result<Self> {
        let mut c = Self::default();
        for (key, _) in KNOBS {
            if let Some(v) = cfg.get_option(key) {
                c.set(key, v)
                    .map_err(|why| Error::invalid(format!("option {key}={v:?}: expected {why}")))?;
            }
        }
        c.precompute = precompute_window(cfg)?;
        Ok(c)
    }

    /// This tuning with the environment's overrides ([`KNOBS`]) applied: what an MSM starting
    /// now runs with. Values that do not parse are ignored.
    pub fn with_env_overrides(mut self) -> Self {
        for (key, var) in KNOBS {
            if let Ok(v) = std::env::var(var) {
                let _ = self.set(key, &v);
            }
        }
        self
    }

    /// Sets knob `key` from `v`; on a value that does not parse, says what it expected and
    /// changes nothing.
    fn set(&mut self, key: &str, v: &str) -> std::result::Result<(), &'static str> {
        let v = v.trim();
        let number = |ok: fn(u32) -> bool| v.parse::<u32>().ok().filter(|&x| ok(x));
        match key {
            "msm-window" => {
                self.window = match v {
                    "auto" => None,
                    _ => Some(
                        number(|c| (2..=24).contains(&c))
                            .ok_or("auto or a window width in bits from 2 to 24")?,
                    ),
                }
            }
            "msm-table" => {
                self.table = match v {
                    "auto" => TableUse::Auto,
                    "always" => TableUse::Always,
                    "never" => TableUse::Never,
                    _ => return Err("auto, always or never"),
                }
            }
            "msm-scatter" => {
                self.scatter = match v {
                    "auto" => Scatter::Auto,
                    "ranges" => Scatter::Ranges,
                    "bins" => Scatter::Bins,
                    _ => return Err("auto, ranges or bins"),
                }
            }
            "msm-bin-keys" => {
                self.bin_keys = number(|k| k.is_power_of_two() && (1 << 4..=1 << 24).contains(&k))
                    .ok_or("a power of two from 16 to 16777216")?
            }
            "msm-scatter-passes" => {
                self.scatter_passes = match v {
                    "auto" => None,
                    _ => Some(
                        number(|p| (1..=64).contains(&p)).ok_or("auto or a number from 1 to 64")?,
                    ),
                }
            }
            "msm-segment" => {
                self.segment = number(|s| s.is_power_of_two() && s <= 1024)
                    .ok_or("a power of two up to 1024")?
            }
            "msm-reduce-per" => {
                self.reduce_per =
                    number(|p| (2..=64).contains(&p)).ok_or("a number from 2 to 64")?
            }
            "msm-window-pass" => {
                self.window_pass = match v {
                    "auto" => WindowPass::Auto,
                    "flat" => WindowPass::Flat,
                    "levels" => WindowPass::Levels,
                    _ => return Err("auto, flat or levels"),
                }
            }
            "msm-density" => {
                self.density_in_place = match v {
                    "device" => true,
                    "host" => false,
                    _ => return Err("device or host"),
                }
            }
            "msm-whole-pass" => self.whole_pass = on_off(v)?,
            "msm-profile" => self.profile = on_off(v)?,
            _ => return Err("a known option"),
        }
        Ok(())
    }
}

/// `on`/`1` or `off`/`0`.
fn on_off(v: &str) -> std::result::Result<bool, &'static str> {
    match v {
        "on" | "1" => Ok(true),
        "off" | "0" => Ok(false),
        _ => Err("on or off"),
    }
}

/// Options `msm-precompute` (`on` or `off`, default on: a set gets its table when the device has
/// room for it, see `residency::load`) and `msm-precompute-window` (bits, 8 to 28): the window
/// width of the tables to build at load, or None.
fn precompute_window(cfg: &BackendConfig) -> Result<Option<u32>> {
    let c = match cfg.get_option("msm-precompute-window").map(str::trim) {
        None => TABLE_WINDOW,
        Some(v) => match v.parse::<u32>() {
            Ok(c) if (8..=28).contains(&c) => c,
            _ => {
                return Err(Error::invalid(format!(
                    "option msm-precompute-window={v:?}: expected a window width in bits from 8 \
                     to 28"
                )))
            }
        },
    };
    match cfg.get_option("msm-precompute").map(str::trim) {
        Some("off") => Ok(None),
        None | Some("on") => Ok(Some(c)),
        Some(v) => Err(Error::invalid(format!(
            "option msm-precompute={v:?}: expected `on` (tables of window multiples built when \
             bases are loaded: faster large MSMs for more memory and load time) or `off`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_production_tuning() {
        let c = MsmConfig::from_options(&BackendConfig::default()).unwrap();
        assert_eq!(c, MsmConfig::default());
        assert_eq!(c.window, None);
        assert_eq!(
            (c.table, c.scatter, c.window_pass),
            (TableUse::Auto, Scatter::Auto, WindowPass::Auto)
        );
        assert_eq!((c.bin_keys, c.segment, c.reduce_per), (1 << 15, 32, 8));
        assert_eq!(c.scatter_passes, None);
        assert!(c.density_in_place && c.whole_pass && !c.profile);
        assert_eq!(c.precompute, Some(TABLE_WINDOW));
    }

    #[test]
    fn options_set_knobs() {
        let cfg = BackendConfig::default()
            .option("msm-window", "18")
            .option("msm-table", "never")
            .option("msm-scatter", " bins ")
            .option("msm-bin-keys", "4096")
            .option("msm-scatter-passes", "4")
            .option("msm-segment", "64")
            .option("msm-reduce-per", "16")
            .option("msm-window-pass", "flat")
            .option("msm-density", "host")
            .option("msm-whole-pass", "off")
            .option("msm-profile", "on");
        let c = MsmConfig::from_options(&cfg).unwrap();
        assert_eq!(c.window, Some(18));
        assert_eq!(c.table, TableUse::Never);
        assert_eq!(c.scatter, Scatter::Bins);
        assert_eq!(
            (c.bin_keys, c.scatter_passes, c.segment, c.reduce_per),
            (4096, Some(4), 64, 16)
        );
        assert_eq!(c.window_pass, WindowPass::Flat);
        assert!(!c.density_in_place && !c.whole_pass && c.profile);
        let auto = BackendConfig::default()
            .option("msm-window", "auto")
            .option("msm-scatter-passes", "auto");
        let c = MsmConfig::from_options(&auto).unwrap();
        assert_eq!((c.window, c.scatter_passes), (None, None));
    }

    #[test]
    fn bad_options_are_refused_by_name() {
        for (key, bad) in [
            ("msm-window", "1"),
            ("msm-window", "25"),
            ("msm-table", "sometimes"),
            ("msm-scatter", ""),
            ("msm-bin-keys", "1000"),
            ("msm-bin-keys", "8"),
            ("msm-scatter-passes", "0"),
            ("msm-segment", "48"),
            ("msm-segment", "2048"),
            ("msm-reduce-per", "1"),
            ("msm-window-pass", "deep"),
            ("msm-density", "both"),
            ("msm-whole-pass", "yes"),
            ("msm-profile", "2"),
        ] {
            let e = MsmConfig::from_options(&BackendConfig::default().option(key, bad))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(key) && e.contains("expected"),
                "{key}={bad}: {e}"
            );
        }
    }

    #[test]
    fn precompute_options_parse() {
        let cfg = BackendConfig::default();
        assert_eq!(precompute_window(&cfg).unwrap(), Some(TABLE_WINDOW));
        let off = cfg.clone().option("msm-precompute", "off");
        assert_eq!(precompute_window(&off).unwrap(), None);
        let on = cfg.clone().option("msm-precompute", "on");
        assert_eq!(precompute_window(&on).unwrap(), Some(TABLE_WINDOW));
        let w = on.clone().option("msm-precompute-window", "22");
        assert_eq!(precompute_window(&w).unwrap(), Some(22));
        assert_eq!(MsmConfig::from_options(&w).unwrap().precompute, Some(22));
        let off = w.clone().option("msm-precompute", "off");
        assert_eq!(precompute_window(&off).unwrap(), None);
        for bad in ["yes", "", "1"] {
            let e = precompute_window(&cfg.clone().option("msm-precompute", bad))
                .unwrap_err()
                .to_string();
            assert!(e.contains("msm-precompute"), "{bad}: {e}");
        }
        for bad in ["7", "29", "wide", ""] {
            let e = precompute_window(&on.clone().option("msm-precompute-window", bad))
                .unwrap_err()
                .to_string();
            assert!(e.contains("msm-precompute-window"), "{bad}: {e}");
        }
    }

    /// The environment's values as the knobs read them before the options existed: anything
    /// not understood leaves the knob as it is, `auto` restores the automatic choice.
    #[test]
    fn overrides_parse_as_the_environment_knobs_did() {
        let mut c = MsmConfig::default();
        assert!(c.set("msm-window", "99").is_err());
        assert_eq!(c.window, None);
        c.set("msm-window", " 16 ").unwrap();
        assert_eq!(c.window, Some(16));
        c.set("msm-scatter", "ranges").unwrap();
        c.set("msm-scatter", "auto").unwrap();
        assert_eq!(c.scatter, Scatter::Auto);
        c.set("msm-profile", "1").unwrap();
        assert!(c.profile);
        c.set("msm-density", "host").unwrap();
        assert!(!c.density_in_place);
        c.set("msm-whole-pass", "off").unwrap();
        assert!(!c.whole_pass);
        assert!(c.set("msm-reduce-per", "65").is_err());
        assert_eq!(c.reduce_per, REDUCE_PER);
        assert_eq!(KNOBS.len(), 11);
        assert!(KNOBS.iter().all(|(k, v)| {
            v.strip_prefix("BELLOWS_MSM_")
                .map(|s| s.to_ascii_lowercase().replace('_', "-"))
                == k.strip_prefix("msm-").map(str::to_string)
        }));
    }
}

//! The checks of the suite, and the context they run in.
//!
//! A check is a name, a description of its sizes, the capability it needs, and a function of the
//! [`Ctx`] that runs the same inputs through the candidate and the reference and compares.

mod bases;
mod concurrent;
mod density;
mod encoded;
mod g1_phase;
mod hpoly;
mod msm;
mod ntt;
mod proof;

use bases::reuse as bases_reuse;

use std::sync::Arc;

use bellows_core::{Backend, Capabilities, Error};

use crate::{
    compare::Mismatch,
    data::{ParamsCache, Points},
    report::Outcome,
    Level, SuiteOptions,
};

/// Why a check did not pass.
#[derive(Debug)]
pub enum Fail {
    /// An output differs from the reference's.
    Mismatch(Mismatch),
    /// The candidate failed.
    Error(String),
}

impl From<Mismatch> for Fail {
    fn from(m: Mismatch) -> Self {
        Fail::Mismatch(m)
    }
}

impl From<Fail> for Outcome {
    fn from(f: Fail) -> Self {
        match f {
            Fail::Mismatch(m) => Outcome::Mismatch(m),
            Fail::Error(message) => Outcome::Error { message },
        }
    }
}

/// Result of a check function.
pub type CheckResult = Result<(), Fail>;

/// Wraps an error of the candidate.
pub fn cand<T>(r: bellows_core::Result<T>, what: &str) -> Result<T, Fail> {
    r.map_err(|e| Fail::Error(format!("candidate, {what}: {e}")))
}

/// Wraps an error of the reference (a broken reference is reported, not hidden).
pub fn refr<T>(r: bellows_core::Result<T>, what: &str) -> Result<T, Fail> {
    r.map_err(|e| Fail::Error(format!("reference, {what}: {e}")))
}

/// Expects an invalid-input error from the candidate.
pub fn expect_invalid<T>(r: bellows_core::Result<T>, what: &str) -> CheckResult {
    match r {
        Err(Error::InvalidInput(_)) => Ok(()),
        Err(e) => Err(Fail::Error(format!(
            "{what}: expected an invalid-input error, got: {e}"
        ))),
        Ok(_) => Err(Fail::Error(format!(
            "{what}: expected an invalid-input error, got success"
        ))),
    }
}

/// What every check can use.
pub struct Ctx {
    /// The backend under test.
    pub cand: Arc<dyn Backend>,
    /// The reference backend.
    pub refb: Arc<dyn Backend>,
    /// The candidate's declared capabilities.
    pub caps: Capabilities,
    /// Largest log2 size of NTTs, `h_poly` and G1 MSMs.
    pub k: u32,
    /// Largest log2 size of G2 MSMs.
    pub k2: u32,
    /// Level.
    pub level: Level,
    /// Seed of all inputs.
    pub seed: u64,
    /// Threads of the concurrency check.
    pub threads: usize,
    points: std::sync::OnceLock<Points>,
    /// Groth16 parameters, made on first use.
    pub params: ParamsCache,
}

impl Ctx {
    /// The context of a run.
    pub fn new(cand: Arc<dyn Backend>, refb: Arc<dyn Backend>, opts: &SuiteOptions) -> Self {
        let caps = cand.info().capabilities;
        let k = opts.log_size();
        Self {
            cand,
            refb,
            caps,
            k,
            k2: k.saturating_sub(2).max(1),
            level: opts.level,
            seed: opts.seed,
            threads: opts.threads.max(1),
            points: std::sync::OnceLock::new(),
            params: ParamsCache::new(opts.seed),
        }
    }

    /// Random points: `2^k + 1` (at least 65) in G1 and `2^k2 + 1` (at least 9) in G2, made on
    /// first use.
    pub fn points(&self) -> &Points {
        self.points.get_or_init(|| {
            Points::new(
                ((1 << self.k) + 1).max(65),
                ((1 << self.k2) + 1).max(9),
                self.seed,
            )
        })
    }

    /// Largest NTT size to test: the suite's, capped by what the candidate declares.
    pub fn ntt_k(&self) -> u32 {
        self.k.min(self.caps.max_log_ntt)
    }

    /// `quick`, `standard` or `full` value by level.
    pub fn by_level<T>(&self, quick: T, standard: T, full: T) -> T {
        match self.level {
            Level::Quick => quick,
            Level::Standard => standard,
            Level::Full => full,
        }
    }
}

/// Capability test: `None` when present, else the capability's name.
pub type Requires = fn(&Capabilities) -> Option<&'static str>;

/// One check.
pub struct Check {
    /// Name shown in the report.
    pub name: String,
    /// Sizes covered, shown in the report.
    pub sizes: String,
    /// The capability it needs.
    pub requires: Requires,
    /// The check itself.
    pub run: Box<dyn Fn(&Ctx) -> CheckResult + Send + Sync>,
}

impl Check {
    fn new(
        name: impl Into<String>,
        sizes: impl Into<String>,
        requires: Requires,
        run: impl Fn(&Ctx) -> CheckResult + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            sizes: sizes.into(),
            requires,
            run: Box::new(run),
        }
    }
}

/// Capability tests.
pub mod needs {
    use bellows_core::Capabilities;

    /// Nothing.
    pub fn nothing(_: &Capabilities) -> Option<&'static str> {
        None
    }
    /// NTT.
    pub fn ntt(c: &Capabilities) -> Option<&'static str> {
        (!c.ntt).then_some("ntt")
    }
    /// NTT and coset NTT.
    pub fn coset(c: &Capabilities) -> Option<&'static str> {
        ntt(c).or((!c.coset_ntt).then_some("coset_ntt"))
    }
    /// G1 MSM.
    pub fn g1(c: &Capabilities) -> Option<&'static str> {
        (!c.msm_g1).then_some("msm_g1")
    }
    /// G2 MSM.
    pub fn g2(c: &Capabilities) -> Option<&'static str> {
        (!c.msm_g2).then_some("msm_g2")
    }
    /// Everything a Groth16 proof needs of a backend.
    pub fn prover(c: &Capabilities) -> Option<&'static str> {
        coset(c).or(g1(c))
    }
    /// Concurrent calls.
    pub fn concurrent(c: &Capabilities) -> Option<&'static str> {
        (!c.concurrent).then_some("concurrent")
    }
}

/// Every check of a run, in order.
pub fn all(ctx: &Ctx) -> Vec<Check> {
    let mut v = Vec::new();
    v.extend(ntt::checks(ctx));
    v.extend(hpoly::checks(ctx));
    v.extend(msm::checks(ctx));
    v.extend(density::checks(ctx));
    v.extend(bases::checks(ctx));
    v.extend(encoded::checks(ctx));
    v.extend(g1_phase::checks(ctx));
    v.extend(proof::checks(ctx));
    v.push(concurrent::check(ctx));
    v
}

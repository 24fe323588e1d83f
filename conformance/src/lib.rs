//! # bellows-conformance
//!
//! The suite every Bellows backend must pass: checks written once, run against any
//! `Arc<dyn Backend>` (built-in, or a plugin loaded from a file), each comparing the candidate's
//! output with the CPU reference backend's **exactly**, on canonical encodings (scalars as their
//! 32-byte representation, points as compressed affine encodings, proofs as their 192 bytes).
//!
//! What is checked (see [`checks`] for the list with sizes):
//! - NTT forward, inverse, coset forward and coset inverse, in all four input/output orderings, at
//!   every size 2^0..2^K, single vectors and batches; malformed shapes must be invalid-input errors;
//! - MSM in G1 and G2: empty input, one point, zero scalars, identity points, repeated points,
//!   the scalar r − 1, all-equal scalars, small scalars, random scalars at sizes 2^k − 1, 2^k and
//!   2^k + 1 (both sides of window boundaries), and batched jobs over sub-ranges of one handle;
//! - MSM jobs with density bitmaps in G1 and G2 (random, all clear, all set, across the 64-bit
//!   word boundary), against the plain job over the used scalars; malformed bitmaps rejected;
//! - the composite Groth16 G1 phase (`groth16_g1`) for a batch of two circuits, against its
//!   default body on the reference;
//! - `h_poly`, single and batched;
//! - resident bases: one handle reused across many calls, many handles freed in mixed order,
//!   load/free cycles, and misuse (use after free, double free, wrong group, out-of-range jobs)
//!   answered with invalid-input errors;
//! - whole Groth16 proofs with seeded randomness: byte-identical to the reference, and verified;
//! - a selection of the above from several threads at once.
//!
//! A check whose capability the candidate does not declare ([`bellows_core::Capabilities`]) is
//! skipped, not failed; an operation that is declared but fails is an error. A run in which no
//! check passed (every one skipped) fails: it shows nothing about the backend.
//!
//! Entry points: [`run_suite`] (library), [`run_cli`] (what `bellows conformance` calls).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod checks;
pub mod cli;
pub mod compare;
pub mod data;
pub mod plugin_build;
pub mod report;

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    sync::Arc,
    time::Instant,
};

use bellows_core::Backend;

pub use cli::{run_cli, run_cli_with_config};
pub use compare::Mismatch;
pub use report::{CheckResult, Outcome, Report};

/// How thorough a run is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Level {
    /// Small sizes, few repetitions: seconds on two cores (what `cargo test` runs).
    Quick,
    /// Sizes up to 2^14, more repetitions and proofs: about a minute on a laptop.
    #[default]
    Standard,
    /// Sizes up to 2^18 and larger proofs: for release qualification of a backend.
    Full,
}

impl Level {
    /// The default largest log2 size at this level (Quick 10, Standard 14, Full 18).
    pub fn default_max_log_size(self) -> u32 {
        match self {
            Level::Quick => 10,
            Level::Standard => 14,
            Level::Full => 18,
        }
    }
}

/// Options of a suite run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SuiteOptions {
    /// Thoroughness. Default: [`Level::Standard`].
    pub level: Level,
    /// Largest log2 size of NTTs, `h_poly` and G1 MSMs (G2 MSMs go to two less). Default: `None`,
    /// the level's default ([`Level::default_max_log_size`]).
    pub max_log_size: Option<u32>,
    /// Threads of the concurrency check. Default: 4.
    pub threads: usize,
    /// Seed of every input and of the proofs' randomness. Default: `0xB3110`.
    pub seed: u64,
    /// Run only the checks whose name contains one of these; empty (the default): every check.
    /// A suite cut so is reported as such, and one that selects nothing fails.
    pub only: Vec<String>,
}

impl Default for SuiteOptions {
    fn default() -> Self {
        Self {
            level: Level::Standard,
            max_log_size: None,
            threads: 4,
            seed: 0xB3110,
            only: Vec::new(),
        }
    }
}

impl SuiteOptions {
    /// Options at `level`, everything else default.
    pub fn at(level: Level) -> Self {
        Self {
            level,
            ..Self::default()
        }
    }

    /// The same options with `max_log_size` set.
    pub fn with_max_log_size(mut self, k: u32) -> Self {
        self.max_log_size = Some(k);
        self
    }

    /// The same options with `threads` set.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// The same options running only the checks whose name contains one of `patterns`.
    pub fn with_only(mut self, patterns: Vec<String>) -> Self {
        self.only = patterns;
        self
    }

    /// Whether the check called `name` is selected ([`SuiteOptions::only`]).
    pub fn selects(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|p| name.contains(p.as_str()))
    }

    /// The largest log2 size in force.
    pub fn log_size(&self) -> u32 {
        self.max_log_size
            .unwrap_or_else(|| self.level.default_max_log_size())
    }
}

/// Progress of a run, for a callback (e.g. a progress line on a terminal).
#[derive(Debug)]
pub enum Progress<'a> {
    /// Check `index` of `total` is starting.
    Start {
        /// 0-based position.
        index: usize,
        /// Number of checks.
        total: usize,
        /// Its name.
        name: &'a str,
    },
    /// Check `index` of `total` finished.
    Done {
        /// 0-based position.
        index: usize,
        /// Number of checks.
        total: usize,
        /// Its result.
        result: &'a CheckResult,
    },
}

/// Runs every check of the suite on `candidate`, comparing with `reference` (normally the CPU
/// backend), and reports each check's result. Never panics because of the candidate: a panic
/// inside a check is reported as that check's error.
pub fn run_suite(
    candidate: Arc<dyn Backend>,
    reference: Arc<dyn Backend>,
    opts: &SuiteOptions,
    mut progress: impl FnMut(Progress<'_>),
) -> Report {
    let started = Instant::now();
    let ctx = checks::Ctx::new(candidate.clone(), reference.clone(), opts);
    let mut list = checks::all(&ctx);
    let all = list.len();
    list.retain(|c| opts.selects(&c.name));
    let selected_of = (list.len() < all).then_some(all);
    let total = list.len();
    let mut results = Vec::with_capacity(total);
    for (index, check) in list.iter().enumerate() {
        progress(Progress::Start {
            index,
            total,
            name: &check.name,
        });
        let result = run_one(&ctx, check);
        progress(Progress::Done {
            index,
            total,
            result: &result,
        });
        results.push(result);
    }
    Report {
        backend: candidate.info(),
        backend_source: None,
        reference: reference.info(),
        level: opts.level,
        max_log_size: ctx.k,
        seed: opts.seed,
        results,
        total_time: started.elapsed(),
        selected_of,
    }
}

fn run_one(ctx: &checks::Ctx, check: &checks::Check) -> CheckResult {
    let t = Instant::now();
    let outcome = if let Some(missing) = (check.requires)(&ctx.caps) {
        Outcome::Skipped {
            reason: format!("the backend does not declare {missing}"),
        }
    } else {
        match catch_unwind(AssertUnwindSafe(|| (check.run)(ctx))) {
            Ok(Ok(())) => Outcome::Pass,
            Ok(Err(f)) => f.into(),
            Err(p) => Outcome::Error {
                message: format!("panicked: {}", panic_message(&*p)),
            },
        }
    };
    CheckResult {
        name: check.name.clone(),
        sizes: check.sizes.clone(),
        outcome,
        time: t.elapsed(),
    }
}

use bellows_core::error::panic_message;

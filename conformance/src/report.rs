//! The result of a suite run: one row per check, a table for terminals and JSON for tools.

use std::time::Duration;

use bellows_core::BackendInfo;
use serde::Serialize;

use crate::{compare::Mismatch, Level};

/// How one check ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    /// Every output equal to the reference's.
    Pass,
    /// An output differs; the first differing element.
    Mismatch(Mismatch),
    /// The candidate failed (an error where none was expected, the wrong error, a panic, ...).
    Error {
        /// What happened.
        message: String,
    },
    /// Not run: the candidate does not declare the capability.
    Skipped {
        /// Why.
        reason: String,
    },
}

impl Outcome {
    /// Whether this outcome fails the run (a mismatch or an error).
    pub fn is_failure(&self) -> bool {
        matches!(self, Outcome::Mismatch(_) | Outcome::Error { .. })
    }

    fn label(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Mismatch(_) => "MISMATCH",
            Outcome::Error { .. } => "ERROR",
            Outcome::Skipped { .. } => "skipped",
        }
    }
}

/// One row of the report.
#[derive(Clone, Debug, Serialize)]
pub struct CheckResult {
    /// Check name, e.g. `"ntt forward natural→natural"`.
    pub name: String,
    /// Sizes covered, e.g. `"2^0..2^10, batches of 1 and 3"`.
    pub sizes: String,
    /// How it ended.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Wall time of the check (both backends).
    #[serde(serialize_with = "secs")]
    pub time: Duration,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// The result of [`crate::run_suite`].
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The candidate backend.
    pub backend: BackendInfo,
    /// Where the candidate comes from (`"built-in"`, or `"plugin PATH"`), when known: tells
    /// apart a built-in and a plugin of one name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_source: Option<String>,
    /// The reference backend.
    pub reference: BackendInfo,
    /// Level of the run.
    pub level: Level,
    /// Largest log2 size used.
    pub max_log_size: u32,
    /// Seed of the inputs.
    pub seed: u64,
    /// One result per check, in order.
    pub results: Vec<CheckResult>,
    /// Wall time of the whole run.
    #[serde(serialize_with = "secs")]
    pub total_time: Duration,
    /// When the run was cut to some checks ([`crate::SuiteOptions::only`]): how many the whole
    /// suite has. The summary line then says the run is partial.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selected_of: Option<usize>,
}

fn fmt_time(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 1000.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.2} s", ms / 1e3)
    }
}

impl Report {
    /// True when no check failed and at least one passed. Skipped checks do not fail a run, but
    /// a run in which nothing passed (every check skipped, or no checks) proves nothing and fails.
    pub fn passed(&self) -> bool {
        !self.results.iter().any(|r| r.outcome.is_failure())
            && self.results.iter().any(|r| r.outcome == Outcome::Pass)
    }

    /// The failed checks.
    pub fn failures(&self) -> impl Iterator<Item = &CheckResult> {
        self.results.iter().filter(|r| r.outcome.is_failure())
    }

    /// Counts of (passed, failed, skipped) checks.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for r in &self.results {
            match r.outcome {
                Outcome::Pass => c.0 += 1,
                Outcome::Mismatch(_) | Outcome::Error { .. } => c.1 += 1,
                Outcome::Skipped { .. } => c.2 += 1,
            }
        }
        c
    }

    /// A plain-text table (check, sizes, result, time), with the first differing element (index,
    /// expected, got) or the error under each failed row, and a summary line.
    pub fn table(&self) -> String {
        let wn = self
            .results
            .iter()
            .map(|r| r.name.chars().count())
            .max()
            .unwrap_or(5)
            .max(5);
        let ws = self
            .results
            .iter()
            .map(|r| r.sizes.chars().count())
            .max()
            .unwrap_or(5)
            .max(5);
        let pad =
            |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(s.chars().count())));
        let mut out = format!(
            "conformance of {} {}{} against {} {} (level {:?}, max size 2^{}, seed {:#x})\n",
            self.backend.name,
            self.backend.version,
            self.backend_source
                .as_ref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default(),
            self.reference.name,
            self.reference.version,
            self.level,
            self.max_log_size,
            self.seed
        );
        out += &format!(
            "{}  {}  {:<8}  {:>9}\n",
            pad("check", wn),
            pad("sizes", ws),
            "result",
            "time"
        );
        for r in &self.results {
            out += &format!(
                "{}  {}  {:<8}  {:>9}\n",
                pad(&r.name, wn),
                pad(&r.sizes, ws),
                r.outcome.label(),
                fmt_time(r.time)
            );
            match &r.outcome {
                Outcome::Mismatch(m) => {
                    out += &format!(
                    "    first difference: {}, index {}\n      expected {}\n      got      {}\n",
                    m.context, m.index, m.expected, m.got
                )
                }
                Outcome::Error { message } => out += &format!("    error: {message}\n"),
                Outcome::Skipped { reason } => out += &format!("    ({reason})\n"),
                Outcome::Pass => {}
            }
        }
        let (p, f, s) = self.counts();
        if p == 0 && f == 0 {
            out += "no check passed: a backend that declares none of the capabilities checked \
                    cannot pass\n";
        }
        out += &format!(
            "{}: {p} passed, {f} failed, {s} skipped in {}{}\n",
            if self.passed() { "PASS" } else { "FAIL" },
            fmt_time(self.total_time),
            self.selected_of
                .map(|all| format!(
                    " (a partial run: {} of the suite's {all} checks)",
                    self.results.len()
                ))
                .unwrap_or_default()
        );
        out
    }

    /// The report as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(outcomes: Vec<Outcome>) -> Report {
        Report {
            backend: BackendInfo::new("cand", "0", ""),
            backend_source: None,
            reference: BackendInfo::new("cpu", "0", ""),
            level: Level::Quick,
            max_log_size: 4,
            seed: 1,
            results: outcomes
                .into_iter()
                .enumerate()
                .map(|(i, outcome)| CheckResult {
                    name: format!("check {i}"),
                    sizes: "2^0..2^4".into(),
                    outcome,
                    time: Duration::from_millis(3),
                })
                .collect(),
            total_time: Duration::from_millis(9),
            selected_of: None,
        }
    }

    #[test]
    fn passing_and_failing_reports() {
        let ok = report(vec![
            Outcome::Pass,
            Outcome::Skipped {
                reason: "no G2".into(),
            },
        ]);
        assert!(ok.passed());
        assert_eq!(ok.counts(), (1, 0, 1));
        assert!(
            ok.table()
                .ends_with("PASS: 1 passed, 0 failed, 1 skipped in 9 ms\n"),
            "{}",
            ok.table()
        );

        let m = Mismatch {
            context: "2^3, vector 1".into(),
            index: 5,
            expected: "0x01".into(),
            got: "0x02".into(),
        };
        let bad = report(vec![
            Outcome::Pass,
            Outcome::Mismatch(m),
            Outcome::Error {
                message: "boom".into(),
            },
        ]);
        assert!(!bad.passed());
        assert_eq!(bad.failures().count(), 2);
        let t = bad.table();
        assert!(t.contains("MISMATCH"), "{t}");
        assert!(
            t.contains("first difference: 2^3, vector 1, index 5"),
            "{t}"
        );
        assert!(
            t.contains("expected 0x01") && t.contains("got      0x02"),
            "{t}"
        );
        assert!(t.contains("error: boom"), "{t}");
        let j: serde_json::Value = serde_json::from_str(&bad.to_json()).unwrap();
        assert_eq!(j["results"][1]["result"], "mismatch");
        assert_eq!(j["results"][1]["index"], 5);
        assert_eq!(j["results"][2]["message"], "boom");
        assert_eq!(j["backend"]["name"], "cand");

        // Nothing passed: every check skipped (or none at all) fails the run.
        let skipped = report(vec![
            Outcome::Skipped {
                reason: "no G1".into(),
            },
            Outcome::Skipped {
                reason: "no G2".into(),
            },
        ]);
        assert!(!skipped.passed());
        assert_eq!(skipped.failures().count(), 0);
        let t = skipped.table();
        assert!(t.contains("no check passed"), "{t}");
        assert!(
            t.ends_with("FAIL: 0 passed, 0 failed, 2 skipped in 9 ms\n"),
            "{t}"
        );
        assert!(!report(vec![]).passed());
    }
}

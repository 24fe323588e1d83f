//! What a setup says as it goes: each step, named, as it ends. A 2^27 circuit's setup takes
//! minutes (docs/benchmarks.md, "32 GiB PoRep C2"); its caller shows where it is.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The steps of the setup from constraints to parameters, in order. The file's sections are
/// written as the last four end.
pub const SETUP_STEPS: [&str; 7] = [
    "window tables",
    "Lagrange coefficients",
    "u, v, w at τ",
    "h query",
    "ic and l queries",
    "a and b_g1 queries",
    "b_g2 query",
];

/// One step of a setup, ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetupStep {
    /// Its place, from 1.
    pub index: usize,
    /// How many steps there are in all.
    pub of: usize,
    /// What it computed.
    pub name: &'static str,
    /// The step that starts now, if one does.
    pub next: Option<&'static str>,
    /// How long it took.
    pub took: Duration,
}

impl SetupStep {
    /// The same step as one of `of` steps, `before` of them ahead of this one's series (a
    /// caller that adds steps of its own before the setup's, such as recording the circuit).
    pub fn within(self, before: usize, of: usize) -> SetupStep {
        SetupStep {
            index: self.index + before,
            of,
            ..self
        }
    }
}

/// Ends the steps of [`SETUP_STEPS`] one by one: each is logged (debug: `-vv` on the command
/// line) and handed to the caller's `report`.
pub(super) struct Steps<'a> {
    since: Cell<Instant>,
    done: Cell<usize>,
    report: &'a dyn Fn(&SetupStep),
}

impl<'a> Steps<'a> {
    pub(super) fn start(report: &'a dyn Fn(&SetupStep)) -> Self {
        Steps {
            since: Cell::new(Instant::now()),
            done: Cell::new(0),
            report,
        }
    }

    /// Ends the next step, `name` (which must be the next of [`SETUP_STEPS`]).
    pub(super) fn end(&self, name: &'static str) {
        let i = self.done.get();
        debug_assert_eq!(SETUP_STEPS.get(i), Some(&name), "setup steps out of order");
        let now = Instant::now();
        let step = SetupStep {
            index: i + 1,
            of: SETUP_STEPS.len(),
            name,
            next: SETUP_STEPS.get(i + 1).copied(),
            took: now - self.since.get(),
        };
        tracing::debug!("setup: {name} in {:.2} s", step.took.as_secs_f64());
        self.since.set(now);
        self.done.set(i + 1);
        (self.report)(&step);
    }

    /// Logs a step before the setup's own (not reported: not one of [`SETUP_STEPS`]).
    pub(super) fn lap(&self, what: &str) {
        let now = Instant::now();
        tracing::debug!(
            "setup: {what} in {:.2} s",
            (now - self.since.get()).as_secs_f64()
        );
        self.since.set(now);
    }
}

/// A `report` that says nothing.
pub fn quiet(_: &SetupStep) {}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    use super::super::{write_parameters_from_pce, ToxicWaste};
    use super::*;
    use crate::{circuits::synthetic::SyntheticCircuit, pce::Pce};

    /// A setup from a recording reports every step once, in order, each naming the next, and
    /// writes the same file as a quiet one.
    #[test]
    fn a_setup_reports_each_step_in_order() {
        let pce = Pce::record(SyntheticCircuit::new(8, 50).unwrap(), "steps-test").unwrap();
        let waste = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(3));
        let seen = RefCell::new(Vec::new());
        let mut loud = Vec::new();
        write_parameters_from_pce(&pce, &waste, &mut loud, &|s| seen.borrow_mut().push(*s))
            .unwrap();
        let seen = seen.into_inner();
        let names: Vec<_> = seen.iter().map(|s| s.name).collect();
        assert_eq!(names, SETUP_STEPS);
        for (i, s) in seen.iter().enumerate() {
            assert_eq!((s.index, s.of), (i + 1, SETUP_STEPS.len()));
            assert_eq!(s.next, SETUP_STEPS.get(i + 1).copied());
        }
        let mut quietly = Vec::new();
        write_parameters_from_pce(&pce, &waste, &mut quietly, &quiet).unwrap();
        assert!(loud == quietly, "reporting changed the file");
        // A caller's own step first: the setup's are then 2..=8 of 8.
        let s = seen[0].within(1, SETUP_STEPS.len() + 1);
        assert_eq!((s.index, s.of, s.name), (2, 8, "window tables"));
    }
}

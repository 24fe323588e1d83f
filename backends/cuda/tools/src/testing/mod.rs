//! Test vectors and blst reference results for every kernel, shared by the device check program
//! (`bellows-cuda-check`), the host emulation test (`tests/emulation.rs`) and the unit tests.
//!
//! Each `run_*` function takes an executor (a closure that runs one operation on the device, or
//! on the emulated kernels), feeds it edge-case and random inputs, computes the expected results
//! with blst through blstrs, and compares bit for bit.

mod curve;
mod decode;
mod field;
pub mod host_ntt;
mod ntt;

pub use curve::{run_g1_checks, run_g2_checks};
pub use decode::{decode_cases, run_decode_checks};
pub use field::{run_field_checks, FieldCase};
pub use ntt::{
    all_ntt_configs, describe, random_vector, run_ntt_checks, NttCheckPlan,
    SIMPLE_REFERENCE_MAX_LOG,
};

use std::fmt::Debug;

/// The outcome of one group of comparisons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckResult {
    /// What was checked (e.g. "fr mul").
    pub name: String,
    /// Number of values compared.
    pub compared: usize,
    /// Number of values that differ from the reference.
    pub mismatches: usize,
    /// The first mismatch, described.
    pub first_mismatch: Option<String>,
}

impl CheckResult {
    /// True when nothing differed.
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }
}

impl std::fmt::Display for CheckResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = if self.passed() { "ok  " } else { "FAIL" };
        write!(
            f,
            "{status} {:<40} {:>10} compared, {} mismatches",
            self.name, self.compared, self.mismatches
        )?;
        if let Some(m) = &self.first_mismatch {
            write!(f, "\n     first mismatch: {m}")?;
        }
        Ok(())
    }
}

/// Compares `got` with `expected` element for element; `input` describes element i.
pub fn compare<T: PartialEq + Debug>(
    name: impl Into<String>,
    expected: &[T],
    got: &[T],
    input: impl Fn(usize) -> String,
) -> CheckResult {
    let name = name.into();
    if expected.len() != got.len() {
        return CheckResult {
            name,
            compared: expected.len(),
            mismatches: expected.len().max(1),
            first_mismatch: Some(format!(
                "{} results for {} inputs",
                got.len(),
                expected.len()
            )),
        };
    }
    let mut mismatches = 0;
    let mut first = None;
    for (i, (e, g)) in expected.iter().zip(got).enumerate() {
        if e != g {
            mismatches += 1;
            if first.is_none() {
                first = Some(format!(
                    "index {i}, input {}: expected {e:?}, got {g:?}",
                    input(i)
                ));
            }
        }
    }
    CheckResult {
        name,
        compared: expected.len(),
        mismatches,
        first_mismatch: first,
    }
}

/// A result for an operation that failed outright (an error instead of values).
pub fn failed(name: impl Into<String>, why: impl std::fmt::Display) -> CheckResult {
    CheckResult {
        name: name.into(),
        compared: 0,
        mismatches: 1,
        first_mismatch: Some(format!("error: {why}")),
    }
}

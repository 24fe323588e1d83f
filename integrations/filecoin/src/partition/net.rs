//! Which witness code a partition's challenges run, and the check that earns the native code
//! its place: once per sector shape and process, one challenge's native values are compared with
//! the library's, value for value; a shape whose values differ runs the library's circuit from
//! then on. (The pre-compiled synthesis's A·B = C check on every row is the second net.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The environment variable that picks the witness code ([`WitnessPath`]): `checked` (the
/// default), `native` or `library`. Read once per process.
pub const WITNESS_ENV: &str = "BELLOWS_POREP_WITNESS";

/// The code that computes a PoRep partition's challenges for a witness generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WitnessPath {
    /// The native witness, once the first challenge of the shape in this process was found
    /// equal to the library's (the default); the library's circuit where it was not.
    Checked,
    /// The native witness without the first comparison (benchmarks; the pre-compiled
    /// synthesis still checks A·B = C on every row).
    Native,
    /// storage-proofs-porep's circuit, one challenge at a time (what the native witness is
    /// compared with).
    Library,
}

impl WitnessPath {
    /// The path [`WITNESS_ENV`] names, [`WitnessPath::Checked`] when it is unset or names none
    /// (then with a warning).
    pub fn from_env() -> Self {
        static PATH: OnceLock<WitnessPath> = OnceLock::new();
        *PATH.get_or_init(|| match std::env::var(WITNESS_ENV).as_deref() {
            Err(_) | Ok("checked") => WitnessPath::Checked,
            Ok("native") => WitnessPath::Native,
            Ok("library") => WitnessPath::Library,
            Ok(other) => {
                tracing::warn!(
                    "{WITNESS_ENV}={other:?} is none of checked, native, library: checked it is"
                );
                WitnessPath::Checked
            }
        })
    }
}

type Verdicts = Mutex<HashMap<String, Arc<OnceLock<bool>>>>;

fn verdicts() -> &'static Verdicts {
    static V: OnceLock<Verdicts> = OnceLock::new();
    V.get_or_init(Default::default)
}

/// Whether the native witness may run for the shape `key`: `check` decides the first time the
/// shape is asked for in this process (others asking meanwhile wait for it), the answer is kept.
pub(super) fn trusted(key: &str, check: impl FnOnce() -> bool) -> bool {
    let cell = {
        let mut v = verdicts().lock().unwrap_or_else(|e| e.into_inner());
        v.entry(key.to_string()).or_default().clone()
    };
    *cell.get_or_init(check)
}

/// The verdict on the shape `key`, if it was checked in this process.
pub(super) fn verdict(key: &str) -> Option<bool> {
    let v = verdicts().lock().unwrap_or_else(|e| e.into_inner());
    v.get(key).and_then(|c| c.get().copied())
}

//! Limits and up-front memory estimates: refuse a job the machine cannot hold, with the estimate,
//! before any of it is computed or allocated.
//!
//! The estimates are upper-bound models of the largest live allocations of each step (checked
//! against measured peaks by tests at small sizes; docs/cli.md gives the figures), compared with
//! the memory the host has available, container (cgroup) limits included
//! ([`crate::backend::memory::host_memory_info`]).

use crate::{Error, Result};

/// Most proofs one proof file may hold (a 768 MiB file); readers refuse more, and `prove` does
/// not write more.
pub const MAX_PROOFS_PER_FILE: usize = 1 << 22;

/// Bytes of a G1 point in memory (blst affine: two 48-byte coordinates).
pub const G1_BYTES: u64 = 96;
/// Bytes of a G2 point in memory.
pub const G2_BYTES: u64 = 192;
/// Bytes of a scalar in memory.
pub const SCALAR_BYTES: u64 = 32;

/// Environment variable capping the memory the estimates may count on, in bytes (`8GiB` style
/// units are not parsed here: a plain number). For leaving room to other jobs, and for tests.
pub const MEMORY_LIMIT_ENV: &str = "BELLOWS_MEMORY_LIMIT";

/// Bytes of memory the host has available now (the smaller of `MemAvailable` and the cgroup's
/// limit less its usage, and of `$BELLOWS_MEMORY_LIMIT`), or `None` when none of them is known.
pub fn available_memory() -> Option<u64> {
    let m = crate::backend::memory::host_memory_info();
    let host = (m.total > 0).then_some(m.free);
    let cap = std::env::var(MEMORY_LIMIT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok());
    match (host, cap) {
        (Some(h), Some(c)) => Some(h.min(c)),
        (h, c) => h.or(c),
    }
}

/// Refuses `what` when its estimated memory `need` exceeds what the host has available. The
/// error gives both figures. Does nothing where available memory is unknown.
pub fn check_memory(what: &str, need: u64) -> Result<()> {
    check_memory_against(what, need, available_memory())
}

/// [`check_memory`] against a given amount of available memory.
pub fn check_memory_against(what: &str, need: u64, available: Option<u64>) -> Result<()> {
    match available {
        Some(avail) if need > avail => Err(Error::invalid(format!(
            "{what} needs about {} of memory (estimate), more than the {} this host has \
             available (container limits included); nothing was done",
            fmt_bytes(need),
            fmt_bytes(avail)
        ))),
        _ => Ok(()),
    }
}

/// A byte count for people: `812 B`, `4.0 KiB`, `24.0 GiB`.
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The shape of a Groth16 instance, as far as memory goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Domain size n (a power of two).
    pub domain: u64,
    /// Variables, inputs and aux (an upper bound is fine).
    pub vars: u64,
}

impl Shape {
    /// Bytes of parameters for this shape in memory: h (n − 1), l and a and b_g1 (≤ vars each)
    /// in G1, b_g2 (≤ vars) in G2.
    pub fn params_bytes(&self) -> u64 {
        let n = self.domain;
        let v = self.vars;
        n.saturating_mul(G1_BYTES)
            .saturating_add(v.saturating_mul(3 * G1_BYTES + G2_BYTES))
    }

    /// Peak bytes of a real trusted setup: the constraint matrices, the powers of τ and the h
    /// scalars, the h points in Jacobian and affine form, then per variable its u, v, w and
    /// query scalars and its Jacobian and affine points in G1 and G2. Modelled as 700 bytes per
    /// domain element and 1300 per variable, above the synthetic circuit's peak RSS at
    /// 2^14..2^16 (1790 bytes per constraint).
    pub fn setup_bytes(&self) -> u64 {
        self.domain
            .saturating_mul(700)
            .saturating_add(self.vars.saturating_mul(1300))
    }

    /// Peak bytes of the benchmark-only generator: the parameters themselves plus the counting
    /// pass over the circuit and one walk chunk per thread (64 bytes per variable; a constraint's
    /// share stays below the 640 bytes counted here, which the module's tests check against
    /// measured peaks).
    pub fn fast_setup_bytes(&self) -> u64 {
        self.params_bytes()
            .saturating_add(self.vars.saturating_mul(64))
    }

    /// Bytes one proof of a batch holds while it is proved: the a, b, c evaluations (3 × 32 per
    /// domain element, transformed in place), the quotient's coset buffers and the MSM scalars
    /// in canonical form (5 × 32 more), and the assignments (2 × 32 per variable).
    pub fn proof_bytes(&self) -> u64 {
        let n = self.domain;
        let v = self.vars;
        n.saturating_mul(8 * SCALAR_BYTES)
            .saturating_add(v.saturating_mul(2 * SCALAR_BYTES))
    }
}

/// Where a backend keeps its working copies, for [`proving_bytes_on`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residence {
    /// In host memory (the CPU backend): converted copies of the parameters beside them, and a
    /// proof's quotient buffers and MSM scalars.
    Host,
    /// In device memory (an accelerator, [`crate::Capabilities::accelerator`]): the host holds
    /// the parameters, each proof's evaluations and assignments, and, for a backend that
    /// gathers the density-filtered scalars on the host, one more copy of the assignments.
    Device,
}

/// [`proving_bytes`] for a backend that keeps its copies at `residence`. On a device the
/// parameters' resident copies and a proof's quotient live in device memory, so the host holds
/// the parameters (once), per proof the a, b, c evaluations (3 × 32 per domain element, read by
/// the uploads), the assignments and a gathered copy of them (4 × 32 per variable), and the
/// outputs. At a PoRep partition's size (2^27, about 2^27 variables, 72 GiB of parameters)
/// that is 100 GiB for one proof instead of the host model's 148 GiB, which would refuse such a
/// proof on a 128 GiB GPU host before any of it is tried.
pub fn proving_bytes_on(
    residence: Residence,
    shape: &Shape,
    params_bytes: u64,
    count: u64,
    batch: u64,
    inputs: u64,
) -> u64 {
    match residence {
        Residence::Host => proving_bytes(shape, params_bytes, count, batch, inputs),
        Residence::Device => {
            let per_proof = shape
                .domain
                .saturating_mul(3 * SCALAR_BYTES)
                .saturating_add(shape.vars.saturating_mul(4 * SCALAR_BYTES));
            params_bytes
                .saturating_add(batch.saturating_mul(per_proof))
                .saturating_add(count.saturating_mul(output_bytes(inputs)))
        }
    }
}

/// Bytes a finished proof holds until it is written: its points, and `inputs` public inputs of
/// 32 bytes and about 80 characters of JSON each.
fn output_bytes(inputs: u64) -> u64 {
    3 * G1_BYTES + G2_BYTES + inputs.saturating_mul(SCALAR_BYTES + 80)
}

/// Bytes that proving `count` proofs in batches of `batch` holds at its peak: the parameters
/// and what the backend keeps beside them (1.5 × their size), one batch of working sets, and
/// every finished proof and its public inputs until they are written (`inputs` public inputs
/// each: 384 bytes of points, 32 bytes and ~80 characters of JSON per input). Measured at 2^16
/// on the CPU backend: 1140 bytes per constraint for one proof (1510 for four), against 1184
/// (2144) here.
pub fn proving_bytes(shape: &Shape, params_bytes: u64, count: u64, batch: u64, inputs: u64) -> u64 {
    params_bytes
        .saturating_add(params_bytes / 2)
        .saturating_add(batch.saturating_mul(shape.proof_bytes()))
        .saturating_add(count.saturating_mul(output_bytes(inputs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_give_the_estimate_and_what_is_available() {
        assert!(check_memory_against("x", 10, Some(10)).is_ok());
        assert!(check_memory_against("x", 10, None).is_ok());
        let e = check_memory_against("setup of synthetic 2^30", 3 << 30, Some(1 << 30))
            .unwrap_err()
            .to_string();
        assert!(e.contains("setup of synthetic 2^30"), "{e}");
        assert!(e.contains("3.0 GiB") && e.contains("1.0 GiB"), "{e}");
    }

    #[test]
    fn bytes_format_by_magnitude() {
        assert_eq!(fmt_bytes(812), "812 B");
        assert_eq!(fmt_bytes(4096), "4.0 KiB");
        assert_eq!(fmt_bytes(25_769_803_680), "24.0 GiB");
    }

    #[test]
    fn estimates_grow_with_the_shape_and_saturate() {
        let s = Shape {
            domain: 1 << 20,
            vars: 1 << 20,
        };
        let big = Shape {
            domain: 1 << 21,
            vars: 1 << 21,
        };
        assert!(big.setup_bytes() > s.setup_bytes());
        assert!(big.proof_bytes() > s.proof_bytes());
        assert!(s.setup_bytes() > s.params_bytes());
        let huge = Shape {
            domain: u64::MAX,
            vars: u64::MAX,
        };
        assert_eq!(huge.setup_bytes(), u64::MAX);
        assert_eq!(
            proving_bytes(&huge, u64::MAX, u64::MAX, u64::MAX, 2),
            u64::MAX
        );
        assert_eq!(
            proving_bytes_on(Residence::Device, &huge, u64::MAX, u64::MAX, u64::MAX, 2),
            u64::MAX
        );
    }

    #[test]
    fn a_device_backend_needs_less_host_memory_and_a_porep_partition_fits_128_gib() {
        let s = Shape {
            domain: 1 << 27,
            vars: 1 << 27,
        };
        let params = s.params_bytes();
        let host = proving_bytes_on(Residence::Host, &s, params, 1, 1, 2);
        let device = proving_bytes_on(Residence::Device, &s, params, 1, 1, 2);
        assert_eq!(host, proving_bytes(&s, params, 1, 1, 2));
        assert!(device < host, "{device} {host}");
        // A 128 GiB GPU host's available memory: refused on the host model, accepted on the
        // device's.
        let avail = Some(125 << 30);
        assert!(check_memory_against("2^27", host, avail).is_err());
        assert!(check_memory_against("2^27", device, avail).is_ok());
        // Still more than the parameters and the evaluations alone, and growing with the batch.
        assert!(device > params + 3 * 32 * (1 << 27));
        assert!(proving_bytes_on(Residence::Device, &s, params, 2, 2, 2) > device);
    }
}

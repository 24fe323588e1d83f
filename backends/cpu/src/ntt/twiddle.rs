//! Precomputed twiddle factors: per-stage root-of-unity tables and per-size plans.
//!
//! Two kinds of table are kept, both computed once and shared by every thread:
//! - [`Levels`]: for every stage size `2^s ≤ 2^LEAF_MAX_LOG`, the powers `ω_{2^s}^j`, `j < 2^(s−1)`,
//!   of the forward and inverse roots, one contiguous table per stage, built when a transform
//!   first needs it. These tables do not depend on the transform size: `ω_{2^s}` is the same
//!   element for every n (it is `ROOT_OF_UNITY^(2^(32−s))`), so every transform shares them.
//! - [`Plan`], one per `log_n`: how a size-n transform is split for the four-step scheme, the row
//!   twiddle bases of that split, `1/n`, and (built on first use) the small two-level tables that
//!   apply coset powers `g^i` in either ordering.
//!
//! Memory stays bounded for every size: the level tables hold at most `2 · 2^20` elements (64 MiB,
//! only once a 2^20 transform has run), a plan `O(√n)` elements.

use std::sync::OnceLock;

use blstrs::Scalar;
use ff::{Field, PrimeField};

/// Largest transform handled by the radix-2 kernels (and so the largest level table: 2^19
/// elements, 16 MiB per direction). Four-step splits keep every sub-transform at most this large
/// for all sizes up to 2^32.
pub(crate) const LEAF_MAX_LOG: u32 = 20;

/// Sizes from this up use the four-step (Bailey) scheme; smaller ones run the recursive radix-2
/// kernels directly. The blst field operations keep a radix-2 butterfly (about 40 ns) compute-
/// bound even when its data streams from L3 or DRAM, so up to 2^20 the radix-2 kernels, with no
/// extra twiddle pass, measured 5–7% less CPU time than the four-step scheme; above 2^20 the
/// four-step scheme keeps the tables small (`O(√n)` per size).
pub(crate) const FOUR_STEP_MIN_LOG: u32 = 21;

/// log2 of the row length of the two-level coset tables.
pub(crate) const COSET_ROW_LOG: u32 = 10;

/// Transform direction, as an index into the direction-dependent tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    /// Powers of ω.
    Fwd = 0,
    /// Powers of ω⁻¹.
    Inv = 1,
}

/// The primitive `2^log_n`-th root of unity of the conventions: `ROOT_OF_UNITY^(2^(32 − log_n))`.
pub(crate) fn omega(log_n: u32) -> Scalar {
    debug_assert!(log_n <= Scalar::S);
    Scalar::ROOT_OF_UNITY.pow_vartime([1u64 << (Scalar::S - log_n)])
}

/// `bitrev_bits(i)`: the low `bits` bits of `i` in reverse order.
#[inline]
pub(crate) fn bitrev(i: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        i.reverse_bits() >> (usize::BITS - bits)
    }
}

/// Stage tables for the radix-2 kernels, forward and inverse, one per stage size, each built on
/// first use (so a process that only runs small transforms never holds the large tables).
pub(crate) struct Levels {
    /// `[dir][s]` → `ω_{2^s}^(±j)` for `j < 2^(s−1)`.
    tables: [[OnceLock<Box<[Scalar]>>; LEAF_MAX_LOG as usize + 1]; 2],
}

/// Table entries computed by one rayon task (each task starts from one exponentiation).
const BUILD_CHUNK: usize = 1 << 12;

impl Levels {
    /// The shared tables.
    pub(crate) fn get() -> &'static Levels {
        static LEVELS: Levels = Levels {
            tables: [const { [const { OnceLock::new() }; LEAF_MAX_LOG as usize + 1] }; 2],
        };
        &LEVELS
    }

    fn build(dir: Dir, s: u32) -> Box<[Scalar]> {
        use rayon::prelude::*;
        let mut root = omega(s);
        if dir == Dir::Inv {
            root = root.invert().expect("a root of unity is invertible");
        }
        let h = 1usize << (s - 1);
        let mut t = vec![Scalar::ZERO; h].into_boxed_slice();
        t.par_chunks_mut(BUILD_CHUNK)
            .enumerate()
            .for_each(|(k, c)| {
                let mut w = root.pow_vartime([(k * BUILD_CHUNK) as u64]);
                for v in c {
                    *v = w;
                    w *= root;
                }
            });
        t
    }

    /// `ω_{2h}^j` (or its inverse) for `j < h`; `h` is a power of two `≤ 2^(LEAF_MAX_LOG−1)`.
    #[inline]
    pub(crate) fn stage(&self, dir: Dir, h: usize) -> &[Scalar] {
        let s = h.trailing_zeros() + 1;
        self.tables[dir as usize][s as usize].get_or_init(|| Levels::build(dir, s))
    }
}

/// The two-level tables that give `g^e` for the coset exponent `e` of a position.
///
/// Position `p = hi·2^k + lo` (`k` = [`CosetTables::row_log`]). In natural order the exponent is
/// `p` itself and `g^p = (g^(2^k))^hi · g^lo`; in bit-reversed order it is `bitrev_L(p) =
/// bitrev_k(lo)·2^(L−k) + bitrev_(L−k)(hi)`, so `g^e = g^(bitrev_(L−k)(hi)) · lo_rev[lo]`.
pub(crate) struct CosetTables {
    /// `k`, log2 of the row length.
    pub row_log: u32,
    /// `[dir]` → `g^(±lo)`.
    pub lo_nat: [Vec<Scalar>; 2],
    /// `[dir]` → `g^(±bitrev_k(lo)·2^(L−k))`.
    pub lo_rev: [Vec<Scalar>; 2],
    /// `[dir]` → `g^(±1)`.
    pub g: [Scalar; 2],
}

/// Everything a size-`2^log_n` transform needs beyond the shared stage tables.
pub(crate) struct Plan {
    /// log2 of the size.
    pub log_n: u32,
    /// `(log R, log C)` of the four-step split (`R` rows of `C` columns, row-major), or `None` for
    /// sizes the leaf kernels handle directly.
    pub split: Option<(u32, u32)>,
    /// `[dir]` → row twiddle bases `ω_n^(±bitrev_(log R)(r))` for the four-step middle pass.
    pub row_bases: [Vec<Scalar>; 2],
    /// `1/n`.
    pub n_inv: Scalar,
    coset: OnceLock<CosetTables>,
}

impl Plan {
    /// The plan for `2^log_n` (`log_n ≤ 32`), built on first use and kept for the process.
    pub(crate) fn get(log_n: u32) -> &'static Plan {
        static PLANS: [OnceLock<Plan>; 33] = [const { OnceLock::new() }; 33];
        PLANS[log_n as usize].get_or_init(|| Plan::build(log_n))
    }

    fn build(log_n: u32) -> Plan {
        let split = (log_n >= FOUR_STEP_MIN_LOG).then(|| {
            let rows = log_n / 2;
            (rows, log_n - rows)
        });
        Plan::with_split(log_n, split)
    }

    /// A plan with the given four-step split (`log R + log C = log_n`), or none.
    pub(crate) fn with_split(log_n: u32, split: Option<(u32, u32)>) -> Plan {
        debug_assert!(split.map_or(true, |(r, c)| r + c == log_n && r.max(c) <= LEAF_MAX_LOG));
        let row_bases = match split {
            Some((lr, _)) => {
                let w = omega(log_n);
                let winv = w.invert().expect("a root of unity is invertible");
                let make = |root: Scalar| -> Vec<Scalar> {
                    (0..1usize << lr)
                        .map(|r| root.pow_vartime([bitrev(r, lr) as u64]))
                        .collect()
                };
                [make(w), make(winv)]
            }
            None => [Vec::new(), Vec::new()],
        };
        let n_inv = Scalar::from(1u64 << log_n)
            .invert()
            .expect("n < r is invertible");
        Plan {
            log_n,
            split,
            row_bases,
            n_inv,
            coset: OnceLock::new(),
        }
    }

    /// The coset tables of this size, built on first use.
    pub(crate) fn coset(&self) -> &CosetTables {
        self.coset.get_or_init(|| {
            let k = self.log_n.min(COSET_ROW_LOG);
            let g = bellows_core::groth16::quotient::coset_generator();
            let ginv = g.invert().expect("g = 7 is invertible");
            let nat = |b: Scalar| -> Vec<Scalar> {
                let mut v = Vec::with_capacity(1 << k);
                let mut w = Scalar::ONE;
                for _ in 0..1usize << k {
                    v.push(w);
                    w *= b;
                }
                v
            };
            let rev = |b: Scalar| -> Vec<Scalar> {
                let step = b.pow_vartime([1u64 << (self.log_n - k)]);
                (0..1usize << k)
                    .map(|lo| step.pow_vartime([bitrev(lo, k) as u64]))
                    .collect()
            };
            CosetTables {
                row_log: k,
                lo_nat: [nat(g), nat(ginv)],
                lo_rev: [rev(g), rev(ginv)],
                g: [g, ginv],
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omega_has_exact_order() {
        for log_n in [1u32, 2, 5, 16, 32] {
            let w = omega(log_n);
            assert_eq!(w.pow_vartime([1u64 << log_n]), Scalar::ONE);
            assert_eq!(w.pow_vartime([1u64 << (log_n - 1)]), -Scalar::ONE);
        }
        assert_eq!(omega(0), Scalar::ONE);
    }

    #[test]
    fn level_tables_are_powers() {
        let lv = Levels::get();
        for s in [1u32, 2, 7, LEAF_MAX_LOG] {
            let h = 1usize << (s - 1);
            let w = omega(s);
            for j in [0usize, 1, h / 2, h - 1].into_iter().filter(|&j| j < h) {
                assert_eq!(lv.stage(Dir::Fwd, h)[j], w.pow_vartime([j as u64]));
                assert_eq!(
                    lv.stage(Dir::Inv, h)[j] * lv.stage(Dir::Fwd, h)[j],
                    Scalar::ONE
                );
            }
        }
    }

    #[test]
    fn bitrev_reverses() {
        assert_eq!(bitrev(0b001, 3), 0b100);
        assert_eq!(bitrev(0b110, 3), 0b011);
        assert_eq!(bitrev(5, 0), 0);
        assert_eq!(bitrev(1, 1), 1);
    }
}

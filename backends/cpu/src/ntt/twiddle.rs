//! Precomputed twiddle factors: per-stage root-of-unity tables and per-size plans.
//!
//! Two kinds of table are kept, both computed once and shared by every thread:
//! - [`Levels`]: for every stage size `2^s ≤ 2^LEAF_MAX_LOG`, the powers `ω_{2^s}^j`, `j < 2^(s−1)`,
//!   of the forward and inverse roots, one contiguous table per stage, built when a transform
//!   first needs it. These tables do not depend on the transform size: `ω_{2^s}` is the same
//!   element for every n (it is `ROOT_OF_UNITY^(2^(32−s))`), so every transform shares them.
//! - [`Plan`], one per `log_n`: how a size-n transform is split for the four-step scheme, the row
//!   twiddle bases of that split, `1/n`, and (built on first use) the coset-shifted stage tables
//!   that fold the coset powers `g^(±i)` into the twiddles ([`Plan::coset`]).
//!
//! Memory stays bounded for every size: the level tables hold at most `2 · 2^20` elements (64 MiB,
//! only once a 2^20 transform has run); a plan holds `O(√n)` elements, plus, once a coset
//! transform of its size has run, `n` (radix-2 sizes, at most 2^20) or `O(√n)` (four-step sizes)
//! elements per direction.

use std::sync::OnceLock;

use blstrs::Scalar;
use ff::Field;

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

/// Transform direction, as an index into the direction-dependent tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    /// Powers of ω.
    Fwd = 0,
    /// Powers of ω⁻¹.
    Inv = 1,
}

pub(crate) use bellows_backend_api::backend::ntt::omega;

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

/// Coset tables of one plan and direction (see [`Plan::coset`]).
pub(crate) struct CosetStages {
    /// `[h + j]` → `s^(m/(2h))·ω_{2h}^(±j)` for every stage half-size `h < m` and `j < h`, where
    /// `m` is the size of the radix-2 transforms of the plan and `s` the shift (`g^(±R)`).
    pub stages: Box<[Scalar]>,
    /// Four-step plans: `[rr]` → `g^(±bitrev_(log R)(rr))`, the part of the coset power that is
    /// constant along row `rr`. Empty otherwise.
    pub rows: Vec<Scalar>,
}

/// Everything a size-`2^log_n` transform needs beyond the shared stage tables.
pub(crate) struct Plan {
    /// log2 of the size.
    pub log_n: u32,
    /// `(log R, log C)` of the four-step split (`R` rows of `C` columns, row-major), or `None` for
    /// sizes the radix-2 kernels handle directly.
    pub split: Option<(u32, u32)>,
    /// `[dir]` → row twiddle bases `ω_n^(±bitrev_(log R)(r))` for the four-step middle pass.
    pub row_bases: [Vec<Scalar>; 2],
    /// `1/n`.
    pub n_inv: Scalar,
    coset: [OnceLock<CosetStages>; 2],
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
        debug_assert!(split.is_none_or(|(r, c)| r + c == log_n && r.max(c) <= LEAF_MAX_LOG));
        let row_bases = match split {
            Some((lr, _)) => {
                let w = omega(log_n);
                let winv = w.invert().expect("a root of unity is invertible");
                [row_powers(w, lr), row_powers(winv, lr)]
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
            coset: [OnceLock::new(), OnceLock::new()],
        }
    }

    /// The coset tables for direction `dir` (shift `g` with ω for `Fwd`, `g⁻¹` with ω⁻¹ for
    /// `Inv`), built on first use.
    ///
    /// A radix-2 DIT whose input, stored in bit-reversed order, is to be multiplied by `s^i`
    /// (`i` the natural index) needs no separate pass: splitting `Σ z_i s^i ω^(ik)` into even and
    /// odd i gives two half-size transforms with shift `s²`, joined by the twiddle `s·ω^k`; so
    /// the stage of half-size h uses `s^(m/(2h))·ω_{2h}^j`. Dually, a DIF whose output k is to be
    /// multiplied by `u^k` uses the same tables with shift u on its difference branch. With a
    /// four-step split, position `(rr, c)` has the exponent `bitrev_C(c)·R + bitrev_R(rr)`: the
    /// rows use shift `g^R`, and `g^(bitrev_R(rr))` is a row constant folded into the twiddle
    /// pass.
    pub(crate) fn coset(&self, dir: Dir) -> &CosetStages {
        self.coset[dir as usize].get_or_init(|| {
            use rayon::prelude::*;
            let mut g = bellows_backend_api::backend::ntt::coset_generator();
            if dir == Dir::Inv {
                g = g.invert().expect("g = 7 is invertible");
            }
            let (lr, lm) = self.split.unwrap_or((0, self.log_n));
            let m = 1usize << lm;
            let mut stages = vec![Scalar::ZERO; m.max(1)].into_boxed_slice();
            // Shift of the stage of half-size h: g^(R·m/(2h)), squared at each halving of h.
            let mut shift = g.pow_vartime([1u64 << lr]);
            let lv = Levels::get();
            let mut h = m / 2;
            while h >= 1 {
                let plain = lv.stage(dir, h);
                stages[h..2 * h]
                    .par_chunks_mut(BUILD_CHUNK)
                    .zip(plain.par_chunks(BUILD_CHUNK))
                    .for_each(|(o, p)| o.iter_mut().zip(p).for_each(|(o, p)| *o = shift * p));
                shift = shift.square();
                h /= 2;
            }
            let rows = if self.split.is_some() {
                row_powers(g, lr)
            } else {
                Vec::new()
            };
            CosetStages { stages, rows }
        })
    }
}

/// `[r]` → `base^(bitrev_bits(r))` for `r < 2^bits`.
fn row_powers(base: Scalar, bits: u32) -> Vec<Scalar> {
    (0..1usize << bits)
        .map(|r| base.pow_vartime([bitrev(r, bits) as u64]))
        .collect()
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

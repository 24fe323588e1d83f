//! Host-side constants of the NTT: roots of unity, the short tables the device expands into its
//! twiddle table, the coset-factor tables, 1/n, and bit reversal.
//!
//! The device keeps one twiddle table `T[e] = ω_N^e` for `e ∈ [0, N/2]` (N = 2^tw_log, the largest
//! size used so far), built once per device by [`crate::CudaDevice`] from two short tables
//! computed here: `T[e] = HI[e >> b]·LO[e mod 2^b]` with `LO[j] = ω^j` and `HI[j] = ω^(j·2^b)`.
//! ω_N = ROOT_OF_UNITY^(2^(32 − log N)), blstrs' (and bellperson's) choice of root.

use bellows_backend_api::layout::Fr;
use ff::Field;
use rayon::prelude::*;

type Scalar = blstrs::Scalar;

/// log2 of each half of a coset table: `g^i = HI[i >> 14]·LO[i & 0x3fff]` covers i < 2^28.
pub const COSET_TABLE_BITS: u32 = 14;

/// ω_n and the coset generator g: the conventions shared by every backend (core's `ntt` module).
pub use bellows_backend_api::backend::ntt::{coset_generator, omega};

/// [1, base, base², …] (count entries), computed in parallel chunks.
pub fn powers(base: Scalar, count: usize) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 12;
    let mut out = vec![Scalar::ZERO; count];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut x = base.pow_vartime([(c * CHUNK) as u64]);
            for v in chunk {
                *v = x;
                x *= base;
            }
        });
    out
}

/// The two short tables from which the device builds `T[e] = ω_N^e`, e ∈ \[0, N/2\], N = 2^tw_log:
/// returns (lo_bits, LO, HI, entry count N/2 + 1).
pub fn twiddle_parts(tw_log: u32) -> (u32, Vec<Fr>, Vec<Fr>, u64) {
    let count = (1u64 << tw_log.saturating_sub(1)) + 1;
    let w = omega(tw_log);
    let lo_bits = tw_log.div_ceil(2);
    let lo = powers(w, 1 << lo_bits);
    let hi_count = ((count - 1) >> lo_bits) as usize + 1;
    let hi = powers(w.pow_vartime([1u64 << lo_bits]), hi_count);
    (lo_bits, to_layout(lo), to_layout(hi), count)
}

/// The twiddle table computed entirely on the host (for tests): ω_N^e for e ∈ [0, N/2].
pub fn twiddles_host(tw_log: u32) -> Vec<Fr> {
    let count = (1usize << tw_log.saturating_sub(1)) + 1;
    to_layout(powers(omega(tw_log), count))
}

/// The forward coset table the kernels read: [LO(g) | HI(g)], each 2^14 entries, with
/// `LO(x)[j] = x^j` and `HI(x)[j] = x^(j·2^14)`, so `g^i = HI[i >> 14]·LO[i & 0x3fff]`.
pub fn coset_tables() -> Vec<Fr> {
    split_powers(coset_generator(), Scalar::ONE)
}

/// The inverse coset table for n = 2^log_n: [LO(g⁻¹) | HI(g⁻¹)·n⁻¹], so that one product gives
/// the whole post-scaling factor n⁻¹·g^−i of an inverse coset transform.
pub fn inverse_coset_tables(log_n: u32) -> Vec<Fr> {
    let gi = coset_generator().invert().expect("g = 7 is invertible");
    let n_inv = Scalar::from(1u64 << log_n)
        .invert()
        .expect("n is invertible in Fr");
    split_powers(gi, n_inv)
}

/// [LO(x) | HI(x)·c] (see [`coset_tables`]).
fn split_powers(x: Scalar, c: Scalar) -> Vec<Fr> {
    let n = 1usize << COSET_TABLE_BITS;
    let mut out = to_layout(powers(x, n));
    out.extend(
        powers(x.pow_vartime([n as u64]), n)
            .into_iter()
            .map(|h| Fr::from(h * c)),
    );
    out
}

/// 1/n for n = 2^log_n, in the kernels' 32-bit limb form.
pub fn n_inverse_limbs(log_n: u32) -> [u32; 8] {
    let inv = Scalar::from(1u64 << log_n)
        .invert()
        .expect("n is invertible in Fr");
    let f = Fr::from(inv);
    let mut out = [0u32; 8];
    for (i, l) in f.0.iter().enumerate() {
        out[2 * i] = *l as u32;
        out[2 * i + 1] = (*l >> 32) as u32;
    }
    out
}

/// Reverses the lowest `bits` bits of `x`.
pub fn bit_reverse(x: u64, bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (64 - bits)
    }
}

fn to_layout(v: Vec<Scalar>) -> Vec<Fr> {
    v.into_iter().map(Fr::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omega_has_exact_order() {
        for log_n in [1u32, 2, 5, 20, 27, 32] {
            let w = omega(log_n);
            assert_eq!(w.pow_vartime([1u64 << log_n]), Scalar::ONE);
            assert_eq!(w.pow_vartime([1u64 << (log_n - 1)]), -Scalar::ONE);
        }
        assert_eq!(omega(0), Scalar::ONE);
    }

    #[test]
    fn twiddle_parts_rebuild_the_table() {
        for tw_log in [1u32, 2, 3, 8, 13] {
            let (lo_bits, lo, hi, count) = twiddle_parts(tw_log);
            let full = twiddles_host(tw_log);
            assert_eq!(full.len() as u64, count);
            let w = omega(tw_log);
            for e in 0..count as usize {
                let x = Scalar::from(hi[e >> lo_bits]) * Scalar::from(lo[e & ((1 << lo_bits) - 1)]);
                assert_eq!(x, w.pow_vartime([e as u64]), "tw_log {tw_log} e {e}");
                assert_eq!(Fr::from(x), full[e]);
            }
            // The last entry is ω^(N/2) = −1, which the inverse transform relies on.
            assert_eq!(Scalar::from(full[count as usize - 1]), -Scalar::ONE);
        }
    }

    #[test]
    fn coset_tables_give_g_powers() {
        let n = 1usize << COSET_TABLE_BITS;
        let g = coset_generator();
        assert_eq!(g, Scalar::from(7u64));
        let gi = g.invert().unwrap();
        let fwd = coset_tables();
        assert_eq!(fwd.len(), 2 * n);
        for log_n in [0u32, 5, 27] {
            let inv = inverse_coset_tables(log_n);
            let n_inv = Scalar::from(1u64 << log_n).invert().unwrap();
            for i in [0u64, 1, 2, 16383, 16384, 16385, 123_456_789, (1 << 27) - 1] {
                let (lo, hi) = (
                    (i & (n as u64 - 1)) as usize,
                    (i >> COSET_TABLE_BITS) as usize,
                );
                let f = Scalar::from(fwd[lo]) * Scalar::from(fwd[n + hi]);
                assert_eq!(f, g.pow_vartime([i]), "g^{i}");
                let b = Scalar::from(inv[lo]) * Scalar::from(inv[n + hi]);
                assert_eq!(b, gi.pow_vartime([i]) * n_inv, "g^-{i}/2^{log_n}");
            }
        }
    }

    #[test]
    fn n_inverse_limbs_are_montgomery() {
        for log_n in [0u32, 1, 10, 27] {
            let l = n_inverse_limbs(log_n);
            let mut limbs = [0u64; 4];
            for i in 0..4 {
                limbs[i] = u64::from(l[2 * i]) | (u64::from(l[2 * i + 1]) << 32);
            }
            let x = Scalar::from(Fr(limbs));
            assert_eq!(x * Scalar::from(1u64 << log_n), Scalar::ONE);
        }
    }

    #[test]
    fn bit_reverse_small() {
        assert_eq!(bit_reverse(1, 3), 4);
        assert_eq!(bit_reverse(6, 3), 3);
        assert_eq!(bit_reverse(0, 0), 0);
        assert_eq!(bit_reverse(1, 27), 1 << 26);
        for x in 0..256u64 {
            assert_eq!(bit_reverse(bit_reverse(x, 8), 8), x);
        }
    }
}

//! NTT of the CPU backend against a naive O(n²) DFT, for every configuration.

use bellows_backend_api::{
    backend::{Ntt, NttConfig, NttDirection, Ordering},
    layout::{fr_slice, fr_slice_mut, Fr},
    Error,
};
use bellows_cpu::CpuBackend;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rand::SeedableRng;

fn omega(log_n: u32) -> Scalar {
    Scalar::ROOT_OF_UNITY.pow_vartime([1u64 << (32 - log_n)])
}

fn g() -> Scalar {
    Scalar::MULTIPLICATIVE_GENERATOR
}

fn bitrev(i: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        i.reverse_bits() >> (usize::BITS - bits)
    }
}

fn random(n: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| Scalar::random(&mut rng)).collect()
}

/// Σ_i x_i · p^i by Horner's rule.
fn eval(x: &[Scalar], p: Scalar) -> Scalar {
    x.iter().rev().fold(Scalar::ZERO, |acc, c| acc * p + c)
}

/// The definition: forward `X_j = Σ x_i (c·ω^j)^i` with c = g on the coset; inverse
/// `x_i = n⁻¹ Σ X_j ω^(−ij)`, divided by `g^i` on the coset.
fn naive(x: &[Scalar], log_n: u32, dir: NttDirection, coset: bool) -> Vec<Scalar> {
    let n = x.len();
    let w = omega(log_n);
    match dir {
        NttDirection::Forward => {
            let mut p = if coset { g() } else { Scalar::ONE };
            (0..n)
                .map(|_| {
                    let v = eval(x, p);
                    p *= w;
                    v
                })
                .collect()
        }
        NttDirection::Inverse => {
            let winv = w.invert().unwrap();
            let ninv = Scalar::from(n as u64).invert().unwrap();
            let ginv = g().invert().unwrap();
            let (mut p, mut c) = (Scalar::ONE, ninv);
            (0..n)
                .map(|_| {
                    let v = eval(x, p) * c;
                    p *= winv;
                    if coset {
                        c *= ginv;
                    }
                    v
                })
                .collect()
        }
    }
}

fn to_order(v: &[Scalar], order: Ordering) -> Vec<Scalar> {
    match order {
        Ordering::Natural => v.to_vec(),
        Ordering::BitReversed => {
            let bits = v.len().trailing_zeros();
            (0..v.len()).map(|p| v[bitrev(p, bits)]).collect()
        }
    }
}

const DIRS: [NttDirection; 2] = [NttDirection::Forward, NttDirection::Inverse];
const ORDERS: [Ordering; 2] = [Ordering::Natural, Ordering::BitReversed];

fn config(dir: NttDirection, coset: bool, input: Ordering, output: Ordering) -> NttConfig {
    let base = match dir {
        NttDirection::Forward => NttConfig::forward(),
        NttDirection::Inverse => NttConfig::inverse(),
    };
    base.with_coset(coset).with_orders(input, output)
}

#[test]
fn every_configuration_matches_naive_dft_up_to_2_pow_10() {
    let backend = CpuBackend::new();
    const BATCH: usize = 3;
    for log_n in 0..=10u32 {
        let n = 1usize << log_n;
        let vectors: Vec<Vec<Scalar>> = (0..BATCH)
            .map(|k| random(n, u64::from(log_n) * 10 + k as u64))
            .collect();
        for dir in DIRS {
            for coset in [false, true] {
                let expect: Vec<Vec<Scalar>> = vectors
                    .iter()
                    .map(|v| naive(v, log_n, dir, coset))
                    .collect();
                for input in ORDERS {
                    for output in ORDERS {
                        let cfg = config(dir, coset, input, output);
                        let what =
                            format!("log_n={log_n} {dir:?} coset={coset} {input:?}->{output:?}");
                        // Single vector.
                        let mut data = to_order(&vectors[0], input);
                        backend.ntt(fr_slice_mut(&mut data), log_n, &cfg).unwrap();
                        assert_eq!(data, to_order(&expect[0], output), "{what}");
                        // Batch of 3, back to back.
                        let mut data: Vec<Scalar> =
                            vectors.iter().flat_map(|v| to_order(v, input)).collect();
                        backend.ntt(fr_slice_mut(&mut data), log_n, &cfg).unwrap();
                        let want: Vec<Scalar> =
                            expect.iter().flat_map(|v| to_order(v, output)).collect();
                        assert_eq!(data, want, "{what} batch {BATCH}");
                    }
                }
            }
        }
    }
}

/// Sizes on the parallel recursive path: a few outputs of every configuration equal single
/// evaluations of the definition.
#[test]
fn large_sizes_match_definition_at_sampled_points() {
    let backend = CpuBackend::new();
    for log_n in [14u32, 15, 17] {
        let n = 1usize << log_n;
        let x = random(n, 7 + u64::from(log_n));
        let w = omega(log_n);
        let samples = [0usize, 1, 2, n / 2 - 1, n / 2, n / 3, n - 1];
        for dir in DIRS {
            for coset in [false, true] {
                for (input, output) in ORDERS.iter().flat_map(|&i| ORDERS.map(|o| (i, o))) {
                    let cfg = config(dir, coset, input, output);
                    let mut data = to_order(&x, input);
                    backend.ntt(fr_slice_mut(&mut data), log_n, &cfg).unwrap();
                    let got = |j: usize| match output {
                        Ordering::Natural => data[j],
                        Ordering::BitReversed => data[bitrev(j, log_n)],
                    };
                    for &j in &samples {
                        let want = match dir {
                            NttDirection::Forward => {
                                let c = if coset { g() } else { Scalar::ONE };
                                eval(&x, c * w.pow_vartime([j as u64]))
                            }
                            NttDirection::Inverse => {
                                let mut v = eval(&x, w.invert().unwrap().pow_vartime([j as u64]))
                                    * Scalar::from(n as u64).invert().unwrap();
                                if coset {
                                    v *= g().invert().unwrap().pow_vartime([j as u64]);
                                }
                                v
                            }
                        };
                        assert_eq!(
                            got(j),
                            want,
                            "log_n={log_n} {dir:?} coset={coset} {input:?}->{output:?} j={j}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn forward_then_inverse_is_identity() {
    let backend = CpuBackend::new();
    for log_n in [14u32, 16] {
        for coset in [false, true] {
            for (o1, o2) in [
                (Ordering::Natural, Ordering::BitReversed),
                (Ordering::Natural, Ordering::Natural),
            ] {
                let x = random(2 << log_n, 99 + u64::from(log_n)); // batch of 2
                let mut data = x.clone();
                backend
                    .ntt(
                        fr_slice_mut(&mut data),
                        log_n,
                        &NttConfig::forward().with_coset(coset).with_orders(o1, o2),
                    )
                    .unwrap();
                assert_ne!(data, x);
                backend
                    .ntt(
                        fr_slice_mut(&mut data),
                        log_n,
                        &NttConfig::inverse().with_coset(coset).with_orders(o2, o1),
                    )
                    .unwrap();
                assert_eq!(data, x, "log_n={log_n} coset={coset} {o1:?}/{o2:?}");
            }
        }
    }
}

#[test]
fn bad_lengths_are_invalid_input() {
    let backend = CpuBackend::new();
    let mut data = vec![Fr::default(); 12];
    for log_n in [3u32, 4, 5] {
        let e = backend
            .ntt(&mut data, log_n, &NttConfig::forward())
            .unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    }
    let e = backend
        .ntt(&mut data, 33, &NttConfig::forward())
        .unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    // Unchanged by the rejected calls.
    assert_eq!(data, vec![Fr::default(); 12]);
    // Empty data is a batch of zero vectors.
    backend.ntt(&mut [], 4, &NttConfig::forward()).unwrap();
    // 12 = 3 vectors of 4.
    let x = random(12, 5);
    let mut d = x.clone();
    backend
        .ntt(fr_slice_mut(&mut d), 2, &NttConfig::forward())
        .unwrap();
    assert_eq!(
        fr_slice(&d[..4]),
        fr_slice(&naive(&x[..4], 2, NttDirection::Forward, false))
    );
}

/// The smallest size on the four-step path through the public API: sampled outputs equal the
/// definition, and the inverse undoes the forward transform.
#[test]
fn four_step_size_2_pow_21() {
    let backend = CpuBackend::new();
    let log_n = 21u32;
    let n = 1usize << log_n;
    let x = random(n, 21);
    let mut data = x.clone();
    let fwd = NttConfig::forward().with_coset(true);
    backend.ntt(fr_slice_mut(&mut data), log_n, &fwd).unwrap();
    let w = omega(log_n);
    for j in [0usize, 1, 12345, n / 2 + 7, n - 1] {
        assert_eq!(
            data[j],
            eval(&x, g() * w.pow_vartime([j as u64])),
            "j = {j}"
        );
    }
    let inv = NttConfig::inverse().with_coset(true);
    backend.ntt(fr_slice_mut(&mut data), log_n, &inv).unwrap();
    assert!(data == x, "inverse ∘ forward = identity at 2^21");
}

//! The fused `h_poly` of the CPU backend: equal to the default built from primitive NTTs, and
//! a true quotient (A·B − C = h·Z at a random point).

use bellows_backend_api::{
    backend::quotient::h_poly_from_primitives,
    backend::Ntt,
    layout::{fr_slice_mut, Fr},
    Error,
};
use bellows_cpu::CpuBackend;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rand::SeedableRng;

fn random(n: usize, rng: &mut rand_chacha::ChaCha8Rng) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

#[test]
fn equals_h_poly_from_primitives() {
    let backend = CpuBackend::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    for (log_n, batch) in [
        (0u32, 1usize),
        (1, 3),
        (2, 1),
        (5, 2),
        (10, 3),
        (13, 1),
        (15, 2),
        (16, 1),
    ] {
        let len = batch << log_n;
        let (a, b, c) = (
            random(len, &mut rng),
            random(len, &mut rng),
            random(len, &mut rng),
        );
        let (mut a1, mut b1, mut c1) = (a.clone(), b.clone(), c.clone());
        backend
            .h_poly(
                fr_slice_mut(&mut a1),
                fr_slice_mut(&mut b1),
                fr_slice_mut(&mut c1),
                log_n,
            )
            .unwrap();
        let (mut a2, mut b2, mut c2) = (a.clone(), b.clone(), c.clone());
        h_poly_from_primitives(
            &backend,
            fr_slice_mut(&mut a2),
            fr_slice_mut(&mut b2),
            fr_slice_mut(&mut c2),
            log_n,
        )
        .unwrap();
        assert_eq!(a1, a2, "log_n={log_n} batch={batch}");
        assert_ne!(a1, a, "log_n={log_n}: output differs from input");
    }
}

/// Lagrange basis evaluation of the polynomial with values `v` on ⟨ω⟩ at `tau` (τ ∉ ⟨ω⟩):
/// `Σ v_i · (τ^n − 1)/n · ω^i/(τ − ω^i)`.
fn eval_from_values(v: &[Scalar], log_n: u32, tau: Scalar) -> Scalar {
    let n = v.len() as u64;
    let w = Scalar::ROOT_OF_UNITY.pow_vartime([1u64 << (32 - log_n)]);
    let factor = (tau.pow_vartime([n]) - Scalar::ONE) * Scalar::from(n).invert().unwrap();
    let mut wi = Scalar::ONE;
    let mut acc = Scalar::ZERO;
    for x in v {
        acc += *x * wi * (tau - wi).invert().unwrap();
        wi *= w;
    }
    acc * factor
}

#[test]
fn is_the_quotient_of_a_satisfied_system() {
    let backend = CpuBackend::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
    for (log_n, batch) in [(1u32, 1usize), (4, 2), (9, 1), (15, 1)] {
        let n = 1usize << log_n;
        let a = random(batch * n, &mut rng);
        let b = random(batch * n, &mut rng);
        // C = A·B on the domain: every constraint holds, so Z divides A·B − C.
        let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| *x * y).collect();
        let mut h = a.clone();
        let (mut b2, mut c2) = (b.clone(), c.clone());
        backend
            .h_poly(
                fr_slice_mut(&mut h),
                fr_slice_mut(&mut b2),
                fr_slice_mut(&mut c2),
                log_n,
            )
            .unwrap();
        let tau = Scalar::random(&mut rng);
        for k in 0..batch {
            let r = k * n..(k + 1) * n;
            let hk = &h[r.clone()];
            assert_eq!(hk[n - 1], Scalar::ZERO, "deg h ≤ n − 2");
            let h_tau = hk.iter().rev().fold(Scalar::ZERO, |acc, x| acc * tau + x);
            let z_tau = tau.pow_vartime([n as u64]) - Scalar::ONE;
            let lhs = eval_from_values(&a[r.clone()], log_n, tau)
                * eval_from_values(&b[r.clone()], log_n, tau)
                - eval_from_values(&c[r], log_n, tau);
            assert_eq!(lhs, h_tau * z_tau, "log_n={log_n} vector {k}");
        }
    }
}

#[test]
fn bad_inputs_are_invalid_input() {
    let backend = CpuBackend::new();
    let (mut a, mut b, mut c) = (
        vec![Fr::default(); 8],
        vec![Fr::default(); 8],
        vec![Fr::default(); 4],
    );
    let e = backend.h_poly(&mut a, &mut b, &mut c, 2).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    let mut c = vec![Fr::default(); 8];
    let e = backend.h_poly(&mut a, &mut b, &mut c, 4).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    let e = backend.h_poly(&mut a, &mut b, &mut c, 40).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
}

//! The composite G1 phase (and the G1 and G2 phase) across the interface: density jobs, the
//! phase's answers and the host's fallback to primitives.

use super::*;
use crate::backend::{G1Handles, G1PhaseInput};

fn random_bits(n: usize, seed: u64) -> Vec<u64> {
    let r = rand_scalars(crate::backend::density_words(n), seed);
    let mut w: Vec<u64> = r.iter().map(|s| Fr::from(*s).0[0]).collect();
    if !n.is_multiple_of(64) {
        if let Some(last) = w.last_mut() {
            *last &= (1u64 << (n % 64)) - 1;
        }
    }
    w
}

/// The domain of the phases here: 2^3.
const LOG_N: u32 = 3;

/// `pts` loaded on `b` four times: the bases of H, L, A and B in G1.
fn g1_handles(b: &dyn Backend, pts: &Arc<Vec<blstrs::G1Affine>>) -> Result<G1Handles> {
    let load = || b.load_bases_g1(pts.clone() as SharedPoints<_>);
    Ok(G1Handles {
        h: load()?,
        l: load()?,
        a: load()?,
        b_g1: load()?,
    })
}

/// Two proofs' assignments (3 inputs, 70 aux variables each) and densities, from seeds
/// `seed` (inputs), `seed + 10` (aux) and `seed + 20..=22` (the A aux, B input and B aux bitmaps).
struct TwoProofs {
    inputs: Vec<Vec<Fr>>,
    aux: Vec<Vec<Fr>>,
    a_aux: Vec<u64>,
    b_in: Vec<u64>,
    b_aux: Vec<u64>,
}

impl TwoProofs {
    fn new(seed: u64) -> Self {
        let vecs = |len: usize, s: u64| -> Vec<Vec<Fr>> {
            (0..2)
                .map(|k| fr_slice(&rand_scalars(len, s + k)).to_vec())
                .collect()
        };
        Self {
            inputs: vecs(3, seed),
            aux: vecs(70, seed + 10),
            a_aux: random_bits(70, seed + 20),
            b_in: random_bits(3, seed + 21),
            b_aux: random_bits(70, seed + 22),
        }
    }

    /// Runs `phase` on these proofs' G1 phase input over a domain of 2^[`LOG_N`] (evaluations
    /// from seeds 1, 2 and 3) with the bases of `handles`.
    fn phase<T>(&self, handles: G1Handles, phase: impl FnOnce(&mut G1PhaseInput<'_>) -> T) -> T {
        let evals = |s: u64| fr_slice(&rand_scalars(2 << LOG_N, s)).to_vec();
        let (mut a, mut b, mut c) = (evals(1), evals(2), evals(3));
        let proofs = self.assignments();
        phase(&mut G1PhaseInput {
            a: &mut a,
            b: &mut b,
            c: &mut c,
            log_n: LOG_N,
            proofs: &proofs,
            handles,
        })
    }

    fn assignments(&self) -> Vec<crate::backend::ProofAssignment<'_>> {
        (0..2)
            .map(|k| crate::backend::ProofAssignment {
                inputs: &self.inputs[k],
                aux: &self.aux[k],
                a_aux_density: &self.a_aux,
                b_input_density: &self.b_in,
                b_aux_density: &self.b_aux,
            })
            .collect()
    }
}

#[test]
fn density_jobs_and_the_g1_phase_cross_the_interface() {
    let plugin = wrapped();
    let pts = g1_points(200);
    let h = plugin
        .load_bases_g1(pts.clone() as SharedPoints<_>)
        .unwrap();
    // A density job equals the plain job over the filtered scalars.
    let sc = fr_slice(&rand_scalars(130, 8)).to_vec();
    let bits = random_bits(130, 9);
    let filtered: Vec<Fr> = (0..130)
        .filter(|&i| crate::backend::density_bit(&bits, i))
        .map(|i| sc[i])
        .collect();
    let mut o = [G1Jacobian::default(); 2];
    plugin
        .msm_g1(
            h,
            &[
                MsmJob::new(7, &sc).with_density(&bits),
                MsmJob::new(7, &filtered),
            ],
            &mut o,
        )
        .unwrap();
    assert!(!filtered.is_empty() && filtered.len() < 130);
    assert_eq!(
        blstrs::G1Projective::from(o[0]),
        blstrs::G1Projective::from(o[1])
    );
    // A bitmap of the wrong length is refused on the host.
    assert!(matches!(
        plugin.msm_g1(
            h,
            &[MsmJob::new(0, &sc).with_density(&bits[..2])],
            &mut o[..1]
        ),
        Err(Error::InvalidInput(_))
    ));

    // The G1 phase of two proofs: through the interface (plugin's own phase), through the host's
    // fallback (plugin refuses), and directly, all equal; A' and L also against naive sums.
    let two = TwoProofs::new(20);
    let (inputs, aux, a_aux, b_in, b_aux) =
        (&two.inputs, &two.aux, &two.a_aux, &two.b_in, &two.b_aux);
    let run = |b: &dyn Backend, hs: G1Handles| two.phase(hs, |input| b.groth16_g1(input));
    let handles = |b: &dyn Backend| g1_handles(b, &pts).unwrap();
    let direct = Mini::default();
    let want = run(&direct, handles(&direct)).unwrap();
    let got = run(&plugin, handles(&plugin)).unwrap();
    let refusing = refusing();
    let fallback = run(&refusing, handles(&refusing)).unwrap();
    let proj = |r: &[[G1Jacobian; 4]]| -> Vec<[blstrs::G1Projective; 4]> {
        r.iter()
            .map(|x| x.map(blstrs::G1Projective::from))
            .collect()
    };
    assert_eq!(proj(&got), proj(&want));
    assert_eq!(proj(&fallback), proj(&want));
    let dot = |s: &[Fr], start: usize, bits: Option<&[u64]>| -> blstrs::G1Projective {
        let mut j = start;
        let mut acc = blstrs::G1Projective::identity();
        for (i, k) in s.iter().enumerate() {
            if bits.is_none_or(|b| crate::backend::density_bit(b, i)) {
                acc += blstrs::G1Projective::from(pts[j]) * blstrs::Scalar::from(*k);
                j += 1;
            }
        }
        acc
    };
    for k in 0..2 {
        let w = proj(&want)[k];
        assert_eq!(w[1], dot(&aux[k], 0, None), "L of proof {k}");
        assert_eq!(
            w[2],
            dot(&inputs[k], 0, None) + dot(&aux[k], 3, Some(a_aux)),
            "A' of proof {k}"
        );
        let nb = crate::backend::check_density(b_in, 3).unwrap();
        assert_eq!(
            w[3],
            dot(&inputs[k], 0, Some(b_in)) + dot(&aux[k], nb, Some(b_aux)),
            "B1' of proof {k}"
        );
    }
    // A phase reaching past a handle is refused on the host, before the plugin runs.
    let small = plugin
        .load_bases_g1(g1_points(4) as SharedPoints<_>)
        .unwrap();
    let mut hs = handles(&plugin);
    hs.l = small;
    match run(&plugin, hs) {
        Err(Error::InvalidInput(m)) => assert!(m.contains("proof 0"), "{m}"),
        r => panic!("expected invalid input, got {r:?}"),
    }
}

#[test]
fn the_g1_and_g2_phase_crosses_the_interface() {
    let pts = g1_points(120);
    let p2 = g2_points(90);
    let two = TwoProofs::new(60);
    let (inputs, aux, b_in, b_aux) = (&two.inputs, &two.aux, &two.b_in, &two.b_aux);
    let load_g1 = |b: &dyn Backend| g1_handles(b, &pts);
    // With `b_g2`, the one call; without, groth16_g1 alone (an empty G2 vector).
    let call = |b: &dyn Backend, hs: G1Handles, b_g2: Option<BasesHandle>| {
        two.phase(hs, |input| match b_g2 {
            Some(h) => b.groth16_g1_g2(input, h),
            None => b.groth16_g1(input).map(|g1| (g1, Vec::new())),
        })
    };
    // (G1 sums, G2 sums) of one backend, loading its own bases; `g2_set` is the G2 set.
    let run = |b: &dyn Backend, g2_set: &Arc<Vec<blstrs::G2Affine>>| {
        let hs = load_g1(b)?;
        let b_g2 = b.load_bases_g2(g2_set.clone() as SharedPoints<_>)?;
        call(b, hs, Some(b_g2))
    };
    let proj = |r: &crate::backend::G1G2Sums| {
        let g1: Vec<[blstrs::G1Projective; 4]> =
            r.0.iter()
                .map(|x| x.map(blstrs::G1Projective::from))
                .collect();
        let g2: Vec<blstrs::G2Projective> =
            r.1.iter().map(|x| blstrs::G2Projective::from(*x)).collect();
        (g1, g2)
    };
    let direct = Mini::default();
    let want = proj(&run(&direct, &p2).unwrap());
    let plugin = wrapped();
    assert_eq!(proj(&run(&plugin, &p2).unwrap()), want);
    // A plugin that refuses the call: the host runs groth16_g1, then msm_g2.
    let refusing = refusing();
    assert_eq!(proj(&run(&refusing, &p2).unwrap()), want);
    // B2' against the naive sum over the B densities.
    let nb = crate::backend::check_density(b_in, 3).unwrap();
    let dot2 = |s: &[Fr], start: usize, bits: &[u64]| -> blstrs::G2Projective {
        let mut j = start;
        let mut acc = blstrs::G2Projective::identity();
        for (i, k) in s.iter().enumerate() {
            if crate::backend::density_bit(bits, i) {
                acc += blstrs::G2Projective::from(p2[j]) * blstrs::Scalar::from(*k);
                j += 1;
            }
        }
        acc
    };
    for k in 0..2 {
        assert_eq!(
            want.1[k],
            dot2(&inputs[k], 0, b_in) + dot2(&aux[k], nb, b_aux),
            "B2' of proof {k}"
        );
    }
    // The G1 part is groth16_g1's.
    let hs = load_g1(&plugin).unwrap();
    let g1 = proj(&call(&plugin, hs, None).unwrap()).0;
    assert_eq!(g1, want.0);
    // Too few G2 bases for the B jobs: refused on the host before the plugin runs.
    match run(&plugin, &g2_points(5)) {
        Err(Error::InvalidInput(m)) => assert!(m.contains("B in G2"), "{m}"),
        r => panic!("expected invalid input, got {r:?}"),
    }
    // A G1 handle in the G2 place is refused.
    let r = call(&plugin, hs, Some(hs.b_g1));
    assert!(matches!(r, Err(Error::InvalidInput(_))), "{r:?}");
}

//! In-process tests of the plugin interface: a small backend wrapped as a plugin object must give
//! exactly what it gives directly, and misbehaviour (panics, errors, malformed answers, freed
//! handles) must come back as errors. The misbehaving backends are in `faults.rs`, the G1 phase
//! across the interface in `phase.rs`; this file holds the correct backend they share and the
//! exact and concurrent calls.

use std::{
    collections::HashMap,
    sync::{atomic::AtomicU64, atomic::Ordering as AO, Arc, Mutex},
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{ROption, RResult, RSlice, RSliceMut, RVec},
};
use ff::{Field, PrimeField};
use group::{Curve, Group as _};

use super::*;
use crate::{
    backend::{host_memory_info, NttDirection, Ordering},
    groth16::host_msm,
    layout::{fr_slice, g1_affine_slice, g2_affine_slice, scalars, scalars_mut},
    plugin::{
        abi::{FfiBackendInfo, FfiMemoryInfo},
        interface::{FfiBackend, FfiBackend_TO},
    },
};

mod encoded;
mod faults;
mod phase;

/// Minimal correct backend: naive DFT (small sizes only) and blst MSM. With `refuse_g1_phase`,
/// its `groth16_g1` and `groth16_g1_g2` answer `Unsupported` (so the host must fall back to the
/// primitives); with
/// `gate`, `msm_g1` meets the test thread at the barrier twice (entered, then released).
#[derive(Default)]
struct Mini {
    bases: Mutex<HashMap<u64, Lent>>,
    next: AtomicU64,
    refuse_g1_phase: bool,
    gate: Option<Arc<std::sync::Barrier>>,
    /// Keeps a copy of the points it loads, and says it no longer reads the lent ones.
    copies: bool,
}

fn bitrev_permute(v: &mut [blstrs::Scalar]) {
    let n = v.len();
    let bits = n.trailing_zeros();
    if bits == 0 {
        return;
    }
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - bits);
        if i < j {
            v.swap(i, j);
        }
    }
}

impl Ntt for Mini {
    fn ntt(&self, data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
        crate::backend::ntt::batch_size(data.len(), log_n)?;
        let n = 1usize << log_n;
        let g = blstrs::Scalar::MULTIPLICATIVE_GENERATOR;
        let mut w = blstrs::Scalar::ROOT_OF_UNITY;
        for _ in log_n..32 {
            w = w.square();
        }
        let inverse = cfg.direction == NttDirection::Inverse;
        if inverse {
            w = w.invert().unwrap();
        }
        for v in scalars_mut(data).chunks_mut(n) {
            if cfg.input_order == Ordering::BitReversed {
                bitrev_permute(v);
            }
            if cfg.coset && !inverse {
                let mut gi = blstrs::Scalar::ONE;
                for x in v.iter_mut() {
                    *x *= gi;
                    gi *= g;
                }
            }
            // X_j = Σ_i x_i·w^(i·j): the polynomial of coefficients x at w^j, by Horner's rule.
            let out: Vec<blstrs::Scalar> = (0..n)
                .map(|j| {
                    let wj = w.pow_vartime([j as u64]);
                    v.iter()
                        .rev()
                        .fold(blstrs::Scalar::ZERO, |acc, x| acc * wj + *x)
                })
                .collect();
            v.copy_from_slice(&out);
            if inverse {
                let ninv = blstrs::Scalar::from(n as u64).invert().unwrap();
                let ginv = g.invert().unwrap();
                let mut gi = blstrs::Scalar::ONE;
                for x in v.iter_mut() {
                    *x *= ninv;
                    if cfg.coset {
                        *x *= gi;
                        gi *= ginv;
                    }
                }
            }
            if cfg.output_order == Ordering::BitReversed {
                bitrev_permute(v);
            }
        }
        Ok(())
    }
}

impl Mini {
    fn load(&self, group: Group, len: usize, lent: Lent) -> BasesHandle {
        let id = self.next.fetch_add(1, AO::Relaxed) + 1;
        self.bases.lock().unwrap().insert(id, lent);
        BasesHandle {
            id,
            group,
            len: len as u64,
        }
    }
    fn get(&self, h: BasesHandle) -> Result<Lent> {
        self.bases
            .lock()
            .unwrap()
            .get(&h.id)
            .cloned()
            .ok_or_else(|| Error::invalid("unknown handle"))
    }
}

impl Msm for Mini {
    fn load_bases_g1(&self, bases: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        let len = bases.points().len();
        let bases = if self.copies {
            Arc::new(bases.points().to_vec()) as SharedPoints<G1Affine>
        } else {
            bases
        };
        Ok(self.load(Group::G1, len, Lent::G1(bases)))
    }
    fn bases_need_host(&self, h: BasesHandle) -> Result<bool> {
        self.get(h).map(|_| !self.copies)
    }
    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        let len = bases.points().len();
        Ok(self.load(Group::G2, len, Lent::G2(bases)))
    }
    fn load_bases_g1_encoded(&self, points: &dyn EncodedPoints) -> Result<EncodedLoad> {
        let n = points.len() as usize;
        Ok(
            match crate::backend::encoded::decode_encoded::<blstrs::G1Affine>(points)? {
                Ok(v) => EncodedLoad::Loaded(self.load(Group::G1, n, Lent::G1(Arc::new(v)))),
                Err((index, defect)) => EncodedLoad::Refused { index, defect },
            },
        )
    }
    fn load_bases_g2_encoded(&self, points: &dyn EncodedPoints) -> Result<EncodedLoad> {
        let n = points.len() as usize;
        Ok(
            match crate::backend::encoded::decode_encoded::<blstrs::G2Affine>(points)? {
                Ok(v) => EncodedLoad::Loaded(self.load(Group::G2, n, Lent::G2(Arc::new(v)))),
                Err((index, defect)) => EncodedLoad::Refused { index, defect },
            },
        )
    }
    fn free_bases(&self, h: BasesHandle) -> Result<()> {
        self.bases
            .lock()
            .unwrap()
            .remove(&h.id)
            .map(|_| ())
            .ok_or_else(|| Error::invalid("unknown handle"))
    }
    fn msm_g1(&self, h: BasesHandle, jobs: &[MsmJob<'_>], out: &mut [G1Jacobian]) -> Result<()> {
        if let Some(g) = &self.gate {
            g.wait();
            g.wait();
        }
        match self.get(h)? {
            Lent::G1(b) => msm_jobs(&h, b.points(), jobs, out, host_msm::msm_g1),
            _ => Err(Error::invalid("group")),
        }
    }
    fn msm_g2(&self, h: BasesHandle, jobs: &[MsmJob<'_>], out: &mut [G2Jacobian]) -> Result<()> {
        match self.get(h)? {
            Lent::G2(b) => msm_jobs(&h, b.points(), jobs, out, host_msm::msm_g2),
            _ => Err(Error::invalid("group")),
        }
    }
}

/// Each job's MSM over its window of `points`, by `msm`, once the job is checked against `h`.
fn msm_jobs<A, J>(
    h: &BasesHandle,
    points: &[A],
    jobs: &[MsmJob<'_>],
    out: &mut [J],
    msm: fn(&[A], &[Fr]) -> J,
) -> Result<()> {
    for (j, o) in jobs.iter().zip(out) {
        j.check(h)?;
        let sc = j.used_scalars();
        *o = msm(&points[j.start..j.start + sc.len()], &sc);
    }
    Ok(())
}

impl MemoryPool for Mini {
    fn memory_info(&self) -> Result<MemoryInfo> {
        Ok(host_memory_info())
    }
    fn set_memory_budget(&self, _bytes: Option<u64>) -> Result<()> {
        Ok(())
    }
}

impl Backend for Mini {
    fn info(&self) -> BackendInfo {
        BackendInfo::new("mini", "0", "").with_capabilities(crate::Capabilities::all(6))
    }

    fn groth16_g1(
        &self,
        input: &mut crate::backend::G1PhaseInput<'_>,
    ) -> Result<Vec<[G1Jacobian; 4]>> {
        if self.refuse_g1_phase {
            return Err(Error::unsupported("mini", "groth16_g1"));
        }
        crate::backend::groth16_g1_from_primitives(self, input)
    }

    fn groth16_g1_g2(
        &self,
        input: &mut crate::backend::G1PhaseInput<'_>,
        b_g2: BasesHandle,
    ) -> Result<crate::backend::G1G2Sums> {
        if self.refuse_g1_phase {
            return Err(Error::unsupported("mini", "groth16_g1_g2"));
        }
        crate::backend::groth16_g1_g2_from_parts(self, input, b_g2)
    }
}

fn rand_scalars(n: usize, seed: u64) -> Vec<blstrs::Scalar> {
    use rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    (0..n).map(|_| blstrs::Scalar::random(&mut rng)).collect()
}

fn g1_points(n: usize) -> Arc<Vec<blstrs::G1Affine>> {
    let s = rand_scalars(n, 99);
    let mut v: Vec<_> = s
        .iter()
        .map(|k| (blstrs::G1Projective::generator() * k).to_affine())
        .collect();
    if n > 2 {
        v[1] = blstrs::G1Affine::from(blstrs::G1Projective::identity());
    }
    Arc::new(v)
}

fn g2_points(n: usize) -> Arc<Vec<blstrs::G2Affine>> {
    let s = rand_scalars(n, 98);
    Arc::new(
        s.iter()
            .map(|k| (blstrs::G2Projective::generator() * k).to_affine())
            .collect(),
    )
}

fn wrapped() -> PluginBackend {
    in_process(Mini::default(), "in-process:mini").unwrap()
}

/// [`wrapped`] with `refuse_g1_phase`: its phase calls answer `Unsupported`.
fn refusing() -> PluginBackend {
    in_process(
        Mini {
            refuse_g1_phase: true,
            ..Mini::default()
        },
        "in-process:refusing",
    )
    .unwrap()
}

#[test]
fn ntt_and_h_poly_through_the_interface_are_exact() {
    let direct = Mini::default();
    let plugin = wrapped();
    assert_eq!(plugin.info().name, "mini");
    for log_n in 0..=4u32 {
        let data = fr_slice(&rand_scalars(3 << log_n, log_n as u64)).to_vec();
        for cfg in [
            NttConfig::forward(),
            NttConfig::inverse(),
            NttConfig::forward().with_coset(true),
            NttConfig::inverse().with_coset(true),
            NttConfig::forward().with_orders(Ordering::Natural, Ordering::BitReversed),
            NttConfig::inverse().with_orders(Ordering::BitReversed, Ordering::Natural),
        ] {
            let (mut x, mut y) = (data.clone(), data.clone());
            direct.ntt(&mut x, log_n, &cfg).unwrap();
            plugin.ntt(&mut y, log_n, &cfg).unwrap();
            assert_eq!(x, y, "log_n {log_n} cfg {cfg:?}");
            if log_n > 0 {
                assert_ne!(x, data, "the transform did something");
            }
        }
        let mk = |s| fr_slice(&rand_scalars(2 << log_n, s)).to_vec();
        let (mut a1, mut b1, mut c1) = (mk(1), mk(2), mk(3));
        let (mut a2, mut b2, mut c2) = (a1.clone(), b1.clone(), c1.clone());
        direct.h_poly(&mut a1, &mut b1, &mut c1, log_n).unwrap();
        plugin.h_poly(&mut a2, &mut b2, &mut c2, log_n).unwrap();
        assert_eq!(a1, a2);
    }
    // Bad input: the plugin's error keeps its kind and names the "file".
    let mut odd = vec![Fr::ONE; 3];
    match plugin.ntt(&mut odd, 1, &NttConfig::forward()) {
        Err(Error::InvalidInput(m)) => assert!(m.contains("in-process:mini"), "{m}"),
        r => panic!("expected invalid input, got {r:?}"),
    }
}

#[test]
fn msm_through_the_interface_is_exact_and_handles_are_checked() {
    let plugin = wrapped();
    let pts = g1_points(40);
    let weak = Arc::downgrade(&pts);
    let h = plugin
        .load_bases_g1(pts.clone() as SharedPoints<G1Affine>)
        .unwrap();
    assert_eq!((h.group, h.len), (Group::G1, 40));
    drop(pts); // the host keeps the points for the plugin
    let sc = rand_scalars(40, 5);
    let jobs = [
        MsmJob::new(0, fr_slice(&sc)),
        MsmJob::new(3, fr_slice(&sc[..10])),
        MsmJob::new(40, &[]),
    ];
    let mut out = vec![G1Jacobian::default(); 3];
    for _ in 0..3 {
        plugin.msm_g1(h, &jobs, &mut out).unwrap();
    }
    let p = weak.upgrade().unwrap();
    let expect = |start: usize, s: &[blstrs::Scalar]| -> blstrs::G1Projective {
        s.iter()
            .zip(&p[start..])
            .map(|(k, b)| blstrs::G1Projective::from(*b) * k)
            .sum()
    };
    assert_eq!(blstrs::G1Projective::from(out[0]), expect(0, &sc));
    assert_eq!(blstrs::G1Projective::from(out[1]), expect(3, &sc[..10]));
    assert!(out[2].is_identity());
    drop(p);

    // Out of range: rejected on the host.
    let bad = [MsmJob::new(35, fr_slice(&sc[..10]))];
    assert!(matches!(
        plugin.msm_g1(h, &bad, &mut out[..1]),
        Err(Error::InvalidInput(_))
    ));
    // Wrong group.
    let mut o2 = vec![G2Jacobian::default(); 1];
    assert!(matches!(
        plugin.msm_g2(h, &jobs[..1], &mut o2),
        Err(Error::InvalidInput(_))
    ));
    // Free: the points go, and the handle is dead.
    plugin.free_bases(h).unwrap();
    assert!(weak.upgrade().is_none(), "points released after free_bases");
    match plugin.msm_g1(h, &jobs, &mut out) {
        Err(Error::InvalidInput(m)) => assert!(m.contains("not resident"), "{m}"),
        r => panic!("use after free must be an error, got {r:?}"),
    }
    assert!(matches!(plugin.free_bases(h), Err(Error::InvalidInput(_))));

    // G2.
    let p2 = g2_points(9);
    let h2 = plugin
        .load_bases_g2(p2.clone() as SharedPoints<G2Affine>)
        .unwrap();
    let sc2 = rand_scalars(9, 6);
    let mut o = vec![G2Jacobian::default(); 2];
    plugin
        .msm_g2(
            h2,
            &[
                MsmJob::new(0, fr_slice(&sc2)),
                MsmJob::new(8, fr_slice(&sc2[..1])),
            ],
            &mut o,
        )
        .unwrap();
    let e0: blstrs::G2Projective = sc2
        .iter()
        .zip(p2.iter())
        .map(|(k, b)| blstrs::G2Projective::from(*b) * k)
        .sum();
    assert_eq!(blstrs::G2Projective::from(o[0]), e0);
    assert_eq!(
        blstrs::G2Projective::from(o[1]),
        blstrs::G2Projective::from(p2[8]) * sc2[0]
    );
    assert_eq!(G2Jacobian::from(blstrs::G2Projective::from(o[0])), o[0]);
    let _ = g2_affine_slice(&p2);
    let _ = g1_affine_slice(&[]);
    assert!(
        plugin.memory_info().unwrap().total > 0 || !std::path::Path::new("/proc/meminfo").exists()
    );
    plugin.trim().unwrap();
}

#[test]
fn points_a_plugin_no_longer_reads_are_dropped_by_the_host_at_once() {
    for copies in [false, true] {
        let plugin = in_process(
            Mini {
                copies,
                ..Mini::default()
            },
            "in-process:copies",
        )
        .unwrap();
        let pts = g1_points(24);
        let kept: Vec<blstrs::G1Affine> = pts.to_vec();
        let weak = Arc::downgrade(&pts);
        let h = plugin
            .load_bases_g1(pts.clone() as SharedPoints<G1Affine>)
            .unwrap();
        drop(pts);
        // A plugin with its own copy says so, and the host lets the points go; one that reads
        // them keeps them alive until free_bases.
        assert_eq!(plugin.bases_need_host(h).unwrap(), !copies);
        assert_eq!(weak.upgrade().is_some(), !copies, "copies: {copies}");
        let sc = rand_scalars(24, 9);
        let mut out = vec![G1Jacobian::default(); 1];
        plugin
            .msm_g1(h, &[MsmJob::new(0, fr_slice(&sc))], &mut out)
            .unwrap();
        let expect: blstrs::G1Projective = sc
            .iter()
            .zip(&kept)
            .map(|(k, b)| blstrs::G1Projective::from(*b) * k)
            .sum();
        assert_eq!(blstrs::G1Projective::from(out[0]), expect);
        plugin.free_bases(h).unwrap();
        assert!(weak.upgrade().is_none());
    }
}

#[test]
fn concurrent_calls_share_one_object() {
    let plugin = Arc::new(wrapped());
    let pts = g1_points(16);
    let h = plugin
        .load_bases_g1(pts.clone() as SharedPoints<_>)
        .unwrap();
    let sc = rand_scalars(16, 3);
    let mut expect = [G1Jacobian::default()];
    plugin
        .msm_g1(h, &[MsmJob::new(0, fr_slice(&sc))], &mut expect)
        .unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..5 {
                    let mut o = [G1Jacobian::default()];
                    plugin
                        .msm_g1(h, &[MsmJob::new(0, fr_slice(&sc))], &mut o)
                        .unwrap();
                    assert_eq!(o, expect);
                }
            });
        }
    });
    plugin.free_bases(h).unwrap();
}

#[test]
fn free_bases_is_refused_while_an_msm_is_in_flight() {
    let gate = Arc::new(std::sync::Barrier::new(2));
    let plugin = in_process(
        Mini {
            gate: Some(gate.clone()),
            ..Mini::default()
        },
        "in-process:gated",
    )
    .unwrap();
    let pts = g1_points(8);
    let h = plugin
        .load_bases_g1(pts.clone() as SharedPoints<_>)
        .unwrap();
    let sc = rand_scalars(8, 4);
    std::thread::scope(|s| {
        let running = s.spawn(|| {
            let mut o = [G1Jacobian::default()];
            plugin
                .msm_g1(h, &[MsmJob::new(0, fr_slice(&sc))], &mut o)
                .map(|_| o[0])
        });
        gate.wait(); // the MSM is inside the plugin now
        assert_eq!(plugin.in_flight(h), 1);
        match plugin.free_bases(h) {
            Err(Error::InvalidInput(m)) => assert!(m.contains("in flight"), "{m}"),
            r => panic!("free_bases during an MSM must be refused, got {r:?}"),
        }
        gate.wait(); // let it finish
        let got = running.join().unwrap().unwrap();
        let want: blstrs::G1Projective = sc
            .iter()
            .zip(pts.iter())
            .map(|(k, b)| blstrs::G1Projective::from(*b) * k)
            .sum();
        assert_eq!(blstrs::G1Projective::from(got), want);
    });
    assert_eq!(plugin.in_flight(h), 0);
    plugin.free_bases(h).unwrap();
    assert!(matches!(plugin.free_bases(h), Err(Error::InvalidInput(_))));
}

//! In-process tests of the plugin interface: a small backend wrapped as a plugin object must give
//! exactly what it gives directly, and misbehaviour (panics, errors, malformed answers, freed
//! handles) must come back as errors.

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
            let out: Vec<blstrs::Scalar> = (0..n)
                .map(|j| {
                    let wj = w.pow_vartime([j as u64]);
                    let mut acc = blstrs::Scalar::ZERO;
                    let mut wij = blstrs::Scalar::ONE;
                    for x in v.iter() {
                        acc += *x * wij;
                        wij *= wj;
                    }
                    acc
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
        Ok(self.load(Group::G1, len, Lent::G1(bases)))
    }
    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        let len = bases.points().len();
        Ok(self.load(Group::G2, len, Lent::G2(bases)))
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
        let Lent::G1(b) = self.get(h)? else {
            return Err(Error::invalid("group"));
        };
        for (j, o) in jobs.iter().zip(out) {
            j.check(&h)?;
            let sc = j.used_scalars();
            *o = host_msm::msm_g1(&b.points()[j.start..j.start + sc.len()], &sc);
        }
        Ok(())
    }
    fn msm_g2(&self, h: BasesHandle, jobs: &[MsmJob<'_>], out: &mut [G2Jacobian]) -> Result<()> {
        let Lent::G2(b) = self.get(h)? else {
            return Err(Error::invalid("group"));
        };
        for (j, o) in jobs.iter().zip(out) {
            j.check(&h)?;
            let sc = j.used_scalars();
            *o = host_msm::msm_g2(&b.points()[j.start..j.start + sc.len()], &sc);
        }
        Ok(())
    }
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
        BackendInfo {
            name: "mini".into(),
            version: "0".into(),
            capabilities: crate::Capabilities::all(6),
            ..Default::default()
        }
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

/// A backend that panics in whichever call `mode` names (and in `drop` for "drop").
struct Panicky {
    mode: &'static str,
    inner: Mini,
}

impl Panicky {
    fn boom(&self, call: &str) {
        if self.mode == call {
            panic!("deliberate panic in {call}");
        }
    }
}

impl Drop for Panicky {
    fn drop(&mut self) {
        if self.mode == "drop" {
            panic!("deliberate panic in drop");
        }
    }
}

impl Ntt for Panicky {
    fn ntt(&self, d: &mut [Fr], l: u32, c: &NttConfig) -> Result<()> {
        self.boom("ntt");
        self.inner.ntt(d, l, c)
    }
    fn h_poly(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr], l: u32) -> Result<()> {
        self.boom("h_poly");
        self.inner.h_poly(a, b, c, l)
    }
}
impl Msm for Panicky {
    fn load_bases_g1(&self, b: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        self.boom("load_bases_g1");
        self.inner.load_bases_g1(b)
    }
    fn load_bases_g2(&self, b: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        self.boom("load_bases_g2");
        self.inner.load_bases_g2(b)
    }
    fn free_bases(&self, h: BasesHandle) -> Result<()> {
        self.boom("free_bases");
        self.inner.free_bases(h)
    }
    fn msm_g1(&self, h: BasesHandle, j: &[MsmJob<'_>], o: &mut [G1Jacobian]) -> Result<()> {
        self.boom("msm_g1");
        self.inner.msm_g1(h, j, o)
    }
    fn msm_g2(&self, h: BasesHandle, j: &[MsmJob<'_>], o: &mut [G2Jacobian]) -> Result<()> {
        self.boom("msm_g2");
        self.inner.msm_g2(h, j, o)
    }
}
impl MemoryPool for Panicky {
    fn memory_info(&self) -> Result<MemoryInfo> {
        self.boom("memory_info");
        self.inner.memory_info()
    }
    fn set_memory_budget(&self, b: Option<u64>) -> Result<()> {
        self.boom("set_memory_budget");
        self.inner.set_memory_budget(b)
    }
    fn trim(&self) -> Result<()> {
        self.boom("trim");
        Ok(())
    }
}
impl Backend for Panicky {
    fn info(&self) -> BackendInfo {
        self.boom("info");
        self.inner.info()
    }
}

fn expect_panic_error<T: std::fmt::Debug>(r: Result<T>, call: &str) {
    match r {
        Err(Error::Plugin { path, reason }) => {
            assert_eq!(path.to_str(), Some("in-process:panicky"));
            assert_eq!(
                reason,
                format!("panicked in {call}: deliberate panic in {call}")
            );
        }
        r => panic!("{call}: expected a plugin panic error, got {r:?}"),
    }
}

#[test]
fn panics_in_every_call_come_back_as_errors() {
    let calls = [
        "ntt",
        "h_poly",
        "load_bases_g1",
        "load_bases_g2",
        "free_bases",
        "msm_g1",
        "msm_g2",
        "memory_info",
        "set_memory_budget",
        "trim",
    ];
    let pts = g1_points(4);
    let pts2 = g2_points(2);
    let sc = rand_scalars(4, 1);
    for call in calls {
        let b = in_process(
            Panicky {
                mode: call,
                inner: Mini::default(),
            },
            "in-process:panicky",
        )
        .unwrap();
        // Set up handles before the faulty call where needed (load does not panic in those modes).
        let h1 = (call != "load_bases_g1")
            .then(|| b.load_bases_g1(pts.clone() as SharedPoints<_>).unwrap());
        let h2 = (call != "load_bases_g2")
            .then(|| b.load_bases_g2(pts2.clone() as SharedPoints<_>).unwrap());
        let mut d = fr_slice(&sc).to_vec();
        let r: Result<()> = match call {
            "ntt" => b.ntt(&mut d, 2, &NttConfig::forward()),
            "h_poly" => {
                let (mut x, mut y) = (d.clone(), d.clone());
                b.h_poly(&mut d, &mut x, &mut y, 2)
            }
            "load_bases_g1" => b.load_bases_g1(pts.clone() as SharedPoints<_>).map(|_| ()),
            "load_bases_g2" => b.load_bases_g2(pts2.clone() as SharedPoints<_>).map(|_| ()),
            "free_bases" => b.free_bases(h1.unwrap()),
            "msm_g1" => b.msm_g1(
                h1.unwrap(),
                &[MsmJob::new(0, fr_slice(&sc))],
                &mut [G1Jacobian::default()],
            ),
            "msm_g2" => b.msm_g2(
                h2.unwrap(),
                &[MsmJob::new(0, fr_slice(&sc[..2]))],
                &mut [G2Jacobian::default()],
            ),
            "memory_info" => b.memory_info().map(|_| ()),
            "set_memory_budget" => b.set_memory_budget(Some(1)),
            "trim" => b.trim(),
            _ => unreachable!(),
        };
        expect_panic_error(r, call);
        // The backend object is still usable for the other calls.
        if call != "ntt" {
            b.ntt(&mut d, 2, &NttConfig::forward()).unwrap();
        }
    }
    // A panic in info() fails the wrap with an error.
    let e = in_process(
        Panicky {
            mode: "info",
            inner: Mini::default(),
        },
        "in-process:panicky",
    )
    .unwrap_err();
    expect_panic_error::<()>(Err(e), "info");
    // A panic in the destructor is contained (the process goes on).
    drop(
        in_process(
            Panicky {
                mode: "drop",
                inner: Mini::default(),
            },
            "in-process:panicky",
        )
        .unwrap(),
    );
    assert_eq!(scalars(&[Fr::ONE])[0], blstrs::Scalar::ONE);
}

/// Speaks the FFI directly and returns malformed answers.
struct Liar {
    mode: &'static str,
}

impl FfiBackend for Liar {
    fn info(&self) -> RResult<FfiBackendInfo, FfiError> {
        let name = if self.mode == "empty-name" {
            ""
        } else {
            "liar"
        };
        RResult::ROk(FfiBackendInfo::from(&BackendInfo {
            name: name.into(),
            ..Default::default()
        }))
    }
    fn ntt(&self, _d: RSliceMut<'_, FfiFr>, _l: u32, _c: FfiNttConfig) -> RResult<(), FfiError> {
        RResult::RErr(FfiError {
            code: super::super::abi::codes::OUT_OF_MEMORY,
            requested: 8,
            available: 4,
            ..FfiError::other("")
        })
    }
    fn h_poly(
        &self,
        _a: RSliceMut<'_, FfiFr>,
        _b: RSliceMut<'_, FfiFr>,
        _c: RSliceMut<'_, FfiFr>,
        _l: u32,
    ) -> RResult<(), FfiError> {
        RResult::RErr(FfiError::other("h_poly exploded"))
    }
    unsafe fn load_bases_g1(
        &self,
        _p: *const FfiG1Affine,
        len: u64,
    ) -> RResult<FfiBasesHandle, FfiError> {
        let len = if self.mode == "bad-handle" {
            len + 1
        } else {
            len
        };
        RResult::ROk(FfiBasesHandle {
            id: 1,
            group: 1,
            len,
        })
    }
    unsafe fn load_bases_g2(
        &self,
        _p: *const FfiG2Affine,
        len: u64,
    ) -> RResult<FfiBasesHandle, FfiError> {
        RResult::ROk(FfiBasesHandle {
            id: 2,
            group: 1,
            len,
        })
    }
    fn free_bases(&self, _h: FfiBasesHandle) -> RResult<(), FfiError> {
        RResult::ROk(())
    }
    fn msm_g1(
        &self,
        _h: FfiBasesHandle,
        jobs: RSlice<'_, FfiMsmJob<'_>>,
    ) -> RResult<RVec<FfiG1Jacobian>, FfiError> {
        RResult::ROk(
            (0..jobs.len() + 1)
                .map(|_| FfiG1Jacobian([0; 18]))
                .collect(),
        )
    }
    fn msm_g2(
        &self,
        _h: FfiBasesHandle,
        _j: RSlice<'_, FfiMsmJob<'_>>,
    ) -> RResult<RVec<FfiG2Jacobian>, FfiError> {
        RResult::ROk(RVec::new())
    }
    fn memory_info(&self) -> RResult<FfiMemoryInfo, FfiError> {
        RResult::ROk(FfiMemoryInfo {
            free: 1,
            total: 2,
            budget: ROption::RNone,
        })
    }
    fn set_memory_budget(&self, _b: ROption<u64>) -> RResult<(), FfiError> {
        RResult::ROk(())
    }
    unsafe fn pin_host(&self, _p: *const u8, _l: u64) -> RResult<bool, FfiError> {
        RResult::ROk(false)
    }
    unsafe fn unpin_host(&self, _p: *const u8) -> RResult<(), FfiError> {
        RResult::ROk(())
    }
    fn trim(&self) -> RResult<(), FfiError> {
        RResult::ROk(())
    }
}

fn liar(mode: &'static str) -> Result<PluginBackend> {
    PluginBackend::new(
        FfiBackend_TO::from_value(Liar { mode }, TD_Opaque),
        "liar.so",
    )
}

#[test]
fn malformed_answers_are_plugin_errors() {
    assert!(matches!(liar("empty-name"), Err(Error::Plugin { .. })));
    let b = liar("").unwrap();
    let pts = g1_points(3);
    let h = b.load_bases_g1(pts.clone() as SharedPoints<_>).unwrap();
    let sc = rand_scalars(3, 0);
    let mut out = [G1Jacobian::default(); 1];
    match b.msm_g1(h, &[MsmJob::new(0, fr_slice(&sc))], &mut out) {
        Err(Error::Plugin { path, reason }) => {
            assert_eq!(path.to_str(), Some("liar.so"));
            assert_eq!(reason, "msm_g1 returned 2 results for 1 jobs");
        }
        r => panic!("{r:?}"),
    }
    // A second load returning an id in use is refused.
    assert!(matches!(
        b.load_bases_g1(pts.clone() as SharedPoints<_>),
        Err(Error::Plugin { .. })
    ));
    // A G2 load answered with a G1 handle is refused.
    let p2 = g2_points(1);
    match b.load_bases_g2(p2 as SharedPoints<_>) {
        Err(Error::Plugin { reason, .. }) => {
            assert!(reason.contains("wrong group or length"), "{reason}")
        }
        r => panic!("{r:?}"),
    }
    // Error categories are kept.
    let mut d = vec![Fr::ONE; 2];
    assert!(matches!(
        b.ntt(&mut d, 1, &NttConfig::forward()),
        Err(Error::OutOfMemory {
            requested: 8,
            available: 4,
            ..
        })
    ));
    let (mut x, mut y) = (d.clone(), d.clone());
    match b.h_poly(&mut d, &mut x, &mut y, 1) {
        Err(e @ Error::Plugin { .. }) => {
            assert_eq!(e.to_string(), "plugin liar.so: h_poly exploded")
        }
        r => panic!("{r:?}"),
    }
    let b = liar("bad-handle").unwrap();
    assert!(matches!(
        b.load_bases_g1(pts as SharedPoints<_>),
        Err(Error::Plugin { .. })
    ));
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
    use crate::backend::{G1Handles, G1PhaseInput};
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
    let log_n = 3u32;
    let n = 1usize << log_n;
    let two = TwoProofs::new(20);
    let (inputs, aux, a_aux, b_in, b_aux) =
        (&two.inputs, &two.aux, &two.a_aux, &two.b_in, &two.b_aux);
    let proofs = two.assignments();
    let evals = |s: u64| fr_slice(&rand_scalars(2 * n, s)).to_vec();
    let run = |b: &dyn Backend, hs: G1Handles| -> Result<Vec<[G1Jacobian; 4]>> {
        let (mut a, mut bb, mut c) = (evals(1), evals(2), evals(3));
        b.groth16_g1(&mut G1PhaseInput {
            a: &mut a,
            b: &mut bb,
            c: &mut c,
            log_n,
            proofs: &proofs,
            handles: hs,
        })
    };
    let handles = |b: &dyn Backend| G1Handles {
        h: b.load_bases_g1(pts.clone() as SharedPoints<_>).unwrap(),
        l: b.load_bases_g1(pts.clone() as SharedPoints<_>).unwrap(),
        a: b.load_bases_g1(pts.clone() as SharedPoints<_>).unwrap(),
        b_g1: b.load_bases_g1(pts.clone() as SharedPoints<_>).unwrap(),
    };
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
    use crate::backend::{G1Handles, G1PhaseInput};
    let pts = g1_points(120);
    let p2 = g2_points(90);
    let log_n = 3u32;
    let n = 1usize << log_n;
    let two = TwoProofs::new(60);
    let (inputs, aux, b_in, b_aux) = (&two.inputs, &two.aux, &two.b_in, &two.b_aux);
    let proofs = two.assignments();
    let evals = |s: u64| fr_slice(&rand_scalars(2 * n, s)).to_vec();
    let load_g1 = |b: &dyn Backend| -> Result<G1Handles> {
        let load = || b.load_bases_g1(pts.clone() as SharedPoints<_>);
        Ok(G1Handles {
            h: load()?,
            l: load()?,
            a: load()?,
            b_g1: load()?,
        })
    };
    // With `b_g2`, the one call; without, groth16_g1 alone (an empty G2 vector).
    let call = |b: &dyn Backend, hs: G1Handles, b_g2: Option<BasesHandle>| {
        let (mut a, mut bb, mut c) = (evals(1), evals(2), evals(3));
        let mut input = G1PhaseInput {
            a: &mut a,
            b: &mut bb,
            c: &mut c,
            log_n,
            proofs: &proofs,
            handles: hs,
        };
        match b_g2 {
            Some(h) => b.groth16_g1_g2(&mut input, h),
            None => b.groth16_g1(&mut input).map(|g1| (g1, Vec::new())),
        }
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

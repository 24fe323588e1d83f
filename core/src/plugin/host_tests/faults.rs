//! Misbehaving backends: one that panics in a chosen call, one that speaks the FFI directly and
//! returns malformed answers; both must come back to the host as errors.

use super::*;

/// A backend that panics in whichever call `mode` names (and in `drop` for "drop"). It offers
/// no encoded loads, as a plugin built before them.
pub(super) struct Panicky {
    mode: &'static str,
    inner: Mini,
}

/// A [`Panicky`] that panics nowhere: a correct backend without encoded loads.
pub(super) fn no_encoded() -> Panicky {
    Panicky {
        mode: "",
        inner: Mini::default(),
    }
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

/// What the FFI's calls answer.
type Answer<T> = RResult<T, FfiError>;
/// Scalars crossing the FFI.
type Scalars<'a> = RSliceMut<'a, FfiFr>;
/// MSM jobs crossing the FFI.
type Jobs<'a> = RSlice<'a, FfiMsmJob<'a>>;

/// A handle of `group` 1 (G1), whatever was loaded.
fn g1_handle(id: u64, len: u64) -> Answer<FfiBasesHandle> {
    RResult::ROk(FfiBasesHandle { id, group: 1, len })
}

impl FfiBackend for Liar {
    fn info(&self) -> Answer<FfiBackendInfo> {
        let name = if self.mode == "empty-name" {
            ""
        } else {
            "liar"
        };
        RResult::ROk(FfiBackendInfo::from(&BackendInfo::new(name, "", "")))
    }
    fn ntt(&self, _d: Scalars<'_>, _l: u32, _c: FfiNttConfig) -> Answer<()> {
        RResult::RErr(FfiError {
            code: crate::plugin::abi::codes::OUT_OF_MEMORY,
            requested: 8,
            available: 4,
            ..FfiError::other("")
        })
    }
    fn h_poly(&self, _: Scalars<'_>, _: Scalars<'_>, _: Scalars<'_>, _: u32) -> Answer<()> {
        RResult::RErr(FfiError::other("h_poly exploded"))
    }
    unsafe fn load_bases_g1(&self, _p: *const FfiG1Affine, len: u64) -> Answer<FfiBasesHandle> {
        g1_handle(1, len + u64::from(self.mode == "bad-handle"))
    }
    unsafe fn load_bases_g2(&self, _p: *const FfiG2Affine, len: u64) -> Answer<FfiBasesHandle> {
        g1_handle(2, len)
    }
    fn free_bases(&self, _h: FfiBasesHandle) -> Answer<()> {
        RResult::ROk(())
    }
    fn msm_g1(&self, _: FfiBasesHandle, jobs: Jobs<'_>) -> Answer<RVec<FfiG1Jacobian>> {
        let one_too_many = jobs.len() + 1;
        RResult::ROk((0..one_too_many).map(|_| FfiG1Jacobian([0; 18])).collect())
    }
    fn msm_g2(&self, _: FfiBasesHandle, _: Jobs<'_>) -> Answer<RVec<FfiG2Jacobian>> {
        RResult::ROk(RVec::new())
    }
    fn memory_info(&self) -> Answer<FfiMemoryInfo> {
        RResult::ROk(FfiMemoryInfo {
            free: 1,
            total: 2,
            budget: ROption::RNone,
        })
    }
    fn set_memory_budget(&self, _b: ROption<u64>) -> Answer<()> {
        RResult::ROk(())
    }
    unsafe fn pin_host(&self, _p: *const u8, _l: u64) -> Answer<bool> {
        RResult::ROk(false)
    }
    unsafe fn unpin_host(&self, _p: *const u8) -> Answer<()> {
        RResult::ROk(())
    }
    fn trim(&self) -> Answer<()> {
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

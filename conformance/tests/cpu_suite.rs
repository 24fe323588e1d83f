//! The conformance suite on the CPU backend, in process and through its plugin
//! (`libbellows_backend_cpu.so`), and on a deliberately wrong backend, which it must catch.

use std::sync::Arc;

use bellows_conformance::{
    plugin_build::build_plugins, run_cli, run_suite, Level, Mismatch, Outcome, Report, SuiteOptions,
};
use bellows_core::{
    backend::{
        BasesHandle, EncodedLoad, EncodedPoints, MemoryPool, Msm, MsmJob, Ntt, NttConfig,
        SharedPoints,
    },
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    plugin::load_backend,
    Backend, BackendConfig, BackendInfo, Result,
};
use bellows_cpu::CpuBackend;
use group::Group;

/// The quick level up to 2^`max_log_size`, on `threads` threads.
fn quick_at(max_log_size: u32, threads: usize) -> SuiteOptions {
    SuiteOptions::at(Level::Quick)
        .with_max_log_size(max_log_size)
        .with_threads(threads)
}

/// Quick level at sizes that fit CI's two cores.
fn quick() -> SuiteOptions {
    quick_at(8, 3)
}

/// The quick suite on `candidate` against the CPU backend, up to 2^`max_log_size`, two threads.
fn quick_against_cpu(candidate: Arc<dyn Backend>, max_log_size: u32) -> Report {
    let reference = Arc::new(CpuBackend::new());
    run_suite(candidate, reference, &quick_at(max_log_size, 2), |_| {})
}

/// The mismatch the check `name` of `report` found (a panic if it found none).
fn mismatch<'a>(report: &'a Report, name: &str) -> &'a Mismatch {
    let row = report.results.iter().find(|r| r.name == name).unwrap();
    match &row.outcome {
        Outcome::Mismatch(m) => m,
        o => panic!("{name}: {o:?}"),
    }
}

fn assert_passes(candidate: Arc<dyn Backend>) {
    let reference: Arc<dyn Backend> = Arc::new(CpuBackend::new());
    let mut seen = 0;
    let report = run_suite(candidate, reference, &quick(), |_| seen += 1);
    eprintln!("{}", report.table());
    assert!(report.passed(), "{}", report.table());
    let (passed, failed, skipped) = report.counts();
    assert_eq!((failed, skipped), (0, 0), "{}", report.table());
    assert!(passed >= 40, "{}", report.table());
    assert_eq!(
        seen,
        2 * report.results.len(),
        "a start and a done per check"
    );
}

#[test]
fn cpu_backend_in_process_passes() {
    assert_passes(Arc::new(CpuBackend::new()));
}

#[test]
fn cpu_backend_through_its_plugin_passes() {
    let path = build_plugins().unwrap().cpu;
    let plugin = load_backend(&path, &BackendConfig::default()).unwrap();
    assert_eq!(plugin.info().name, "cpu");
    assert_eq!(plugin.path(), path);
    assert_passes(plugin);
}

/// The CPU backend with two planted bugs: one NTT output element off by one at 2^4 (forward,
/// natural order only), and G1 MSMs over exactly 33 scalars doubled.
struct Planted(CpuBackend);

impl Ntt for Planted {
    fn ntt(&self, d: &mut [Fr], l: u32, c: &NttConfig) -> Result<()> {
        self.0.ntt(d, l, c)?;
        if l == 4 && *c == NttConfig::forward() {
            let x = blstrs::Scalar::from(d[5]) + blstrs::Scalar::from(1u64);
            d[5] = x.into();
        }
        Ok(())
    }
    fn h_poly(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr], l: u32) -> Result<()> {
        self.0.h_poly(a, b, c, l)
    }
}
impl Msm for Planted {
    fn load_bases_g1(&self, b: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        self.0.load_bases_g1(b)
    }
    fn load_bases_g2(&self, b: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        self.0.load_bases_g2(b)
    }
    fn free_bases(&self, h: BasesHandle) -> Result<()> {
        self.0.free_bases(h)
    }
    fn msm_g1(&self, h: BasesHandle, j: &[MsmJob<'_>], o: &mut [G1Jacobian]) -> Result<()> {
        self.0.msm_g1(h, j, o)?;
        for (job, out) in j.iter().zip(o.iter_mut()) {
            if job.scalars.len() == 33 {
                *out = blstrs::G1Projective::from(*out).double().into();
            }
        }
        Ok(())
    }
    fn msm_g2(&self, h: BasesHandle, j: &[MsmJob<'_>], o: &mut [G2Jacobian]) -> Result<()> {
        self.0.msm_g2(h, j, o)
    }
}
bellows_core::forward_memory!(Planted, 0);

impl Backend for Planted {
    fn info(&self) -> BackendInfo {
        let mut i = self.0.info();
        i.name = "planted".into();
        i
    }
}

/// The CPU backend naming the point after the one it refuses, from encodings; and answering
/// `Unsupported` for G2 encodings (which is allowed).
struct OffByOne(CpuBackend);

bellows_core::forward_ntt!(OffByOne, 0);
bellows_core::forward_memory!(OffByOne, 0);

impl Msm for OffByOne {
    fn load_bases_g1(&self, b: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        self.0.load_bases_g1(b)
    }
    fn load_bases_g2(&self, b: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        self.0.load_bases_g2(b)
    }
    fn load_bases_g1_encoded(&self, p: &dyn EncodedPoints) -> Result<EncodedLoad> {
        Ok(match self.0.load_bases_g1_encoded(p)? {
            EncodedLoad::Refused { index, defect } => EncodedLoad::Refused {
                index: index + 1,
                defect,
            },
            loaded => loaded,
        })
    }
    fn free_bases(&self, h: BasesHandle) -> Result<()> {
        self.0.free_bases(h)
    }
    fn msm_g1(&self, h: BasesHandle, j: &[MsmJob<'_>], o: &mut [G1Jacobian]) -> Result<()> {
        self.0.msm_g1(h, j, o)
    }
    fn msm_g2(&self, h: BasesHandle, j: &[MsmJob<'_>], o: &mut [G2Jacobian]) -> Result<()> {
        self.0.msm_g2(h, j, o)
    }
}

impl Backend for OffByOne {
    fn info(&self) -> BackendInfo {
        self.0.info()
    }
}

#[test]
fn a_refusal_at_the_wrong_point_fails_only_the_refusal_check() {
    let report = quick_against_cpu(Arc::new(OffByOne(CpuBackend::new())), 5);
    let failed: Vec<&str> = report.failures().map(|r| r.name.as_str()).collect();
    assert_eq!(failed, ["encoded bases refused"], "{}", report.table());
    let t = report.table();
    assert!(t.contains("should be refused as NotOnCurve"), "{t}");
}

/// The CPU backend declaring no capability at all: every check is skipped, and a run in which
/// nothing passed must fail.
struct DeclaresNothing(CpuBackend);

bellows_core::forward_ntt!(DeclaresNothing, 0);
/// G1 only: the G2 calls keep the trait's `Unsupported` defaults.
impl Msm for DeclaresNothing {
    fn load_bases_g1(&self, b: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        self.0.load_bases_g1(b)
    }
    fn free_bases(&self, h: BasesHandle) -> Result<()> {
        self.0.free_bases(h)
    }
    fn msm_g1(&self, h: BasesHandle, j: &[MsmJob<'_>], o: &mut [G1Jacobian]) -> Result<()> {
        self.0.msm_g1(h, j, o)
    }
}

impl MemoryPool for DeclaresNothing {}
impl Backend for DeclaresNothing {
    fn info(&self) -> BackendInfo {
        BackendInfo::new("nothing", "0", "declares no capability")
            .with_capabilities(bellows_core::Capabilities::none())
    }
}

#[test]
fn a_run_where_every_check_is_skipped_fails() {
    let report = quick_against_cpu(Arc::new(DeclaresNothing(CpuBackend::new())), 3);
    let (passed, failed, skipped) = report.counts();
    assert_eq!((passed, failed), (0, 0), "{}", report.table());
    assert_eq!(skipped, report.results.len());
    assert!(!report.passed(), "{}", report.table());
    assert!(
        report.table().contains("FAIL: 0 passed"),
        "{}",
        report.table()
    );
}

#[test]
fn planted_bugs_are_found_with_the_first_differing_element() {
    let report = quick_against_cpu(Arc::new(Planted(CpuBackend::new())), 5);
    assert!(!report.passed());
    let failed: Vec<&str> = report.failures().map(|r| r.name.as_str()).collect();
    // The forward NTT bug shows in its row (and in the proof-free rows that use it); the MSM bug
    // in the random sizes (2^5 + 1 = 33) and in the concurrency row, which runs NTTs.
    assert!(
        failed.contains(&"ntt forward natural→natural"),
        "{failed:?}\n{}",
        report.table()
    );
    assert!(failed.contains(&"msm_g1 random"), "{failed:?}");
    assert!(
        !failed.contains(&"ntt inverse natural→natural"),
        "{failed:?}"
    );
    assert!(!failed.contains(&"msm_g2 random"), "{failed:?}");
    let m = mismatch(&report, "ntt forward natural→natural");
    assert_eq!(m.context, "2^4, single vector, vector 0");
    assert_eq!(m.index, 5);
    assert_ne!(m.expected, m.got);
    assert_eq!(mismatch(&report, "msm_g1 random").context, "n=33, job 0");
    let t = report.table();
    assert!(
        t.contains("first difference: 2^4, single vector, vector 0, index 5"),
        "{t}"
    );
    assert!(t.starts_with("conformance of planted"), "{t}");
    let _ = blstrs::G1Projective::generator();
}

#[test]
fn cli_entry_point_exit_codes() {
    let path = build_plugins().unwrap().cpu;
    let opts = SuiteOptions::at(Level::Quick)
        .with_max_log_size(3)
        .with_threads(2);
    assert_eq!(run_cli(path.to_str().unwrap(), &opts, true), 0);
    assert_eq!(run_cli("no-such-backend-anywhere", &opts, true), 1);
    let missing = path.with_file_name("libbellows_backend_missing.so");
    assert_eq!(run_cli(missing.to_str().unwrap(), &opts, false), 1);
}

#[test]
fn a_selection_runs_only_the_named_checks_and_says_so() {
    let reference: Arc<dyn Backend> = Arc::new(CpuBackend::new());
    let candidate: Arc<dyn Backend> = Arc::new(CpuBackend::new());
    let opts = quick().with_only(vec!["host memory".into(), "msm_g1 empty".into()]);
    let report = run_suite(candidate.clone(), reference.clone(), &opts, |_| {});
    let names: Vec<&str> = report.results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["msm_g1 empty", "host memory"]);
    assert!(report.passed());
    let all = run_suite(candidate.clone(), reference.clone(), &quick(), |_| {})
        .results
        .len();
    assert_eq!(report.selected_of, Some(all));
    assert!(report
        .table()
        .contains(&format!("(a partial run: 2 of the suite's {all} checks)")));
    // A selection that matches nothing proves nothing: the run fails.
    let none = run_suite(
        candidate,
        reference,
        &quick().with_only(vec!["no such".into()]),
        |_| {},
    );
    assert!(none.results.is_empty() && !none.passed());
}

//! Nothing a plugin does can take the host down: every broken plugin gives a clear error naming
//! the file and the cause, and the host goes on (the built-in CPU backend still works afterwards,
//! in the same test).

use std::{path::Path, sync::Arc};

use bellows_conformance::plugin_build::build_plugins;
use bellows_core::{
    backend::{G1Handles, G1PhaseInput, MsmJob, NttConfig, ProofAssignment, SharedPoints},
    layout::{fr_slice, G1Jacobian, G2Jacobian},
    plugin::load_backend,
    registry::resolve,
    Backend, BackendConfig, Error,
};
use bellows_cpu as _;
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};

include!("../test-plugins/modes.rs");

/// The built-in CPU backend still computes correctly: an NTT round trip and a small MSM.
fn host_goes_on() {
    let cpu = resolve("cpu", &BackendConfig::default()).expect("built-in cpu");
    let x: Vec<blstrs::Scalar> = (1..=8u64).map(blstrs::Scalar::from).collect();
    let mut d = fr_slice(&x).to_vec();
    cpu.ntt(&mut d, 3, &NttConfig::forward()).unwrap();
    assert_ne!(d, fr_slice(&x));
    cpu.ntt(&mut d, 3, &NttConfig::inverse()).unwrap();
    assert_eq!(d, fr_slice(&x));
    let g = blstrs::G1Projective::generator();
    let pts = Arc::new(vec![g.to_affine(), g.double().to_affine()]);
    let h = cpu.load_bases_g1(pts as SharedPoints<_>).unwrap();
    let mut out = [G1Jacobian::default()];
    cpu.msm_g1(h, &[MsmJob::new(0, &d[..2])], &mut out).unwrap();
    let expect = g * x[0] + g.double() * x[1];
    assert_eq!(blstrs::G1Projective::from(out[0]), expect);
    cpu.free_bases(h).unwrap();
}

fn plugin_error(path: &Path, r: Result<Arc<bellows_core::plugin::PluginBackend>, Error>) -> String {
    match r {
        Err(Error::Plugin { path: p, reason }) => {
            assert_eq!(p, path, "the error names the file");
            let shown = Error::Plugin {
                path: p,
                reason: reason.clone(),
            }
            .to_string();
            assert!(shown.contains(&path.display().to_string()), "{shown}");
            reason
        }
        Err(e) => panic!("{}: expected a plugin error, got {e}", path.display()),
        Ok(_) => panic!("{}: loaded a broken plugin", path.display()),
    }
}

#[test]
fn unloadable_files_are_clear_errors() {
    let plugins = build_plugins().unwrap();
    let cfg = BackendConfig::default();
    // Why loading `path` failed; the host goes on after it.
    let refused = |path: &Path| {
        let reason = plugin_error(path, load_backend(path, &cfg));
        host_goes_on();
        reason
    };

    let missing = plugins
        .examples
        .join("libbellows_backend_does_not_exist.so");
    assert_eq!(refused(&missing), "file not found");
    let reason = refused(&plugins.test_plugin("not_a_plugin"));
    assert!(reason.starts_with("not a Bellows plugin"), "{reason}");
    let future = plugins.test_plugin("future_version");
    let reason = refused(&future);
    assert!(reason.contains("interface version 4.0.0"), "{reason}");
    let ours = format!(
        "interface version {}",
        bellows_core::plugin::INTERFACE_VERSION
    );
    assert!(reason.contains(&ours), "{reason}");
    let reason = refused(&plugins.test_plugin("bad_layout"));
    assert!(reason.contains("interface types differ"), "{reason}");

    // A file that is not a shared library at all.
    let text = plugins.examples.join("libbellows_backend_text_file.so");
    std::fs::write(&text, b"not an ELF file").unwrap();
    let reason = refused(&text);
    assert!(
        reason.starts_with("cannot open the shared library"),
        "{reason}"
    );

    // Loading the same broken file again gives the same error (nothing was cached as loaded).
    let reason2 = plugin_error(&future, load_backend(&future, &cfg));
    assert!(reason2.contains("4.0.0"));
}

fn faulty(
    mode: &str,
) -> (
    std::path::PathBuf,
    Result<Arc<bellows_core::plugin::PluginBackend>, Error>,
) {
    let path = build_plugins().unwrap().test_plugin("faulty");
    let mut cfg = BackendConfig::default();
    cfg.device = MODES
        .iter()
        .position(|m| *m == mode)
        .unwrap_or_else(|| panic!("no mode {mode}"));
    let r = load_backend(&path, &cfg);
    (path, r)
}

/// Runs the call a mode is about on `b` and returns its result.
fn exercise(b: &dyn Backend, call: &str) -> Result<(), Error> {
    let g1 = Arc::new(vec![blstrs::G1Affine::generator(); 4]);
    let g2 = Arc::new(vec![blstrs::G2Affine::generator(); 4]);
    let sc: Vec<blstrs::Scalar> = (0..4u64).map(|i| blstrs::Scalar::from(i + 1)).collect();
    let sc = fr_slice(&sc);
    let mut d = sc.to_vec();
    match call {
        "ntt" => b.ntt(&mut d, 2, &NttConfig::forward()),
        "h_poly" => {
            let (mut x, mut y) = (d.clone(), d.clone());
            b.h_poly(&mut d, &mut x, &mut y, 2)
        }
        "load_bases_g1" => b.load_bases_g1(g1).map(|_| ()),
        "load_bases_g2" => b.load_bases_g2(g2).map(|_| ()),
        "free_bases" => b.free_bases(b.load_bases_g1(g1)?),
        "msm_g1" => {
            let h = b.load_bases_g1(g1)?;
            let r = b.msm_g1(h, &[MsmJob::new(0, sc)], &mut [G1Jacobian::default()]);
            b.free_bases(h)?;
            r
        }
        "msm_g2" => {
            let h = b.load_bases_g2(g2)?;
            let r = b.msm_g2(h, &[MsmJob::new(0, sc)], &mut [G2Jacobian::default()]);
            b.free_bases(h)?;
            r
        }
        "memory_info" => b.memory_info().map(|_| ()),
        "set_memory_budget" => b.set_memory_budget(Some(1 << 30)),
        "trim" => b.trim(),
        "groth16_g1" => {
            let pts = Arc::new(vec![blstrs::G1Affine::generator(); 4]);
            let mut hs = Vec::new();
            for _ in 0..4 {
                hs.push(b.load_bases_g1(pts.clone())?);
            }
            let handles = G1Handles {
                h: hs[0],
                l: hs[1],
                a: hs[2],
                b_g1: hs[3],
            };
            let all = [0b111u64];
            let one = [1u64];
            let proofs = [ProofAssignment {
                inputs: &sc[..1],
                aux: &sc[1..],
                a_aux_density: &all,
                b_input_density: &one,
                b_aux_density: &all,
            }];
            let (mut x, mut y) = (d.clone(), d.clone());
            let r = b.groth16_g1(&mut G1PhaseInput {
                a: &mut d,
                b: &mut x,
                c: &mut y,
                log_n: 2,
                proofs: &proofs,
                handles,
            });
            for h in hs {
                b.free_bases(h)?;
            }
            r.map(|v| assert_eq!(v.len(), 1))
        }
        other => panic!("no call {other}"),
    }
}

#[test]
fn panicking_plugin_calls_are_errors() {
    for mode in MODES.iter().filter(|m| m.starts_with("panic:")) {
        let call = &mode["panic:".len()..];
        let (path, r) = faulty(mode);
        let expected = format!("panicked in {call}: faulty plugin: deliberate panic in {call}");
        match call {
            "create" | "info" => {
                assert_eq!(plugin_error(&path, r), expected);
            }
            "drop" => {
                let b = r.unwrap();
                exercise(&*b, "msm_g1").unwrap();
                drop(b); // the panic in the destructor is contained
            }
            _ => {
                let b = r.unwrap();
                match exercise(&*b, call) {
                    Err(Error::Plugin { path: p, reason }) => {
                        assert_eq!(p, path);
                        assert_eq!(reason, expected);
                    }
                    other => panic!("{mode}: expected a plugin error, got {other:?}"),
                }
                // The same plugin object still answers its other calls.
                let other = if call == "ntt" { "trim" } else { "ntt" };
                exercise(&*b, other).unwrap();
            }
        }
        host_goes_on();
    }
}

#[test]
fn plugin_errors_keep_their_kind_and_name_the_file() {
    let (path, r) = faulty("error:create");
    let file = path.display().to_string();
    // `Error::Backend` keeps its kind across the boundary (interface 2.0).
    match r {
        Err(Error::Backend { name, reason }) => {
            assert_eq!(name, format!("faulty (plugin {file})"));
            assert_eq!(reason, "deliberate error in create");
        }
        other => panic!("{other:?}"),
    }
    // Each call's error as it comes back, the plugin's file named in it.
    let plugin = |what: &str| format!("{what} (plugin {file})");
    let reason = |r: &str| r.to_string();
    for (call, want) in [
        (
            "groth16_g1",
            Error::Backend {
                name: plugin("faulty"),
                reason: reason("deliberate error in groth16_g1"),
            },
        ),
        (
            "ntt",
            Error::Device {
                device: plugin("faulty0"),
                reason: reason("deliberate device error"),
            },
        ),
        (
            "h_poly",
            Error::InvalidInput(plugin("deliberate invalid input")),
        ),
    ] {
        let (_, r) = faulty(&format!("error:{call}"));
        let got = exercise(&*r.unwrap(), call).unwrap_err();
        assert_eq!(format!("{got:?}"), format!("{want:?}"), "{call}");
    }
}

#[test]
fn malformed_plugin_answers_are_errors() {
    for (mode, call, want) in [
        (
            "wrong-length:msm_g1",
            "msm_g1",
            "msm_g1 returned 2 results for 1 jobs",
        ),
        (
            "wrong-length:msm_g2",
            "msm_g2",
            "msm_g2 returned 0 results for 1 jobs",
        ),
        (
            "wrong-length:load_bases_g1",
            "load_bases_g1",
            "(wrong group or length)",
        ),
        (
            "wrong-length:groth16_g1",
            "groth16_g1",
            "groth16_g1 returned 5 results for 4 (4 per proof)",
        ),
    ] {
        let (path, r) = faulty(mode);
        match exercise(&*r.unwrap(), call) {
            Err(Error::Plugin { path: p, reason }) => {
                assert_eq!(p, path);
                assert!(reason.contains(want), "{mode}: {reason}");
            }
            other => panic!("{mode}: {other:?}"),
        }
        host_goes_on();
    }
}

#[test]
fn a_correct_plugin_loads_next_to_faulty_ones() {
    let (_, r) = faulty("ok");
    let ok = r.unwrap();
    assert_eq!(ok.info().name, "faulty");
    assert_eq!(ok.info().description, "ok");
    for call in [
        "ntt",
        "h_poly",
        "msm_g1",
        "msm_g2",
        "free_bases",
        "memory_info",
        "set_memory_budget",
        "trim",
    ] {
        exercise(&*ok, call).unwrap_or_else(|e| panic!("{call}: {e}"));
    }
    // The mode list the test uses is the plugin's: each loadable mode reports itself.
    for (i, mode) in MODES.iter().enumerate() {
        if mode.ends_with(":create") || mode.ends_with(":info") {
            continue;
        }
        let (_, r) = faulty(mode);
        assert_eq!(r.unwrap().info().description, *mode, "mode index {i}");
    }
    let _ = blstrs::Scalar::ONE;
}

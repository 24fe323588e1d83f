//! Keys loaded from a file through a backend that decodes the encoded points itself
//! (`load_bases_gN_encoded`): asked for under the curve-only check alone, a backend without it
//! falls back to the host's decoding, and a bad point is named in the file exactly as the
//! host's decoding names it.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

use bellows_core::{
    backend::MsmJob,
    circuits::{CircuitOptions, CircuitSpec},
    groth16::{
        io::{write_parameters_file, ParamsFile, ParamsShape, PointCheck, VK_FIXED_BYTES},
        prover::G2Policy,
        setup::generate_random_parameters,
        Parameters, ProvingKey,
    },
    layout::{fr_slice, G1Jacobian, G2Jacobian},
    rng::ProofRng,
    Backend, BackendInfo, Error, Result,
};
use ff::Field;

/// The CPU backend, counting the encoded loads it is asked for; with `refuse`, it answers them
/// `Unsupported` (as a backend built before they existed does).
struct Watched {
    inner: bellows_cpu::CpuBackend,
    encoded: AtomicUsize,
    refuse: bool,
}

fn watch(s: &Watched, op: &str) -> Result<()> {
    if op.ends_with("_encoded") {
        s.encoded.fetch_add(1, Ordering::SeqCst);
        if s.refuse {
            return Err(Error::unsupported("watched", op));
        }
    }
    Ok(())
}

bellows_core::forward_primitives!(Watched, inner, watch);

impl Backend for Watched {
    fn info(&self) -> BackendInfo {
        self.inner.info()
    }
}

fn watched(refuse: bool) -> Arc<Watched> {
    Arc::new(Watched {
        inner: bellows_cpu::CpuBackend::new(),
        encoded: AtomicUsize::new(0),
        refuse,
    })
}

fn params() -> Parameters {
    let spec = CircuitSpec::new("synthetic", &CircuitOptions::with_log_size(6)).unwrap();
    generate_random_parameters(spec.blank(), &mut ProofRng::seeded(21)).unwrap()
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("bellows-encoded-{name}-{}", std::process::id()))
}

fn load(path: &std::path::Path, check: PointCheck, backend: Arc<Watched>) -> Result<ProvingKey> {
    let file = ParamsFile::open(path)?;
    ProvingKey::load_file(&file, check, backend, G2Policy::Device, &|_| {})
}

/// MSMs over every query of `k` with fixed scalars: what a proof reads of the key.
fn sums(k: &ProvingKey) -> (Vec<G1Jacobian>, G2Jacobian) {
    let b = k.backend();
    let sc: Vec<blstrs::Scalar> = (1..=4096u64)
        .map(|i| blstrs::Scalar::from(i).square())
        .collect();
    let h = k.handles();
    let g1 = [h.h, h.l, h.a, h.b_g1]
        .into_iter()
        .map(|handle| {
            let n = handle.len as usize;
            let mut out = [G1Jacobian::default()];
            b.msm_g1(handle, &[MsmJob::new(0, fr_slice(&sc[..n]))], &mut out)
                .unwrap();
            out[0]
        })
        .collect();
    let g2 = k.b_g2_handle().expect("b_g2 on the backend");
    let mut out = [G2Jacobian::default()];
    b.msm_g2(
        g2,
        &[MsmJob::new(0, fr_slice(&sc[..g2.len as usize]))],
        &mut out,
    )
    .unwrap();
    (g1, out[0])
}

#[test]
fn only_curve_only_loads_hand_the_bytes_over_and_they_give_the_same_key() {
    let p = params();
    let path = temp("same");
    write_parameters_file(&p, &path).unwrap();
    let direct = ProvingKey::with_g2_policy(
        Arc::new(p.clone()),
        Arc::new(bellows_cpu::CpuBackend::new()),
        G2Policy::Device,
    )
    .unwrap();
    let want = sums(&direct);

    // Curve-only: the four G1 queries and b_g2, each read by the backend.
    let b = watched(false);
    let k = load(&path, PointCheck::CurveOnly, b.clone()).unwrap();
    assert_eq!(b.encoded.load(Ordering::SeqCst), 5);
    assert_eq!(sums(&k), want);
    assert_eq!(k.lens(), direct.lens());

    // The subgroup checks decode on the host.
    for check in [PointCheck::Full, PointCheck::Batched] {
        let b = watched(false);
        let k = load(&path, check, b.clone()).unwrap();
        assert_eq!(b.encoded.load(Ordering::SeqCst), 0, "{check:?}");
        assert_eq!(sums(&k), want);
    }

    // A backend without the encoded loads: asked, refuses, and the host decodes instead.
    let b = watched(true);
    let k = load(&path, PointCheck::CurveOnly, b.clone()).unwrap();
    assert_eq!(b.encoded.load(Ordering::SeqCst), 5);
    assert_eq!(sums(&k), want);
    let _ = std::fs::remove_file(&path);
}

/// Byte offsets of sections h and l in a parameters file of `shape` (bellperson's layout: the
/// verifying key's fixed points, IC, then each query after its u32 length).
fn offsets(shape: &ParamsShape) -> (usize, usize) {
    let h = VK_FIXED_BYTES + 4 + shape.num_inputs * 96 + 4;
    let l = h + (shape.domain_size - 1) * 96 + 4;
    (h, l)
}

#[test]
fn a_point_the_backend_refuses_is_named_as_the_hosts_decoding_names_it() {
    let p = params();
    let path = temp("bad");
    write_parameters_file(&p, &path).unwrap();
    let good = std::fs::read(&path).unwrap();
    let shape = ParamsFile::open(&path).unwrap().shape();
    let (_, l) = offsets(&shape);
    // The last point of l: off the curve (the last byte of y changed), then the identity.
    let point = shape.num_aux - 1;
    let at = l + point * 96;
    for (identity, reason) in [(false, "not on the curve"), (true, "point at infinity")] {
        let mut bad = good.clone();
        if identity {
            bad[at..at + 96].fill(0);
            bad[at] = 0x40;
        } else {
            bad[at + 95] ^= 1;
        }
        std::fs::write(&path, &bad).unwrap();
        let on_backend = load(&path, PointCheck::CurveOnly, watched(false))
            .unwrap_err()
            .to_string();
        let on_host = load(&path, PointCheck::CurveOnly, watched(true))
            .unwrap_err()
            .to_string();
        assert_eq!(on_backend, on_host);
        assert!(
            on_backend.contains(&format!("section l, point {point} (byte offset {at})"))
                && on_backend.contains(reason),
            "{on_backend}"
        );
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_sections_first_point_is_checked_on_the_host_before_the_backend_reads() {
    let p = params();
    let path = temp("zeros");
    write_parameters_file(&p, &path).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let (h, _) = offsets(&ParamsFile::open(&path).unwrap().shape());
    // A run of zeros where h begins, as in a sparse file.
    bytes[h..h + 96].fill(0);
    std::fs::write(&path, &bytes).unwrap();
    let b = watched(false);
    let e = load(&path, PointCheck::CurveOnly, b.clone()).unwrap_err();
    assert!(e.to_string().contains("section h, point 0"), "{e}");
    assert_eq!(b.encoded.load(Ordering::SeqCst), 0);
    let _ = std::fs::remove_file(&path);
}

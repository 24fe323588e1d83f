//! Issue 9 in the core: degenerate verifying keys and the forged proof they admit, sizes checked
//! before allocation, bounded reads of streams, and the messages of the readers.

use std::path::PathBuf;

use bellows_core::groth16::{
    io::{self, ParamsFile, PointCheck},
    setup::{generate_parameters, ToxicWaste},
    verifier::{prepare_verifying_key, try_prepare_verifying_key, verify_proof},
    Parameters, Proof, VerifyingKey,
};
use bellows_core::Error;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{G1Affine, G2Affine, Scalar};
use group::prime::PrimeCurveAffine;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// y = x³ with y public.
struct Cube;

impl Circuit<Scalar> for Cube {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
        let x2 = cs.alloc(|| "x2", || Ok(Scalar::from(9u64)))?;
        let y = cs.alloc_input(|| "y", || Ok(Scalar::from(27u64)))?;
        cs.enforce(|| "x2", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
        cs.enforce(|| "y", |lc| lc + x2, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

fn params() -> Parameters {
    let waste = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(9));
    generate_parameters(Cube, &waste).unwrap()
}

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!("bellows-hardening-{name}-{}", std::process::id()));
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The forgery of the issue: with γ = identity, A = α, B = β, C = 0 satisfies the verification
/// equation for every public input. The verifier must refuse the key instead.
#[test]
fn identity_gamma_key_and_its_forged_proof_are_refused() {
    let mut vk = params().vk;
    vk.gamma_g2 = G2Affine::identity();
    let forged = Proof {
        a: vk.alpha_g1,
        b: vk.beta_g2,
        c: G1Affine::identity(),
    };
    let pvk = prepare_verifying_key(&vk);
    for x in [0u64, 1, 12345] {
        let e = verify_proof(&pvk, &forged, &[Scalar::from(x)]).unwrap_err();
        assert!(e.to_string().contains("degenerate verifying key"), "{e}");
        assert!(e.to_string().contains("gamma_g2"), "{e}");
    }
    assert!(try_prepare_verifying_key(&vk).is_err());
    // The same key from a file is refused when read.
    let mut bytes = Vec::new();
    io::write_verifying_key(&vk, &mut bytes).unwrap();
    let e = io::verifying_key_from_bytes(&bytes, PointCheck::Full).unwrap_err();
    assert!(matches!(e, Error::InvalidPoint { .. }), "{e}");
    let message = e.to_string();
    let named = message.contains("gamma_g2") && message.contains("point at infinity");
    assert!(named, "{e}");
}

#[test]
fn every_degenerate_key_is_named() {
    let good = params().vk;
    assert!(good.check_sound().is_ok());
    assert!(try_prepare_verifying_key(&good).is_ok());
    type Edit = fn(&mut VerifyingKey);
    let cases: [(&str, Edit); 10] = [
        ("alpha_g1", |k| k.alpha_g1 = G1Affine::identity()),
        ("beta_g1", |k| k.beta_g1 = G1Affine::identity()),
        ("beta_g2", |k| k.beta_g2 = G2Affine::identity()),
        ("delta_g1", |k| k.delta_g1 = G1Affine::identity()),
        ("delta_g2", |k| k.delta_g2 = G2Affine::identity()),
        ("gamma_g2", |k| k.gamma_g2 = k.delta_g2),
        ("gamma_g2", |k| k.gamma_g2 = -k.delta_g2),
        ("gamma_g2", |k| k.gamma_g2 = k.beta_g2),
        ("ic point 1", |k| k.ic[1] = G1Affine::identity()),
        ("ic point 0", |k| k.ic[0] = G1Affine::identity()),
    ];
    for (name, edit) in cases {
        let mut vk = good.clone();
        edit(&mut vk);
        let e = vk.check_sound().unwrap_err().to_string();
        assert!(e.contains(name) && e.contains("degenerate"), "{name}: {e}");
        let pvk = prepare_verifying_key(&vk);
        let p = Proof {
            a: vk.alpha_g1,
            b: vk.beta_g2,
            c: G1Affine::identity(),
        };
        assert!(
            verify_proof(&pvk, &p, &[Scalar::from(27u64)]).is_err(),
            "{name}"
        );
    }
}

/// γ = δ: a valid proof moves to any other input by shifting C (the input term and C's term
/// merge). Refused.
#[test]
fn gamma_equal_delta_would_let_proofs_move_between_inputs() {
    let mut vk = params().vk;
    vk.gamma_g2 = vk.delta_g2;
    let e = try_prepare_verifying_key(&vk).unwrap_err().to_string();
    assert!(e.contains("equal to ±delta_g2"), "{e}");
}

/// A sparse file whose h section announces 2^28 − 1 points (24 GiB): its shape is known without
/// decoding, and decoding fails cleanly (the memory estimate or the first point) instead of
/// allocating.
#[test]
fn huge_sections_are_known_from_their_length_and_never_allocated_blindly() {
    let vk = params().vk;
    let mut head = Vec::new();
    io::write_verifying_key(&vk, &mut head).unwrap();
    let h: u32 = (1 << 28) - 1;
    head.extend_from_slice(&h.to_be_bytes());
    let path = temp("sparse", &head);
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(head.len() as u64 + u64::from(h) * 96 + 16)
        .unwrap();
    drop(f);
    let file = ParamsFile::open(&path).unwrap();
    let shape = file.shape();
    assert_eq!(shape.domain_size, 1 << 28);
    assert_eq!(shape.num_inputs, 2);
    assert!(shape.decoded_bytes > 24 << 30);
    let e = file.decode(PointCheck::Full).unwrap_err().to_string();
    assert!(
        e.contains("needs about") || e.contains("section h, point 0"),
        "{e}"
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_verifying_key_given_as_parameters_is_named() {
    let mut vk = Vec::new();
    io::write_verifying_key(&params().vk, &mut vk).unwrap();
    let e = io::parameters_from_bytes(&vk, PointCheck::Full)
        .unwrap_err()
        .to_string();
    assert!(e.contains("this is a verifying key file"), "{e}");
}

#[cfg(unix)]
#[test]
fn streams_are_read_with_bounds_and_folders_named() {
    let e = io::read_proofs("/dev/zero").unwrap_err().to_string();
    assert!(e.contains("proof 0"), "{e}");
    let e = io::read_bounded("/dev/zero", "test stream", 1000)
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than the 1000 bytes allowed"), "{e}");
    let e = io::read_verifying_key("/dev/zero", PointCheck::Full)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no IC points"), "{e}");
    let dir = std::env::temp_dir();
    for e in [
        io::read_parameters(&dir, PointCheck::Full).unwrap_err(),
        io::read_verifying_key_or_params(&dir, PointCheck::Full).unwrap_err(),
        io::read_proofs(&dir).unwrap_err(),
    ] {
        assert!(e.to_string().contains("is a folder, not a file"), "{e}");
    }
    let e = io::read_parameters("/dev/zero", PointCheck::Full)
        .unwrap_err()
        .to_string();
    assert!(e.contains("character device, not a regular file"), "{e}");
}

#[test]
fn a_byte_order_mark_before_the_inputs_is_accepted() {
    let with = io::parse_public_inputs_json("\u{feff}[\"5\"]").unwrap();
    assert_eq!(with, vec![Scalar::from(5u64)]);
    let path = temp("bom.json", "\u{feff}[\"7\"]".as_bytes());
    assert_eq!(
        io::read_public_inputs_json(&path).unwrap(),
        vec![Scalar::from(7u64)]
    );
    let _ = std::fs::remove_file(&path);
}

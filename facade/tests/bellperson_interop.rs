//! In-memory conversions to and from bellperson 0.27 (feature `bellperson`, enabled for the
//! tests through the dev-dependency on bellows-core): parameters made by bellperson prove
//! through Bellows byte-identically to bellperson's `create_proof`, and keys and proofs cross
//! both ways and verify on either side.

#![cfg(feature = "cpu")]

use std::sync::Arc;

use bellows::prelude::*;
use bellperson::groth16 as bp;
use rand_chacha::rand_core::SeedableRng;

/// x³ + x + 5 = y, y public.
#[derive(Clone)]
struct Cubic {
    x: Option<Scalar>,
}

impl Circuit<Scalar> for Cubic {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let missing = || SynthesisError::AssignmentMissing;
        let x = cs.alloc(|| "x", || self.x.ok_or_else(missing))?;
        let x2v = self.x.map(|x| x * x);
        let x2 = cs.alloc(|| "x2", || x2v.ok_or_else(missing))?;
        let yv = self.x.map(|x| x * x * x + x + Scalar::from(5u64));
        let y = cs.alloc_input(|| "y", || yv.ok_or_else(missing))?;
        cs.enforce(|| "x2", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
        cs.enforce(
            || "y",
            |lc| lc + x2 + CS::one(),
            |lc| lc + x,
            |lc| lc + y - (Scalar::from(5u64), CS::one()),
        );
        Ok(())
    }
}

fn bytes(p: &bp::Proof<Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    p.write(&mut v).unwrap();
    v
}

#[test]
fn bellperson_parameters_keys_and_proofs_convert_both_ways() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let theirs =
        bp::generate_random_parameters::<Bls12, _, _>(Cubic { x: None }, &mut rng).unwrap();

    // Parameters: no query is copied (the Arcs are shared), and the way back is lossless.
    let ours: Parameters = (&theirs).into();
    assert!(Arc::ptr_eq(&ours.h, &theirs.h) && Arc::ptr_eq(&ours.b_g2, &theirs.b_g2));
    let back: bp::Parameters<Bls12> = (&ours).into();
    assert!(back == theirs);
    let vk_back: bp::VerifyingKey<Bls12> = ours.vk.clone().into();
    assert!(vk_back == theirs.vk);
    assert_eq!(VerifyingKey::from(&theirs.vk), ours.vk);

    let key = ProvingKey::from_parameters(theirs.clone().into(), bellows::backend("cpu").unwrap())
        .unwrap();
    let circuit = Cubic {
        x: Some(Scalar::from(3u64)),
    };
    let inputs = [Scalar::from(35u64)];
    let (r, s) = (Scalar::from(17u64), Scalar::from(19u64));
    let our_proof = prove_one_with_randomness(&key, circuit.clone(), r, s).unwrap();
    let their_proof = bp::create_proof(circuit, &theirs, r, s).unwrap();
    // Byte-identical for the same r and s, and equal after conversion either way.
    assert_eq!(our_proof.to_bytes().to_vec(), bytes(&their_proof));
    assert_eq!(Proof::from(&their_proof), our_proof);
    let as_theirs: bp::Proof<Bls12> = our_proof.into();
    assert_eq!(bytes(&as_theirs), bytes(&their_proof));

    // Each side verifies the other's proof through converted keys.
    let their_pvk = bp::prepare_verifying_key(&(&key.params().vk).into());
    assert!(bp::verify_proof(&their_pvk, &as_theirs, &inputs).unwrap());
    let our_pvk = prepare_verifying_key(&VerifyingKey::from(theirs.vk.clone()));
    assert!(verify_proof(&our_pvk, &Proof::from(their_proof), &inputs).unwrap());
    assert!(!verify_proof(&our_pvk, &our_proof, &[Scalar::from(36u64)]).unwrap());
}

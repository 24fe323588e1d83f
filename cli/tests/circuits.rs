//! The built-in circuits against independent references (the `sha2` crate).

use bellows_core::circuits::{CircuitOptions, CircuitSpec, Sha256Circuit};
use bellows_core::groth16::synthesis::synthesize;
use sha2::{Digest, Sha256};

#[test]
fn sha256_public_inputs_are_sha2_digests() {
    // Lengths around the one/two-block boundary (55/56 bytes) and a three-block preimage.
    for (len, seed) in [0usize, 1, 32, 55, 56, 64, 130].into_iter().zip(1u64..) {
        let circuit = Sha256Circuit::new(len).unwrap().with_witness(seed);
        let preimage = circuit.preimage().unwrap().to_vec();
        assert_eq!(preimage.len(), len);
        let digest: [u8; 32] = Sha256::digest(&preimage).into();
        let expected = Sha256Circuit::public_inputs_for_digest(&digest);
        let s = synthesize(circuit).unwrap();
        assert_eq!(s.public_inputs(), &expected[..], "len={len}");
        let mut opts = CircuitOptions::default();
        opts.bytes = Some(len);
        let spec = CircuitSpec::new("sha256", &opts).unwrap();
        let (_, inputs) = spec.instance(seed).unwrap();
        assert_eq!(inputs, expected, "len={len}");
    }
}

#[test]
fn sha256_of_a_chosen_preimage() {
    let msg = b"bellows".to_vec();
    let digest: [u8; 32] = Sha256::digest(&msg).into();
    let s = synthesize(Sha256Circuit::with_preimage(msg).unwrap()).unwrap();
    assert_eq!(
        s.public_inputs(),
        Sha256Circuit::public_inputs_for_digest(&digest)
    );
}

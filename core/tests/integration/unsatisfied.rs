//! Unsatisfied circuits are errors naming the failing constraint: by index in the fast pass, by
//! namespace path and annotation in the named pass, exactly as bellpepper's
//! `TestConstraintSystem::which_is_unsatisfied` names it.

use crate::common;

use bellows_core::{
    circuits::sha256::Sha256Circuit,
    groth16::synthesis::{
        find_unsatisfied, synthesize, synthesize_batch, synthesize_batch_named, synthesize_named,
        UnsatisfiedConstraint,
    },
    Error,
};
use bellpepper_core::{test_cs::TestConstraintSystem, Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use common::ChainCircuit;

/// Three rounds of y = x·x in nested namespaces ("rounds/round i/square"), a popped namespace
/// before them, and one chosen round whose witness is wrong.
#[derive(Clone)]
struct Nested {
    x: u64,
    bad_round: Option<usize>,
}

impl Circuit<Scalar> for Nested {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut xv = Scalar::from(self.x);
        let mut x = cs.alloc(|| "x", || Ok(xv))?;
        {
            // A namespace that is closed again before the failure: not part of the path.
            let mut setup = cs.namespace(|| "setup");
            let one = setup.alloc(|| "one", || Ok(Scalar::from(1u64)))?;
            setup.enforce(
                || "one is one",
                |lc| lc + one,
                |lc| lc + CS::one(),
                |lc| lc + CS::one(),
            );
        }
        let mut rounds = cs.namespace(|| "rounds");
        for i in 0..3 {
            let mut round = rounds.namespace(|| format!("round {i}"));
            let mut yv = xv * xv;
            if self.bad_round == Some(i) {
                yv += Scalar::from(1u64);
            }
            let y = round.alloc(|| "y", || Ok(yv))?;
            round.enforce(|| "square", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            x = y;
            xv = yv;
        }
        let out = rounds.alloc_input(|| "out", || Ok(xv))?;
        rounds.enforce(|| "output", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

/// What bellpepper's own test constraint system calls the first unsatisfied constraint.
fn bellpepper_says<C: Circuit<Scalar>>(c: C) -> Option<String> {
    let mut cs = TestConstraintSystem::<Scalar>::new();
    c.synthesize(&mut cs).unwrap();
    cs.which_is_unsatisfied().map(str::to_string)
}

#[test]
fn the_named_pass_gives_bellpeppers_path_and_the_index() {
    for bad_round in 0..3 {
        let c = Nested {
            x: 3,
            bad_round: Some(bad_round),
        };
        let found = find_unsatisfied(c.clone())
            .unwrap()
            .expect("a wrong witness");
        // Constraint 0 is "setup/one is one"; round i is constraint 1 + i.
        assert_eq!(
            found,
            UnsatisfiedConstraint {
                index: 1 + bad_round,
                path: format!("rounds/round {bad_round}/square"),
            }
        );
        assert_eq!(Some(found.path.clone()), bellpepper_says(c.clone()));

        let err = synthesize_named(c.clone()).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::Unsatisfied(_)), "{msg}");
        assert!(
            msg.contains(&format!(
                "constraint {} of 7, \"rounds/round {bad_round}/square\"",
                1 + bad_round
            )),
            "{msg}"
        );

        // The fast pass reports the same constraint by index, and says how to name it.
        let msg = synthesize(c).unwrap_err().to_string();
        assert!(
            msg.contains(&format!("constraint {} of 7 does not hold", 1 + bad_round)),
            "{msg}"
        );
        assert!(msg.contains("find_unsatisfied"), "{msg}");
    }
}

#[test]
fn satisfied_circuits_are_the_same_in_both_passes() {
    let c = Nested {
        x: 5,
        bad_round: None,
    };
    assert_eq!(find_unsatisfied(c.clone()).unwrap(), None);
    assert_eq!(bellpepper_says(c.clone()), None);
    let (fast, named) = (synthesize(c.clone()).unwrap(), synthesize_named(c).unwrap());
    common::assert_identical(&fast, &named, "fast and named passes");
}

#[test]
fn a_gadget_circuit_is_named_as_bellpepper_names_it() {
    // SHA-256 with a wrong claimed digest: thousands of constraints in deep gadget namespaces
    // hold, the packing of the first digest input does not.
    let c = Sha256Circuit::new(3)
        .unwrap()
        .with_witness(1)
        .with_claimed_digest([7u8; 32]);
    let theirs = bellpepper_says(c.clone()).expect("a wrong claim");
    let ours = find_unsatisfied(c).unwrap().expect("a wrong claim");
    assert_eq!(ours.path, theirs);
    assert_eq!(ours.path, "pack 0");
}

#[test]
fn batches_say_which_circuit_failed() {
    let good = || Nested {
        x: 2,
        bad_round: None,
    };
    let bad = Nested {
        x: 2,
        bad_round: Some(2),
    };
    let msg = synthesize_batch_named(vec![good(), bad.clone(), good()])
        .unwrap_err()
        .to_string();
    assert!(msg.contains("circuit 1 of the batch"), "{msg}");
    assert!(msg.contains("\"rounds/round 2/square\""), "{msg}");
    let msg = synthesize_batch(vec![good(), good(), bad])
        .unwrap_err()
        .to_string();
    assert!(msg.contains("circuit 2 of the batch"), "{msg}");
    assert_eq!(
        synthesize_batch_named(vec![good(), good()]).unwrap().len(),
        2
    );
}

#[test]
fn other_synthesis_errors_pass_through_the_named_pass() {
    match find_unsatisfied(ChainCircuit::blank(3)) {
        Err(Error::Synthesis(msg)) => assert!(msg.contains("assignment is missing"), "{msg}"),
        other => panic!("expected a synthesis error, got {other:?}"),
    }
    let mut c = ChainCircuit::new(5, 10);
    c.corrupt = true;
    let found = find_unsatisfied(c).unwrap().expect("corrupted witness");
    // The chain corrupts round rounds/2 = 5's "add5" constraint (2 per round: square, add).
    assert_eq!(found.path, "add5");
    assert_eq!(found.index, 11);
}

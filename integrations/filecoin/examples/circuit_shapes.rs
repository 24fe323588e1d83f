//! The shapes (constraints, domain, inputs, private variables) of Filecoin's circuits, counted by
//! synthesising each blank circuit once in a constraint system that only counts.
//!
//! ```text
//! cargo run --release -p bellows-filecoin --example circuit_shapes -- [2KiB] [8MiB] [512MiB] [32GiB]
//! ```

use bellows_core::groth16::keypair::CircuitShape;
use bellows_filecoin::filecoin_proofs::constants::{
    SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape8MiB,
};
use bellows_filecoin::filecoin_proofs::types::MerkleTreeTrait;
use bellows_filecoin::filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof};
use bellpepper_core::Circuit;
use blstrs::Scalar;

fn show<C: Circuit<Scalar>>(name: &str, c: C) {
    let t = std::time::Instant::now();
    let s = CircuitShape::of(c).expect("blank circuit");
    let (n, log) = s.domain().unwrap();
    println!(
        "{name:<40} constraints {:>11}  domain 2^{log} ({n})  inputs {:>4}  aux {:>11}  a {:>11}  b {:>11}  ({:.1} s)",
        s.num_constraints,
        s.num_inputs,
        s.num_aux,
        s.a_query_len(),
        s.b_query_len(),
        t.elapsed().as_secs_f64()
    );
}

fn sector<Tree: 'static + MerkleTreeTrait>(
    porep: RegisteredSealProof,
    winning: RegisteredPoStProof,
    window: RegisteredPoStProof,
) {
    use bellows_filecoin::{porep as p, post};
    show(
        &format!("{porep:?} (one partition)"),
        p::blank_circuit::<Tree>(porep).unwrap(),
    );
    show(
        &format!("{winning:?}"),
        post::blank_circuit::<Tree>(winning).unwrap(),
    );
    show(
        &format!("{window:?}"),
        post::blank_circuit::<Tree>(window).unwrap(),
    );
}

fn main() {
    use RegisteredPoStProof as P;
    use RegisteredSealProof as S;
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "2KiB" => sector::<SectorShape2KiB>(
                S::StackedDrg2KiBV1_1,
                P::StackedDrgWinning2KiBV1,
                P::StackedDrgWindow2KiBV1_2,
            ),
            "8MiB" => sector::<SectorShape8MiB>(
                S::StackedDrg8MiBV1_1,
                P::StackedDrgWinning8MiBV1,
                P::StackedDrgWindow8MiBV1_2,
            ),
            "512MiB" => sector::<SectorShape512MiB>(
                S::StackedDrg512MiBV1_1,
                P::StackedDrgWinning512MiBV1,
                P::StackedDrgWindow512MiBV1_2,
            ),
            "32GiB" => sector::<SectorShape32GiB>(
                S::StackedDrg32GiBV1_1,
                P::StackedDrgWinning32GiBV1,
                P::StackedDrgWindow32GiBV1_2,
            ),
            other => panic!("unknown sector size {other}"),
        }
    }
}

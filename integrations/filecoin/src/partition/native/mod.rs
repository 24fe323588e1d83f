//! One challenge's witness, computed natively: the values storage-proofs-porep's challenge
//! sub-circuit allocates (`stacked::circuit::params::Proof::synthesize`, 19.1.0), in its order,
//! without running its gadgets.
//!
//! The sub-circuit, in allocation order (each step names the module that mirrors its gadget):
//! 1. the data leaf, and its inclusion in comm_d's binary SHA-256 tree ([`merkle`], the node
//!    hashes SHA-256 of the children's bits: [`bits`] and core's `sha256_gadget`);
//! 2. for each base (DRG) parent, then each expander parent: its column's rows, the column's
//!    Poseidon hash (`hash_single_column`: [`poseidon`], arity 2 or 11), and its inclusion in
//!    comm_c ([`merkle`], Poseidon nodes);
//! 3. the challenge's 64 bits (`UInt64::alloc`) and its public input (`pack_into_input`);
//! 4. per layer: the 255 bits of each parent's label in that layer (base parents, then for
//!    layers above the first the expander parents' labels one layer down), and the label
//!    (`create_label_circuit`: SHA-256 of the replica id, layer, node and the parents repeated
//!    to 37, the digest's first 254 bits packed);
//! 5. the encoding (`encode`: the last label plus the data leaf) and its inclusion in
//!    comm_r_last;
//! 6. the hash of the challenged node's column of labels and its inclusion in comm_c.
//!
//! Every root computed is compared with the commitment the circuit compares it with, each label
//! with the challenged column's row and the encoding with the replica's leaf: a value that
//! would not satisfy the circuit is an error here (the partition then falls back to the
//! library's circuit), not a witness the proof's checks would refuse later.

mod bits;
mod merkle;
pub(crate) mod poseidon;
mod vanilla;

use bellows_core::circuits::sha256_gadget::Word;
use blstrs::Scalar as Fr;

pub(crate) use bits::Out;
use merkle::{inclusion, NodeHash};
pub(crate) use vanilla::{arities, Challenge};

/// Parents a label hashes (`TOTAL_PARENTS`), repeats included.
const LABEL_PARENTS: usize = 37;

/// The prefix's values a challenge reads.
pub(crate) struct Prefix {
    pub replica_id: Fr,
    pub comm_d: Fr,
    pub comm_c: Fr,
    pub comm_r_last: Fr,
}

/// The sector shape: the arities of trees C and R (base, sub, top) and the number of layers.
#[derive(Clone, Copy)]
pub(crate) struct Shape {
    pub arities: [usize; 3],
    pub layers: usize,
}

/// The arities of the data tree (binary, one level per leaf bit).
const DATA_TREE: [usize; 3] = [2, 0, 0];

/// Pushes onto `out` the values challenge `c`'s sub-circuit allocates (see the module
/// documentation).
pub(crate) fn challenge(
    out: &mut Out,
    shape: Shape,
    prefix: &Prefix,
    c: &Challenge,
) -> Result<(), String> {
    let layers = shape.layers;
    // `hash_single_column` has arities 2 and 11 only.
    let column_hash = match layers {
        2 | 11 => poseidon::for_arity(layers),
        _ => None,
    }
    .ok_or_else(|| format!("no column hash for {layers} layers"))?;
    let expect = |got: Fr, want: Fr, what: &str| {
        if got == want {
            Ok(())
        } else {
            Err(format!(
                "the native {what} is not the one the circuit checks"
            ))
        }
    };

    out.num(c.data_leaf);
    let root = inclusion(
        out,
        c.data_leaf,
        &c.comm_d_path,
        DATA_TREE,
        NodeHash::Sha256,
    )?;
    expect(root, prefix.comm_d, "comm_d root")?;

    for col in c.drg_parents.iter().chain(&c.exp_parents) {
        if col.rows.len() != layers {
            return Err("a parent's column of another height".into());
        }
        for &r in &col.rows {
            out.num(r);
        }
        let h = column_hash.hash(&mut out.aux, &col.rows);
        let root = inclusion(out, h, &col.path, shape.arities, NodeHash::Poseidon)?;
        expect(root, prefix.comm_c, "parent column's comm_c root")?;
    }

    for i in 0..64 {
        out.bit((c.node >> i) & 1 == 1);
    }
    out.inputs.push(Fr::from(c.node));

    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let mut parents: Vec<Fr> = c.drg_parents.iter().map(|p| p.rows[layer - 1]).collect();
        if layer > 1 {
            parents.extend(c.exp_parents.iter().map(|p| p.rows[layer - 2]));
        }
        for p in &parents {
            out.bits_le(p);
        }
        let label = out.sha256_packed(&label_message(prefix, layer, c.node, &parents)?);
        expect(label, c.own.rows[layer - 1], "label")?;
        labels.push(label);
    }

    let key = *labels.last().ok_or("a sector without layers")?;
    let encoded = key + c.data_leaf;
    out.num(encoded);
    expect(encoded, c.replica_leaf, "encoding")?;
    let root = inclusion(
        out,
        encoded,
        &c.comm_r_last_path,
        shape.arities,
        NodeHash::Poseidon,
    )?;
    expect(root, prefix.comm_r_last, "comm_r_last root")?;

    let h = column_hash.hash(&mut out.aux, &labels);
    let root = inclusion(out, h, &c.own.path, shape.arities, NodeHash::Poseidon)?;
    expect(root, prefix.comm_c, "comm_c root")
}

/// The message `create_label_circuit` hashes: the replica id's bits, the layer (a constant
/// word), the node's 64 bits, zeros to 64 bytes, then the parents' bits, repeated as
/// `Proof::synthesize` repeats them (base parents six times and the first once more in the
/// first layer; all parents twice and the first nine again above it), 32 bytes each.
fn label_message(
    prefix: &Prefix,
    layer: usize,
    node: u64,
    parents: &[Fr],
) -> Result<Vec<Word>, String> {
    let mut repeated: Vec<&Fr> = Vec::with_capacity(LABEL_PARENTS);
    if layer > 1 {
        repeated.extend(parents);
        repeated.extend(parents);
        repeated.extend(parents.iter().take(9));
    } else {
        for _ in 0..6 {
            repeated.extend(parents);
        }
        repeated.extend(parents.first());
    }
    if repeated.len() != LABEL_PARENTS {
        return Err(format!("{} parents in layer {layer}", parents.len()));
    }
    let mut m = Vec::with_capacity(16 + 8 * LABEL_PARENTS);
    m.extend_from_slice(&bits::words_of(&prefix.replica_id));
    m.push(Word::constant(layer as u32));
    m.push(Word::allocated((node >> 32) as u32));
    m.push(Word::allocated(node as u32));
    m.extend_from_slice(&[Word::constant(0); 5]);
    for p in repeated {
        m.extend_from_slice(&bits::words_of(p));
    }
    Ok(m)
}

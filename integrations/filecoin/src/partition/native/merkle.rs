//! The values of storage-proofs' inclusion proof circuit (`PoRCircuit::synthesize`,
//! storage-proofs-core 19.1.0) with the leaf and the root already allocated and the root private,
//! as storage-proofs-porep's `enforce_inclusion` calls it.
//!
//! Per level of the path (`SubPath::synthesize`; the base tree's levels, then the sub tree's and
//! the top tree's one each, `AuthPath::from`): the index bits within the node (least
//! significant first), the siblings, the values of the insertion of the current node among the
//! siblings (`insertion::insert_2`, `insert_4`, `insert_8`: a sequence of `pick`s, with `nor`
//! and `and` of the first two bits first for 8), then the hash of the node's children (Poseidon,
//! or SHA-256 for the binary data tree). After the path, its index bits packed into public inputs
//! (`multipack::pack_into_inputs`); comparing the root allocates nothing.

use blstrs::Scalar as Fr;

use super::bits::{words_of, Out};
use super::poseidon;
use super::vanilla::Level;

/// How a tree's nodes hash their children.
#[derive(Clone, Copy)]
pub(crate) enum NodeHash {
    /// `PoseidonFunction::hash_multi_leaf_circuit`: neptune's legacy circuit.
    Poseidon,
    /// `Sha256Function::hash_multi_leaf_circuit`: each child's 255 bits, SHA-256 of their bytes,
    /// the digest packed.
    Sha256,
}

/// Pushes the values of the inclusion of `leaf` by `path` in a tree of `arities` (base, sub and
/// top; 0 for none); returns the root it computes.
pub(crate) fn inclusion(
    out: &mut Out,
    leaf: Fr,
    path: &[Level],
    arities: [usize; 3],
    hash: NodeHash,
) -> Result<Fr, String> {
    let upper = usize::from(arities[1] > 0) + usize::from(arities[2] > 0);
    if path.len() < upper {
        return Err("a Merkle path shorter than its tree's sub and top levels".into());
    }
    let base = path.len() - upper;
    let mut cur = leaf;
    let mut bits = Vec::new();
    for (i, (siblings, index)) in path.iter().enumerate() {
        let arity = match i.checked_sub(base) {
            None => arities[0],
            Some(0) if arities[1] > 0 => arities[1],
            Some(_) => arities[2],
        };
        if !arity.is_power_of_two() || siblings.len() + 1 != arity || *index >= arity {
            return Err(format!(
                "a Merkle path level of {} siblings in a tree of arity {arity}",
                siblings.len()
            ));
        }
        let index_bits: Vec<bool> = (0..arity.trailing_zeros())
            .map(|b| (index >> b) & 1 == 1)
            .collect();
        for &b in &index_bits {
            out.bit(b);
        }
        for &s in siblings {
            out.num(s);
        }
        let children = insert(out, cur, &index_bits, siblings)?;
        cur = match hash {
            NodeHash::Poseidon => poseidon::for_arity(arity)
                .ok_or_else(|| format!("no Poseidon constants of arity {arity}"))?
                .hash(&mut out.aux, &children),
            NodeHash::Sha256 => {
                let mut message = Vec::with_capacity(8 * children.len());
                for c in &children {
                    out.bits_le(c);
                    message.extend_from_slice(&words_of(c));
                }
                out.sha256_packed(&message)
            }
        };
        bits.extend(index_bits);
    }
    out.pack_into_inputs(&bits);
    Ok(cur)
}

/// The children of a node: `x` inserted among `s` at the index whose bits are `b`, pushing what
/// storage-proofs' `insert_2`, `insert_4` or `insert_8` allocates.
fn insert(out: &mut Out, x: Fr, b: &[bool], s: &[Fr]) -> Result<Vec<Fr>, String> {
    if let [b0, b1, _] = *b {
        // `insert_8` allocates `nor` and `and` of the two low bits first.
        out.bit(!b0 && !b1);
        out.bit(b0 && b1);
    }
    // `pick(c, a, b)`: allocates and returns `a` if `c`, else `b`.
    let mut pick = |c: bool, a: Fr, b: Fr| {
        let v = if c { a } else { b };
        out.num(v);
        v
    };
    Ok(match *b {
        [b0] => {
            let first = pick(b0, s[0], x);
            let second = pick(b0, x, s[0]);
            vec![first, second]
        }
        [b0, b1] => {
            let (a, b, c, d) = (x, s[0], s[1], s[2]);
            let p0 = pick(b0, b, a);
            let p0 = pick(b1, b, p0);
            let p1 = pick(b0, a, b);
            let p1 = pick(b1, c, p1);
            let p2 = pick(b0, d, a);
            let p2 = pick(b1, p2, c);
            let p3 = pick(b0, a, d);
            let p3 = pick(b1, p3, d);
            vec![p0, p1, p2, p3]
        }
        [b0, b1, b2] => {
            let (a, b, c, d, e, f, g, h) = (x, s[0], s[1], s[2], s[3], s[4], s[5], s[6]);
            let (nor, and) = (!b0 && !b1, b0 && b1);
            let p0 = pick(nor, a, b);
            let p0 = pick(b2, b, p0);
            let p1 = pick(b0, a, b);
            let p1 = pick(b1, c, p1);
            let p1 = pick(b2, c, p1);
            let p2 = pick(b0, d, a);
            let p2 = pick(b1, p2, c);
            let p2 = pick(b2, d, p2);
            let p3 = pick(and, a, d);
            let p3 = pick(b2, e, p3);
            let p4 = pick(nor, a, f);
            let p4 = pick(b2, p4, e);
            let p5 = pick(b0, a, f);
            let p5 = pick(b1, g, p5);
            let p5 = pick(b2, p5, f);
            let p6 = pick(b0, h, a);
            let p6 = pick(b1, p6, g);
            let p6 = pick(b2, p6, g);
            let p7 = pick(and, a, h);
            let p7 = pick(b2, p7, h);
            vec![p0, p1, p2, p3, p4, p5, p6, p7]
        }
        _ => {
            return Err(format!(
                "no native insertion into a node of {} children",
                s.len() + 1
            ))
        }
    })
}

//! Field elements as the gadgets see them in bits: decompositions, SHA-256 message words,
//! packing, and the sink the values go to.

use bellows_core::circuits::sha256_gadget::{self, Word};
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};

/// A challenge's values in allocation order: its public inputs and its aux values.
#[derive(Default)]
pub(crate) struct Out {
    pub inputs: Vec<Fr>,
    pub aux: Vec<Fr>,
}

/// Bits of a field element the gadgets allocate (`Fr::NUM_BITS`).
const FIELD_BITS: usize = 255;

/// Bits bellpepper packs into one field element (`Fr::CAPACITY`).
const CAPACITY: usize = 254;

impl Out {
    /// `AllocatedNum::alloc`.
    pub(crate) fn num(&mut self, v: Fr) {
        self.aux.push(v);
    }

    /// `AllocatedBit::alloc`.
    pub(crate) fn bit(&mut self, b: bool) {
        self.aux.push(if b { Fr::ONE } else { Fr::ZERO });
    }

    /// `AllocatedNum::to_bits_le` (bellpepper-core 0.2.1, `field_into_allocated_bits_le`): the
    /// 255 bits of `v`, least significant first.
    pub(crate) fn bits_le(&mut self, v: &Fr) {
        let repr = v.to_repr();
        for i in 0..FIELD_BITS {
            self.bit((repr[i / 8] >> (i % 8)) & 1 == 1);
        }
    }

    /// `multipack::pack_into_inputs` (bellperson 0.27): `bits` in chunks of 254, each chunk an
    /// input with bit i weighted 2^i.
    pub(crate) fn pack_into_inputs(&mut self, bits: &[bool]) {
        for chunk in bits.chunks(CAPACITY) {
            self.inputs.push(pack(chunk));
        }
    }

    /// The values bellpepper's `sha256` allocates for `message`, then `multipack::pack_bits` of
    /// the digest's first 254 bits in little-endian bit order (what storage-proofs'
    /// `Sha256Function::hash_circuit` and `create_label_circuit` return): pushes them, returns
    /// the packed digest.
    pub(crate) fn sha256_packed(&mut self, message: &[Word]) -> Fr {
        let digest = sha256_gadget::sha256(&mut self.aux, message);
        let mut bytes = sha256_gadget::digest_bytes(&digest);
        // Bits 254 and 255 (the last byte's top two) are not packed.
        bytes[31] &= 0x3f;
        let v = Fr::from_repr_vartime(bytes).expect("254 bits are a field element");
        self.num(v);
        v
    }
}

/// The field element with bit i of `bits` weighted 2^i.
fn pack(bits: &[bool]) -> Fr {
    let mut acc = Fr::ZERO;
    let mut coeff = Fr::ONE;
    for &b in bits {
        if b {
            acc += coeff;
        }
        coeff = coeff.double();
    }
    acc
}

/// The SHA-256 message words of a field element's allocated bits as storage-proofs lays them
/// out (`reverse_bit_numbering` of `to_bits_le`, or the same inline in the SHA-256 hasher): the
/// 255 bits padded with a constant zero to 32 bytes, each byte most significant bit first — the
/// little-endian byte representation, whose last byte's top bit is the constant.
pub(crate) fn words_of(v: &Fr) -> [Word; 8] {
    let repr = v.to_repr();
    std::array::from_fn(|w| {
        let value = u32::from_be_bytes(repr[4 * w..4 * w + 4].try_into().expect("4 bytes"));
        // Byte 31 is word 7's last: its top bit is bit 7 of the word.
        let constant = if w == 7 { 1 << 7 } else { 0 };
        Word::from_parts(value, !constant, 0)
    })
}

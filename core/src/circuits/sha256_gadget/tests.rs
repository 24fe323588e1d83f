//! The native values against bellpepper's gadget, run in a value-only constraint system, over
//! inputs that mix constant, allocated and negated bits.

use bellpepper::gadgets::{
    sha256::{sha256 as gadget_sha256, sha256_compression_function},
    uint32::UInt32,
};
use bellpepper_core::{
    boolean::{AllocatedBit, Boolean},
    SynthesisError,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use super::*;
use crate::groth16::constraint_system::{Cs, Record, Value};

/// Keeps the aux values, in order.
#[derive(Default)]
struct Values {
    aux: Vec<Scalar>,
}

impl Record for Values {
    fn aux(&mut self, value: impl Value) -> Result<usize, SynthesisError> {
        self.aux.push(value()?);
        Ok(self.aux.len() - 1)
    }

    fn input(&mut self, _: impl Value) -> Result<usize, SynthesisError> {
        Err(SynthesisError::Unsatisfiable)
    }
}

/// How the bits of a test word are made: constant, allocated, or negated views, with these
/// chances (out of 8); `None` makes each bit's kind at random, word by word picking a mix.
fn random_word(rng: &mut ChaCha20Rng, kinds: Option<(u32, u32)>) -> Word {
    let value = rng.next_u32();
    let (const_in_8, neg_in_8) = kinds.unwrap_or_else(|| match rng.next_u32() % 4 {
        0 => (8, 0),
        1 => (0, 0),
        2 => (2, 2),
        _ => (4, 3),
    });
    let (mut var, mut neg) = (0u32, 0u32);
    for i in 0..32 {
        if rng.next_u32() % 8 >= const_in_8 {
            var |= 1 << i;
            if rng.next_u32() % 8 < neg_in_8 {
                neg |= 1 << i;
            }
        }
    }
    Word::from_parts(value, var, neg)
}

/// The gadget's bits of `w` (least significant first), allocating its variables in `cs`.
fn booleans(cs: &mut Cs<Values>, w: Word) -> Vec<Boolean> {
    (0..32)
        .map(|i| {
            let b = w.bit(i);
            if !b.var {
                return Boolean::constant(b.value);
            }
            // The variable holds the logical value exclusive-or the negation.
            let bit = AllocatedBit::alloc(&mut *cs, Some(b.value ^ b.neg)).unwrap();
            if b.neg {
                Boolean::Not(bit)
            } else {
                Boolean::Is(bit)
            }
        })
        .collect()
}

/// The word the gadget's `UInt32` holds, read from its bits.
fn word_of(u: UInt32) -> Word {
    let mut bits = u.into_bits_be();
    bits.reverse();
    from_bits(bits.iter().map(|b| match b {
        Boolean::Constant(v) => Bit::constant(*v),
        Boolean::Is(a) => Bit {
            var: true,
            value: a.get_value().unwrap(),
            neg: false,
        },
        Boolean::Not(a) => Bit {
            var: true,
            value: !a.get_value().unwrap(),
            neg: true,
        },
    }))
}

/// Message bits, big-endian within each word, as `UInt32::from_bits_be` reads them.
fn message_bits(cs: &mut Cs<Values>, words: &[Word]) -> Vec<Boolean> {
    words
        .iter()
        .flat_map(|&w| {
            let mut b = booleans(cs, w);
            b.reverse();
            b
        })
        .collect()
}

#[test]
fn one_compression_allocates_what_the_gadget_allocates() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    for trial in 0..48 {
        let block: [Word; 16] = std::array::from_fn(|_| random_word(&mut rng, None));
        let state: [Word; 8] = match trial % 3 {
            0 => IV.map(Word::constant),
            1 => std::array::from_fn(|_| Word::allocated(rng.next_u32())),
            _ => std::array::from_fn(|_| random_word(&mut rng, Some((3, 2)))),
        };
        let mut cs = Cs(Values::default());
        let input = message_bits(&mut cs, &block);
        let state_u32: Vec<UInt32> = state
            .iter()
            .map(|&w| {
                let mut b = booleans(&mut cs, w);
                b.reverse();
                UInt32::from_bits_be(&b)
            })
            .collect();
        let before = cs.aux.len();
        let out = sha256_compression_function(&mut cs, &input, &state_u32).unwrap();
        let expected: Vec<Word> = out.into_iter().map(word_of).collect();

        let mut values = Vec::new();
        let got = compress(&mut values, &block, &state);
        assert_eq!(
            got.as_slice(),
            expected.as_slice(),
            "trial {trial}: output words"
        );
        assert_eq!(values.len(), cs.aux.len() - before, "trial {trial}: count");
        assert!(values[..] == cs.aux[before..], "trial {trial}: values");
    }
}

#[test]
fn a_message_allocates_what_the_gadget_allocates() {
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    // Lengths around the padding's block boundary (13 words and less pad within one block).
    for words in [0usize, 1, 13, 14, 16, 30, 41] {
        let message: Vec<Word> = (0..words).map(|_| random_word(&mut rng, None)).collect();
        let mut cs = Cs(Values::default());
        let bits = message_bits(&mut cs, &message);
        let before = cs.aux.len();
        let digest = gadget_sha256(&mut cs, &bits).unwrap();

        let mut values = Vec::new();
        let got = sha256(&mut values, &message);
        let expected: Vec<bool> = digest.iter().map(|b| b.get_value().unwrap()).collect();
        let got_bits: Vec<bool> = digest_bytes(&got)
            .iter()
            .flat_map(|&byte| (0..8).rev().map(move |i| (byte >> i) & 1 == 1))
            .collect();
        assert_eq!(got_bits, expected, "{words} words: digest");
        assert_eq!(values.len(), cs.aux.len() - before, "{words} words: count");
        assert!(values[..] == cs.aux[before..], "{words} words: values");
    }
}

/// FIPS 180-2's "abc" through the word API: the digest is SHA-256's.
#[test]
fn the_digest_is_sha256() {
    let mut values = Vec::new();
    // "abc" is not whole words: pad it the way a caller of `compress` would.
    let mut block = [Word::constant(0); 16];
    block[0] = Word::allocated(0x6162_6380);
    block[15] = Word::constant(24);
    let d = digest_bytes(&compress(&mut values, &block, &IV.map(Word::constant)));
    assert_eq!(&d[..4], &[0xba, 0x78, 0x16, 0xbf]);
    assert_eq!(&d[28..], &[0xf2, 0x00, 0x15, 0xad]);
}

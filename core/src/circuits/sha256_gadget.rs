//! The values bellpepper's SHA-256 gadget allocates, computed natively, in its allocation order.
//!
//! bellpepper's `sha256` / `sha256_compression_function` (bellpepper 0.2.1, and bellperson
//! 0.27's copy, which allocates alike) spend their time building linear combinations; a witness
//! generator needs only the values of the variables they allocate. Those are all bits, and which
//! operation allocates one depends only on which of its operand bits are constants and which
//! allocated, so they can be computed word by word with masks:
//!
//! - a [`Word`] is a `UInt32` as the gadget holds it: each bit a constant, an allocated bit
//!   (`Boolean::Is`) or a negated view of one (`Boolean::Not`), with its logical value;
//! - `Boolean::xor` allocates only when both operands are variables, `Boolean::and` likewise
//!   (`AllocatedBit::xor`, `and`, `and_not`, `nor` after the negations are folded), and the
//!   allocated variable holds the result's logical value exclusive-or its negation flag;
//! - `sha256_ch` and `sha256_maj` fold constant operands case by case (reproduced bit by bit
//!   here, in the gadget's order of cases); with three variable operands `ch` allocates one bit
//!   and `maj` two (`maj`, then `b and c`), bit by bit from the least significant;
//! - `UInt32::addmany` allocates the bits of the whole sum (as many as the largest possible sum
//!   needs) unless every operand bit is a constant.
//!
//! [`compress`] follows `sha256_compression_function` step for step (the message schedule, the
//! 64 rounds with their deferred additions of `e` and `a`, the final additions) and [`sha256`]
//! the gadget's padding (a one bit, zeros and the length, all constants). The values are pushed
//! onto a `Vec<Scalar>` as the gadget's allocations would append them to a constraint system.
//! The tests compare every value with the gadget run in a value-only constraint system, over
//! messages and states mixing constant, allocated and negated bits.

use blstrs::Scalar;
use ff::Field;

/// SHA-256's initial hash value H(0) (FIPS 180-4, 5.3.3).
pub const IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// SHA-256's round constants K (FIPS 180-4, 4.2.2).
#[rustfmt::skip]
const K: [u32; 64] = [
    0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
    0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
    0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
    0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
    0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
    0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
    0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
    0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
];

/// Aux values one compression allocates at most (about 27 000 with every bit allocated).
const VALUES_PER_BLOCK: usize = 28_000;

/// A `UInt32` of the gadget: 32 bits, least significant first as `UInt32` keeps them, each a
/// constant or a (possibly negated) allocated bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word {
    /// The logical value of every bit.
    value: u32,
    /// Bits that are variables (`Boolean::Is` or `Boolean::Not`); the others are constants.
    var: u32,
    /// Variable bits that are negated views (`Boolean::Not`); always within `var`.
    neg: u32,
}

impl Word {
    /// A constant (`UInt32::constant`).
    pub const fn constant(value: u32) -> Self {
        Word {
            value,
            var: 0,
            neg: 0,
        }
    }

    /// Every bit an allocated bit holding `value`'s (`UInt32::alloc`, or an addition's result).
    pub const fn allocated(value: u32) -> Self {
        Word {
            value,
            var: u32::MAX,
            neg: 0,
        }
    }

    /// Bits of `value`: allocated where `var` has a one, constants elsewhere, negated views of
    /// their variables where `neg` has a one (`neg` is taken within `var`).
    pub const fn from_parts(value: u32, var: u32, neg: u32) -> Self {
        Word {
            value,
            var,
            neg: neg & var,
        }
    }

    /// The logical value.
    pub const fn value(&self) -> u32 {
        self.value
    }

    /// The bits that are variables.
    pub const fn variables(&self) -> u32 {
        self.var
    }

    fn rotr(self, by: u32) -> Self {
        Word {
            value: self.value.rotate_right(by),
            var: self.var.rotate_right(by),
            neg: self.neg.rotate_right(by),
        }
    }

    fn shr(self, by: u32) -> Self {
        Word {
            value: self.value >> by,
            var: self.var >> by,
            neg: self.neg >> by,
        }
    }

    /// Per bit: the negation flag of a variable, the value of a constant (what a constant
    /// operand of an exclusive-or does to the other operand's polarity).
    fn polarity(self) -> u32 {
        self.neg | (self.value & !self.var)
    }

    fn bit(self, i: u32) -> Bit {
        Bit {
            var: (self.var >> i) & 1 == 1,
            value: (self.value >> i) & 1 == 1,
            neg: (self.neg >> i) & 1 == 1,
        }
    }
}

/// One bit of a [`Word`].
#[derive(Clone, Copy)]
struct Bit {
    var: bool,
    value: bool,
    neg: bool,
}

impl Bit {
    const fn constant(value: bool) -> Self {
        Bit {
            var: false,
            value,
            neg: false,
        }
    }

    /// A bit just allocated with `value` (`Boolean::Is`).
    const fn allocated(value: bool) -> Self {
        Bit {
            var: true,
            value,
            neg: false,
        }
    }

    fn not(self) -> Self {
        Bit {
            var: self.var,
            value: !self.value,
            neg: self.neg ^ self.var,
        }
    }

    fn is_const(self, v: bool) -> bool {
        !self.var && self.value == v
    }
}

/// Pushes one allocated bit's value.
#[inline(always)]
fn push(out: &mut Vec<Scalar>, b: bool) {
    out.push(if b { Scalar::ONE } else { Scalar::ZERO });
}

/// Pushes, for each one bit of `mask` from the least significant, that bit of `bits`.
#[inline]
fn emit(out: &mut Vec<Scalar>, mut mask: u32, bits: u32) {
    if mask == u32::MAX {
        for i in 0..32 {
            push(out, (bits >> i) & 1 == 1);
        }
        return;
    }
    while mask != 0 {
        let i = mask.trailing_zeros();
        push(out, (bits >> i) & 1 == 1);
        mask &= mask - 1;
    }
}

/// `UInt32::xor`: `Boolean::xor` bit by bit.
fn xor(out: &mut Vec<Scalar>, a: Word, b: Word) -> Word {
    let both = a.var & b.var;
    // The allocated variable holds the logical result exclusive-or the result's negation
    // (a mixed pair allocates `a xor not b` and returns its negation).
    emit(out, both, a.value ^ b.value ^ a.neg ^ b.neg);
    let var = a.var | b.var;
    Word {
        value: a.value ^ b.value,
        var,
        neg: (a.polarity() ^ b.polarity()) & var,
    }
}

/// `Boolean::and` on one bit.
fn and_bit(out: &mut Vec<Scalar>, a: Bit, b: Bit) -> Bit {
    if a.is_const(false) || b.is_const(false) {
        Bit::constant(false)
    } else if !a.var {
        b
    } else if !b.var {
        a
    } else {
        let v = a.value & b.value;
        push(out, v);
        Bit::allocated(v)
    }
}

/// `Boolean::sha256_ch` on one bit: `(a and b) xor ((not a) and c)`, constants folded in the
/// gadget's order of cases.
fn ch_bit(out: &mut Vec<Scalar>, a: Bit, b: Bit, c: Bit) -> Bit {
    let v = (a.value & b.value) ^ (!a.value & c.value);
    if !a.var && !b.var && !c.var {
        Bit::constant(v)
    } else if a.is_const(false) {
        c
    } else if b.is_const(false) {
        and_bit(out, a.not(), c)
    } else if c.is_const(false) {
        and_bit(out, a, b)
    } else if c.is_const(true) {
        and_bit(out, a, b.not()).not()
    } else if b.is_const(true) {
        and_bit(out, a.not(), c.not()).not()
    } else {
        // `a` a constant one, or all three variables: one bit allocated.
        push(out, v);
        Bit::allocated(v)
    }
}

/// `Boolean::sha256_maj` on one bit: `(a and b) xor (a and c) xor (b and c)`.
fn maj_bit(out: &mut Vec<Scalar>, a: Bit, b: Bit, c: Bit) -> Bit {
    let v = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value);
    if !a.var && !b.var && !c.var {
        Bit::constant(v)
    } else if a.is_const(false) {
        and_bit(out, b, c)
    } else if b.is_const(false) {
        and_bit(out, a, c)
    } else if c.is_const(false) {
        and_bit(out, a, b)
    } else if c.is_const(true) {
        and_bit(out, a.not(), b.not()).not()
    } else if b.is_const(true) {
        and_bit(out, a.not(), c.not()).not()
    } else if a.is_const(true) {
        and_bit(out, b.not(), c.not()).not()
    } else {
        // All three variables: `maj`, then `b and c`.
        push(out, v);
        push(out, b.value & c.value);
        Bit::allocated(v)
    }
}

/// Assembles a word from its bits (least significant first).
fn from_bits(bits: impl Iterator<Item = Bit>) -> Word {
    let (mut value, mut var, mut neg) = (0u32, 0u32, 0u32);
    for (i, b) in bits.enumerate() {
        value |= u32::from(b.value) << i;
        var |= u32::from(b.var) << i;
        neg |= u32::from(b.neg) << i;
    }
    Word { value, var, neg }
}

/// `UInt32::sha256_ch`.
fn ch(out: &mut Vec<Scalar>, a: Word, b: Word, c: Word) -> Word {
    let value = (a.value & b.value) ^ (!a.value & c.value);
    if a.var & b.var & c.var == u32::MAX {
        emit(out, u32::MAX, value);
        return Word::allocated(value);
    }
    from_bits((0..32).map(|i| ch_bit(out, a.bit(i), b.bit(i), c.bit(i))))
}

/// `UInt32::sha256_maj`.
fn maj(out: &mut Vec<Scalar>, a: Word, b: Word, c: Word) -> Word {
    let value = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value);
    if a.var & b.var & c.var == u32::MAX {
        let bc = b.value & c.value;
        for i in 0..32 {
            push(out, (value >> i) & 1 == 1);
            push(out, (bc >> i) & 1 == 1);
        }
        return Word::allocated(value);
    }
    from_bits((0..32).map(|i| maj_bit(out, a.bit(i), b.bit(i), c.bit(i))))
}

/// `UInt32::addmany`: the sum's bits, as many as `n` operands' largest sum needs, unless every
/// operand is a constant.
fn addmany(out: &mut Vec<Scalar>, operands: &[Word]) -> Word {
    let sum: u64 = operands.iter().map(|w| u64::from(w.value)).sum();
    if operands.iter().all(|w| w.var == 0) {
        return Word::constant(sum as u32);
    }
    let max = operands.len() as u64 * u64::from(u32::MAX);
    let bits = 64 - max.leading_zeros();
    for i in 0..bits {
        push(out, (sum >> i) & 1 == 1);
    }
    Word::allocated(sum as u32)
}

/// `sigma` of the message schedule and `Sigma` of the rounds: three rotations or shifts of `w`
/// combined by two exclusive-ors, in the gadget's order.
fn sigma(out: &mut Vec<Scalar>, w: Word, r1: u32, r2: u32, r3: u32, shift: bool) -> Word {
    let third = if shift { w.shr(r3) } else { w.rotr(r3) };
    let s = xor(out, w.rotr(r1), w.rotr(r2));
    xor(out, s, third)
}

/// A sum the gadget defers until the value is read (`Maybe::Deferred`), or a word at hand.
#[derive(Clone, Copy)]
struct Deferred {
    ops: [Word; 8],
    n: usize,
}

impl Deferred {
    fn ready(w: Word) -> Self {
        Deferred { ops: [w; 8], n: 0 }
    }

    fn of(ops: &[Word]) -> Self {
        let mut d = Deferred::ready(ops[0]);
        d.ops[..ops.len()].copy_from_slice(ops);
        d.n = ops.len();
        d
    }

    /// `Maybe::compute`: the word at hand, or the sum of the deferred operands and `extra`.
    fn compute(self, out: &mut Vec<Scalar>, extra: Option<Word>) -> Word {
        if self.n == 0 {
            return self.ops[0];
        }
        let mut ops = self.ops;
        let mut n = self.n;
        if let Some(x) = extra {
            ops[n] = x;
            n += 1;
        }
        addmany(out, &ops[..n])
    }
}

/// The values bellpepper's `sha256_compression_function` allocates for one 512-bit `block`
/// (sixteen words, big-endian as `UInt32::from_bits_be` reads them) from the chaining value
/// `state`, pushed onto `out` in its order; returns the words it returns.
pub fn compress(out: &mut Vec<Scalar>, block: &[Word; 16], state: &[Word; 8]) -> [Word; 8] {
    out.reserve(VALUES_PER_BLOCK);
    let mut w = [Word::constant(0); 64];
    w[..16].copy_from_slice(block);
    for i in 16..64 {
        let s0 = sigma(out, w[i - 15], 7, 18, 3, true);
        let s1 = sigma(out, w[i - 2], 17, 19, 10, true);
        w[i] = addmany(out, &[w[i - 16], s0, w[i - 7], s1]);
    }
    let mut a = Deferred::ready(state[0]);
    let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *state;
    let mut e = Deferred::ready(state[4]);
    for i in 0..64 {
        let new_e = e.compute(out, None);
        let s1 = sigma(out, new_e, 6, 11, 25, false);
        let ch = ch(out, new_e, f, g);
        let temp1 = [h, s1, ch, Word::constant(K[i]), w[i]];
        let new_a = a.compute(out, None);
        let s0 = sigma(out, new_a, 2, 13, 22, false);
        let maj = maj(out, new_a, b, c);
        h = g;
        g = f;
        f = new_e;
        let mut e_ops = [d; 6];
        e_ops[..5].copy_from_slice(&temp1);
        e = Deferred::of(&e_ops);
        d = c;
        c = b;
        b = new_a;
        let mut a_ops = [s0; 7];
        a_ops[..5].copy_from_slice(&temp1);
        a_ops[6] = maj;
        a = Deferred::of(&a_ops);
    }
    [
        a.compute(out, Some(state[0])),
        addmany(out, &[state[1], b]),
        addmany(out, &[state[2], c]),
        addmany(out, &[state[3], d]),
        e.compute(out, Some(state[4])),
        addmany(out, &[state[5], f]),
        addmany(out, &[state[6], g]),
        addmany(out, &[state[7], h]),
    ]
}

/// The values bellpepper's `sha256` allocates for `message` (whole 32-bit words, big-endian),
/// padded as it pads (constants), block after block from the constant IV; returns the digest's
/// words.
pub fn sha256(out: &mut Vec<Scalar>, message: &[Word]) -> [Word; 8] {
    let bits = 32 * message.len() as u64;
    let mut padded = message.to_vec();
    padded.push(Word::constant(0x8000_0000));
    while !(padded.len() + 2).is_multiple_of(16) {
        padded.push(Word::constant(0));
    }
    padded.push(Word::constant((bits >> 32) as u32));
    padded.push(Word::constant(bits as u32));
    let mut state = IV.map(Word::constant);
    for block in padded.chunks_exact(16) {
        let block: &[Word; 16] = block.try_into().expect("chunks of 16");
        state = compress(out, block, &state);
    }
    state
}

/// The digest's bytes (the words' values, big-endian).
pub fn digest_bytes(words: &[Word; 8]) -> [u8; 32] {
    let mut d = [0u8; 32];
    for (i, w) in words.iter().enumerate() {
        d[4 * i..4 * i + 4].copy_from_slice(&w.value.to_be_bytes());
    }
    d
}

#[cfg(test)]
mod tests;

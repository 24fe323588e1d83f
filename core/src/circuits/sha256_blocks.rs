//! The witness of [`super::Sha256Circuit`]'s compressions, computed for all blocks in parallel.
//!
//! bellpepper's `sha256` gadget compresses the padded message block by block; block k reads the
//! chaining value that block k − 1 produced, so its code runs in sequence. Its *values* need not:
//! the chaining values are cheap to compute natively (FIPS 180-4's compression, `sha2`'s
//! [`sha2::compress256`], well under a microsecond a block), and given them, each block's values
//! can be computed on their own. For every block this module computes what bellpepper's
//! `sha256_compression_function` allocates ([`super::sha256_gadget::compress`], natively, in the
//! gadget's order), on a few threads of its own, fed exactly what the real run feeds that block:
//!
//! - message bits: the preimage's bits as allocated bits (`Boolean::Is`, as the circuit allocates
//!   them), the padding as constants (as `sha256` pads);
//! - chaining value: the constant IV for block 0; for a later block, eight `UInt32`s of allocated
//!   bits — what block k − 1's additions (`UInt32::addmany`, which allocates every result bit
//!   unless all its operands are constant) return. They are never constant there: block 0 holds
//!   the preimage's first byte (allocated) whenever there is a second block, and an allocated
//!   operand reaches every word of the state within the 64 rounds.
//!
//! The blocks' values are then handed to the real constraint system with `extend_aux`, in block
//! order, as soon as each block and all before it are done (so the streaming products of
//! [`crate::pce`] follow).
//!
//! A block's output chaining value is compared with `sha2`'s, so a divergence between the two
//! computations is an error, never a silent wrong witness; the equality of the whole
//! assignment with direct synthesis is tested at many lengths (core's integration tests,
//! `pce.rs`: `sha256_parallel_witness_equals_direct_synthesis_at_every_padding_boundary`).
//!
//! The worker threads are plain scoped threads, not the rayon pool: the PCE products run on the
//! pool and wait for this witness, so a witness that needed a pool worker could starve behind
//! them (a batch of syntheses holding every worker).

use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        mpsc,
    },
    thread,
};

use bellpepper_core::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use sha2::digest::generic_array::GenericArray;

use super::sha256_gadget::{compress, Word, IV};

/// Stack of a block worker: the computation recurses little; generous all the same.
const WORKER_STACK: usize = 16 << 20;

/// The padded message (FIPS 180-4, 5.1.1): `preimage`, a 1 bit, zeros, the bit length as a
/// 64-bit big-endian integer, a multiple of 64 bytes in all.
fn pad(preimage: &[u8]) -> Vec<u8> {
    let mut m = preimage.to_vec();
    m.push(0x80);
    while m.len() % 64 != 56 {
        m.push(0);
    }
    m.extend_from_slice(&(8 * preimage.len() as u64).to_be_bytes());
    m
}

/// Chaining values: `h[k]` is the state block k starts from (`h[0]` = IV), the last the digest's.
fn chaining_values(padded: &[u8]) -> Vec<[u32; 8]> {
    let mut h = Vec::with_capacity(padded.len() / 64 + 1);
    let mut state = IV;
    h.push(state);
    for block in padded.chunks_exact(64) {
        sha2::compress256(
            &mut state,
            std::slice::from_ref(GenericArray::from_slice(block)),
        );
        h.push(state);
    }
    h
}

/// Computes the aux values of every block's compression in parallel and appends them to `cs`
/// with `extend_aux`, in block order. `cs` must already hold the preimage's bits, allocated as
/// [`super::Sha256Circuit`] allocates them. Returns the digest.
pub(super) fn compress_all<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    preimage: &[u8],
) -> Result<[u8; 32], SynthesisError> {
    let padded = pad(preimage);
    let h = chaining_values(&padded);
    let blocks = padded.len() / 64;
    let preimage_bits = 8 * preimage.len();
    let threads = thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(blocks);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<Vec<Scalar>, SynthesisError>)>();
    let delivered = thread::scope(|s| -> Result<(), SynthesisError> {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, stop, padded, h) = (&next, &stop, &padded, &h);
            thread::Builder::new()
                .name("bellows-sha256-block".into())
                .stack_size(WORKER_STACK)
                .spawn_scoped(s, move || {
                    while !stop.load(Ordering::Relaxed) {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        if k >= blocks {
                            break;
                        }
                        let r = block_aux(padded, preimage_bits, k, &h[k], &h[k + 1]);
                        if tx.send((k, r)).is_err() {
                            break;
                        }
                    }
                })
                .map_err(SynthesisError::IoError)?;
        }
        drop(tx);
        // Deliver in block order; blocks finished early wait here (a few, as the workers take
        // blocks in order and each takes about as long).
        let mut pending: BTreeMap<usize, Result<Vec<Scalar>, SynthesisError>> = BTreeMap::new();
        let mut want = 0;
        let result = loop {
            if want == blocks {
                break Ok(());
            }
            if let Some(r) = pending.remove(&want) {
                match r {
                    Ok(values) => {
                        cs.extend_aux(&values);
                        want += 1;
                        continue;
                    }
                    Err(e) => break Err(e),
                }
            }
            match rx.recv() {
                Ok((k, r)) => {
                    pending.insert(k, r);
                }
                // Every worker gone before the last block: one panicked (the scope re-raises it).
                Err(_) => break Err(SynthesisError::AssignmentMissing),
            }
        };
        stop.store(true, Ordering::Relaxed);
        result
    });
    delivered?;
    let mut digest = [0u8; 32];
    for (i, w) in h[blocks].iter().enumerate() {
        digest[4 * i..4 * i + 4].copy_from_slice(&w.to_be_bytes());
    }
    Ok(digest)
}

/// The aux values bellpepper's compression gadget allocates for block `k`, given the state `h_in`
/// it starts from (computed natively, [`super::sha256_gadget::compress`]); checks that it ends
/// in `h_out`.
fn block_aux(
    padded: &[u8],
    preimage_bits: usize,
    k: usize,
    h_in: &[u32; 8],
    h_out: &[u32; 8],
) -> Result<Vec<Scalar>, SynthesisError> {
    let block = &padded[64 * k..64 * (k + 1)];
    let words: [Word; 16] = std::array::from_fn(|i| {
        let value = u32::from_be_bytes(block[4 * i..4 * i + 4].try_into().expect("4 bytes"));
        // Message bit j of this word (most significant first) is the preimage's bit
        // 512k + 32i + j: allocated while inside the preimage, a padding constant after.
        let first = 512 * k + 32 * i;
        let allocated = preimage_bits.saturating_sub(first).min(32) as u32;
        let var = u32::MAX.checked_shl(32 - allocated).unwrap_or(0);
        Word::from_parts(value, var, 0)
    });
    // The IV is constant; a later block starts from the previous block's sums, whose bits are
    // allocated (see the module documentation).
    let state = if k == 0 {
        h_in.map(Word::constant)
    } else {
        h_in.map(Word::allocated)
    };
    let mut aux = Vec::new();
    let out = compress(&mut aux, &words, &state);
    if out.map(|w| w.value()) != *h_out {
        return Err(SynthesisError::IoError(std::io::Error::other(format!(
            "internal error: the sha256 gadget's block {k} disagrees with FIPS 180-4's compression"
        ))));
    }
    Ok(aux)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The native chaining value of the last block is the digest (FIPS 180-2 example "abc").
    #[test]
    fn chaining_values_end_in_the_digest() {
        let h = chaining_values(&pad(b"abc"));
        assert_eq!(h.len(), 2);
        assert_eq!(h[1][0], 0xba78_16bf);
        assert_eq!(h[1][7], 0xf200_15ad);
        assert_eq!(pad(&[0u8; 55]).len(), 64);
        assert_eq!(pad(&[0u8; 56]).len(), 128);
    }
}

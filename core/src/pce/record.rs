//! Recording: a constraint system that keeps A, B, C as sparse rows with interned coefficients
//! and builds the image of [`super::format`].

use std::collections::HashMap;

use bellpepper_core::{Circuit, SynthesisError};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::{
    format::{self, Header, BLOCK_ROWS, NUM_SECTIONS},
    words_as_bytes_mut, Pce, Storage,
};
use crate::groth16::constraint_system::{next_index, BuildLc, Cs, Lc, Name, Record, Value};
use crate::groth16::synthesis::{check_domain, synthesis_error};
use crate::{Error, Result};

/// A recorded term before packing: bit 63 set for an input, coefficient id in bits 32..63,
/// variable index in bits 0..32.
const INPUT_TAG: u64 = 1 << 63;

#[derive(Default)]
struct Matrix {
    terms: Vec<u64>,
    lens: Vec<u8>,
    blocks: Vec<u64>,
}

struct Recorder {
    coeffs: Vec<Scalar>,
    index: HashMap<[u8; 32], u32>,
    minus_one: Scalar,
    last: Option<(Scalar, u32)>,
    m: [Matrix; 3],
    num_inputs: usize,
    num_aux: usize,
    rows: usize,
    error: Option<Error>,
}

impl Recorder {
    fn new() -> Self {
        let minus_one = -Scalar::ONE;
        Self {
            coeffs: vec![Scalar::ONE, minus_one],
            index: HashMap::new(),
            minus_one,
            last: None,
            m: Default::default(),
            num_inputs: 0,
            num_aux: 0,
            rows: 0,
            error: None,
        }
    }

    fn intern(&mut self, c: &Scalar) -> u32 {
        if *c == Scalar::ONE {
            return 0;
        }
        if *c == self.minus_one {
            return 1;
        }
        if let Some((v, id)) = self.last {
            if v == *c {
                return id;
            }
        }
        let key: [u8; 32] = c.to_repr();
        let next = self.coeffs.len() as u32;
        let id = *self.index.entry(key).or_insert(next);
        if id == next {
            self.coeffs.push(*c);
        }
        self.last = Some((*c, id));
        id
    }

    /// Marks where a row block starts in each matrix (and, once more, where the last ends): the
    /// positions of its first entry and of its first length.
    fn mark_block(&mut self) {
        for mat in &mut self.m {
            mat.blocks.push(mat.terms.len() as u64);
            mat.blocks.push(mat.lens.len() as u64);
        }
    }

    fn push_row(&mut self, m: usize, lc: &Lc) {
        let mut count = 0u64;
        let terms = lc
            .iter_inputs()
            .map(|(&i, c)| (INPUT_TAG, i, c))
            .chain(lc.iter_aux().map(|(&i, c)| (0, i, c)));
        for (tag, i, c) in terms {
            if bool::from(c.is_zero()) {
                continue;
            }
            let id = self.intern(c);
            if i > u32::MAX as usize || id >= 1 << 31 {
                self.error.get_or_insert_with(|| {
                    Error::invalid(format!(
                        "constraint {}: variable index {i} or coefficient count {id} is too \
                         large to record",
                        self.rows
                    ))
                });
                continue;
            }
            self.m[m].terms.push(tag | u64::from(id) << 32 | i as u64);
            count += 1;
        }
        format::push_varint(&mut self.m[m].lens, count);
    }

    /// Packs the recording into its image.
    fn finish(self, id: &str, force_width: Option<u32>) -> Result<Pce> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let n_in = self.num_inputs as u64;
        let n_aux = self.num_aux as u64;
        let vars = n_in + n_aux;
        let col_bits = format::bits_for(vars);
        let coeff_bits = format::bits_for(self.coeffs.len() as u64);
        // The narrowest of 4, 5 or 8 bytes that holds column | coefficient id (a forced width
        // only for tests of the other layouts).
        let entry_bytes: u32 = match force_width {
            Some(w) => w,
            None if col_bits + coeff_bits <= 32 => 4,
            None if col_bits + coeff_bits <= 40 => 5,
            None => 8,
        };
        if col_bits + coeff_bits > 8 * entry_bytes {
            return Err(Error::invalid(format!(
                "{vars} variables and {} coefficients do not fit {entry_bytes}-byte entries",
                self.coeffs.len()
            )));
        }
        if col_bits + coeff_bits > 64 {
            return Err(Error::invalid(format!(
                "{vars} variables and {} coefficients do not fit a 64-bit entry",
                self.coeffs.len()
            )));
        }
        // Section lengths and offsets.
        let mut lens = [0u64; NUM_SECTIONS];
        lens[format::SEC_COEFFS] = 32 * self.coeffs.len() as u64;
        for (k, mat) in self.m.iter().enumerate() {
            let e = format::sec_entries(k);
            lens[e] = mat.terms.len() as u64 * u64::from(entry_bytes);
            lens[e + 1] = mat.lens.len() as u64;
            lens[e + 2] = 8 * mat.blocks.len() as u64;
        }
        let header_len = Header::len_for_id(id.len());
        let mut sections = [(0u64, 0u64); NUM_SECTIONS];
        let mut end = u64::from(header_len);
        for (s, &len) in sections.iter_mut().zip(&lens) {
            *s = (end, len);
            end = (end + len).next_multiple_of(8);
        }
        let mut header = Header {
            header_len,
            file_len: end,
            num_inputs: n_in,
            num_aux: n_aux,
            num_constraints: self.rows as u64,
            num_coeffs: self.coeffs.len() as u64,
            col_bits,
            entry_bytes,
            block_rows: BLOCK_ROWS,
            nnz: [0, 1, 2].map(|k| self.m[k].terms.len() as u64),
            sections,
            shape_digest: [0; 32],
            header_check: [0; 32],
            id: id.to_string(),
        };
        let mut words = vec![0u64; (end / 8) as usize];
        let bytes = words_as_bytes_mut(&mut words);
        let sec = |i: usize| {
            let (off, len) = sections[i];
            off as usize..(off + len) as usize
        };
        for (dst, c) in bytes[sec(format::SEC_COEFFS)]
            .chunks_exact_mut(32)
            .zip(&self.coeffs)
        {
            dst.copy_from_slice(c.to_repr().as_ref());
        }
        for (k, mat) in self.m.iter().enumerate() {
            let e = format::sec_entries(k);
            let pack = |t: u64| -> std::result::Result<u64, String> {
                let idx = t & 0xffff_ffff;
                let coeff = (t >> 32) & 0x7fff_ffff;
                let col = if t & INPUT_TAG != 0 {
                    if idx >= n_in {
                        return Err(format!("input {idx}, but the circuit has {n_in}"));
                    }
                    idx
                } else {
                    if idx >= n_aux {
                        return Err(format!("aux variable {idx}, but the circuit has {n_aux}"));
                    }
                    n_in + idx
                };
                Ok(col | coeff << col_bits)
            };
            let dst = &mut bytes[sec(e)];
            let packed = dst
                .par_chunks_mut(entry_bytes as usize)
                .zip(mat.terms.par_iter())
                .try_for_each(|(d, &t)| {
                    let v = pack(t)?;
                    d.copy_from_slice(&v.to_le_bytes()[..entry_bytes as usize]);
                    Ok::<(), String>(())
                });
            packed.map_err(|r| {
                Error::invalid(format!(
                    "the circuit's {} matrix uses {r}",
                    b"ABC"[k] as char
                ))
            })?;
            bytes[sec(e + 1)].copy_from_slice(&mat.lens);
            for (d, v) in bytes[sec(e + 2)].chunks_exact_mut(8).zip(&mat.blocks) {
                d.copy_from_slice(&v.to_le_bytes());
            }
        }
        header.shape_digest = format::shape_digest(&header, bytes);
        header.header_check = header.compute_check();
        bytes[..header_len as usize].copy_from_slice(&header.encode());
        drop(self.m);
        let len = words.len() * 8;
        Pce::from_storage(
            Storage::Owned(words, len),
            &format!("recording of circuit {id:?}"),
        )
    }
}

impl Record for Recorder {
    fn aux(&mut self, _: impl Value) -> Result<usize, SynthesisError> {
        next_index(&mut self.num_aux)
    }

    fn input(&mut self, _: impl Value) -> Result<usize, SynthesisError> {
        next_index(&mut self.num_inputs)
    }

    fn constraint(&mut self, _: impl Name, a: impl BuildLc, b: impl BuildLc, c: impl BuildLc) {
        if self.rows.is_multiple_of(BLOCK_ROWS as usize) {
            self.mark_block();
        }
        let (la, lb, lc) = (a(Lc::zero()), b(Lc::zero()), c(Lc::zero()));
        self.push_row(0, &la);
        self.push_row(1, &lb);
        self.push_row(2, &lc);
        self.rows += 1;
    }
}

/// Records `circuit` under the identifier `id` (see [`Pce::record`]): the constraints it
/// enforces plus one `input · 0 = 0` row per public input, as direct synthesis adds them.
pub fn record<C: Circuit<Scalar>>(circuit: C, id: &str) -> Result<Pce> {
    record_with(circuit, id, None)
}

/// As [`record`]; `force_width` packs entries in that many bytes (4, 5 or 8) even when fewer
/// would do (the other layouts, for tests).
pub(super) fn record_with<C: Circuit<Scalar>>(
    circuit: C,
    id: &str,
    force_width: Option<u32>,
) -> Result<Pce> {
    if id.is_empty() || id.len() > format::MAX_ID_LEN {
        return Err(Error::invalid(format!(
            "a circuit identifier must have 1..={} bytes, got {}",
            format::MAX_ID_LEN,
            id.len()
        )));
    }
    let mut cs = Cs::assemble(Recorder::new(), circuit).map_err(synthesis_error)?;
    cs.enforce_inputs(cs.num_inputs);
    check_domain(cs.rows)?;
    let Cs(mut recorder) = cs;
    recorder.mark_block();
    recorder.finish(id, force_width)
}

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

/// An error unless `id` can name a recording.
fn check_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > format::MAX_ID_LEN {
        return Err(Error::invalid(format!(
            "a circuit identifier must have 1..={} bytes, got {}",
            format::MAX_ID_LEN,
            id.len()
        )));
    }
    Ok(())
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
    check_id(id)?;
    let cs = Cs::assemble(Recorder::new(), circuit).map_err(synthesis_error)?;
    finish(cs, id, force_width)
}

/// The last rows of a recorded circuit (one `input · 0 = 0` per public input, as direct
/// synthesis adds them), its domain checked, the recording closed.
fn finish(mut cs: Cs<Recorder>, id: &str, force_width: Option<u32>) -> Result<Pce> {
    cs.enforce_inputs(cs.num_inputs);
    check_domain(cs.rows)?;
    let Cs(mut recorder) = cs;
    recorder.mark_block();
    recorder.finish(id, force_width)
}

/// Records a circuit made of a prefix and then `copies` sub-circuits of one structure (each
/// reading the prefix's variables and its own, none another's), from two small instances of
/// it: `prefix` (the prefix alone) and `two` (the prefix and two sub-circuits). The rows of
/// the copies after the second are the second's, with the copy's own variables shifted; the
/// image is the one [`record`] makes of the whole circuit, at the cost of recording two copies.
///
/// The second copy is checked to be the first with its own variables shifted (same rows, same
/// coefficients, the prefix's variables unchanged): a circuit whose copies differ is an error,
/// and the caller records the whole circuit instead.
pub fn record_repeated<P: Circuit<Scalar>, T: Circuit<Scalar>>(
    prefix: P,
    two: T,
    copies: usize,
    id: &str,
) -> Result<Pce> {
    check_id(id)?;
    if copies < 2 {
        return Err(Error::invalid(format!(
            "a repeated recording needs at least two copies, got {copies}"
        )));
    }
    let p = Cs::assemble(Recorder::new(), prefix).map_err(synthesis_error)?;
    let (rows0, aux0, in0) = (p.rows, p.num_aux, p.num_inputs);
    drop(p);
    let mut cs = Cs::assemble(Recorder::new(), two).map_err(synthesis_error)?;
    if let Some(e) = cs.error.take() {
        return Err(e);
    }
    let differ = |what: String| Error::invalid(format!("not a repeated circuit: {what}"));
    let split = |total: usize, before: usize, what: &str| match total.checked_sub(before) {
        Some(d) if d % 2 == 0 && d > 0 => Ok(d / 2),
        _ => Err(differ(format!(
            "{what}: {before} in the prefix, {total} with two copies"
        ))),
    };
    let rows = split(cs.rows, rows0, "constraints")?;
    let aux = split(cs.num_aux, aux0, "private variables")?;
    let inputs = cs.num_inputs.checked_sub(in0).map_or(0, |d| d / 2);
    if cs.num_inputs != in0 + 2 * inputs {
        return Err(differ(format!(
            "public inputs: {in0} in the prefix, {} with two copies",
            cs.num_inputs
        )));
    }
    // The term of copy `k` made from copy 0's term `t`.
    let shift = |t: u64, k: usize| -> Option<u64> {
        let idx = (t & 0xffff_ffff) as usize;
        let moved = match t & INPUT_TAG != 0 {
            true if idx >= in0 => idx.checked_add(k.checked_mul(inputs)?)?,
            false if idx >= aux0 => idx.checked_add(k.checked_mul(aux)?)?,
            _ => idx,
        };
        (moved <= u32::MAX as usize).then_some((t & !0xffff_ffff) | moved as u64)
    };
    // Copy 0's rows of each matrix: each row's length and where its terms start.
    let mut template: Vec<(Vec<u64>, Vec<usize>, Vec<u64>)> = Vec::with_capacity(3);
    for (k, mat) in cs.m.iter().enumerate() {
        let mut lens = Vec::with_capacity(cs.rows);
        let mut pos = 0;
        while pos < mat.lens.len() {
            lens.push(
                format::read_varint(&mat.lens, &mut pos)
                    .ok_or_else(|| differ("an unreadable row length".into()))?,
            );
        }
        let start: u64 = lens[..rows0].iter().sum();
        let one: u64 = lens[rows0..rows0 + rows].iter().sum();
        let (s, e) = (start as usize, (start + one) as usize);
        let (first, second) = (&mat.terms[s..e], &mat.terms[e..]);
        if lens[rows0..rows0 + rows] != lens[rows0 + rows..]
            || first.len() != second.len()
            || first
                .iter()
                .zip(second)
                .any(|(&a, &b)| shift(a, 1) != Some(b))
        {
            return Err(differ(format!(
                "the second copy's {} rows are not the first's",
                b"ABC"[k] as char
            )));
        }
        let lens = lens[rows0..rows0 + rows].to_vec();
        let mut offs = Vec::with_capacity(rows + 1);
        offs.push(0);
        for &n in &lens {
            offs.push(offs.last().copied().unwrap_or(0) + n as usize);
        }
        template.push((lens, offs, first.to_vec()));
    }
    for (mat, (_, _, terms)) in cs.m.iter_mut().zip(&template) {
        mat.terms.reserve(terms.len() * (copies - 2));
    }
    // Row by row, as the sequential recording pushes them, so that block marks fall alike.
    for k in 2..copies {
        for r in 0..rows {
            if cs.rows.is_multiple_of(BLOCK_ROWS as usize) {
                cs.mark_block();
            }
            for (mat, (lens, offs, terms)) in cs.m.iter_mut().zip(&template) {
                for &t in &terms[offs[r]..offs[r + 1]] {
                    match shift(t, k) {
                        Some(v) => mat.terms.push(v),
                        None => {
                            return Err(differ(format!("copy {k}: a variable index past 2^32")))
                        }
                    }
                }
                format::push_varint(&mut mat.lens, lens[r]);
            }
            cs.rows += 1;
        }
        cs.num_aux += aux;
        cs.num_inputs += inputs;
    }
    finish(cs, id, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::ConstraintSystem;

    /// A prefix (an input and an aux variable) and `copies` sub-circuits of `rows` pairs of
    /// constraints each, every one allocating aux variables and an input and reading the
    /// prefix's; with `odd`, copy 3 has one other coefficient.
    struct Repeated {
        copies: usize,
        rows: usize,
        odd: bool,
    }

    impl Circuit<Scalar> for Repeated {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let val = || Ok(Scalar::ONE);
            let x = cs.alloc_input(|| "x", val)?;
            let y = cs.alloc(|| "y", val)?;
            cs.enforce(|| "p", |lc| lc + x, |lc| lc + y, |lc| lc + CS::one());
            for i in 0..self.copies {
                let inp = cs.alloc_input(|| "i", val)?;
                for j in 0..self.rows {
                    let a = cs.alloc(|| "a", val)?;
                    let b = cs.alloc(|| "b", val)?;
                    let k = if self.odd && i == 3 && j == 5 {
                        9
                    } else {
                        4 + j as u64 % 3
                    };
                    cs.enforce(
                        || "c1",
                        |lc| lc + a + (Scalar::from(k), y),
                        |lc| lc + x + b,
                        |lc| lc + inp,
                    );
                    cs.enforce(
                        || "c2",
                        |lc| lc + (Scalar::from(2), b),
                        |lc| lc + CS::one(),
                        |lc| lc + a - y,
                    );
                }
            }
            Ok(())
        }
    }

    /// The repeated recording is the whole circuit's, byte for byte, with block boundaries
    /// (every 4096 rows) inside copies; copies that differ are refused.
    #[test]
    fn a_repeated_recording_is_the_whole_circuits_and_unlike_copies_are_refused() {
        let c = |copies, odd| Repeated {
            copies,
            rows: 1500,
            odd,
        };
        for copies in [2, 3, 9] {
            let whole = record(c(copies, false), "rep").unwrap();
            let rep = record_repeated(c(0, false), c(2, false), copies, "rep").unwrap();
            assert_eq!(rep.num_constraints(), whole.num_constraints());
            assert!(rep.image() == whole.image(), "{copies} copies");
        }
        // Copy 3 differs: the two first copies agree, so only the whole recording can tell;
        // a circuit whose second copy differs from its first is refused.
        let odd_two = Repeated {
            copies: 2,
            rows: 1500,
            odd: true,
        };
        let limited = record_repeated(c(0, false), odd_two, 9, "rep").map(|_| ());
        assert!(
            limited.is_ok(),
            "the odd copy is the fourth, not in the two recorded"
        );
        struct Second;
        impl Circuit<Scalar> for Second {
            fn synthesize<CS: ConstraintSystem<Scalar>>(
                self,
                cs: &mut CS,
            ) -> Result<(), SynthesisError> {
                let x = cs.alloc_input(|| "x", || Ok(Scalar::ONE))?;
                let y = cs.alloc(|| "y", || Ok(Scalar::ONE))?;
                cs.enforce(|| "p", |lc| lc + x, |lc| lc + y, |lc| lc + CS::one());
                for k in [4u64, 5] {
                    let a = cs.alloc(|| "a", || Ok(Scalar::ONE))?;
                    cs.enforce(
                        || "c",
                        |lc| lc + (Scalar::from(k), a),
                        |lc| lc + x,
                        |lc| lc + y,
                    );
                }
                Ok(())
            }
        }
        let refused = |r: Result<Pce>, why: &str| {
            let e = r.map(|_| ()).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        };
        let two = || c(2, false);
        refused(
            record_repeated(c(0, false), Second, 5, "rep"),
            "not a repeated circuit",
        );
        // No identifier, or fewer than two copies.
        refused(
            record_repeated(c(0, false), two(), 5, ""),
            "circuit identifier must have",
        );
        refused(
            record_repeated(c(0, false), two(), 1, "rep"),
            "at least two copies",
        );
        // A prefix that is not the two-copy circuit's beginning.
        refused(
            record_repeated(c(3, false), two(), 5, "rep"),
            "not a repeated circuit",
        );
    }
}

//! The byte image of a recording: the same bytes in memory (after recording) and on disk (memory
//! mapped on load), so a loaded recording is used in place, without decoding.
//!
//! ## Layout (version 1; every integer little-endian, every section 8-byte aligned)
//!
//! ```text
//! header   magic "BLWS-PCE", version u32, header length u32, file length u64,
//!          num_inputs, num_aux, num_constraints, num_coeffs (u64 each),
//!          col_bits u32, entry_bytes u32 (4, 5 or 8), block_rows u32, id length u32,
//!          nnz of A, B, C (u64 each), 10 × (section offset u64, section length u64),
//!          shape digest [32], header check [32], circuit id (UTF-8), zero padding to 8
//! sections coefficients  num_coeffs × 32 bytes, canonical little-endian (ff's to_repr);
//!                        id 0 is 1 and id 1 is −1, always
//!          for A, B, C:  entries  nnz × entry_bytes: column | coefficient id << col_bits
//!                        lengths  per row, its entry count as LEB128 (one byte below 128)
//!                        blocks   (rows / block_rows + 1) × (entry index u64, length-byte
//!                                 index u64) where each block of block_rows rows starts, then
//!                                 the totals
//! ```
//!
//! Columns number the variables as one vector: inputs first (the constant one is column 0), then
//! the aux variables. Within a row, the entries are the non-zero terms of bellpepper's linear
//! combination in its own iteration order (inputs, then aux), exactly the terms direct synthesis
//! evaluates, so densities and values agree term for term.
//!
//! The **shape digest** is SHA-256 over the counts, the packing parameters and every section,
//! each section hashed in 1 MiB chunks in parallel (SHA-256 of the chunk hashes, so a 2^27
//! recording verifies on every core). The **header check** is SHA-256 of the header with that
//! field zeroed; it covers the circuit id, the offsets and the shape digest. Together they cover
//! every byte, so a truncated or corrupted file is refused before use.

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// File magic.
pub const MAGIC: &[u8; 8] = b"BLWS-PCE";
/// Format version this build reads and writes.
pub const VERSION: u32 = 1;
/// Rows per block: the unit of parallel evaluation and of the block index.
pub const BLOCK_ROWS: u32 = 4096;
/// Longest circuit identifier accepted.
pub const MAX_ID_LEN: usize = 255;
/// Number of sections: coefficients, then entries/lengths/blocks for A, B and C.
pub const NUM_SECTIONS: usize = 10;
/// Section index of the coefficient table.
pub const SEC_COEFFS: usize = 0;
/// Section index of matrix `m`'s (0 = A, 1 = B, 2 = C) entries; its lengths and blocks follow.
pub const fn sec_entries(m: usize) -> usize {
    1 + 3 * m
}

const FIXED_HEADER: usize = 8 + 4 + 4 + 8 + 4 * 8 + 4 * 4 + 3 * 8 + NUM_SECTIONS * 16 + 32 + 32;
const CHUNK: usize = 1 << 20;

/// The parsed header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Length of the header in bytes (a multiple of 8).
    pub header_len: u32,
    /// Length of the whole file.
    pub file_len: u64,
    /// Public inputs, the constant one included.
    pub num_inputs: u64,
    /// Private variables.
    pub num_aux: u64,
    /// Rows (constraints, the input constraints included).
    pub num_constraints: u64,
    /// Interned coefficients.
    pub num_coeffs: u64,
    /// Bits of an entry that hold the column.
    pub col_bits: u32,
    /// 4 or 8.
    pub entry_bytes: u32,
    /// Rows per block.
    pub block_rows: u32,
    /// Non-zeros of A, B, C.
    pub nnz: [u64; 3],
    /// (offset, length) of each section.
    pub sections: [(u64, u64); NUM_SECTIONS],
    /// SHA-256 shape digest.
    pub shape_digest: [u8; 32],
    /// SHA-256 of the header with this field zeroed.
    pub header_check: [u8; 32],
    /// Circuit identifier.
    pub id: String,
}

impl Header {
    /// Number of row blocks.
    pub fn num_blocks(&self) -> u64 {
        self.num_constraints.div_ceil(u64::from(self.block_rows))
    }

    /// Serialises the header (its length is `header_len`).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.header_len as usize);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.header_len.to_le_bytes());
        out.extend_from_slice(&self.file_len.to_le_bytes());
        for v in [
            self.num_inputs,
            self.num_aux,
            self.num_constraints,
            self.num_coeffs,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [
            self.col_bits,
            self.entry_bytes,
            self.block_rows,
            self.id.len() as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in self.nnz {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for (off, len) in self.sections {
            out.extend_from_slice(&off.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
        }
        out.extend_from_slice(&self.shape_digest);
        out.extend_from_slice(&self.header_check);
        out.extend_from_slice(self.id.as_bytes());
        out.resize(self.header_len as usize, 0);
        out
    }

    /// Header length for a circuit id of `id_len` bytes.
    pub fn len_for_id(id_len: usize) -> u32 {
        (FIXED_HEADER + id_len).next_multiple_of(8) as u32
    }

    /// SHA-256 of the encoded header with `header_check` zeroed.
    pub fn compute_check(&self) -> [u8; 32] {
        let mut h = self.clone();
        h.header_check = [0; 32];
        Sha256::digest(h.encode()).into()
    }

    /// Parses and checks the header of `bytes` (a whole file): magic, version, lengths, header
    /// check, section bounds. `what` names the file in errors.
    pub fn decode(bytes: &[u8], what: &str) -> Result<Self> {
        let bad = |reason: String| Error::malformed(what, reason);
        if bytes.len() < 16 {
            return Err(bad(format!(
                "truncated: {} bytes, shorter than a recording's header",
                bytes.len()
            )));
        }
        if &bytes[..8] != MAGIC {
            return Err(bad(
                "not a Bellows pre-compiled constraint system (bad magic)".into(),
            ));
        }
        let mut r = Reader { bytes, pos: 8 };
        let version = r.u32();
        if version != VERSION {
            return Err(bad(format!(
                "format version {version}; this build reads version {VERSION} (rebuild it with \
                 `bellows pce build`)"
            )));
        }
        let header_len = r.u32();
        if (header_len as usize) < FIXED_HEADER || !header_len.is_multiple_of(8) {
            return Err(bad(format!("header length {header_len} is impossible")));
        }
        if bytes.len() < header_len as usize {
            return Err(bad(format!(
                "truncated: {} bytes, shorter than its {header_len}-byte header",
                bytes.len()
            )));
        }
        let file_len = r.u64();
        let (num_inputs, num_aux, num_constraints, num_coeffs) =
            (r.u64(), r.u64(), r.u64(), r.u64());
        let (col_bits, entry_bytes, block_rows, id_len) = (r.u32(), r.u32(), r.u32(), r.u32());
        let nnz = [r.u64(), r.u64(), r.u64()];
        let mut sections = [(0u64, 0u64); NUM_SECTIONS];
        for s in &mut sections {
            *s = (r.u64(), r.u64());
        }
        let shape_digest = r.array();
        let header_check = r.array();
        if FIXED_HEADER + id_len as usize > header_len as usize {
            return Err(bad(format!(
                "circuit id length {id_len} overruns the header"
            )));
        }
        let id_bytes = &bytes[FIXED_HEADER..FIXED_HEADER + id_len as usize];
        let h = Header {
            header_len,
            file_len,
            num_inputs,
            num_aux,
            num_constraints,
            num_coeffs,
            col_bits,
            entry_bytes,
            block_rows,
            nnz,
            sections,
            shape_digest,
            header_check,
            id: String::from_utf8_lossy(id_bytes).into_owned(),
        };
        if h.compute_check() != h.header_check {
            return Err(bad("header checksum mismatch: the file is corrupted".into()));
        }
        if bytes.len() as u64 != file_len {
            return Err(bad(format!(
                "{}: the header says {file_len} bytes, the file has {}",
                if (bytes.len() as u64) < file_len {
                    "truncated"
                } else {
                    "trailing bytes"
                },
                bytes.len()
            )));
        }
        h.check_geometry().map_err(bad)?;
        Ok(h)
    }

    /// Consistency of the counts, packing and section bounds (not of the section contents).
    fn check_geometry(&self) -> std::result::Result<(), String> {
        let vars = self
            .num_inputs
            .checked_add(self.num_aux)
            .ok_or("overflow")?;
        if self.num_inputs == 0 {
            return Err("no inputs (the constant one is always input 0)".into());
        }
        if self.num_coeffs < 2 {
            return Err("the coefficient table lacks 1 and −1".into());
        }
        if ![4, 5, 8].contains(&self.entry_bytes) {
            return Err(format!(
                "entry width {} is not 4, 5 or 8 bytes",
                self.entry_bytes
            ));
        }
        if self.col_bits == 0
            || self.col_bits > 32
            || vars > 1u64 << self.col_bits
            || u64::from(self.col_bits) + bits_for(self.num_coeffs) as u64
                > 8 * u64::from(self.entry_bytes)
        {
            return Err(format!(
                "column bits {} do not fit {vars} variables and {} coefficients in {}-byte \
                 entries",
                self.col_bits, self.num_coeffs, self.entry_bytes
            ));
        }
        if self.block_rows == 0 {
            return Err("zero rows per block".into());
        }
        let blocks = self.num_blocks() + 1;
        let block_bytes = blocks.checked_mul(16).ok_or("overflow")?;
        let mut want = [0u64; NUM_SECTIONS];
        want[SEC_COEFFS] = self.num_coeffs.checked_mul(32).ok_or("overflow")?;
        for m in 0..3 {
            want[sec_entries(m)] = self.nnz[m]
                .checked_mul(u64::from(self.entry_bytes))
                .ok_or("overflow")?;
            want[sec_entries(m) + 2] = block_bytes;
        }
        let mut end = u64::from(self.header_len);
        for (i, &(off, len)) in self.sections.iter().enumerate() {
            let is_lengths = i > 0 && (i - 1) % 3 == 1;
            if off % 8 != 0 || off < end || (!is_lengths && len != want[i]) {
                return Err(format!("section {i} is misplaced or has the wrong length"));
            }
            if is_lengths && len < self.num_constraints {
                return Err(format!("section {i} is too short for its rows"));
            }
            end = off.checked_add(len).ok_or("overflow")?;
        }
        if end.next_multiple_of(8) != self.file_len {
            return Err(format!(
                "the sections end at {end}, the file is {} bytes",
                self.file_len
            ));
        }
        Ok(())
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&self.bytes[self.pos..self.pos + N]);
        self.pos += N;
        a
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn array(&mut self) -> [u8; 32] {
        self.take()
    }
}

/// Bits needed to write every value below `n` (at least 1).
pub fn bits_for(n: u64) -> u32 {
    (64 - n.saturating_sub(1).leading_zeros()).max(1)
}

/// The shape digest of a file image whose header fields are already set (see the module docs).
pub fn shape_digest(h: &Header, bytes: &[u8]) -> [u8; 32] {
    let mut outer = Sha256::new();
    outer.update(b"bellows-pce-shape/1");
    for v in [h.num_inputs, h.num_aux, h.num_constraints, h.num_coeffs] {
        outer.update(v.to_le_bytes());
    }
    for v in [h.col_bits, h.entry_bytes, h.block_rows] {
        outer.update(v.to_le_bytes());
    }
    for &(off, len) in &h.sections {
        let sec = &bytes[off as usize..(off + len) as usize];
        outer.update(len.to_le_bytes());
        let chunk_hashes: Vec<[u8; 32]> = sec
            .par_chunks(CHUNK)
            .map(|c| Sha256::digest(c).into())
            .collect();
        for c in &chunk_hashes {
            outer.update(c);
        }
    }
    outer.finalize().into()
}

/// Appends `v` as LEB128.
pub fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 value at `*pos`, advancing it; `None` when malformed or past the end.
#[inline]
pub fn read_varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let first = *bytes.get(*pos)?;
    *pos += 1;
    if first < 0x80 {
        return Some(u64::from(first));
    }
    let mut v = u64::from(first & 0x7f);
    let mut shift = 7;
    loop {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        // The tenth byte (shift 63) may only carry the top bit of a u64.
        if shift > 63 || (shift == 63 && b > 1) {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_garbage() {
        let values = [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX,
        ];
        let mut buf = Vec::new();
        for &v in &values {
            push_varint(&mut buf, v);
        }
        let mut pos = 0;
        for &v in &values {
            assert_eq!(read_varint(&buf, &mut pos), Some(v));
        }
        assert_eq!(pos, buf.len());
        assert_eq!(read_varint(&buf, &mut pos), None, "past the end");
        let mut pos = 0;
        assert_eq!(read_varint(&[0x80, 0x80], &mut pos), None, "unterminated");
        let mut pos = 0;
        assert_eq!(read_varint(&[0xff; 11], &mut pos), None, "too long");
    }

    #[test]
    fn bits_for_counts() {
        assert_eq!(bits_for(0), 1);
        assert_eq!(bits_for(1), 1);
        assert_eq!(bits_for(2), 1);
        assert_eq!(bits_for(3), 2);
        assert_eq!(bits_for(1 << 20), 20);
        assert_eq!(bits_for((1 << 20) + 1), 21);
    }
}

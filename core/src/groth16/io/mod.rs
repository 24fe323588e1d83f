//! bellperson's file formats: parameters, verifying keys, proofs; and public inputs as JSON.
//!
//! **Parameters** (bellperson 0.27 `Parameters::write`), every point uncompressed (G1 96 bytes,
//! G2 192 bytes), every length a big-endian u32:
//!
//! ```text
//! vk:   alpha_g1 beta_g1 beta_g2 gamma_g2 delta_g1 delta_g2 | len | ic[len]   (G1 G1 G2 G2 G1 G2)
//! h:    len | G1[len]      τ^i·Z(τ)/δ, i < n−1
//! l:    len | G1[len]      one per aux variable
//! a:    len | G1[len]      identity points dropped
//! b_g1: len | G1[len]      identity points dropped
//! b_g2: len | G2[len]      identity points dropped
//! ```
//!
//! A **verifying-key file** is the `vk` part alone (bellperson's `VerifyingKey::write`).
//! A **proof** is 192 bytes: compressed A (48) ‖ B (96) ‖ C (48); a proof file may hold several.
//!
//! Reading memory-maps the file, first walks the length fields (so that truncation, a corrupted
//! length or trailing bytes are reported before any point is decoded, and nothing is allocated
//! beyond what the file can hold), then decodes each section in parallel. Points at infinity are
//! rejected in `ic` and the queries, as bellperson does; the six fixed verifying-key points are
//! always fully checked (on the curve and in the subgroup) whatever the [`PointCheck`], since they
//! are few. Every error names the section, the point index and its byte offset.
//!
//! Sizes are checked before anything is allocated: every length field against the bytes that
//! remain, the decoded size against the memory the host has ([`super::limits`]), and a caller
//! that knows its circuit checks the [`ParamsShape`] of a [`ParamsFile`] before decoding it.
//! Parameters are memory-mapped and must be a regular file; verifying keys, proofs and public
//! inputs may also come from a pipe or device, read with a bound (a verifying key: what its IC
//! length announces; proofs: [`super::limits::MAX_PROOFS_PER_FILE`]; inputs: the caller's bound).
//! Writing goes through [`super::output::OutputFile`]: atomic for regular files, straight
//! through for devices and FIFOs.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use blstrs::{G1Affine, G2Affine, Scalar};

pub mod codec;

use super::limits::{self, MAX_PROOFS_PER_FILE};
use super::output::{describe_file_type, OutputFile};
use super::proof::PROOF_BYTES;
use super::{Parameters, Proof, VerifyingKey};
use crate::{Error, Result};
pub use codec::PointCheck;
use codec::UncompressedPoint;

const G1: usize = 96;
const G2: usize = 192;

/// The six fixed verifying-key points, in file order, with their encoded sizes.
const VK_POINTS: [(&str, usize); 6] = [
    ("alpha_g1", G1),
    ("beta_g1", G1),
    ("beta_g2", G2),
    ("gamma_g2", G2),
    ("delta_g1", G1),
    ("delta_g2", G2),
];

/// Bytes of the six fixed verifying-key points.
pub const VK_FIXED_BYTES: usize = 3 * G1 + 3 * G2;

/// A run of `count` points of `size` bytes starting at byte `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Section {
    name: &'static str,
    offset: usize,
    count: usize,
    size: usize,
}

impl Section {
    fn end(&self) -> usize {
        self.offset + self.count * self.size
    }

    fn bytes<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        &data[self.offset..self.end()]
    }

    fn decode<P: UncompressedPoint>(
        &self,
        data: &[u8],
        check: PointCheck,
        label: &str,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<P>> {
        debug_assert_eq!(P::SIZE, self.size);
        let bad = |i: usize, d: codec::PointDefect| Error::InvalidPoint {
            what: format!(
                "{label}: section {}, point {i} (byte offset {})",
                self.name,
                self.offset + i * self.size
            ),
            reason: d.to_string(),
        };
        let bytes = self.bytes(data);
        // The first point is decoded before the section's memory is allocated, so that a file
        // of zeros (a sparse file with a huge length field) fails at once.
        if bytes.len() >= P::SIZE {
            P::decode(&bytes[..P::SIZE], check, false).map_err(|d| bad(0, d))?;
        }
        let identity = P::decode(&identity_encoding(P::SIZE), PointCheck::Full, true)
            .expect("the identity encoding decodes");
        codec::decode_section_with_progress(bytes, check, false, identity, progress)
            .map_err(|(i, d)| bad(i, d))
    }
}

fn identity_encoding(size: usize) -> Vec<u8> {
    let mut v = vec![0u8; size];
    v[0] = 0x40;
    v
}

/// Walks length fields, checking every step against the bytes that remain.
struct Scanner<'a> {
    data: &'a [u8],
    pos: usize,
    label: &'a str,
}

impl<'a> Scanner<'a> {
    fn need(&self, n: usize, what: &str) -> Result<()> {
        let available = self.data.len() - self.pos;
        if available < n {
            return Err(Error::malformed(
                format!("{}: {what}", self.label),
                format!(
                    "truncated: needs {n} bytes at byte offset {}, only {available} available \
                     (the data is {} bytes)",
                    self.pos,
                    self.data.len()
                ),
            ));
        }
        Ok(())
    }

    fn skip(&mut self, n: usize, what: &str) -> Result<usize> {
        self.need(n, what)?;
        self.pos += n;
        Ok(self.pos - n)
    }

    /// A u32 length followed by that many points of `size` bytes.
    fn section(&mut self, name: &'static str, size: usize) -> Result<Section> {
        let at = self.skip(4, &format!("section {name}, length field"))?;
        let count = u32::from_be_bytes(self.data[at..at + 4].try_into().expect("4 bytes")) as usize;
        let available = self.data.len() - self.pos;
        let bytes = count as u128 * size as u128;
        if bytes > available as u128 {
            return Err(Error::malformed(
                format!("{}: section {name}", self.label),
                format!(
                    "the length field at byte offset {at} announces {count} point{} ({bytes} \
                     bytes), but only {available} bytes remain (truncated file or corrupted \
                     length)",
                    if count == 1 { "" } else { "s" }
                ),
            ));
        }
        let s = Section {
            name,
            offset: self.pos,
            count,
            size,
        };
        self.pos = s.end();
        Ok(s)
    }

    fn trailing(&self, after: &str) -> Result<()> {
        let extra = self.data.len() - self.pos;
        if extra != 0 {
            return Err(Error::malformed(
                self.label,
                format!(
                    "{extra} trailing byte{} after {after} (which ends at byte offset {}; the \
                     data is {} bytes)",
                    if extra == 1 { "" } else { "s" },
                    self.pos,
                    self.data.len()
                ),
            ));
        }
        Ok(())
    }
}

/// The verifying-key part: fixed points at offset 0, then the IC section.
fn scan_vk(sc: &mut Scanner<'_>) -> Result<Section> {
    for (name, size) in VK_POINTS {
        sc.skip(size, &format!("verifying key, {name}"))?;
    }
    let ic = sc.section("ic", G1)?;
    if ic.count == 0 {
        return Err(Error::malformed(
            format!("{}: section ic", sc.label),
            "no IC points: a verifying key has at least one (for the constant-one input)",
        ));
    }
    Ok(ic)
}

/// Sections of a whole parameters file.
struct ParamsLayout {
    ic: Section,
    h: Section,
    l: Section,
    a: Section,
    b_g1: Section,
    b_g2: Section,
}

fn scan_params(data: &[u8], label: &str) -> Result<ParamsLayout> {
    let mut sc = Scanner {
        data,
        pos: 0,
        label,
    };
    let ic = scan_vk(&mut sc)?;
    if sc.pos == data.len() {
        return Err(Error::malformed(
            label,
            format!(
                "this is a verifying key file, not a parameters file: it ends right after the \
                 verifying key (byte offset {}); proving needs the whole parameters file (what \
                 `setup --out` writes, not `--vk-out`)",
                sc.pos
            ),
        ));
    }
    let h = sc.section("h", G1)?;
    let l = sc.section("l", G1)?;
    let a = sc.section("a", G1)?;
    let b_g1 = sc.section("b_g1", G1)?;
    let b_g2 = sc.section("b_g2", G2)?;
    sc.trailing("section b_g2")?;
    let vars = ic.count + l.count;
    let shape_err =
        |what: &str, reason: String| Err(Error::malformed(format!("{label}: {what}"), reason));
    if !(h.count + 1).is_power_of_two() {
        return shape_err(
            "section h",
            format!(
                "{} points, but h holds n − 1 points for a power-of-two domain size n",
                h.count
            ),
        );
    }
    if a.count > vars {
        return shape_err(
            "section a",
            format!(
                "{} points, more than the {vars} variables (ic + l)",
                a.count
            ),
        );
    }
    if b_g1.count > vars || b_g1.count != b_g2.count {
        return shape_err(
            "sections b_g1 and b_g2",
            format!(
                "{} and {} points: both must hold the same variables, at most {vars} (ic + l)",
                b_g1.count, b_g2.count
            ),
        );
    }
    Ok(ParamsLayout {
        ic,
        h,
        l,
        a,
        b_g1,
        b_g2,
    })
}

impl ParamsLayout {
    fn shape(&self, file_bytes: u64) -> ParamsShape {
        let decoded = [&self.ic, &self.h, &self.l, &self.a, &self.b_g1, &self.b_g2]
            .iter()
            .map(|s| s.count as u64 * s.size as u64)
            .sum::<u64>();
        ParamsShape {
            domain_size: self.h.count + 1,
            num_inputs: self.ic.count,
            num_aux: self.l.count,
            a_len: self.a.count,
            b_len: self.b_g1.count,
            file_bytes,
            decoded_bytes: decoded + VK_FIXED_BYTES as u64,
        }
    }
}

/// What a parameters file holds, read from its length fields alone (nothing decoded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamsShape {
    /// Domain size n: the h section's length + 1 (a power of two).
    pub domain_size: usize,
    /// Public inputs, the constant one included (the IC length).
    pub num_inputs: usize,
    /// Private variables (the l length).
    pub num_aux: usize,
    /// Points of the a query.
    pub a_len: usize,
    /// Points of each b query.
    pub b_len: usize,
    /// Size of the file.
    pub file_bytes: u64,
    /// Bytes the decoded points occupy in memory (about the file's size).
    pub decoded_bytes: u64,
}

/// A parameters file, memory-mapped and with its layout checked, not yet decoded: check its
/// [`ParamsShape`] against the circuit, then [`ParamsFile::decode`] it.
pub struct ParamsFile {
    map: memmap2::Mmap,
    label: String,
    layout: ParamsLayout,
}

impl std::fmt::Debug for ParamsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamsFile")
            .field("label", &self.label)
            .field("shape", &self.shape())
            .finish()
    }
}

impl ParamsFile {
    /// Maps the parameters file `path` and walks its length fields: truncation, trailing bytes,
    /// a verifying-key file given instead, and impossible section lengths are reported here,
    /// before any point is decoded. `path` must be a regular file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let label = format!("parameters file {}", path.display());
        let (file, len) = open_regular(path, &label, "parameters are memory-mapped")?;
        let map = map_file(&file, len, &label)?;
        let layout = scan_params(&map, &label)?;
        Ok(ParamsFile { map, label, layout })
    }

    /// The file's shape, from its length fields.
    pub fn shape(&self) -> ParamsShape {
        self.layout.shape(self.map.len() as u64)
    }

    /// The label used in messages (`parameters file PATH`).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The file's bytes, as mapped (for a digest of the whole file, say).
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Decodes every point (see the module docs), after checking that the decoded points fit in
    /// the host's available memory.
    pub fn decode(&self, check: PointCheck) -> Result<Parameters> {
        self.decode_with_progress(check, &|_| {})
    }

    /// As [`ParamsFile::decode`], calling `progress(n)` as each run of `n` points is decoded
    /// (from several threads; the calls add up to the number of points in the file).
    pub fn decode_with_progress(
        &self,
        check: PointCheck,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Parameters> {
        limits::check_memory(
            &format!("decoding {}", self.label),
            self.shape().decoded_bytes,
        )?;
        decode_params_layout(&self.map, &self.layout, check, &self.label, progress)
    }
}

/// Decodes the verifying key whose IC section is `ic` (fixed points at offset 0), and refuses a
/// degenerate key ([`VerifyingKey::check_sound`]).
fn decode_vk(
    data: &[u8],
    ic: &Section,
    check: PointCheck,
    label: &str,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<VerifyingKey> {
    let mut at = 0;
    let mut g1s = Vec::with_capacity(3);
    let mut g2s = Vec::with_capacity(3);
    for (name, size) in VK_POINTS {
        let bytes = &data[at..at + size];
        let what = || format!("{label}: verifying key, {name} (byte offset {at})");
        let bad = |d: codec::PointDefect| Error::InvalidPoint {
            what: what(),
            reason: d.to_string(),
        };
        if size == G1 {
            g1s.push(G1Affine::decode(bytes, PointCheck::Full, true).map_err(bad)?);
        } else {
            g2s.push(G2Affine::decode(bytes, PointCheck::Full, true).map_err(bad)?);
        }
        at += size;
    }
    let vk = VerifyingKey {
        alpha_g1: g1s[0],
        beta_g1: g1s[1],
        beta_g2: g2s[0],
        gamma_g2: g2s[1],
        delta_g1: g1s[2],
        delta_g2: g2s[2],
        ic: ic.decode(data, check, label, progress)?,
    };
    vk.check_sound().map_err(|e| match e {
        Error::InvalidPoint { what, reason } => Error::InvalidPoint {
            what: format!("{label}: {what}"),
            reason,
        },
        other => other,
    })?;
    Ok(vk)
}

/// Decodes a whole parameters file held in memory (see the module documentation).
pub fn parameters_from_bytes(bytes: &[u8], check: PointCheck) -> Result<Parameters> {
    let label = "parameters";
    let layout = scan_params(bytes, label)?;
    decode_params_layout(bytes, &layout, check, label, &|_| {})
}

fn decode_params_layout(
    data: &[u8],
    lay: &ParamsLayout,
    check: PointCheck,
    label: &str,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Parameters> {
    let vk = decode_vk(data, &lay.ic, check, label, progress)?;
    if vk.kind() == super::ParamsKind::BenchmarkOnly {
        tracing::warn!("{label}: benchmark-only parameters: proofs made with them do not verify");
    }
    Ok(Parameters {
        vk,
        h: Arc::new(lay.h.decode(data, check, label, progress)?),
        l: Arc::new(lay.l.decode(data, check, label, progress)?),
        a: Arc::new(lay.a.decode(data, check, label, progress)?),
        b_g1: Arc::new(lay.b_g1.decode(data, check, label, progress)?),
        b_g2: Arc::new(lay.b_g2.decode(data, check, label, progress)?),
    })
}

/// Opens `path` for reading and returns it with its metadata; a folder, or a missing file, is
/// an error naming the path.
fn open_input(path: &Path, label: &str) -> Result<(File, std::fs::Metadata)> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(format!("opening {label}"), e))?;
    if meta.is_dir() {
        return Err(Error::invalid(format!("{label} is a folder, not a file")));
    }
    let file = File::open(path).map_err(|e| Error::io(format!("opening {label}"), e))?;
    Ok((file, meta))
}

/// Opens a regular, non-empty file; anything else is refused with `why` (why a regular file is
/// needed).
fn open_regular(path: &Path, label: &str, why: &str) -> Result<(File, u64)> {
    let (file, meta) = open_input(path, label)?;
    if !meta.is_file() {
        return Err(Error::invalid(format!(
            "{label} is {}, not a regular file: {why}, so give a regular file (copy the data \
             to one first)",
            describe_file_type(&meta)
        )));
    }
    if meta.len() == 0 {
        return Err(Error::malformed(label, "the file is empty"));
    }
    Ok((file, meta.len()))
}

/// A read-only memory map of an open, non-empty regular file.
fn map_file(file: &File, len: u64, label: &str) -> Result<memmap2::Mmap> {
    if usize::try_from(len).is_err() {
        return Err(Error::invalid(format!(
            "{label} is {len} bytes, more than this machine can address"
        )));
    }
    // SAFETY: the map is read-only and only read through shared slices. Another process
    // truncating or rewriting the file while it is mapped is outside our control (it can fault
    // or change bytes under us); our own writers never modify a file in place: they write a
    // temporary file and rename it over the old one, which leaves existing maps intact.
    unsafe { memmap2::Mmap::map(file) }.map_err(|e| Error::io(format!("memory-mapping {label}"), e))
}

/// Reads the whole of `path` (a regular file, or a pipe or device) into memory, refusing more
/// than `limit` bytes: a regular file by its size before reading, a stream after `limit` + 1
/// bytes. `label` names the file in messages.
pub fn read_bounded(path: impl AsRef<Path>, label: &str, limit: u64) -> Result<Vec<u8>> {
    let path = path.as_ref();
    let (file, meta) = open_input(path, label)?;
    if meta.is_file() && meta.len() > limit {
        return Err(Error::invalid(format!(
            "{label} is {} bytes, more than the {limit} bytes allowed",
            meta.len()
        )));
    }
    let mut out = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| Error::io(format!("reading {label}"), e))?;
    if out.len() as u64 > limit {
        return Err(Error::invalid(format!(
            "{label} holds more than the {limit} bytes allowed (it is {})",
            describe_file_type(&meta)
        )));
    }
    Ok(out)
}

/// Reads a bellperson parameters file, memory-mapped, decoding sections in parallel (see
/// [`ParamsFile`] to check its shape before decoding).
pub fn read_parameters(path: impl AsRef<Path>, check: PointCheck) -> Result<Parameters> {
    ParamsFile::open(path)?.decode(check)
}

/// Points encoded per write call when writing a large section.
const WRITE_BLOCK: usize = 1 << 14;

fn write_section<P: UncompressedPoint, W: Write>(
    points: &[P],
    name: &str,
    w: &mut W,
) -> Result<()> {
    let len = u32::try_from(points.len()).map_err(|_| {
        Error::invalid(format!(
            "section {name} has {} points; the format allows at most 2^32 − 1",
            points.len()
        ))
    })?;
    let io = |e| Error::io(format!("writing section {name}"), e);
    w.write_all(&len.to_be_bytes()).map_err(io)?;
    let mut buf = vec![0u8; WRITE_BLOCK.min(points.len()) * P::SIZE];
    for block in points.chunks(WRITE_BLOCK) {
        let out = &mut buf[..block.len() * P::SIZE];
        codec::encode_section(block, out);
        w.write_all(out).map_err(io)?;
    }
    Ok(())
}

/// Writes a verifying key in bellperson's `VerifyingKey::write` format.
pub fn write_verifying_key<W: Write>(vk: &VerifyingKey, mut w: W) -> Result<()> {
    let mut fixed = Vec::with_capacity(VK_FIXED_BYTES);
    fixed.extend_from_slice(&vk.alpha_g1.to_uncompressed());
    fixed.extend_from_slice(&vk.beta_g1.to_uncompressed());
    fixed.extend_from_slice(&vk.beta_g2.to_uncompressed());
    fixed.extend_from_slice(&vk.gamma_g2.to_uncompressed());
    fixed.extend_from_slice(&vk.delta_g1.to_uncompressed());
    fixed.extend_from_slice(&vk.delta_g2.to_uncompressed());
    w.write_all(&fixed)
        .map_err(|e| Error::io("writing the verifying key", e))?;
    write_section(&vk.ic, "ic", &mut w)
}

/// Writes parameters in bellperson's `Parameters::write` format.
pub fn write_parameters<W: Write>(params: &Parameters, mut w: W) -> Result<()> {
    write_verifying_key(&params.vk, &mut w)?;
    write_section(&params.h, "h", &mut w)?;
    write_section(&params.l, "l", &mut w)?;
    write_section(&params.a, "a", &mut w)?;
    write_section(&params.b_g1, "b_g1", &mut w)?;
    write_section(&params.b_g2, "b_g2", &mut w)?;
    w.flush().map_err(|e| Error::io("writing parameters", e))
}

/// Writes a parameters file (see [`write_parameters`]) safely: atomically through a temporary
/// file for a regular file, straight through for a device or FIFO ([`OutputFile`]); on failure
/// nothing is lost.
pub fn write_parameters_file(params: &Parameters, path: impl AsRef<Path>) -> Result<()> {
    OutputFile::prepare(path, "parameters file")?.commit(|w| write_parameters(params, w))
}

/// Writes a verifying-key file safely (see [`write_parameters_file`]).
pub fn write_verifying_key_file(vk: &VerifyingKey, path: impl AsRef<Path>) -> Result<()> {
    OutputFile::prepare(path, "verifying key file")?.commit(|w| write_verifying_key(vk, w))
}

/// Decodes a verifying-key file held in memory; its size must match the IC count it declares.
pub fn verifying_key_from_bytes(bytes: &[u8], check: PointCheck) -> Result<VerifyingKey> {
    decode_vk_file(bytes, check, "verifying key")
}

fn decode_vk_file(data: &[u8], check: PointCheck, label: &str) -> Result<VerifyingKey> {
    let mut sc = Scanner {
        data,
        pos: 0,
        label,
    };
    let ic = scan_vk(&mut sc)?;
    if sc.pos != data.len() {
        return Err(Error::malformed(
            label,
            format!(
                "wrong size: a verifying key with {} IC points is {} bytes, the data is {} bytes",
                ic.count,
                sc.pos,
                data.len()
            ),
        ));
    }
    decode_vk(data, &ic, check, label, &|_| {})
}

/// Bytes of a verifying key before its IC points: the six fixed points and the IC length.
const VK_HEAD_BYTES: usize = VK_FIXED_BYTES + 4;

/// Reads a verifying key from a pipe or device: exactly the bytes its IC length announces (after
/// checking that they fit in memory), then one more to tell whether anything follows. Returns
/// the key's bytes and whether more data follows.
fn read_vk_stream(mut r: impl Read, label: &str) -> Result<(Vec<u8>, bool)> {
    let io = |e| Error::io(format!("reading {label}"), e);
    let mut head = Vec::with_capacity(VK_HEAD_BYTES);
    (&mut r)
        .take(VK_HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(io)?;
    if head.is_empty() {
        return Err(Error::malformed(label, "the stream is empty"));
    }
    if head.len() < VK_HEAD_BYTES {
        // Let the scanner name what is missing.
        return Ok((head, false));
    }
    let ic = u32::from_be_bytes(head[VK_FIXED_BYTES..].try_into().expect("4 bytes")) as u64;
    let ic_bytes = ic * G1 as u64;
    limits::check_memory(
        &format!("reading the {ic} IC points announced by {label}"),
        ic_bytes,
    )?;
    let mut data = head;
    (&mut r).take(ic_bytes).read_to_end(&mut data).map_err(io)?;
    let mut more = [0u8; 1];
    let extra = loop {
        match r.read(&mut more) {
            Ok(n) => break n > 0,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        }
    };
    Ok((data, extra))
}

/// Reads a verifying-key file (a regular file, or a pipe or device holding exactly one key).
pub fn read_verifying_key(path: impl AsRef<Path>, check: PointCheck) -> Result<VerifyingKey> {
    let path = path.as_ref();
    let label = format!("verifying key file {}", path.display());
    let (file, meta) = open_input(path, &label)?;
    if !meta.is_file() {
        let (data, extra) = read_vk_stream(file, &label)?;
        let vk = decode_vk_file(&data, check, &label)?;
        if extra {
            return Err(Error::malformed(
                &label,
                format!(
                    "more data follows the verifying key (which ends at byte offset {})",
                    data.len()
                ),
            ));
        }
        return Ok(vk);
    }
    if meta.len() == 0 {
        return Err(Error::malformed(&label, "the file is empty"));
    }
    let map = map_file(&file, meta.len(), &label)?;
    decode_vk_file(&map, check, &label)
}

/// Reads the verifying key from either a verifying-key file or a whole parameters file.
///
/// The kind is told by size: after the verifying key either the file ends (a key file) or the
/// five query sections follow and end exactly at the end of the file (a parameters file, whose
/// query points are then not decoded). Anything else is an error that says both readings failed.
/// From a pipe or device only a verifying key is read (a parameters file must be a regular file).
pub fn read_verifying_key_or_params(
    path: impl AsRef<Path>,
    check: PointCheck,
) -> Result<VerifyingKey> {
    let path = path.as_ref();
    let label = format!("verifying key or parameters file {}", path.display());
    let (file, meta) = open_input(path, &label)?;
    if !meta.is_file() {
        let (data, extra) = read_vk_stream(file, &label)?;
        let vk = decode_vk_file(&data, check, &label)?;
        if extra {
            return Err(Error::invalid(format!(
                "{label} is {} and more data follows its verifying key (which ends at byte \
                 offset {}): a whole parameters file is read only from a regular file",
                describe_file_type(&meta),
                data.len()
            )));
        }
        return Ok(vk);
    }
    if meta.len() == 0 {
        return Err(Error::malformed(&label, "the file is empty"));
    }
    let map = map_file(&file, meta.len(), &label)?;
    let mut sc = Scanner {
        data: &map,
        pos: 0,
        label: &label,
    };
    let ic = scan_vk(&mut sc)?;
    if sc.pos != map.len() {
        let vk_end = sc.pos;
        scan_params(&map, &label).map_err(|e| {
            Error::malformed(
                label.clone(),
                format!(
                    "neither a verifying key file (the key ends at byte offset {vk_end}, the file \
                     is {} bytes) nor a parameters file ({e})",
                    map.len()
                ),
            )
        })?;
    }
    decode_vk(&map, &ic, check, &label, &|_| {})
}

/// Decodes one or more concatenated 192-byte proofs (at most
/// [`MAX_PROOFS_PER_FILE`](super::limits::MAX_PROOFS_PER_FILE)).
pub fn proofs_from_bytes(bytes: &[u8]) -> Result<Vec<Proof>> {
    decode_proofs(bytes, bytes.len() as u64, "proof data")
}

fn wrong_proof_size(label: &str, len: u64) -> Error {
    Error::malformed(
        label,
        format!(
            "wrong size: {len} bytes is not a positive multiple of {PROOF_BYTES} (one proof is \
             compressed A ‖ B ‖ C = 48 + 96 + 48 bytes)"
        ),
    )
}

fn too_many_proofs(label: &str, what: String) -> Error {
    Error::invalid(format!(
        "{label} holds {what}: more than the {MAX_PROOFS_PER_FILE} proofs a proof file may hold"
    ))
}

/// Decodes the proofs read from `r`, 192 bytes at a time, so that a stream of garbage fails at
/// its first proof and a long one at the limit. `total` is the size when known (for messages).
fn decode_proofs_from(mut r: impl Read, total: Option<u64>, label: &str) -> Result<Vec<Proof>> {
    if let Some(len) = total {
        if len == 0 || len % PROOF_BYTES as u64 != 0 {
            return Err(wrong_proof_size(label, len));
        }
        if len / PROOF_BYTES as u64 > MAX_PROOFS_PER_FILE as u64 {
            return Err(too_many_proofs(
                label,
                format!("{} proofs", len / PROOF_BYTES as u64),
            ));
        }
    }
    let many = total.is_none_or(|t| t > PROOF_BYTES as u64);
    let mut proofs = Vec::new();
    let mut buf = [0u8; PROOF_BYTES];
    let mut read_total = 0u64;
    loop {
        let mut filled = 0;
        while filled < PROOF_BYTES {
            match r.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(format!("reading {label}"), e)),
            }
        }
        read_total += filled as u64;
        if filled == 0 {
            break;
        }
        if filled < PROOF_BYTES {
            return Err(wrong_proof_size(label, read_total));
        }
        let i = proofs.len();
        if i == MAX_PROOFS_PER_FILE {
            return Err(too_many_proofs(label, "more proofs".into()));
        }
        proofs.push(Proof::from_bytes(&buf).map_err(|e| {
            let prefix = if many {
                format!("{label}, proof {i}")
            } else {
                label.to_string()
            };
            match e {
                Error::InvalidPoint { what, reason } => Error::InvalidPoint {
                    what: format!("{prefix}: {what}"),
                    reason,
                },
                other => Error::malformed(prefix, other.to_string()),
            }
        })?);
    }
    if proofs.is_empty() {
        return Err(wrong_proof_size(label, 0));
    }
    Ok(proofs)
}

fn decode_proofs(bytes: &[u8], len: u64, label: &str) -> Result<Vec<Proof>> {
    decode_proofs_from(bytes, Some(len), label)
}

/// Reads a file (or a pipe or device) holding exactly one 192-byte proof.
pub fn read_proof(path: impl AsRef<Path>) -> Result<Proof> {
    let path = path.as_ref();
    let label = format!("proof file {}", path.display());
    let (file, meta) = open_input(path, &label)?;
    let mut bytes = Vec::with_capacity(PROOF_BYTES + 1);
    file.take(PROOF_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(format!("reading {label}"), e))?;
    let size = if meta.is_file() {
        meta.len().to_string()
    } else if bytes.len() > PROOF_BYTES {
        format!("more than {PROOF_BYTES}")
    } else {
        bytes.len().to_string()
    };
    if bytes.len() != PROOF_BYTES || (meta.is_file() && meta.len() != PROOF_BYTES as u64) {
        let several = meta.is_file()
            && meta.len() > PROOF_BYTES as u64
            && meta.len() % PROOF_BYTES as u64 == 0;
        return Err(Error::malformed(
            label,
            format!(
                "wrong size: expected {PROOF_BYTES} bytes (compressed A ‖ B ‖ C), got {size}{}",
                if several {
                    " (several proofs? read them with read_proofs)"
                } else {
                    ""
                }
            ),
        ));
    }
    Ok(decode_proofs(&bytes, PROOF_BYTES as u64, &label)?.remove(0))
}

/// Reads a file (or a pipe or device) of one or more concatenated 192-byte proofs, at most
/// [`MAX_PROOFS_PER_FILE`](super::limits::MAX_PROOFS_PER_FILE).
pub fn read_proofs(path: impl AsRef<Path>) -> Result<Vec<Proof>> {
    let path = path.as_ref();
    let label = format!("proof file {}", path.display());
    let (file, meta) = open_input(path, &label)?;
    let total = meta.is_file().then_some(meta.len());
    decode_proofs_from(std::io::BufReader::new(file), total, &label)
}

/// Writes one proof (192 bytes).
pub fn write_proof<W: Write>(proof: &Proof, mut w: W) -> Result<()> {
    w.write_all(&proof.to_bytes())
        .map_err(|e| Error::io("writing a proof", e))
}

/// Writes proofs, concatenated, to a file safely (see [`write_parameters_file`]).
pub fn write_proofs_file(proofs: &[Proof], path: impl AsRef<Path>) -> Result<()> {
    OutputFile::prepare(path, "proof file")?
        .commit(|w| proofs.iter().try_for_each(|p| write_proof(p, &mut *w)))
}

/// Parses public inputs: a JSON array of decimal strings, each a field element (< r).
///
/// The constant-one input is not listed. Numbers must be quoted (a JSON number cannot hold a
/// 255-bit value exactly); only ASCII digits are accepted (no sign, no hex, no spaces).
pub fn parse_public_inputs_json(text: &str) -> Result<Vec<Scalar>> {
    let text = strip_bom(text);
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::malformed("public inputs JSON", format!("not valid JSON: {e}")))?;
    let items = match value {
        serde_json::Value::Array(items) => items,
        other => {
            return Err(Error::malformed(
                "public inputs JSON",
                format!(
                    "expected an array of decimal strings, got {}",
                    json_kind(&other)
                ),
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let s = v.as_str().ok_or_else(|| {
                Error::malformed(
                    format!("public input {i}"),
                    format!(
                        "expected a decimal string such as \"5\", got {} (numbers must be \
                         quoted: JSON numbers cannot hold field elements exactly)",
                        json_kind(v)
                    ),
                )
            })?;
            codec::scalar_from_decimal(s).map_err(|e| {
                Error::malformed(format!("public input {i} ({})", shorten(s)), e.to_string())
            })
        })
        .collect()
}

/// A UTF-8 byte-order mark some editors put at the start of a file, which JSON does not allow.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Most bytes a public-inputs file read by [`read_public_inputs_json`] may have (1 MiB: some
/// 12 000 field elements).
pub const MAX_INPUTS_FILE_BYTES: u64 = 1 << 20;

/// Public inputs from JSON bytes, with a message that names the file when it is not UTF-8.
pub fn inputs_text<'a>(bytes: &'a [u8], label: &str) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| {
        Error::malformed(
            label,
            format!(
                "not UTF-8 text (byte offset {}): public inputs are JSON",
                e.valid_up_to()
            ),
        )
    })
}

/// Reads public inputs from a JSON file, at most [`MAX_INPUTS_FILE_BYTES`] (see
/// [`parse_public_inputs_json`]).
pub fn read_public_inputs_json(path: impl AsRef<Path>) -> Result<Vec<Scalar>> {
    let path = path.as_ref();
    let label = format!("public inputs file {}", path.display());
    let bytes = read_bounded(path, &label, MAX_INPUTS_FILE_BYTES)?;
    let text = inputs_text(&bytes, &label)?;
    parse_public_inputs_json(text).map_err(|e| match e {
        Error::Malformed { what, reason } => {
            Error::malformed(format!("{what} in {}", path.display()), reason)
        }
        other => other,
    })
}

/// Formats public inputs as a JSON array of decimal strings (the inverse of
/// [`parse_public_inputs_json`]).
pub fn format_public_inputs_json(inputs: &[Scalar]) -> String {
    let strings: Vec<String> = inputs.iter().map(codec::scalar_to_decimal).collect();
    serde_json::to_string(&strings).expect("a list of strings always serialises")
}

fn json_kind(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "null".into(),
        serde_json::Value::Bool(b) => format!("the boolean {b}"),
        serde_json::Value::Number(n) => format!("the number {n}"),
        serde_json::Value::String(s) => format!("the string {}", shorten(s)),
        serde_json::Value::Array(_) => "an array".into(),
        serde_json::Value::Object(_) => "an object".into(),
    }
}

/// Quotes a value for an error message, cut to a readable length.
fn shorten(s: &str) -> String {
    const MAX: usize = 100;
    if s.chars().count() <= MAX {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head:?}… ({} characters)", s.chars().count())
    }
}

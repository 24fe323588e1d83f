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

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use blstrs::{G1Affine, G2Affine, Scalar};

pub use super::encoding::PointCheck;
use super::encoding::{self, UncompressedPoint};
use super::proof::PROOF_BYTES;
use super::{Parameters, Proof, VerifyingKey};
use crate::{Error, Result};

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
    ) -> Result<Vec<P>> {
        debug_assert_eq!(P::SIZE, self.size);
        let identity = P::decode(&identity_encoding(P::SIZE), PointCheck::Full, true)
            .expect("the identity encoding decodes");
        encoding::decode_section(self.bytes(data), check, false, identity).map_err(|(i, d)| {
            Error::InvalidPoint {
                what: format!(
                    "{label}: section {}, point {i} (byte offset {})",
                    self.name,
                    self.offset + i * self.size
                ),
                reason: d.to_string(),
            }
        })
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

/// Decodes the verifying key whose IC section is `ic` (fixed points at offset 0).
fn decode_vk(data: &[u8], ic: &Section, check: PointCheck, label: &str) -> Result<VerifyingKey> {
    let mut at = 0;
    let mut g1s = Vec::with_capacity(3);
    let mut g2s = Vec::with_capacity(3);
    for (name, size) in VK_POINTS {
        let bytes = &data[at..at + size];
        let what = || format!("{label}: verifying key, {name} (byte offset {at})");
        let bad = |d: encoding::PointDefect| Error::InvalidPoint {
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
    Ok(VerifyingKey {
        alpha_g1: g1s[0],
        beta_g1: g1s[1],
        beta_g2: g2s[0],
        gamma_g2: g2s[1],
        delta_g1: g1s[2],
        delta_g2: g2s[2],
        ic: ic.decode(data, check, label)?,
    })
}

/// Decodes a whole parameters file held in memory (see the module documentation).
pub fn parameters_from_bytes(bytes: &[u8], check: PointCheck) -> Result<Parameters> {
    decode_params(bytes, check, "parameters")
}

fn decode_params(data: &[u8], check: PointCheck, label: &str) -> Result<Parameters> {
    let lay = scan_params(data, label)?;
    let vk = decode_vk(data, &lay.ic, check, label)?;
    if vk.kind() == super::ParamsKind::BenchmarkOnly {
        tracing::warn!("{label}: benchmark-only parameters: proofs made with them do not verify");
    }
    Ok(Parameters {
        vk,
        h: Arc::new(lay.h.decode(data, check, label)?),
        l: Arc::new(lay.l.decode(data, check, label)?),
        a: Arc::new(lay.a.decode(data, check, label)?),
        b_g1: Arc::new(lay.b_g1.decode(data, check, label)?),
        b_g2: Arc::new(lay.b_g2.decode(data, check, label)?),
    })
}

/// A read-only memory map of a non-empty file.
fn map_file(path: &Path, label: &str) -> Result<memmap2::Mmap> {
    let file = File::open(path).map_err(|e| Error::io(format!("opening {label}"), e))?;
    let len = file
        .metadata()
        .map_err(|e| Error::io(format!("reading the size of {label}"), e))?
        .len();
    if len == 0 {
        return Err(Error::malformed(label, "the file is empty"));
    }
    // SAFETY: the map is read-only and only read through shared slices. Another process
    // truncating or rewriting the file while it is mapped is outside our control (it can fault
    // or change bytes under us); our own writers never modify a file in place: they write a
    // temporary file and rename it over the old one, which leaves existing maps intact.
    unsafe { memmap2::Mmap::map(&file) }
        .map_err(|e| Error::io(format!("memory-mapping {label}"), e))
}

/// Reads a bellperson parameters file, memory-mapped, decoding sections in parallel.
pub fn read_parameters(path: impl AsRef<Path>, check: PointCheck) -> Result<Parameters> {
    let path = path.as_ref();
    let label = format!("parameters file {}", path.display());
    let map = map_file(path, &label)?;
    decode_params(&map, check, &label)
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
        encoding::encode_section(block, out);
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

/// Writes `path` through a temporary file in the same folder, renamed over `path` when complete:
/// a failure leaves any previous file untouched and no partial file behind.
fn write_atomically(
    path: &Path,
    what: &str,
    f: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| Error::invalid(format!("{}: not a file path", path.display())))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let ctx = |step: &str| format!("{step} {what} {}", path.display());
    let result = (|| {
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| Error::io(ctx("creating a temporary file for"), e))?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        f(&mut w)?;
        let file = w
            .into_inner()
            .map_err(|e| Error::io(ctx("writing"), e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(ctx("syncing"), e))?;
        std::fs::rename(&tmp, path).map_err(|e| Error::io(ctx("renaming the temporary file to"), e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes a parameters file (see [`write_parameters`]) atomically: to a temporary file in the same
/// folder, then renamed; on failure nothing is lost.
pub fn write_parameters_file(params: &Parameters, path: impl AsRef<Path>) -> Result<()> {
    write_atomically(path.as_ref(), "parameters file", |w| {
        write_parameters(params, w)
    })
}

/// Writes a verifying-key file atomically (see [`write_parameters_file`]).
pub fn write_verifying_key_file(vk: &VerifyingKey, path: impl AsRef<Path>) -> Result<()> {
    write_atomically(path.as_ref(), "verifying key file", |w| {
        write_verifying_key(vk, w)
    })
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
    decode_vk(data, &ic, check, label)
}

/// Reads a verifying-key file.
pub fn read_verifying_key(path: impl AsRef<Path>, check: PointCheck) -> Result<VerifyingKey> {
    let path = path.as_ref();
    let label = format!("verifying key file {}", path.display());
    let map = map_file(path, &label)?;
    decode_vk_file(&map, check, &label)
}

/// Reads the verifying key from either a verifying-key file or a whole parameters file.
///
/// The kind is told by size: after the verifying key either the file ends (a key file) or the
/// five query sections follow and end exactly at the end of the file (a parameters file, whose
/// query points are then not decoded). Anything else is an error that says both readings failed.
pub fn read_verifying_key_or_params(
    path: impl AsRef<Path>,
    check: PointCheck,
) -> Result<VerifyingKey> {
    let path = path.as_ref();
    let label = format!("verifying key or parameters file {}", path.display());
    let map = map_file(path, &label)?;
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
    decode_vk(&map, &ic, check, &label)
}

/// Decodes one or more concatenated 192-byte proofs.
pub fn proofs_from_bytes(bytes: &[u8]) -> Result<Vec<Proof>> {
    decode_proofs(bytes, "proof data")
}

fn decode_proofs(bytes: &[u8], label: &str) -> Result<Vec<Proof>> {
    if bytes.is_empty() || bytes.len() % PROOF_BYTES != 0 {
        return Err(Error::malformed(
            label,
            format!(
                "wrong size: {} bytes is not a positive multiple of {PROOF_BYTES} (one proof is \
                 compressed A ‖ B ‖ C = 48 + 96 + 48 bytes)",
                bytes.len()
            ),
        ));
    }
    let many = bytes.len() > PROOF_BYTES;
    bytes
        .chunks_exact(PROOF_BYTES)
        .enumerate()
        .map(|(i, b)| {
            Proof::from_bytes(b).map_err(|e| {
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
            })
        })
        .collect()
}

/// Reads a file holding exactly one 192-byte proof.
pub fn read_proof(path: impl AsRef<Path>) -> Result<Proof> {
    let path = path.as_ref();
    let label = format!("proof file {}", path.display());
    let bytes = std::fs::read(path).map_err(|e| Error::io(format!("reading {label}"), e))?;
    if bytes.len() != PROOF_BYTES {
        return Err(Error::malformed(
            label,
            format!(
                "wrong size: expected {PROOF_BYTES} bytes (compressed A ‖ B ‖ C), got {}{}",
                bytes.len(),
                if bytes.len() > PROOF_BYTES && bytes.len() % PROOF_BYTES == 0 {
                    " (several proofs? read them with read_proofs)"
                } else {
                    ""
                }
            ),
        ));
    }
    Ok(decode_proofs(&bytes, &label)?.remove(0))
}

/// Reads a file of one or more concatenated 192-byte proofs.
pub fn read_proofs(path: impl AsRef<Path>) -> Result<Vec<Proof>> {
    let path = path.as_ref();
    let label = format!("proof file {}", path.display());
    let bytes = std::fs::read(path).map_err(|e| Error::io(format!("reading {label}"), e))?;
    decode_proofs(&bytes, &label)
}

/// Writes one proof (192 bytes).
pub fn write_proof<W: Write>(proof: &Proof, mut w: W) -> Result<()> {
    w.write_all(&proof.to_bytes())
        .map_err(|e| Error::io("writing a proof", e))
}

/// Writes proofs, concatenated, to a file atomically (see [`write_parameters_file`]).
pub fn write_proofs_file(proofs: &[Proof], path: impl AsRef<Path>) -> Result<()> {
    write_atomically(path.as_ref(), "proof file", |w| {
        proofs.iter().try_for_each(|p| write_proof(p, &mut *w))
    })
}

/// Parses public inputs: a JSON array of decimal strings, each a field element (< r).
///
/// The constant-one input is not listed. Numbers must be quoted (a JSON number cannot hold a
/// 255-bit value exactly); only ASCII digits are accepted (no sign, no hex, no spaces).
pub fn parse_public_inputs_json(text: &str) -> Result<Vec<Scalar>> {
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
            encoding::scalar_from_decimal(s).map_err(|e| {
                Error::malformed(format!("public input {i} ({})", shorten(s)), e.to_string())
            })
        })
        .collect()
}

/// Reads public inputs from a JSON file (see [`parse_public_inputs_json`]).
pub fn read_public_inputs_json(path: impl AsRef<Path>) -> Result<Vec<Scalar>> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading public inputs file {}", path.display()), e))?;
    parse_public_inputs_json(&text).map_err(|e| match e {
        Error::Malformed { what, reason } => {
            Error::malformed(format!("{what} in {}", path.display()), reason)
        }
        other => other,
    })
}

/// Formats public inputs as a JSON array of decimal strings (the inverse of
/// [`parse_public_inputs_json`]).
pub fn format_public_inputs_json(inputs: &[Scalar]) -> String {
    let strings: Vec<String> = inputs.iter().map(encoding::scalar_to_decimal).collect();
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

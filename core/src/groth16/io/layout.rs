//! Where everything lies in a parameters or verifying-key file: the sections, found by walking
//! the length fields against the bytes that remain, before any point is decoded; and the
//! decoding of one section.

use super::codec::{self, PointCheck, UncompressedPoint};
use super::source::Source;
use crate::{Error, Result};

/// Bytes of an uncompressed G1 point.
pub(super) const G1: usize = 96;
/// Bytes of an uncompressed G2 point.
pub(super) const G2: usize = 192;

/// The six fixed verifying-key points, in file order, with their encoded sizes.
pub(super) const VK_POINTS: [(&str, usize); 6] = [
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
pub(super) struct Section {
    pub(super) name: &'static str,
    pub(super) offset: usize,
    pub(super) count: usize,
    pub(super) size: usize,
}

impl Section {
    pub(super) fn end(&self) -> usize {
        self.offset + self.count * self.size
    }

    /// Reads and decodes the section's points from `src` in pieces (each decoded on every
    /// core), with `check`; `Batched` tests the subgroup of the whole section at once at the
    /// end. Errors name `label`, the section, the point and its byte offset. Whether `src`
    /// changed meanwhile is the caller's check, once its reading is done.
    pub(super) fn decode<P: UncompressedPoint>(
        &self,
        src: &dyn Source,
        check: PointCheck,
        label: &str,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<P>> {
        debug_assert_eq!(P::SIZE, self.size);
        let bad = |i: usize, d: codec::PointDefect| self.refused(label, i, d);
        let what = format!("section {}", self.name);
        // The first point is decoded before the section's memory is allocated, so that a file
        // of zeros (a sparse file with a huge length field) fails at once.
        self.check_first::<P>(src, check, label)?;
        let identity = P::decode(&identity_encoding(P::SIZE), PointCheck::Full, true)
            .expect("the identity encoding decodes");
        // `Batched`: on the curve point by point, then the subgroup for the whole section.
        let (point_check, batched) = match check {
            PointCheck::Batched => (PointCheck::CurveOnly, true),
            other => (other, false),
        };
        let mut out = crate::page_advice::filled(identity, self.count);
        let mut done = 0;
        src.pieces(
            self.offset as u64,
            (self.count * self.size) as u64,
            P::SIZE,
            &what,
            &mut |piece| {
                let n = piece.len() / P::SIZE;
                codec::decode_into(
                    piece,
                    &mut out[done..done + n],
                    point_check,
                    false,
                    progress,
                )
                .map_err(|(i, d)| bad(done + i, d))?;
                done += n;
                Ok(())
            },
        )?;
        if batched {
            if let Some((_, i)) = crate::groth16::subgroup::first_outside(&[&out[..]]) {
                return Err(bad(i, codec::PointDefect::NotInSubgroup));
            }
        }
        Ok(out)
    }
}

impl Section {
    /// The error for point `i` of this section, refused for `defect`: names `label`, the
    /// section, the point and its byte offset.
    pub(super) fn refused(&self, label: &str, i: usize, defect: codec::PointDefect) -> Error {
        Error::InvalidPoint {
            what: format!(
                "{label}: section {}, point {i} (byte offset {})",
                self.name,
                self.offset + i * self.size
            ),
            reason: defect.to_string(),
        }
    }

    /// Decodes the section's first point (if any) with `check`, the identity refused: a few
    /// bytes that refuse a file of zeros (a sparse file with a huge length field) before the
    /// section's memory is allocated or its bytes read.
    pub(super) fn check_first<P: UncompressedPoint>(
        &self,
        src: &dyn Source,
        check: PointCheck,
        label: &str,
    ) -> Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        let mut first = vec![0u8; P::SIZE];
        src.read_at(
            &mut first,
            self.offset as u64,
            &format!("section {}", self.name),
        )?;
        P::decode(&first, check, false)
            .map(|_| ())
            .map_err(|d| self.refused(label, 0, d))
    }
}

fn identity_encoding(size: usize) -> Vec<u8> {
    let mut v = vec![0u8; size];
    v[0] = 0x40;
    v
}

/// Walks length fields, checking every step against the bytes that remain.
pub(super) struct Scanner<'a> {
    src: &'a dyn Source,
    /// The length of `src`.
    pub(super) len: usize,
    pub(super) pos: usize,
    pub(super) label: &'a str,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `src`, which `label` names in messages.
    pub(super) fn new(src: &'a dyn Source, label: &'a str) -> Self {
        Scanner {
            src,
            len: usize::try_from(src.len()).unwrap_or(usize::MAX),
            pos: 0,
            label,
        }
    }

    fn need(&self, n: usize, what: &str) -> Result<()> {
        let available = self.len - self.pos;
        if available < n {
            return Err(Error::malformed(
                format!("{}: {what}", self.label),
                format!(
                    "truncated: needs {n} bytes at byte offset {}, only {available} available \
                     (the data is {} bytes)",
                    self.pos, self.len
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
        let what = format!("section {name}, length field");
        let at = self.skip(4, &what)?;
        let mut field = [0u8; 4];
        self.src.read_at(&mut field, at as u64, &what)?;
        let count = u32::from_be_bytes(field) as usize;
        let available = self.len - self.pos;
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
        let extra = self.len - self.pos;
        if extra != 0 {
            return Err(Error::malformed(
                self.label,
                format!(
                    "{extra} trailing byte{} after {after} (which ends at byte offset {}; the \
                     data is {} bytes)",
                    if extra == 1 { "" } else { "s" },
                    self.pos,
                    self.len
                ),
            ));
        }
        Ok(())
    }
}

/// The verifying-key part: fixed points at offset 0, then the IC section.
pub(super) fn scan_vk(sc: &mut Scanner<'_>) -> Result<Section> {
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
pub(super) struct ParamsLayout {
    pub(super) ic: Section,
    pub(super) h: Section,
    pub(super) l: Section,
    pub(super) a: Section,
    pub(super) b_g1: Section,
    pub(super) b_g2: Section,
}

/// Walks the length fields of a whole parameters file in `src`.
pub(super) fn scan_params(src: &dyn Source, label: &str) -> Result<ParamsLayout> {
    let mut sc = Scanner::new(src, label);
    let ic = scan_vk(&mut sc)?;
    if sc.pos == sc.len {
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
    pub(super) fn shape(&self, file_bytes: u64) -> ParamsShape {
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

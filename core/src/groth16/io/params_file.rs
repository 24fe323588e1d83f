//! Whole parameters files: opened, their layout walked from the length fields, then decoded all
//! at once or one section at a time, every byte read with positional reads ([`super::source`]).

use std::path::Path;
use std::sync::Arc;

use blstrs::{G1Affine, G2Affine};

use super::codec::{PointCheck, PointDefect, UncompressedPoint};
use super::files::open_regular;
use super::layout::{scan_params, ParamsLayout, ParamsShape, Section};
use super::source::{FileSource, FileVersion, Memory, Source};
use super::vk::decode_vk;
use crate::backend::EncodedPoints;
use crate::groth16::{limits, Parameters, ParamsKind, VerifyingKey};
use crate::{Error, Result};

/// A parameters file, open and with its layout checked, not yet decoded: check its
/// [`ParamsShape`] against the circuit, then [`ParamsFile::decode`] it.
///
/// The file is read with positional reads into memory the process owns, never mapped: a file
/// truncated while it is read is an error naming the byte where it ended, and one rewritten in
/// place is found by its [`FileVersion`] after each section (see [`super::source`]).
pub struct ParamsFile {
    src: FileSource,
    layout: ParamsLayout,
}

impl std::fmt::Debug for ParamsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamsFile")
            .field("label", &self.label())
            .field("shape", &self.shape())
            .finish()
    }
}

impl ParamsFile {
    /// Opens the parameters file `path` and walks its length fields (a few small reads):
    /// truncation, trailing bytes, a verifying-key file given instead, and impossible section
    /// lengths are reported here, before any point is decoded. `path` must be a regular file (a
    /// FIFO or a device is refused without waiting on it).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let label = format!("parameters file {}", path.display());
        let (file, meta) = open_regular(path, &label, "parameters are read at their offsets")?;
        if meta.len() == 0 {
            return Err(Error::malformed(&label, "the file is empty"));
        }
        let src = FileSource::new(file, &meta, label);
        let layout = scan_params(&src, src.label())?;
        Ok(ParamsFile { src, layout })
    }

    /// The file's shape, from its length fields.
    pub fn shape(&self) -> ParamsShape {
        self.layout.shape(self.src.len())
    }

    /// The label used in messages (`parameters file PATH`).
    pub fn label(&self) -> &str {
        self.src.label()
    }

    /// The version of the file that was opened (what every later read is checked against).
    pub fn version(&self) -> FileVersion {
        self.src.version()
    }

    /// Decodes the first point of every section, with curve checks: a few small reads that
    /// refuse a file of zeros (a sparse file with plausible lengths) or of another format
    /// before anything large is read, hashed or allocated.
    pub fn check_first_points(&self) -> Result<()> {
        let l = &self.layout;
        for s in [&l.ic, &l.h, &l.l, &l.a, &l.b_g1] {
            first_point::<G1Affine>(&self.src, s, self.label())?;
        }
        first_point::<G2Affine>(&self.src, &l.b_g2, self.label())
    }

    /// Calls `f` on the whole file's bytes, in order, in pieces of up to 64 MiB (for a digest of
    /// the file, say); an error if the file is truncated or changes meanwhile.
    pub fn for_each_piece(&self, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        self.src
            .pieces(0, self.src.len(), 1, "the file", &mut |piece| {
                f(piece);
                Ok(())
            })?;
        self.src.check_unchanged()
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
            &format!("decoding {}", self.label()),
            self.shape().decoded_bytes,
        )?;
        let params = decode_params_layout(&self.src, &self.layout, check, self.label(), progress)?;
        self.src.check_unchanged()?;
        Ok(params)
    }

    /// An error if the file changed since it was opened (see [`FileVersion`]); every method
    /// that decodes checks this once its reading is done.
    pub fn check_unchanged(&self) -> Result<()> {
        self.src.check_unchanged()
    }
}

/// Decodes the first point of `s` (if any) with curve checks.
fn first_point<P: UncompressedPoint>(src: &dyn Source, s: &Section, label: &str) -> Result<()> {
    s.check_first::<P>(src, PointCheck::CurveOnly, label)
}

/// The point sections of a parameters file after the verifying key, in the file's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamsSection {
    /// `h`: the quotient's bases (G1).
    H,
    /// `l`: the aux variables' bases (G1).
    L,
    /// `a`: the A query (G1).
    A,
    /// `b_g1`: the B query in G1.
    BG1,
    /// `b_g2`: the B query in G2.
    BG2,
}

impl ParamsFile {
    fn section_of(&self, which: ParamsSection) -> &Section {
        let l = &self.layout;
        match which {
            ParamsSection::H => &l.h,
            ParamsSection::L => &l.l,
            ParamsSection::A => &l.a,
            ParamsSection::BG1 => &l.b_g1,
            ParamsSection::BG2 => &l.b_g2,
        }
    }

    /// Decodes the verifying key alone (its IC points with `check`).
    pub fn decode_verifying_key(&self, check: PointCheck) -> Result<VerifyingKey> {
        let vk = decode_vk(&self.src, &self.layout.ic, check, self.label(), &|_| {})?;
        self.src.check_unchanged()?;
        Ok(vk)
    }

    /// Decodes one G1 section (`H`, `L`, `A` or `BG1`) with `check`, without the others: a
    /// loader that hands each section to a device and drops it holds one section at a time.
    pub fn decode_g1(
        &self,
        which: ParamsSection,
        check: PointCheck,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<G1Affine>> {
        if which == ParamsSection::BG2 {
            return Err(Error::invalid("internal error: b_g2 is a G2 section"));
        }
        self.decode_section(self.section_of(which), check, progress)
    }

    /// Decodes the G2 section b_g2 with `check` (see [`ParamsFile::decode_g1`]).
    pub fn decode_b_g2(
        &self,
        check: PointCheck,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<G2Affine>> {
        self.decode_section(&self.layout.b_g2, check, progress)
    }

    /// Section `which`'s points as the file encodes them, for a backend that decodes them
    /// itself ([`crate::backend::Msm::load_bases_g1_encoded`]), after its first point was
    /// decoded here with curve checks (a file of zeros fails before anything large is read).
    /// `progress(n)` is called as runs of n points are read. Whether the file changed is the
    /// caller's check once the backend is done ([`ParamsFile::check_unchanged`]).
    pub fn encoded<'a>(
        &'a self,
        which: ParamsSection,
        progress: &'a (dyn Fn(u64) + Sync),
    ) -> Result<EncodedSection<'a>> {
        let section = *self.section_of(which);
        match which {
            ParamsSection::BG2 => first_point::<G2Affine>(&self.src, &section, self.label())?,
            _ => first_point::<G1Affine>(&self.src, &section, self.label())?,
        }
        Ok(EncodedSection {
            src: &self.src,
            section,
            label: self.label(),
            progress,
        })
    }

    /// Decodes section `s` alone: its memory checked first, the file checked unchanged after.
    fn decode_section<P: UncompressedPoint>(
        &self,
        s: &Section,
        check: PointCheck,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<P>> {
        limits::check_memory(
            &format!("decoding section {} of {}", s.name, self.label()),
            (s.count * s.size) as u64,
        )?;
        let points = s.decode(&self.src, check, self.label(), progress)?;
        self.src.check_unchanged()?;
        Ok(points)
    }
}

/// One section of a [`ParamsFile`] as encoded points ([`ParamsFile::encoded`]).
pub struct EncodedSection<'a> {
    src: &'a FileSource,
    section: Section,
    label: &'a str,
    progress: &'a (dyn Fn(u64) + Sync),
}

impl EncodedSection<'_> {
    /// The error naming point `index` of the section in the file, refused for `defect` (the
    /// message a decoding on the host gives).
    pub fn refused(&self, index: u64, defect: PointDefect) -> Error {
        self.section.refused(
            self.label,
            usize::try_from(index).unwrap_or(usize::MAX),
            defect,
        )
    }
}

impl EncodedPoints for EncodedSection<'_> {
    fn len(&self) -> u64 {
        self.section.count as u64
    }

    fn read(&self, first: u64, buf: &mut [u8]) -> Result<()> {
        let s = &self.section;
        let n = (buf.len() / s.size) as u64;
        if !buf.len().is_multiple_of(s.size) || first.saturating_add(n) > s.count as u64 {
            return Err(Error::invalid(format!(
                "internal error: {} bytes of section {} asked for from point {first}: not whole \
                 points inside its {}",
                buf.len(),
                s.name,
                s.count
            )));
        }
        let at = s.offset as u64 + first * s.size as u64;
        self.src.read_at(buf, at, &format!("section {}", s.name))?;
        (self.progress)(n);
        Ok(())
    }
}

/// Decodes a whole parameters file held in memory (see the module documentation).
pub fn parameters_from_bytes(bytes: &[u8], check: PointCheck) -> Result<Parameters> {
    let label = "parameters";
    let src = Memory(bytes);
    let layout = scan_params(&src, label)?;
    decode_params_layout(&src, &layout, check, label, &|_| {})
}

fn decode_params_layout(
    data: &dyn Source,
    lay: &ParamsLayout,
    check: PointCheck,
    label: &str,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Parameters> {
    let vk = decode_vk(data, &lay.ic, check, label, progress)?;
    if vk.kind() == ParamsKind::BenchmarkOnly {
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

/// Reads a bellperson parameters file, decoding sections in parallel as they are read (see
/// [`ParamsFile`] to check its shape before decoding).
pub fn read_parameters(path: impl AsRef<Path>, check: PointCheck) -> Result<Parameters> {
    ParamsFile::open(path)?.decode(check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuits::{CircuitOptions, CircuitSpec};
    use crate::groth16::{io::write_parameters, setup::generate_random_parameters};
    use crate::rng::ProofRng;

    fn encoded(p: &Parameters) -> Vec<u8> {
        let mut v = Vec::new();
        write_parameters(p, &mut v).unwrap();
        v
    }

    /// Read in blocks of a few points (the same code that reads 64 MiB blocks of a large file),
    /// a file decodes to what its bytes decode to in memory, and a bad point in a later block is
    /// named by its place in the section, as from memory.
    #[test]
    fn many_blocks_decode_as_memory_does_and_a_bad_point_keeps_its_index() {
        let spec = CircuitSpec::new("synthetic", &CircuitOptions::with_log_size(6)).unwrap();
        let params = generate_random_parameters(spec.blank(), &mut ProofRng::seeded(9)).unwrap();
        let bytes = encoded(&params);
        let path = std::env::temp_dir().join(format!("bellows-blocks-{}", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let open = || {
            let mut f = ParamsFile::open(&path).unwrap();
            // 5 G1 points a block, 2 G2 points.
            f.src.set_block(5 * 96 + 17);
            f
        };
        for check in [PointCheck::Full, PointCheck::CurveOnly, PointCheck::Batched] {
            assert_eq!(encoded(&open().decode(check).unwrap()), bytes, "{check:?}");
        }
        let f = open();
        f.check_first_points().unwrap();
        let mut whole = Vec::new();
        f.for_each_piece(&mut |b| whole.extend_from_slice(b))
            .unwrap();
        assert_eq!(whole, bytes);

        // Point 13 of l (in its third block) off the curve.
        let at = f.layout.l.offset + 13 * 96;
        let mut bad = bytes.clone();
        bad[at + 95] ^= 1;
        std::fs::write(&path, &bad).unwrap();
        let want = format!("section l, point 13 (byte offset {at})");
        let from_memory = parameters_from_bytes(&bad, PointCheck::CurveOnly)
            .unwrap_err()
            .to_string();
        assert!(from_memory.contains(&want), "{from_memory}");
        for check in [PointCheck::Full, PointCheck::CurveOnly, PointCheck::Batched] {
            let e = open().decode(check).unwrap_err().to_string();
            assert!(e.contains(&want) && e.contains("not on the curve"), "{e}");
        }
        let e = open()
            .decode_g1(ParamsSection::L, PointCheck::CurveOnly, &|_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains(&want), "{e}");
        let _ = std::fs::remove_file(&path);
    }
}

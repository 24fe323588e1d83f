//! Writers: verifying keys and parameters in bellperson's format, section by section.

use std::io::Write;
use std::path::Path;

use blstrs::{G1Affine, G2Affine};

use super::codec::{self, UncompressedPoint};
use super::layout::VK_FIXED_BYTES;
use crate::groth16::output::OutputFile;
use crate::groth16::{Parameters, VerifyingKey};
use crate::{Error, Result};

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

/// Writes a parameters file in bellperson's format one piece at a time, in the file's order
/// (the verifying key, then h, l, a, b_g1 and b_g2), so that a setup can drop each query once it
/// is written ([`crate::groth16::setup::write_parameters_from_pce`]). Anything out of order is
/// an error, never a file of another layout.
pub struct ParamsWriter<W: Write> {
    w: W,
    vk: Option<VerifyingKey>,
    /// Sections written after the verifying key.
    sections: usize,
}

/// The G1 sections after the verifying key, in the file's order (b_g2 follows).
const G1_SECTIONS: [&str; 4] = ["h", "l", "a", "b_g1"];

impl<W: Write> ParamsWriter<W> {
    /// A writer into `w`.
    pub fn new(w: W) -> Self {
        ParamsWriter {
            w,
            vk: None,
            sections: 0,
        }
    }

    fn expect(&self, name: &str) -> Result<()> {
        let next = match (self.vk.is_some(), self.sections) {
            (false, _) => "vk",
            (true, i) if i < G1_SECTIONS.len() => G1_SECTIONS[i],
            (true, 4) => "b_g2",
            _ => "nothing",
        };
        if next == name {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "internal error: writing parameters section {name} where {next} belongs"
            )))
        }
    }

    /// The verifying key (first).
    pub fn write_verifying_key(&mut self, vk: VerifyingKey) -> Result<()> {
        self.expect("vk")?;
        write_verifying_key(&vk, &mut self.w)?;
        self.vk = Some(vk);
        Ok(())
    }

    /// The next G1 section (`name` one of h, l, a, b_g1, in that order).
    pub fn write_g1(&mut self, name: &str, points: &[G1Affine]) -> Result<()> {
        self.expect(name)?;
        write_section(points, name, &mut self.w)?;
        self.sections += 1;
        Ok(())
    }

    /// The last section, b_g2.
    pub fn write_g2(&mut self, name: &str, points: &[G2Affine]) -> Result<()> {
        self.expect(name)?;
        write_section(points, name, &mut self.w)?;
        self.sections += 1;
        Ok(())
    }

    /// Flushes the writer after the last section and returns the verifying key written.
    pub fn finish(mut self) -> Result<VerifyingKey> {
        self.expect("nothing")?;
        self.w
            .flush()
            .map_err(|e| Error::io("writing parameters", e))?;
        self.vk
            .ok_or_else(|| Error::invalid("internal error: no verifying key written"))
    }
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

//! Verifying keys: decoded from a key file, from the head of a parameters file (the rest of it
//! walked, not read), or from a pipe.

use std::io::Read;
use std::path::Path;

use blstrs::{G1Affine, G2Affine};

use super::codec::{self, PointCheck, UncompressedPoint};
use super::files::open_input;
use super::layout::{scan_params, scan_vk, Scanner, Section, G1, VK_FIXED_BYTES, VK_POINTS};
use super::source::{FileSource, Memory, Source};
use crate::groth16::limits;
use crate::groth16::output::describe_file_type;
use crate::groth16::VerifyingKey;
use crate::{Error, Result};

/// Decodes the verifying key whose IC section is `ic` (fixed points at offset 0), and refuses a
/// degenerate key ([`VerifyingKey::check_sound`]).
pub(super) fn decode_vk(
    src: &dyn Source,
    ic: &Section,
    check: PointCheck,
    label: &str,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<VerifyingKey> {
    let mut data = [0u8; VK_FIXED_BYTES];
    src.read_at(&mut data, 0, "the verifying key")?;
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
        ic: ic.decode(src, check, label, progress)?,
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

/// Decodes a verifying-key file held in memory; its size must match the IC count it declares.
pub fn verifying_key_from_bytes(bytes: &[u8], check: PointCheck) -> Result<VerifyingKey> {
    decode_vk_file(&Memory(bytes), check, "verifying key")
}

fn decode_vk_file(src: &dyn Source, check: PointCheck, label: &str) -> Result<VerifyingKey> {
    let mut sc = Scanner::new(src, label);
    let ic = scan_vk(&mut sc)?;
    if sc.pos != sc.len {
        return Err(Error::malformed(
            label,
            format!(
                "wrong size: a verifying key with {} IC points is {} bytes, the data is {} bytes",
                ic.count, sc.pos, sc.len
            ),
        ));
    }
    let vk = decode_vk(src, &ic, check, label, &|_| {})?;
    src.check_unchanged()?;
    Ok(vk)
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

/// What a verifying key is read from.
enum VkInput {
    /// A pipe or device: the key read from it and decoded, the byte offset where it ends, and
    /// whether more data follows it.
    Streamed {
        vk: Box<VerifyingKey>,
        end: usize,
        more: bool,
        meta: std::fs::Metadata,
    },
    /// A regular file, read with positional reads (nothing decoded yet).
    File(FileSource),
}

/// Opens `path`: a pipe or device has its one key read and decoded, a regular file is kept
/// open to be read where its layout says.
fn open_vk_input(path: &Path, label: &str, check: PointCheck) -> Result<VkInput> {
    let (file, meta) = open_input(path, label)?;
    if meta.is_file() {
        if meta.len() == 0 {
            return Err(Error::malformed(label, "the file is empty"));
        }
        return Ok(VkInput::File(FileSource::new(
            file,
            &meta,
            label.to_string(),
        )));
    }
    let (data, more) = read_vk_stream(file, label)?;
    Ok(VkInput::Streamed {
        vk: Box::new(decode_vk_file(&Memory(&data), check, label)?),
        end: data.len(),
        more,
        meta,
    })
}

/// Reads a verifying-key file (a regular file, or a pipe or device holding exactly one key).
pub fn read_verifying_key(path: impl AsRef<Path>, check: PointCheck) -> Result<VerifyingKey> {
    let path = path.as_ref();
    let label = format!("verifying key file {}", path.display());
    match open_vk_input(path, &label, check)? {
        VkInput::Streamed {
            more: true, end, ..
        } => Err(Error::malformed(
            &label,
            format!("more data follows the verifying key (which ends at byte offset {end})"),
        )),
        VkInput::Streamed { vk, .. } => Ok(*vk),
        VkInput::File(file) => decode_vk_file(&file, check, &label),
    }
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
    let file = match open_vk_input(path, &label, check)? {
        VkInput::Streamed {
            more: true,
            end,
            meta,
            ..
        } => {
            return Err(Error::invalid(format!(
                "{label} is {} and more data follows its verifying key (which ends at byte \
                 offset {end}): a whole parameters file is read only from a regular file",
                describe_file_type(&meta),
            )))
        }
        VkInput::Streamed { vk, .. } => return Ok(*vk),
        VkInput::File(file) => file,
    };
    let mut sc = Scanner::new(&file, &label);
    let ic = scan_vk(&mut sc)?;
    if sc.pos != sc.len {
        let (vk_end, len) = (sc.pos, sc.len);
        scan_params(&file, &label).map_err(|e| {
            Error::malformed(
                label.clone(),
                format!(
                    "neither a verifying key file (the key ends at byte offset {vk_end}, the file \
                     is {len} bytes) nor a parameters file ({e})"
                ),
            )
        })?;
    }
    let vk = decode_vk(&file, &ic, check, &label, &|_| {})?;
    file.check_unchanged()?;
    Ok(vk)
}

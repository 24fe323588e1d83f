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
//! Reading first walks the length fields (so that truncation, a corrupted length or trailing
//! bytes are reported before any point is decoded, and nothing is allocated beyond what the file
//! can hold), then reads each section in large blocks and decodes each block in parallel while
//! the next is read. A file is read with positional reads into memory the process owns, never
//! memory-mapped: a file truncated or rewritten while it is read is an error naming it, the byte
//! where it ended or the change, never a SIGBUS ([`FileVersion`]). Points at infinity are
//! rejected in `ic` and the queries, as bellperson does; the six fixed verifying-key points are
//! always fully checked (on the curve and in the subgroup) whatever the [`PointCheck`], since they
//! are few. Every error names the section, the point index and its byte offset.
//!
//! Sizes are checked before anything is allocated: every length field against the bytes that
//! remain, the decoded size against the memory the host has ([`super::limits`]), and a caller
//! that knows its circuit checks the [`ParamsShape`] of a [`ParamsFile`] before decoding it.
//! Parameters are read at their offsets and must be a regular file; verifying keys, proofs and public
//! inputs may also come from a pipe or device, read with a bound (a verifying key: what its IC
//! length announces; proofs: [`super::limits::MAX_PROOFS_PER_FILE`]; inputs: the caller's bound).
//! Writing goes through [`super::output::OutputFile`]: atomic for regular files, straight
//! through for devices and FIFOs.
//!
//! One file a job: `layout.rs` walks the length fields, `params_file.rs` opens and decodes whole
//! parameters files, `vk.rs` verifying keys, `proofs.rs` proofs, `inputs.rs` public inputs,
//! `write.rs` the writers, `files.rs` opens regular files, pipes and devices, `source.rs` reads
//! bytes from memory or from an open file at offsets, `version_table.rs` keeps what was learned
//! of a file version (its digests) across processes; point encodings are [`codec`]'s.

pub mod codec;
mod files;
mod inputs;
mod layout;
mod params_file;
mod proofs;
mod source;
mod version_table;
mod vk;
mod write;

pub use codec::PointCheck;
pub use files::read_bounded;
pub use inputs::{
    format_public_inputs_json, inputs_text, parse_public_inputs_json, read_public_inputs_json,
    strip_bom, MAX_INPUTS_FILE_BYTES,
};
pub use layout::{ParamsShape, VK_FIXED_BYTES};
pub use params_file::{
    parameters_from_bytes, read_parameters, EncodedSection, ParamsFile, ParamsSection,
};
pub use proofs::{proofs_from_bytes, read_proof, read_proofs, write_proof, write_proofs_file};
pub(crate) use source::read_whole_into;
pub use source::FileVersion;
pub use version_table::{TableRow, VersionTable};
pub use vk::{read_verifying_key, read_verifying_key_or_params, verifying_key_from_bytes};
pub use write::{
    write_parameters, write_parameters_file, write_verifying_key, write_verifying_key_file,
    ParamsWriter,
};

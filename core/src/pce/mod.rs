//! Pre-compiled constraint systems (PCE): record a circuit's R1CS once per shape, then prove
//! with witness-only synthesis and three parallel sparse products.
//!
//! ## Design
//! Direct synthesis ([`crate::groth16::synthesis`]) runs a circuit's bellpepper code per proof:
//! every `enforce` builds three linear combinations (heap vectors) and evaluates them, on one
//! thread. Most of that work depends only on the circuit's *shape*, which is fixed. Following
//! cuzk's pre-compiled constraint evaluator:
//!
//! 1. **Record** ([`Pce::record`], [`record`]): run the circuit once through a constraint system
//!    that keeps A, B and C as compressed sparse rows with interned coefficients (id 0 is 1, id 1
//!    is −1; most coefficients are one of these or a small power of two), packs each non-zero into
//!    one 32-bit word where the circuit allows (column | coefficient id), and derives the A/B
//!    densities the parameters' queries need. The recording is a byte image
//!    ([`format`](mod@format)) with a SHA-256 shape digest; [`cache`] keeps images on disk,
//!    written atomically, authenticated by a key kept in the folder, and read back with checked
//!    reads. One recording serves every proof and every partition of that shape.
//! 2. **Prove** ([`Pce::synthesize`]): run the circuit through a witness-only constraint system
//!    ([`witness`]) on a thread of its own: allocation closures run, `enforce` builds nothing (one
//!    constraint in 512, eight per row block, is built and compared with the recording, a cheap
//!    guard against a recording of another circuit), and the values go straight into the
//!    assignment buffers. Meanwhile [`eval`] computes ⟨A_j,w⟩, ⟨B_j,w⟩, ⟨C_j,w⟩ of every row
//!    block whose variables the witness has already produced ([`stream`]), in parallel (rayon)
//!    straight into the output buffers, and checks A·B = C in the same pass. The products thus
//!    hide behind the witness code; what they add is the tail after it.
//!
//! The result is a [`Synthesized`] equal to direct synthesis's bit for bit: the same terms are
//! evaluated (the non-zero terms of each linear combination, input constraints included) and
//! field addition is exact, so the order of the sum does not matter; the densities are the same
//! sets because they depend on the shape only.
//!
//! What stays sequential: the witness closures of one circuit (the circuit's own code), which the
//! products overlap. Several circuits of a batch run in parallel ([`Pce::synthesize_batch`]).
//! A circuit can parallelise its own witness: the witness-only constraint system is a bellpepper
//! witness generator and takes values in bulk (`extend_aux`; the private `pce::witness` says
//! what is checked then). The built-in sha256 circuit computes its blocks' compressions in
//! parallel that way (`circuits::sha256_blocks`); its preimage bits and digest packing stay
//! sequential.
//!
//! A recording that does not match the circuit (counts, a sampled row) or a file that is
//! truncated, corrupted, of another version or of another circuit is refused with a clear error,
//! never used.

pub mod cache;
mod columns;
mod eval;
pub mod format;
mod record;
mod stream;
mod witness;

use std::{
    mem::MaybeUninit,
    path::Path,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, OnceLock,
    },
    time::Duration,
};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::{
    groth16::synthesis::{Density, Synthesized},
    Backend, Error, Result,
};
use format::Header;

pub use record::record;

/// A recorded constraint system, in memory (recorded here, or read from a cache file).
pub struct Pce {
    storage: Storage,
    header: Header,
    coeffs: Vec<Scalar>,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
    /// Per row block, what the witness must have produced before the block can be evaluated
    /// (a running maximum; computed on first use).
    needs: OnceLock<Vec<eval::Need>>,
    /// Where each row the witness compares with the circuit starts, per matrix (computed on
    /// first use; see [`witness::sample_index`]).
    samples: OnceLock<witness::SampleIndex>,
}

impl std::fmt::Debug for Pce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pce")
            .field("id", &self.header.id)
            .field("digest", &self.digest_hex())
            .field("constraints", &self.header.num_constraints)
            .finish()
    }
}

/// An 8-byte aligned image in memory the process owns: built by a recording, or read from a
/// cache file with checked reads. Never a memory map: a map of a file another program truncates
/// kills the process with SIGBUS on the next touch, and a recording is read all through by
/// every proof anyway.
enum Storage {
    /// The words and how many of their bytes the image is (a file's last word may be partial).
    Owned(Vec<u64>, usize),
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Owned(v, len) => &words_as_bytes(v)[..*len],
        }
    }
}

/// The magic of the trailer a cache appends to an image: the image's tag (32 bytes,
/// [`cache`]'s module documentation), then these 8 bytes. One file, renamed into place at once,
/// so a reader never sees an entry without its tag.
pub(crate) const TAG_TRAILER_MAGIC: &[u8; 8] = b"PCETAG01";
/// Bytes of the trailer: the tag and the magic.
pub(crate) const TAG_TRAILER: usize = 32 + 8;

/// Where the time of one PCE synthesis went. The products run while the witness does (each row
/// block as soon as its variables exist), so the two do not add up to more than the whole.
#[derive(Clone, Copy, Debug, Default)]
pub struct PceTimings {
    /// Witness-only synthesis (the circuit's closures; sequential per circuit), from the start
    /// until the circuit returned.
    pub witness: Duration,
    /// The products with the satisfaction check (parallel) that were still running after the
    /// witness was done: what the products add to the witness time.
    pub products: Duration,
}

fn words_as_bytes(v: &[u64]) -> &[u8] {
    // SAFETY: u8 has alignment 1 and every byte of an initialised u64 is initialised; the
    // length is the same memory in bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), v.len() * 8) }
}

fn words_as_bytes_mut(v: &mut [u64]) -> &mut [u8] {
    // SAFETY: as in `words_as_bytes`; any byte pattern written is a valid u64.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), v.len() * 8) }
}

/// Plain integer words a section can be viewed as (u32, [`U40`], u64).
trait Word: Copy + Into<u64> + Send + Sync + 'static {
    /// The entry as a u64 (`into`, named so that generic code over the three widths does not
    /// read as a useless conversion where the width is u64).
    #[inline(always)]
    fn widen(self) -> u64 {
        self.into()
    }
}
impl Word for u32 {}
impl Word for u64 {}
impl Word for U40 {}

/// A 40-bit little-endian entry: five bytes, no alignment (the width between 32 and 64 bits that
/// keeps large circuits with many coefficients near 5 bytes per non-zero).
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
struct U40([u8; 5]);

impl From<U40> for u64 {
    #[inline(always)]
    fn from(w: U40) -> u64 {
        let b = w.0;
        u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])) | (u64::from(b[4]) << 32)
    }
}

/// Runs `$body` with `$E` bound to the entry type of `$pce` (u32, U40 or u64).
macro_rules! with_entries {
    ($pce:expr, $E:ident => $body:expr) => {
        match $pce.entry_bytes() {
            4 => {
                type $E = u32;
                $body
            }
            5 => {
                type $E = $crate::pce::U40;
                $body
            }
            _ => {
                type $E = u64;
                $body
            }
        }
    };
}
pub(crate) use with_entries;

/// `bytes` as a slice of `T`, when its address and length are multiples of `T`'s size.
fn cast_words<T: Word>(bytes: &[u8]) -> Option<&[T]> {
    // SAFETY: u32 and u64 accept every bit pattern, and `align_to` only puts correctly aligned,
    // whole elements in the middle slice; we use it only when nothing is left over.
    let (pre, mid, post) = unsafe { bytes.align_to::<T>() };
    (pre.is_empty() && post.is_empty()).then_some(mid)
}

impl Pce {
    /// Records `circuit` (witness not needed; allocation closures are not called) under the
    /// identifier `id` (what the cache keys it by, e.g. `synthetic-k20-b90`).
    pub fn record<C: Circuit<Scalar>>(circuit: C, id: &str) -> Result<Self> {
        record(circuit, id)
    }

    /// The recording of a circuit made of a prefix and `copies` sub-circuits of one structure,
    /// made from the prefix alone and the prefix with two copies: the same image as
    /// [`Pce::record`] of the whole circuit, for the cost of two copies. The second copy must
    /// be the first with its own variables shifted (same rows and coefficients, the prefix's
    /// variables unchanged), else an error: then record the whole circuit.
    pub fn record_repeated<P: Circuit<Scalar>, T: Circuit<Scalar>>(
        prefix: P,
        two: T,
        copies: usize,
        id: &str,
    ) -> Result<Self> {
        record::record_repeated(prefix, two, copies, id)
    }

    /// Reads and checks a recording file (checked reads). With `expect_id`, a file recorded for
    /// another circuit identifier is refused.
    pub fn load(path: &Path, expect_id: Option<&str>) -> Result<Self> {
        Ok(Self::read_tagged(path, expect_id)?.0)
    }

    /// Reads a recording file with checked reads, strips a cache's tag trailer when it has one
    /// (returning the tag), and checks the image; with `expect_id`, a file recorded for another
    /// circuit identifier is refused.
    pub(crate) fn read_tagged(
        path: &Path,
        expect_id: Option<&str>,
    ) -> Result<(Self, Option<[u8; 32]>)> {
        let what = format!("pre-compiled constraint system {}", path.display());
        let (pce, tag) = Self::read_image(path, &what)?;
        match expect_id {
            Some(id) if pce.id() != id => Err(Error::malformed(
                what,
                format!(
                    "it records circuit {:?}, not {id:?}; rebuild it with `bellows pce build`",
                    pce.id()
                ),
            )),
            _ => Ok((pce, tag)),
        }
    }

    /// [`Pce::read_tagged`] without the identifier check; `what` names the file in errors.
    fn read_image(path: &Path, what: &str) -> Result<(Self, Option<[u8; 32]>)> {
        let (words, mut len) = read_words(path, what)?;
        let bytes = &words_as_bytes(&words)[..len];
        let mut tag = None;
        if len >= TAG_TRAILER && bytes[len - 8..] == TAG_TRAILER_MAGIC[..] {
            let mut t = [0u8; 32];
            t.copy_from_slice(&bytes[len - TAG_TRAILER..len - 8]);
            tag = Some(t);
            len -= TAG_TRAILER;
        }
        Ok((Self::from_storage(Storage::Owned(words, len), what)?, tag))
    }

    /// The image's bytes (what [`Pce::save`] writes): two recordings of one circuit have the
    /// same image.
    pub fn image(&self) -> &[u8] {
        self.storage.bytes()
    }

    /// Checks an image (header, digest, every section) and derives the densities.
    fn from_storage(storage: Storage, what: &str) -> Result<Self> {
        if cfg!(target_endian = "big") {
            return Err(Error::invalid(
                "pre-compiled constraint systems are little-endian images; this host is big-endian",
            ));
        }
        let bytes = storage.bytes();
        let header = Header::decode(bytes, what)?;
        let digest = format::shape_digest(&header, bytes);
        if digest != header.shape_digest {
            return Err(Error::malformed(
                what,
                "shape digest mismatch: the file is corrupted (rebuild it with `bellows pce build`)",
            ));
        }
        let (off, len) = header.sections[format::SEC_COEFFS];
        let coeffs = bytes[off as usize..(off + len) as usize]
            .chunks_exact(32)
            .enumerate()
            .map(|(i, c)| {
                let mut repr = <Scalar as PrimeField>::Repr::default();
                repr.as_mut().copy_from_slice(c);
                Option::from(Scalar::from_repr(repr)).ok_or_else(|| {
                    Error::malformed(what, format!("coefficient {i} is not a field element"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if coeffs[0] != Scalar::ONE || coeffs[1] != -Scalar::ONE {
            return Err(Error::malformed(
                what,
                "the coefficient table does not start with 1, −1",
            ));
        }
        let marks = validate_matrices(&header, bytes).map_err(|r| Error::malformed(what, r))?;
        let [a_aux, b_in, b_aux] = marks;
        let n_in = header.num_inputs as usize;
        let n_aux = header.num_aux as usize;
        Ok(Self {
            a_aux_density: Density::from_used(bits_to_bools(&a_aux, n_in, n_aux)),
            b_input_density: Density::from_used(bits_to_bools(&b_in, 0, n_in)),
            b_aux_density: Density::from_used(bits_to_bools(&b_aux, n_in, n_aux)),
            storage,
            header,
            coeffs,
            needs: OnceLock::new(),
            samples: OnceLock::new(),
        })
    }

    /// Writes the recording to `path` atomically (a temporary file in the same folder, synced,
    /// then renamed over `path`): readers see the old file or the new one, never a partial one,
    /// and two writers of the same entry leave one whole file.
    pub fn save(&self, path: &Path) -> Result<()> {
        cache::write_atomically(path, self.storage.bytes())
    }

    /// The circuit identifier it was recorded under.
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// SHA-256 shape digest.
    pub fn digest(&self) -> [u8; 32] {
        self.header.shape_digest
    }

    /// The shape digest in hex.
    pub fn digest_hex(&self) -> String {
        format::hex(&self.header.shape_digest)
    }

    /// Rows, the input constraints included (= direct synthesis's `num_constraints`).
    pub fn num_constraints(&self) -> usize {
        self.header.num_constraints as usize
    }

    /// Public inputs, the constant one included.
    pub fn num_inputs(&self) -> usize {
        self.header.num_inputs as usize
    }

    /// Private variables.
    pub fn num_aux(&self) -> usize {
        self.header.num_aux as usize
    }

    /// Non-zeros of A, B and C.
    pub fn nnz(&self) -> [u64; 3] {
        self.header.nnz
    }

    /// Distinct coefficients.
    pub fn num_coeffs(&self) -> usize {
        self.coeffs.len()
    }

    /// Bytes per packed entry (4, or 8 for circuits too large to pack in 32 bits).
    pub fn entry_bytes(&self) -> u32 {
        self.header.entry_bytes
    }

    /// Size of the image (in memory and on disk).
    pub fn size_bytes(&self) -> u64 {
        self.header.file_len
    }

    /// Average image bytes per non-zero (everything included: header, coefficients, row lengths,
    /// block index).
    pub fn bytes_per_nonzero(&self) -> f64 {
        let nnz: u64 = self.header.nnz.iter().sum();
        self.header.file_len as f64 / nnz.max(1) as f64
    }

    /// Aux variables occurring in some A.
    pub fn a_aux_density(&self) -> &Density {
        &self.a_aux_density
    }

    /// Inputs occurring in some B.
    pub fn b_input_density(&self) -> &Density {
        &self.b_input_density
    }

    /// Aux variables occurring in some B.
    pub fn b_aux_density(&self) -> &Density {
        &self.b_aux_density
    }

    /// Synthesises one circuit of this shape: witness-only synthesis, with the parallel products
    /// and satisfaction check of each row block started as soon as the witness has produced every
    /// variable the block references ([`stream`]). Equal to
    /// [`crate::groth16::synthesis::synthesize`] bit for bit.
    pub fn synthesize<C: Circuit<Scalar> + Send>(&self, circuit: C) -> Result<Synthesized> {
        self.synthesize_timed(circuit, None).map(|(s, _)| s)
    }

    /// As [`Pce::synthesize`], writing a, b, c and the aux assignment into host memory that
    /// `backend` provides ([`crate::backend::MemoryPool::alloc_host`]: pinned on a device
    /// backend, so the device copies them directly), or the heap when it gives none.
    pub fn synthesize_for<C: Circuit<Scalar> + Send>(
        &self,
        circuit: C,
        backend: Option<&Arc<dyn Backend>>,
    ) -> Result<Synthesized> {
        self.synthesize_timed(circuit, backend).map(|(s, _)| s)
    }

    /// As [`Pce::synthesize_for`], with the time of each phase.
    pub fn synthesize_timed<C: Circuit<Scalar> + Send>(
        &self,
        circuit: C,
        backend: Option<&Arc<dyn Backend>>,
    ) -> Result<(Synthesized, PceTimings)> {
        let (a, b, c, inputs, aux, timings) = stream::synthesize(self, circuit, backend)?;
        Ok((
            Synthesized {
                a,
                b,
                c,
                input_assignment: inputs,
                aux_assignment: aux,
                a_aux_density: self.a_aux_density.clone(),
                b_input_density: self.b_input_density.clone(),
                b_aux_density: self.b_aux_density.clone(),
            },
            timings,
        ))
    }

    /// Per row block, the running maximum of the variables its rows reference (computed on
    /// first use, [`init_racing`]).
    fn needs(&self) -> &[eval::Need] {
        init_racing(&self.needs, || eval::prefix_needs(self)).as_slice()
    }

    /// Where the rows the witness samples start ([`witness::sample_index`]; computed on first
    /// use, [`init_racing`]).
    fn samples(&self) -> &witness::SampleIndex {
        init_racing(&self.samples, || witness::sample_index(self))
    }

    /// Synthesises a batch of circuits of this shape in parallel (one rayon task per circuit,
    /// each with its own parallel products).
    pub fn synthesize_batch<C: Circuit<Scalar> + Send>(
        &self,
        circuits: Vec<C>,
    ) -> Result<Vec<Synthesized>> {
        self.synthesize_batch_for(circuits, None)
    }

    /// As [`Pce::synthesize_batch`], into `backend`'s host memory ([`Pce::synthesize_for`]).
    pub fn synthesize_batch_for<C: Circuit<Scalar> + Send>(
        &self,
        circuits: Vec<C>,
        backend: Option<&Arc<dyn Backend>>,
    ) -> Result<Vec<Synthesized>> {
        // Once, before the parallel syntheses.
        self.needs();
        self.samples();
        circuits
            .into_par_iter()
            .map(|c| self.synthesize_for(c, backend))
            .collect()
    }

    /// The sparse products ⟨A_j,w⟩, ⟨B_j,w⟩, ⟨C_j,w⟩ for every row j, written into `a`, `b`,
    /// `c` (each exactly [`Pce::num_constraints`] long; e.g. a backend's pinned host buffers), in
    /// parallel by row blocks, with A·B = C checked in the same pass: an unsatisfied row is
    /// [`Error::Unsatisfied`] naming the first such constraint, as direct synthesis does. On
    /// success every element has been written.
    pub fn evaluate_into(
        &self,
        inputs: &[Scalar],
        aux: &[Scalar],
        a: &mut [MaybeUninit<Scalar>],
        b: &mut [MaybeUninit<Scalar>],
        c: &mut [MaybeUninit<Scalar>],
    ) -> Result<()> {
        let n = self.num_constraints();
        if inputs.len() != self.num_inputs() || aux.len() != self.num_aux() {
            return Err(Error::invalid(format!(
                "witness of {} inputs and {} aux for a recording of {} and {}",
                inputs.len(),
                aux.len(),
                self.num_inputs(),
                self.num_aux()
            )));
        }
        if a.len() != n || b.len() != n || c.len() != n {
            return Err(Error::invalid(format!(
                "output buffers of {}, {}, {} elements for {n} constraints",
                a.len(),
                b.len(),
                c.len()
            )));
        }
        let bad = eval::evaluate_blocks(self, inputs, aux, 0, a, b, c);
        match bad {
            None => Ok(()),
            Some(j) => Err(crate::groth16::synthesis::unsatisfied_at(j, n)),
        }
    }

    fn bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    fn section(&self, i: usize) -> &[u8] {
        let (off, len) = self.header.sections[i];
        &self.bytes()[off as usize..(off + len) as usize]
    }

    /// Matrix `m`'s row lengths and block index (entry start, length-byte start per block).
    fn lens_and_blocks(&self, m: usize) -> (&[u8], &[u64]) {
        let lens = self.section(format::sec_entries(m) + 1);
        let blocks = cast_words::<u64>(self.section(format::sec_entries(m) + 2))
            .expect("block index alignment checked at load");
        (lens, blocks)
    }

    fn entries<T: Word>(&self, m: usize) -> &[T] {
        cast_words::<T>(self.section(format::sec_entries(m)))
            .expect("entry alignment checked at load")
    }
}

/// The value of `cell`, computed by `compute` if it is not there yet.
///
/// Not `OnceLock::get_or_init`: the computations run on rayon, and a rayon worker waiting inside
/// one may steal another synthesis of the same recording, whose call here would then wait for an
/// initialisation its own thread is running — a deadlock (a batch of eight proofs hung so).
/// Racing callers may each compute the (identical) value; the first stored is kept.
fn init_racing<T>(cell: &OnceLock<T>, compute: impl FnOnce() -> T) -> &T {
    if let Some(v) = cell.get() {
        return v;
    }
    let _ = cell.set(compute());
    cell.get().expect("set above or by another thread")
}

/// The whole of the regular file `path` (`what` in messages) in 8-byte words (the last one
/// zero-padded) and its length in bytes, read with checked reads: a file that is not a regular
/// file is refused without being read, and one that shrinks or grows while it is read is an
/// error naming it (a short read, or bytes past the length it had).
fn read_words(path: &Path, what: &str) -> Result<(Vec<u64>, usize)> {
    let meta = std::fs::symlink_metadata(path)
        .and_then(|m| {
            if m.file_type().is_symlink() {
                std::fs::metadata(path)
            } else {
                Ok(m)
            }
        })
        .map_err(|e| Error::io(format!("opening {what}"), e))?;
    if !meta.is_file() {
        return Err(Error::invalid(format!(
            "{what} is {}, not a regular file",
            crate::groth16::output::describe_file_type(&meta)
        )));
    }
    let len = meta.len();
    let bytes = usize::try_from(len)
        .map_err(|_| Error::invalid(format!("{what} is {len} bytes, too large to read")))?;
    crate::groth16::limits::check_memory(&format!("reading {what}"), len)?;
    let file = std::fs::File::open(path).map_err(|e| Error::io(format!("opening {what}"), e))?;
    let opened = file
        .metadata()
        .map_err(|e| Error::io(format!("opening {what}"), e))?;
    let mut out = vec![0u64; bytes.div_ceil(8)];
    // Several positional reads at once (io's file source): a 32 GiB partition's recording is
    // 4 GB, most of whose one-thread read was the kernel clearing the fresh pages
    // (docs/benchmarks.md, "32 GiB PoRep C2").
    crate::groth16::io::read_whole_into(
        file,
        &opened,
        what.to_string(),
        &mut words_as_bytes_mut(&mut out)[..bytes],
    )?;
    Ok((out, bytes))
}

/// Checks every matrix block by block (in parallel): index monotone and in bounds, row lengths
/// well formed and summing to the entries, every column and coefficient id in range. Returns the
/// density bitsets over the columns: aux in A, inputs in B, aux in B.
fn validate_matrices(h: &Header, bytes: &[u8]) -> std::result::Result<[Vec<AtomicU64>; 3], String> {
    let vars = (h.num_inputs + h.num_aux) as usize;
    let words = vars.div_ceil(64);
    let new_bits = || (0..words).map(|_| AtomicU64::new(0)).collect::<Vec<_>>();
    let marks = [new_bits(), new_bits(), new_bits()];
    let sec = |i: usize| {
        let (off, len) = h.sections[i];
        &bytes[off as usize..(off + len) as usize]
    };
    for m in 0..3 {
        let blocks = cast_words::<u64>(sec(format::sec_entries(m) + 2))
            .ok_or_else(|| format!("matrix {m}: misaligned block index"))?;
        let lens = sec(format::sec_entries(m) + 1);
        let entries_raw = sec(format::sec_entries(m));
        let nb = h.num_blocks() as usize;
        let last = (blocks[2 * nb], blocks[2 * nb + 1]);
        if last != (h.nnz[m], lens.len() as u64) {
            return Err(format!(
                "matrix {}: the block index ends at {last:?}, the sections at ({}, {})",
                b"ABC"[m] as char,
                h.nnz[m],
                lens.len()
            ));
        }
        let n_in = h.num_inputs;
        let check_block = |k: usize| -> std::result::Result<(), String> {
            let (e0, l0, e1, l1) = (
                blocks[2 * k],
                blocks[2 * k + 1],
                blocks[2 * k + 2],
                blocks[2 * k + 3],
            );
            if e0 > e1 || l0 > l1 || e1 > h.nnz[m] || l1 > lens.len() as u64 {
                return Err(format!("block {k}: index out of order or out of bounds"));
            }
            let r0 = k as u64 * u64::from(h.block_rows);
            let rows = (h.num_constraints - r0).min(u64::from(h.block_rows));
            let (lens, mut pos, mut sum) = (&lens[..l1 as usize], l0 as usize, 0u64);
            for _ in 0..rows {
                sum += format::read_varint(lens, &mut pos)
                    .ok_or_else(|| format!("block {k}: malformed row length"))?;
            }
            if pos != l1 as usize || sum != e1 - e0 {
                return Err(format!("block {k}: row lengths do not match the entries"));
            }
            let mark = |e: u64| -> std::result::Result<(), String> {
                let col = e & ((1u64 << h.col_bits) - 1);
                let id = e >> h.col_bits;
                if col >= n_in + h.num_aux || id >= h.num_coeffs {
                    return Err(format!("block {k}: entry out of range"));
                }
                let is_input = col < n_in;
                let set = match (m, is_input) {
                    (0, false) => Some(0),
                    (1, true) => Some(1),
                    (1, false) => Some(2),
                    _ => None,
                };
                if let Some(s) = set {
                    let bit = &marks[s][(col / 64) as usize];
                    let mask = 1u64 << (col % 64);
                    if bit.load(Ordering::Relaxed) & mask == 0 {
                        bit.fetch_or(mask, Ordering::Relaxed);
                    }
                }
                Ok(())
            };
            let (e0, e1) = (e0 as usize, e1 as usize);
            match h.entry_bytes {
                4 => {
                    let es = cast_words::<u32>(entries_raw).ok_or("misaligned entries")?;
                    es[e0..e1].iter().try_for_each(|&e| mark(u64::from(e)))
                }
                5 => {
                    let es = cast_words::<U40>(entries_raw).ok_or("misaligned entries")?;
                    es[e0..e1].iter().try_for_each(|&e| mark(u64::from(e)))
                }
                _ => {
                    let es = cast_words::<u64>(entries_raw).ok_or("misaligned entries")?;
                    es[e0..e1].iter().try_for_each(|&e| mark(e))
                }
            }
        };
        (0..nb)
            .into_par_iter()
            .try_for_each(check_block)
            .map_err(|e| format!("matrix {}: {e}", b"ABC"[m] as char))?;
    }
    Ok(marks)
}

/// Bits `start..start + n` of a bitset as booleans.
fn bits_to_bools(bits: &[AtomicU64], start: usize, n: usize) -> Vec<bool> {
    (start..start + n)
        .into_par_iter()
        .map(|i| bits[i / 64].load(Ordering::Relaxed) >> (i % 64) & 1 == 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuits::{CircuitOptions, CircuitSpec};
    use crate::groth16::synthesis::synthesize;

    /// Files of several read tasks' chunks and a partial last word come back byte for byte.
    #[test]
    fn reads_in_parallel_chunks_give_the_file() {
        let dir = std::env::temp_dir().join(format!("bellows-pce-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for len in [0usize, 13, (8 << 20) + 5, (17 << 20) + 3] {
            let path = dir.join(format!("f{len}"));
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + i / 4099) as u8).collect();
            std::fs::write(&path, &bytes).unwrap();
            let (words, got) = read_words(&path, "test file").unwrap();
            assert_eq!(got, len);
            assert_eq!(&words_as_bytes(&words)[..len], &bytes[..], "{len} bytes");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn wide_entries_give_the_same_results() {
        let synthetic = CircuitSpec::new(
            "synthetic",
            &CircuitOptions {
                log_size: Some(13),
                bits_pct: Some(40),
                ..Default::default()
            },
        )
        .unwrap();
        let sha = CircuitSpec::new(
            "sha256",
            &CircuitOptions {
                bytes: Some(1),
                ..Default::default()
            },
        )
        .unwrap();
        for spec in [synthetic, sha] {
            let narrow = record::record_with(spec.blank(), "n", None).unwrap();
            assert_eq!(narrow.entry_bytes(), 4);
            let direct = synthesize(spec.with_witness(9)).unwrap();
            for width in [5u32, 8] {
                let wide = record::record_with(spec.blank(), "w", Some(width)).unwrap();
                assert_eq!(wide.entry_bytes(), width);
                assert_ne!(
                    narrow.digest(),
                    wide.digest(),
                    "the digest covers the packing"
                );
                let got = wide.synthesize(spec.with_witness(9)).unwrap();
                assert_eq!(got.a, direct.a);
                assert_eq!(got.b, direct.b);
                assert_eq!(got.c, direct.c);
                assert_eq!(got.aux_assignment, direct.aux_assignment);
                assert_eq!(got.b_aux_density, direct.b_aux_density);
                // A wide image survives a save/load round trip too (every byte checked at load).
                let dir = std::env::temp_dir()
                    .join(format!("bellows-pce-wide-{}-{width}", std::process::id()));
                let path = dir.join("w.pce");
                wide.save(&path).unwrap();
                let loaded = Pce::load(&path, Some("w")).unwrap();
                assert_eq!(loaded.entry_bytes(), width);
                assert_eq!(loaded.synthesize(spec.with_witness(9)).unwrap().c, direct.c);
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }

    #[test]
    fn forty_bit_entries_read_little_endian() {
        let w = U40([0x01, 0x02, 0x03, 0x04, 0xa5]);
        assert_eq!(u64::from(w), 0xa5_0403_0201);
        let bytes = [0u8, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff];
        let es = cast_words::<U40>(&bytes).unwrap();
        assert_eq!(es.len(), 2);
        assert_eq!(u64::from(es[1]), (1u64 << 40) - 1);
    }
}

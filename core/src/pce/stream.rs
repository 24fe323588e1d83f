//! The witness and the products at the same time.
//!
//! A circuit's witness code is sequential, but the products of a row block need only the
//! variables its rows reference, and bellpepper circuits allocate a variable before they enforce
//! a constraint on it. So the witness runs on a thread of its own and writes each value straight
//! into the assignment buffer ([`Sink`]); every [`PUBLISH_EVERY`](super::witness) values it
//! publishes how far it got ([`Progress`]); the calling thread waits for progress and evaluates,
//! on the rayon pool, every row block whose variables all exist (the per-block running maximum
//! of [`super::eval::prefix_needs`] makes that a prefix of the blocks). When the circuit returns,
//! only the blocks it produced last remain: the products add their tail to the witness time
//! instead of their whole.
//!
//! The calling thread drives (it may be a rayon worker, as in [`super::Pce::synthesize_batch`]:
//! its own parallel loops run on it, so the pool cannot be starved), and the witness thread
//! depends on nothing but its circuit. A witness that fails, panics or does not match the
//! recording still publishes that it is done (a guard), so the driver always returns.

use std::{
    mem::MaybeUninit,
    sync::{Arc, Condvar, Mutex},
    thread,
    time::Instant,
};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use ff::Field;

use super::{eval, witness, Pce, PceTimings};
use crate::{host_buffer::HostVec, Backend, Error, Result};

/// Stack of the witness thread: circuits recurse little, but generously more than the 2 MiB a
/// spawned thread gets by default, as their code may have been written for a main thread's.
const WITNESS_STACK: usize = 64 << 20;

/// Bytes of the aux buffer backed per call, in order, ahead of the witness.
const POPULATE_CHUNK: usize = 32 << 20;

/// The aux buffer's address for the populating thread.
#[derive(Clone, Copy)]
struct Populate(*const u8);
// SAFETY: only handed to `page_advice::populate`, which reads and writes no byte through it.
unsafe impl Send for Populate {}

/// How far the witness has got: values [0, inputs) and [0, aux) are written for good.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Published {
    inputs: usize,
    aux: usize,
    done: bool,
}

/// The witness thread's progress, behind a lock and a condition variable. The lock's release and
/// acquire order the writes of the values before their publication.
#[derive(Default)]
pub(super) struct Progress {
    state: Mutex<Published>,
    cv: Condvar,
}

impl Progress {
    /// Publishes the first `inputs` inputs and `aux` aux values (already written).
    pub(super) fn publish(&self, inputs: usize, aux: usize) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.inputs = inputs;
        s.aux = aux;
        drop(s);
        self.cv.notify_one();
    }

    fn finish(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.done = true;
        drop(s);
        self.cv.notify_one();
    }

    /// Waits until the state differs from `seen` (or the witness is done), and returns it.
    fn wait_past(&self, seen: Published) -> Published {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while *s == seen && !s.done {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        *s
    }
}

/// Marks the witness done when dropped, whether the circuit returned, failed or panicked.
struct FinishOnDrop<'a>(&'a Progress);

impl Drop for FinishOnDrop<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// A fixed-capacity buffer the witness thread appends to, while readers read its published
/// prefix through [`Reader`]. Values past the capacity (a circuit allocating more than its
/// recording) are counted, not stored: the count check that follows refuses the run.
pub(super) struct Sink {
    ptr: *mut Scalar,
    cap: usize,
    len: usize,
}

// SAFETY: a Sink is the only writer of its buffer and is moved to exactly one thread (the
// witness thread); readers only read indices below what was published, which the writer never
// writes again (see `push`).
unsafe impl Send for Sink {}

impl Sink {
    fn new(buf: &mut [MaybeUninit<Scalar>]) -> Self {
        Self {
            ptr: buf.as_mut_ptr().cast::<Scalar>(),
            cap: buf.len(),
            len: 0,
        }
    }

    /// Appends `v`; returns its index.
    pub(super) fn push(&mut self, v: Scalar) -> usize {
        if self.len < self.cap {
            // SAFETY: `len < cap`, so the slot is inside the buffer `new` was given, which
            // outlives the witness thread (the scope in `synthesize` joins it). No reader reads
            // index `len`: readers see only indices below a published length, which is at most
            // the `len` of an earlier call.
            unsafe { self.ptr.add(self.len).write(v) };
        }
        self.len += 1;
        self.len - 1
    }

    /// Appends `vs` in order (one copy for the part that fits; values past the capacity are
    /// counted, not stored, as in [`Sink::push`]).
    pub(super) fn extend(&mut self, vs: &[Scalar]) {
        let fit = vs.len().min(self.cap.saturating_sub(self.len));
        if fit > 0 {
            // SAFETY: [len, len + fit) lies inside the buffer (`fit ≤ cap − len`), which
            // outlives the witness thread, and no reader reads it yet (as in `push`); `vs` is
            // another allocation (a shared borrow cannot alias the buffer only this Sink writes).
            unsafe {
                std::ptr::copy_nonoverlapping(vs.as_ptr(), self.ptr.add(self.len), fit);
            }
        }
        self.len += vs.len();
    }

    /// Appends `n` zeros and returns them for the caller to overwrite, or `None` (the length
    /// still counted) when they do not fit the capacity: the caller then writes into a scratch
    /// buffer of its own, and the count check that follows refuses the run.
    pub(super) fn reserve(&mut self, n: usize) -> Option<&mut [Scalar]> {
        let start = self.len;
        self.len += n;
        if n == 0 {
            return Some(&mut []);
        }
        if n > self.cap.saturating_sub(start) {
            return None;
        }
        // SAFETY: [start, start + n) lies inside the buffer and is read by no reader until it
        // is published, which happens in a later call on the owner, once the returned borrow
        // (tied to `&mut self`) has ended. Every element is initialised here before the slice
        // is formed.
        unsafe {
            let p = self.ptr.add(start);
            for i in 0..n {
                p.add(i).write(Scalar::ZERO);
            }
            Some(std::slice::from_raw_parts_mut(p, n))
        }
    }

    /// The stored values, in order.
    pub(super) fn stored(&self) -> &[Scalar] {
        // SAFETY: the first `published()` slots were written (by `push`, `extend`, or zeroed by
        // `reserve`) and are inside the buffer; the shared borrow of the owner keeps this Sink
        // from writing while the slice lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.published()) }
    }

    /// Values pushed (stored or not).
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Values stored: what can be published.
    pub(super) fn published(&self) -> usize {
        self.len.min(self.cap)
    }
}

/// The readers' view of the two sinks' buffers.
#[derive(Clone, Copy)]
struct Reader {
    inputs: *const Scalar,
    aux: *const Scalar,
}

// SAFETY: only shared reads of published (never again written) prefixes go through a Reader.
unsafe impl Send for Reader {}
// SAFETY: as above.
unsafe impl Sync for Reader {}

impl Reader {
    /// The published prefixes.
    ///
    /// # Safety
    /// `p` must have been returned by the [`Progress`] of the sinks this reader was made from,
    /// while their buffers are alive.
    unsafe fn slices(&self, p: Published) -> (&[Scalar], &[Scalar]) {
        // SAFETY: per the contract, the first p.inputs / p.aux values were written before they
        // were published (the lock orders the writes before our read of `p`) and are not
        // written again; the buffers are alive and at least that long.
        unsafe {
            (
                std::slice::from_raw_parts(self.inputs, p.inputs),
                std::slice::from_raw_parts(self.aux, p.aux),
            )
        }
    }
}

/// The output of one synthesis: a, b, c, the input and aux assignments, and the timings.
pub(super) type Output = (
    HostVec<Scalar>,
    HostVec<Scalar>,
    HostVec<Scalar>,
    Vec<Scalar>,
    HostVec<Scalar>,
    PceTimings,
);

/// Witness on a thread of its own, products of the ready row blocks on the caller's side.
///
/// a, b, c and the aux assignment go into `backend`'s host memory when it gives some
/// ([`HostVec::with_capacity_in`]: pinned on a device backend), else on the heap. a, b and c get
/// room for the whole evaluation domain (the next power of two), so that the prover's zero
/// padding fills them in place instead of moving them.
pub(super) fn synthesize<C: Circuit<Scalar> + Send>(
    pce: &Pce,
    circuit: C,
    backend: Option<&Arc<dyn Backend>>,
) -> Result<Output> {
    let start = Instant::now();
    let n = pce.num_constraints();
    let domain = n.max(1).next_power_of_two();
    let needs = pce.needs();
    let mut inputs: Vec<Scalar> = Vec::with_capacity(pce.num_inputs());
    let mut aux: HostVec<Scalar> = HostVec::with_capacity_in(pce.num_aux(), backend);
    let (mut a, mut b, mut c) = (
        HostVec::<Scalar>::with_capacity_in(domain, backend),
        HostVec::<Scalar>::with_capacity_in(domain, backend),
        HostVec::<Scalar>::with_capacity_in(domain, backend),
    );
    // The witness thread fills the aux buffer alone and in order: huge pages and a thread backing
    // it ahead spare it the page faults (bench/history/synthesis.md has the measurement). a, b, c
    // are written by every core at once and are left alone (huge pages there measured no
    // better). A backend's (pinned) memory is backed already.
    let heap_aux = !aux.is_backend_memory();
    if heap_aux {
        crate::page_advice::advise_huge(aux.spare_capacity_mut());
    }
    let in_sink = Sink::new(&mut inputs.spare_capacity_mut()[..pce.num_inputs()]);
    let aux_sink = Sink::new(&mut aux.spare_capacity_mut()[..pce.num_aux()]);
    let aux_bytes = if heap_aux {
        pce.num_aux() * std::mem::size_of::<Scalar>()
    } else {
        0
    };
    let reader = Reader {
        inputs: in_sink.ptr,
        aux: aux_sink.ptr,
    };
    let progress = Progress::default();
    let (witness, driven) = thread::scope(|s| {
        let progress = &progress;
        let spawned = thread::Builder::new()
            .name("bellows-witness".into())
            .stack_size(WITNESS_STACK)
            .spawn_scoped(s, move || {
                let _done = FinishOnDrop(progress);
                let r = witness::run(pce, circuit, in_sink, aux_sink, progress);
                (r, start.elapsed())
            });
        let handle = match spawned {
            Ok(h) => h,
            Err(e) => {
                let e = Error::io("starting the witness thread", e);
                return (Err(e), Drive::default());
            }
        };
        // The aux buffer backed ahead of the witness, which would otherwise fault in every page
        // of it itself (a thread of its own; the kernel touches no byte the witness writes).
        let ahead = Populate(reader.aux.cast::<u8>());
        let _ = thread::Builder::new()
            .name("bellows-populate".into())
            .spawn_scoped(s, move || {
                let ahead = ahead;
                for off in (0..aux_bytes).step_by(POPULATE_CHUNK) {
                    // SAFETY: [off, off + len) lies inside the aux buffer's capacity (aux_bytes
                    // bytes), alive until the scope ends.
                    unsafe {
                        crate::page_advice::populate(
                            ahead.0.add(off),
                            POPULATE_CHUNK.min(aux_bytes - off),
                        )
                    };
                }
            });
        let driven = drive(
            pce,
            needs,
            progress,
            reader,
            &mut a.spare_capacity_mut()[..n],
            &mut b.spare_capacity_mut()[..n],
            &mut c.spare_capacity_mut()[..n],
        );
        let witness = handle.join().map_err(|panic| {
            let what = crate::error::panic_message(&*panic);
            Error::Synthesis(format!("the circuit panicked during synthesis: {what}"))
        });
        (witness, driven)
    });
    let (produced, witness_time) = match witness {
        Ok((Ok(p), t)) => (p, t),
        Ok((Err(e), _)) | Err(e) => return Err(e),
    };
    let blocks = pce.header.num_blocks() as usize;
    if driven.blocks != blocks {
        // The witness succeeded with the recording's counts, so every block was ready.
        return Err(Error::invalid(format!(
            "internal error: {} of {blocks} row blocks evaluated after a complete witness",
            driven.blocks
        )));
    }
    if let Some(j) = driven.first_bad {
        return Err(crate::groth16::synthesis::unsatisfied_at(j, n));
    }
    // SAFETY: the witness returned Ok, so it pushed exactly the recording's numbers of inputs
    // and aux values (checked in `witness::run`), all stored (the sinks' capacities are those
    // numbers); every block was evaluated, which writes each of the n elements of a, b and c.
    unsafe {
        inputs.set_len(produced.inputs);
        aux.set_len(produced.aux);
        a.set_len(n);
        b.set_len(n);
        c.set_len(n);
    }
    let products = start.elapsed().saturating_sub(witness_time);
    Ok((
        a,
        b,
        c,
        inputs,
        aux,
        PceTimings {
            witness: witness_time,
            products,
        },
    ))
}

/// What the driver did.
#[derive(Default)]
struct Drive {
    /// Row blocks evaluated (a prefix).
    blocks: usize,
    /// The first unsatisfied row among them.
    first_bad: Option<usize>,
}

/// Evaluates row blocks as the witness makes them ready, until all are done or the witness is.
fn drive(
    pce: &Pce,
    needs: &[eval::Need],
    progress: &Progress,
    reader: Reader,
    mut a: &mut [MaybeUninit<Scalar>],
    mut b: &mut [MaybeUninit<Scalar>],
    mut c: &mut [MaybeUninit<Scalar>],
) -> Drive {
    let block_rows = pce.header.block_rows as usize;
    let mut out = Drive::default();
    let mut seen = Published::default();
    while out.blocks < needs.len() {
        let p = progress.wait_past(seen);
        seen = p;
        let ready = needs.partition_point(|n| n.inputs <= p.inputs && n.aux <= p.aux);
        if ready > out.blocks {
            let rows = (ready * block_rows).min(a.len() + out.blocks * block_rows)
                - out.blocks * block_rows;
            let (a0, a1) = std::mem::take(&mut a).split_at_mut(rows);
            let (b0, b1) = std::mem::take(&mut b).split_at_mut(rows);
            let (c0, c1) = std::mem::take(&mut c).split_at_mut(rows);
            (a, b, c) = (a1, b1, c1);
            // SAFETY: `p` came from this reader's progress, and the buffers live until the
            // caller's scope ends, after this function returns.
            let (inputs, aux) = unsafe { reader.slices(p) };
            let bad = eval::evaluate_blocks(pce, inputs, aux, out.blocks, a0, b0, c0);
            out.first_bad = out.first_bad.or(bad);
            out.blocks = ready;
        }
        if p.done {
            // The final counts were published before `done`: nothing more will become ready.
            break;
        }
    }
    out
}

//! Pinned host memory the backend lends to the prover ([`MemoryPool::alloc_host`]).
//!
//! Synthesis writes a proof's a, b, c and aux assignment into blocks from here, so the copy
//! engine reads them directly ([`crate::CudaDevice::upload_staged`] skips its staging copy for
//! any range [`is_pinned`] knows) and the writer takes no page faults (pinned pages are backed).
//!
//! Page-locking is slow (every page is backed, pinned and mapped for the GPU; [`PinMethod`] says
//! how, docs/benchmarks.md what it costs), and a prover asks for blocks of the same few sizes
//! proof after proof, so a returned block is kept idle and handed out again for a request of its
//! size (up to a quarter smaller). A size over [`SYNC_MAX`] is declined until it is asked for
//! again [`REPEAT_AFTER`] later (the caller uses its heap meanwhile, exactly as without the
//! lender): a one-off proof never waits for pinning, and a shape proved repeatedly pays it once.
//! What the lender holds, lent and idle, stays under a limit (option `pinned-host-limit`; default
//! half of the host's memory, as pinned pages cannot be swapped); past it, idle blocks are
//! released and, if that is not enough, the request is declined. An idle block not reused for
//! [`IDLE_KEEP`] is released at the lender's next call (a block reserved ahead of need, not before
//! [`RESERVED_KEEP`]), and `trim` releases every idle block. Blocks are pinned portable, so every
//! GPU of the process reads them at full speed.
//!
//! [`MemoryPool::alloc_host`]: bellows_backend_api::backend::MemoryPool::alloc_host

use std::{
    collections::{BTreeMap, HashMap},
    ptr::NonNull,
    sync::{Mutex, MutexGuard},
    time::{Duration, Instant},
};

use bellows_backend_api::{Error, Result};

mod driver;
pub use driver::{DriverHost, PinMethod};

/// Every pinned block of the process (start → bytes), lent or idle, from every lender.
static PINNED: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

fn pinned() -> MutexGuard<'static, BTreeMap<usize, usize>> {
    PINNED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `[ptr, ptr + bytes)` lies inside one pinned block of a lender.
pub fn is_pinned(ptr: *const u8, bytes: usize) -> bool {
    let start = ptr as usize;
    let map = pinned();
    match map.range(..=start).next_back() {
        Some((&s, &len)) => start.checked_add(bytes).is_some_and(|end| end <= s + len),
        None => false,
    }
}

/// Where the blocks come from: the driver on a GPU machine, the heap in tests.
pub trait RawHost: Send + Sync {
    /// `bytes` of host memory aligned to [`HOST_ALIGN`].
    ///
    /// [`HOST_ALIGN`]: bellows_backend_api::backend::HOST_ALIGN
    fn alloc(&self, bytes: usize) -> Result<NonNull<u8>>;
    /// Releases a block.
    ///
    /// # Safety
    /// `ptr` came from `alloc(bytes)` on this source and is released once.
    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize);
}

#[derive(Default)]
struct State {
    /// Lent blocks: start → their real size.
    lent: HashMap<usize, usize>,
    /// Blocks kept for reuse: (start, size, when they are released if not lent by then).
    idle: Vec<(usize, usize, Instant)>,
    /// Bytes of every block held (lent, idle, and being allocated).
    held: u64,
    /// When each large size was first asked for ([`REPEAT_AFTER`]).
    first_seen: HashMap<usize, Instant>,
}

/// What the lender and its background thread share.
struct Shared<R> {
    raw: R,
    limit: u64,
    state: Mutex<State>,
}

impl<R: RawHost> Shared<R> {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn release(&self, blocks: Vec<(usize, usize)>) {
        if blocks.is_empty() {
            return;
        }
        let mut map = pinned();
        for &(p, _) in &blocks {
            map.remove(&p);
        }
        drop(map);
        for (p, n) in blocks {
            // SAFETY: p was allocated by self.raw with n bytes and was idle (owned by no one);
            // it has just left every table, so it is released once.
            unsafe {
                self.raw
                    .free(NonNull::new(p as *mut u8).expect("non-null block"), n)
            };
        }
    }

    /// Allocates a block already counted in `held`; on failure uncounts it (logged).
    fn allocate(&self, bytes: usize) -> Option<NonNull<u8>> {
        match self.raw.alloc(bytes) {
            Ok(p) => {
                pinned().insert(p.as_ptr() as usize, bytes);
                Some(p)
            }
            Err(e) => {
                self.lock().held -= bytes as u64;
                tracing::warn!("{e}; the heap is used instead");
                None
            }
        }
    }
}

/// Largest block allocated on its first request (default of [`HostLender::with_first_use`]).
pub const SYNC_MAX: usize = 64 << 20;

/// A larger size is declined (the caller uses its heap, as it would without this lender) until
/// it is asked for again at least this long after its first request; then it is allocated. A
/// one-off proof, and every proof of a first batch (which ask within milliseconds of each
/// other), never wait for pinning: pinning a batch's blocks as they are asked for makes its
/// first call wait for the pinning, and pinning them on a background thread stalled the device
/// calls (measured with `pin-method=alloc`: the driver holds its locks while it pins); the
/// second batch of the shape pays the pinning once and later ones reuse the blocks.
pub const REPEAT_AFTER: Duration = Duration::from_secs(1);

/// An idle block not reused for this long is released at the lender's next call: a daemon that
/// moves on to another circuit shape does not keep the old shape's pinned memory (which the
/// daemon's byte budget does not see) beyond that.
pub const IDLE_KEEP: Duration = Duration::from_secs(60);

/// How long a block reserved ahead of need ([`HostLender::reserve`]) waits for its first use:
/// a reservation made while a large key loads (a 32 GiB PoRep's: docs/benchmarks.md, "32 GiB
/// PoRep C2") must still be there when the proofs start, or they pay the pinning it was for.
pub const RESERVED_KEEP: Duration = Duration::from_secs(600);

/// The index of the smallest idle block that serves a request of `bytes` (at least that large,
/// and at most a quarter larger), among those whose start is not in `skip`.
fn best_fit(idle: &[(usize, usize, Instant)], bytes: usize, skip: &[usize]) -> Option<usize> {
    idle.iter()
        .enumerate()
        .filter(|(_, &(p, n, _))| n >= bytes && n - bytes <= bytes / 4 && !skip.contains(&p))
        .min_by_key(|(_, &(_, n, _))| n)
        .map(|(i, _)| i)
}

/// Lends pinned blocks under a byte limit, keeping returned ones for reuse.
pub struct HostLender<R: RawHost> {
    shared: Shared<R>,
    sync_max: usize,
    repeat_after: Duration,
    keep_idle: Duration,
    keep_reserved: Duration,
}

impl<R: RawHost> HostLender<R> {
    /// A lender holding at most `limit` bytes (0: lends nothing).
    pub fn new(raw: R, limit: u64) -> Self {
        Self {
            shared: Shared {
                raw,
                limit,
                state: Mutex::new(State::default()),
            },
            sync_max: SYNC_MAX,
            repeat_after: REPEAT_AFTER,
            keep_idle: IDLE_KEEP,
            keep_reserved: RESERVED_KEEP,
        }
    }

    /// The same lender releasing idle blocks not reused for `keep` ([`IDLE_KEEP`]).
    pub fn with_idle_keep(mut self, keep: Duration) -> Self {
        self.keep_idle = keep;
        self
    }

    /// The same lender keeping blocks reserved ahead of need for `keep` ([`RESERVED_KEEP`]).
    pub fn with_reserved_keep(mut self, keep: Duration) -> Self {
        self.keep_reserved = keep;
        self
    }

    /// Takes out the idle blocks past their time (`keep_idle` after their return,
    /// `keep_reserved` after a reservation), released by the caller, outside the lock.
    fn expire(&self, st: &mut State) -> Vec<(usize, usize)> {
        let now = Instant::now();
        let mut out = Vec::new();
        st.idle.retain(|&(p, n, until)| {
            let keep = now < until;
            if !keep {
                out.push((p, n));
            }
            keep
        });
        st.held -= out.iter().map(|&(_, n)| n as u64).sum::<u64>();
        out
    }

    /// The same lender allocating blocks up to `bytes` on their first request, larger ones
    /// when asked for again `after` their first request ([`SYNC_MAX`], [`REPEAT_AFTER`]).
    pub fn with_first_use(mut self, bytes: usize, after: Duration) -> Self {
        self.sync_max = bytes;
        self.repeat_after = after;
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.lock()
    }

    /// Bytes held now (lent and idle).
    pub fn held(&self) -> u64 {
        self.lock().held
    }

    /// Bytes idle (returned, kept for reuse).
    pub fn idle(&self) -> u64 {
        self.lock().idle.iter().map(|&(_, n, _)| n as u64).sum()
    }

    /// Releases idle blocks (largest first) until `want` more bytes fit under the limit, or
    /// none is left; returns the released blocks (freed by the caller, outside the lock).
    fn make_room(st: &mut State, want: u64, limit: u64) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        st.idle.sort_by_key(|&(_, n, _)| n);
        while st.held + want > limit {
            let Some((p, n, _)) = st.idle.pop() else {
                break;
            };
            st.held -= n as u64;
            out.push((p, n));
        }
        out
    }

    /// A block of at least `bytes`: an idle one of that size (up to a quarter larger), else a
    /// new one (at once up to [`SYNC_MAX`], else from the second request of the size on, see
    /// [`REPEAT_AFTER`]); `None` before that, past the limit, or when the driver declines
    /// (logged).
    pub fn alloc(&self, bytes: usize) -> Option<NonNull<u8>> {
        if bytes == 0 {
            return None;
        }
        let mut st = self.lock();
        let expired = self.expire(&mut st);
        if let Some(i) = best_fit(&st.idle, bytes, &[]) {
            let (p, n, _) = st.idle.swap_remove(i);
            st.lent.insert(p, n);
            drop(st);
            self.shared.release(expired);
            return NonNull::new(p as *mut u8);
        }
        let mut freed = expired;
        if bytes > self.sync_max {
            let now = Instant::now();
            let first = *st.first_seen.entry(bytes).or_insert(now);
            if now.duration_since(first) < self.repeat_after {
                drop(st);
                self.shared.release(freed);
                tracing::debug!(
                    "pinned host memory: {bytes} bytes asked for the first time and not \
                     reserved; the heap is used"
                );
                return None;
            }
        }
        let limit = self.shared.limit;
        freed.extend(Self::make_room(&mut st, bytes as u64, limit));
        if st.held + bytes as u64 > limit {
            drop(st);
            self.shared.release(freed);
            tracing::debug!(
                "pinned host memory: {bytes} bytes would pass the limit of {limit} bytes; the \
                 heap is used"
            );
            return None;
        }
        st.held += bytes as u64;
        drop(st);
        self.shared.release(freed);
        let p = self.shared.allocate(bytes)?;
        self.lock().lent.insert(p.as_ptr() as usize, bytes);
        Some(p)
    }

    /// Takes a lent block back (kept idle for reuse).
    pub fn free(&self, ptr: NonNull<u8>) -> Result<()> {
        let mut st = self.lock();
        let p = ptr.as_ptr() as usize;
        let n = st.lent.remove(&p).ok_or_else(|| {
            Error::invalid(format!(
                "free_host: {p:#x} is not a block this backend lent (or it was returned already)"
            ))
        })?;
        st.idle.push((p, n, Instant::now() + self.keep_idle));
        let expired = self.expire(&mut st);
        drop(st);
        self.shared.release(expired);
        Ok(())
    }

    /// Makes blocks of `sizes` ready ahead of need ([`MemoryPool::reserve_host`]): for each
    /// size that no idle block already serves (the smallest that does is kept for it), a block
    /// is allocated now and kept idle, under the limit (sizes past it are left to the heap,
    /// logged). Every block serving the reservation is then kept at least [`RESERVED_KEEP`].
    /// Returns the bytes newly allocated.
    /// Those blocks then serve the first requests of their sizes at once, where a request would
    /// otherwise be declined until it comes again ([`REPEAT_AFTER`]).
    ///
    /// [`MemoryPool::reserve_host`]: bellows_backend_api::backend::MemoryPool::reserve_host
    pub fn reserve(&self, sizes: &[usize]) -> u64 {
        let mut added = 0u64;
        // Idle blocks already counted for an earlier size of this call.
        let mut taken: Vec<usize> = Vec::new();
        let keep = self.keep_idle.max(self.keep_reserved);
        for &bytes in sizes.iter().filter(|&&b| b > 0) {
            let mut st = self.lock();
            let expired = self.expire(&mut st);
            // The best fit, as `alloc` lends: a slightly larger block taken for a smaller
            // size would leave that size's own request without one.
            if let Some(i) = best_fit(&st.idle, bytes, &taken) {
                let entry = &mut st.idle[i];
                entry.2 = entry.2.max(Instant::now() + keep);
                taken.push(entry.0);
                drop(st);
                self.shared.release(expired);
                continue;
            }
            if st.held + bytes as u64 > self.shared.limit {
                drop(st);
                self.shared.release(expired);
                tracing::info!(
                    "pinned host memory: reserving {bytes} bytes would pass the limit of {} \
                     bytes; left to the heap",
                    self.shared.limit
                );
                continue;
            }
            st.held += bytes as u64;
            drop(st);
            self.shared.release(expired);
            if let Some(p) = self.shared.allocate(bytes) {
                let p = p.as_ptr() as usize;
                self.lock().idle.push((p, bytes, Instant::now() + keep));
                taken.push(p);
                added += bytes as u64;
            }
        }
        added
    }

    /// Releases every idle block.
    pub fn trim(&self) {
        let mut st = self.lock();
        let blocks: Vec<(usize, usize)> = st.idle.drain(..).map(|(p, n, _)| (p, n)).collect();
        st.held -= blocks.iter().map(|&(_, n)| n as u64).sum::<u64>();
        drop(st);
        self.shared.release(blocks);
    }
}

impl<R: RawHost> Drop for HostLender<R> {
    fn drop(&mut self) {
        // Lent blocks cannot outlive the backend (each holds it); idle ones go back now.
        self.trim();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bellows_backend_api::backend::HOST_ALIGN;

    use super::*;

    /// Heap blocks, counted; sizes in `refuse` are refused (driver.rs's tests too).
    #[derive(Default)]
    pub(super) struct Heap {
        refuse: Vec<usize>,
        live: Mutex<std::collections::HashSet<usize>>,
        pub(super) allocs: AtomicUsize,
        pub(super) frees: AtomicUsize,
    }

    impl Heap {
        pub(super) fn refusing(refuse: &[usize]) -> Self {
            Self {
                refuse: refuse.to_vec(),
                ..Self::default()
            }
        }

        /// Whether `p` is a live block of this source.
        pub(super) fn owns(&self, p: NonNull<u8>) -> bool {
            self.live.lock().unwrap().contains(&(p.as_ptr() as usize))
        }
    }

    impl RawHost for Heap {
        fn alloc(&self, bytes: usize) -> Result<NonNull<u8>> {
            self.allocs.fetch_add(1, Ordering::SeqCst);
            if self.refuse.contains(&bytes) {
                return Err(Error::invalid(format!("refused {bytes}")));
            }
            let layout = std::alloc::Layout::from_size_align(bytes, HOST_ALIGN).unwrap();
            // SAFETY: bytes > 0 (the lender never asks for none, nor do the tests).
            let p = NonNull::new(unsafe { std::alloc::alloc(layout) }).unwrap();
            self.live.lock().unwrap().insert(p.as_ptr() as usize);
            Ok(p)
        }
        unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
            assert!(
                self.live.lock().unwrap().remove(&(ptr.as_ptr() as usize)),
                "a block freed by a source that did not make it"
            );
            self.frees.fetch_add(1, Ordering::SeqCst);
            let layout = std::alloc::Layout::from_size_align(bytes, HOST_ALIGN).unwrap();
            // SAFETY: allocated above with this layout.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
        }
    }

    #[test]
    fn reserved_blocks_serve_first_requests_at_once() {
        let lender = HostLender::new(Heap::default(), 10_000).with_first_use(100, REPEAT_AFTER);
        // Three blocks; the second 1000 is not served by the first's block.
        assert_eq!(lender.reserve(&[1000, 1000, 500]), 2500);
        assert_eq!(lender.idle(), 2500);
        // Again: already there, nothing new.
        assert_eq!(lender.reserve(&[1000, 500]), 0);
        // A large size's first request is served (it would be declined without the reserve).
        let a = lender.alloc(1000).expect("reserved");
        let b = lender
            .alloc(900)
            .expect("within a quarter of a reserved 1000");
        assert!(is_pinned(a.as_ptr(), 1000) && is_pinned(b.as_ptr(), 900));
        assert!(
            lender.alloc(2000).is_none(),
            "not reserved: declined on first request"
        );
        // Past the limit: nothing reserved.
        assert_eq!(lender.reserve(&[20_000]), 0);
        lender.free(a).unwrap();
        lender.free(b).unwrap();
        assert_eq!(lender.shared.raw.allocs.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn reserved_blocks_wait_for_their_first_use_and_fit_best() {
        // A reservation made while a key loads outlives the idle keep of a returned block.
        let lender = HostLender::new(Heap::default(), 10_000)
            .with_first_use(100, REPEAT_AFTER)
            .with_idle_keep(Duration::from_millis(20))
            .with_reserved_keep(Duration::from_secs(60));
        // Sizes as a proof asks them: a, b, c of one size and a slightly smaller aux.
        assert_eq!(lender.reserve(&[1000, 1000, 970]), 2970);
        std::thread::sleep(Duration::from_millis(40));
        // Asked again (the pipeline after the load): every block still serves, the smaller
        // size its own block, so nothing new is made.
        assert_eq!(lender.reserve(&[1000, 1000, 970]), 0);
        let got: Vec<_> = [1000, 1000, 970]
            .iter()
            .map(|&n| lender.alloc(n).expect("reserved, not expired"))
            .collect();
        assert_eq!(lender.shared.raw.allocs.load(Ordering::SeqCst), 3);
        assert_eq!(lender.shared.raw.frees.load(Ordering::SeqCst), 0);
        // Once returned, a block is kept only the idle keep.
        for p in got {
            lender.free(p).unwrap();
        }
        std::thread::sleep(Duration::from_millis(40));
        assert!(lender.alloc(50).is_some());
        assert_eq!(
            lender.idle(),
            0,
            "returned blocks past the idle keep are released"
        );
        assert_eq!(lender.shared.raw.frees.load(Ordering::SeqCst), 3);
        // Asked again with the smaller size first: it keeps its own block (the first fit would
        // take the larger one and leave the larger size a new block to pin).
        let fresh = HostLender::new(Heap::default(), 10_000).with_first_use(100, REPEAT_AFTER);
        assert_eq!(fresh.reserve(&[1000, 970]), 1970);
        assert_eq!(fresh.reserve(&[970, 1000]), 0, "best fit: both served");
    }

    #[test]
    fn blocks_are_reused_registered_and_limited() {
        let lender = HostLender::new(Heap::default(), 10_000);
        let a = lender.alloc(4000).unwrap();
        assert!(is_pinned(a.as_ptr(), 4000));
        // SAFETY: pointer arithmetic inside the block, for the registry check only.
        assert!(is_pinned(unsafe { a.as_ptr().add(1000) }, 3000));
        assert!(!is_pinned(a.as_ptr(), 4001));
        let b = lender.alloc(4000).unwrap();
        assert_eq!(lender.held(), 8000);
        // Past the limit with nothing idle: declined.
        assert!(lender.alloc(4000).is_none());
        lender.free(a).unwrap();
        assert!(lender.free(a).is_err(), "a second return is refused");
        // A request of a size the idle block serves reuses it (still registered as pinned).
        let c = lender.alloc(3500).unwrap();
        assert_eq!(c, a);
        assert!(is_pinned(c.as_ptr(), 4000));
        assert_eq!(lender.shared.raw.allocs.load(Ordering::SeqCst), 2);
        // Too small a request for the idle block (over a quarter of waste) makes a new one,
        // releasing the idle block to stay under the limit.
        lender.free(c).unwrap();
        let d = lender.alloc(3000).unwrap();
        assert_eq!(lender.shared.raw.frees.load(Ordering::SeqCst), 1);
        assert!(
            !is_pinned(a.as_ptr(), 4000) || a == d,
            "released blocks leave the registry"
        );
        assert_eq!(lender.held(), 7000);
        lender.free(b).unwrap();
        lender.free(d).unwrap();
        assert_eq!(lender.idle(), 7000);
        lender.trim();
        assert_eq!((lender.held(), lender.idle()), (0, 0));
        assert_eq!(lender.shared.raw.frees.load(Ordering::SeqCst), 3);
        assert!(!is_pinned(b.as_ptr(), 1));
        // Past the first-use size, a size is declined until it is asked for again later.
        let later =
            HostLender::new(Heap::default(), 10_000).with_first_use(100, Duration::from_millis(30));
        assert!(later.alloc(4000).is_none());
        assert!(
            later.alloc(4000).is_none(),
            "asked again at once: still declined"
        );
        assert_eq!(later.held(), 0);
        std::thread::sleep(Duration::from_millis(40));
        let e = later.alloc(4000).unwrap();
        assert!(is_pinned(e.as_ptr(), 4000));
        assert!(later.alloc(50).is_some(), "small blocks are made at once");
        later.free(e).unwrap();
        assert_eq!(later.alloc(3900), Some(e), "and then reused");
        drop(later);
        // Idle blocks not reused for a while are released at the next call.
        let brief =
            HostLender::new(Heap::default(), 10_000).with_idle_keep(Duration::from_millis(20));
        let f = brief.alloc(1000).unwrap();
        brief.free(f).unwrap();
        assert_eq!(brief.idle(), 1000);
        std::thread::sleep(Duration::from_millis(30));
        let g = brief.alloc(500).unwrap();
        assert_eq!((brief.idle(), brief.held()), (0, 500));
        assert_eq!(brief.shared.raw.frees.load(Ordering::SeqCst), 1);
        brief.free(g).unwrap();
        drop(brief);
        // A zero limit lends nothing.
        let none = HostLender::new(Heap::default(), 0);
        assert!(none.alloc(64).is_none());
        assert!(none.free(b).is_err());
    }
}

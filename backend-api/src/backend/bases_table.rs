//! The table of resident bases: what a backend holds for each [`BasesHandle`] it handed out.
//!
//! Every backend keeps one (the CPU backend its shared points, a GPU backend its device
//! buffers, the plugin host the points it lent a plugin), and every one needs the same checks:
//! a handle must be one this table issued and not freed, and the group and length it claims must
//! be those it was issued for. [`BasesTable`] does that once, so a backend's `msm_*` and
//! `free_bases` start from a checked entry and an error that says what was wrong.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::{BasesHandle, Group};
use crate::{Error, Result};

/// Resident bases by handle, each stored with the handle it was issued under.
#[derive(Debug)]
pub struct BasesTable<T> {
    entries: Mutex<HashMap<u64, (BasesHandle, T)>>,
    next_id: AtomicU64,
}

impl<T> Default for BasesTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> BasesTable<T> {
    /// An empty table; the first handle it issues has id 1.
    pub fn new() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, (BasesHandle, T)>> {
        // Entries are inserted and removed whole: a panic elsewhere while the lock was held
        // cannot leave the map half-changed, so a poisoned lock is still usable.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores `value` for `len` points of `group` under a new handle (ids are never reused).
    pub fn insert(&self, group: Group, len: usize, value: T) -> BasesHandle {
        let handle = BasesHandle {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            group,
            len: len as u64,
        };
        self.lock().insert(handle.id, (handle, value));
        handle
    }

    /// Stores `value` under a handle issued elsewhere (the plugin host records the handles a
    /// plugin returns). Gives the value back when the id is already in the table.
    pub fn insert_issued(&self, handle: BasesHandle, value: T) -> std::result::Result<(), T> {
        let mut map = self.lock();
        if map.contains_key(&handle.id) {
            return Err(value);
        }
        map.insert(handle.id, (handle, value));
        Ok(())
    }

    /// The stored handle of `handle.id` if the claim matches it, else why not.
    fn check(stored: Option<&BasesHandle>, handle: BasesHandle) -> Result<()> {
        match stored {
            None => Err(Error::invalid(format!(
                "bases handle {} is not resident (unknown, or freed)",
                handle.id
            ))),
            Some(s) if s.group != handle.group || s.len != handle.len => {
                Err(Error::invalid(format!(
                    "bases handle {} claims {:?} × {} points but was issued for {:?} × {}",
                    handle.id, handle.group, handle.len, s.group, s.len
                )))
            }
            Some(_) => Ok(()),
        }
    }

    /// Runs `f` on the entry of `handle`, checked as [`BasesTable::get`] checks it, with the
    /// table locked (keep `f` short).
    pub fn with<R>(
        &self,
        handle: BasesHandle,
        group: Group,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<R> {
        Self::want_group(handle, group)?;
        let mut map = self.lock();
        let entry = map.get_mut(&handle.id);
        Self::check(entry.as_ref().map(|(h, _)| h), handle)?;
        let (_, value) = entry.expect("checked above");
        Ok(f(value))
    }

    /// A clone of the entry of `handle` for an operation on `group`: an
    /// [`Error::InvalidInput`] when the handle is of the other group, was not issued by this
    /// table or was freed, or claims another group or length than it was issued for.
    pub fn get(&self, handle: BasesHandle, group: Group) -> Result<T>
    where
        T: Clone,
    {
        self.with(handle, group, |v| v.clone())
    }

    /// Removes the entry of `handle` (checked as by [`BasesTable::get`], any group) and returns
    /// it, unless `keep` says why it must stay (the error is returned as it is).
    pub fn remove_unless(
        &self,
        handle: BasesHandle,
        keep: impl FnOnce(&T) -> Option<Error>,
    ) -> Result<T> {
        let mut map = self.lock();
        let entry = map.get(&handle.id);
        Self::check(entry.map(|(h, _)| h), handle)?;
        if let Some(e) = keep(&entry.expect("checked above").1) {
            return Err(e);
        }
        Ok(map.remove(&handle.id).expect("checked above").1)
    }

    /// Removes the entry of `handle` (checked as by [`BasesTable::get`], any group).
    pub fn remove(&self, handle: BasesHandle) -> Result<T> {
        self.remove_unless(handle, |_| None)
    }

    /// Calls `f` on every entry, the table locked (keep `f` short).
    pub fn for_each(&self, mut f: impl FnMut(&BasesHandle, &T)) {
        for (h, v) in self.lock().values() {
            f(h, v);
        }
    }

    /// Number of resident handles.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no handle is resident.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn want_group(handle: BasesHandle, group: Group) -> Result<()> {
        if handle.group == group {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "bases handle {} holds {:?} points, not {group:?}",
                handle.id, handle.group
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(r: Result<impl std::fmt::Debug>) -> String {
        match r {
            Err(Error::InvalidInput(m)) => m,
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn handles_are_checked_and_never_reused() {
        let t = BasesTable::new();
        let a = t.insert(Group::G1, 10, "a");
        let b = t.insert(Group::G2, 3, "b");
        assert_ne!(a.id, b.id);
        assert_eq!((a.group, a.len), (Group::G1, 10));
        assert_eq!(t.get(a, Group::G1).unwrap(), "a");
        assert_eq!(t.get(b, Group::G2).unwrap(), "b");
        assert_eq!(t.len(), 2);

        // The other group, a forged length, a forged group, an unknown id.
        assert!(msg(t.get(a, Group::G2)).contains("holds G1 points, not G2"));
        let longer = BasesHandle { len: 11, ..a };
        assert!(msg(t.get(longer, Group::G1)).contains("claims G1 × 11"));
        let regrouped = BasesHandle {
            group: Group::G2,
            ..a
        };
        assert!(msg(t.get(regrouped, Group::G2)).contains("issued for G1 × 10"));
        let unknown = BasesHandle { id: 99, ..a };
        assert!(msg(t.get(unknown, Group::G1)).contains("not resident"));

        // Removal: once, then the handle is dead and its id is not issued again.
        assert_eq!(t.remove(a).unwrap(), "a");
        assert!(msg(t.get(a, Group::G1)).contains("not resident"));
        assert!(msg(t.remove(a)).contains("not resident"));
        let c = t.insert(Group::G1, 10, "c");
        assert!(c.id != a.id && c.id != b.id);
        assert_eq!(t.len(), 2);
        let mut seen = Vec::new();
        t.for_each(|h, v| seen.push((h.id, *v)));
        seen.sort();
        assert_eq!(seen, vec![(b.id, "b"), (c.id, "c")]);
    }

    #[test]
    fn issued_handles_and_guarded_removal() {
        let t = BasesTable::new();
        let h = BasesHandle {
            id: 7,
            group: Group::G1,
            len: 4,
        };
        t.insert_issued(h, 0usize).unwrap();
        assert_eq!(t.insert_issued(h, 5), Err(5), "an id already in the table");
        t.with(h, Group::G1, |v| *v += 1).unwrap();
        let busy = t.remove_unless(h, |v| (*v > 0).then(|| Error::invalid("in flight")));
        assert!(msg(busy).contains("in flight"));
        assert_eq!(t.get(h, Group::G1).unwrap(), 1, "kept when refused");
        t.with(h, Group::G1, |v| *v -= 1).unwrap();
        assert_eq!(t.remove_unless(h, |_| None).unwrap(), 0);
        assert!(t.is_empty());
    }
}

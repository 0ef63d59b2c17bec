//! The gate that lets at most two journals over 1 MiB (`GATED_BYTES`) be
//! parsed at once (`BIG_PARSES`), whatever the number of threads that
//! read journals: the bound on what judging giant journals takes in
//! memory. The reader ([`super::read`]) takes a place here before such a
//! parse and gives it back once the parse, and with it the parser's
//! scratch buffer, is done.

use std::sync::{Condvar, Mutex, PoisonError};

/// Journals larger than this are parsed [`BIG_PARSES`] at a time. Smaller
/// ones never wait: the scratch buffer of their parse stays under about
/// this much, whatever they hold.
pub(super) const GATED_BYTES: u64 = 1024 * 1024;

/// How many journals larger than [`GATED_BYTES`] are parsed at any moment,
/// by the scan's threads and the recoveries' re-reads together. A journal's
/// parse holds its longest string whole (serde_json's stream reader copies
/// each string into one scratch buffer before it is checked), so a journal
/// that is one giant string takes memory its size; without the gate, each
/// scan thread could hold one (16 threads: about 1 GiB).
pub(super) static BIG_PARSES: Gate = Gate::new(2);

/// A counting semaphore: at most `places` holders of a [`Place`] at once.
pub(super) struct Gate {
    places: usize,
    pub(super) count: Mutex<Count>,
    freed: Condvar,
}

/// Places taken now, and the most ever taken at once (for the tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Count {
    pub(super) taken: usize,
    pub(super) most: usize,
}

impl Gate {
    pub(super) const fn new(places: usize) -> Gate {
        Gate {
            places,
            count: Mutex::new(Count { taken: 0, most: 0 }),
            freed: Condvar::new(),
        }
    }

    /// Waits until a place is free and takes it. The count is plain numbers
    /// that no panic can leave half-changed, so a poisoned lock still
    /// guards good ones.
    pub(super) fn enter(&self) -> Place<'_> {
        let mut count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
        while count.taken >= self.places {
            count = self
                .freed
                .wait(count)
                .unwrap_or_else(PoisonError::into_inner);
        }
        count.taken += 1;
        count.most = count.most.max(count.taken);
        Place(self)
    }
}

/// A place at a [`Gate`], given back when dropped.
pub(super) struct Place<'g>(&'g Gate);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let gate = self.0;
        gate.count
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .taken -= 1;
        gate.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_lets_no_more_in_than_it_has_places() {
        use std::sync::atomic::{AtomicBool, Ordering};
        static GATE: Gate = Gate::new(2);
        let first = GATE.enter();
        let second = GATE.enter();
        let freed = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let third = scope.spawn(|| {
                let _place = GATE.enter();
                freed.load(Ordering::SeqCst)
            });
            freed.store(true, Ordering::SeqCst);
            drop(first);
            assert!(
                third.join().expect("no panic"),
                "a third entered while two places were taken"
            );
        });
        drop(second);
        let count = *GATE.count.lock().expect("count");
        assert_eq!(count, Count { taken: 0, most: 2 });
    }
}

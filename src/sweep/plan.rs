//! Planning, as plain data: which candidates are backing off, which a dry
//! run reports as would-recover or deferred, and the queue a real run draws
//! from (start budget, in-flight cap, one recovery per worker).

use crate::judge::verdict::Candidate;
use crate::state::backoff::Backoff;
use std::collections::{HashSet, VecDeque};

/// Orders candidates oldest heartbeat first, ties by wrapper id: the oldest
/// abandoned ownership has fenced builds the longest. Wrapper ids are unique
/// (one journal file each), so the order is total and an unstable sort gives
/// the same result without a scratch buffer as large as the candidates.
pub fn order(candidates: &mut [Candidate]) {
    candidates.sort_unstable_by(|a, b| {
        a.heartbeat_unix_ms
            .cmp(&b.heartbeat_unix_ms)
            .then_with(|| a.wrapper_id.cmp(&b.wrapper_id))
    });
}

/// Where a candidate stands in a dry run's plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Its backoff entry's next attempt lies in the future.
    BackingOff,
    WouldRecover,
    Deferred,
}

/// The due candidates, in order, each with its index in `candidates`:
/// borrowed, never copied, since the run keeps every candidate for its
/// report anyway.
pub fn due<'a>(
    candidates: &'a [Candidate],
    backoff: &Backoff,
    now_ms: u64,
) -> Vec<(usize, &'a Candidate)> {
    candidates
        .iter()
        .enumerate()
        .filter(|(_, candidate)| backoff.is_due(&candidate.wrapper_id, now_ms))
        .collect()
}

/// A dry run's plan, one slot per candidate in order: those backing off are
/// set aside, the first `max` due ones would be recovered, the rest are
/// deferred (SPEC `--dry-run`).
pub fn dry_run(candidates: &[Candidate], backoff: &Backoff, now_ms: u64, max: usize) -> Vec<Slot> {
    let mut starts = 0;
    candidates
        .iter()
        .map(|candidate| {
            if !backoff.is_due(&candidate.wrapper_id, now_ms) {
                Slot::BackingOff
            } else if starts < max {
                starts += 1;
                Slot::WouldRecover
            } else {
                Slot::Deferred
            }
        })
        .collect()
}

/// The due candidates of one real run. Every start spends one unit of the
/// run's budget; at most `max` run at once and never two on one worker, so a
/// stalled worker holds one lane, not all of them. What is never started is
/// deferred to the next run.
#[derive(Debug)]
pub struct Queue<'a> {
    pending: VecDeque<(usize, &'a Candidate)>,
    busy_workers: HashSet<&'a str>,
    budget: usize,
    max_in_flight: usize,
    stopped: bool,
}

impl<'a> Queue<'a> {
    /// `due` in plan order, each candidate with the index it is known by.
    pub fn new(due: Vec<(usize, &'a Candidate)>, max: usize) -> Queue<'a> {
        Queue {
            pending: due.into(),
            busy_workers: HashSet::new(),
            budget: max,
            max_in_flight: max,
            stopped: false,
        }
    }

    /// The next candidate to start now, in order, whose worker is free,
    /// while budget and lanes last.
    pub fn next_start(&mut self) -> Option<(usize, &'a Candidate)> {
        if self.stopped || self.budget == 0 || self.busy_workers.len() >= self.max_in_flight {
            return None;
        }
        let position = self
            .pending
            .iter()
            .position(|(_, c)| !self.busy_workers.contains(c.worker_id.as_str()))?;
        let (index, candidate) = self.pending.remove(position)?;
        self.busy_workers.insert(&candidate.worker_id);
        self.budget -= 1;
        Some((index, candidate))
    }

    /// A recovery on `worker_id` ended; its lane and worker are free.
    pub fn finished(&mut self, worker_id: &str) {
        self.busy_workers.remove(worker_id);
    }

    /// No more starts (a signal arrived).
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    pub fn in_flight(&self) -> usize {
        self.busy_workers.len()
    }

    /// Candidates that were never started, by index, in plan order.
    pub fn into_deferred(self) -> Vec<(usize, &'a Candidate)> {
        self.pending.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, worker: &str, heartbeat: u64) -> Candidate {
        Candidate {
            wrapper_id: id.into(),
            worker_id: worker.into(),
            build_id: 7,
            heartbeat_unix_ms: heartbeat,
        }
    }

    fn ids(candidates: &[Candidate]) -> Vec<&str> {
        candidates.iter().map(|c| c.wrapper_id.as_str()).collect()
    }

    fn drain_starts(queue: &mut Queue) -> Vec<String> {
        std::iter::from_fn(|| queue.next_start())
            .map(|(_, c)| c.wrapper_id.clone())
            .collect()
    }

    #[test]
    fn oldest_heartbeat_first_then_wrapper_id() {
        let mut candidates = vec![
            candidate("c", "w", 20),
            candidate("b", "w", 10),
            candidate("a", "w", 20),
        ];
        order(&mut candidates);
        assert_eq!(ids(&candidates), ["b", "a", "c"]);
    }

    fn indexed(candidates: &[Candidate]) -> Vec<(usize, &Candidate)> {
        candidates.iter().enumerate().collect()
    }

    #[test]
    fn a_dry_run_sets_backoff_aside_recovers_the_first_max_and_defers_the_rest() {
        use Slot::*;
        let mut backoff = Backoff::empty();
        let candidates: Vec<_> = (0..7)
            .map(|i| candidate(&format!("j{i}"), "w", i))
            .collect();
        backoff.record_failure(&candidates[1], "x", 1_000, 600_000, 600_000);
        backoff.record_failure(&candidates[2], "x", 1_000, 10, 10); // due again
        let slots = dry_run(&candidates, &backoff, 2_000, 4);
        assert_eq!(
            slots,
            [
                WouldRecover,
                BackingOff,
                WouldRecover,
                WouldRecover,
                WouldRecover,
                Deferred,
                Deferred
            ]
        );
        let due = due(&candidates, &backoff, 2_000);
        let due_ids: Vec<usize> = due.iter().map(|(i, _)| *i).collect();
        assert_eq!(due_ids, [0, 2, 3, 4, 5, 6]);
        assert_eq!(
            dry_run(&candidates[..1], &backoff, 2_000, 4),
            [WouldRecover]
        );
    }

    #[test]
    fn the_queue_caps_lanes_and_never_runs_two_on_one_worker() {
        let due = vec![
            candidate("a1", "a", 0),
            candidate("a2", "a", 1),
            candidate("b1", "b", 2),
            candidate("c1", "c", 3),
            candidate("d1", "d", 4),
            candidate("e1", "e", 5),
        ];
        let mut queue = Queue::new(indexed(&due), 4);
        assert_eq!(drain_starts(&mut queue), ["a1", "b1", "c1", "d1"]);
        assert_eq!(queue.in_flight(), 4);
        queue.finished("a");
        assert_eq!(
            drain_starts(&mut queue),
            Vec::<String>::new(),
            "budget spent"
        );
        let deferred: Vec<_> = queue
            .into_deferred()
            .into_iter()
            .map(|(i, c)| (i, c.wrapper_id.clone()))
            .collect();
        assert_eq!(deferred, [(1, "a2".to_owned()), (5, "e1".to_owned())]);
    }

    #[test]
    fn same_worker_candidates_run_one_after_another_within_the_budget() {
        let due: Vec<_> = (0..6)
            .map(|i| candidate(&format!("j{i}"), "w", i))
            .collect();
        let mut queue = Queue::new(indexed(&due), 4);
        let mut started = Vec::new();
        while let Some((_, job)) = queue.next_start() {
            assert_eq!(queue.next_start(), None, "one per worker");
            started.push(job.wrapper_id.clone());
            queue.finished("w");
        }
        assert_eq!(started, ["j0", "j1", "j2", "j3"]);
        assert_eq!(queue.into_deferred().len(), 2);
    }

    #[test]
    fn a_stalled_worker_does_not_block_the_others() {
        let due = vec![
            candidate("slow", "blocked", 0),
            candidate("first", "healthy", 1),
            candidate("second", "healthy", 2),
        ];
        let mut queue = Queue::new(indexed(&due), 4);
        assert_eq!(drain_starts(&mut queue), ["slow", "first"]);
        queue.finished("healthy");
        assert_eq!(drain_starts(&mut queue), ["second"]);
        assert_eq!(queue.in_flight(), 2);
    }

    #[test]
    fn a_stopped_queue_starts_nothing_and_defers_the_rest() {
        let due = vec![candidate("a", "a", 0), candidate("b", "b", 1)];
        let mut queue = Queue::new(indexed(&due), 1);
        assert!(queue.next_start().is_some());
        queue.stop();
        queue.finished("a");
        assert_eq!(queue.next_start(), None);
        assert_eq!(queue.into_deferred().len(), 1);
    }
}

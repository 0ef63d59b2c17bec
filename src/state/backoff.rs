//! Per-lease backoff: the plain data persisted in the state file and the
//! arithmetic on it. No I/O here; [`super::file`] reads and writes the file.
//!
//! Times are wall-clock Unix milliseconds, since the state outlives the
//! process; a clock that jumped back is handled by clamping (SPEC "Backoff").

use crate::judge::verdict::Candidate;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock now in Unix milliseconds, the unit of every time in the state
/// file (0 for a clock before 1970).
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// The state file's format version this build reads and writes.
pub const VERSION: u64 = 1;

/// The whole state file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backoff {
    pub version: u64,
    /// End of the last run that exited 0, for monitoring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_success_unix_ms: Option<u64>,
    #[serde(default)]
    pub leases: BTreeMap<String, Entry>,
    /// The leases held without a start that reached rch's verdict
    /// (deferred for any reason, stuck, waiting for rch's 24 hours), by
    /// wrapper id: since when, and why. Kept apart from `leases` because a
    /// hold is no failure: a lease's backoff entry stays exactly as it was
    /// (SPEC "rch's daemon", "One recovery"), while the time it has waited
    /// must outlive the process for `rch_sweep_lease_held_seconds` and the
    /// once-a-day `--quiet` line. Written only when a lease is held, so the
    /// file of a run that holds none is as before; an older rch-sweep
    /// ignores the key (readers ignore keys they do not know) and drops it
    /// on its next save, which only restarts the clock.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub held: BTreeMap<String, HeldLease>,
}

/// One lease held without a start that reached rch's verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldLease {
    /// The run that first held it since its last verdict (or since it was
    /// first seen).
    pub since_unix_ms: u64,
    /// Why the last run held it: the report line's `error`.
    #[serde(default)]
    pub error: String,
    #[serde(default)]
    pub worker_id: String,
    #[serde(default)]
    pub build_id: u64,
    /// When a `--quiet` run last said that it is held (once a day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub said_unix_ms: Option<u64>,
}

impl HeldLease {
    /// How long it has been held at `now_ms`.
    pub fn held_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.since_unix_ms)
    }
}

/// How long a lease may be held before it is told of (the alert
/// `RchSweepLeaseHeld`, the `--quiet` line): six hours, the default
/// `--backoff-max`, past which no backoff explains a wait.
pub const LONG_HELD_MS: u64 = 6 * 3_600_000;

/// How often a `--quiet` run says that one lease is still held.
pub const SAY_HELD_EVERY_MS: u64 = 24 * 3_600_000;

/// One wrapper that failed (or was interrupted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub failures: u32,
    pub next_attempt_unix_ms: u64,
    #[serde(default)]
    pub last_attempt_unix_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default)]
    pub worker_id: String,
    #[serde(default)]
    pub build_id: u64,
    /// Set while the lease waits on rch rather than on its own failures
    /// (SPEC "rch's answers are read, not counted"); absent otherwise, so
    /// older readers see the entry they know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<Hold>,
}

/// Why an entry waits, when it is not its failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hold {
    /// rch 2.1.34's daemon has no record of the build, and rch finishes
    /// such a lease only once it is 24 hours old: the next attempt is then.
    DaemonRecordWait,
    /// rch 2.1.17–2.1.33 never complete a build their daemon forgot: the
    /// lease is retried after `--backoff-max`, until rch is upgraded.
    Stuck,
}

impl Hold {
    pub fn as_str(self) -> &'static str {
        match self {
            Hold::DaemonRecordWait => "daemon_record_wait",
            Hold::Stuck => "stuck",
        }
    }
}

/// How long after its heartbeat rch 2.1.34 accepts that its daemon no
/// longer knows a build (24 h), plus a minute of slack for the clocks.
pub const DAEMON_RECORD_WAIT_MS: u64 = 24 * 3_600_000 + 60_000;

/// The latest a next attempt may lie ahead of `now` before it is taken
/// for a clock that jumped back: `--backoff-max`, or for a 24-hour wait,
/// which is set from the lease's heartbeat (never after now), that wait.
pub fn cap_ms(entry: &Entry, max_ms: u64) -> u64 {
    match entry.hold {
        Some(Hold::DaemonRecordWait) => max_ms.max(DAEMON_RECORD_WAIT_MS),
        _ => max_ms,
    }
}

/// Delay before the next attempt after failure number `failures`:
/// `min(base × 2^min(n−1, 16), max)`.
pub fn delay_ms(failures: u32, base_ms: u64, max_ms: u64) -> u64 {
    let doublings = failures.saturating_sub(1).min(16);
    base_ms.saturating_mul(1u64 << doublings).min(max_ms)
}

/// When an attempt planned for `next_ms` will be made, seen at `now_ms`: no
/// later than `now + max`. A later time is what a clock that jumped back
/// leaves; every run saves it capped so, and whatever shows an entry shows
/// it as that run will save it.
pub fn capped(next_ms: u64, now_ms: u64, max_ms: u64) -> u64 {
    next_ms.min(now_ms.saturating_add(max_ms))
}

/// The longest error text kept per entry; the child's diagnostic is already
/// bounded, this only keeps a hostile state file from growing the next one.
const MAX_ERROR_CHARS: usize = 1000;

fn trimmed_error(error: &str) -> String {
    error.trim().chars().take(MAX_ERROR_CHARS).collect()
}

impl Backoff {
    pub fn empty() -> Backoff {
        Backoff {
            version: VERSION,
            ..Backoff::default()
        }
    }

    /// Whether `wrapper_id` may be attempted at `now`.
    pub fn is_due(&self, wrapper_id: &str, now_ms: u64) -> bool {
        self.leases
            .get(wrapper_id)
            .is_none_or(|entry| entry.next_attempt_unix_ms <= now_ms)
    }

    /// Drops entries whose wrapper is no longer a candidate, and pulls next
    /// attempts beyond `now + max` (a clock that jumped back) to `now + max`.
    /// Returns whether anything changed.
    pub fn prune(&mut self, candidates: &[Candidate], now_ms: u64, max_ms: u64) -> bool {
        // Only the candidates that have an entry: the set stays as small as
        // the state, however many candidates a large scan found.
        let live: HashSet<&str> = candidates
            .iter()
            .map(|c| c.wrapper_id.as_str())
            .filter(|id| self.leases.contains_key(*id) || self.held.contains_key(*id))
            .collect();
        let before = self.leases.len() + self.held.len();
        self.leases.retain(|id, _| live.contains(id.as_str()));
        self.held.retain(|id, _| live.contains(id.as_str()));
        let mut changed = before != self.leases.len() + self.held.len();
        for entry in self.leases.values_mut() {
            let next = capped(entry.next_attempt_unix_ms, now_ms, cap_ms(entry, max_ms));
            if next != entry.next_attempt_unix_ms {
                entry.next_attempt_unix_ms = next;
                changed = true;
            }
        }
        changed
    }

    /// Records failure number n+1 for `candidate`; returns the new entry.
    pub fn record_failure(
        &mut self,
        candidate: &Candidate,
        error: &str,
        now_ms: u64,
        base_ms: u64,
        max_ms: u64,
    ) -> &Entry {
        // rch's verdict: the lease is no longer held.
        self.held.remove(&candidate.wrapper_id);
        let entry = self.entry_for(candidate);
        entry.failures = entry.failures.saturating_add(1);
        entry.next_attempt_unix_ms =
            now_ms.saturating_add(delay_ms(entry.failures, base_ms, max_ms));
        entry.last_attempt_unix_ms = now_ms;
        entry.last_error = Some(trimmed_error(error));
        entry.hold = None;
        entry
    }

    /// rch 2.1.34 waits for the lease to be 24 hours old: the next attempt
    /// is `heartbeat + 24 h + 1 min` (never before `now`), the failures
    /// stay. A lease without an entry gets one with no failures: the state
    /// file is the one place a run can remember the wait, and without it
    /// every run would ask rch again for nothing.
    pub fn record_wait(
        &mut self,
        candidate: &Candidate,
        heartbeat_unix_ms: u64,
        error: &str,
        now_ms: u64,
    ) {
        let entry = self.entry_for(candidate);
        entry.next_attempt_unix_ms = heartbeat_unix_ms
            .saturating_add(DAEMON_RECORD_WAIT_MS)
            .max(now_ms);
        entry.last_attempt_unix_ms = now_ms;
        entry.last_error = Some(trimmed_error(error));
        entry.hold = Some(Hold::DaemonRecordWait);
    }

    /// An rch that never completes this lease (2.1.17–2.1.33, a build its
    /// daemon forgot): retried after `max`, the failures unchanged, marked
    /// stuck so that every run (and monitoring) shows it until rch is
    /// upgraded.
    pub fn record_stuck(&mut self, candidate: &Candidate, error: &str, now_ms: u64, max_ms: u64) {
        let entry = self.entry_for(candidate);
        entry.next_attempt_unix_ms = now_ms.saturating_add(max_ms);
        entry.last_attempt_unix_ms = now_ms;
        entry.last_error = Some(trimmed_error(error));
        entry.hold = Some(Hold::Stuck);
    }

    /// How many entries are held so, now.
    pub fn held(&self, hold: Hold) -> usize {
        self.leases
            .values()
            .filter(|entry| entry.hold == Some(hold))
            .count()
    }

    /// An attempt cut short by a signal: the count and next attempt stay, the
    /// error is kept; a lease without an entry gets one due at once.
    pub fn record_interrupted(&mut self, candidate: &Candidate, error: &str, now_ms: u64) {
        let fresh = !self.leases.contains_key(&candidate.wrapper_id);
        let entry = self.entry_for(candidate);
        if fresh {
            entry.next_attempt_unix_ms = now_ms;
        }
        entry.last_attempt_unix_ms = now_ms;
        entry.last_error = Some(trimmed_error(error));
    }

    /// A recovery that succeeded, or a journal that vanished: its entry
    /// and its hold go. (Also `forget`'s.)
    pub fn forget(&mut self, wrapper_id: &str) -> bool {
        let held = self.held.remove(wrapper_id).is_some();
        self.leases.remove(wrapper_id).is_some() || held
    }

    /// `candidate` is held by this run for `error` (deferred, stuck,
    /// waiting): held since now unless it already was, its reason the
    /// latest. Its backoff entry, if any, is not touched.
    pub fn mark_held(&mut self, candidate: &Candidate, error: &str, now_ms: u64) {
        let held = self
            .held
            .entry(candidate.wrapper_id.clone())
            .or_insert_with(|| HeldLease {
                since_unix_ms: now_ms,
                ..HeldLease::default()
            });
        held.error = trimmed_error(error);
        held.worker_id.clone_from(&candidate.worker_id);
        held.build_id = candidate.build_id;
    }

    /// A lease whose entry waits on rch (stuck, or its 24 hours) and that
    /// this run did not try is still held: one a state file from before
    /// holds were kept has none yet, so it is held from now, for the
    /// entry's last error.
    pub fn keep_held(&mut self, candidate: &Candidate, now_ms: u64) {
        let Some(entry) = self.leases.get(&candidate.wrapper_id) else {
            return;
        };
        if entry.hold.is_some() && !self.held.contains_key(&candidate.wrapper_id) {
            let error = entry.last_error.clone().unwrap_or_default();
            self.mark_held(candidate, &error, now_ms);
        }
    }

    /// The longest any lease has been held at `now_ms` (0 when none is).
    pub fn longest_held_ms(&self, now_ms: u64) -> u64 {
        self.held
            .values()
            .map(|held| held.held_ms(now_ms))
            .max()
            .unwrap_or(0)
    }

    /// The leases held for [`LONG_HELD_MS`] or more that have not been
    /// said for [`SAY_HELD_EVERY_MS`], marked said at `now_ms`: what a
    /// `--quiet` run says today.
    pub fn to_say(&mut self, now_ms: u64) -> Vec<(String, HeldLease)> {
        let mut due = Vec::new();
        for (id, held) in &mut self.held {
            let long = held.held_ms(now_ms) >= LONG_HELD_MS;
            let said_lately = held
                .said_unix_ms
                .is_some_and(|said| said <= now_ms && now_ms - said < SAY_HELD_EVERY_MS);
            if long && !said_lately {
                held.said_unix_ms = Some(now_ms);
                due.push((id.clone(), held.clone()));
            }
        }
        due
    }

    fn entry_for(&mut self, candidate: &Candidate) -> &mut Entry {
        let entry = self.leases.entry(candidate.wrapper_id.clone()).or_default();
        entry.worker_id.clone_from(&candidate.worker_id);
        entry.build_id = candidate.build_id;
        entry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 600_000;
    const MAX: u64 = 21_600_000;

    fn candidate(id: &str) -> Candidate {
        Candidate {
            wrapper_id: id.into(),
            worker_id: "w".into(),
            build_id: 7,
            heartbeat_unix_ms: 0,
        }
    }

    #[test]
    fn delay_doubles_from_base_to_the_cap() {
        assert_eq!(delay_ms(1, BASE, MAX), BASE);
        assert_eq!(delay_ms(2, BASE, MAX), 2 * BASE);
        assert_eq!(delay_ms(3, BASE, MAX), 4 * BASE);
        assert_eq!(delay_ms(6, BASE, MAX), 32 * BASE);
        assert_eq!(delay_ms(7, BASE, MAX), MAX, "64 × 10 min is past 6 h");
        assert_eq!(delay_ms(40, BASE, MAX), MAX);
        assert_eq!(
            delay_ms(u32::MAX, u64::MAX, u64::MAX),
            u64::MAX,
            "saturates"
        );
        assert_eq!(delay_ms(0, BASE, MAX), BASE);
        // The exponent stops at 16.
        assert_eq!(delay_ms(30, 1, u64::MAX), 1 << 16);
    }

    #[test]
    fn failures_schedule_the_next_attempt_and_success_clears_it() {
        let mut backoff = Backoff::empty();
        let a = candidate("a");
        assert!(backoff.is_due("a", 0));
        let entry = backoff.record_failure(&a, "  exit status: 1: boom\n", 1_000, BASE, MAX);
        assert_eq!(entry.failures, 1);
        assert_eq!(entry.next_attempt_unix_ms, 1_000 + BASE);
        assert_eq!(entry.last_attempt_unix_ms, 1_000);
        assert_eq!(entry.last_error.as_deref(), Some("exit status: 1: boom"));
        assert_eq!((entry.worker_id.as_str(), entry.build_id), ("w", 7));
        assert!(!backoff.is_due("a", 1_000 + BASE - 1));
        assert!(backoff.is_due("a", 1_000 + BASE));
        let entry = backoff.record_failure(&a, "again", 2_000, BASE, MAX);
        assert_eq!(entry.failures, 2);
        assert_eq!(entry.next_attempt_unix_ms, 2_000 + 2 * BASE);
        assert!(backoff.forget("a"));
        assert!(backoff.is_due("a", 0));
    }

    #[test]
    fn an_interrupted_attempt_keeps_the_count_and_due_time() {
        let mut backoff = Backoff::empty();
        let a = candidate("a");
        backoff.record_interrupted(&a, "interrupted", 5_000);
        let entry = &backoff.leases["a"];
        assert_eq!((entry.failures, entry.next_attempt_unix_ms), (0, 5_000));
        assert!(backoff.is_due("a", 5_000));
        backoff.record_failure(&a, "failed", 6_000, BASE, MAX);
        backoff.record_interrupted(&a, "interrupted again", 7_000);
        let entry = &backoff.leases["a"];
        assert_eq!(entry.failures, 1);
        assert_eq!(entry.next_attempt_unix_ms, 6_000 + BASE);
        assert_eq!(entry.last_error.as_deref(), Some("interrupted again"));
    }

    #[test]
    fn prune_drops_non_candidates_and_clamps_a_clock_that_jumped_back() {
        let mut backoff = Backoff::empty();
        backoff.record_failure(&candidate("kept"), "x", 1_000_000_000, BASE, MAX);
        backoff.record_failure(&candidate("gone"), "x", 0, BASE, MAX);
        // Now the clock reads an hour earlier than the failure.
        let now = 1_000_000_000 - 3_600_000;
        assert!(backoff.prune(&[candidate("kept")], now, BASE / 2));
        assert_eq!(backoff.leases.len(), 1);
        assert_eq!(backoff.leases["kept"].next_attempt_unix_ms, now + BASE / 2);
        assert!(
            !backoff.prune(&[candidate("kept")], now, BASE / 2),
            "stable"
        );
    }

    #[test]
    fn a_24h_wait_and_a_stuck_lease_keep_their_failures() {
        let mut backoff = Backoff::empty();
        let a = candidate("a");
        let hour = 3_600_000;
        // No entry yet: one with no failures, due a day after the heartbeat.
        backoff.record_wait(&a, 10 * hour, "waits", 11 * hour);
        let entry = &backoff.leases["a"];
        assert_eq!(entry.failures, 0);
        assert_eq!(entry.next_attempt_unix_ms, 34 * hour + 60_000);
        assert_eq!(entry.hold, Some(Hold::DaemonRecordWait));
        // Not pulled to now + max by the next run: the wait is the heartbeat's.
        assert!(!backoff.prune(std::slice::from_ref(&a), 11 * hour, MAX));
        assert_eq!(backoff.leases["a"].next_attempt_unix_ms, 34 * hour + 60_000);
        // A heartbeat over a day old: due at once.
        backoff.record_wait(&a, 0, "waits", 30 * hour);
        assert_eq!(backoff.leases["a"].next_attempt_unix_ms, 30 * hour);
        // Failures stay; a stuck lease waits the cap.
        backoff.record_failure(&a, "failed", hour, BASE, MAX);
        assert_eq!(backoff.leases["a"].hold, None);
        backoff.record_stuck(&a, "stuck", 2 * hour, MAX);
        let entry = &backoff.leases["a"];
        assert_eq!((entry.failures, entry.hold), (1, Some(Hold::Stuck)));
        assert_eq!(entry.next_attempt_unix_ms, 2 * hour + MAX);
        assert_eq!(backoff.held(Hold::Stuck), 1);
        assert_eq!(backoff.held(Hold::DaemonRecordWait), 0);
        // Stored as a word older readers may ignore.
        let text = serde_json::to_string(&backoff).expect("json");
        assert!(text.contains("\"hold\":\"stuck\""), "{text}");
    }

    #[test]
    fn a_hold_keeps_its_start_until_rch_gives_a_verdict() {
        let hour = 3_600_000;
        let mut backoff = Backoff::empty();
        let (a, b) = (candidate("a"), candidate("b"));
        backoff.record_failure(&a, "failed", 0, BASE, MAX);
        let entry_before = backoff.leases["a"].clone();
        // Held at 1h, and again at 2h: since stays, the reason is the latest,
        // the backoff entry is untouched.
        backoff.mark_held(&a, "busy", hour);
        backoff.mark_held(&a, "busy\nagain", 2 * hour);
        backoff.mark_held(&b, "daemon down", 2 * hour);
        assert_eq!(backoff.leases["a"], entry_before);
        assert!(!backoff.leases.contains_key("b"), "a hold is no entry");
        assert_eq!(backoff.held["a"].since_unix_ms, hour);
        assert_eq!(backoff.held["a"].error, "busy\nagain");
        assert_eq!(backoff.longest_held_ms(7 * hour), 6 * hour);
        // Kept across a prune while a candidate, dropped when not.
        assert!(backoff.prune(std::slice::from_ref(&a), 3 * hour, MAX));
        assert!(!backoff.held.contains_key("b"));
        assert_eq!(backoff.held["a"].since_unix_ms, hour);
        // A failure is rch's verdict: no longer held.
        backoff.record_failure(&a, "failed again", 3 * hour, BASE, MAX);
        assert!(backoff.held.is_empty());
        assert_eq!(backoff.longest_held_ms(7 * hour), 0);
        // So is a success (forget).
        backoff.mark_held(&b, "busy", 3 * hour);
        assert!(backoff.forget("b"));
        assert!(backoff.held.is_empty());
    }

    #[test]
    fn a_stuck_entry_from_an_older_state_is_held_from_now() {
        let mut backoff = Backoff::empty();
        let a = candidate("a");
        backoff.record_stuck(&a, "never completes", 1_000, MAX);
        backoff.held.clear();
        backoff.keep_held(&a, 5_000);
        assert_eq!(backoff.held["a"].since_unix_ms, 5_000);
        assert_eq!(backoff.held["a"].error, "never completes");
        // An entry that waits on nothing is not held.
        let b = candidate("b");
        backoff.record_failure(&b, "failed", 0, BASE, MAX);
        backoff.keep_held(&b, 5_000);
        assert!(!backoff.held.contains_key("b"));
    }

    #[test]
    fn a_long_hold_is_said_once_a_day() {
        let hour = 3_600_000;
        let mut backoff = Backoff::empty();
        backoff.mark_held(&candidate("a"), "busy", 0);
        backoff.mark_held(&candidate("b"), "busy", 2 * hour);
        assert!(backoff.to_say(6 * hour - 1).is_empty(), "under 6 h");
        let said: Vec<String> = backoff
            .to_say(6 * hour)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(said, ["a"]);
        assert!(backoff.to_say(7 * hour).is_empty(), "a said, b under 6 h");
        let said: Vec<String> = backoff
            .to_say(8 * hour)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(said, ["b"]);
        assert!(backoff.to_say(30 * hour - 1).is_empty());
        assert_eq!(backoff.to_say(30 * hour).len(), 1, "a, a day later");
    }

    #[test]
    fn no_hold_writes_no_held_key_and_an_older_file_loads() {
        let mut backoff = Backoff::empty();
        backoff.record_failure(&candidate("a"), "failed", 0, BASE, MAX);
        let text = serde_json::to_string(&backoff).expect("json");
        assert!(!text.contains("held"), "{text}");
        backoff.mark_held(&candidate("b"), "busy", 5);
        let text = serde_json::to_string(&backoff).expect("json");
        let back: Backoff = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, backoff);
        // A file without the key (an older rch-sweep's) loads with none.
        let older: Backoff =
            serde_json::from_str(r#"{"version": 1, "leases": {}}"#).expect("parses");
        assert!(older.held.is_empty());
    }

    #[test]
    fn long_errors_are_bounded() {
        let mut backoff = Backoff::empty();
        backoff.record_failure(&candidate("a"), &"é".repeat(5000), 0, BASE, MAX);
        let error = backoff.leases["a"]
            .last_error
            .as_deref()
            .unwrap_or_default();
        assert_eq!(error.chars().count(), MAX_ERROR_CHARS);
    }
}

//! What each candidate's attempt means once the recoveries are over: its
//! backoff entry (forgotten, charged a failure, or left as it was), its
//! report line, and what it adds to the run's exit code. Plain bookkeeping
//! over the attempts [`crate::sweep::dispatch`] returned; the state file is written
//! by the caller.

use crate::exit::ExitCode;
use crate::judge::verdict::Candidate;
use crate::log;
use crate::rch::recover::{self, Attempt, Fault};
use crate::signals;
use crate::state::backoff::{Backoff, Hold};
use crate::sweep::report::{Held, LeaseLine, LeaseOutcome, LineDetail, Summary};
use std::time::Duration;

/// The backoff settings and clock of one run.
pub struct Policy {
    pub now_unix_ms: u64,
    pub base_ms: u64,
    pub max_ms: u64,
    /// `--max-recoveries`: the run's start budget.
    pub max_recoveries: usize,
}

/// Records each candidate's attempt in `backoff` and turns it into a
/// report line, in plan order, merging what each outcome means for the exit
/// code into `summary`, whose lines it sets.
pub fn attempts(
    candidates: Vec<Candidate>,
    attempts: Vec<Option<Attempt>>,
    policy: &Policy,
    backoff: &mut Backoff,
    summary: &mut Summary,
) {
    let signal = signals::received();
    let unstarted = unstarted_reason(signal, &attempts, summary, policy);
    let now = policy.now_unix_ms;
    let mut leases = Vec::with_capacity(candidates.len());
    for (candidate, attempt) in candidates.into_iter().zip(attempts) {
        let Some(attempt) = attempt else {
            // Due but not started: held, and the held reason says why (the
            // line carries no error: none of its own, SPEC "One recovery").
            if backoff.is_due(&candidate.wrapper_id, now) {
                backoff.mark_held(&candidate, &unstarted, now);
                leases.push(line(candidate, LeaseOutcome::Deferred, None, None, backoff));
            } else {
                backoff.keep_held(&candidate, now);
                leases.push(line(
                    candidate,
                    LeaseOutcome::BackingOff,
                    None,
                    None,
                    backoff,
                ));
            }
            continue;
        };
        let ended = attempt.ended_unix_ms;
        let (outcome, error) = match attempt.outcome {
            recover::AttemptOutcome::Recovered => {
                backoff.forget(&candidate.wrapper_id);
                (LeaseOutcome::Recovered, None)
            }
            recover::AttemptOutcome::FinishedElsewhere(note) => {
                backoff.forget(&candidate.wrapper_id);
                log::info(format!(
                    "{} on {}: {note}",
                    candidate.wrapper_id, candidate.worker_id
                ));
                (LeaseOutcome::Recovered, Some(note))
            }
            recover::AttemptOutcome::Waits {
                heartbeat_unix_ms,
                error,
            } => {
                backoff.record_wait(&candidate, heartbeat_unix_ms, &error, ended);
                let error = waits_until(error, backoff, &candidate.wrapper_id);
                (LeaseOutcome::Deferred, Some(error))
            }
            recover::AttemptOutcome::Stuck(error) => {
                backoff.record_stuck(&candidate, &error, ended, policy.max_ms);
                log::warn(format!(
                    "recovery of {} on {} is stuck: {error}",
                    candidate.wrapper_id, candidate.worker_id
                ));
                (LeaseOutcome::Stuck, Some(error))
            }
            recover::AttemptOutcome::Vanished => {
                backoff.forget(&candidate.wrapper_id);
                (LeaseOutcome::Vanished, None)
            }
            recover::AttemptOutcome::Failed(error) => {
                backoff.record_failure(&candidate, &error, ended, policy.base_ms, policy.max_ms);
                summary.exit_code = summary.exit_code.merge(ExitCode::Failed);
                log::error(format!(
                    "recovery of {} on {} failed: {error}",
                    candidate.wrapper_id, candidate.worker_id
                ));
                (LeaseOutcome::Failed, Some(error))
            }
            recover::AttemptOutcome::Interrupted(error) => {
                let name = signals::name(signal.unwrap_or(libc::SIGTERM));
                let error = format!("interrupted by {name}: {error}");
                backoff.record_interrupted(&candidate, &error, ended);
                (LeaseOutcome::Interrupted, Some(error))
            }
            recover::AttemptOutcome::NotCharged(fault, error) => {
                // Not the lease's fault: it keeps its backoff entry exactly
                // as it was, and waits for the next run like any deferred one.
                let run_error = match (fault, &summary.daemon) {
                    // The daemon's own report names the socket, how it was
                    // chosen, where else one answers, and the fix.
                    (Fault::DaemonDown, Some(daemon)) => daemon
                        .message()
                        .map(|message| (daemon.exit_code(), message)),
                    _ => run_message(fault, &error).map(|message| (fault.exit_code(), message)),
                };
                if let Some((code, message)) = run_error {
                    if !summary.errors.contains(&message) {
                        log::error(&message);
                    }
                    summary.fail(code, message);
                }
                (LeaseOutcome::Deferred, Some(error))
            }
        };
        // Deferred, stuck or waiting: held from this run on, unless an
        // earlier one began it, for the reason the line gives.
        if matches!(outcome, LeaseOutcome::Deferred | LeaseOutcome::Stuck) {
            backoff.mark_held(&candidate, error.as_deref().unwrap_or_default(), now);
        }
        let duration = (outcome != LeaseOutcome::Deferred).then_some(attempt.duration);
        leases.push(line(candidate, outcome, duration, error, backoff));
    }
    if let Some(signal) = signal {
        warn_stopped(signal, &leases);
        summary.exit_code = ExitCode::Signal(signal);
    }
    summary.leases = leases;
    summary.held = Some(Held::of(backoff, now));
}

/// Why a due lease that no attempt was made for was not started, in the
/// order that decides it: a stop signal; a fault after which the run
/// started no further recovery (the first such attempt's error); an error
/// that kept the whole run from starting any (a scan a host shortage cut
/// short); else the start budget went to the leases before it.
fn unstarted_reason(
    signal: Option<i32>,
    attempts: &[Option<Attempt>],
    summary: &Summary,
    policy: &Policy,
) -> String {
    if let Some(signal) = signal {
        return format!(
            "not started: the run was stopped by {}",
            signals::name(signal)
        );
    }
    let stopped = attempts
        .iter()
        .flatten()
        .find_map(|attempt| match &attempt.outcome {
            recover::AttemptOutcome::NotCharged(fault, error) if fault.stops_starts() => {
                Some(error.as_str())
            }
            _ => None,
        });
    if let Some(error) = stopped.or(summary.errors.first().map(String::as_str)) {
        return format!("not started: the run started no further recovery after: {error}");
    }
    let budget = policy.max_recoveries;
    format!(
        "not started: this run's {budget} start{} (--max-recoveries) went to the leases before it",
        if budget == 1 { "" } else { "s" }
    )
}

/// A 24-hour wait's error with the time it ends, as the entry now holds
/// it; any other error as it is.
fn waits_until(error: String, backoff: &Backoff, wrapper_id: &str) -> String {
    match backoff.leases.get(wrapper_id) {
        Some(entry)
            if entry.hold == Some(Hold::DaemonRecordWait)
                && entry.next_attempt_unix_ms > entry.last_attempt_unix_ms =>
        {
            format!(
                "waiting until {}: {error}",
                crate::human::utc(entry.next_attempt_unix_ms)
            )
        }
        _ => error,
    }
}

/// What a fault says about the whole run (stderr, and the summary's
/// `error`), once however many leases met it; `None` for a fault that
/// concerns only its lease and changes no exit code.
fn run_message(fault: Fault, error: &str) -> Option<String> {
    let fix = match fault {
        Fault::Busy | Fault::Refused => return None,
        Fault::UnsafeLock => {
            // Other leases went on: only this one waits for the fix its
            // error names.
            return Some(format!(
                "{error}; the lease was deferred and not charged a failure, other leases went on"
            ));
        }
        Fault::Config => {
            "Fix the rch install (or --rch / RCH_SWEEP_RCH); rch-sweep doctor checks it"
        }
        Fault::RchConfig => {
            "Fix the file rch names (as the user the sweep runs as); the next run recovers what is due"
        }
        Fault::Host => {
            "The next run retries; if this lasts, raise the limit named (ulimit -u or -n, the unit's TasksMax)"
        }
        Fault::DaemonDown => {
            "start rch's daemon (systemctl --user start rchd, or rch daemon start)"
        }
        Fault::NoRoom => {
            "Free space (or inodes, or raise this user's quota) on that file system; the next run retries"
        }
        Fault::DaemonSaid => {
            "Check rch's daemon (systemctl --user status rchd, journalctl --user -u rchd); the next run retries"
        }
        Fault::LeaseDir | Fault::JournalAccess => {
            "Make it writable for the user rch's wrappers run as (remount it read-write, or run the sweep as that user); rch-sweep doctor checks it"
        }
        Fault::NoLocks => {
            "Keep rch's lease directory (RCH_STATE_HOME) on a file system with working flock locks (a local disk; NFS with its lock service); the next run retries"
        }
    };
    // Checked before the first child: none was started at all.
    let started = if fault == Fault::LeaseDir {
        "no recovery was started"
    } else {
        "no further recovery was started"
    };
    Some(format!(
        "{error}; {started} and no lease was charged a failure. {fix}"
    ))
}

/// The warning a stopped run leaves in the log: which signal, and what it
/// cut short.
fn warn_stopped(signal: i32, leases: &[LeaseLine]) {
    let interrupted = leases
        .iter()
        .filter(|line| line.outcome == LeaseOutcome::Interrupted)
        .count();
    log::warn(format!(
        "stopped by {}: no further recovery started; {interrupted} running recover{} interrupted (process group killed, no failure counted, retried next run)",
        signals::name(signal),
        if interrupted == 1 { "y" } else { "ies" },
    ));
}

/// A candidate's report line, with its backoff entry as it stands now. The
/// candidate moves into the line: memory grows with the candidates, so
/// each is held once.
pub fn line(
    candidate: Candidate,
    outcome: LeaseOutcome,
    duration: Option<Duration>,
    error: Option<String>,
    backoff: &Backoff,
) -> LeaseLine {
    let entry = backoff.leases.get(&candidate.wrapper_id);
    // A lease that succeeded has no error: what it says is a note.
    let (error, note) = if outcome == LeaseOutcome::Recovered {
        (None, error)
    } else {
        (error, None)
    };
    let detail = LineDetail {
        duration,
        error,
        failures: entry.map(|entry| entry.failures),
        next_attempt_unix_ms: entry.map(|entry| entry.next_attempt_unix_ms),
        hold: entry.and_then(|entry| entry.hold),
        note,
        held: backoff.held.get(&candidate.wrapper_id).cloned(),
    };
    LeaseLine::new(candidate, outcome, detail)
}

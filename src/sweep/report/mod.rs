//! The run's summary for people (a table and one line) and for scripts (the
//! SPEC's JSON document). Built from plain data after the run; prints nothing
//! itself.
//!
//! Its rooms: this file holds the data (a line a candidate, the summary,
//! its counts); [`text`] makes the table and the one line for people,
//! [`json`] the document for scripts. Both are methods of [`Summary`].

pub mod json;
pub mod text;

use crate::exit::ExitCode;
use crate::judge::verdict::{Candidate, SkipReason, Skipped};
use crate::state::backoff::{Backoff, HeldLease, Hold};
use crate::{rch::daemon, rch::release};
use std::path::PathBuf;
use std::time::Duration;

/// What happened to one candidate in this run, as its report line says:
/// an attempt's end, or why none was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseOutcome {
    Recovered,
    Failed,
    Vanished,
    /// A stop signal cut the attempt short; no failure is counted.
    Interrupted,
    /// rch (2.1.17–2.1.33) never completes this lease: retried after
    /// `--backoff-max`, no failure counted, until rch is upgraded.
    Stuck,
    BackingOff,
    Deferred,
    WouldRecover,
}

impl LeaseOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseOutcome::Recovered => "recovered",
            LeaseOutcome::Failed => "failed",
            LeaseOutcome::Vanished => "vanished",
            LeaseOutcome::Interrupted => "interrupted",
            LeaseOutcome::Stuck => "stuck",
            LeaseOutcome::BackingOff => "backing_off",
            LeaseOutcome::Deferred => "deferred",
            LeaseOutcome::WouldRecover => "would_recover",
        }
    }
}

/// One candidate's line in the report. Memory grows with the candidates, so
/// a line holds the candidate and the outcome inline and the rest behind a
/// box that most lines of a large dry run (nothing attempted, no backoff
/// entry) never allocate.
#[derive(Clone, Debug)]
pub struct LeaseLine {
    pub candidate: Candidate,
    pub outcome: LeaseOutcome,
    pub detail: Option<Box<LineDetail>>,
}

/// What an attempt and the backoff state add to a line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineDetail {
    /// How long its recovery took, when one was attempted.
    pub duration: Option<Duration>,
    pub error: Option<String>,
    /// Its backoff entry after this run, when it has one.
    pub failures: Option<u32>,
    pub next_attempt_unix_ms: Option<u64>,
    /// Why its entry waits, when rch, not its failures, decides it.
    pub hold: Option<Hold>,
    /// What an attempt that succeeded wants said (finished by someone
    /// else).
    pub note: Option<String>,
    /// Since when, and why, the lease has been held without a start that
    /// reached rch's verdict, as the state holds it after the run.
    pub held: Option<HeldLease>,
}

impl LeaseLine {
    pub fn new(candidate: Candidate, outcome: LeaseOutcome, detail: LineDetail) -> LeaseLine {
        LeaseLine {
            candidate,
            outcome,
            detail: (detail != LineDetail::default()).then(|| Box::new(detail)),
        }
    }

    pub fn duration(&self) -> Option<Duration> {
        self.detail.as_ref().and_then(|detail| detail.duration)
    }

    pub fn error(&self) -> Option<&str> {
        self.detail
            .as_ref()
            .and_then(|detail| detail.error.as_deref())
    }

    pub fn failures(&self) -> Option<u32> {
        self.detail.as_ref().and_then(|detail| detail.failures)
    }

    pub fn next_attempt_unix_ms(&self) -> Option<u64> {
        self.detail
            .as_ref()
            .and_then(|detail| detail.next_attempt_unix_ms)
    }

    pub fn hold(&self) -> Option<Hold> {
        self.detail.as_ref().and_then(|detail| detail.hold)
    }

    pub fn note(&self) -> Option<&str> {
        self.detail
            .as_ref()
            .and_then(|detail| detail.note.as_deref())
    }

    pub fn held(&self) -> Option<&HeldLease> {
        self.detail.as_ref().and_then(|detail| detail.held.as_ref())
    }
}

/// How many of the state's entries wait on rch rather than on their
/// failures, after the run: `rch_sweep_leases{state}`; and the longest
/// any lease has been held without a start that reached rch's verdict:
/// `rch_sweep_lease_held_seconds`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Never completed by this rch (2.1.17–2.1.33): `stuck`.
    pub stuck: usize,
    /// Waiting for rch 2.1.34's 24 hours: `waiting`.
    pub waiting: usize,
    /// Milliseconds.
    pub longest_ms: u64,
}

impl Held {
    /// What `backoff` holds at `now_ms`.
    pub fn of(backoff: &Backoff, now_ms: u64) -> Held {
        Held {
            stuck: backoff.held(Hold::Stuck),
            waiting: backoff.held(Hold::DaemonRecordWait),
            longest_ms: backoff.longest_held_ms(now_ms),
        }
    }
}

pub struct Summary {
    pub dry_run: bool,
    pub lease_dir: PathBuf,
    /// Whether the lease directory existed: a run that found none swept
    /// nothing and still exits 0, which only this shows to monitoring.
    pub lease_dir_present: bool,
    pub state_file: PathBuf,
    pub now_unix_ms: u64,
    /// The whole run, preflight to report.
    pub duration: Duration,
    /// The scan alone (listing and judging every journal).
    pub scan_duration: Duration,
    pub scanned: usize,
    pub skipped: [usize; SkipReason::ALL.len()],
    /// Candidates in plan order.
    pub leases: Vec<LeaseLine>,
    /// Skipped journals in file-name order (filled only for `--verbose`).
    pub skipped_list: Vec<Skipped>,
    pub exit_code: ExitCode,
    /// What made the exit code 74, 75 or 78 once past preflight (a state
    /// file that could not be written, an `rch` that could not be started).
    pub errors: Vec<String>,
    /// What the run found out about rch's daemon, when it checked it.
    pub daemon: Option<daemon::Report>,
    /// The state's leases that wait on rch or are held, after the run;
    /// `None` for a run that learned nothing of its leases and could not
    /// read what earlier runs learned (a 74 or 78 before the state was
    /// read): its metrics then write no such series rather than a 0 that
    /// would end an alert's `for:`.
    pub held: Option<Held>,
    /// Which rch release runs, when the run asked it (`rch --version`).
    pub rch: Option<release::Asked>,
}

/// The SPEC's counts; they add up as it says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub candidates: usize,
    pub backing_off: usize,
    pub attempted: usize,
    pub recovered: usize,
    pub failed: usize,
    pub vanished: usize,
    pub interrupted: usize,
    pub stuck: usize,
    pub deferred: usize,
    pub would_recover: usize,
}

impl Summary {
    /// Records an error that changes the exit code to (at least) `code`,
    /// once however many leases met it.
    pub fn fail(&mut self, code: ExitCode, message: String) {
        self.exit_code = self.exit_code.merge(code);
        if !self.errors.contains(&message) {
            self.errors.push(message);
        }
    }

    /// The summary's `error`: set when the run ends in 74, 75 or 78.
    fn error(&self) -> Option<String> {
        matches!(
            self.exit_code,
            ExitCode::Io | ExitCode::TempFail | ExitCode::Config
        )
        .then(|| self.errors.join("; "))
        .filter(|error| !error.is_empty())
    }

    pub fn counts(&self) -> Counts {
        let mut counts = Counts {
            candidates: self.leases.len(),
            ..Counts::default()
        };
        for line in &self.leases {
            match line.outcome {
                LeaseOutcome::Recovered => counts.recovered += 1,
                LeaseOutcome::Failed => counts.failed += 1,
                LeaseOutcome::Vanished => counts.vanished += 1,
                LeaseOutcome::Interrupted => counts.interrupted += 1,
                LeaseOutcome::Stuck => counts.stuck += 1,
                LeaseOutcome::BackingOff => counts.backing_off += 1,
                LeaseOutcome::Deferred => counts.deferred += 1,
                LeaseOutcome::WouldRecover => counts.would_recover += 1,
            }
        }
        counts.attempted =
            counts.recovered + counts.failed + counts.vanished + counts.interrupted + counts.stuck;
        counts
    }

    pub fn skipped_total(&self) -> usize {
        self.skipped.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, outcome: LeaseOutcome) -> LeaseLine {
        LeaseLine::new(
            Candidate {
                wrapper_id: id.into(),
                worker_id: "hz4".into(),
                build_id: 7,
                heartbeat_unix_ms: 1_000,
            },
            outcome,
            LineDetail {
                duration: Some(Duration::from_millis(8123)),
                error: (outcome == LeaseOutcome::Failed).then(|| "exit status: 1: boom".to_owned()),
                failures: (outcome == LeaseOutcome::Failed).then_some(2),
                next_attempt_unix_ms: (outcome == LeaseOutcome::Failed).then_some(4_800_000),
                ..LineDetail::default()
            },
        )
    }

    fn summary(dry_run: bool, leases: Vec<LeaseLine>) -> Summary {
        let mut skipped = [0; SkipReason::ALL.len()];
        skipped[SkipReason::Terminal.index()] = 3;
        skipped[SkipReason::Malformed.index()] = 1;
        Summary {
            dry_run,
            lease_dir: "/l".into(),
            lease_dir_present: true,
            state_file: "/s".into(),
            now_unix_ms: 3_601_000,
            duration: Duration::from_millis(1234),
            scan_duration: Duration::from_millis(12),
            scanned: 4 + leases.len(),
            skipped,
            leases,
            skipped_list: Vec::new(),
            exit_code: ExitCode::Failed,
            errors: Vec::new(),
            daemon: None,
            held: Some(Held::default()),
            rch: None,
        }
    }

    #[test]
    fn the_rch_object_appears_only_when_rch_was_asked() {
        let mut s = summary(false, Vec::new());
        let value: serde_json::Value = serde_json::from_str(&s.json()).expect("json");
        assert!(value.get("rch").is_none());
        s.rch = Some(release::Asked {
            path: "/usr/local/bin/rch".into(),
            line: "rch 2.1.34".into(),
            capabilities: Ok(release::Version::new(2, 1, 16)),
        });
        let value: serde_json::Value = serde_json::from_str(&s.json()).expect("json");
        assert_eq!(
            value["rch"],
            serde_json::json!({"path": "/usr/local/bin/rch", "version": "rch 2.1.34", "release": "2.1.16"})
        );
        s.rch = Some(release::Asked {
            path: "/usr/local/bin/rch".into(),
            line: String::new(),
            capabilities: Err("failed: exit status: 2".into()),
        });
        let value: serde_json::Value = serde_json::from_str(&s.json()).expect("json");
        assert_eq!(
            value["rch"],
            serde_json::json!({"path": "/usr/local/bin/rch", "version": "", "release": null})
        );
        let text = s.human(false);
        assert!(
            text.contains("rch: /usr/local/bin/rch says \"no version line\" (--capabilities failed: exit status: 2): a completion needs the daemon's mark\n"),
            "{text}"
        );
    }

    #[test]
    fn the_daemon_object_appears_only_when_it_was_checked() {
        let mut s = summary(false, vec![line("a", LeaseOutcome::Deferred)]);
        let value: serde_json::Value = serde_json::from_str(&s.json()).expect("json");
        assert!(value.get("daemon").is_none());
        assert!(!s.human(false).contains("daemon"));
        s.daemon = Some(daemon::Report::new(
            "/home/a/.cache/rch/rch.sock".into(),
            daemon::ChosenBy::Rch,
            Err("no socket at all (nothing is at that path)".into()),
            Some("/run/user/1000/rch.sock".into()),
        ));
        let value: serde_json::Value = serde_json::from_str(&s.json()).expect("json");
        assert_eq!(
            value["daemon"],
            serde_json::json!({"socket": "/home/a/.cache/rch/rch.sock", "chosen_by": "rch",
                "up": false, "error": "no socket at all (nothing is at that path)",
                "answering_elsewhere": "/run/user/1000/rch.sock"})
        );
        let text = s.human(false);
        assert!(
            text.contains("rch's daemon does not answer at /home/a/.cache/rch/rch.sock (as rch resolves it): no socket at all (nothing is at that path); one answers at /run/user/1000/rch.sock\n"),
            "{text}"
        );
        s.daemon = Some(daemon::Report::new(
            "/s.sock".into(),
            daemon::ChosenBy::Option,
            Ok(()),
            None,
        ));
        let value: serde_json::Value = serde_json::from_str(&s.json()).expect("json");
        assert_eq!(
            value["daemon"],
            serde_json::json!({"socket": "/s.sock", "chosen_by": "option", "up": true})
        );
    }

    #[test]
    fn an_error_rides_on_the_summary_only_when_it_decides_74_or_78() {
        let mut s = summary(false, vec![line("a", LeaseOutcome::Failed)]);
        let error = |s: &Summary| {
            let value: serde_json::Value = serde_json::from_str(&s.json()).expect("json");
            value.get("error").cloned()
        };
        assert_eq!(error(&s), None);
        s.fail(ExitCode::Config, "rch could not be started".into());
        s.fail(ExitCode::Config, "rch could not be started".into());
        assert_eq!(s.exit_code, ExitCode::Config);
        assert_eq!(error(&s), Some("rch could not be started".into()));
        s.fail(ExitCode::Io, "cannot write state".into());
        assert_eq!(s.exit_code, ExitCode::Io);
        assert_eq!(
            error(&s),
            Some("rch could not be started; cannot write state".into())
        );
    }

    #[test]
    fn the_summary_line_times_the_scan_and_the_run_apart() {
        let ran = summary(false, vec![line("a", LeaseOutcome::Recovered)]).human(false);
        assert!(ran.contains("in 12ms"), "{ran}");
        assert!(ran.contains("the run took 1.2s"), "{ran}");
        let idle = summary(false, vec![line("a", LeaseOutcome::BackingOff)]).human(false);
        assert!(!idle.contains("the run took"), "{idle}");
    }

    #[test]
    fn json_counts_add_up_and_list_only_reasons_that_occurred() {
        let s = summary(
            false,
            vec![
                line("a", LeaseOutcome::Recovered),
                line("b", LeaseOutcome::Failed),
                line("c", LeaseOutcome::Deferred),
                line("d", LeaseOutcome::BackingOff),
            ],
        );
        let value: serde_json::Value = serde_json::from_str(&s.json()).expect("json");
        assert_eq!(
            value["skipped"],
            serde_json::json!({"terminal": 3, "malformed": 1})
        );
        assert_eq!(value["candidates"], 4);
        assert_eq!(value["attempted"], 2);
        assert_eq!(value["recovered"], 1);
        assert_eq!(value["failed"], 1);
        assert_eq!(value["deferred"], 1);
        assert_eq!(value["backing_off"], 1);
        assert!(value.get("would_recover").is_none());
        assert_eq!(value["exit_code"], 1);
        assert_eq!(value["duration_ms"], 1234);
        assert_eq!(value["leases"][1]["error"], "exit status: 1: boom");
        assert_eq!(value["leases"][1]["failures"], 2);
        assert!(value["leases"][0].get("error").is_none());
    }

    #[test]
    fn an_interrupted_attempt_is_attempted_but_not_failed() {
        let mut s = summary(
            false,
            vec![
                line("a", LeaseOutcome::Interrupted),
                line("b", LeaseOutcome::Recovered),
                line("c", LeaseOutcome::Deferred),
            ],
        );
        s.exit_code = ExitCode::Signal(libc::SIGTERM);
        let value: serde_json::Value = serde_json::from_str(&s.json()).expect("json");
        assert_eq!(value["interrupted"], 1);
        assert_eq!(value["failed"], 0);
        assert_eq!(value["attempted"], 2);
        assert_eq!(value["leases"][0]["outcome"], "interrupted");
        assert_eq!(value["exit_code"], 143);
        let text = s.human(false);
        assert!(
            text.contains("interrupted by SIGTERM after 8.1s (not counted as a failure)"),
            "{text}"
        );
        assert!(
            text.contains("0 failed, 0 vanished, 1 interrupted"),
            "{text}"
        );
    }

    #[test]
    fn a_dry_run_adds_would_recover() {
        let s = summary(true, vec![line("a", LeaseOutcome::WouldRecover)]);
        let value: serde_json::Value = serde_json::from_str(&s.json()).expect("json");
        assert_eq!(value["would_recover"], 1);
        assert_eq!(value["attempted"], 0);
        assert!(s.human(false).contains("1 would recover"));
    }

    #[test]
    fn a_held_lease_s_line_says_why_and_since_when() {
        let held = |since, error: &str| HeldLease {
            since_unix_ms: since,
            error: error.into(),
            ..HeldLease::default()
        };
        let with = |outcome, error: Option<&str>, held: Option<HeldLease>| {
            let mut line = line("rchw-a", outcome);
            line.detail = Some(Box::new(LineDetail {
                error: error.map(str::to_owned),
                held,
                ..LineDetail::default()
            }));
            line
        };
        let now = 3_601_000;
        let text = |dry_run, line| summary(dry_run, vec![line]).human(false);
        // Held from this run on: the reason, on one line.
        let out = text(
            false,
            with(
                LeaseOutcome::Deferred,
                Some("busy\n  (rch: locked)"),
                Some(held(now, "busy")),
            ),
        );
        assert!(out.contains("deferred: busy (rch: locked)\n"), "{out}");
        // Held since an hour before: since when.
        let out = text(
            false,
            with(
                LeaseOutcome::Deferred,
                Some("busy"),
                Some(held(1_000, "busy")),
            ),
        );
        assert!(out.contains("deferred, held for 1h 0m: busy\n"), "{out}");
        // Not started: the held reason, as the JSON line carries no error.
        let out = text(
            false,
            with(
                LeaseOutcome::Deferred,
                None,
                Some(held(now, "not started: budget")),
            ),
        );
        assert!(out.contains("deferred: not started: budget\n"), "{out}");
        // A dry run tells what earlier runs held it for.
        let out = text(
            true,
            with(LeaseOutcome::WouldRecover, None, Some(held(1_000, "busy"))),
        );
        assert!(
            out.contains("would recover (held for 1h 0m: busy)\n"),
            "{out}"
        );
        // Nothing held: as before.
        let out = text(false, with(LeaseOutcome::Deferred, None, None));
        assert!(out.contains("deferred to the next run\n"), "{out}");
    }

    #[test]
    fn the_human_summary_names_counts_and_reasons() {
        let s = summary(false, vec![line("rchw-a", LeaseOutcome::Failed)]);
        let text = s.human(false);
        assert!(text.starts_with("WRAPPER"), "{text}");
        assert!(text.contains("rchw-a"));
        // From the run's end (its start, 3,601,000 ms, plus 1.234 s) to
        // the next attempt at 4,800,000 ms.
        assert!(text.contains("2 failures, retry in 19m 57s"), "{text}");
        assert!(text.contains("1 failed"));
        assert!(
            text.contains("4 skipped (1 malformed, 3 terminal)"),
            "{text}"
        );
        let quiet = summary(false, Vec::new()).human(false);
        assert_eq!(quiet.lines().count(), 1, "{quiet}");
        assert!(quiet.contains("nothing to recover"));
    }
}

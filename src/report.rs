//! The run's summary for people (a table and one line) and for scripts (the
//! SPEC's JSON document). Built from plain data after the run; prints nothing
//! itself.

use crate::exit::ExitCode;
use crate::human::{one_line, span, utc};
use crate::state::backoff::{Backoff, HeldLease, Hold};
use crate::verdict::{Candidate, SkipReason, Skipped};
use crate::{daemon, release};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use std::fmt::Write;
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

    /// The JSON document of SPEC "JSON summary", one line.
    pub fn json(&self) -> String {
        let counts = self.counts();
        let mut leases: Vec<JsonLease<'_>> = self.leases.iter().map(JsonLease::from).collect();
        leases.extend(self.skipped_list.iter().map(|skipped| JsonLease::Skipped {
            file: &skipped.file,
            wrapper_id: skipped.wrapper_id.as_deref(),
            outcome: "skipped",
            reason: skipped.reason.as_str(),
            detail: skipped.detail.as_deref(),
        }));
        let document = JsonSummary {
            version: 1,
            dry_run: self.dry_run,
            lease_dir: self.lease_dir.to_string_lossy().into_owned(),
            state_file: self.state_file.to_string_lossy().into_owned(),
            duration_ms: millis(self.duration),
            scanned: self.scanned,
            skipped: SkippedCounts(&self.skipped),
            candidates: counts.candidates,
            backing_off: counts.backing_off,
            attempted: counts.attempted,
            recovered: counts.recovered,
            failed: counts.failed,
            vanished: counts.vanished,
            interrupted: counts.interrupted,
            stuck: counts.stuck,
            deferred: counts.deferred,
            would_recover: self.dry_run.then_some(counts.would_recover),
            rch: self.rch.as_ref().map(JsonRch::from),
            daemon: self.daemon.as_ref().map(JsonDaemon::from),
            leases,
            exit_code: self.exit_code.code(),
            error: self.error(),
        };
        // Serializing plain structs of strings and numbers cannot fail.
        serde_json::to_string(&document).unwrap_or_default()
    }

    /// The table of candidates (when there are any, or with `verbose` the
    /// skipped journals too) and the one-line summary.
    pub fn human(&self, verbose: bool) -> String {
        let mut out = String::new();
        if !self.leases.is_empty() {
            self.table(&mut out);
        }
        if verbose && !self.skipped_list.is_empty() {
            let width = self
                .skipped_list
                .iter()
                .map(|s| s.file.len())
                .max()
                .unwrap_or(0);
            out.push_str("skipped:\n");
            for skipped in &self.skipped_list {
                let _ = write!(
                    out,
                    "  {:width$}  {}",
                    skipped.file,
                    skipped.reason.as_str()
                );
                if let Some(detail) = &skipped.detail {
                    let _ = write!(out, ": {detail}");
                }
                out.push('\n');
            }
        }
        if let Some(asked) = &self.rch {
            out.push_str(&asked.summary_line());
            out.push('\n');
        }
        if let Some(daemon) = &self.daemon {
            out.push_str(&daemon.line());
            out.push('\n');
        }
        out.push_str(&self.summary_line());
        out.push('\n');
        out
    }

    fn table(&self, out: &mut String) {
        let rows: Vec<[String; 5]> = self
            .leases
            .iter()
            .map(|line| {
                [
                    line.candidate.wrapper_id.clone(),
                    line.candidate.worker_id.clone(),
                    line.candidate.build_id.to_string(),
                    format!(
                        "{} ago",
                        span(
                            self.now_unix_ms
                                .saturating_sub(line.candidate.heartbeat_unix_ms)
                        )
                    ),
                    self.describe(line),
                ]
            })
            .collect();
        let header = ["WRAPPER", "WORKER", "BUILD", "HEARTBEAT", "OUTCOME"];
        let mut widths = header.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let header = header.map(str::to_owned);
        for row in std::iter::once(&header).chain(&rows) {
            let line: Vec<String> = row[..4]
                .iter()
                .zip(widths)
                .map(|(cell, width)| format!("{cell:width$}"))
                .collect();
            let _ = writeln!(out, "{}  {}", line.join("  "), row[4]);
        }
    }

    fn describe(&self, line: &LeaseLine) -> String {
        let retry = |failures: Option<u32>, next: Option<u64>| match (failures, next) {
            (Some(failures), Some(next)) => {
                // From the run's end, as `status` counts: a failure's
                // backoff runs from its attempt's end, which may lie
                // minutes after the run's start.
                let end = self
                    .now_unix_ms
                    .saturating_add(self.duration.as_millis() as u64);
                let when = if next <= end {
                    "retry next run".to_owned()
                } else {
                    format!("retry in {}", span(next - end))
                };
                format!(
                    "{failures} failure{}, {when}",
                    if failures == 1 { "" } else { "s" }
                )
            }
            _ => String::new(),
        };
        let held = |hold: Hold| match hold {
            Hold::Stuck => format!(
                "stuck: this rch never completes it, upgrade rch to 2.1.34 ({})",
                retry(line.failures(), line.next_attempt_unix_ms())
            ),
            Hold::DaemonRecordWait => match line.next_attempt_unix_ms() {
                Some(next) if next > self.now_unix_ms => format!(
                    "waiting until {}: rch finishes it once the lease is 24h old",
                    utc(next)
                ),
                // A heartbeat over a day old that rch still waits for (the
                // clocks disagree): retried next run, still uncharged.
                _ => "deferred: rch waits for the lease to be 24h old; retry next run".into(),
            },
        };
        let described = match (line.outcome, line.hold()) {
            (LeaseOutcome::Stuck | LeaseOutcome::BackingOff, Some(hold))
            | (LeaseOutcome::Deferred, Some(hold @ Hold::DaemonRecordWait)) => held(hold),
            (LeaseOutcome::Stuck, None) => "stuck".into(),
            // Why it waits: the error the JSON line carries, or for one a
            // real run did not start, the reason it holds it for.
            (LeaseOutcome::Deferred, _)
                if line.error().is_some() || (!self.dry_run && line.held().is_some()) =>
            {
                let why = line.error().or(line.held().map(|held| held.error.as_str()));
                let error = one_line(why.unwrap_or_default());
                return match self.held_for(line) {
                    Some(held_for) => format!("deferred, held for {held_for}: {error}"),
                    None => format!("deferred: {error}"),
                };
            }
            _ => self.describe_outcome(line, retry),
        };
        match (self.held_for(line), line.held()) {
            (Some(held_for), Some(_)) if line.hold().is_some() => {
                format!("{described} (held for {held_for})")
            }
            (Some(held_for), Some(held)) => format!(
                "{described} (held for {held_for}: {})",
                one_line(&held.error)
            ),
            _ => described,
        }
    }

    /// How long `line`'s lease has been held, when an earlier run began to
    /// hold it ("7h 0m").
    fn held_for(&self, line: &LeaseLine) -> Option<String> {
        line.held()
            .filter(|held| held.since_unix_ms < self.now_unix_ms)
            .map(|held| span(held.held_ms(self.now_unix_ms)))
    }

    fn describe_outcome(
        &self,
        line: &LeaseLine,
        retry: impl Fn(Option<u32>, Option<u64>) -> String,
    ) -> String {
        match line.outcome {
            LeaseOutcome::Recovered if line.note().is_some() => format!(
                "recovered in {} (finished by someone else)",
                seconds(line.duration().unwrap_or_default())
            ),
            LeaseOutcome::Recovered => format!(
                "recovered in {}",
                seconds(line.duration().unwrap_or_default())
            ),
            LeaseOutcome::Failed => format!(
                "failed after {} ({})",
                seconds(line.duration().unwrap_or_default()),
                retry(line.failures(), line.next_attempt_unix_ms())
            ),
            LeaseOutcome::BackingOff => format!(
                "backing off ({})",
                retry(line.failures(), line.next_attempt_unix_ms())
            ),
            LeaseOutcome::Interrupted => format!(
                "interrupted by {} after {} (not counted as a failure)",
                self.stop_signal(),
                seconds(line.duration().unwrap_or_default())
            ),
            LeaseOutcome::Vanished => "vanished (finished elsewhere)".into(),
            LeaseOutcome::Stuck => "stuck".into(),
            LeaseOutcome::Deferred => "deferred to the next run".into(),
            LeaseOutcome::WouldRecover => "would recover".into(),
        }
    }

    /// The name of the signal that stopped the run (the first one received
    /// decides the exit code, so the code names it).
    fn stop_signal(&self) -> &'static str {
        match self.exit_code {
            ExitCode::Signal(signal) => crate::signals::name(signal),
            _ => "a signal",
        }
    }

    fn summary_line(&self) -> String {
        let counts = self.counts();
        let mut line = format!(
            "scanned {} journal{} in {}",
            self.scanned,
            if self.scanned == 1 { "" } else { "s" },
            seconds(self.scan_duration)
        );
        let skipped: Vec<String> = SkipReason::ALL
            .iter()
            .filter(|reason| self.skipped[reason.index()] > 0)
            .map(|reason| format!("{} {}", self.skipped[reason.index()], reason.as_str()))
            .collect();
        if !skipped.is_empty() {
            let _ = write!(
                line,
                ": {} skipped ({})",
                self.skipped_total(),
                skipped.join(", ")
            );
        }
        if counts.candidates == 0 {
            line.push_str("; nothing to recover");
        } else if self.dry_run {
            let _ = write!(
                line,
                "; {} candidate{}: {} backing off, {} would recover, {} deferred (dry run: nothing started or written)",
                counts.candidates,
                if counts.candidates == 1 { "" } else { "s" },
                counts.backing_off,
                counts.would_recover,
                counts.deferred
            );
        } else {
            let _ = write!(
                line,
                "; {} candidate{}: {} backing off, {} recovered, {} failed, {} vanished, {} interrupted, {} deferred",
                counts.candidates,
                if counts.candidates == 1 { "" } else { "s" },
                counts.backing_off,
                counts.recovered,
                counts.failed,
                counts.vanished,
                counts.interrupted,
                counts.deferred
            );
        }
        if counts.stuck > 0 {
            let _ = write!(
                line,
                "; {} stuck (this rch never completes them: upgrade rch to 2.1.34)",
                counts.stuck
            );
        }
        if counts.attempted > 0 {
            let _ = write!(line, "; the run took {}", seconds(self.duration));
        }
        line
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// "42ms" under a second, "8.1s" above.
fn seconds(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        format!("{}ms", duration.as_millis())
    } else {
        format!("{:.1}s", duration.as_secs_f64())
    }
}

#[derive(Serialize)]
struct JsonSummary<'a> {
    version: u32,
    dry_run: bool,
    lease_dir: String,
    state_file: String,
    duration_ms: u64,
    scanned: usize,
    skipped: SkippedCounts<'a>,
    candidates: usize,
    backing_off: usize,
    attempted: usize,
    recovered: usize,
    failed: usize,
    vanished: usize,
    interrupted: usize,
    /// Added after `interrupted` (SPEC: add, don't rename).
    stuck: usize,
    deferred: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    would_recover: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rch: Option<JsonRch<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    daemon: Option<JsonDaemon<'a>>,
    leases: Vec<JsonLease<'a>>,
    exit_code: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// SPEC's `rch` object: the `rch` a real run asked, the first line of its
/// `--version`, and the release the run decided by (`--capabilities`'
/// `"version"`, else `--version`'s number; null when neither could be
/// read).
#[derive(Serialize)]
struct JsonRch<'a> {
    path: String,
    version: &'a str,
    release: Option<String>,
}

impl<'a> From<&'a release::Asked> for JsonRch<'a> {
    fn from(asked: &'a release::Asked) -> Self {
        JsonRch {
            path: asked.path.to_string_lossy().into_owned(),
            version: &asked.line,
            release: asked.release().map(|release| release.to_string()),
        }
    }
}

/// SPEC's `daemon` object: the socket checked, how it was chosen, whether
/// it answered, and why not.
#[derive(Serialize)]
struct JsonDaemon<'a> {
    socket: String,
    chosen_by: &'static str,
    up: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    answering_elsewhere: Option<String>,
}

impl<'a> From<&'a daemon::Report> for JsonDaemon<'a> {
    fn from(report: &'a daemon::Report) -> Self {
        JsonDaemon {
            socket: report.socket.to_string_lossy().into_owned(),
            chosen_by: report.chosen_by.as_str(),
            up: report.up,
            error: report.error.as_deref(),
            answering_elsewhere: report
                .answering_elsewhere
                .as_ref()
                .map(|path| path.to_string_lossy().into_owned()),
        }
    }
}

/// Counts by reason, only reasons that occurred, in SPEC order.
struct SkippedCounts<'a>(&'a [usize; SkipReason::ALL.len()]);

impl Serialize for SkippedCounts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let present = SkipReason::ALL.iter().filter(|r| self.0[r.index()] > 0);
        let mut map = serializer.serialize_map(Some(present.clone().count()))?;
        for reason in present {
            map.serialize_entry(reason.as_str(), &self.0[reason.index()])?;
        }
        map.end()
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum JsonLease<'a> {
    Candidate {
        wrapper_id: &'a str,
        worker_id: &'a str,
        build_id: u64,
        heartbeat_unix_ms: u64,
        outcome: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        failures: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        next_attempt_unix_ms: Option<u64>,
        /// Why its entry waits on rch: `stuck`, `daemon_record_wait`.
        #[serde(skip_serializing_if = "Option::is_none")]
        hold: Option<&'static str>,
        /// Said of a lease that succeeded: finished by someone else.
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<&'a str>,
    },
    Skipped {
        file: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        wrapper_id: Option<&'a str>,
        outcome: &'static str,
        reason: &'static str,
        /// With `--verbose`: the evidence of the deciding check.
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<&'a str>,
    },
}

impl<'a> From<&'a LeaseLine> for JsonLease<'a> {
    fn from(line: &'a LeaseLine) -> JsonLease<'a> {
        JsonLease::Candidate {
            wrapper_id: &line.candidate.wrapper_id,
            worker_id: &line.candidate.worker_id,
            build_id: line.candidate.build_id,
            heartbeat_unix_ms: line.candidate.heartbeat_unix_ms,
            outcome: line.outcome.as_str(),
            duration_ms: line.duration().map(millis),
            error: line.error(),
            failures: line.failures(),
            next_attempt_unix_ms: line.next_attempt_unix_ms(),
            hold: line.hold().map(Hold::as_str),
            note: line.note(),
        }
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

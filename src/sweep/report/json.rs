//! The run's summary as SPEC's JSON document ("JSON summary"): plain
//! structs whose fields come in SPEC's order.

use super::{LeaseLine, Summary};
use crate::judge::verdict::SkipReason;
use crate::state::backoff::Hold;
use crate::{rch::daemon, rch::release};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use std::time::Duration;

impl Summary {
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
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
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

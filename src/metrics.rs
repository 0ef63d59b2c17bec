//! node_exporter textfile-collector metrics for one run, replaced atomically
//! so the collector never reads a half-written file. Every series is written
//! on every run, zeros included, so alerts see stable series.

use crate::fsio;
use crate::judge::SkipReason;
use crate::report::Summary;
use std::fmt::Write;
use std::io;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Renders the metrics text. `last_success_unix_ms` comes from the state
/// file, so it survives runs that failed.
pub fn render(summary: &Summary, now: SystemTime, last_success_unix_ms: Option<u64>) -> String {
    let counts = summary.counts();
    let now_secs = now
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64());
    let mut out = String::new();
    let mut gauge = |name: &str, help: &str, samples: &[(&str, f64)]| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        for (labels, value) in samples {
            let _ = writeln!(out, "{name}{labels} {value}");
        }
    };
    gauge(
        "rch_sweep_last_run_timestamp_seconds",
        "Unix time at which the last rch-sweep run ended.",
        &[("", now_secs)],
    );
    gauge(
        "rch_sweep_last_success_timestamp_seconds",
        "Unix time at which the last rch-sweep run that exited 0 ended (0 if none yet).",
        &[(
            "",
            last_success_unix_ms.map_or(0.0, |ms| ms as f64 / 1000.0),
        )],
    );
    gauge(
        "rch_sweep_run_duration_seconds",
        "Wall time of the last run.",
        &[("", summary.duration.as_secs_f64())],
    );
    gauge(
        "rch_sweep_journals_scanned",
        "Lease journals (*.json entries) seen by the last run.",
        &[("", summary.scanned as f64)],
    );
    let skipped: Vec<(String, f64)> = SkipReason::ALL
        .iter()
        .map(|reason| {
            (
                format!("{{reason=\"{}\"}}", reason.as_str()),
                summary.skipped[reason.index()] as f64,
            )
        })
        .collect();
    let skipped: Vec<(&str, f64)> = skipped.iter().map(|(l, v)| (l.as_str(), *v)).collect();
    gauge(
        "rch_sweep_journals_skipped",
        "Journals the last run skipped, by reason.",
        &skipped,
    );
    gauge(
        "rch_sweep_candidates",
        "Journals whose owner is gone while they still own source or await the daemon.",
        &[("", counts.candidates as f64)],
    );
    gauge(
        "rch_sweep_backing_off",
        "Candidates not attempted because an earlier failure's backoff has not expired.",
        &[("", counts.backing_off as f64)],
    );
    gauge(
        "rch_sweep_recoveries",
        "Candidates of the last run by outcome.",
        &[
            ("{outcome=\"recovered\"}", counts.recovered as f64),
            ("{outcome=\"failed\"}", counts.failed as f64),
            ("{outcome=\"vanished\"}", counts.vanished as f64),
            ("{outcome=\"deferred\"}", counts.deferred as f64),
        ],
    );
    gauge(
        "rch_sweep_exit_code",
        "Exit status of the last run.",
        &[("", f64::from(summary.exit_code.code()))],
    );
    out
}

/// Writes the metrics file atomically, readable by the collector (0644).
pub fn write(path: &Path, summary: &Summary, last_success_unix_ms: Option<u64>) -> io::Result<()> {
    let text = render(summary, SystemTime::now(), last_success_unix_ms);
    fsio::write_atomic(path, text.as_bytes(), 0o644)
}

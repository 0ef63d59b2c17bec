//! node_exporter textfile-collector metrics for one run, replaced atomically
//! so the collector never reads a half-written file. Every series is written
//! on every run, zeros included, so alerts see stable series.
//!
//! Every series carries `lease_dir="<absolute lease directory>"`: several
//! users' sweeps write their files into one textfile directory, and
//! node_exporter refuses to serve the same series from two files, so without
//! that label only one user's sweep would be seen.

use crate::fsio;
use crate::report::Summary;
use crate::verdict::SkipReason;
use std::fmt::Write;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The outcomes `rch_sweep_recoveries` is broken down by (SPEC "Metrics
/// file"), in that order.
pub const OUTCOMES: [&str; 5] = ["recovered", "failed", "vanished", "interrupted", "deferred"];

/// A label value in the text format: backslash, double quote and newline
/// escaped, nothing else changed.
pub fn escape_label_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// The lease directory as the label shows it: the run's one resolved
/// identity of it (absolute, symlinks resolved), so two users' relative
/// `--lease-dir job-leases` cannot collide and two paths to one directory
/// give one series.
fn absolute(lease_dir: &Path) -> PathBuf {
    std::path::absolute(lease_dir).unwrap_or_else(|_| lease_dir.to_path_buf())
}

/// Renders the metrics text. `last_success_unix_ms` comes from the state
/// file, so it survives runs that failed.
pub fn render(summary: &Summary, now: SystemTime, last_success_unix_ms: Option<u64>) -> String {
    let counts = summary.counts();
    let now_secs = now
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64());
    let lease_dir = format!(
        "lease_dir=\"{}\"",
        escape_label_value(&absolute(&summary.lease_dir).to_string_lossy())
    );
    let mut out = String::new();
    // Each sample: its extra label (`key="value"`, or "") and its value.
    let mut gauge = |name: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        for (label, value) in samples {
            let separator = if label.is_empty() { "" } else { "," };
            let _ = writeln!(out, "{name}{{{lease_dir}{separator}{label}}} {value}");
        }
    };
    let plain = |value: f64| [(String::new(), value)];
    gauge(
        "rch_sweep_last_run_timestamp_seconds",
        "Unix time at which the last rch-sweep run ended.",
        &plain(now_secs),
    );
    gauge(
        "rch_sweep_last_success_timestamp_seconds",
        "Unix time at which the last rch-sweep run that exited 0 ended (0 if none yet).",
        &plain(last_success_unix_ms.map_or(0.0, |ms| ms as f64 / 1000.0)),
    );
    gauge(
        "rch_sweep_run_duration_seconds",
        "Wall time of the last run.",
        &plain(summary.duration.as_secs_f64()),
    );
    gauge(
        "rch_sweep_journals_scanned",
        "Lease journals (*.json entries) seen by the last run.",
        &plain(summary.scanned as f64),
    );
    let skipped: Vec<(String, f64)> = SkipReason::ALL
        .iter()
        .map(|reason| {
            (
                format!("reason=\"{}\"", reason.as_str()),
                summary.skipped[reason.index()] as f64,
            )
        })
        .collect();
    gauge(
        "rch_sweep_journals_skipped",
        "Journals the last run skipped, by reason.",
        &skipped,
    );
    gauge(
        "rch_sweep_candidates",
        "Journals whose owner is gone while they still own source or await the daemon.",
        &plain(counts.candidates as f64),
    );
    gauge(
        "rch_sweep_backing_off",
        "Candidates not attempted because an earlier failure's backoff has not expired.",
        &plain(counts.backing_off as f64),
    );
    let by_outcome = [
        counts.recovered,
        counts.failed,
        counts.vanished,
        counts.interrupted,
        counts.deferred,
    ];
    let recoveries: Vec<(String, f64)> = OUTCOMES
        .iter()
        .zip(by_outcome)
        .map(|(outcome, count)| (format!("outcome=\"{outcome}\""), count as f64))
        .collect();
    gauge(
        "rch_sweep_recoveries",
        "Candidates of the last run by outcome.",
        &recoveries,
    );
    gauge(
        "rch_sweep_exit_code",
        "Exit status of the last run.",
        &plain(f64::from(summary.exit_code.code())),
    );
    // Only a run that checked the daemon knows; a 0 or 1 made up by one
    // that did not would hide or fake an outage.
    if let Some(daemon) = &summary.daemon {
        gauge(
            "rch_sweep_daemon_up",
            "1 when rch's daemon answered at the socket the last run checked, 0 when not.",
            &plain(if daemon.up { 1.0 } else { 0.0 }),
        );
    }
    out
}

/// Writes the metrics file atomically, readable by the collector (0644).
pub fn write(path: &Path, summary: &Summary, last_success_unix_ms: Option<u64>) -> io::Result<()> {
    let text = render(summary, SystemTime::now(), last_success_unix_ms);
    fsio::write_atomic(path, text.as_bytes(), 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_escape_what_the_text_format_requires() {
        assert_eq!(
            escape_label_value("/home/a/job-leases"),
            "/home/a/job-leases"
        );
        assert_eq!(
            escape_label_value("a\\b\"c\nd{e},f"),
            "a\\\\b\\\"c\\nd{e},f"
        );
    }
}

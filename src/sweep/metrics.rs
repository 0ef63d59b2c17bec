//! node_exporter textfile-collector metrics for one run, replaced atomically
//! so the collector never reads a half-written file. Every series is written
//! on every run, zeros included, so alerts see stable series.
//!
//! Every series carries `lease_dir="<absolute lease directory>"`: several
//! users' sweeps write their files into one textfile directory, and
//! node_exporter refuses to serve the same series from two files, so without
//! that label only one user's sweep would be seen.

use crate::fsio;
use crate::judge::verdict::SkipReason;
use crate::sweep::report::{LeaseOutcome, Summary};
use std::fmt::Write;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The outcomes `rch_sweep_recoveries` is broken down by (SPEC "Metrics
/// file"), in that order.
pub const OUTCOMES: [&str; 6] = [
    "recovered",
    "failed",
    "vanished",
    "interrupted",
    "stuck",
    "deferred",
];

/// The states `rch_sweep_leases` counts: leases whose entry waits on rch
/// rather than on their failures.
pub const HELD_STATES: [&str; 2] = ["stuck", "waiting"];

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

/// The label every series carries.
fn lease_dir_label(lease_dir: &Path) -> String {
    format!(
        "lease_dir=\"{}\"",
        escape_label_value(&absolute(lease_dir).to_string_lossy())
    )
}

/// The `lease_dir` label's value (escaped) that a run sweeping
/// `lease_dir` writes.
pub fn lease_dir_label_value(lease_dir: &Path) -> String {
    escape_label_value(&absolute(lease_dir).to_string_lossy())
}

/// Renders the metrics text. `last_success_unix_ms` comes from the state
/// file, so it survives runs that failed. The series come in a fixed
/// order: when the run was and how long it took, what it found, how it
/// ended.
pub fn render(summary: &Summary, now: SystemTime, last_success_unix_ms: Option<u64>) -> String {
    let lease_dir = lease_dir_label(&summary.lease_dir);
    let mut out = String::new();
    let gauges = when(summary, now, last_success_unix_ms)
        .into_iter()
        .chain(found(summary))
        .chain(ended(summary));
    for gauge in gauges {
        gauge.write(&mut out, &lease_dir);
    }
    out
}

/// One gauge: its name, its help text and its samples, each with its
/// extra label (`key="value"`, or "") and its value.
struct Gauge {
    name: &'static str,
    help: &'static str,
    samples: Vec<(String, f64)>,
}

impl Gauge {
    /// A gauge of one sample, with no label but the lease directory's.
    fn plain(name: &'static str, help: &'static str, value: f64) -> Gauge {
        Gauge {
            name,
            help,
            samples: vec![(String::new(), value)],
        }
    }

    fn write(&self, out: &mut String, lease_dir: &str) {
        let name = self.name;
        let _ = writeln!(out, "# HELP {name} {}", self.help);
        let _ = writeln!(out, "# TYPE {name} gauge");
        for (label, value) in &self.samples {
            let separator = if label.is_empty() { "" } else { "," };
            let _ = writeln!(out, "{name}{{{lease_dir}{separator}{label}}} {value}");
        }
    }
}

/// When the run ended, when the last run that exited 0 did, and how long
/// this one took.
fn when(summary: &Summary, now: SystemTime, last_success_unix_ms: Option<u64>) -> [Gauge; 3] {
    let now_secs = now
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64());
    [
        Gauge::plain(
            "rch_sweep_last_run_timestamp_seconds",
            "Unix time at which the last rch-sweep run ended.",
            now_secs,
        ),
        Gauge::plain(
            "rch_sweep_last_success_timestamp_seconds",
            "Unix time at which the last rch-sweep run that exited 0 ended (0 if none yet).",
            last_success_unix_ms.map_or(0.0, |ms| ms as f64 / 1000.0),
        ),
        Gauge::plain(
            "rch_sweep_run_duration_seconds",
            "Wall time of the last run.",
            summary.duration.as_secs_f64(),
        ),
    ]
}

/// What the run found: journals, skipped ones by reason, candidates, those
/// backing off, the candidates by outcome, and the leases held (when the
/// run knows them).
fn found(summary: &Summary) -> Vec<Gauge> {
    let counts = summary.counts();
    let skipped = SkipReason::ALL
        .iter()
        .map(|reason| {
            (
                format!("reason=\"{}\"", reason.as_str()),
                summary.skipped[reason.index()] as f64,
            )
        })
        .collect();
    let by_outcome = [
        counts.recovered,
        counts.failed,
        counts.vanished,
        counts.interrupted,
        counts.stuck,
        counts.deferred,
    ];
    let recoveries = OUTCOMES
        .iter()
        .zip(by_outcome)
        .map(|(outcome, count)| (format!("outcome=\"{outcome}\""), count as f64))
        .collect();
    let mut gauges = vec![
        Gauge::plain(
            "rch_sweep_journals_scanned",
            "Lease journals (*.json entries) seen by the last run.",
            summary.scanned as f64,
        ),
        Gauge {
            name: "rch_sweep_journals_skipped",
            help: "Journals the last run skipped, by reason.",
            samples: skipped,
        },
        Gauge::plain(
            "rch_sweep_candidates",
            "Journals whose owner is gone while they still own source or await the daemon.",
            counts.candidates as f64,
        ),
        Gauge::plain(
            "rch_sweep_backing_off",
            "Candidates backing off after their own failures: those the last run charged, and those it did not attempt because an earlier failure's backoff has not expired (not those waiting on rch: rch_sweep_leases).",
            failed_backing_off(summary) as f64,
        ),
        Gauge {
            name: "rch_sweep_recoveries",
            help: "Candidates of the last run by outcome.",
            samples: recoveries,
        },
    ];
    // A run that learned nothing of its leases (a 74 or 78 before the
    // state could be read) writes no count of them: a 0 would end the
    // `for:` of the alerts on them.
    if let Some(held) = &summary.held {
        let states = HELD_STATES
            .iter()
            .zip([held.stuck, held.waiting])
            .map(|(state, count)| (format!("state=\"{state}\""), count as f64))
            .collect();
        gauges.push(Gauge {
            name: "rch_sweep_leases",
            help: "Leases waiting on rch, not on their own failures: stuck (this rch never completes them; upgrade rch to 2.1.34), waiting (rch finishes them once 24h old).",
            samples: states,
        });
        gauges.push(Gauge::plain(
            "rch_sweep_lease_held_seconds",
            "The longest a lease has been held (deferred for any reason, stuck, or waiting for rch's 24h) without a start that reached rch's verdict; 0 when none is.",
            held.longest_ms as f64 / 1000.0,
        ));
    }
    gauges
}

/// The candidates backing off for their own failures: those this run
/// charged, and those not attempted for an earlier failure's backoff. A
/// lease that waits on rch (stuck, or its 24 hours) is counted by
/// `rch_sweep_leases` instead, so that RchSweepLeasesKeepFailing does not
/// call it failing; and one charged by this run is counted, so that the
/// series does not drop to 0 in each run that retries and fails again
/// (which would restart that alert's `for:`).
fn failed_backing_off(summary: &Summary) -> usize {
    summary
        .leases
        .iter()
        .filter(|line| {
            line.outcome == LeaseOutcome::Failed
                || (line.outcome == LeaseOutcome::BackingOff && line.hold().is_none())
        })
        .count()
}

/// How the run ended: its exit code, whether it found its lease directory,
/// and whether rch's daemon answered.
fn ended(summary: &Summary) -> Vec<Gauge> {
    let mut gauges = vec![
        Gauge::plain(
            "rch_sweep_exit_code",
            "Exit status of the last run.",
            f64::from(summary.exit_code.code()),
        ),
        Gauge::plain(
            "rch_sweep_lease_dir_present",
            "1 when the last run found its lease directory; 0 when it did not (nothing was swept).",
            if summary.lease_dir_present { 1.0 } else { 0.0 },
        ),
    ];
    // Only a run that checked the daemon knows; a 0 or 1 made up by one
    // that did not would hide or fake an outage.
    if let Some(daemon) = &summary.daemon {
        gauges.push(Gauge::plain(
            "rch_sweep_daemon_up",
            "1 when rch's daemon answered at the socket the last run checked, 0 when not.",
            if daemon.up { 1.0 } else { 0.0 },
        ));
    }
    gauges
}

/// Writes the metrics file atomically, readable by the collector (0644).
pub fn write(path: &Path, summary: &Summary, last_success_unix_ms: Option<u64>) -> io::Result<()> {
    let text = render(summary, SystemTime::now(), last_success_unix_ms);
    fsio::write_atomic(path, text.as_bytes(), 0o644)
}

/// The last success (Unix ms) the metrics file at `path` reports for
/// `lease_dir`, read before it is replaced: the reported last success
/// never goes backwards (a run with no lease directory has no state to
/// keep its success in, and a later failing run must not report 0).
/// None when there is no such file or sample.
pub fn reported_last_success(path: &Path, lease_dir: &Path) -> Option<u64> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()
        .filter(|file| file.metadata().is_ok_and(|meta| meta.is_file()))?;
    let mut text = String::new();
    file.take(MAX_READ_BACK).read_to_string(&mut text).ok()?;
    last_success_in(&text, lease_dir)
}

/// More than any metrics file of ours: what is read back of the old one.
const MAX_READ_BACK: u64 = 1024 * 1024;

/// The last success (Unix ms) a metrics file's text reports for
/// `lease_dir`; None when it reports none (0) or has no such sample.
fn last_success_in(text: &str, lease_dir: &Path) -> Option<u64> {
    let prefix = format!(
        "{}{{{}}} ",
        "rch_sweep_last_success_timestamp_seconds",
        lease_dir_label(lease_dir)
    );
    let seconds: f64 = text
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))?
        .trim()
        .parse()
        .ok()?;
    (seconds.is_finite() && seconds > 0.0).then(|| (seconds * 1000.0).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_success_is_read_back_for_this_lease_directory_only() {
        let text = "# HELP rch_sweep_last_success_timestamp_seconds x\n\
                    rch_sweep_last_success_timestamp_seconds{lease_dir=\"/a/job-leases\"} 1791280003.512\n\
                    rch_sweep_last_success_timestamp_seconds{lease_dir=\"/b/job-leases\"} 1700000000\n\
                    rch_sweep_last_success_timestamp_seconds{lease_dir=\"/c/job-leases\"} 0\n";
        assert_eq!(
            last_success_in(text, Path::new("/a/job-leases")),
            Some(1_791_280_003_512)
        );
        assert_eq!(
            last_success_in(text, Path::new("/b/job-leases")),
            Some(1_700_000_000_000)
        );
        assert_eq!(last_success_in(text, Path::new("/c/job-leases")), None);
        assert_eq!(last_success_in(text, Path::new("/d/job-leases")), None);
        assert_eq!(last_success_in("garbage", Path::new("/a/job-leases")), None);
    }

    use crate::exit::ExitCode;
    use crate::judge::verdict::Candidate;
    use crate::state::backoff::Hold;
    use crate::sweep::report::{Held, LeaseLine, LineDetail};

    /// A candidate's line with `outcome`, its entry waiting on rch for
    /// `hold`.
    fn line(outcome: LeaseOutcome, hold: Option<Hold>) -> LeaseLine {
        LeaseLine::new(
            Candidate {
                wrapper_id: "rchw-a".into(),
                worker_id: "w".into(),
                build_id: 1,
                heartbeat_unix_ms: 0,
            },
            outcome,
            LineDetail {
                hold,
                ..LineDetail::default()
            },
        )
    }

    /// A real run over `/l/job-leases` with these lines and held leases.
    fn summary(leases: Vec<LeaseLine>, held: Option<Held>) -> Summary {
        Summary {
            dry_run: false,
            lease_dir: "/l/job-leases".into(),
            lease_dir_present: true,
            state_file: "/s".into(),
            now_unix_ms: 0,
            duration: std::time::Duration::ZERO,
            scan_duration: std::time::Duration::ZERO,
            scanned: leases.len(),
            skipped: [0; SkipReason::ALL.len()],
            leases,
            skipped_list: Vec::new(),
            exit_code: ExitCode::Success,
            errors: Vec::new(),
            daemon: None,
            rch: None,
            held,
        }
    }

    const LABEL: &str = "lease_dir=\"/l/job-leases\"";

    #[test]
    fn leases_waiting_on_rch_are_counted_apart_from_those_backing_off() {
        let held = Held {
            stuck: 2,
            waiting: 1,
            longest_ms: 0,
        };
        let leases = vec![
            line(LeaseOutcome::Stuck, Some(Hold::Stuck)),
            line(LeaseOutcome::BackingOff, Some(Hold::Stuck)),
            line(LeaseOutcome::BackingOff, Some(Hold::DaemonRecordWait)),
            line(LeaseOutcome::BackingOff, None),
        ];
        let text = render(&summary(leases, Some(held)), UNIX_EPOCH, None);
        for (name, extra, value) in [
            ("rch_sweep_leases", ",state=\"stuck\"", 2),
            ("rch_sweep_leases", ",state=\"waiting\"", 1),
            ("rch_sweep_recoveries", ",outcome=\"stuck\"", 1),
            ("rch_sweep_backing_off", "", 1),
        ] {
            let sample = format!("{name}{{{LABEL}{extra}}} {value}\n");
            assert!(text.contains(&sample), "{sample} in {text}");
        }
    }

    #[test]
    fn the_charged_leases_back_off_and_a_run_that_knows_no_leases_counts_none() {
        let leases = vec![
            line(LeaseOutcome::Failed, None),
            line(LeaseOutcome::Failed, None),
            line(LeaseOutcome::BackingOff, None),
        ];
        let held = Held {
            longest_ms: 25_200_500,
            ..Held::default()
        };
        let mut summary = summary(leases, Some(held));
        let text = render(&summary, UNIX_EPOCH, None);
        for (name, extra, value) in [
            ("rch_sweep_backing_off", "", "3"),
            ("rch_sweep_lease_held_seconds", "", "25200.5"),
            ("rch_sweep_leases", ",state=\"stuck\"", "0"),
        ] {
            let sample = format!("{name}{{{LABEL}{extra}}} {value}\n");
            assert!(text.contains(&sample), "{sample} in {text}");
        }
        summary.held = None;
        let text = render(&summary, UNIX_EPOCH, None);
        for name in ["rch_sweep_leases", "rch_sweep_lease_held_seconds"] {
            assert!(!text.contains(&format!("{name}{{")), "{name} in {text}");
        }
        assert!(text.contains("rch_sweep_exit_code"), "{text}");
    }

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

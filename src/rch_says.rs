//! rch's own words, read. `rch jobs recover` exits 1 for a lease that
//! really failed and for many answers that are no failure of the lease (a
//! lock another recovery holds, a daemon that forgot the build, a full
//! disk). Its exit code cannot tell them apart; the last lines of its
//! stderr can. This is the one table of those phrases: each row names
//! rch's words, the releases that print them with that meaning, and what
//! they mean (SPEC "rch's answers are read, not counted"). Matching is a
//! pure function over text whose escape sequences were already taken out
//! ([`crate::child::strip_escapes`]); what each meaning does to a lease is
//! [`crate::recover`]'s.
//!
//! The release is a [`Version`]: the `rch --version` the run asked
//! (`None` when it did not, or could not read it). Only one row depends on
//! it: rch 2.1.17–2.1.33 say "no exact terminal receipt" for a build their
//! daemon forgot (it never completes), while 2.1.34 says it only for a
//! reply that does not match, an ordinary failure.

use crate::release::Version;

/// What rch meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meaning {
    /// Another process (rchd's own recovery task, an operator) holds the
    /// lease's recovery lock.
    BusyLock,
    /// rch's own owner check could not prove the wrapper gone, though ours
    /// did: it refuses, and will recover the lease once it agrees.
    OwnerRefused,
    /// rch 2.1.34: its daemon has no record of the build, and rch accepts
    /// that only once the lease is 24 hours old.
    DaemonRecordWait,
    /// rch 2.1.17–2.1.33: its daemon has no record of the build, which
    /// those releases never complete: only an upgrade ends it.
    NoTerminalReceipt,
    /// The lease's `.recovery.lock` is open to group or others: rch will
    /// not use it.
    UnsafeLock,
    /// The file system had no room (ENOSPC) or the user no quota (EDQUOT)
    /// for rch's rewrite of the journal: the host's fault.
    NoSpace,
    /// rch reached its daemon too slowly at the final handoff: a fault of
    /// the daemon, like one that is down.
    DaemonTimedOut,
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// rch's words; any of them matches.
    pub phrases: &'static [&'static str],
    /// The first release that prints them with this meaning.
    pub first: Version,
    /// The last one; None: every later release too.
    pub last: Option<Version>,
    /// Whether the row applies when the release is not known. False only
    /// where the same words mean an ordinary failure in another release.
    pub unknown_release: bool,
    pub meaning: Meaning,
}

impl Row {
    /// Whether the row speaks for `release`.
    fn covers(&self, release: Option<Version>) -> bool {
        match release {
            None => self.unknown_release,
            Some(release) => release >= self.first && self.last.is_none_or(|last| release <= last),
        }
    }
}

/// rch's words for a recovery lock open to group or others.
pub const LOCK_OPEN_TO_OTHERS: &str = "unsafe recovery lock file";

/// rch's phrases, first match wins (rch-lease-format.md §8–§10).
pub const TABLE: &[Row] = &[
    Row {
        phrases: &[
            "journal is held by another handle",
            "cannot acquire exclusive job recovery",
        ],
        first: Version::new(2, 1, 17),
        last: None,
        unknown_release: true,
        meaning: Meaning::BusyLock,
    },
    Row {
        phrases: &[LOCK_OPEN_TO_OTHERS],
        first: Version::new(2, 1, 17),
        last: None,
        unknown_release: true,
        meaning: Meaning::UnsafeLock,
    },
    Row {
        phrases: &["original wrapper is still present or unverified"],
        first: Version::new(2, 1, 0),
        last: None,
        unknown_release: true,
        meaning: Meaning::OwnerRefused,
    },
    Row {
        phrases: &["acknowledgement waits until the lease is 24h old"],
        first: Version::new(2, 1, 34),
        last: None,
        unknown_release: true,
        meaning: Meaning::DaemonRecordWait,
    },
    Row {
        phrases: &["daemon has no exact terminal receipt"],
        first: Version::new(2, 1, 17),
        last: Some(Version::new(2, 1, 33)),
        // From 2.1.34 the same words are a reply that does not match: an
        // rch whose release is not known is taken for the newest, as the
        // completion check takes it.
        unknown_release: false,
        meaning: Meaning::NoTerminalReceipt,
    },
    Row {
        phrases: &["recovery daemon request timed out; completion remains pending"],
        first: Version::new(2, 1, 17),
        last: None,
        unknown_release: true,
        meaning: Meaning::DaemonTimedOut,
    },
    Row {
        phrases: &["No space left on device", "Disk quota exceeded"],
        first: Version::new(2, 1, 0),
        last: None,
        unknown_release: true,
        meaning: Meaning::NoSpace,
    },
];

/// How many of stderr's last non-empty lines are read: rch's error is its
/// last line (an `anyhow` chain may add a few `Caused by` lines under it),
/// and what came before (update-check warnings, progress) is not rch's
/// answer.
pub const LAST_LINES: usize = 6;

/// What rch said, and the line that said it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said {
    pub meaning: Meaning,
    pub line: String,
}

/// What rch (of `release`, when known) meant by `stderr` (escape sequences
/// already removed): the first row, in table order, whose phrase one of the
/// last [`LAST_LINES`] non-empty lines holds, if any.
pub fn read(stderr: &str, release: Option<Version>) -> Option<Said> {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let last = &lines[lines.len().saturating_sub(LAST_LINES)..];
    TABLE
        .iter()
        .filter(|row| row.covers(release))
        .find_map(|row| {
            last.iter()
                .rev()
                .find(|line| row.phrases.iter().any(|phrase| line.contains(phrase)))
                .map(|line| Said {
                    meaning: row.meaning,
                    line: (*line).to_owned(),
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEW: Option<Version> = Some(Version::new(2, 1, 34));
    const OLD: Option<Version> = Some(Version::new(2, 1, 30));

    /// rch 2.1.34's stderr opens with colour-coded update-check warnings;
    /// the answer is its last line.
    fn with_warnings(answer: &str) -> String {
        format!(
            "warning: update check failed: error sending request\nwarning: could not reach crates.io\nError: {answer}\n"
        )
    }

    /// Stderr the real rch printed, one sample a line: (what it is, the
    /// release, its stderr after escapes are taken out, what it means).
    /// A new recording is one more line here (`include_str!` of a file in
    /// tests/data/real-rch-<release>/).
    /// stderr the real rch printed, as scripts/real-rch-e2e.sh kept it
    /// (`--keep-journals`): one line a sample.
    const RECORDED: &[(&str, Version, &str, Option<Meaning>)] = &[
        (
            "busy lock, real rch 2.1.34 (a manual jobs recover held the lock)",
            Version::new(2, 1, 34),
            include_str!("../tests/data/real-rch-2.1.34/stderr-busy-lock.txt"),
            Some(Meaning::BusyLock),
        ),
        (
            "the 24 h wait, real rch 2.1.34 (rchd restarted without its history)",
            Version::new(2, 1, 34),
            include_str!("../tests/data/real-rch-2.1.34/stderr-24h-wait.txt"),
            Some(Meaning::DaemonRecordWait),
        ),
    ];

    #[test]
    fn recorded_stderr_of_the_real_rch_reads_as_it_meant() {
        for (what, release, stderr, meaning) in RECORDED {
            let text = crate::child::strip_escapes(stderr);
            assert_eq!(
                read(&text, Some(*release)).map(|said| said.meaning),
                *meaning,
                "{what}"
            );
        }
    }

    #[test]
    fn every_row_is_read_from_the_last_lines() {
        let cases = [
            (
                "cannot acquire exclusive job recovery: journal is held by another handle; retry the same wrapper",
                Meaning::BusyLock,
            ),
            (
                "refusing to recover rchw-x: original wrapper is still present or unverified",
                Meaning::OwnerRefused,
            ),
            (
                "daemon has no record of recovered build 42; acknowledgement waits until the lease is 24h old",
                Meaning::DaemonRecordWait,
            ),
            (
                &*format!("{LOCK_OPEN_TO_OTHERS} /l/rchw-x.recovery.lock: mode 0644"),
                Meaning::UnsafeLock,
            ),
            (
                "failed to persist recovery journal: No space left on device (os error 28)",
                Meaning::NoSpace,
            ),
            (
                "failed to persist recovery journal: Disk quota exceeded (os error 122)",
                Meaning::NoSpace,
            ),
            (
                "recovery daemon request timed out; completion remains pending",
                Meaning::DaemonTimedOut,
            ),
        ];
        for (answer, meaning) in cases {
            let said = read(&with_warnings(answer), NEW).expect(answer);
            assert_eq!(said.meaning, meaning, "{answer}");
            assert_eq!(said.line, format!("Error: {answer}"));
            // Also from an rch whose release is not known.
            assert_eq!(
                read(&with_warnings(answer), None).map(|s| s.meaning),
                Some(meaning)
            );
        }
        assert_eq!(read(&with_warnings("ssh: connection refused"), NEW), None);
        assert_eq!(read("", NEW), None);
    }

    #[test]
    fn no_exact_terminal_receipt_is_stuck_only_before_2_1_34() {
        let stderr = with_warnings(
            "daemon has no exact terminal receipt for recovered wrapper/build/worker",
        );
        assert_eq!(
            read(&stderr, OLD).map(|s| s.meaning),
            Some(Meaning::NoTerminalReceipt)
        );
        assert_eq!(
            read(&stderr, Some(Version::new(2, 1, 17))).map(|s| s.meaning),
            Some(Meaning::NoTerminalReceipt)
        );
        assert_eq!(
            read(&stderr, Some(Version::new(2, 1, 33))).map(|s| s.meaning),
            Some(Meaning::NoTerminalReceipt)
        );
        // From 2.1.34 an ordinary failure; so for a release not known, and
        // before 2.1.17 (no daemon handoff at all).
        assert_eq!(read(&stderr, NEW), None);
        assert_eq!(read(&stderr, None), None);
        assert_eq!(read(&stderr, Some(Version::new(2, 1, 16))), None);
    }

    #[test]
    fn only_the_last_lines_are_rchs_answer() {
        let mut stderr = String::from("note: journal is held by another handle earlier\n");
        for n in 0..LAST_LINES {
            stderr.push_str(&format!("progress {n}\n"));
        }
        assert_eq!(read(&stderr, NEW), None);
        // Blank lines do not count.
        let stderr = format!(
            "Error: No space left on device (os error 28)\n{}",
            "\n \n".repeat(20)
        );
        assert_eq!(
            read(&stderr, NEW).map(|s| s.meaning),
            Some(Meaning::NoSpace)
        );
    }

    #[test]
    fn releases_are_read_from_the_version_line() {
        assert_eq!(
            crate::release::parse("rch 2.1.16"),
            Some(Version::new(2, 1, 16))
        );
        assert_eq!(
            crate::release::parse("rch 2.1.34-fake"),
            Some(Version::new(2, 1, 34))
        );
        assert_eq!(
            crate::release::parse("rch 2.1.30 (abc123 2026-11-01)"),
            Some(Version::new(2, 1, 30))
        );
        assert_eq!(crate::release::parse("rch"), None);
        assert_eq!(crate::release::parse("rch x.y.z"), None);
        assert!(Version::new(2, 1, 9) < Version::new(2, 1, 17));
        assert_eq!(Version::new(2, 1, 34).to_string(), "2.1.34");
    }
}

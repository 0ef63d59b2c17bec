//! Which rch release runs, and what follows from it: what its finished
//! recovery leaves in the journal, and what it is known not to do.
//!
//! Users run every published rch from 2.1.0 to 2.1.34, and those releases
//! differ where a sweep depends on them (rch-lease-format.md §10): 2.1.0–
//! 2.1.16 finish a recovery with no daemon handoff, so demanding the
//! daemon's mark would call every success a failure; they also take no
//! per-lease recovery lock, while rchd 2.1.8–2.1.16 recover leases on their
//! own; 2.1.17–2.1.33 never complete a build their daemon forgot. A real
//! run learns the release from the first line `rch --version` prints; this
//! table (pure, no I/O) turns that line into the completion the judge
//! checks and the limits doctor warns about.

use crate::judge::Completion;
use std::fmt;
use std::path::PathBuf;

/// A release number, `major.minor.patch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
}

impl Version {
    pub const fn new(major: u64, minor: u64, patch: u64) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The first release that hands a recovery to its daemon and writes its
/// mark (`recovery.daemon_exit_code`), and takes the per-lease lock.
pub const FIRST_DAEMON_MARKED: Version = Version::new(2, 1, 17);

/// The first release that completes a build its daemon forgot (after 24 h,
/// `daemon_record_absent`): the upgrade doctor names.
pub const FORGOTTEN_BUILD_COMPLETES: Version = Version::new(2, 1, 34);

/// The lowest release of the 2.1 line, which brought `jobs recover`.
const FIRST_WITH_LEASES: Version = Version::new(2, 1, 0);

/// The release number in the first line of `rch --version` (`rch 2.1.16`,
/// with anything after the number ignored: a build hash, a date, a
/// pre-release tag). None for anything else: a line that does not begin
/// with the program's name `rch`, or whose next word does not begin with
/// three dot-separated decimal numbers.
pub fn parse(first_line: &str) -> Option<Version> {
    let mut words = first_line.split_ascii_whitespace();
    if words.next()? != "rch" {
        return None;
    }
    let number = words.next()?;
    let number = number.strip_prefix('v').unwrap_or(number);
    let end = number
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(number.len());
    let (digits, rest) = number.split_at(end);
    if !(rest.is_empty() || rest.starts_with(['-', '+'])) {
        return None;
    }
    let mut parts = digits.split('.');
    let mut part = || -> Option<u64> {
        let text = parts.next()?;
        (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse().ok())
            .flatten()
    };
    let version = Version::new(part()?, part()?, part()?);
    parts.next().is_none().then_some(version)
}

/// What a finished recovery of that release leaves: older than 2.1.17 no
/// daemon mark; 2.1.17 and later, or a release that could not be read, the
/// mark (the stricter check: an unknown rch is never taken at its word).
pub fn completion(version: Option<Version>) -> Completion {
    match version {
        Some(version) if version < FIRST_DAEMON_MARKED => Completion::DeliveryOnly,
        _ => Completion::DaemonMarked,
    }
}

/// What a release is known not to do that a sweep's operator should know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// 2.1.0–2.1.16: no per-lease recovery lock, while rchd 2.1.8–2.1.16
    /// recover leases themselves every 5 minutes: a sweep and the daemon
    /// can recover the same lease at once, and rch-sweep cannot see it.
    NoRecoveryLock,
    /// 2.1.17–2.1.33: a build its daemon no longer knows never completes
    /// (`daemon has no exact terminal receipt`, forever).
    ForgottenBuildNeverCompletes,
}

impl Limit {
    /// doctor's finding after the version line.
    pub fn finding(self) -> &'static str {
        match self {
            Limit::NoRecoveryLock => {
                "no per-lease recovery lock before 2.1.17: rchd 2.1.8–2.1.16 recover leases on their own every 5 minutes, so a sweep and the daemon can recover the same lease at once, and rch-sweep cannot see it"
            }
            Limit::ForgottenBuildNeverCompletes => {
                "a build its daemon no longer knows never completes before 2.1.34 (\"daemon has no exact terminal receipt\", run after run); 2.1.34 completes it after 24 h"
            }
        }
    }

    /// The fix: the upgrade, rch and rchd alike.
    pub fn fix(self) -> String {
        format!(
            "upgrade rch and rchd to {FORGOTTEN_BUILD_COMPLETES} (cargo +nightly install --locked rch --version {FORGOTTEN_BUILD_COMPLETES}, and the same for rchd), then restart rchd"
        )
    }
}

/// The limit of a release, if it has one doctor warns about.
pub fn limit(version: Version) -> Option<Limit> {
    if (FIRST_WITH_LEASES..FIRST_DAEMON_MARKED).contains(&version) {
        Some(Limit::NoRecoveryLock)
    } else if (FIRST_DAEMON_MARKED..FORGOTTEN_BUILD_COMPLETES).contains(&version) {
        Some(Limit::ForgottenBuildNeverCompletes)
    } else {
        None
    }
}

/// What a run learnt by asking `rch --version` (the JSON summary's `rch`
/// object).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asked {
    /// The `rch` that was asked, and runs every recovery.
    pub path: PathBuf,
    /// The first line it printed, as printed (trimmed; empty when it
    /// printed nothing or could not answer).
    pub line: String,
}

impl Asked {
    pub fn version(&self) -> Option<Version> {
        parse(&self.line)
    }

    pub fn completion(&self) -> Completion {
        completion(self.version())
    }

    /// The human summary's line.
    pub fn summary_line(&self) -> String {
        let line = if self.line.is_empty() {
            "no version line".to_owned()
        } else {
            self.line.clone()
        };
        let completion = match self.completion() {
            Completion::DeliveryOnly => "a completion without the daemon's mark counts",
            Completion::DaemonMarked => "a completion needs the daemon's mark",
        };
        format!("rch: {} says {line:?}: {completion}", self.path.display())
    }
}

/// The longest version line kept: rch's is a dozen characters, and the
/// line goes into every summary.
const LINE_CHARS: usize = 200;

/// The first line of what `rch --version` printed, trimmed (at most
/// [`LINE_CHARS`] characters); empty for none.
pub fn first_line(stdout: &[u8]) -> String {
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("")
        .trim()
        .chars()
        .take(LINE_CHARS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_over_rch_version_lines() {
        for (line, version, expected, limit) in [
            (
                "rch 2.1.16",
                Some(Version::new(2, 1, 16)),
                Completion::DeliveryOnly,
                Some(Limit::NoRecoveryLock),
            ),
            (
                "rch 2.1.17",
                Some(Version::new(2, 1, 17)),
                Completion::DaemonMarked,
                Some(Limit::ForgottenBuildNeverCompletes),
            ),
            (
                "rch 2.1.33",
                Some(Version::new(2, 1, 33)),
                Completion::DaemonMarked,
                Some(Limit::ForgottenBuildNeverCompletes),
            ),
            (
                "rch 2.1.34",
                Some(Version::new(2, 1, 34)),
                Completion::DaemonMarked,
                None,
            ),
            (
                "rch 2.1.0",
                Some(Version::new(2, 1, 0)),
                Completion::DeliveryOnly,
                Some(Limit::NoRecoveryLock),
            ),
            (
                "rch 1.0.58",
                Some(Version::new(1, 0, 58)),
                Completion::DeliveryOnly,
                None,
            ),
            (
                "rch 2.1.16 (3fa2c1d 2026-10-02)",
                Some(Version::new(2, 1, 16)),
                Completion::DeliveryOnly,
                Some(Limit::NoRecoveryLock),
            ),
            (
                "  rch 2.1.24  ",
                Some(Version::new(2, 1, 24)),
                Completion::DaemonMarked,
                Some(Limit::ForgottenBuildNeverCompletes),
            ),
            (
                "rch 2.1.16-rc.1",
                Some(Version::new(2, 1, 16)),
                Completion::DeliveryOnly,
                Some(Limit::NoRecoveryLock),
            ),
            (
                "rch 2.2.0",
                Some(Version::new(2, 2, 0)),
                Completion::DaemonMarked,
                None,
            ),
        ] {
            let parsed = parse(line);
            assert_eq!(parsed, version, "{line:?}");
            assert_eq!(completion(parsed), expected, "{line:?}");
            assert_eq!(parsed.and_then(super::limit), limit, "{line:?}");
        }
    }

    #[test]
    fn a_line_that_cannot_be_read_keeps_the_mark_required() {
        for line in [
            "",
            "garbage",
            "rch",
            "rch version unknown",
            "rchd 2.1.16",
            "rch-sweep 2.1.16",
            "rch 2.1",
            "rch 2.1.16.4",
            "rch 2..16",
            "rch 2.1.x",
            "rch 2.1.16abc",
            "rch +2.1.16",
            "error: unexpected argument '--version'",
            "rch 99999999999999999999.1.1",
        ] {
            assert_eq!(parse(line), None, "{line:?}");
            assert_eq!(
                completion(parse(line)),
                Completion::DaemonMarked,
                "{line:?}"
            );
        }
    }

    #[test]
    fn the_first_line_is_the_first_that_says_anything() {
        assert_eq!(first_line(b"rch 2.1.16\n"), "rch 2.1.16");
        assert_eq!(first_line(b"\n  rch 2.1.34  \nmore\n"), "rch 2.1.34");
        assert_eq!(first_line(b""), "");
        assert_eq!(first_line(b"rch 2.1.\xff16\n"), "rch 2.1.\u{fffd}16");
        assert_eq!(first_line("x".repeat(70_000).as_bytes()).len(), 200);
    }

    #[test]
    fn each_limit_names_the_upgrade_to_rch_and_rchd() {
        for limit in [Limit::NoRecoveryLock, Limit::ForgottenBuildNeverCompletes] {
            let fix = limit.fix();
            assert!(fix.contains("rch --version 2.1.34"), "{fix}");
            assert!(fix.contains("rchd"), "{fix}");
        }
        assert!(Limit::NoRecoveryLock.finding().contains("recovery lock"));
        assert!(
            Limit::ForgottenBuildNeverCompletes
                .finding()
                .contains("never completes")
        );
    }
}

//! Which rch release runs, and what follows from it: what its finished
//! recovery leaves in the journal, and what it is known not to do.
//!
//! Users run every published rch from 2.1.0 to 2.1.34, and those releases
//! differ where a sweep depends on them (rch-lease-format.md §10): 2.1.0–
//! 2.1.16 finish a recovery with no daemon handoff, so demanding the
//! daemon's mark would call every success a failure; they also take no
//! per-lease recovery lock, while rchd 2.1.8–2.1.16 recover leases on their
//! own; 2.1.17–2.1.33 never complete a build their daemon forgot.
//!
//! rch's own release is the `"version"` of `rch --capabilities` (a JSON
//! object every 2.1.x prints before it reads any configuration): `rch
//! --version` prints rch-common's version, which is rch's only where the
//! two crates were published together and installed `--locked` (rch 2.1.12
//! says 2.1.8; an rch 2.1.16 installed without `--locked` says 2.1.34,
//! §10.x). `--version`'s first line is kept for the summary and doctor,
//! and read for the release only when `--capabilities` cannot be. These
//! tables (pure, no I/O) turn those answers into the completion the judge
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
    number_of(number.strip_prefix('v').unwrap_or(number))
}

/// A release number as Cargo writes a package's version (`2.1.16`, or
/// `2.1.16-rc.1` / `2.1.16+build`, whose tag is ignored): the form of
/// `--capabilities`' `"version"` and of rchd's `/health` `version`. None
/// for anything else.
pub fn number_of(text: &str) -> Option<Version> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (digits, rest) = text.split_at(end);
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

/// rch's own release from what `rch --capabilities` printed on stdout: the
/// `"version"` of the one JSON object it prints (`build_capabilities_output`
/// in every 2.1.x: `"contract_version": "rch.capabilities.v1"`, `"version":
/// env!("CARGO_PKG_VERSION")` of the rch crate, and much else, ignored).
/// The error says what was printed instead, never quoting it.
pub fn from_capabilities(stdout: &[u8]) -> Result<Version, String> {
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return Err("printed nothing on stdout".to_owned());
    }
    let document: serde_json::Value = serde_json::from_slice(stdout)
        .map_err(|_| "printed no JSON document on stdout".to_owned())?;
    match document.get("version") {
        Some(serde_json::Value::String(version)) => number_of(version)
            .ok_or_else(|| "printed a \"version\" that is no release number".to_owned()),
        Some(_) => Err("printed a \"version\" that is not a string".to_owned()),
        None if document.is_object() => Err("printed JSON with no \"version\"".to_owned()),
        None => Err("printed JSON that is not an object".to_owned()),
    }
}

/// Where the release a run decides by was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `rch --capabilities`' `"version"`: rch's own.
    Capabilities,
    /// `rch --version`'s first line, when `--capabilities` could not be
    /// read: rch-common's version, which may not be rch's.
    VersionLine,
}

/// The release a run decides by: `--capabilities`' when it could be read,
/// else the number in `--version`'s first line, else none (the daemon
/// mark stays required).
pub fn decide(capabilities: Option<Version>, version_line: &str) -> Option<(Version, Source)> {
    match capabilities {
        Some(release) => Some((release, Source::Capabilities)),
        None => parse(version_line).map(|release| (release, Source::VersionLine)),
    }
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

/// The first rchd that recovers dead leases on its own (every 5 minutes,
/// up to 4 at once).
const FIRST_RCHD_RECOVERING: Version = Version::new(2, 1, 8);

/// Whether an rchd of `version` (its `/health` reply's) recovers dead
/// leases itself with no recovery lock and no read-back (2.1.8–2.1.16,
/// rch-lease-format.md §10): it and a sweep can recover the same lease at
/// once, whatever rch's own release is.
pub fn rchd_recovers_unlocked(version: Version) -> bool {
    (FIRST_RCHD_RECOVERING..FIRST_DAEMON_MARKED).contains(&version)
}

/// doctor's words for such an rchd, and the fix.
pub fn rchd_unlocked_finding(version: Version) -> (String, String) {
    (
        format!(
            "rchd {version} recovers dead leases itself every 5 minutes, with no recovery lock and no read-back (rchd 2.1.8–2.1.16): it and a sweep can recover the same lease at once, and rch-sweep cannot see it"
        ),
        format!(
            "upgrade rchd to {FORGOTTEN_BUILD_COMPLETES} (cargo +nightly install --locked rchd --version {FORGOTTEN_BUILD_COMPLETES}, and rch likewise), then restart it"
        ),
    )
}

/// What a run learnt by asking `rch --version` and `rch --capabilities`
/// (the JSON summary's `rch` object).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asked {
    /// The `rch` that was asked, and runs every recovery.
    pub path: PathBuf,
    /// The first line `--version` printed, as printed (trimmed; empty when
    /// it printed nothing or could not answer).
    pub line: String,
    /// rch's own release, from `--capabilities`, or why it could not be
    /// read (never what rch printed: a hung answer is not quoted).
    pub capabilities: Result<Version, String>,
}

impl Asked {
    /// The release the run decides by, and where it was read ([`decide`]).
    pub fn decided(&self) -> Option<(Version, Source)> {
        decide(self.capabilities.as_ref().ok().copied(), &self.line)
    }

    /// The release the run decides by.
    pub fn release(&self) -> Option<Version> {
        self.decided().map(|(release, _)| release)
    }

    pub fn completion(&self) -> Completion {
        completion(self.release())
    }

    /// The human summary's line: what `--version` said, the release when
    /// `--capabilities` says another (or why it said none), and the rule.
    pub fn summary_line(&self) -> String {
        let line = if self.line.is_empty() {
            "no version line".to_owned()
        } else {
            self.line.clone()
        };
        let release = match (&self.capabilities, self.decided()) {
            (Ok(release), _) if parse(&self.line) == Some(*release) => String::new(),
            (Ok(release), _) => format!(", release {release} by --capabilities"),
            (Err(why), Some((release, _))) => {
                format!(" (--capabilities {why}: release {release} read from --version)")
            }
            (Err(why), None) => format!(" (--capabilities {why})"),
        };
        let completion = match self.completion() {
            Completion::DeliveryOnly => "a completion without the daemon's mark counts",
            Completion::DaemonMarked => "a completion needs the daemon's mark",
        };
        format!(
            "rch: {} says {line:?}{release}: {completion}",
            self.path.display()
        )
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
    /// The head of what `build_capabilities_output` prints in every 2.1.x
    /// (pretty JSON; the rest of its keys cut here).
    fn capabilities(version: &str) -> String {
        format!(
            "{{\n  \"contract_version\": \"rch.capabilities.v1\",\n  \"schema_version\": \"1.1\",\n  \"version\": \"{version}\",\n  \"runtimes\": [],\n  \"commands\": []\n}}\n"
        )
    }

    #[test]
    fn the_release_is_the_version_capabilities_prints() {
        assert_eq!(
            from_capabilities(capabilities("2.1.16").as_bytes()),
            Ok(Version::new(2, 1, 16))
        );
        assert_eq!(
            from_capabilities(capabilities("2.1.34").as_bytes()),
            Ok(Version::new(2, 1, 34))
        );
        assert_eq!(
            from_capabilities(capabilities("2.1.16-rc.1").as_bytes()),
            Ok(Version::new(2, 1, 16))
        );
        for (stdout, why) in [
            ("", "printed nothing on stdout"),
            (" \n", "printed nothing on stdout"),
            ("rch 2.1.16\n", "printed no JSON document on stdout"),
            (
                "{\"version\": \"2.1.16\"",
                "printed no JSON document on stdout",
            ),
            ("[\"2.1.16\"]", "printed JSON that is not an object"),
            (
                "{\"contract_version\": \"rch.capabilities.v1\"}",
                "printed JSON with no \"version\"",
            ),
            (
                "{\"version\": 2.1}",
                "printed a \"version\" that is not a string",
            ),
            (
                "{\"version\": \"rch 2.1.16\"}",
                "printed a \"version\" that is no release number",
            ),
            (
                "{\"version\": \"2.1\"}",
                "printed a \"version\" that is no release number",
            ),
        ] {
            assert_eq!(
                from_capabilities(stdout.as_bytes()),
                Err(why.to_owned()),
                "{stdout:?}"
            );
        }
    }

    #[test]
    fn the_real_capabilities_name_their_release() {
        // What the real rch printed for `rch --capabilities`
        // (tests/data/real-rch-<release>/README.md says how it was kept).
        for (stdout, release) in [
            (
                &include_bytes!("../../tests/data/real-rch-2.1.34/stdout-capabilities.txt")[..],
                Version::new(2, 1, 34),
            ),
            (
                &include_bytes!("../../tests/data/real-rch-2.1.16/stdout-capabilities.txt")[..],
                Version::new(2, 1, 16),
            ),
        ] {
            // All of it is kept by a probe, which reads no more.
            assert!(stdout.len() < crate::rch::child::ANSWER_BYTES);
            assert_eq!(from_capabilities(stdout), Ok(release));
        }
    }

    #[test]
    fn capabilities_decides_and_version_is_read_only_without_it() {
        let v16 = Version::new(2, 1, 16);
        let v34 = Version::new(2, 1, 34);
        // An rch 2.1.16 built without --locked: --version says rch-common's 2.1.34.
        assert_eq!(
            decide(Some(v16), "rch 2.1.34"),
            Some((v16, Source::Capabilities))
        );
        assert_eq!(
            completion(decide(Some(v16), "rch 2.1.34").map(|d| d.0)),
            Completion::DeliveryOnly
        );
        assert_eq!(decide(Some(v34), ""), Some((v34, Source::Capabilities)));
        assert_eq!(decide(None, "rch 2.1.16"), Some((v16, Source::VersionLine)));
        assert_eq!(decide(None, "rch version unknown"), None);
        assert_eq!(
            completion(decide(None, "").map(|d| d.0)),
            Completion::DaemonMarked
        );
    }

    fn asked(line: &str, capabilities: Result<Version, String>) -> Asked {
        Asked {
            path: "/usr/bin/rch".into(),
            line: line.to_owned(),
            capabilities,
        }
    }

    #[test]
    fn the_summary_line_says_the_release_where_version_does_not() {
        let v16 = Version::new(2, 1, 16);
        assert_eq!(
            asked("rch 2.1.16", Ok(v16)).summary_line(),
            "rch: /usr/bin/rch says \"rch 2.1.16\": a completion without the daemon's mark counts"
        );
        assert_eq!(
            asked("rch 2.1.34", Ok(v16)).summary_line(),
            "rch: /usr/bin/rch says \"rch 2.1.34\", release 2.1.16 by --capabilities: a completion without the daemon's mark counts"
        );
        let hung = Err("did not answer in 10 s".to_owned());
        assert_eq!(
            asked("rch 2.1.16", hung.clone()).summary_line(),
            "rch: /usr/bin/rch says \"rch 2.1.16\" (--capabilities did not answer in 10 s: release 2.1.16 read from --version): a completion without the daemon's mark counts"
        );
        assert_eq!(
            asked("", hung).summary_line(),
            "rch: /usr/bin/rch says \"no version line\" (--capabilities did not answer in 10 s): a completion needs the daemon's mark"
        );
    }

    #[test]
    fn rchd_2_1_8_to_2_1_16_recover_unlocked() {
        for (version, unlocked) in [
            ("2.1.7", false),
            ("2.1.8", true),
            ("2.1.12", true),
            ("2.1.16", true),
            ("2.1.17", false),
            ("2.1.34", false),
        ] {
            let version = number_of(version).expect("a number");
            assert_eq!(rchd_recovers_unlocked(version), unlocked, "{version}");
        }
        let (finding, fix) = rchd_unlocked_finding(Version::new(2, 1, 12));
        assert!(
            finding.starts_with("rchd 2.1.12 recovers dead leases itself"),
            "{finding}"
        );
        assert!(fix.contains("rchd --version 2.1.34"), "{fix}");
    }
}

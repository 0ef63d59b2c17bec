//! doctor's `rch` check, the part about which release runs: what `rch
//! --capabilities` says of rch's own release beside `rch --version`'s
//! line, and what doctor warns of when the two disagree or neither can be
//! read (SPEC "What changed since the sixth wave": rch's release is rch's
//! own).
//!
//! `rch --version` prints rch-common's version (rch-lease-format.md
//! §10.x): a `--locked` rch 2.1.12 says 2.1.8, and an rch 2.1.16 installed
//! without `--locked` says 2.1.34, whose completion rule would charge every
//! real success. A run decides by `--capabilities`; doctor shows both and
//! says where they part.

use crate::rch::child::{self, Capture, ChildSpec};
use crate::rch::release::{self, Version};
use crate::{rch::daemon, rch::rch_env};
use std::path::Path;
use std::time::Duration;

/// rch's own release from `<rch> --capabilities`, asked as doctor asks
/// `--version` (rch's environment additions, a process group of its own,
/// killed past `deadline`), or why it cannot be read. What it printed is
/// never quoted: a hung answer is "did not answer in N s".
pub fn capabilities(rch: &Path, deadline: Duration) -> Result<Version, String> {
    let args = ["--capabilities".into()];
    let spec = ChildSpec {
        program: rch,
        args: &args,
        env: &rch_env::for_rch(Vec::new()),
        remove: rch_env::REMOVED,
    };
    let report = child::run_capturing(&spec, Capture::Stdout, deadline, &|| false)
        .map_err(|error| format!("could not be started: {}", error.source))?;
    daemon::capabilities_of(&report).unwrap_or_else(|| Err("was interrupted".to_owned()))
}

/// What the two answers add up to: the release a run decides by, what
/// the finding shows beside `--version`'s line, and the warnings with
/// their fixes.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Release {
    pub release: Option<Version>,
    /// `; release 2.1.16 by --capabilities` when `--version`'s line does not
    /// already say it; empty otherwise.
    pub shown: String,
    pub warnings: Vec<String>,
    pub fixes: Vec<String>,
}

/// [`Release`] from `--version`'s first line (`line`, empty when it gave
/// none) and `--capabilities`' answer: it warns when they name different
/// releases, when only `--version` can be read (its number may not be
/// rch's), and when neither can (the completion rule is unknown: a run
/// requires the daemon's mark). Pure.
pub fn release(line: &str, capabilities: &Result<Version, String>) -> Release {
    let said = release::parse(line);
    let decided = release::decide(capabilities.as_ref().ok().copied(), line);
    let mut out = Release {
        release: decided.map(|(release, _)| release),
        ..Release::default()
    };
    match (capabilities, said) {
        (Ok(own), Some(said)) if *own != said => {
            out.shown = format!("; release {own} by --capabilities");
            let (why, fix) = if said > *own {
                (
                    "rch was installed without --locked, so it took a newer rch-common",
                    format!(
                        "nothing for rch-sweep (a run decides by --capabilities); for an `rch --version` that tells the truth, reinstall it with cargo +nightly install --locked rch --version {own}"
                    ),
                )
            } else {
                (
                    "rch pins an older rch-common (rch 2.1.2 pins 2.1.0; 2.1.9–2.1.13 and 2.1.15 pin 2.1.8)",
                    "nothing for rch-sweep: a run decides by --capabilities, and only `rch --version` is off".to_owned(),
                )
            };
            out.warnings.push(format!(
                "`rch --version` says {said} but `rch --capabilities` says {own}: --version prints rch-common's version, and {why}; a run decides by {own}"
            ));
            out.fixes.push(fix);
        }
        (Ok(own), None) => out.shown = format!("; release {own} by --capabilities"),
        (Ok(_), Some(_)) => {}
        (Err(why), Some(said)) => {
            out.warnings.push(format!(
                "`rch --capabilities` {why}: rch's own release is not known, so a run reads it from `--version` ({said}), which prints rch-common's version and may not be rch's"
            ));
            out.fixes.push(
                "check `rch --capabilities` (every rch 2.1 prints one JSON object with its \"version\") for this user"
                    .to_owned(),
            );
        }
        (Err(why), None) => {
            out.warnings.push(format!(
                "neither `rch --version` nor `rch --capabilities` ({why}) says which release runs: the completion rule is unknown, so a run requires the daemon's mark on every completion (rch 2.1.0–2.1.16 write none, and each of their recoveries would be charged)"
            ));
            out.fixes.push(
                "point --rch / RCH_SWEEP_RCH at an rch 2.1 that answers `--capabilities`, or install one (cargo +nightly install --locked rch --version 2.1.34)"
                    .to_owned(),
            );
        }
    }
    // What the release that runs is known not to do (rch-lease-format.md
    // §10): a warning naming the upgrade.
    if let Some(limit) = out.release.and_then(release::limit) {
        out.warnings.push(limit.finding().to_owned());
        out.fixes.push(limit.fix());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const V16: Version = Version::new(2, 1, 16);
    const V34: Version = Version::new(2, 1, 34);

    #[test]
    fn agreeing_answers_add_nothing_but_the_releases_limit() {
        let current = release("rch 2.1.34", &Ok(V34));
        assert_eq!(
            current,
            Release {
                release: Some(V34),
                ..Release::default()
            }
        );
        let old = release("rch 2.1.16", &Ok(V16));
        assert_eq!(old.release, Some(V16));
        assert_eq!(old.shown, "");
        assert_eq!(old.warnings, [release::Limit::NoRecoveryLock.finding()]);
    }

    #[test]
    fn an_rch_installed_without_locked_is_decided_by_capabilities() {
        let unlocked = release("rch 2.1.34", &Ok(V16));
        assert_eq!(unlocked.release, Some(V16));
        assert_eq!(unlocked.shown, "; release 2.1.16 by --capabilities");
        assert!(
            unlocked.warnings[0].starts_with(
                "`rch --version` says 2.1.34 but `rch --capabilities` says 2.1.16: --version prints rch-common's version, and rch was installed without --locked"
            ),
            "{unlocked:?}"
        );
        assert!(unlocked.fixes[0].contains("--locked rch --version 2.1.16"));
        // ... and the limit is 2.1.16's, not 2.1.34's.
        assert_eq!(
            unlocked.warnings[1],
            release::Limit::NoRecoveryLock.finding()
        );

        let pinned = release("rch 2.1.8", &Ok(Version::new(2, 1, 12)));
        assert!(
            pinned.warnings[0].contains("rch pins an older rch-common"),
            "{pinned:?}"
        );
    }

    #[test]
    fn only_version_is_read_when_capabilities_cannot_be() {
        let hung = Err("did not answer in 10 s".to_owned());
        let fallback = release("rch 2.1.16", &hung);
        assert_eq!(fallback.release, Some(V16));
        assert!(
            fallback.warnings[0].starts_with(
                "`rch --capabilities` did not answer in 10 s: rch's own release is not known"
            ),
            "{fallback:?}"
        );
        let neither = release("", &hung);
        assert_eq!(neither.release, None);
        assert_eq!(neither.warnings.len(), 1, "{neither:?}");
        assert!(
            neither.warnings[0].contains("the completion rule is unknown"),
            "{neither:?}"
        );
        assert_eq!(neither.fixes.len(), 1);
    }
}

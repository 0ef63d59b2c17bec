//! The evidence behind a verdict: for each check of SPEC's table that a
//! journal reached, whether it passed and the facts it rested on.
//!
//! The facts are plain data (numbers, flags, the owner's [`Observation`]),
//! gathered by the reader and the judge while they decide anyway; their
//! words live in `evidence_text.rs` and are made only when someone asks
//! for them (`explain`, a `--verbose` row), so a scan of 100,000 journals
//! formats nothing it does not print.

use crate::judge::observation::Observation;
use crate::judge::verdict::{Candidate, SkipReason};
use crate::stat::{FileKind, FileStat};

/// A journal's verdict and every check it went through, in SPEC's table
/// order, ending at the first that failed.
#[derive(Debug)]
pub struct Judgement {
    pub verdict: Result<Candidate, SkipReason>,
    pub checks: Vec<Check>,
}

impl Judgement {
    /// The check that decided a skip (the last one), if the journal was
    /// skipped.
    pub fn deciding(&self) -> Option<&Check> {
        self.checks.last().filter(|check| !check.passed)
    }

    /// The host shortage that cut this judgement short, if one did: the
    /// journal, `/proc/<pid>/stat` or the boot id could not be opened or
    /// read for want of descriptors or memory. Such a skip is no verdict
    /// on the lease (its reason stays SPEC's, for the counts).
    pub fn shortage(&self) -> Option<&str> {
        match &self.deciding()?.evidence {
            Evidence::Shortage(error) => Some(error),
            Evidence::Judgeable(observation) | Evidence::Process(observation) => {
                observation.shortage.as_deref()
            }
            _ => None,
        }
    }
}

/// One row of SPEC's table as judged for one journal. `check` names the
/// reason the journal would be skipped with if the check failed.
#[derive(Debug)]
pub struct Check {
    pub check: SkipReason,
    pub passed: bool,
    pub evidence: Evidence,
}

impl Check {
    pub fn pass(check: SkipReason, evidence: Evidence) -> Check {
        Check {
            check,
            passed: true,
            evidence,
        }
    }

    pub fn fail(check: SkipReason, evidence: Evidence) -> Check {
        Check {
            check,
            passed: false,
            evidence,
        }
    }
}

/// What a journal's recovery recipe is, when it owns nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recipe {
    Missing,
    NotObject,
    /// `retired: true`.
    Retired,
    /// Not retired, but no source roots, pair or retire root.
    OwnsNothing,
}

/// The facts one check rested on; [`fmt::Display`] makes the short text
/// an operator reads.
#[derive(Debug)]
pub enum Evidence {
    /// `not_regular`, passed: the opened descriptor is a regular file.
    Regular(FileStat),
    /// `not_regular` from the listing alone (the file was not opened).
    Listed(FileKind),
    /// `not_regular`, failed when opening: what the entry is.
    NotRegular(FileKind),
    /// `bad_name`: whether the name is `rchw-<uuid>.json`, canonical.
    Name { canonical: bool },
    /// `foreign_owner`: the file's owner (None: could not be read).
    Owner { uid: Option<u32>, euid: u32 },
    /// `unreadable`, passed: the journal's size (what `fstat` said, or what
    /// was read when that is more) and the limit.
    Size { size: u64, limit: u64 },
    /// `unreadable`: over the size limit when opened (not read).
    TooLarge { size: u64, limit: u64 },
    /// `unreadable`: grew past the size limit while it was read (`seen`:
    /// the most bytes it was seen to hold).
    GrewTooLarge { seen: u64, limit: u64 },
    /// `unreadable`: an I/O error.
    ReadError(String),
    /// `unreadable`: a host shortage ([`crate::shortage`]) cut the open or
    /// the read short; the journal was not judged.
    Shortage(String),
    /// `unreadable`: gone between listing and opening.
    Vanished,
    /// `malformed`, passed.
    Loadable,
    /// `malformed`: not rch's lease shape.
    Shape(String),
    /// `malformed`: a `schema_version` other than 1.
    Schema(u32),
    /// `malformed`: the id inside differs from the file name's.
    IdMismatch { inside: String, file: String },
    /// `terminal`: `terminal_acknowledged` and the lease's state.
    Terminal {
        acknowledged: bool,
        state: &'static str,
    },
    /// `not_owning`, passed: the recipe owns unretired source.
    Owns {
        roots: usize,
        pair: bool,
        retire_root: bool,
    },
    /// `not_owning`, passed: a settled handoff awaiting the daemon.
    Handoff { returned: i32 },
    /// `not_owning`, failed: what the recipe is, and the first condition
    /// of a settled handoff it misses.
    NotOwning { recipe: Recipe, gap: &'static str },
    /// `not_admitted`: the build id and worker as recorded.
    Admission {
        build_id: Option<u64>,
        worker_id: Option<String>,
    },
    /// `heartbeat_fresh`.
    Heartbeat {
        heartbeat_unix_ms: u64,
        now_unix_ms: u64,
        stale_after_ms: u64,
    },
    /// `no_pid`.
    Pid(u32),
    /// `owner_alive`: what `/proc/<pid>/stat` shows against the record.
    Process(Box<Observation>),
    /// `owner_unverified`: whether presence could be judged, and on what.
    Judgeable(Box<Observation>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::observation::{Namespace, Recorded, StatSeen};

    fn skipped(check: SkipReason, evidence: Evidence) -> Judgement {
        Judgement {
            verdict: Err(check),
            checks: vec![
                Check::pass(SkipReason::NotRegular, Evidence::Listed(FileKind::Regular)),
                Check::fail(check, evidence),
            ],
        }
    }

    fn observation(shortage: Option<&str>) -> Box<Observation> {
        Box::new(Observation {
            pid: 42,
            recorded: Recorded::None,
            namespace: Some(Namespace::Own),
            boot_id: None,
            stat: StatSeen::NotRead,
            shortage: shortage.map(str::to_owned),
        })
    }

    #[test]
    fn a_shortage_that_decided_a_skip_is_told() {
        let read = skipped(SkipReason::Unreadable, Evidence::Shortage("EMFILE".into()));
        assert_eq!(read.shortage(), Some("EMFILE"));
        let owner = skipped(
            SkipReason::OwnerUnverified,
            Evidence::Judgeable(observation(Some("/proc/self/stat: EMFILE"))),
        );
        assert_eq!(owner.shortage(), Some("/proc/self/stat: EMFILE"));
        let stat = skipped(
            SkipReason::OwnerAlive,
            Evidence::Process(observation(Some("/proc/42/stat: ENOMEM"))),
        );
        assert_eq!(stat.shortage(), Some("/proc/42/stat: ENOMEM"));
    }

    #[test]
    fn any_other_skip_or_a_candidate_is_no_shortage() {
        let read = skipped(SkipReason::Unreadable, Evidence::ReadError("EIO".into()));
        assert_eq!(read.shortage(), None);
        let owner = skipped(
            SkipReason::OwnerUnverified,
            Evidence::Judgeable(observation(None)),
        );
        assert_eq!(owner.shortage(), None);
        // A passed check with a shortage in its facts decided nothing.
        let candidate = Judgement {
            verdict: Err(SkipReason::NoPid),
            checks: vec![Check::pass(
                SkipReason::OwnerUnverified,
                Evidence::Judgeable(observation(Some("x"))),
            )],
        };
        assert_eq!(candidate.shortage(), None);
    }
}

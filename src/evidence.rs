//! The evidence behind a verdict: for each check of SPEC's table that a
//! journal reached, whether it passed and the facts it rested on.
//!
//! The facts are plain data (numbers, flags, the owner's [`Observation`]),
//! gathered by the reader and the judge while they decide anyway; text is
//! made only when someone asks for it (`explain`, a `--verbose` row), so a
//! scan of 100,000 journals formats nothing it does not print.

use crate::judge::{Candidate, SkipReason};
use crate::owner::Observation;
use crate::report::span;
use crate::stat::{FileKind, FileStat};
use std::fmt;

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

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Evidence::Regular(stat) => write!(
                f,
                "regular file, {} bytes, owner uid {}{}",
                thousands(stat.size),
                stat.uid,
                if stat.uid == stat.euid { " (you)" } else { "" }
            ),
            Evidence::Listed(FileKind::Regular) => f.write_str("listed as a regular file"),
            Evidence::Listed(FileKind::Unknown) => {
                f.write_str("type not told by the listing; checked on the opened file")
            }
            Evidence::Listed(kind) | Evidence::NotRegular(kind) => f.write_str(match kind {
                FileKind::Regular => "a regular file",
                FileKind::Symlink => "a symbolic link, never followed",
                FileKind::Directory => "a directory",
                FileKind::Fifo => "a FIFO, never opened in a way that could block",
                FileKind::Socket => "a socket",
                FileKind::Device => "a device",
                FileKind::Unknown => "not a regular file",
            }),
            Evidence::Name { canonical: true } => {
                f.write_str("rchw-<uuid>.json with a canonical lowercase UUID")
            }
            Evidence::Name { canonical: false } => {
                f.write_str("not rchw-<uuid>.json with a canonical lowercase UUID")
            }
            Evidence::Owner {
                uid: Some(uid),
                euid,
            } if uid == euid => {
                write!(f, "owner uid {uid} (you)")
            }
            Evidence::Owner { uid, euid } => write!(
                f,
                "owner uid {}, but rch-sweep runs as uid {euid}: no authority to recover with this user's keys",
                uid.map_or_else(|| "unknown".to_owned(), |uid| uid.to_string())
            ),
            Evidence::Size { size, limit } => write!(
                f,
                "{} bytes, within the {} limit",
                thousands(*size),
                mebibytes(*limit)
            ),
            Evidence::TooLarge { size, limit } => write!(
                f,
                "{} bytes, over the {} limit: not read",
                thousands(*size),
                mebibytes(*limit)
            ),
            Evidence::GrewTooLarge { seen, limit } => write!(
                f,
                "grew past the {} limit while it was read ({} bytes seen): not judged",
                mebibytes(*limit),
                thousands(*seen)
            ),
            Evidence::ReadError(error) => write!(f, "read error: {error}"),
            Evidence::Vanished => f.write_str("vanished between listing and reading"),
            Evidence::Loadable => f.write_str(
                "rch's lease shape, schema_version 1, identity.local_wrapper_id = the file name",
            ),
            Evidence::Shape(error) => write!(f, "not rch's lease shape: {error}"),
            Evidence::Schema(version) => write!(f, "schema_version {version}, not 1"),
            Evidence::IdMismatch { inside, file } => write!(
                f,
                "identity.local_wrapper_id is {inside}, not the file name's {file}"
            ),
            Evidence::Terminal {
                acknowledged,
                state,
            } => write!(f, "terminal_acknowledged {acknowledged}, state {state}"),
            Evidence::Owns {
                roots,
                pair,
                retire_root,
            } => {
                let mut owned = Vec::new();
                if *roots > 0 {
                    owned.push(format!(
                        "{roots} source root{}",
                        if *roots == 1 { "" } else { "s" }
                    ));
                }
                if *pair {
                    owned.push("a pair".to_owned());
                }
                if *retire_root {
                    owned.push("a retire root".to_owned());
                }
                write!(
                    f,
                    "the recipe owns unretired source on the worker ({}; retired is not true)",
                    owned.join(", ")
                )
            }
            Evidence::Handoff { returned } => write!(
                f,
                "settled handoff: result delivered (returned {returned}) and source retired, awaiting the daemon"
            ),
            Evidence::NotOwning { recipe, gap } => match recipe {
                Recipe::Missing => {
                    f.write_str("no recovery recipe: nothing on a worker to release")
                }
                Recipe::NotObject => f.write_str("the recovery recipe is not an object"),
                Recipe::Retired => {
                    write!(f, "the recipe is retired, and is no settled handoff: {gap}")
                }
                Recipe::OwnsNothing => write!(
                    f,
                    "the recipe owns no source roots, pair or retire root, and is no settled handoff: {gap}"
                ),
            },
            Evidence::Admission {
                build_id: Some(build_id),
                worker_id: Some(worker_id),
            } if *build_id > 0 && !worker_id.is_empty() => {
                write!(f, "build {build_id} on worker {worker_id}")
            }
            Evidence::Admission {
                build_id,
                worker_id,
            } => {
                let build = match build_id {
                    None => "no remote_build_id".to_owned(),
                    Some(0) => "remote_build_id 0".to_owned(),
                    Some(id) => format!("build {id}"),
                };
                let worker = match worker_id.as_deref() {
                    None => "no worker_id".to_owned(),
                    Some("") => "an empty worker_id".to_owned(),
                    Some(worker) => format!("worker {worker}"),
                };
                write!(f, "{build}, {worker}: never admitted to a worker")
            }
            Evidence::Heartbeat {
                heartbeat_unix_ms,
                now_unix_ms,
                stale_after_ms,
            } => {
                let stale = span(*stale_after_ms);
                if heartbeat_unix_ms > now_unix_ms {
                    write!(
                        f,
                        "heartbeat {} in the future (a clock ahead): counts as fresh, stale after {stale}",
                        span(heartbeat_unix_ms - now_unix_ms)
                    )
                } else {
                    write!(
                        f,
                        "heartbeat {} old, stale after {stale}",
                        span(now_unix_ms - heartbeat_unix_ms)
                    )
                }
            }
            Evidence::Pid(pid) if *pid <= 1 => {
                write!(f, "wrapper_pid {pid}: the owner's death cannot be proven")
            }
            Evidence::Pid(pid) => write!(f, "wrapper_pid {pid}"),
            Evidence::Process(observation) => f.write_str(&observation.process_text()),
            Evidence::Judgeable(observation) => f.write_str(&observation.judgeable_text()),
        }
    }
}

/// `64 MiB`: a limit as it is documented (whole MiB), else in bytes.
fn mebibytes(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{} bytes", thousands(bytes))
    }
}

/// `2,481`: byte counts an operator can read at a glance.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_are_grouped_by_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(2481), "2,481");
        assert_eq!(thousands(1_572_864), "1,572,864");
    }

    #[test]
    fn file_facts_read_as_the_issue_shows_them() {
        let stat = FileStat {
            size: 2481,
            uid: 1000,
            euid: 1000,
        };
        assert_eq!(
            Evidence::Regular(stat).to_string(),
            "regular file, 2,481 bytes, owner uid 1000 (you)"
        );
        let foreign = Evidence::Owner {
            uid: Some(0),
            euid: 1000,
        };
        assert!(
            foreign
                .to_string()
                .starts_with("owner uid 0, but rch-sweep runs as uid 1000")
        );
        let limit = 64 * 1024 * 1024;
        assert_eq!(
            Evidence::Size {
                size: 3_145_728,
                limit
            }
            .to_string(),
            "3,145,728 bytes, within the 64 MiB limit"
        );
        assert_eq!(
            Evidence::TooLarge {
                size: limit + 1,
                limit
            }
            .to_string(),
            "67,108,865 bytes, over the 64 MiB limit: not read"
        );
        assert_eq!(
            Evidence::GrewTooLarge {
                seen: limit + 1,
                limit
            }
            .to_string(),
            "grew past the 64 MiB limit while it was read (67,108,865 bytes seen): not judged"
        );
    }

    #[test]
    fn heartbeats_say_their_age_against_the_threshold() {
        let heartbeat = |age: i64| Evidence::Heartbeat {
            heartbeat_unix_ms: (10_000_000 - age) as u64,
            now_unix_ms: 10_000_000,
            stale_after_ms: 900_000,
        };
        assert_eq!(
            heartbeat(192_000).to_string(),
            "heartbeat 3m 12s old, stale after 15m 0s"
        );
        assert!(
            heartbeat(-300_000)
                .to_string()
                .starts_with("heartbeat 5m 0s in the future")
        );
    }
}

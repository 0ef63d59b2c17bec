//! One pass over the lease directory: every `*.json` entry is read once with
//! the safe reader, judged, and either kept as a small candidate record or
//! counted as skipped. Other entries (`*.recovery.lock`, `*.recover`, rch's
//! temporary files, folders) are not journals and are not counted.

use crate::evidence::{Check, Evidence, FileKind, Judgement};
use crate::journal::{self, LeaseDir, ReadFailure};
use crate::judge::{self, Candidate, SkipReason};
use crate::owner::ProcFs;
use crate::plan;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

pub struct ScanOptions {
    pub now_unix_ms: u64,
    pub stale_after_ms: u64,
    /// Keep a record of every skipped journal (for `--verbose`).
    pub keep_skipped: bool,
}

/// A journal that is not a candidate.
#[derive(Clone, Debug)]
pub struct Skipped {
    /// The entry name (lossily decoded).
    pub file: String,
    /// The wrapper id, when the name is canonical.
    pub wrapper_id: Option<String>,
    pub reason: SkipReason,
    /// The evidence of the check that decided it, for people (kept only
    /// with `keep_skipped`: `--verbose`).
    pub detail: Option<String>,
}

#[derive(Debug, Default)]
pub struct Scan {
    /// `*.json` entries seen.
    pub scanned: usize,
    /// Skipped journals by reason, indexed by [`SkipReason::index`].
    pub skipped: [usize; SkipReason::ALL.len()],
    /// Candidates, oldest heartbeat first.
    pub candidates: Vec<Candidate>,
    /// With `keep_skipped`, every skipped journal in file-name order.
    pub skipped_list: Vec<Skipped>,
    /// The lease directory does not exist (nothing to do).
    pub dir_missing: bool,
}

#[derive(Debug)]
pub enum ScanError {
    /// The path exists but is not a directory.
    NotADirectory,
    /// The directory could not be opened or listed.
    Io(io::Error),
}

pub fn scan(dir: &Path, options: &ScanOptions, proc: &ProcFs) -> Result<Scan, ScanError> {
    let lease_dir = match LeaseDir::open(dir) {
        Ok(lease_dir) => lease_dir,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Ok(Scan {
                dir_missing: true,
                ..Scan::default()
            });
        }
        Err(error) if error.raw_os_error() == Some(libc::ENOTDIR) => {
            return Err(ScanError::NotADirectory);
        }
        Err(error) => return Err(ScanError::Io(error)),
    };
    let mut result = Scan::default();
    let mut buffer = Vec::with_capacity(16 * 1024);
    // A listing error aborts the scan: a partial scan would drop the backoff
    // of the journals it did not see.
    for entry in std::fs::read_dir(dir).map_err(ScanError::Io)? {
        let entry = entry.map_err(ScanError::Io)?;
        let name = entry.file_name();
        let name = name.as_bytes();
        if !name.ends_with(b".json") {
            continue;
        }
        result.scanned += 1;
        let verdict = judge_entry(&lease_dir, &entry, name, options, proc, &mut buffer);
        match verdict {
            Ok(candidate) => result.candidates.push(candidate),
            Err((reason, detail)) => {
                result.skipped[reason.index()] += 1;
                if options.keep_skipped {
                    result.skipped_list.push(Skipped {
                        file: String::from_utf8_lossy(name).into_owned(),
                        wrapper_id: journal::wrapper_id_of(name).map(str::to_owned),
                        reason,
                        detail,
                    });
                }
            }
        }
    }
    plan::order(&mut result.candidates);
    result.skipped_list.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(result)
}

fn judge_entry(
    lease_dir: &LeaseDir,
    entry: &std::fs::DirEntry,
    name: &[u8],
    options: &ScanOptions,
    proc: &ProcFs,
    buffer: &mut Vec<u8>,
) -> Result<Candidate, (SkipReason, Option<String>)> {
    // The type from the listing costs no syscall; the reader checks the
    // opened descriptor again, so a swap after listing is still caught (and
    // a listing that cannot tell leaves the question to it).
    let listed = match entry.file_type() {
        Ok(kind) if kind.is_file() => FileKind::Regular,
        Ok(kind) if kind.is_symlink() => FileKind::Symlink,
        Ok(kind) if kind.is_dir() => FileKind::Directory,
        Ok(kind) if kind.is_fifo() => FileKind::Fifo,
        Ok(kind) if kind.is_socket() => FileKind::Socket,
        Ok(_) => FileKind::Device,
        Err(_) => FileKind::Unknown,
    };
    let judgement = judge_file(lease_dir, listed, name, options, proc, buffer);
    // Text only for the rows that are printed: a plain scan formats
    // nothing for the journals it skips.
    let detail = if options.keep_skipped {
        judgement.deciding().map(|check| check.evidence.to_string())
    } else {
        None
    };
    judgement.verdict.map_err(|reason| (reason, detail))
}

/// Judges the journal `name` of the lease directory: the file checks of
/// SPEC's table (on what the listing said it is, then on the opened
/// descriptor), then the parsed lease with [`judge::judge`]. The scan and
/// `explain` both come here, so their verdicts and evidence cannot drift.
pub fn judge_file(
    lease_dir: &LeaseDir,
    listed: FileKind,
    name: &[u8],
    options: &ScanOptions,
    proc: &ProcFs,
    buffer: &mut Vec<u8>,
) -> Judgement {
    let mut checks = Vec::with_capacity(SkipReason::ALL.len());
    let skipped = |mut checks: Vec<Check>, check: SkipReason, evidence: Evidence| {
        checks.push(Check::fail(check, evidence));
        Judgement {
            verdict: Err(check),
            checks,
        }
    };
    if !matches!(listed, FileKind::Regular | FileKind::Unknown) {
        return skipped(checks, SkipReason::NotRegular, Evidence::Listed(listed));
    }
    let Some(wrapper_id) = journal::wrapper_id_of(name) else {
        checks.push(Check::pass(
            SkipReason::NotRegular,
            Evidence::Listed(listed),
        ));
        return skipped(
            checks,
            SkipReason::BadName,
            Evidence::Name { canonical: false },
        );
    };
    let read = lease_dir.read(name, buffer);
    let stat = match read {
        Ok(stat) => stat,
        Err(ReadFailure::NotRegular(kind)) => {
            return skipped(checks, SkipReason::NotRegular, Evidence::NotRegular(kind));
        }
        Err(failure) => {
            checks.push(Check::pass(
                SkipReason::NotRegular,
                Evidence::Listed(listed),
            ));
            checks.push(Check::pass(
                SkipReason::BadName,
                Evidence::Name { canonical: true },
            ));
            if let ReadFailure::ForeignOwner { uid, euid } = failure {
                return skipped(
                    checks,
                    SkipReason::ForeignOwner,
                    Evidence::Owner { uid, euid },
                );
            }
            checks.push(Check::pass(
                SkipReason::ForeignOwner,
                Evidence::Owner {
                    uid: Some(lease_dir.euid()),
                    euid: lease_dir.euid(),
                },
            ));
            let evidence = match failure {
                ReadFailure::Missing => Evidence::Vanished,
                ReadFailure::TooLarge(size) => Evidence::TooLarge(size),
                ReadFailure::Unreadable(why) | ReadFailure::Malformed(why) => {
                    Evidence::ReadError(why)
                }
                ReadFailure::NotRegular(_) | ReadFailure::ForeignOwner { .. } => {
                    Evidence::ReadError("changed while reading".into())
                }
            };
            return skipped(checks, SkipReason::Unreadable, evidence);
        }
    };
    checks.push(Check::pass(SkipReason::NotRegular, Evidence::Regular(stat)));
    checks.push(Check::pass(
        SkipReason::BadName,
        Evidence::Name { canonical: true },
    ));
    checks.push(Check::pass(
        SkipReason::ForeignOwner,
        Evidence::Owner {
            uid: Some(stat.uid),
            euid: stat.euid,
        },
    ));
    checks.push(Check::pass(
        SkipReason::Unreadable,
        Evidence::Size(stat.size),
    ));
    let lease = match journal::parse(buffer) {
        Ok(lease) => lease,
        Err(error) => {
            return skipped(
                checks,
                SkipReason::Malformed,
                Evidence::Shape(error.to_string()),
            );
        }
    };
    judge::judge(
        wrapper_id,
        lease,
        options.now_unix_ms,
        options.stale_after_ms,
        |pid, recorded| proc.observe(pid, recorded),
        checks,
    )
}

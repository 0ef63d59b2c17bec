//! One pass over the lease directory: every `*.json` entry is read once with
//! the safe reader, judged, and either kept as a small candidate record or
//! counted as skipped. Other entries (`*.recovery.lock`, `*.recover`, rch's
//! temporary files, folders) are not journals and are not counted.

use crate::journal::{self, LeaseDir, ReadFailure};
use crate::judge::{self, Candidate, SkipReason};
use crate::owner::ProcFs;
use crate::plan;
use std::io;
use std::os::unix::ffi::OsStrExt;
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
    /// Why it could not be read or parsed, for people.
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
    // opened descriptor again, so a swap after listing is still caught.
    match entry.file_type() {
        Ok(kind) if !kind.is_file() => return Err((SkipReason::NotRegular, None)),
        Ok(_) => {}
        Err(error) => return Err((SkipReason::Unreadable, Some(error.to_string()))),
    }
    let Some(wrapper_id) = journal::wrapper_id_of(name) else {
        return Err((SkipReason::BadName, None));
    };
    lease_dir
        .read(name, buffer)
        .map_err(|failure| match failure {
            ReadFailure::NotRegular => (SkipReason::NotRegular, None),
            ReadFailure::ForeignOwner => (SkipReason::ForeignOwner, None),
            ReadFailure::Missing => (
                SkipReason::Unreadable,
                Some("vanished while scanning".into()),
            ),
            ReadFailure::Unreadable(why) => (SkipReason::Unreadable, Some(why)),
            ReadFailure::Malformed(why) => (SkipReason::Malformed, Some(why)),
        })?;
    let lease =
        journal::parse(buffer).map_err(|error| (SkipReason::Malformed, Some(error.to_string())))?;
    judge::judge(
        wrapper_id,
        lease,
        options.now_unix_ms,
        options.stale_after_ms,
        |pid, recorded| proc.presence(pid, recorded),
    )
    .map_err(|reason| (reason, None))
}

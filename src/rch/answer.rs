//! What rch's answer says about one lease, where that depends on a look
//! at the lease directory after the child ended (SPEC "rch's answer is its
//! `Error:` line, and the whole catalogue is read"). rch's words name an
//! OS error without saying whose it was: a `No space left on device` may be
//! the project's output folder's, a `Permission denied` a worker's. So the
//! lease directory is looked at again, as the checks before a start look
//! at it, and the answer is the lease directory's only when the look
//! confirms it; otherwise the lease failed, as any failure does.
//!
//! Each look returns the text of the error (or None: not the lease
//! directory's); [`crate::rch::recover`] turns it into an outcome.

use crate::account;
use crate::judge::mounts;
use crate::lease_dir::{LeaseDir, recovery_lock, room, writable};
use std::ffi::CString;
use std::os::fd::AsFd;
use std::path::Path;

/// rch met ENOSPC or EDQUOT (`line`): the lease directory's when its file
/// system (`fstatvfs` of `dir`, shown as `shown`) has no room now for
/// rch's rewrite of the journal of `id`.
pub fn no_room(dir: &LeaseDir, shown: &Path, id: &str, line: &str) -> Option<String> {
    let (shortage, size) = room::check(dir, id)?;
    Some(format!(
        "{} (rch: {line})",
        shortage.error(&shown.display().to_string(), size)
    ))
}

/// What a child's error gains when rch's ENOSPC or EDQUOT was not the
/// lease directory's: where to look instead.
pub const ROOM_ELSEWHERE: &str = "the lease directory's file system has room, so the shortage is elsewhere (the project's output folder, a worker): charged to the lease";

/// rch met EROFS or EACCES (`line`): the lease directory's when the
/// directory is read-only or not writable now, or the journal or its lock
/// cannot be written by this user.
pub fn not_writable(dir: &LeaseDir, shown: &Path, id: &str, line: &str) -> Option<String> {
    if let Err(why) = writable::check(dir) {
        return Some(format!(
            "{} (rch: {line})",
            why.error(&shown.display().to_string())
        ));
    }
    for name in [format!("{id}.json"), format!("{id}.recovery.lock")] {
        let Ok(c_name) = CString::new(name.as_str()) else {
            continue;
        };
        let errno = match crate::sys::fs::access_at(dir.as_fd(), &c_name, libc::R_OK | libc::W_OK) {
            Ok(()) => continue,
            Err(error) => error.raw_os_error(),
        };
        let why = match errno {
            Some(libc::EROFS) => "on a read-only file system".to_owned(),
            Some(libc::EACCES | libc::EPERM) => {
                format!("not writable by {}", account::describe(account::euid()))
            }
            // Not there (rch makes the lock), or another error: no answer.
            _ => continue,
        };
        return Some(format!(
            "{} is {why}: rch could not rewrite the journal (rch: {line})",
            shown.join(&name).display()
        ));
    }
    None
}

/// What a child's error gains when rch's EROFS or EACCES was not the lease
/// directory's.
pub const WRITABLE_ELSEWHERE: &str = "the lease directory, the journal and its lock are writable, so the refusal is elsewhere (the project's output folder, a worker): charged to the lease";

/// rch found no usable lock (`line`) in the lease directory `shown`: the
/// error names its file system, once for the run.
pub fn no_locks(shown: &Path, line: &str) -> String {
    let on = match mounts::file_system_of(shown) {
        Some((fs_type, point)) => format!("lies on {fs_type} (mounted at {})", point.display()),
        None => "lies on a file system".to_owned(),
    };
    format!(
        "the lease directory {} {on}, which gives rch no usable lock (flock): no recovery can hold its lease (rch: {line})",
        shown.display()
    )
}

/// rch refused lease `id`'s recovery lock (`line`): the error, with the
/// fix for what a look at the lock finds now.
pub fn unsafe_lock(dir: &LeaseDir, shown: &Path, id: &str, line: &str) -> String {
    let text = match recovery_lock::refusal_at(dir.as_fd(), shown, id) {
        Some(refusal) => refusal.error(),
        None => recovery_lock::refused_unseen(&shown.join(format!("{id}.recovery.lock"))),
    };
    format!("{text} (rch: {line})")
}

/// A child ended at the deadline (or by rch's own `--timeout-secs`) while
/// another process held one of rch's output-folder locks: rch waits up to
/// 600 s for it and prints nothing meanwhile, so the lease waited for
/// another wrapper, and is not charged. `error` is the child's.
pub fn output_wait(shown: &Path, error: &str) -> Option<String> {
    let (lock, pid) = recovery_lock::output_lock_holder(shown)?;
    Some(format!(
        "rch was waiting to publish into an output folder another process (pid {pid}) holds ({}); retried next run ({error})",
        lock.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_roomy_writable_lease_directory_is_not_what_rch_met() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("rchw-a.json"), "{}").expect("write");
        let open = LeaseDir::open(dir.path()).expect("open");
        assert_eq!(no_room(&open, dir.path(), "rchw-a", "Error: x"), None);
        assert_eq!(not_writable(&open, dir.path(), "rchw-a", "Error: x"), None);
        assert_eq!(output_wait(dir.path(), "timed out"), None);
    }

    #[test]
    fn a_journal_this_user_cannot_write_is_what_rch_met() {
        if account::euid() == 0 {
            // root writes whatever the mode says.
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let journal = dir.path().join("rchw-a.json");
        std::fs::write(&journal, "{}").expect("write");
        std::fs::set_permissions(&journal, std::fs::Permissions::from_mode(0o400)).expect("chmod");
        let open = LeaseDir::open(dir.path()).expect("open");
        let text = not_writable(
            &open,
            dir.path(),
            "rchw-a",
            "Error: Permission denied (os error 13)",
        )
        .expect("not writable");
        assert!(text.contains("rchw-a.json is not writable by"), "{text}");
    }

    #[test]
    fn no_usable_locks_names_the_file_system() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = no_locks(
            dir.path(),
            "Error: cannot inspect exclusive job journal ownership: No locks available (os error 37)",
        );
        assert!(
            text.contains("lies on ") && text.contains("mounted at"),
            "{text}"
        );
        assert!(text.ends_with("(os error 37))"), "{text}");
    }
}

//! rch's recovery lock: `<lease dir>/<id>.recovery.lock`, one per lease,
//! which `rch jobs recover` holds (an exclusive `flock`) for the whole
//! recovery of that lease, whoever started it: rchd's own recovery task,
//! an operator at a terminal, or a sweep's child.
//!
//! It guards a lease's recovery, and lives in the lease directory, so it is
//! looked at here. This tool never opens, locks or creates it: opened,
//! locked or created by us, it could make rch's own `try_lock` fail. It is
//! only `stat`ed, and its holder found in `/proc/locks`
//! ([`crate::proc_locks`]) by the file's inode and its mount's device (as
//! `/proc/locks` names it, on btrfs and overlayfs too).

use crate::proc_locks;
use std::ffi::CString;
use std::os::fd::BorrowedFd;
use std::path::Path;

/// The process other than this one (and its `child`) that holds the
/// recovery lock of lease `id` in `lease_dir`. None when nobody holds it,
/// there is no such file, or it cannot be told (then `rch` is the judge).
pub fn holder(lease_dir: &Path, id: &str, child: Option<u32>) -> Option<u32> {
    let lock = lease_dir.join(format!("{id}.recovery.lock"));
    let own = std::process::id();
    proc_locks::holders(&lock, true)
        .ok()?
        .into_iter()
        .find(|pid| *pid != own && Some(*pid) != child)
}

/// The error of a lease someone else is recovering (`pid` holds its
/// recovery lock).
pub fn busy(pid: u32) -> String {
    format!("another process (pid {pid}) is recovering this lease")
}

/// The permission bits of lease `id`'s recovery lock in the open lease
/// directory `dir`, seen by `fstatat` without following a link: None
/// when there is no such file or it is not a regular file (rch judges
/// those itself). rch refuses a lock file open to group or others
/// ([`open_to_others`]), so a sweep looks before it starts a child that
/// would only be refused.
pub fn mode_at(dir: BorrowedFd<'_>, id: &str) -> Option<u32> {
    let name = CString::new(format!("{id}.recovery.lock")).ok()?;
    let stat = crate::fsio::stat_at_nofollow(dir, &name).ok()?;
    (stat.st_mode & libc::S_IFMT == libc::S_IFREG).then_some(stat.st_mode & 0o7777)
}

/// Whether rch refuses a recovery lock of `mode`: open to group or others
/// ([`crate::rch_says::LOCK_OPEN_TO_OTHERS`], rch 2.1.17 and later).
pub fn open_to_others(mode: u32) -> bool {
    mode & 0o077 != 0
}

/// The fix for a lock file at `path` open to group or others.
pub fn lock_fix(path: &Path) -> String {
    format!("chmod 600 {}", path.display())
}

/// The error of a lease whose recovery lock at `path` rch refuses, with
/// its `mode` when known, and the fix.
pub fn open_lock_error(path: &Path, mode: Option<u32>) -> String {
    let mode = mode
        .map(|mode| format!(" (mode {mode:04o})"))
        .unwrap_or_default();
    format!(
        "rch refuses the recovery lock {}{mode}: it is open to group or others; fix: {}",
        path.display(),
        lock_fix(path)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_lock_open_to_group_or_others_open_to_others() {
        assert!(!open_to_others(0o600));
        assert!(!open_to_others(0o400));
        assert!(open_to_others(0o644));
        assert!(open_to_others(0o660));
        assert!(open_to_others(0o602));
        let text = open_lock_error(Path::new("/l/rchw-x.recovery.lock"), Some(0o644));
        assert!(text.contains("(mode 0644)"), "{text}");
        assert!(
            text.ends_with("fix: chmod 600 /l/rchw-x.recovery.lock"),
            "{text}"
        );
    }

    #[test]
    fn the_mode_is_read_without_following_a_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = std::fs::File::open(dir.path()).expect("open");
        assert_eq!(mode_at(open.as_fd(), "rchw-a"), None);
        let lock = dir.path().join("rchw-a.recovery.lock");
        std::fs::write(&lock, "").expect("write");
        std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_eq!(mode_at(open.as_fd(), "rchw-a"), Some(0o644));
        std::os::unix::fs::symlink(&lock, dir.path().join("rchw-b.recovery.lock")).expect("ln");
        assert_eq!(mode_at(open.as_fd(), "rchw-b"), None);
    }
}

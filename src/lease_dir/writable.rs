//! Whether rch could rewrite a journal in the lease directory.
//!
//! `rch jobs recover` rewrites a lease's journal (a temporary file in the
//! lease directory, renamed over it). On a read-only mount (a disk
//! remounted read-only, a read-only NFS export) or in a directory this
//! user may not write, every recovery would fail in rch and every lease be
//! charged a failure for the host's fault. So a real run asks before its
//! first child (and only when something is due: an empty run makes no
//! extra call), on the descriptor it already holds, and doctor asks the
//! same of the path.

use super::LeaseDir;
use crate::{account, sys};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

/// Why rch could not rewrite a journal in the lease directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unwritable {
    /// It lies on a file system mounted read-only.
    ReadOnly,
    /// This user (`uid`) may not create or rename files in it.
    NotWritable { uid: u32 },
}

impl Unwritable {
    /// The error of each due lease, and of the run: the lease directory
    /// (`shown` as given, and resolved) and why.
    pub fn error(&self, shown: &str) -> String {
        let why = match self {
            Unwritable::ReadOnly => "read-only (mounted ro)".to_owned(),
            Unwritable::NotWritable { uid } => {
                format!("not writable by {}", account::describe(*uid))
            }
        };
        format!("the lease directory {shown} is {why}: rch could not rewrite a journal")
    }

    /// What to do about it.
    pub fn fix(&self) -> &'static str {
        match self {
            Unwritable::ReadOnly => {
                "remount it read-write (mount -o remount,rw), or sweep where rch's wrappers write it; the next run recovers what is due"
            }
            Unwritable::NotWritable { .. } => {
                "run the sweep as the user rch's wrappers write it as, or give that user write access to it; the next run recovers what is due"
            }
        }
    }
}

/// What the two questions answered, judged: a read-only mount first (the
/// access check fails there too, with `EROFS`), then this user's access
/// (`access_errno`: the `faccessat` error, if any). Any other error of
/// either question decides nothing: rch is then the judge.
pub fn judge(
    read_only_mount: Option<bool>,
    access_errno: Option<i32>,
    uid: u32,
) -> Option<Unwritable> {
    if read_only_mount == Some(true) || access_errno == Some(libc::EROFS) {
        return Some(Unwritable::ReadOnly);
    }
    match access_errno {
        Some(libc::EACCES | libc::EPERM) => Some(Unwritable::NotWritable { uid }),
        _ => None,
    }
}

/// Whether rch could rewrite a journal in the open lease directory `dir`:
/// `fstatvfs` on its descriptor (no `ST_RDONLY`) and `faccessat(".",
/// W_OK | X_OK, AT_EACCESS)` for this user.
pub fn check(dir: &LeaseDir) -> Result<(), Unwritable> {
    let fd = dir.as_fd();
    let read_only = mount_flags(fd)
        .ok()
        .map(|flags| flags & libc::ST_RDONLY != 0);
    let access = may_write(fd).err().and_then(|error| error.raw_os_error());
    match judge(read_only, access, account::euid()) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// [`check`] of the lease directory at `path`, for doctor, which holds no
/// descriptor of it. `Ok` when it cannot be opened (the listing's own
/// check reports that).
pub fn check_path(path: &Path) -> Result<(), Unwritable> {
    match LeaseDir::open(path) {
        Ok(dir) => check(&dir),
        Err(_) => Ok(()),
    }
}

/// The mount flags of the file system `fd` lies on (`f_flag` of
/// `fstatvfs`).
fn mount_flags(fd: BorrowedFd<'_>) -> io::Result<libc::c_ulong> {
    Ok(sys::fs::fstatvfs(fd)?.f_flag)
}

/// Whether this process may create and rename files in the folder `fd`,
/// as the kernel judges it for the effective ids (modes, ACLs, a
/// read-only mount: `EROFS`).
fn may_write(fd: BorrowedFd<'_>) -> io::Result<()> {
    sys::fs::access_at(fd, c".", libc::W_OK | libc::X_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_mount_comes_before_this_users_access() {
        assert_eq!(judge(Some(false), None, 1000), None);
        assert_eq!(judge(None, None, 1000), None);
        assert_eq!(judge(Some(true), None, 1000), Some(Unwritable::ReadOnly));
        assert_eq!(
            judge(Some(true), Some(libc::EACCES), 1000),
            Some(Unwritable::ReadOnly)
        );
        assert_eq!(
            judge(None, Some(libc::EROFS), 1000),
            Some(Unwritable::ReadOnly)
        );
        assert_eq!(
            judge(Some(false), Some(libc::EACCES), 1000),
            Some(Unwritable::NotWritable { uid: 1000 })
        );
        // An error that proves nothing leaves it to rch.
        assert_eq!(judge(Some(false), Some(libc::EIO), 1000), None);
    }

    #[test]
    fn the_error_names_the_directory_and_why() {
        assert_eq!(
            Unwritable::ReadOnly.error("/l/job-leases"),
            "the lease directory /l/job-leases is read-only (mounted ro): rch could not rewrite a journal"
        );
        let text = Unwritable::NotWritable { uid: 0 }.error("/l");
        assert!(
            text.starts_with("the lease directory /l is not writable by root"),
            "{text}"
        );
    }

    #[test]
    fn a_folder_of_ones_own_is_writable() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(check_path(dir.path()), Ok(()));
    }
}

//! Whether the lease directory's file system has room for rch's rewrite of
//! a journal.
//!
//! `rch jobs recover` writes the whole journal to a temporary file beside
//! it and renames it over (a large workspace's journal is megabytes). On a
//! file system with room for the state but not for that copy, rch fails
//! with ENOSPC, exits 1, and every lease would be charged for the host's
//! full disk. So before each start a real run asks `fstatvfs` of the open
//! lease directory for room: free bytes for this user at least twice the
//! journal plus 64 KiB, and a free inode (SPEC "rch's answers are read,
//! not counted", 3). A file system that keeps no block count (`f_blocks`
//! 0: a tmpfs mounted without a size limit, Docker's `--tmpfs`) has no
//! byte limit, and one that counts no inodes (`f_files` 0) none of inodes:
//! neither is short of what it does not count.
//!
//! The same look after a child that said ENOSPC or EDQUOT tells whether
//! the shortage was the lease directory's at all ([`check`] again).

use super::LeaseDir;
use crate::human::thousands;
use crate::sys;
use std::ffi::CString;
use std::os::fd::AsFd;

/// Slack beyond twice the journal: rch's own small writes beside it.
pub const SLACK_BYTES: u64 = 64 * 1024;

/// What the file system said (`fstatvfs`), as plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Free {
    /// `f_bavail * f_frsize`: bytes this (unprivileged) user may still use.
    pub bytes: u64,
    /// `f_blocks`: 0 for a file system that keeps no block count (no byte
    /// limit).
    pub total_blocks: u64,
    /// `f_favail`: inodes this user may still use.
    pub inodes: u64,
    /// `f_files`: 0 for a file system that counts no inodes at all.
    pub total_inodes: u64,
}

/// What is short.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shortage {
    Bytes { free: u64, needed: u64 },
    Inodes,
}

/// What a rewrite of a journal of `journal_bytes` needs: twice the journal
/// plus [`SLACK_BYTES`].
pub fn needed(journal_bytes: u64) -> u64 {
    journal_bytes.saturating_mul(2).saturating_add(SLACK_BYTES)
}

/// Whether `free` leaves room for rch's rewrite of a journal of
/// `journal_bytes`. A file system that keeps no block count (`f_blocks`
/// 0) is not short of bytes, nor one that counts no inodes (`f_files` 0,
/// as some network and FUSE file systems report) of inodes.
pub fn judge(free: Free, journal_bytes: u64) -> Option<Shortage> {
    let needed = needed(journal_bytes);
    if free.total_blocks != 0 && free.bytes < needed {
        return Some(Shortage::Bytes {
            free: free.bytes,
            needed,
        });
    }
    (free.total_inodes != 0 && free.inodes < 1).then_some(Shortage::Inodes)
}

impl Shortage {
    /// The error of the lease, and of the run: the lease directory
    /// (`shown`) and what is short.
    pub fn error(&self, shown: &str, journal_bytes: u64) -> String {
        let what = match self {
            Shortage::Bytes { free, needed } => format!(
                "{} bytes free, {} needed: twice the journal's {} bytes plus 64 KiB",
                thousands(*free),
                thousands(*needed),
                thousands(journal_bytes)
            ),
            Shortage::Inodes => "no free inode".to_owned(),
        };
        format!("the lease directory {shown} has no room for rch's rewrite of the journal: {what}")
    }
}

/// What is short for rch's rewrite of the journal of `wrapper_id` in the
/// open lease directory `dir`, with the journal's size; None when there is
/// room, or when it cannot be told (the journal's size or the file
/// system's counts cannot be read: rch is then the judge).
pub fn check(dir: &LeaseDir, wrapper_id: &str) -> Option<(Shortage, u64)> {
    let name = CString::new(format!("{wrapper_id}.json")).ok()?;
    let journal = crate::fsio::stat_at_nofollow(dir.as_fd(), &name).ok()?;
    let size = u64::try_from(journal.st_size).unwrap_or(0);
    let vfs = sys::fs::fstatvfs(dir.as_fd()).ok()?;
    let free = Free {
        bytes: vfs.f_bavail.saturating_mul(vfs.f_frsize),
        total_blocks: vfs.f_blocks,
        inodes: vfs.f_favail,
        total_inodes: vfs.f_files,
    };
    judge(free, size).map(|shortage| (shortage, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free(bytes: u64, inodes: u64, total_inodes: u64) -> Free {
        Free {
            bytes,
            total_blocks: 1_000_000,
            inodes,
            total_inodes,
        }
    }

    #[test]
    fn room_is_twice_the_journal_plus_64_kib_and_an_inode() {
        let mb = 1_200_000;
        assert_eq!(needed(mb), 2_400_000 + 65_536);
        assert_eq!(judge(free(2_465_536, 1, 10), mb), None);
        assert_eq!(
            judge(free(2_465_535, 1, 10), mb),
            Some(Shortage::Bytes {
                free: 2_465_535,
                needed: 2_465_536
            })
        );
        assert_eq!(judge(free(u64::MAX, 0, 10), mb), Some(Shortage::Inodes));
        // A file system that counts no inodes is not short of them.
        assert_eq!(judge(free(u64::MAX, 0, 0), mb), None);
        assert_eq!(judge(free(65_536, 1, 10), 0), None);
    }

    #[test]
    fn a_file_system_without_a_block_count_has_no_byte_limit() {
        // A tmpfs mounted with size=0: f_blocks = f_bavail = f_files = 0.
        let unlimited = Free {
            bytes: 0,
            total_blocks: 0,
            inodes: 0,
            total_inodes: 0,
        };
        assert_eq!(judge(unlimited, 64 * 1024 * 1024), None);
        // Its inodes are still counted when it counts them.
        let no_inode = Free {
            total_inodes: 100,
            ..unlimited
        };
        assert_eq!(judge(no_inode, 1), Some(Shortage::Inodes));
    }

    #[test]
    fn the_error_names_the_directory_and_the_shortage() {
        let text = Shortage::Bytes {
            free: 65_536,
            needed: 2_465_536,
        }
        .error("/l/job-leases", 1_200_000);
        assert_eq!(
            text,
            "the lease directory /l/job-leases has no room for rch's rewrite of the journal: 65,536 bytes free, 2,465,536 needed: twice the journal's 1,200,000 bytes plus 64 KiB"
        );
        assert!(
            Shortage::Inodes
                .error("/l", 1)
                .ends_with("journal: no free inode")
        );
    }

    #[test]
    fn a_journal_on_a_roomy_file_system_fits() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("rchw-a.json"), "{}").expect("write");
        let open = LeaseDir::open(dir.path()).expect("open");
        assert_eq!(check(&open, "rchw-a"), None);
        assert_eq!(check(&open, "rchw-missing"), None);
    }
}

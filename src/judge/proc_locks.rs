//! Who holds a `flock`, read from `/proc/locks` without taking any lock.
//!
//! Three locks are looked at this way, each by its own room: the state lock
//! (`doctor`'s look, which must never take it: a doctor that took it,
//! however briefly, could make a timer's run exit 75), the sweep lock on
//! the lease directory (for the PID in a run's 75 message: the directory
//! holds no PID to read) and rch's per-lease recovery lock (which must not
//! even be opened). Each is named as `/proc/locks` names it, by its
//! mount's device ([`crate::judge::mounts`]), not `stat`'s (which differs on
//! btrfs and overlayfs). This module guards nothing itself.

use crate::judge::mounts::{self, LockId};
use std::io;
use std::path::Path;

/// Who holds a `flock` on the file at `path` (a final link followed only
/// with `follow`): the PIDs `/proc/locks` lists for it (empty: nobody).
/// An error when the file cannot be looked at (it does not exist) or
/// `/proc/locks` cannot be read.
pub fn holders(path: &Path, follow: bool) -> io::Result<Vec<u32>> {
    let id = mounts::lock_id(path, follow)?;
    let locks = std::fs::read_to_string("/proc/locks")?;
    Ok(holders_in(&locks, id))
}

/// Who holds a `flock` on any of the files at `paths` (final links not
/// followed), `/proc/locks` read once: each holder with the file it holds.
/// Files that cannot be looked at are passed over.
pub fn holders_of_any(paths: &[std::path::PathBuf]) -> io::Result<Vec<(std::path::PathBuf, u32)>> {
    let ids: Vec<(&std::path::PathBuf, LockId)> = paths
        .iter()
        .filter_map(|path| Some((path, mounts::lock_id(path, false).ok()?)))
        .collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let locks = std::fs::read_to_string("/proc/locks")?;
    Ok(ids
        .into_iter()
        .flat_map(|(path, id)| {
            holders_in(&locks, id)
                .into_iter()
                .map(move |pid| (path.clone(), pid))
        })
        .collect())
}

/// The PIDs of the `FLOCK` lines of `/proc/locks` text that name the file
/// `id` (as the kernel prints it: `major:minor:inode`, the device numbers
/// in hex). Blocked waiters (`->` lines) hold nothing.
fn holders_in(locks: &str, id: LockId) -> Vec<u32> {
    let file = format!("{:02x}:{:02x}:{}", id.major, id.minor, id.ino);
    locks
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                [_, "FLOCK", _, _, pid, id, ..] if *id == file => pid.parse().ok(),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_locks_lines_name_their_holders() {
        let text = "1: FLOCK  ADVISORY  WRITE 4242 fe:00:10011186 0 EOF\n\
                    1: -> FLOCK  ADVISORY  WRITE 4343 fe:00:10011186 0 EOF\n\
                    2: POSIX  ADVISORY  WRITE 77 fe:00:10011186 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 99 fe:00:555 0 EOF\n\
                    4: FLOCK  ADVISORY  WRITE 31 00:28:257 0 EOF\n";
        let id = |major, minor, ino| LockId { major, minor, ino };
        assert_eq!(holders_in(text, id(0xfe, 0, 10011186)), [4242]);
        assert!(holders_in(text, id(0xfe, 1, 10011186)).is_empty());
        // A btrfs subvolume's file, by its file system's device (0:40).
        assert_eq!(holders_in(text, id(0, 40, 257)), [31]);
    }
}

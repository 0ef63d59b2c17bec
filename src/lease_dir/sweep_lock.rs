//! The sweep lock: what keeps two sweeps off one lease directory.
//!
//! It guards the lease directory itself, so it is taken on the directory:
//! a non-blocking exclusive `flock` on the descriptor the run opened it by
//! ([`LeaseDir`]), held for as long as that descriptor stays open. No file
//! is created in rch's directory, and two sweeps that reach it by
//! different paths, or with different state files (and so different state
//! locks), still meet on the same inode. Who holds it is seen in
//! `/proc/locks` ([`crate::judge::proc_locks`]): the directory holds no PID to
//! read.

use super::LeaseDir;
use crate::judge::proc_locks;
use crate::sys;
use crate::sys::fs::TryLock;
use std::io;
use std::os::fd::AsFd;
use std::path::Path;

/// Why the lease directory could not be locked.
#[derive(Debug)]
pub enum SweepLockError {
    /// Another sweep holds it.
    Busy,
    Io(io::Error),
}

/// Takes the sweep lock on the open lease directory `dir`, without
/// waiting; it is released when `dir` is closed (or the process dies).
pub fn acquire(dir: &LeaseDir) -> Result<(), SweepLockError> {
    match sys::fs::try_lock_exclusive(dir.as_fd()) {
        Ok(TryLock::Taken) => Ok(()),
        Ok(TryLock::Busy) => Err(SweepLockError::Busy),
        Err(error) => Err(SweepLockError::Io(error)),
    }
}

/// Who holds the sweep lock on the lease directory at `resolved`, other
/// than this process, as `/proc/locks` shows it: for the message of a run
/// that finds it held. None when it cannot tell.
pub fn holder(resolved: &Path) -> Option<u32> {
    let own = std::process::id();
    proc_locks::holders(resolved, true)
        .ok()?
        .into_iter()
        .find(|pid| *pid != own)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease_dir::Identity;

    #[test]
    fn the_lock_is_held_until_the_directory_is_closed() {
        let world = tempfile::tempdir().expect("tempdir");
        let identity = Identity::resolve(Some(world.path()));
        let first = identity.open().expect("open");
        acquire(&first).expect("first lock");
        // A second open file description, as a second sweep would have.
        let second = Identity::resolve(Some(&world.path().join(".")))
            .open()
            .expect("open");
        assert!(matches!(acquire(&second), Err(SweepLockError::Busy)));
        drop(first);
        acquire(&second).expect("free once the first is closed");
    }
}

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

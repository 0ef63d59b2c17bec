//! The `lock` check: whether a sweep holds the state lock or the lease
//! directory now, seen in `/proc/locks` without taking either.

use super::{DoctorCheck, Finding};
use crate::judge::proc_locks;
use crate::lease_dir::{Identity, LeaseDirFound};
use crate::state::lock;
use std::path::Path;

/// Whether a sweep holds the state lock or the lease directory now, seen
/// in `/proc/locks` without taking either lock (and without creating the
/// lock file). A held lock is no fault: a run meanwhile exits 75, which the
/// units count as success.
pub fn locks_held(identity: &Identity, state_file: &Path) -> Finding {
    let check = DoctorCheck::Lock;
    let lock_file = lock::lock_path(state_file);
    let mut held = Vec::new();
    // Each is looked up as /proc/locks names it (by its mount's device:
    // on btrfs and overlayfs `stat`'s is another).
    let mut looked = |what: String, path: &Path, pid_file: Option<&Path>| {
        match proc_locks::holders(path, true) {
            Ok(pids) if pids.is_empty() => Ok(()),
            // Gone since it was found: nobody holds it.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Ok(pids) => {
                // The lock file holds its holder's PID; /proc/locks knows it too.
                let pid = pid_file
                    .and_then(|path| std::fs::read_to_string(path).ok())
                    .and_then(|text| text.trim().parse::<u32>().ok())
                    .unwrap_or(pids[0]);
                held.push(format!("{what} (pid {pid})"));
                Ok(())
            }
            Err(error) => Err(error),
        }
    };
    let mut outcome = Ok(());
    if let Ok(meta) = std::fs::symlink_metadata(&lock_file)
        && meta.is_file()
    {
        outcome = looked(
            format!("the state lock {}", lock_file.display()),
            &lock_file,
            Some(&lock_file),
        );
    }
    if outcome.is_ok() && matches!(identity.found, LeaseDirFound::Directory { .. }) {
        outcome = looked(
            format!("the lease directory {}", identity.resolved.display()),
            &identity.resolved,
            None,
        );
    }
    if let Err(error) = outcome {
        return Finding::warn(
            check,
            format!("cannot tell whether a sweep holds the locks: /proc/locks: {error}"),
            "mount /proc, or look with `fuser` at the lock file",
        );
    }
    if held.is_empty() {
        Finding::ok(
            check,
            format!(
                "free: no sweep holds {} or the lease directory",
                lock_file.display()
            ),
        )
    } else {
        Finding::warn(
            check,
            format!("a sweep holds {} now", held.join(" and ")),
            "nothing to do: a run meanwhile exits 75, which the units count as success; if it lasts, look at that process (ps -p PID)",
        )
    }
}

//! The process environment changed, which is only sound while no other
//! thread can read it at the same time: while this process has one thread.

use std::ffi::OsStr;
use std::io;

/// Removes each of `names` from the environment, provided this process has
/// exactly one thread (checked in `/proc/self/status`): then no other
/// thread exists to read the environment while it changes, and only this
/// one could start another. Otherwise, or when the thread count cannot be
/// read, nothing is removed and the error says why. Nothing to remove is
/// no check.
pub fn remove_while_single_threaded(names: &[&OsStr]) -> io::Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    let status = std::fs::read_to_string("/proc/self/status")?;
    match threads(&status) {
        Some(1) => {}
        Some(count) => {
            return Err(io::Error::other(format!(
                "{count} threads: the environment cannot be changed safely"
            )));
        }
        None => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "no thread count in /proc/self/status",
            ));
        }
    }
    for name in names {
        // SAFETY: this process has one thread (checked above), this one, so
        // nothing reads or writes the environment while it changes.
        unsafe { std::env::remove_var(name) };
    }
    Ok(())
}

/// The `Threads:` line of a `/proc/<pid>/status` text.
fn threads(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|count| count.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_count_is_read_from_the_status_text() {
        let status = "Name:\trch-sweep\nTgid:\t7\nThreads:\t1\nSigQ:\t0/63\n";
        assert_eq!(threads(status), Some(1));
        assert_eq!(threads("Threads:\t12\n"), Some(12));
        assert_eq!(threads("Name:\tx\n"), None);
    }

    #[test]
    fn nothing_is_removed_while_other_threads_run() {
        // The test harness runs tests on threads of their own.
        let name = OsStr::new("RCH_SWEEP_SYS_ENV_TEST_UNSET");
        assert!(remove_while_single_threaded(&[name]).is_err());
        assert!(remove_while_single_threaded(&[]).is_ok());
    }
}

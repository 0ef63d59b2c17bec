//! The direct child's end: its exit seen without reaping it, its process
//! group killed while that is still safe (only ever while the leader is
//! unreaped, so its PID, which is the group's id, is nobody else's), and
//! the reap, bounded by [`REAP_TIMEOUT`].

use super::{POLL_SLICE, REAP_TIMEOUT};
use crate::sys;
use std::io;
use std::os::fd::AsFd;
use std::process::{Child, ExitStatus};
use std::thread;
use std::time::{Duration, Instant};

/// Resets an inherited "ignore SIGCHLD" to the default.
///
/// A process started with SIGCHLD ignored (cron can do that) has its children
/// reaped by the kernel the moment they exit: `waitid` then fails, and the
/// child's PID (its group id) is free again before its group was dealt with.
/// Call it once at program start, before any child, as logrotate does. Only
/// an ignored disposition is replaced, so a late call cannot unhook a
/// handler someone installed. SIGCHLD is also unblocked in the calling
/// thread (threads spawned later inherit the mask).
pub fn reset_sigchld() {
    sys::signal::reset_ignored_sigchld();
    sys::signal::unblock(&[libc::SIGCHLD]);
}

/// SIGKILLs the process group whose id is `pid` (the child's own).
///
/// Only while the direct child is not yet reaped: then its PID cannot have
/// been given to another process, and so neither can its group id (a
/// process-group id is a PID). Once it is reaped, a helper that escaped the
/// group (`setsid`) leaves the group empty, the PID free, and an unrelated
/// process-group leader may take it; every caller kills before it reaps.
pub(super) fn kill_group(pid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // -0 would mean our own group and -1 every process we may signal.
    if pgid <= 1 {
        return;
    }
    // The group is the child's own (see above), never ours, since the
    // child was put in a new group at spawn. The result is irrelevant:
    // ESRCH means everyone is already gone.
    let _ = sys::process::kill_group(pgid, libc::SIGKILL);
}

/// Sees the direct child exit without reaping it (`waitid` with
/// `WNOWAIT`), so the caller decides when its PID may be reused. On Linux
/// a pidfd makes the wait a `poll` that wakes at the exit; without one
/// (kernels before 5.3, seccomp filters) the exit is polled for.
pub(super) struct ExitWatch {
    pid: libc::pid_t,
    #[cfg(target_os = "linux")]
    pub(super) pidfd: Option<std::os::fd::OwnedFd>,
}

/// How often the exit is looked for when no pidfd is to be had.
const EXIT_POLL: Duration = Duration::from_millis(5);

impl ExitWatch {
    pub(super) fn new(pid: u32) -> ExitWatch {
        let pid = libc::pid_t::try_from(pid).unwrap_or(libc::pid_t::MAX);
        #[cfg(target_os = "linux")]
        // The PID is our unreaped child's, so it names that very process.
        let pidfd = sys::process::pidfd_open(pid).ok();
        ExitWatch {
            pid,
            #[cfg(target_os = "linux")]
            pidfd,
        }
    }

    /// The child's status once it has exited (still unreaped), waiting at
    /// most `timeout` for it; `None` while it runs.
    pub(super) fn wait(&self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.peek()? {
            return Ok(Some(status));
        }
        #[cfg(target_os = "linux")]
        if let Some(pidfd) = &self.pidfd {
            // Interrupted or not, the exit is looked for again below.
            let _ = sys::fd::poll_readable(pidfd.as_fd(), timeout);
            return self.peek();
        }
        thread::sleep(timeout.min(EXIT_POLL));
        self.peek()
    }

    /// `waitid(P_PID, pid, WEXITED | WNOHANG | WNOWAIT)`: the status of an
    /// exited child, which stays a zombie.
    fn peek(&self) -> io::Result<Option<ExitStatus>> {
        sys::process::peek_exited(self.pid)
    }
}

/// Reaps a child that has exited; its status, when the reaping gave one.
pub(super) fn reap_exited(child: &mut Child) -> Option<ExitStatus> {
    child.try_wait().ok().flatten()
}

/// Waits for the killed direct child for at most [`REAP_TIMEOUT`], then
/// reaps it; true when it was reaped.
pub(super) fn reap(child: &mut Child, exit: &ExitWatch) -> bool {
    let start = Instant::now();
    loop {
        let left = REAP_TIMEOUT.saturating_sub(start.elapsed());
        match exit.wait(left.min(POLL_SLICE)) {
            Ok(Some(_)) => return reap_exited(child).is_some(),
            Ok(None) => {}
            Err(_) => thread::sleep(left.min(POLL_SLICE)),
        }
        if left.is_zero() {
            return false;
        }
    }
}

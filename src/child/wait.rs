//! The direct child's end: its exit seen without reaping it, its process
//! group killed while that is still safe (only ever while the leader is
//! unreaped, so its PID, which is the group's id, is nobody else's), and
//! the reap, bounded by [`REAP_TIMEOUT`].

use super::{POLL_SLICE, REAP_TIMEOUT};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
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
    // SAFETY: `sigaction` with a null new action only reads the current
    // disposition into `current`, a zeroed (valid) `sigaction` we own. The
    // replacement is a plain SIG_DFL with an empty mask and no flags, which
    // installs no code of ours to run in signal context. `sigemptyset`,
    // `sigaddset` and `pthread_sigmask` only touch the local `set` and the
    // calling thread's mask.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGCHLD, std::ptr::null(), &mut current) == 0
            && (current.sa_sigaction == libc::SIG_IGN || current.sa_flags & libc::SA_NOCLDWAIT != 0)
        {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigemptyset(&mut default.sa_mask);
            libc::sigaction(libc::SIGCHLD, &default, std::ptr::null_mut());
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
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
    // SAFETY: kill only sends a signal; the group is the child's own (see
    // above), never ours, since the child was put in a new group at spawn.
    // Its result is irrelevant: ESRCH means everyone is already gone.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
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
        let pidfd = {
            use std::os::fd::FromRawFd;
            // SAFETY: pidfd_open takes plain integers; the PID is our
            // unreaped child's, so it names that very process.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            libc::c_int::try_from(fd)
                .ok()
                .filter(|fd| *fd >= 0)
                // SAFETY: a descriptor just returned to us and owned by no
                // one else (pidfds are close-on-exec).
                .map(|fd| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
        };
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
            let mut pollfd = libc::pollfd {
                fd: pidfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
            // SAFETY: one valid pollfd, on a descriptor `pidfd` keeps open.
            // Interrupted or not, the exit is looked for again below.
            unsafe { libc::poll(&mut pollfd, 1, ms) };
            return self.peek();
        }
        thread::sleep(timeout.min(EXIT_POLL));
        self.peek()
    }

    /// `waitid(P_PID, pid, WEXITED | WNOHANG | WNOWAIT)`: the status of an
    /// exited child, which stays a zombie.
    fn peek(&self) -> io::Result<Option<ExitStatus>> {
        let id = libc::id_t::try_from(self.pid).map_err(io::Error::other)?;
        loop {
            // SAFETY: a zeroed siginfo_t is valid for waitid to fill in.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: `info` is a valid, writable siginfo_t; WNOWAIT leaves
            // the child as it is.
            let rc = unsafe {
                libc::waitid(
                    libc::P_PID,
                    id,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                )
            };
            if rc != 0 {
                let error = io::Error::last_os_error();
                if error.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(error);
            }
            // SAFETY: waitid filled in a SIGCHLD-style siginfo (or left it
            // zeroed, pid 0, when the child has not exited).
            let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
            if pid == 0 {
                return Ok(None);
            }
            // Back into the wait status std decodes.
            let raw = match info.si_code {
                libc::CLD_EXITED => (status & 0xff) << 8,
                libc::CLD_DUMPED => (status & 0x7f) | 0x80,
                _ => status & 0x7f,
            };
            return Ok(Some(ExitStatus::from_raw(raw)));
        }
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

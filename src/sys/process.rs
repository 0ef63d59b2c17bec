//! This process's limits and its children: the descriptor limit, a signal
//! to a process or a process group, a pidfd, and an exit seen with
//! `waitid` without reaping.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// `getrlimit(RLIMIT_NOFILE)`: the soft and hard limits on open
/// descriptors (`RLIM_INFINITY` for none).
pub fn open_file_limit() -> io::Result<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(limit)
}

/// `kill(pid, signal)` to one process. A `pid` of 0 or below (our own
/// group, every process we may signal, another group) is refused.
pub fn kill(pid: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
    if pid <= 0 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: kill takes plain integers and touches no memory of ours.
    if unsafe { libc::kill(pid, signal) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `kill(pid, 0)`: whether the kernel knows process `pid`, asked with no
/// signal sent. Only an `ESRCH` failure ([`is_no_such_process`]) proves it
/// gone; `EPERM` means it exists and is another user's.
pub fn probe(pid: libc::pid_t) -> io::Result<()> {
    kill(pid, 0)
}

/// Whether `error` is `ESRCH`: no such process (or process group).
pub fn is_no_such_process(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::ESRCH)
}

/// `kill(-pgid, signal)`: `signal` to every process of the group `pgid`. A
/// `pgid` of 0 or below (which would name our own group, or every process
/// we may signal, or one process) is refused.
pub fn kill_group(pgid: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
    if pgid <= 0 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: kill takes plain integers and touches no memory of ours.
    if unsafe { libc::kill(-pgid, signal) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `pidfd_open(pid, 0)`: a descriptor (close-on-exec) that names the
/// process `pid` and becomes readable when it exits. Fails on kernels
/// before 5.3 or under a seccomp filter that refuses it.
#[cfg(target_os = "linux")]
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = libc::c_int::try_from(rc)
        .ok()
        .filter(|fd| *fd >= 0)
        .ok_or_else(io::Error::last_os_error)?;
    // SAFETY: a descriptor just returned to us and owned by no one else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// `waitid(P_PID, pid, WEXITED | WNOHANG | WNOWAIT)`: the status of the
/// child `pid` once it has exited, which stays a zombie (its PID is not
/// freed); `None` while it runs. Retried when interrupted.
pub fn peek_exited(pid: libc::pid_t) -> io::Result<Option<ExitStatus>> {
    let id = libc::id_t::try_from(pid).map_err(io::Error::other)?;
    loop {
        // SAFETY: all zeroes is a valid siginfo_t (plain data), and the
        // "not exited" answer of WNOHANG (si_pid 0).
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t that outlives the
        // call; WNOWAIT leaves the child as it is.
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
        // SAFETY: waitid filled in a SIGCHLD-style siginfo, whose union
        // holds si_pid and si_status (or left it zeroed, pid 0, when the
        // child has not exited).
        let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
        if pid == 0 {
            return Ok(None);
        }
        return Ok(Some(ExitStatus::from_raw(wait_status(
            info.si_code,
            status,
        ))));
    }
}

/// A `waitid` report (`si_code`, `si_status`) back into the wait status
/// std decodes.
fn wait_status(code: libc::c_int, status: libc::c_int) -> libc::c_int {
    match code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_DUMPED => (status & 0x7f) | 0x80,
        _ => status & 0x7f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waitid_report_decodes_as_the_wait_status_it_was() {
        let exited = ExitStatus::from_raw(wait_status(libc::CLD_EXITED, 3));
        assert_eq!(exited.code(), Some(3));
        let killed = ExitStatus::from_raw(wait_status(libc::CLD_KILLED, libc::SIGKILL));
        assert_eq!(killed.signal(), Some(libc::SIGKILL));
        let dumped = ExitStatus::from_raw(wait_status(libc::CLD_DUMPED, libc::SIGSEGV));
        assert_eq!(dumped.signal(), Some(libc::SIGSEGV));
        assert!(dumped.core_dumped());
    }

    #[test]
    fn a_signal_to_our_own_group_or_everyone_is_refused() {
        for pid in [0, -1, -5] {
            assert_eq!(
                kill(pid, 0).map_err(|error| error.kind()),
                Err(io::ErrorKind::InvalidInput)
            );
            assert_eq!(
                kill_group(pid, 0).map_err(|error| error.kind()),
                Err(io::ErrorKind::InvalidInput)
            );
        }
        assert!(kill(libc::pid_t::try_from(std::process::id()).expect("pid"), 0).is_ok());
    }
}

//! Descriptor flags and readiness: close-on-exec marked on descriptors this
//! process holds (one, a range, every one above stdio) and `poll` for input.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

/// Marks the descriptor numbered `fd` close-on-exec if it is open and not
/// already marked; a number that is not open is left alone.
///
/// Takes a number rather than a borrowed descriptor because it is meant
/// for descriptors nobody in this process owns: the ones inherited at
/// start. Only the flag changes, never the descriptor, so no owner's use
/// of it within this process is affected.
pub fn mark_cloexec(fd: RawFd) {
    // SAFETY: F_GETFD/F_SETFD on a descriptor number only read and set its
    // flags and touch no memory of ours; on one that is not open they fail
    // with EBADF.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}

/// `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)`: every descriptor above 2
/// marked close-on-exec in one call; false where the kernel (before 5.11)
/// or a seccomp filter refuses it.
///
/// Async-signal-safe: one plain system call, no allocation (may run
/// between fork and exec).
#[cfg(target_os = "linux")]
pub fn close_range_cloexec() -> bool {
    // SAFETY: close_range takes plain integers and touches no memory of
    // ours; on failure it changes nothing.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    rc == 0
}

/// Sets close-on-exec on every descriptor from 3 up to (not including)
/// `limit`, one `fcntl` each: the fallback when [`close_range_cloexec`] is
/// refused. FD_CLOEXEC is the only descriptor flag, so setting it whole
/// loses nothing.
///
/// Async-signal-safe: plain system calls, no allocation (may run between
/// fork and exec).
pub fn set_cloexec_below(limit: RawFd) {
    for fd in 3..limit {
        // SAFETY: F_SETFD on a descriptor number touches no memory of ours;
        // on one that is not open it fails with EBADF and has no effect.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
}

/// Waits at most `timeout` (whole milliseconds, saturating) for `fd` to be
/// readable, hung up or in error: `Ok(true)` when it is, `Ok(false)` when
/// the time ran out. An interrupted wait is `Err` of kind `Interrupted`,
/// for the caller to decide about.
pub fn poll_readable(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let mut pollfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: `pollfd` is a valid, exclusively borrowed array of length 1,
    // and its descriptor stays open for the call since `fd` borrows it.
    let ready = unsafe { libc::poll(&mut pollfd, 1, ms) };
    match ready {
        0 => Ok(false),
        n if n > 0 => Ok(true),
        _ => Err(io::Error::last_os_error()),
    }
}

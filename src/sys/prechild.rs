//! What runs in a forked child before `execve`: the image `execve` is
//! handed, made before the fork, and the hook that sets the child up and
//! replaces it. Only async-signal-safe calls run in the child (see the
//! list in [`crate::sys`]): the fork copied one thread of a process whose
//! other threads may have held the allocator's lock.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// A program, its argv and its whole environment as `execve` takes them,
/// made before the fork so the child only has to make the call.
pub struct ExecImage {
    /// The strings the pointers point into: argv's, then envp's.
    _strings: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

// SAFETY: the pointers point into the heap buffers of the `CString`s the
// image owns, which neither move nor change while it lives (moving a
// CString does not move its buffer); they are only read, by `execve`.
unsafe impl Send for ExecImage {}
// SAFETY: as above: shared access only ever reads.
unsafe impl Sync for ExecImage {}

impl ExecImage {
    /// The image of `argv` (the program's path first) and `envp`
    /// (`KEY=VALUE` strings), each array ended by a null pointer.
    pub fn new(argv: Vec<CString>, envp: Vec<CString>) -> ExecImage {
        let pointers = |strings: &[CString]| {
            strings
                .iter()
                .map(|string| string.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect::<Vec<_>>()
        };
        let (argv_pointers, envp_pointers) = (pointers(&argv), pointers(&envp));
        let mut strings = argv;
        strings.extend(envp);
        ExecImage {
            _strings: strings,
            argv: argv_pointers,
            envp: envp_pointers,
        }
    }

    /// `execve(argv[0], argv, envp)`: replaces the process; returns only
    /// the error of a failed call (`EINVAL` for an empty argv).
    ///
    /// Async-signal-safe: one system call, no allocation (may run between
    /// fork and exec).
    pub fn exec(&self) -> io::Error {
        let program = self.argv[0];
        if program.is_null() {
            return io::Error::from_raw_os_error(libc::EINVAL);
        }
        // SAFETY: every pointer is valid and NUL-terminated, each array ends
        // in a null pointer, and all of it outlives the call (which returns
        // only on failure).
        unsafe { libc::execve(program, self.argv.as_ptr(), self.envp.as_ptr()) };
        io::Error::last_os_error()
    }
}

/// `prctl(PR_SET_PDEATHSIG, signal)`: the calling process gets `signal`
/// when its parent thread dies.
///
/// Async-signal-safe: one system call, no allocation (may run between fork
/// and exec).
#[cfg(target_os = "linux")]
pub fn set_parent_death_signal(signal: libc::c_int) -> io::Result<()> {
    let signal =
        libc::c_ulong::try_from(signal).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes plain integers and touches no
    // memory of ours.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `getppid()`: the parent's PID.
///
/// Async-signal-safe: one system call, no allocation (may run between fork
/// and exec).
pub fn parent_pid() -> libc::pid_t {
    // SAFETY: getppid has no preconditions and cannot fail.
    unsafe { libc::getppid() }
}

/// Sets `command` to be replaced by `image` in the forked child, after
/// (on Linux) `PR_SET_PDEATHSIG` = SIGKILL, so the child does not outlive
/// this process, and every descriptor above 2 marked close-on-exec
/// (`close_range`, else `fcntl` on each below `fd_limit`). When this
/// process died before the death signal took effect, no signal will ever
/// come: the child sees itself reparented and gives up with `ESRCH`.
/// Close-on-exec rather than close, so std's own exec-error pipe keeps
/// working: a failed `execve` reaches the caller as std's spawn error.
///
/// std's own exec never runs (its `execvp` would hand a file the kernel
/// refuses as `ENOEXEC` to `/bin/sh`); what std set up before the hook
/// (the process group, the standard descriptors, the signal mask reset)
/// stands.
pub fn exec_in_child(command: &mut Command, image: ExecImage, fd_limit: RawFd) {
    #[cfg(target_os = "linux")]
    // SAFETY: getpid has no preconditions and cannot fail.
    let parent = unsafe { libc::getpid() };
    #[cfg(not(target_os = "linux"))]
    let _ = fd_limit;
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe work is allowed. It calls only the functions the
    // room's doc lists for this place (`prctl`, `getppid`, `close_range`,
    // `fcntl` and `execve`: plain system calls), reads what the parent
    // built before the fork, and builds its errors from raw errnos, which
    // does not allocate.
    unsafe {
        command.pre_exec(move || {
            #[cfg(target_os = "linux")]
            {
                set_parent_death_signal(libc::SIGKILL)?;
                if parent_pid() != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                if !super::fd::close_range_cloexec() {
                    super::fd::set_cloexec_below(fd_limit);
                }
            }
            Err(image.exec())
        });
    }
}

/// Sets `command`'s child to start with SIGCHLD ignored, as cron may start
/// a job (an ignored disposition survives `execve`): for the test that
/// checks the repair. `signal` is async-signal-safe.
#[cfg(test)]
pub fn ignore_sigchld_in_child(command: &mut Command) {
    // SAFETY: the closure makes one async-signal-safe call, `signal`, and
    // allocates nothing.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGCHLD, libc::SIG_IGN);
            Ok(())
        });
    }
}

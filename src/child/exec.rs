//! What is done before the fork and in the forked child before `execve`:
//! the descriptors `rch` and its ssh helpers must not inherit, the image
//! `execve` is handed (so no file the kernel refuses is ever run by a
//! shell), and the [`Command`] that carries both, in a process group of
//! its own with `PR_SET_PDEATHSIG` set on Linux.

use super::{Capture, ChildSpec};
use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// Marks every descriptor above 2 that this process holds at start
/// close-on-exec, so none it inherited (from cron, a CI runner, a shell)
/// reaches `rch` or its ssh helpers. Call once, first thing in `main`,
/// before any descriptor of our own exists (ours are close-on-exec anyway).
///
/// The open descriptors are listed from `/proc/self/fd`, so the guarantee
/// depends neither on `close_range` (kernels before 5.11, seccomp filters
/// that refuse it) nor on `RLIMIT_NOFILE`: a descriptor inherited above a
/// soft limit that was lowered afterwards is listed there like any other.
/// Without `/proc`, `close_range` is tried, then every descriptor up to the
/// hard limit.
pub fn cloexec_inherited() {
    let mark = |fd: libc::c_int| {
        // SAFETY: F_GETFD/F_SETFD on a descriptor number only read and set
        // its flags; on one that is not open they fail with EBADF.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    };
    if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
        // Collected first: the listing's own descriptor is open meanwhile
        // (close-on-exec already, so marking it too would be harmless).
        let fds: Vec<libc::c_int> = entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
            .filter(|fd| *fd > 2)
            .collect();
        for fd in fds {
            mark(fd);
        }
        return;
    }
    #[cfg(target_os = "linux")]
    if close_range_cloexec() {
        return;
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit for the call.
    let hard = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_max.min(1 << 20)
    } else {
        1 << 20
    };
    for fd in 3..libc::c_int::try_from(hard).unwrap_or(1 << 20) {
        mark(fd);
    }
}

/// The soft limit on open descriptors: above it no descriptor can be open.
/// Read before forking, since the child may only make plain syscalls.
#[cfg(target_os = "linux")]
fn open_file_limit() -> libc::c_int {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit for the call.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if rc != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return 1 << 20; // Linux's own ceiling (fs.nr_open default).
    }
    libc::c_int::try_from(limit.rlim_cur).unwrap_or(libc::c_int::MAX)
}

/// `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)`: every descriptor above 2
/// marked close-on-exec in one call; false where the kernel (before 5.11)
/// or a seccomp filter refuses it. A plain syscall, so also for the forked
/// child.
#[cfg(target_os = "linux")]
fn close_range_cloexec() -> bool {
    // SAFETY: close_range takes plain integers; on failure it changes nothing.
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

/// Marks every descriptor but 0, 1 and 2 close-on-exec, in the forked child.
/// rch-sweep may itself have inherited descriptors (from cron, a CI runner,
/// a shell) that `rch` and its ssh helpers must not see. Close-on-exec
/// rather than close, so std's own exec-error pipe keeps working. Kernels
/// before 5.11 lack `CLOSE_RANGE_CLOEXEC`: then each descriptor up to the
/// limit is marked with `fcntl`, which is slower but equally safe.
///
/// # Safety
/// Only for a `pre_exec` closure: it makes raw syscalls and nothing else.
#[cfg(target_os = "linux")]
unsafe fn cloexec_above_stdio(fd_limit: libc::c_int) {
    if close_range_cloexec() {
        return;
    }
    for fd in 3..fd_limit {
        // SAFETY: F_SETFD on a descriptor that is not open fails with EBADF
        // and has no other effect; FD_CLOEXEC is the only descriptor flag.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
}

/// The program, its argv and its whole environment, made ready before the
/// fork so the child only has to call `execve`.
///
/// std's own exec is `execvp`, and glibc's `execvp` hands a file the kernel
/// refuses as `ENOEXEC` (no `#!`, another architecture's binary, random
/// bytes) to `/bin/sh`: a broken `rch` would then "start" and fail every
/// lease it is given, each charged a failure and hours of backoff. Called
/// directly, `execve` fails, std reports its errno as a spawn error, and
/// the run knows the host is at fault (SPEC One recovery, step 2).
struct ExecImage {
    /// `argv[0]` (the program's path) first, then the arguments, then the
    /// environment's `KEY=VALUE` pairs.
    _strings: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

// SAFETY: the pointers point into the heap buffers of the `CString`s the
// image owns, which neither move nor change while it lives; they are only
// read, by `execve` in the forked child.
unsafe impl Send for ExecImage {}
// SAFETY: as above: shared access only ever reads.
unsafe impl Sync for ExecImage {}

impl ExecImage {
    fn new(spec: &ChildSpec<'_>) -> io::Result<ExecImage> {
        let c_string = |bytes: &[u8]| {
            CString::new(bytes).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the command")
            })
        };
        let mut strings = vec![c_string(spec.program.as_os_str().as_bytes())?];
        for arg in spec.args {
            strings.push(c_string(arg.as_bytes())?);
        }
        let argc = strings.len();
        // This process's environment with `spec.env` laid over it, as std
        // would have built it.
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(key, _)| !spec.env.iter().any(|(set, _)| set == key))
            .collect();
        env.extend(spec.env.iter().cloned());
        for (key, value) in &env {
            let mut pair = key.as_bytes().to_vec();
            pair.push(b'=');
            pair.extend_from_slice(value.as_bytes());
            strings.push(c_string(&pair)?);
        }
        let pointers = |range: &[CString]| {
            range
                .iter()
                .map(|string| string.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect::<Vec<_>>()
        };
        let argv = pointers(&strings[..argc]);
        let envp = pointers(&strings[argc..]);
        Ok(ExecImage {
            _strings: strings,
            argv,
            envp,
        })
    }

    /// Replaces the process; returns only the error of a failed `execve`.
    fn exec(&self) -> io::Error {
        // SAFETY: every pointer is valid and NUL-terminated, each array ends
        // in a null pointer, and all of it outlives the call.
        unsafe { libc::execve(self.argv[0], self.argv.as_ptr(), self.envp.as_ptr()) };
        io::Error::last_os_error()
    }
}

/// The command that starts `spec` in a process group of its own, stdin
/// from `/dev/null`, the output `capture` names piped and the other to
/// `/dev/null`. The program, argv and environment that count are the
/// image's: its `execve` in `pre_exec` replaces the child before std's own
/// exec. On Linux the child also gets `PR_SET_PDEATHSIG`, so it does not
/// outlive a crashed sweeper, and inherits no descriptor above 2.
pub(super) fn command(spec: &ChildSpec<'_>, capture: Capture) -> io::Result<Command> {
    let mut command = Command::new(spec.program);
    command
        .args(spec.args)
        .stdin(Stdio::null())
        .process_group(0);
    match capture {
        Capture::Stderr => command.stdout(Stdio::null()).stderr(Stdio::piped()),
        Capture::Stdout => command.stdout(Stdio::piped()).stderr(Stdio::null()),
        Capture::StdoutAndStderr => command.stdout(Stdio::piped()).stderr(Stdio::piped()),
    };
    let image = ExecImage::new(spec)?;
    #[cfg(target_os = "linux")]
    // SAFETY: getpid has no preconditions and cannot fail.
    let parent = unsafe { libc::getpid() };
    #[cfg(target_os = "linux")]
    let fd_limit = open_file_limit();
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe work is allowed. It calls only `prctl`, `getppid`,
    // `close_range`, `fcntl` and `execve` (all plain syscalls), reads what
    // the parent built before the fork, and builds its errors from raw
    // errnos, which does not allocate.
    unsafe {
        command.pre_exec(move || {
            #[cfg(target_os = "linux")]
            {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // If the parent died before prctl took effect, no signal will
                // ever come: we have been reparented, so give up now.
                if libc::getppid() != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                cloexec_above_stdio(fd_limit);
            }
            Err(image.exec())
        });
    }
    Ok(command)
}

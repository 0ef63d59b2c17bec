//! What is done before the fork and in the forked child before `execve`:
//! the descriptors `rch` and its ssh helpers must not inherit, the image
//! `execve` is handed (so no file the kernel refuses is ever run by a
//! shell), and the [`Command`] that carries both, in a process group of
//! its own with `PR_SET_PDEATHSIG` set on Linux. The calls the forked child
//! makes are `sys::prechild`'s, the only code that runs there.

use super::{Capture, ChildSpec};
use crate::sys;
use crate::sys::prechild::ExecImage;
use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::RawFd;
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
    if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
        // Collected first: the listing's own descriptor is open meanwhile
        // (close-on-exec already, so marking it too would be harmless).
        let fds: Vec<RawFd> = entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
            .filter(|fd| *fd > 2)
            .collect();
        for fd in fds {
            sys::fd::mark_cloexec(fd);
        }
        return;
    }
    #[cfg(target_os = "linux")]
    if sys::fd::close_range_cloexec() {
        return;
    }
    let hard = match sys::process::open_file_limit() {
        Ok(limit) => limit.rlim_max.min(1 << 20),
        Err(_) => 1 << 20,
    };
    for fd in 3..RawFd::try_from(hard).unwrap_or(1 << 20) {
        sys::fd::mark_cloexec(fd);
    }
}

/// The soft limit on open descriptors: above it no descriptor can be open.
/// Read before forking, since the child may only make plain syscalls.
fn open_file_limit() -> RawFd {
    match sys::process::open_file_limit() {
        Ok(limit) if limit.rlim_cur != libc::RLIM_INFINITY => {
            RawFd::try_from(limit.rlim_cur).unwrap_or(RawFd::MAX)
        }
        _ => 1 << 20, // Linux's own ceiling (fs.nr_open default).
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
fn exec_image(spec: &ChildSpec<'_>) -> io::Result<ExecImage> {
    let c_string = |bytes: &[u8]| {
        CString::new(bytes)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the command"))
    };
    let mut argv = vec![c_string(spec.program.as_os_str().as_bytes())?];
    for arg in spec.args {
        argv.push(c_string(arg.as_bytes())?);
    }
    // This process's environment without `spec.remove`, with `spec.env`
    // laid over it, as std would have built it.
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(key, _)| !spec.env.iter().any(|(set, _)| set == key))
        .filter(|(key, _)| !spec.remove.iter().any(|name| key == name))
        .collect();
    env.extend(spec.env.iter().cloned());
    let mut envp = Vec::with_capacity(env.len());
    for (key, value) in &env {
        let mut pair = key.as_bytes().to_vec();
        pair.push(b'=');
        pair.extend_from_slice(value.as_bytes());
        envp.push(c_string(&pair)?);
    }
    Ok(ExecImage::new(argv, envp))
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
    sys::prechild::exec_in_child(&mut command, exec_image(spec)?, open_file_limit());
    Ok(command)
}

//! Running one recovery child to completion under a single deadline.
//!
//! This module owns everything about the child process and nothing about
//! what it does: spawning, stderr capture, waiting, killing and reaping.
//! The child it runs (`rch jobs recover ...`) is not trusted to behave: it may
//! write gigabytes to stderr, hang, or exit while a grandchild keeps its stderr
//! pipe open. Three decisions follow from that:
//!
//! * **One deadline** covers both the child's exit and stderr EOF. Waiting for
//!   exit alone would report success while a grandchild still writes into the
//!   pipe; waiting for EOF alone would hang on a child that never closes it.
//! * **A bounded tail**: stderr is drained continuously (so the child never
//!   blocks on a full pipe) into a fixed ring of [`TAIL_BYTES`], so memory stays
//!   flat however much the child writes, and the last words, which are the ones
//!   that explain a failure, are kept.
//! * **Group kill**: the child runs in a process group of its own, and on a
//!   timeout or interruption the whole group is killed, so helpers it forked
//!   die with it and release the pipe. On Linux the child also gets
//!   `PR_SET_PDEATHSIG`, so it does not outlive a crashed sweeper.

use std::ffi::{CString, OsString};
use std::fmt;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

/// How much of the end of stderr is kept for the report.
pub const TAIL_BYTES: usize = 16 * 1024;

/// How long to wait for the direct child to be reaped after SIGKILL. A process
/// stuck in uninterruptible sleep may outlast it; we report that rather than
/// hang.
pub const REAP_TIMEOUT: Duration = Duration::from_secs(5);

/// How many characters of the stderr tail go into an error message: enough
/// for the final error line and some context, short enough for a report line.
pub const DIAGNOSTIC_CHARS: usize = 400;

/// Longest single wait, so `stop` is seen promptly.
const POLL_SLICE: Duration = Duration::from_millis(50);

/// How long the drain thread blocks in `poll` before re-checking its abandon
/// flag; bounds how long joining an abandoned drain thread can take.
const DRAIN_POLL_MS: libc::c_int = 100;

/// Size of the stack buffer stderr is read into.
const CHUNK_BYTES: usize = 64 * 1024;

/// After the group is killed every holder of the pipe inside it is dead, so EOF
/// comes almost at once; this only waits out the kernel tearing them down. A
/// holder that escaped the group (e.g. via `setsid`) is not waited for longer.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// What to run. `env` is added to the inherited environment rather than
/// replacing it, so the child sees the same `PATH`, `HOME` etc. as the sweeper.
pub struct ChildSpec<'a> {
    pub program: &'a Path,
    pub args: &'a [OsString],
    pub env: &'a [(OsString, OsString)],
}

/// How the run ended.
#[derive(Debug)]
pub enum Ending {
    /// Exited (or was killed by a signal not ours) before the deadline, and
    /// stderr reached EOF before it too.
    Exited(ExitStatus),
    /// The deadline passed before both exit and stderr EOF.
    TimedOut,
    /// `stop()` returned true before both exit and stderr EOF.
    Interrupted,
}

/// Everything the caller needs to report on one run.
#[derive(Debug)]
pub struct ChildReport {
    /// The direct child's pid, which is also its process group id.
    pub pid: u32,
    pub ending: Ending,
    /// The last `<= TAIL_BYTES` bytes of the captured output (stderr, or
    /// stdout for a probe), in order.
    pub tail: Vec<u8>,
    /// With [`Capture::StdoutAndStderr`], the last `<= TAIL_BYTES` bytes of
    /// stderr; empty otherwise.
    pub stderr_tail: Vec<u8>,
    pub elapsed: Duration,
    /// The deadline the child ran under, for the message.
    pub deadline: Duration,
    /// False only when the direct child could not be reaped within
    /// [`REAP_TIMEOUT`] after the kill: it may still be alive.
    pub reap_confirmed: bool,
}

impl ChildReport {
    /// `None` when the child exited 0 in time; otherwise the error text for a
    /// report, ending with the stderr diagnostic when there is one, since that
    /// is usually the only explanation of what went wrong.
    pub fn error(&self) -> Option<String> {
        let mut message = match &self.ending {
            Ending::Exited(status) if status.success() => return None,
            Ending::Exited(status) => status.to_string(),
            Ending::TimedOut => format!(
                "timed out after {}ms waiting for child exit and diagnostic EOF",
                self.deadline.as_millis()
            ),
            Ending::Interrupted => "interrupted before the child finished".to_owned(),
        };
        if !self.reap_confirmed {
            message.push_str("; child reap remains unconfirmed");
        }
        let diagnostic = diagnostic(&self.tail);
        if !diagnostic.is_empty() {
            message.push_str(": ");
            message.push_str(&diagnostic);
        }
        Some(message)
    }
}

/// The end of stderr as one short printable string. The tail was cut at an
/// arbitrary byte, so it may start inside a UTF-8 sequence; those leading
/// continuation bytes are dropped and anything else that is not UTF-8 is
/// replaced, so a binary or truncated tail still prints. Control characters
/// are replaced too: the text reaches terminals and the state file.
pub fn diagnostic(tail: &[u8]) -> String {
    // A UTF-8 sequence has at most three continuation bytes after its lead.
    let cut = tail
        .iter()
        .take(3)
        .take_while(|&&b| (0x80..=0xBF).contains(&b))
        .count();
    let text = String::from_utf8_lossy(&tail[cut..]);
    let text = text.trim();
    let start = text
        .char_indices()
        .rev()
        .nth(DIAGNOSTIC_CHARS - 1)
        .map_or(0, |(index, _)| index);
    crate::log::printable(text[start..].trim_start()).into_owned()
}

/// The last line of stderr, printable: what a shell or `env` says when the
/// program a wrapper execs cannot be run (`exec: rch-bin: not found`).
pub fn last_line(tail: &[u8]) -> String {
    diagnostic(tail)
        .lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty())
        .unwrap_or_default()
        .to_owned()
}

/// The child could not be started at all, as opposed to a child that ran and
/// failed: the caller reports it as a configuration problem, not a recovery
/// failure.
#[derive(Debug)]
pub struct SpawnError {
    pub program: PathBuf,
    pub source: io::Error,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot run {}: {}", self.program.display(), self.source)
    }
}

/// `source()` is deliberately left `None`: the io error is already part of the
/// Display text, and returning it too would print it twice in error chains.
impl std::error::Error for SpawnError {}

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
    {
        // SAFETY: close_range takes plain integers; on failure it changes nothing.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if rc == 0 {
            return;
        }
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
    // SAFETY: close_range takes plain integers; on failure it changes nothing.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if rc == 0 {
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
    /// argv[0] (the program's path) first, then the arguments, then the
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

/// Runs the child to completion under `deadline`, which covers both its exit
/// and the EOF of its stderr, and kills its whole process group when the
/// deadline passes or `stop` (polled about every 50 ms) returns true.
///
/// The thread that calls `run` must live until the child is reaped: on Linux
/// the child gets `PR_SET_PDEATHSIG`, which fires when the *thread* that
/// spawned it exits, not the process. `run` blocks until the child is reaped
/// (or reaping is given up after [`REAP_TIMEOUT`]), so a thread per recovery
/// that calls `run` itself satisfies this; spawning from a short-lived helper
/// thread and waiting elsewhere would get the child killed when it exits.
///
/// Every thread it starts is joined before it returns.
pub fn run(
    spec: &ChildSpec<'_>,
    deadline: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<ChildReport, SpawnError> {
    run_capturing(spec, Capture::Stderr, deadline, stop)
}

/// Which of the child's outputs is drained into the report's tail; the
/// other goes to `/dev/null`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capture {
    /// A recovery: its diagnostics explain a failure.
    Stderr,
    /// A probe such as `rch --version`: its answer is on stdout.
    Stdout,
    /// A probe whose failure needs explaining: its answer in `tail`, the end
    /// of its stderr in `stderr_tail` (a shim that exits 127 says there
    /// which program it did not find).
    StdoutAndStderr,
}

/// [`run`], draining the output `capture` names instead of stderr.
pub fn run_capturing(
    spec: &ChildSpec<'_>,
    capture: Capture,
    deadline: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<ChildReport, SpawnError> {
    let start = Instant::now();
    let spawn_error = |source| SpawnError {
        program: spec.program.to_path_buf(),
        source,
    };

    // The program, argv and environment that count are the image's: its
    // `execve` in `pre_exec` replaces the child before std's own exec.
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
    let image = ExecImage::new(spec).map_err(spawn_error)?;
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

    let mut child = command.spawn().map_err(spawn_error)?;
    let pid = child.id();
    let (pipe, second) = match capture {
        Capture::Stderr => (child.stderr.take().map(std::os::fd::OwnedFd::from), None),
        Capture::Stdout => (child.stdout.take().map(std::os::fd::OwnedFd::from), None),
        Capture::StdoutAndStderr => (
            child.stdout.take().map(std::os::fd::OwnedFd::from),
            child.stderr.take().map(std::os::fd::OwnedFd::from),
        ),
    };
    let Some(pipe) = pipe.map(std::fs::File::from) else {
        // Cannot happen with Stdio::piped, but the child must not leak if it does.
        kill_group(pid);
        reap(&mut child, &ExitWatch::new(pid));
        return Err(spawn_error(io::Error::other(
            "child output was not captured",
        )));
    };

    let second = second.map(std::fs::File::from);
    // EOF on every captured pipe counts; each drain thread reports its own.
    let pipes = 1 + usize::from(second.is_some());
    let abandon = AtomicBool::new(false);
    thread::scope(|scope| {
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let abandon = &abandon;
        let spawn_drain = |source: std::fs::File, done: mpsc::Sender<()>| {
            thread::Builder::new()
                .name("child-stderr".to_owned())
                .spawn_scoped(scope, move || {
                    let tail = drain(source, abandon);
                    // The receiver may be gone only if the waiting side panicked.
                    let _ = done.send(());
                    tail
                })
        };
        let drainers = spawn_drain(pipe, done_tx.clone()).and_then(|first| {
            second
                .map(|source| spawn_drain(source, done_tx.clone()))
                .transpose()
                .map(|second| (first, second))
        });
        // Only the drain threads may keep the channel open: once both are
        // gone, a disconnect means every pipe is done.
        drop(done_tx);
        let (drainer, second_drainer) = match drainers {
            Ok(handles) => handles,
            Err(error) => {
                // Each pipe was moved into a closure that either failed to
                // start (and closed it) or runs and ends at the abandon flag;
                // kill the child rather than leave it unwatched.
                kill_group(pid);
                reap(&mut child, &ExitWatch::new(pid));
                abandon.store(true, Ordering::Release);
                return Err(spawn_error(error));
            }
        };
        // Should `stop` panic, the scope would wait for the drain thread,
        // which waits for a child nobody kills: the guard kills and abandons.
        let mut guard = Teardown {
            pid,
            abandon,
            armed: true,
        };

        // The direct child is never reaped before its group has been dealt
        // with: while it is unreaped (running or a zombie) its PID, and so
        // its process-group id, cannot be given to another process.
        let exit = ExitWatch::new(pid);
        // Set once the child has exited; it stays unreaped until below.
        let mut status: Option<ExitStatus> = None;
        let mut eof = false;
        let mut open_pipes = pipes;
        let ending = loop {
            let slice = deadline.saturating_sub(start.elapsed()).min(POLL_SLICE);
            if status.is_none() {
                match exit.wait(slice) {
                    Ok(exited) => status = exited,
                    // Not expected (it would take ECHILD); keep trying at the
                    // same pace until the deadline rather than spin.
                    Err(_) => thread::sleep(slice),
                }
            } else if !eof {
                match done_rx.recv_timeout(slice) {
                    Ok(()) => {
                        open_pipes -= 1;
                        eof = open_pipes == 0;
                    }
                    Err(RecvTimeoutError::Disconnected) => eof = true,
                    Err(RecvTimeoutError::Timeout) => {}
                }
            }
            if let (Some(status), true) = (status, eof) {
                break Ending::Exited(status);
            }
            if stop() {
                break Ending::Interrupted;
            }
            if start.elapsed() >= deadline {
                break Ending::TimedOut;
            }
        };

        let mut reap_confirmed = true;
        let ending = if let Ending::Exited(status) = ending {
            // Done, and nothing of its group holds the pipe: reaped as it is.
            Ending::Exited(reap_exited(&mut child).unwrap_or(status))
        } else {
            // Exited or not, the direct child is still unreaped here, so
            // the group is still its own (SPEC "One recovery" step 4).
            kill_group(pid);
            reap_confirmed = reap(&mut child, &exit);
            // Either EOF arrives on every pipe or we stop waiting; both end
            // the same way.
            let grace = Instant::now() + DRAIN_GRACE;
            while !eof {
                match done_rx.recv_timeout(grace.saturating_duration_since(Instant::now())) {
                    Ok(()) => {
                        open_pipes -= 1;
                        eof = open_pipes == 0;
                    }
                    Err(_) => break,
                }
            }
            ending
        };
        guard.armed = false;
        abandon.store(true, Ordering::Release);
        // A panic in the drain thread would be a bug of ours; losing the tail
        // is better than taking the sweeper down with it.
        let tail = drainer.join().map(Tail::into_vec).unwrap_or_default();
        let stderr_tail = second_drainer
            .and_then(|handle| handle.join().ok())
            .map(Tail::into_vec)
            .unwrap_or_default();

        Ok(ChildReport {
            pid,
            ending,
            tail,
            stderr_tail,
            elapsed: start.elapsed(),
            deadline,
            reap_confirmed,
        })
    })
}

/// Kills and abandons on unwind, so a panicking `stop` cannot leave
/// `thread::scope` joining a drain thread that waits on a live child.
struct Teardown<'a> {
    pid: u32,
    abandon: &'a AtomicBool,
    armed: bool,
}

impl Drop for Teardown<'_> {
    fn drop(&mut self) {
        if self.armed {
            kill_group(self.pid);
            self.abandon.store(true, Ordering::Release);
        }
    }
}

/// SIGKILLs the process group whose id is `pid` (the child's own).
///
/// Only while the direct child is not yet reaped: then its PID cannot have
/// been given to another process, and so neither can its group id (a
/// process-group id is a PID). Once it is reaped, a helper that escaped the
/// group (`setsid`) leaves the group empty, the PID free, and an unrelated
/// process-group leader may take it; every caller kills before it reaps.
fn kill_group(pid: u32) {
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
struct ExitWatch {
    pid: libc::pid_t,
    #[cfg(target_os = "linux")]
    pidfd: Option<std::os::fd::OwnedFd>,
}

/// How often the exit is looked for when no pidfd is to be had.
const EXIT_POLL: Duration = Duration::from_millis(5);

impl ExitWatch {
    fn new(pid: u32) -> ExitWatch {
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
    fn wait(&self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
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
fn reap_exited(child: &mut Child) -> Option<ExitStatus> {
    child.try_wait().ok().flatten()
}

/// Waits for the killed direct child for at most [`REAP_TIMEOUT`], then
/// reaps it; true when it was reaped.
fn reap(child: &mut Child, exit: &ExitWatch) -> bool {
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

/// Reads `source` until EOF, a read error, or `abandon`, keeping only the tail.
///
/// It polls rather than blocks on `read` so that it can be told to give up: a
/// process that escaped the group kill (e.g. via `setsid`) may hold the pipe's
/// write end forever, and the thread must still be joinable.
fn drain<R: Read + AsFd>(mut source: R, abandon: &AtomicBool) -> Tail {
    let mut tail = Tail::new();
    let mut chunk = [0u8; CHUNK_BYTES];
    let fd = source.as_fd().as_raw_fd();
    while !abandon.load(Ordering::Acquire) {
        let mut pollfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pollfd` is a valid, exclusively borrowed array of length 1,
        // and `fd` stays open for the call since `source` owns it and outlives
        // this loop.
        let ready = unsafe { libc::poll(&mut pollfd, 1, DRAIN_POLL_MS) };
        if ready == 0 {
            continue;
        }
        if ready < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        // Readable, hung up or in error: `read` tells which.
        match source.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => tail.push(&chunk[..n]),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) => {}
            // Nothing more can be read; dropping the pipe makes any further
            // write by the child fail rather than block.
            Err(_) => break,
        }
    }
    tail
}

/// A ring holding the last [`TAIL_BYTES`] bytes pushed. Its buffer is allocated
/// once and never grows, however much is pushed.
struct Tail {
    buf: Vec<u8>,
    /// Index of the oldest byte once `buf` is full; 0 until then.
    start: usize,
}

impl Tail {
    fn new() -> Self {
        Tail {
            buf: Vec::with_capacity(TAIL_BYTES),
            start: 0,
        }
    }

    fn push(&mut self, mut data: &[u8]) {
        if data.len() >= TAIL_BYTES {
            // Only the last TAIL_BYTES of `data` survive anyway.
            self.buf.clear();
            self.buf.extend_from_slice(&data[data.len() - TAIL_BYTES..]);
            self.start = 0;
            return;
        }
        let fill = (TAIL_BYTES - self.buf.len()).min(data.len());
        self.buf.extend_from_slice(&data[..fill]);
        data = &data[fill..];
        while !data.is_empty() {
            let n = (TAIL_BYTES - self.start).min(data.len());
            self.buf[self.start..self.start + n].copy_from_slice(&data[..n]);
            self.start = (self.start + n) % TAIL_BYTES;
            data = &data[n..];
        }
    }

    /// The bytes in order, reusing the ring's own buffer.
    fn into_vec(self) -> Vec<u8> {
        let mut buf = self.buf;
        buf.rotate_left(self.start);
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn sh(script: &str) -> Vec<OsString> {
        vec!["-c".into(), script.into()]
    }

    fn run_sh(script: &str, env: &[(OsString, OsString)], deadline: Duration) -> ChildReport {
        let args = sh(script);
        let spec = ChildSpec {
            program: Path::new("/bin/sh"),
            args: &args,
            env,
        };
        run(&spec, deadline, &|| false).expect("/bin/sh spawns")
    }

    fn exit_code(report: &ChildReport) -> Option<i32> {
        match &report.ending {
            Ending::Exited(status) => status.code(),
            _ => None,
        }
    }

    fn proc_gone_or_zombie(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            // The state follows the parenthesised command name.
            Ok(stat) => stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z')),
        }
    }

    #[test]
    fn long_stderr_keeps_exact_tail_and_final_line() {
        let report = run_sh(
            "awk 'BEGIN { for (i=0; i<32768; i++) print \"0123456789abcdef\" }' >&2; \
             printf 'final recovery failure\\n' >&2; exit 7",
            &[],
            Duration::from_secs(20),
        );
        assert_eq!(exit_code(&report), Some(7), "{report:?}");
        assert_eq!(report.tail.len(), TAIL_BYTES);
        assert!(
            report
                .tail
                .ends_with(b"0123456789abcdef\nfinal recovery failure\n")
        );
        assert!(diagnostic(&report.tail).ends_with("final recovery failure"));
        let error = report.error().expect("non-zero exit is an error");
        assert!(error.starts_with("exit status: 7: "), "{error}");
        assert!(report.reap_confirmed);
    }

    #[test]
    fn huge_stderr_neither_blocks_nor_grows_the_tail() {
        let report = run_sh(
            "head -c 536870912 /dev/zero >&2; printf 'done\\n' >&2",
            &[],
            Duration::from_secs(60),
        );
        assert_eq!(exit_code(&report), Some(0), "{:?}", report.ending);
        // The report's tail is the ring's own buffer, so this is the ring's
        // capacity after 512 MiB went through it.
        assert_eq!(report.tail.capacity(), TAIL_BYTES);
        assert_eq!(report.tail.len(), TAIL_BYTES);
        assert!(report.tail.ends_with(b"\0done\n"));
    }

    #[test]
    fn ring_keeps_last_bytes_in_order_without_growing() {
        let mut tail = Tail::new();
        let mut all = Vec::new();
        let mut next = 0u8;
        for size in [1usize, 7, 5000, 16383, 2, 40000, 3, 16384, 9999, 1, 12345] {
            let chunk: Vec<u8> = (0..size)
                .map(|_| {
                    next = next.wrapping_add(1);
                    next
                })
                .collect();
            tail.push(&chunk);
            all.extend_from_slice(&chunk);
            assert_eq!(tail.buf.capacity(), TAIL_BYTES);
            let expected = &all[all.len().saturating_sub(TAIL_BYTES)..];
            let copy = Tail {
                buf: tail.buf.clone(),
                start: tail.start,
            };
            assert_eq!(copy.into_vec(), expected, "after a push of {size}");
        }
        assert_eq!(tail.into_vec().capacity(), TAIL_BYTES);
        let mut short = Tail::new();
        short.push(b"abc");
        short.push(b"def");
        assert_eq!(short.into_vec(), b"abcdef");
    }

    #[test]
    fn timeout_kills_and_reaps_the_child() {
        let started = Instant::now();
        let report = run_sh("exec sleep 30", &[], Duration::from_millis(100));
        assert!(matches!(report.ending, Ending::TimedOut), "{report:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(report.reap_confirmed);
        let error = report.error().expect("a timeout is an error");
        assert!(
            error.contains("timed out after 100ms waiting for child exit and diagnostic EOF"),
            "{error}"
        );
        // Reaped, so not even a zombie may remain.
        assert!(!Path::new(&format!("/proc/{}", report.pid)).exists());
    }

    #[test]
    fn grandchild_holding_stderr_is_bounded_and_killed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pidfile = dir.path().join("grandchild.pid");
        let env = [(OsString::from("PIDFILE"), pidfile.clone().into_os_string())];
        let started = Instant::now();
        let report = run_sh(
            "sleep 30 & echo $! > \"$PIDFILE\"; exit 0",
            &env,
            Duration::from_millis(300),
        );
        assert!(matches!(report.ending, Ending::TimedOut), "{report:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(report.reap_confirmed);
        let grandchild: u32 = std::fs::read_to_string(&pidfile)
            .expect("pid file")
            .trim()
            .parse()
            .expect("pid");
        let until = Instant::now() + Duration::from_secs(2);
        while !proc_gone_or_zombie(grandchild) && Instant::now() < until {
            thread::sleep(Duration::from_millis(20));
        }
        assert!(
            proc_gone_or_zombie(grandchild),
            "grandchild {grandchild} alive"
        );
    }

    #[test]
    fn escaped_pipe_holder_is_abandoned_not_waited_for() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pidfile = dir.path().join("escaped.pid");
        let env = [(OsString::from("PIDFILE"), pidfile.clone().into_os_string())];
        let started = Instant::now();
        let report = run_sh(
            "setsid sleep 30 & echo $! > \"$PIDFILE\"; exit 0",
            &env,
            Duration::from_millis(100),
        );
        let took = started.elapsed();
        let escaped: Option<libc::pid_t> = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|pid| pid.trim().parse().ok());
        if let Some(pid) = escaped.filter(|&pid| pid > 1) {
            // SAFETY: signals the test's own escaped sleep by its exact pid.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        assert!(matches!(report.ending, Ending::TimedOut), "{report:?}");
        assert!(escaped.is_some(), "pid file");
        // Deadline + drain grace + one drain poll, with slack.
        assert!(took < Duration::from_secs(3), "{took:?}");
    }

    /// Waits (bounded) until `watch` sees the child exit.
    fn exited(watch: &ExitWatch) -> ExitStatus {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = watch.wait(Duration::from_millis(50)).expect("waitid") {
                return status;
            }
            assert!(Instant::now() < until, "the child never exited");
        }
    }

    #[test]
    fn an_exit_is_seen_without_reaping_with_or_without_a_pidfd() {
        use std::os::unix::process::ExitStatusExt;
        for (script, code, signal) in [("exit 3", Some(3), None), ("kill -9 $$", None, Some(9))] {
            for pidfd in [true, false] {
                let mut child = Command::new("/bin/sh")
                    .args(["-c", script])
                    .spawn()
                    .expect("/bin/sh spawns");
                #[allow(unused_mut)]
                let mut watch = ExitWatch::new(child.id());
                #[cfg(target_os = "linux")]
                if !pidfd {
                    watch.pidfd = None;
                }
                let status = exited(&watch);
                assert_eq!((status.code(), status.signal()), (code, signal), "{script}");
                // Seen, and still a zombie: its PID is nobody else's yet.
                assert!(proc_gone_or_zombie(child.id()));
                assert!(Path::new(&format!("/proc/{}", child.id())).exists());
                assert_eq!(watch.wait(Duration::ZERO).expect("again"), Some(status));
                let reaped = reap_exited(&mut child).expect("reaped");
                assert_eq!(reaped, status);
                assert!(!Path::new(&format!("/proc/{}", child.id())).exists());
            }
        }
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let spec = ChildSpec {
            program: Path::new("/nonexistent/rch"),
            args: &[],
            env: &[],
        };
        let error = run(&spec, Duration::from_secs(1), &|| false).expect_err("no such program");
        assert_eq!(error.source.kind(), io::ErrorKind::NotFound);
        assert!(
            error
                .to_string()
                .starts_with("cannot run /nonexistent/rch: "),
            "{error}"
        );
    }

    #[test]
    fn diagnostic_prints_cut_tails_and_is_bounded() {
        let e_acute = "é".as_bytes();
        let mut cut = vec![e_acute[1]];
        cut.extend_from_slice(b"tail text");
        let text = diagnostic(&cut);
        assert!(text.ends_with("tail text"), "{text:?}");

        let mut invalid = vec![0xFFu8];
        invalid.extend_from_slice(b"after");
        assert_eq!(diagnostic(&invalid), "\u{FFFD}after");

        let text = diagnostic(&[b'x'; 1000]);
        assert_eq!(text.chars().count(), DIAGNOSTIC_CHARS);

        let wide = "é".repeat(1000);
        assert_eq!(
            diagnostic(wide.as_bytes()).chars().count(),
            DIAGNOSTIC_CHARS
        );

        assert_eq!(diagnostic(b"last line\n\n"), "last line");
        assert_eq!(diagnostic(b" \n"), "");
    }

    #[test]
    fn stop_interrupts_and_kills_the_child() {
        let stopped = Arc::new(AtomicBool::new(false));
        let setter = {
            let stopped = Arc::clone(&stopped);
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(100));
                stopped.store(true, Ordering::SeqCst);
            })
        };
        let args = sh("exec sleep 30");
        let spec = ChildSpec {
            program: Path::new("/bin/sh"),
            args: &args,
            env: &[],
        };
        let started = Instant::now();
        let report = run(&spec, Duration::from_secs(30), &|| {
            stopped.load(Ordering::SeqCst)
        })
        .expect("/bin/sh spawns");
        setter.join().expect("setter thread");
        assert!(matches!(report.ending, Ending::Interrupted), "{report:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(report.reap_confirmed);
        assert_eq!(
            report.error().as_deref(),
            Some("interrupted before the child finished")
        );
        assert!(!Path::new(&format!("/proc/{}", report.pid)).exists());
    }

    #[test]
    fn env_and_argv_reach_the_child_unchanged() {
        let env = [(OsString::from("SOME_VAR"), OsString::from("value from env"))];
        let report = run_sh(
            "printf '%s\\n' \"$SOME_VAR\" >&2",
            &env,
            Duration::from_secs(10),
        );
        assert_eq!(exit_code(&report), Some(0));
        assert_eq!(report.tail, b"value from env\n");

        let args: Vec<OsString> = vec![
            "-c".into(),
            "printf '%s\\n' \"$1\" >&2".into(),
            "sh".into(),
            "a b; c".into(),
        ];
        let spec = ChildSpec {
            program: Path::new("/bin/sh"),
            args: &args,
            env: &[],
        };
        let report = run(&spec, Duration::from_secs(10), &|| false).expect("/bin/sh spawns");
        assert_eq!(exit_code(&report), Some(0));
        assert_eq!(report.tail, b"a b; c\n");
    }

    #[test]
    fn clean_exit_is_no_error() {
        let report = run_sh(
            "printf 'chatter\\n' >&2; exit 0",
            &[],
            Duration::from_secs(10),
        );
        assert_eq!(exit_code(&report), Some(0));
        assert!(report.error().is_none());
        assert!(report.reap_confirmed);
        assert_eq!(report.deadline, Duration::from_secs(10));
        assert!(report.elapsed < report.deadline);
    }

    #[test]
    fn a_probe_captures_stdout_and_drops_stderr() {
        let args = sh("echo 'rch 2.1.24'; echo noise >&2");
        let spec = ChildSpec {
            program: Path::new("/bin/sh"),
            args: &args,
            env: &[],
        };
        let report = run_capturing(&spec, Capture::Stdout, Duration::from_secs(10), &|| false)
            .expect("/bin/sh spawns");
        assert_eq!(exit_code(&report), Some(0));
        assert_eq!(report.tail, b"rch 2.1.24\n");
        assert!(report.stderr_tail.is_empty());
    }

    #[test]
    fn a_probe_may_keep_both_outputs_apart() {
        // Stderr written after stdout closed, and much of it: both pipes are
        // drained to EOF before the report is made.
        let args = sh("echo 'rch 2.1.24'; exec >&-; \
             awk 'BEGIN { for (i=0; i<8192; i++) print \"noise\" }' >&2; \
             echo 'rch-real: not found' >&2; exit 127");
        let spec = ChildSpec {
            program: Path::new("/bin/sh"),
            args: &args,
            env: &[],
        };
        let report = run_capturing(
            &spec,
            Capture::StdoutAndStderr,
            Duration::from_secs(10),
            &|| false,
        )
        .expect("/bin/sh spawns");
        assert_eq!(exit_code(&report), Some(127), "{report:?}");
        assert_eq!(report.tail, b"rch 2.1.24\n");
        assert!(
            report
                .stderr_tail
                .ends_with(b"noise\nrch-real: not found\n")
        );
    }

    #[test]
    fn killed_by_foreign_signal_is_exited_with_signal_text() {
        let report = run_sh(
            "printf 'dying\\n' >&2; kill -9 $$",
            &[],
            Duration::from_secs(10),
        );
        let Ending::Exited(status) = report.ending else {
            panic!("{report:?}");
        };
        assert!(!status.success());
        let error = report.error().expect("a signal death is an error");
        assert!(error.starts_with("signal: 9"), "{error}");
        assert!(error.ends_with(": dying"), "{error}");
    }

    #[test]
    fn error_text_rules() {
        let mut report = ChildReport {
            pid: 1,
            ending: Ending::TimedOut,
            tail: Vec::new(),
            stderr_tail: Vec::new(),
            elapsed: Duration::ZERO,
            deadline: Duration::from_millis(1500),
            reap_confirmed: false,
        };
        assert_eq!(
            report.error().as_deref(),
            Some(
                "timed out after 1500ms waiting for child exit and diagnostic EOF; \
                 child reap remains unconfirmed"
            )
        );
        report.ending = Ending::Interrupted;
        report.reap_confirmed = true;
        report.tail = b"partial\n".to_vec();
        assert_eq!(
            report.error().as_deref(),
            Some("interrupted before the child finished: partial")
        );
    }

    const PROBE_ENV: &str = "CHILD_RS_SIGCHLD_PROBE";

    /// Runs only when re-executed by `reset_sigchld_repairs_inherited_ignore`,
    /// in a process that inherited SIGCHLD as ignored.
    #[test]
    #[ignore = "re-executed by reset_sigchld_repairs_inherited_ignore"]
    fn sigchld_ignored_probe() {
        if std::env::var_os(PROBE_ENV).is_none() {
            return;
        }
        reset_sigchld();
        let report = run_sh("exit 3", &[], Duration::from_secs(5));
        assert_eq!(exit_code(&report), Some(3), "{report:?}");
    }

    #[test]
    fn reset_sigchld_repairs_inherited_ignore() {
        let exe = std::env::current_exe().expect("test binary path");
        let mut probe = Command::new(exe);
        probe
            .args(["sigchld_ignored_probe", "--ignored", "--test-threads=1"])
            .env(PROBE_ENV, "1")
            .stdin(Stdio::null());
        // SAFETY: only `signal`, async-signal-safe, runs between fork and
        // exec; an ignored SIGCHLD survives exec, as it does from cron.
        unsafe {
            probe.pre_exec(|| {
                libc::signal(libc::SIGCHLD, libc::SIG_IGN);
                Ok(())
            });
        }
        let output = probe.output().expect("re-run the test binary");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "{}\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

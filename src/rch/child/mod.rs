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
//!
//! Its rooms, one a phase: `exec` (what is done before the fork and in
//! the forked child), `capture` (the drain threads and the bounded tail),
//! `wait` (the exit seen without a reap, the group kill, the reap); and
//! `diagnostic`, the tail made into the text of an error. This
//! file holds what a caller sees and [`run_capturing`], the phases in order.

mod capture;
mod diagnostic;
mod exec;
mod wait;

pub use diagnostic::{diagnostic, last_line, strip_escapes, usage_line};
pub use exec::cloexec_inherited;
pub use wait::reset_sigchld;

use capture::Drains;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};
use wait::ExitWatch;

/// How much of the end of stderr is kept for the report.
pub const TAIL_BYTES: usize = 16 * 1024;

/// How much of a probe's answer on stdout is kept ([`Capture::Stdout`]):
/// all of it up to this size (SPEC: rch's `daemon status` answer, at most
/// 64 KiB); [`ChildReport::tail_overflowed`] says when there was more.
pub const ANSWER_BYTES: usize = 64 * 1024;

/// How long to wait for the direct child to be reaped after SIGKILL. A process
/// stuck in uninterruptible sleep may outlast it; we report that rather than
/// hang.
pub const REAP_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest single wait, so `stop` is seen promptly.
const POLL_SLICE: Duration = Duration::from_millis(50);

/// After the group is killed every holder of the pipe inside it is dead, so EOF
/// comes almost at once; this only waits out the kernel tearing them down. A
/// holder that escaped the group (e.g. via `setsid`) is not waited for longer.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// What to run. `env` is added to the inherited environment rather than
/// replacing it, so the child sees the same `PATH`, `HOME` etc. as the
/// sweeper; the variables named in `remove` are taken out of it.
pub struct ChildSpec<'a> {
    pub program: &'a Path,
    pub args: &'a [OsString],
    pub env: &'a [(OsString, OsString)],
    pub remove: &'a [&'a str],
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
    /// The captured output was longer than `tail` keeps, so its start is
    /// lost: a probe's answer is then no answer.
    pub tail_overflowed: bool,
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

/// [`run`], draining the output `capture` names instead of stderr. The
/// phases in order: spawn (`exec`), the drain threads (`capture`), the
/// wait for exit and EOF under the deadline, then the kill and the reap
/// (`wait`).
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
    let mut child = exec::command(spec, capture)
        .and_then(|mut command| command.spawn())
        .map_err(spawn_error)?;
    let pid = child.id();
    let (first, second) = capture::take_pipes(&mut child, capture);
    let Some(first) = first else {
        // Cannot happen with Stdio::piped, but the child must not leak if it does.
        wait::kill_group(pid);
        wait::reap(&mut child, &ExitWatch::new(pid));
        return Err(spawn_error(io::Error::other(
            "child output was not captured",
        )));
    };
    let abandon = AtomicBool::new(false);
    thread::scope(|scope| {
        let mut drains = match Drains::start(
            scope,
            (first, capture::first_capacity(capture)),
            second,
            &abandon,
        ) {
            Ok(drains) => drains,
            Err(error) => {
                // Each pipe was moved into a thread that either failed to
                // start (and closed it) or runs and ends at the abandon flag;
                // kill the child rather than leave it unwatched.
                wait::kill_group(pid);
                wait::reap(&mut child, &ExitWatch::new(pid));
                abandon.store(true, Ordering::Release);
                return Err(spawn_error(error));
            }
        };
        // Should `stop` panic, the scope would wait for the drain thread,
        // which waits for a child nobody kills: the guard kills and abandons.
        let mut guard = Teardown {
            pid,
            abandon: &abandon,
            armed: true,
        };
        // The direct child is never reaped before its group has been dealt
        // with: while it is unreaped (running or a zombie) its PID, and so
        // its process-group id, cannot be given to another process.
        let exit = ExitWatch::new(pid);
        let ending = wait_for_end(&exit, &mut drains, start, deadline, stop);
        let (ending, reap_confirmed) = settle(&mut child, &exit, &mut drains, ending);
        guard.armed = false;
        let (tail, tail_overflowed, stderr_tail) = drains.finish();
        Ok(ChildReport {
            pid,
            ending,
            tail,
            tail_overflowed,
            stderr_tail,
            elapsed: start.elapsed(),
            deadline,
            reap_confirmed,
        })
    })
}

/// Waits for the child's exit, then for EOF on every pipe, in slices of at
/// most [`POLL_SLICE`] with `stop` asked between them, until both came or
/// the deadline passed. Whatever the ending, the child is left unreaped.
fn wait_for_end(
    exit: &ExitWatch,
    drains: &mut Drains<'_>,
    start: Instant,
    deadline: Duration,
    stop: &dyn Fn() -> bool,
) -> Ending {
    // Set once the child has exited; it stays unreaped until `settle`.
    let mut status: Option<ExitStatus> = None;
    loop {
        let slice = deadline.saturating_sub(start.elapsed()).min(POLL_SLICE);
        if status.is_none() {
            match exit.wait(slice) {
                Ok(exited) => status = exited,
                // Not expected (it would take ECHILD); keep trying at the
                // same pace until the deadline rather than spin.
                Err(_) => thread::sleep(slice),
            }
        } else if !drains.all_eof() {
            drains.wait_eof(slice);
        }
        if let (Some(status), true) = (status, drains.all_eof()) {
            return Ending::Exited(status);
        }
        if stop() {
            return Ending::Interrupted;
        }
        if start.elapsed() >= deadline {
            return Ending::TimedOut;
        }
    }
}

/// Ends what `ending` left: a child that exited with every pipe at EOF is
/// reaped as it is; any other has its group killed first, is reaped (for at
/// most [`REAP_TIMEOUT`]), and its pipes get [`DRAIN_GRACE`] to reach EOF.
/// The ending (with the status the reap gave), and whether the reap is
/// confirmed.
fn settle(
    child: &mut Child,
    exit: &ExitWatch,
    drains: &mut Drains<'_>,
    ending: Ending,
) -> (Ending, bool) {
    if let Ending::Exited(status) = ending {
        // Done, and nothing of its group holds the pipe: reaped as it is.
        return (
            Ending::Exited(wait::reap_exited(child).unwrap_or(status)),
            true,
        );
    }
    // Exited or not, the direct child is still unreaped here, so the group
    // is still its own (SPEC "One recovery" step 4).
    wait::kill_group(child.id());
    let reap_confirmed = wait::reap(child, exit);
    // Either EOF arrives on every pipe or we stop waiting; both end the
    // same way.
    let grace = Instant::now() + DRAIN_GRACE;
    while !drains.all_eof() && drains.wait_eof(grace.saturating_duration_since(Instant::now())) {}
    (ending, reap_confirmed)
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
            wait::kill_group(self.pid);
            self.abandon.store(true, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::wait::reap_exited;
    use super::*;
    use std::process::{Command, Stdio};
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
            remove: &[],
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
            // The test's own escaped sleep, by its exact pid.
            let _ = crate::sys::process::kill(pid, libc::SIGKILL);
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
            remove: &[],
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
            remove: &[],
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
            remove: &[],
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
            remove: &[],
        };
        let report = run_capturing(&spec, Capture::Stdout, Duration::from_secs(10), &|| false)
            .expect("/bin/sh spawns");
        assert_eq!(exit_code(&report), Some(0));
        assert_eq!(report.tail, b"rch 2.1.24\n");
        assert!(report.stderr_tail.is_empty());
    }

    #[test]
    fn a_probe_answer_is_kept_whole_up_to_64_kib_and_longer_is_said() {
        let run_awk = |bytes: usize| {
            let args = sh(&format!(
                "awk 'BEGIN {{ printf \"{{\"; for (i = 2; i < {bytes}; i++) printf \"x\"; printf \"}}\" }}'"
            ));
            let spec = ChildSpec {
                program: Path::new("/bin/sh"),
                args: &args,
                env: &[],
                remove: &[],
            };
            run_capturing(&spec, Capture::Stdout, Duration::from_secs(10), &|| false)
                .expect("/bin/sh spawns")
        };
        // More than the 16 KiB a diagnostic tail keeps: whole, first byte too.
        let report = run_awk(20 * 1024);
        assert_eq!(report.tail.len(), 20 * 1024);
        assert_eq!(report.tail.first(), Some(&b'{'));
        assert!(!report.tail_overflowed);
        let report = run_awk(ANSWER_BYTES);
        assert_eq!(
            (report.tail.len(), report.tail_overflowed),
            (ANSWER_BYTES, false)
        );
        let report = run_awk(ANSWER_BYTES + 1);
        assert!(report.tail_overflowed);
        assert_eq!(report.tail.len(), ANSWER_BYTES);
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
            remove: &[],
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
            tail_overflowed: false,
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
        // An ignored SIGCHLD survives exec, as it does from cron.
        crate::sys::prechild::ignore_sigchld_in_child(&mut probe);
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

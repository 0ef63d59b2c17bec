//! One recovery: read the journal again, refuse if its admission changed,
//! run `rch jobs recover`, and count success only when the journal read back
//! shows the delivery and the daemon's receipt.

use crate::child::{self, ChildSpec, Ending};
use crate::daemon;
use crate::exit::ExitCode;
use crate::judge;
use crate::lease::{DurableJobLease, ReadFailure};
use crate::lease_dir::{LeaseDir, recovery_lock};
use crate::rch_env;
use crate::shortage;
use crate::state::backoff::now_unix_ms;
use crate::verdict::Candidate;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const ADMISSION_CHANGED: &str =
    "recovery admission changed after scanning; client was not started";

/// What a recovery needs besides the candidate.
#[derive(Clone, Debug)]
pub struct Settings {
    pub rch: PathBuf,
    /// Handed to every child as `RCH_SOCKET_PATH`: the socket the run
    /// checked, so the daemon checked is the daemon used.
    pub socket: Option<PathBuf>,
    /// Set when the run checked rch's daemon at `socket` before it started
    /// anything: a failed recovery is then checked against it once more
    /// before the lease is charged (SPEC "rch's daemon", step 4).
    pub daemon_waits: Option<daemon::Waits>,
    /// Whose listener that check accepts: only this user's (or root's)
    /// for a socket `rch` named, anyone's for one the operator named.
    pub daemon_trust: daemon::Trust,
    /// The judged lease directory, symlinks resolved.
    pub lease_dir: PathBuf,
    /// The state home rch finds that directory in as `job-leases`: its
    /// parent, or, for storage moved behind a link, the link's parent.
    pub state_home: PathBuf,
    /// What a finished recovery leaves in the journal, by the release of
    /// the `rch` that runs it.
    pub completion: judge::Completion,
    /// Handed to the child as `--timeout-secs`.
    pub recover_timeout: Duration,
    /// Slack after the timeout before the child's group is killed.
    pub kill_grace: Duration,
}

/// How one recovery attempt ended, with what it says. `record` turns it
/// into the lease's backoff entry and its report line's `LeaseOutcome`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptOutcome {
    Recovered,
    /// The journal disappeared or became terminal before the start: someone
    /// else finished it. Not a failure.
    Vanished,
    Failed(String),
    /// Cut short by a signal: the error says what was happening.
    Interrupted(String),
    /// It did not succeed, but not through the lease's own fault: the entry
    /// stays exactly as it was and the lease is reported `deferred` with
    /// the error. What the fault means for the rest of the run (further
    /// starts, the exit code) is the [`Fault`]'s.
    NotCharged(Fault, String),
}

/// Why an attempt that did not succeed is not the lease's failure (SPEC
/// "One recovery" step 2 and "rch's daemon"). A failure is charged to a
/// lease (hours of backoff) only when the lease is why it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The `rch` install is broken: it could not be started at all (the
    /// exec failed: permission denied, a missing interpreter, not an
    /// executable format), a shim around it exited 126/127, or it exited 2
    /// (its usage error: no `jobs recover`, as in rch 1.x). Every other
    /// lease would fail the same way: 78, no further start.
    Config,
    /// The host could not start a recovery now (no thread, process, pipe or
    /// descriptor to be had): 75, no further start.
    Host,
    /// rch's daemon does not answer: every recovery needs it. 75, no
    /// further start.
    DaemonDown,
    /// Another process (rchd's own recovery task, an operator) holds the
    /// lease's `.recovery.lock`: no exit-code change, other leases go on.
    Busy,
    /// rch could not rewrite a journal in the lease directory (a read-only
    /// mount, or not writable by this user): 74, no child started.
    LeaseDir,
}

impl Fault {
    /// Whether the run starts no further child after it.
    pub fn stops_starts(self) -> bool {
        !matches!(self, Fault::Busy)
    }

    /// What it adds to the run's exit code.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Fault::Config => ExitCode::Config,
            Fault::Host | Fault::DaemonDown => ExitCode::TempFail,
            Fault::Busy => ExitCode::Success,
            Fault::LeaseDir => ExitCode::Io,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Attempt {
    pub outcome: AttemptOutcome,
    pub duration: Duration,
    /// Wall-clock end, Unix ms: a failure's backoff counts from here.
    pub ended_unix_ms: u64,
}

impl Attempt {
    /// An attempt that ended now after `duration`.
    pub fn ended(outcome: AttemptOutcome, duration: Duration) -> Attempt {
        Attempt {
            outcome,
            duration,
            ended_unix_ms: now_unix_ms(),
        }
    }
}

/// What a run's `rch` is told on top of our own environment (every one:
/// `--version`, `daemon status`, `jobs recover`), made by
/// [`rch_env::for_rch`] like every other `rch`'s. rch finds its lease
/// directory only as `$RCH_STATE_HOME/job-leases` (before `XDG_STATE_HOME`
/// and `HOME`), so naming the judged directory's state home makes it act on
/// exactly the journal that was judged.
pub fn child_env(settings: &Settings) -> Vec<(OsString, OsString)> {
    let state_home = settings.state_home.as_os_str().to_os_string();
    let mut env = vec![("RCH_STATE_HOME".into(), state_home)];
    if let Some(socket) = &settings.socket {
        env.push(("RCH_SOCKET_PATH".into(), socket.clone().into_os_string()));
    }
    rch_env::for_rch(env)
}

/// Reads the journal again just before the start, with every check of the
/// scan, so that what `rch` is handed is what was judged: gone or terminal
/// is `Vanished`; anything else that changed (type, owner, size, shape,
/// schema, id, build, worker) refuses the start.
fn readmit(
    lease_dir: &LeaseDir,
    lease_dir_path: &Path,
    candidate: &Candidate,
) -> Result<DurableJobLease, AttemptOutcome> {
    let refused = || AttemptOutcome::Failed(ADMISSION_CHANGED.into());
    let lease = match lease_dir.load(&candidate.wrapper_id) {
        Ok(lease) => lease,
        Err(ReadFailure::Missing) => return Err(AttemptOutcome::Vanished),
        Err(ReadFailure::Unreadable(error)) => {
            let journal = lease_dir_path.join(format!("{}.json", candidate.wrapper_id));
            return Err(unreadable(Reread::Journal, &journal, &error));
        }
        Err(_) => return Err(refused()),
    };
    if !judge::is_loadable(&candidate.wrapper_id, &lease) {
        return Err(refused());
    }
    if lease.terminal_acknowledged {
        return Err(AttemptOutcome::Vanished);
    }
    if lease.identity.remote_build_id != Some(candidate.build_id)
        || lease.worker_id.as_deref() != Some(candidate.worker_id.as_str())
    {
        return Err(refused());
    }
    Ok(lease)
}

/// Runs the whole recovery of `candidate` on the calling thread. The child's
/// parent-death signal is tied to this thread, so it must be a thread that
/// lives until this returns (the sweep gives each recovery its own).
pub fn recover(settings: &Settings, candidate: &Candidate, stop: &dyn Fn() -> bool) -> Attempt {
    let started = Instant::now();
    let outcome = attempt(settings, candidate, stop);
    Attempt::ended(outcome, started.elapsed())
}

fn attempt(settings: &Settings, candidate: &Candidate, stop: &dyn Fn() -> bool) -> AttemptOutcome {
    let id = candidate.wrapper_id.as_str();
    let lease_dir = match LeaseDir::open(&settings.lease_dir) {
        Ok(dir) => dir,
        // The whole lease directory is gone: someone cleaned it up.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return AttemptOutcome::Vanished;
        }
        Err(error) => return unreadable(Reread::LeaseDir, &settings.lease_dir, &error),
    };
    let before = match readmit(&lease_dir, &settings.lease_dir, candidate) {
        Ok(lease) => lease,
        Err(outcome) => return outcome,
    };
    if let Some(pid) = recovery_lock::holder(&settings.lease_dir, id, None) {
        return AttemptOutcome::NotCharged(Fault::Busy, recovery_lock::busy(pid));
    }
    if stop() {
        return AttemptOutcome::Interrupted(
            "interrupted before the recovery client was started".into(),
        );
    }

    let args: Vec<OsString> = vec![
        "jobs".into(),
        "recover".into(),
        id.into(),
        "--timeout-secs".into(),
        settings.recover_timeout.as_secs().to_string().into(),
    ];
    let env = child_env(settings);
    let spec = ChildSpec {
        program: &settings.rch,
        args: &args,
        env: &env,
    };
    let deadline = settings.recover_timeout + settings.kill_grace;
    let report = match child::run(&spec, deadline, stop) {
        Ok(report) => report,
        Err(error) => return not_started(&error),
    };
    if let Some(outcome) = broken_shim(settings, &report) {
        return outcome;
    }
    match (&report.ending, report.error()) {
        (Ending::Interrupted, error) => {
            AttemptOutcome::Interrupted(error.unwrap_or_else(|| "interrupted".into()))
        }
        (_, Some(error)) => failed(settings, id, report.pid, error, stop),
        (_, None) => match lease_dir.load(id) {
            Ok(after) => match judge::verify_completion(&before, &after, settings.completion) {
                Ok(()) => AttemptOutcome::Recovered,
                Err(why) => failed(settings, id, report.pid, why.into(), stop),
            },
            Err(_) => failed(
                settings,
                id,
                report.pid,
                judge::NOT_ACKNOWLEDGED.into(),
                stop,
            ),
        },
    }
}

/// A recovery whose child (`child`, its PID) did not succeed, charged to
/// its lease unless [`failure_not_its_own`] finds another cause.
fn failed(
    settings: &Settings,
    id: &str,
    child: u32,
    error: String,
    stop: &dyn Fn() -> bool,
) -> AttemptOutcome {
    failure_not_its_own(settings, id, child, &error, stop).unwrap_or(AttemptOutcome::Failed(error))
}

/// Was this failure the lease's own? Looked at again after a child failed
/// and before the failure is charged, since `rch jobs recover` exits 1 for
/// causes that are not the lease's:
/// - another process holds the lease's recovery lock (rch refuses at once
///   while it is held). A lock our own child took (`/proc/locks` names the
///   process that took it) and left to a helper is no other process's;
/// - rch's daemon, which every recovery needs, no longer answers at the
///   socket the run checked (one try; SPEC "rch's daemon", step 4). A stop
///   signal during that try leaves the question open: the attempt is
///   interrupted, not charged.
fn failure_not_its_own(
    settings: &Settings,
    id: &str,
    child: u32,
    error: &str,
    stop: &dyn Fn() -> bool,
) -> Option<AttemptOutcome> {
    if let Some(pid) = recovery_lock::holder(&settings.lease_dir, id, Some(child)) {
        return Some(AttemptOutcome::NotCharged(
            Fault::Busy,
            recovery_lock::busy(pid),
        ));
    }
    let (Some(socket), Some(waits)) = (&settings.socket, &settings.daemon_waits) else {
        return None;
    };
    match daemon::probe(socket, waits, settings.daemon_trust, stop) {
        Ok(_) => None,
        Err(no_answer) => Some(match no_answer.why(socket) {
            Some(why) => AttemptOutcome::NotCharged(
                Fault::DaemonDown,
                format!(
                    "{} (after the recovery failed: {error})",
                    daemon::not_answering(socket, &why)
                ),
            ),
            None => AttemptOutcome::Interrupted(format!(
                "{error} (the check of rch's daemon that followed was cut short)"
            )),
        }),
    }
}

/// What the re-read before a start could not open or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reread {
    LeaseDir,
    Journal,
}

/// What it means that the re-read before a start could not open or read
/// `path` (`what` it is) for an I/O `error`. A host out of descriptors or
/// memory (EMFILE, ENFILE, ENOMEM, EAGAIN) cannot start a recovery now,
/// whatever the journal holds: the host's fault (75, no further start, the
/// entry unchanged; SPEC "One recovery" step 2). Any other error is the
/// file's: a journal that cannot be read fails the re-read's checks (step
/// 1: the admission changed), and a lease directory that cannot be opened
/// fails the attempt with that error. (A vanished one never gets here: it
/// is `Vanished`.)
fn unreadable(what: Reread, path: &Path, error: &io::Error) -> AttemptOutcome {
    let (act, whole) = match what {
        Reread::LeaseDir => ("open lease directory", true),
        Reread::Journal => ("read journal", false),
    };
    match shortage::what(error) {
        Some(why) => AttemptOutcome::NotCharged(
            Fault::Host,
            format!(
                "the host could not start a recovery ({why}): cannot {act} {}: {error}",
                path.display()
            ),
        ),
        None if whole => {
            AttemptOutcome::Failed(format!("cannot {act} {}: {error}", path.display()))
        }
        None => AttemptOutcome::Failed(ADMISSION_CHANGED.into()),
    }
}

/// A child that could not be started: the host's fault when it ran out of
/// what a start needs (75: the next run may well succeed), else the `rch`
/// install's (78: every other start would fail the same way).
fn not_started(error: &child::SpawnError) -> AttemptOutcome {
    match shortage::what(&error.source) {
        Some(what) => AttemptOutcome::NotCharged(
            Fault::Host,
            format!("the host could not start a recovery ({what}): {error}"),
        ),
        None => AttemptOutcome::NotCharged(Fault::Config, error.to_string()),
    }
}

/// A recovery whose thread could not be started: the host's fault, always.
pub fn no_thread(error: &io::Error) -> AttemptOutcome {
    let what = shortage::what(error).unwrap_or("no thread could be created");
    AttemptOutcome::NotCharged(
        Fault::Host,
        format!(
            "the host could not start a recovery ({what}): cannot start a recovery thread: {error}"
        ),
    )
}

/// `rch` never exits 126 or 127: a shell or `env` does, when the program a
/// wrapper or shim around `rch` execs is not executable (126) or not found
/// (127), as when it is on a login shell's `PATH` only. Nor does `rch` exit
/// 2 for a lease: 2 is its usage error (clap's), what rch 1.x says to
/// `jobs recover` (it has no `jobs` command) or an `rch` that refuses one
/// of its options; its own failures exit 1. Each is a broken install, like
/// an `rch` that cannot be started at all: every other lease would fail
/// the same way.
fn broken_shim(settings: &Settings, report: &child::ChildReport) -> Option<AttemptOutcome> {
    let Ending::Exited(status) = &report.ending else {
        return None;
    };
    let code = status.code()?;
    let why = match code {
        2 => "rch's usage error: this rch cannot recover a lease (it has no `jobs recover`, as rch 1.x has not, or refuses one of its options)".to_owned(),
        126 | 127 => format!(
            "as a shell does when the program it runs is {} (rch itself never exits so)",
            if code == 126 {
                "found but not executable"
            } else {
                "not found"
            }
        ),
        _ => return None,
    };
    let mut error = format!("{} exited {code}, {why}", settings.rch.display());
    let line = if code == 2 {
        child::usage_line(&report.tail)
    } else {
        child::last_line(&report.tail)
    };
    if !line.is_empty() {
        error.push_str(": ");
        error.push_str(&line);
    }
    Some(AttemptOutcome::NotCharged(Fault::Config, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_out_of_threads_processes_or_descriptors_is_the_hosts_fault() {
        for errno in [libc::EAGAIN, libc::ENOMEM, libc::EMFILE, libc::ENFILE] {
            assert!(shortage::what(&io::Error::from_raw_os_error(errno)).is_some());
        }
        for errno in [libc::ENOENT, libc::EACCES, libc::ENOEXEC, libc::E2BIG] {
            assert_eq!(shortage::what(&io::Error::from_raw_os_error(errno)), None);
        }
        assert_eq!(shortage::what(&io::Error::other("no errno")), None);
    }

    #[test]
    fn a_reread_the_host_has_no_descriptor_or_memory_for_is_not_the_leases_fault() {
        let journal = Path::new("/leases/rchw-1.json");
        for errno in [libc::EAGAIN, libc::ENOMEM, libc::EMFILE, libc::ENFILE] {
            let error = io::Error::from_raw_os_error(errno);
            for (what, path) in [
                (Reread::Journal, journal),
                (Reread::LeaseDir, Path::new("/leases")),
            ] {
                let AttemptOutcome::NotCharged(Fault::Host, message) =
                    unreadable(what, path, &error)
                else {
                    panic!("errno {errno} for {what:?} was charged");
                };
                assert!(message.contains(&path.display().to_string()), "{message}");
                assert!(message.contains(&error.to_string()), "{message}");
            }
        }
        for errno in [libc::EIO, libc::EACCES, libc::EINVAL] {
            let error = io::Error::from_raw_os_error(errno);
            assert_eq!(
                unreadable(Reread::Journal, journal, &error),
                AttemptOutcome::Failed(ADMISSION_CHANGED.into())
            );
            assert_eq!(
                unreadable(Reread::LeaseDir, Path::new("/leases"), &error),
                AttemptOutcome::Failed(format!("cannot open lease directory /leases: {error}"))
            );
        }
    }
}

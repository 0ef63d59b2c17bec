//! One recovery: read the journal again, refuse if its admission changed,
//! defer what rch would refuse at once (a recovery lock rch will not use, no
//! room for its rewrite of the journal), run `rch jobs recover`, and count
//! success only when the journal read back shows the delivery and the
//! daemon's receipt. A child that did not succeed (a non-zero exit, a
//! signal, the deadline) has not yet failed its lease: the journal read
//! back, another wrapper's lock, the daemon and rch's own answer
//! ([`crate::rch::rch_says`], with a look at the lease directory where the answer
//! depends on it: [`crate::rch::answer`]) are asked first.

use crate::exit::ExitCode;
use crate::judge;
use crate::judge::verdict::Candidate;
use crate::lease::{DurableJobLease, ReadFailure};
use crate::lease_dir::{LeaseDir, recovery_lock, room};
use crate::rch::answer;
use crate::rch::child::{self, ChildSpec, Ending};
use crate::rch::daemon;
use crate::rch::rch_env;
use crate::rch::rch_says::{self, Meaning};
use crate::rch::release::{self, Version};
use crate::shortage;
use crate::state::backoff::now_unix_ms;
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
    /// The release of the `rch` that runs the recoveries, when the run read
    /// it (`rch --version`): what a finished recovery leaves in the journal
    /// depends on it ([`release::completion`]), and one of rch's answers
    /// means another thing before 2.1.34 ([`rch_says`]).
    pub release: Option<Version>,
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
    /// The child failed, but the journal read back shows the lease
    /// finished, by someone else (rchd's own recovery task, an operator):
    /// recovered, and the text says so.
    FinishedElsewhere(String),
    /// The journal disappeared or became terminal before the start: someone
    /// else finished it. Not a failure.
    Vanished,
    Failed(String),
    /// Cut short by a signal: the error says what was happening.
    Interrupted(String),
    /// rch 2.1.34's daemon has no record of the build, and rch finishes
    /// such a lease only once it is 24 hours old: deferred, not charged,
    /// the next attempt then (from the lease's heartbeat).
    Waits {
        heartbeat_unix_ms: u64,
        error: String,
    },
    /// An rch that never completes this lease (2.1.17–2.1.33, a build its
    /// daemon forgot): not charged, retried after `--backoff-max`, shown as
    /// `stuck` until rch is upgraded.
    Stuck(String),
    /// It did not succeed, but not through the lease's own fault: the entry
    /// stays exactly as it was and the lease is reported `deferred` with
    /// the error. What the fault means for the rest of the run (further
    /// starts, the exit code) is the [`Fault`]'s.
    NotCharged(Fault, String),
}

/// Why an attempt that did not succeed is not the lease's failure (SPEC
/// "One recovery" step 2, "rch's daemon", and the table of rch's answers).
/// A failure is charged to a lease (hours of backoff) only when the lease
/// is why it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The `rch` install is broken: it could not be started at all (the
    /// exec failed: permission denied, a missing interpreter, not an
    /// executable format), a shim around it exited 126/127, or it exited 2
    /// (its usage error: no `jobs recover`, as in rch 1.x). Every other
    /// lease would fail the same way: 78, no further start.
    Config,
    /// rch cannot read or parse one of its configuration files: every
    /// other lease would fail the same way. 78, no further start.
    RchConfig,
    /// The host could not start a recovery now (no thread, process, pipe or
    /// descriptor to be had): 75, no further start.
    Host,
    /// rch's daemon does not answer: every recovery needs it. 75, no
    /// further start.
    DaemonDown,
    /// rch said it could not reach its daemon or got no usable answer from
    /// it, though the daemon may answer again by now (a restart of a few
    /// seconds): a daemon fault, like one that is down. 75, no further
    /// start.
    DaemonSaid,
    /// Another process (rchd's own recovery task, an operator, another
    /// wrapper publishing into the same folder) holds a lock this recovery
    /// needs: no exit-code change, other leases go on.
    Busy,
    /// rch could not rewrite a journal in the lease directory (a read-only
    /// mount, or not writable by this user): 74, no child started.
    LeaseDir,
    /// rch met a read-only file system or a permission it lacks on the
    /// journal, its lock or the lease directory, as a look afterwards
    /// confirms: 74, no further start.
    JournalAccess,
    /// The lease directory's file system gives rch no usable lock (ENOLCK):
    /// every recovery needs one. 74, no further start.
    NoLocks,
    /// rch refused for now what it will do later: its owner check cannot
    /// yet prove the wrapper gone, or another writer changed the journal
    /// while rch read it. Other leases go on.
    Refused,
    /// The lease's `.recovery.lock` is one rch will not use: the fix is the
    /// operator's, and the run says so (74). Other leases go on.
    UnsafeLock,
    /// The lease directory's file system has no room for rch's rewrite of
    /// a journal (before the start, or short when rch met ENOSPC / EDQUOT):
    /// 75, no further start.
    NoRoom,
}

impl Fault {
    /// Whether the run starts no further child after it.
    pub fn stops_starts(self) -> bool {
        !matches!(self, Fault::Busy | Fault::Refused | Fault::UnsafeLock)
    }

    /// What it adds to the run's exit code.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Fault::Config | Fault::RchConfig => ExitCode::Config,
            Fault::Host | Fault::DaemonDown | Fault::DaemonSaid | Fault::NoRoom => {
                ExitCode::TempFail
            }
            Fault::Busy | Fault::Refused => ExitCode::Success,
            Fault::LeaseDir | Fault::JournalAccess | Fault::NoLocks | Fault::UnsafeLock => {
                ExitCode::Io
            }
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
    if let Some(refused) = before_start(settings, &lease_dir, id) {
        return refused;
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
        remove: rch_env::REMOVED,
    };
    let deadline = settings.recover_timeout + settings.kill_grace;
    let report = match child::run(&spec, deadline, stop) {
        Ok(report) => report,
        Err(error) => return not_started(&error),
    };
    if let Some(outcome) = broken_shim(settings, &report) {
        return outcome;
    }
    let Some(error) = report.error() else {
        return match lease_dir.load(id) {
            Ok(after) => match judge::verify_completion(
                &before,
                &after,
                release::completion(settings.release),
            ) {
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
        };
    };
    ended_otherwise(settings, &lease_dir, &before, id, &report, error, stop)
}

/// What would make rch refuse the start at once, looked at before it
/// (SPEC "rch's answers are read, not counted", 2 and 3): a recovery lock
/// rch will not use (not a regular file, another user's, more than one
/// link, open to group or others: rch 2.1.17 and later, or a release not
/// known), and a file system without room for rch's rewrite of the
/// journal. Neither is the lease's.
fn before_start(settings: &Settings, lease_dir: &LeaseDir, id: &str) -> Option<AttemptOutcome> {
    use std::os::fd::AsFd;
    let takes_the_lock = settings
        .release
        .is_none_or(|release| release >= release::FIRST_DAEMON_MARKED);
    if takes_the_lock
        && let Some(refusal) = recovery_lock::refusal_at(lease_dir.as_fd(), &settings.lease_dir, id)
    {
        return Some(AttemptOutcome::NotCharged(
            Fault::UnsafeLock,
            refusal.error(),
        ));
    }
    let (shortage, size) = room::check(lease_dir, id)?;
    let shown = settings.lease_dir.display().to_string();
    Some(AttemptOutcome::NotCharged(
        Fault::NoRoom,
        shortage.error(&shown, size),
    ))
}

/// A child that did not succeed (exited non-zero: not 2, 126 or 127,
/// which are a broken install; ended by a signal; killed at the deadline;
/// or stopped by ours) has not yet failed its lease. In order: the
/// journal read back (complete: recovered; gone or terminal: vanished);
/// a stop of ours (interrupted); another wrapper's output-folder lock that
/// rch was waiting for when the deadline ended it; another process's
/// recovery lock and rch's daemon, as for any failure; then rch's answer
/// ([`rch_says`]). Only what none of them explains is the lease's failure.
fn ended_otherwise(
    settings: &Settings,
    lease_dir: &LeaseDir,
    before: &DurableJobLease,
    id: &str,
    report: &child::ChildReport,
    error: String,
    stop: &dyn Fn() -> bool,
) -> AttemptOutcome {
    let after = match lease_dir.load(id) {
        Err(ReadFailure::Missing) => return AttemptOutcome::Vanished,
        Ok(after) => Some(after),
        Err(_) => None,
    };
    if let Some(after) = &after {
        if judge::verify_completion(before, after, release::completion(settings.release)).is_ok() {
            return AttemptOutcome::FinishedElsewhere(finished_note(&report.ending, &error));
        }
        if after.terminal_acknowledged {
            return AttemptOutcome::Vanished;
        }
    }
    if matches!(report.ending, Ending::Interrupted) {
        return AttemptOutcome::Interrupted(error);
    }
    let stderr = child::strip_escapes(&String::from_utf8_lossy(&report.tail)).into_owned();
    let said = rch_says::read(&stderr, settings.release);
    let deadline = matches!(report.ending, Ending::TimedOut)
        || said
            .as_ref()
            .is_some_and(|said| said.meaning == Meaning::RecoveryDeadline);
    if deadline && let Some(text) = answer::output_wait(&settings.lease_dir, &error) {
        return AttemptOutcome::NotCharged(Fault::Busy, text);
    }
    if let Some(outcome) = failure_not_its_own(settings, id, report.pid, &error, stop) {
        return outcome;
    }
    let Some(said) = said else {
        return AttemptOutcome::Failed(error);
    };
    let heartbeat = after.as_ref().unwrap_or(before).heartbeat_unix_ms;
    meant(settings, lease_dir, id, &said, heartbeat).unwrap_or_else(|| {
        AttemptOutcome::Failed(match said.meaning {
            Meaning::NoSpace => format!("{error} ({})", answer::ROOM_ELSEWHERE),
            Meaning::NotWritable => format!("{error} ({})", answer::WRITABLE_ELSEWHERE),
            _ => error,
        })
    })
}

/// The note of a lease whose journal, read back after its child did not
/// succeed (`ending`, `error`), is complete.
fn finished_note(ending: &Ending, error: &str) -> String {
    match ending {
        Ending::Exited(status) if status.code().is_some() => format!(
            "finished by someone else (rchd's own recovery task, or an operator) while rch exited non-zero: {error}"
        ),
        _ => format!(
            "the journal read back is complete (rch finished it before it was ended, or someone else did): {error}"
        ),
    }
}

/// What rch's answer `said` means for the lease `id` (whose heartbeat is
/// `heartbeat_unix_ms`) in the open lease directory `lease_dir`: none of
/// it is charged. None when a look at the lease directory shows that the
/// OS error rch met was not its (or the deadline was no wait for another
/// wrapper): the lease's failure then.
fn meant(
    settings: &Settings,
    lease_dir: &LeaseDir,
    id: &str,
    said: &rch_says::Said,
    heartbeat_unix_ms: u64,
) -> Option<AttemptOutcome> {
    let line = &said.line;
    let shown = settings.lease_dir.as_path();
    let not_charged = |fault, text: String| Some(AttemptOutcome::NotCharged(fault, text));
    match said.meaning {
        Meaning::BusyLock => not_charged(
            Fault::Busy,
            format!("another process is recovering this lease (rch: {line})"),
        ),
        Meaning::BusyOutput => not_charged(
            Fault::Busy,
            format!(
                "another wrapper holds the output folder rch publishes this build into; retried next run (rch: {line})"
            ),
        ),
        Meaning::NoLocks => not_charged(Fault::NoLocks, answer::no_locks(shown, line)),
        Meaning::OwnerRefused => not_charged(
            Fault::Refused,
            format!(
                "rch's owner check cannot prove the wrapper gone yet; retried next run (rch: {line})"
            ),
        ),
        Meaning::Raced => not_charged(
            Fault::Refused,
            format!(
                "another writer changed the journal or its lock while rch read it; retried next run (rch: {line})"
            ),
        ),
        Meaning::DaemonRecordWait if heartbeat_unix_ms == 0 => {
            Some(AttemptOutcome::Stuck(format!(
                "rch's daemon has no record of the build, and rch waits until the lease is 24h old by its heartbeat_unix_ms, which is 0 in this journal: the wait never ends; settle the lease by hand (restart rchd with its build history, then rch jobs recover {id}) (rch: {line})"
            )))
        }
        Meaning::DaemonRecordWait => Some(AttemptOutcome::Waits {
            heartbeat_unix_ms,
            error: format!(
                "rch's daemon has no record of the build; rch finishes the lease once it is 24h old (rch: {line})"
            ),
        }),
        Meaning::NoTerminalReceipt => Some(AttemptOutcome::Stuck(format!(
            "rch{} never completes a build its daemon no longer knows; upgrade rch to 2.1.34, which finishes it once the lease is 24h old (rch: {line})",
            settings
                .release
                .map(|release| format!(" {release}"))
                .unwrap_or_default()
        ))),
        Meaning::UnsafeLock => not_charged(
            Fault::UnsafeLock,
            answer::unsafe_lock(lease_dir, shown, id, line),
        ),
        Meaning::Daemon => not_charged(
            Fault::DaemonSaid,
            format!(
                "rch got no answer it could use from its daemon{}; no lease is charged for the daemon's fault (rch: {line})",
                settings
                    .socket
                    .as_ref()
                    .map(|socket| format!(" at {}", socket.display()))
                    .unwrap_or_default()
            ),
        ),
        Meaning::Config => not_charged(
            Fault::RchConfig,
            format!(
                "rch cannot use its configuration file {}: every recovery fails the same way (rch: {line})",
                rch_says::quoted(line).unwrap_or_else(|| "(named by rch)".into())
            ),
        ),
        // Charged, unless another wrapper's output folder held it up
        // (looked at before this).
        Meaning::RecoveryDeadline => None,
        Meaning::NoSpace => answer::no_room(lease_dir, shown, id, line)
            .map(|text| AttemptOutcome::NotCharged(Fault::NoRoom, text)),
        Meaning::NotWritable => answer::not_writable(lease_dir, shown, id, line)
            .map(|text| AttemptOutcome::NotCharged(Fault::JournalAccess, text)),
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

    fn settings(release: Option<Version>, lease_dir: &Path) -> Settings {
        Settings {
            rch: "/usr/bin/rch".into(),
            socket: None,
            daemon_waits: None,
            daemon_trust: daemon::Trust::ThisUser,
            lease_dir: lease_dir.to_path_buf(),
            state_home: lease_dir.parent().unwrap_or(lease_dir).to_path_buf(),
            release,
            recover_timeout: Duration::from_secs(300),
            kill_grace: Duration::from_secs(30),
        }
    }

    #[test]
    fn none_of_rchs_answers_is_charged_and_each_says_what_it_costs_the_run() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("rchw-a.json"), "{}").expect("write");
        let lease_dir = LeaseDir::open(dir.path()).expect("open");
        let said = |meaning| rch_says::Said {
            meaning,
            line: "Error: rch's \"/h/c.toml\" words".into(),
        };
        let settings = settings(Some(Version::new(2, 1, 30)), dir.path());
        let meant =
            |meaning, heartbeat| meant(&settings, &lease_dir, "rchw-a", &said(meaning), heartbeat);
        let fault = |meaning| match meant(meaning, 7) {
            Some(AttemptOutcome::NotCharged(fault, error)) => {
                assert!(
                    error.contains("(rch: Error: rch's \"/h/c.toml\" words)"),
                    "{error}"
                );
                Some(fault)
            }
            _ => None,
        };
        assert_eq!(fault(Meaning::BusyLock), Some(Fault::Busy));
        assert_eq!(fault(Meaning::BusyOutput), Some(Fault::Busy));
        assert_eq!(fault(Meaning::OwnerRefused), Some(Fault::Refused));
        assert_eq!(fault(Meaning::Raced), Some(Fault::Refused));
        assert_eq!(fault(Meaning::UnsafeLock), Some(Fault::UnsafeLock));
        assert_eq!(fault(Meaning::NoLocks), Some(Fault::NoLocks));
        assert_eq!(fault(Meaning::Daemon), Some(Fault::DaemonSaid));
        assert_eq!(fault(Meaning::Config), Some(Fault::RchConfig));
        // A roomy, writable lease directory: rch's OS error was elsewhere,
        // and the lease's failure; so is rch's own deadline with no
        // output folder held.
        for elsewhere in [
            Meaning::NoSpace,
            Meaning::NotWritable,
            Meaning::RecoveryDeadline,
        ] {
            assert_eq!(meant(elsewhere, 7), None, "{elsewhere:?}");
        }
        for other_leases_go_on in [Fault::Busy, Fault::Refused] {
            assert!(!other_leases_go_on.stops_starts());
            assert_eq!(other_leases_go_on.exit_code(), ExitCode::Success);
        }
        assert!(!Fault::UnsafeLock.stops_starts());
        assert_eq!(Fault::UnsafeLock.exit_code(), ExitCode::Io);
        for host in [Fault::NoRoom, Fault::DaemonSaid] {
            assert!(host.stops_starts());
            assert_eq!(host.exit_code(), ExitCode::TempFail);
        }
        for lease_dir in [Fault::NoLocks, Fault::JournalAccess] {
            assert!(lease_dir.stops_starts());
            assert_eq!(lease_dir.exit_code(), ExitCode::Io);
        }
        assert!(Fault::RchConfig.stops_starts());
        assert_eq!(Fault::RchConfig.exit_code(), ExitCode::Config);
        let Some(AttemptOutcome::NotCharged(_, error)) = meant(Meaning::Config, 7) else {
            panic!("configuration");
        };
        assert!(error.contains("configuration file /h/c.toml"), "{error}");
        assert!(matches!(
            meant(Meaning::DaemonRecordWait, 7),
            Some(AttemptOutcome::Waits {
                heartbeat_unix_ms: 7,
                ..
            })
        ));
        // A heartbeat of 0 never ends rch 2.1.34's wait.
        assert!(matches!(
            meant(Meaning::DaemonRecordWait, 0),
            Some(AttemptOutcome::Stuck(error)) if error.contains("heartbeat_unix_ms, which is 0")
        ));
        let Some(AttemptOutcome::Stuck(error)) = meant(Meaning::NoTerminalReceipt, 7) else {
            panic!("stuck");
        };
        assert!(
            error.starts_with("rch 2.1.30 never completes")
                && error.contains("upgrade rch to 2.1.34"),
            "{error}"
        );
    }

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

//! rch's daemon (`rchd`, a Unix socket): which one `rch` will use, whether
//! it answers, and where else one of this user's answers.
//!
//! Every `rch jobs recover` asks the daemon first and exits 1 when it cannot
//! reach it: the exit of a lease that really failed. So a daemon that is
//! down, or one `rch` looks for in the wrong place (a cron line has no
//! `XDG_RUNTIME_DIR`), would charge every due lease a failure, run after
//! run. A real run with something due therefore learns the socket `rch`
//! resolves, checks it with rch's own health request, pins it for the
//! children, and charges nothing while it does not answer (SPEC "rch's
//! daemon").
//!
//! The decisions (what `rch --json --format json daemon status` said, what a
//! health reply means, which places to look at, what the findings add up
//! to) are plain functions over bytes and paths; the socket and the child
//! are the thin I/O around them.

use crate::child::{self, Capture, ChildSpec, Ending};
use crate::exit::ExitCode;
use crate::{account, config, log};
use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long `rch ... daemon status` may take before its group is killed.
pub const STATUS_DEADLINE: Duration = Duration::from_secs(10);

/// The most of a health reply that is read: rchd's is a few dozen bytes.
pub const REPLY_LIMIT: usize = 64 * 1024;

/// Tries of the check before any recovery; the one after a failed
/// recovery is a single try.
pub const TRIES: u32 = 3;

/// The longest the check waits without looking for a stop signal: each
/// wait (rch's answer, connect, the reply, the pause between tries) is cut
/// into slices no longer, so a stopped run ends within a second.
const STOP_SLICE: Duration = Duration::from_millis(100);

/// Shortens every wait of the check (connect, read, pause between tries)
/// to this many milliseconds, in debug builds only: the tests' stand-in for
/// a daemon that never answers must not cost them 30 s. A release build
/// never reads it.
pub const TEST_WAIT_VAR: &str = "RCH_SWEEP_TEST_DAEMON_WAIT_MS";

/// The waits of one health check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waits {
    /// For `connect` (a full listen queue makes it block).
    pub connect: Duration,
    /// For the whole reply, from the request sent.
    pub read: Duration,
    /// Between two tries.
    pub pause: Duration,
}

impl Waits {
    /// SPEC's: connect within 3 s, the reply within 10 s, tries 1 s apart.
    pub const SPEC: Waits = Waits {
        connect: Duration::from_secs(3),
        read: Duration::from_secs(10),
        pause: Duration::from_secs(1),
    };

    /// [`Waits::SPEC`], or in a debug build the test override
    /// ([`TEST_WAIT_VAR`]).
    pub fn for_this_build() -> Waits {
        if cfg!(debug_assertions)
            && let Some(ms) = config::process_env(TEST_WAIT_VAR)
                .and_then(|value| value.to_str()?.parse::<u64>().ok())
        {
            let wait = Duration::from_millis(ms);
            return Waits {
                connect: wait,
                read: wait,
                pause: wait,
            };
        }
        Waits::SPEC
    }
}

/// How the socket was chosen; the message names it, so an operator knows
/// which knob to turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChosenBy {
    /// `--socket`.
    Option,
    /// `RCH_SOCKET_PATH` in rch-sweep's own environment.
    Environment,
    /// `rch --json --format json daemon status`: as rch resolves it.
    Rch,
}

impl ChosenBy {
    /// The JSON summary's `chosen_by`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChosenBy::Option => "option",
            ChosenBy::Environment => "environment",
            ChosenBy::Rch => "rch",
        }
    }

    /// How a message says it.
    pub fn how(self) -> &'static str {
        match self {
            ChosenBy::Option => "named by --socket",
            ChosenBy::Environment => "named by RCH_SOCKET_PATH",
            ChosenBy::Rch => "as rch resolves it",
        }
    }
}

/// What one run found out about rch's daemon (SPEC "JSON summary",
/// `daemon`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub socket: PathBuf,
    pub chosen_by: ChosenBy,
    pub up: bool,
    /// Why it is not up.
    pub error: Option<String>,
    /// Another of rch's usual places where a daemon of this user answers.
    pub answering_elsewhere: Option<PathBuf>,
    /// It answered before the recoveries and stopped answering during them.
    pub lost: bool,
    /// Who listened and how long the reply took, when it answered.
    pub answer: Option<Answer>,
}

/// The error each due lease is deferred with.
pub fn not_answering(socket: &Path, why: &str) -> String {
    format!(
        "rch's daemon at {} is not answering: {why}",
        socket.display()
    )
}

impl Report {
    /// The check's verdict, from the probe of the chosen socket and, when
    /// that failed, the first other place found answering.
    pub fn new(
        socket: PathBuf,
        chosen_by: ChosenBy,
        probed: Result<(), String>,
        elsewhere: Option<PathBuf>,
    ) -> Report {
        let (up, error) = match probed {
            Ok(()) => (true, None),
            Err(why) => (false, Some(why)),
        };
        Report {
            socket,
            chosen_by,
            up,
            error,
            answering_elsewhere: elsewhere.filter(|_| !up),
            lost: false,
            answer: None,
        }
    }

    /// The error of each lease it keeps from recovery.
    pub fn lease_error(&self) -> String {
        not_answering(&self.socket, self.error.as_deref().unwrap_or("unknown"))
    }

    /// Records that a recheck after a failed recovery found it gone;
    /// `lease_error` is what that lease was deferred with.
    pub fn lose(&mut self, lease_error: &str) {
        let prefix = not_answering(&self.socket, "");
        self.up = false;
        self.lost = true;
        self.error = Some(
            lease_error
                .strip_prefix(&prefix)
                .unwrap_or(lease_error)
                .to_owned(),
        );
    }

    /// 78 when it answers only elsewhere (that will not mend itself), else
    /// 75; nothing when it is up.
    pub fn exit_code(&self) -> ExitCode {
        match (self.up, &self.answering_elsewhere) {
            (true, _) => ExitCode::Success,
            (false, Some(_)) => ExitCode::Config,
            (false, None) => ExitCode::TempFail,
        }
    }

    /// What the run says about it on stderr and in the summary's `error`:
    /// the socket, how it was chosen, what happened to the leases, and the
    /// fix. None when it is up.
    pub fn message(&self) -> Option<String> {
        if self.up {
            return None;
        }
        let socket = self.socket.display();
        let how = self.chosen_by.how();
        let why = self.error.as_deref().unwrap_or("unknown");
        let fix = self.fix()?;
        if let Some(other) = &self.answering_elsewhere {
            return Some(format!(
                "rch looks for its daemon at {socket} ({how}), where none answers ({why}), while one of this user's answers at {other}; no recovery was started and no lease was charged a failure. {fix}",
                other = other.display(),
            ));
        }
        if self.lost {
            return Some(format!(
                "rch's daemon at {socket} ({how}) stopped answering during the run: {why}; the recovery that failed meanwhile was not charged to its lease and no further recovery was started. {fix}"
            ));
        }
        Some(format!(
            "rch's daemon at {socket} ({how}) is not answering: {why}; no recovery was started and no lease was charged a failure. {fix}"
        ))
    }

    /// What to do about it; None when it is up.
    pub fn fix(&self) -> Option<String> {
        if self.up {
            return None;
        }
        Some(match &self.answering_elsewhere {
            Some(other) => format!("Point rch at it: {}", point_at(other, self.chosen_by)),
            None => {
                "Start it (systemctl --user start rchd, or rch daemon start); the next run retries"
                    .to_owned()
            }
        })
    }

    /// The human summary's line.
    pub fn line(&self) -> String {
        let socket = self.socket.display();
        let how = self.chosen_by.how();
        if self.up {
            return format!("rch's daemon answers at {socket} ({how})");
        }
        let why = self.error.as_deref().unwrap_or("unknown");
        let mut line = format!("rch's daemon does not answer at {socket} ({how}): {why}");
        if let Some(other) = &self.answering_elsewhere {
            line.push_str(&format!("; one answers at {}", other.display()));
        }
        line
    }
}

/// The fix for a daemon answering at `other` while rch looks elsewhere:
/// the variable rch itself reads, set where the run gets its environment.
fn point_at(other: &Path, chosen_by: ChosenBy) -> String {
    let socket = format!("RCH_SOCKET_PATH={}", other.display());
    let by_runtime_dir = other
        .parent()
        .filter(|_| other.file_name() == Some(OsStr::new("rch.sock")))
        .filter(|dir| dir.starts_with("/run/user"))
        .map(|dir| format!("XDG_RUNTIME_DIR={} or ", dir.display()))
        .unwrap_or_default();
    match chosen_by {
        ChosenBy::Option => format!("--socket {}", other.display()),
        ChosenBy::Environment => format!("{socket} instead"),
        ChosenBy::Rch => format!(
            "set {by_runtime_dir}{socket} on the crontab line or in the unit's drop-in (systemctl edit)"
        ),
    }
}

/// The socket `rch --json --format json daemon status` names: its stdout
/// must be one JSON document `{"success": true, "data": {"socket_path":
/// "<path>", ...}}` (other keys ignored). Anything else (an `rch` without
/// the command, a log line, a failure document) says why not.
pub fn parse_status(stdout: &[u8]) -> Result<PathBuf, String> {
    let document: serde_json::Value = serde_json::from_slice(stdout).map_err(|_| {
        if stdout.iter().all(u8::is_ascii_whitespace) {
            "printed nothing on stdout".to_owned()
        } else {
            "printed no JSON document on stdout".to_owned()
        }
    })?;
    if document.get("success") != Some(&serde_json::Value::Bool(true)) {
        return Err("answered without \"success\": true".to_owned());
    }
    match document.pointer("/data/socket_path") {
        Some(serde_json::Value::String(path)) if !path.is_empty() && !path.contains('\0') => {
            Ok(PathBuf::from(path))
        }
        _ => Err("named no data.socket_path".to_owned()),
    }
}

/// Whether a reply to `GET /health` says the daemon is up: a status line
/// `HTTP/1.0 200 ...` or `HTTP/1.1 200 ...`, and after the blank line a JSON
/// object whose `status` is `"healthy"` (rchd's own answer). The error says
/// what it was instead.
pub fn judge_reply(reply: &[u8]) -> Result<(), String> {
    if reply.is_empty() {
        return Err("it closed the connection without a reply".to_owned());
    }
    let first_end = reply
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(reply.len());
    let first = String::from_utf8_lossy(&reply[..first_end]);
    let first = first.trim_end_matches('\r');
    let mut words = first.split_whitespace();
    let shown = || -> String { log::printable(first).chars().take(80).collect() };
    match words.next() {
        Some("HTTP/1.0" | "HTTP/1.1") => {}
        _ => return Err(format!("its reply is not HTTP: {:?}", shown())),
    }
    match words.next() {
        Some("200") => {}
        Some(_) => return Err(format!("it answered {:?}", shown())),
        None => return Err(format!("its status line has no code: {:?}", shown())),
    }
    let body = body_of(reply).ok_or_else(|| "its reply ends before a body".to_owned())?;
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| "its health reply is not JSON".to_owned())?;
    match value.get("status") {
        Some(serde_json::Value::String(status)) if status == "healthy" => Ok(()),
        Some(serde_json::Value::String(status)) => Err(format!(
            "it reports status {:?}, not \"healthy\"",
            log::printable(status).chars().take(80).collect::<String>()
        )),
        _ if !value.is_object() => Err("its health reply is not a JSON object".to_owned()),
        _ => Err("its health reply has no \"status\"".to_owned()),
    }
}

/// What follows the first blank line (`\r\n\r\n` or `\n\n`).
fn body_of(reply: &[u8]) -> Option<&[u8]> {
    let find = |needle: &[u8]| {
        reply
            .windows(needle.len())
            .position(|window| window == needle)
            .map(|at| at + needle.len())
    };
    let start = match (find(b"\r\n\r\n"), find(b"\n\n")) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    Some(&reply[start..])
}

/// rch's usual places for its socket besides the one it chose, in rch's
/// order: `$XDG_RUNTIME_DIR/rch.sock` when set, `/run/user/<uid>/rch.sock`
/// (where a user service's daemon listens), `${XDG_CACHE_HOME:-$HOME/.cache}/rch/rch.sock`,
/// `/tmp/rch.sock`; `socket` itself and repeats left out.
pub fn usual_places(
    socket: &Path,
    env: impl Fn(&str) -> Option<OsString>,
    uid: u32,
) -> Vec<PathBuf> {
    let var = |name: &str| env(name).filter(|value| !value.is_empty());
    let mut places = Vec::new();
    if let Some(runtime) = var("XDG_RUNTIME_DIR") {
        places.push(PathBuf::from(runtime).join("rch.sock"));
    }
    places.push(PathBuf::from(format!("/run/user/{uid}/rch.sock")));
    if let Some(cache) = var("XDG_CACHE_HOME") {
        places.push(PathBuf::from(cache).join("rch/rch.sock"));
    } else if let Some(home) = var("HOME") {
        places.push(PathBuf::from(home).join(".cache/rch/rch.sock"));
    }
    places.push(PathBuf::from("/tmp/rch.sock"));
    let mut kept: Vec<PathBuf> = Vec::with_capacity(places.len());
    for place in places {
        if place != socket && !kept.contains(&place) {
            kept.push(place);
        }
    }
    kept
}

/// Why `rch` named no socket for the run's check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unnamed {
    /// It ran and gave no answer (exited non-zero, timed out, printed
    /// anything else: an `rch` without the command): the run goes on as
    /// before, unchecked.
    NoAnswer(String),
    /// It could not be started because the host is out of a process, a
    /// thread or a descriptor now: the 75 of "One recovery".
    HostFault(String),
    /// It could not be started at all (the exec failed): the 78 of "One
    /// recovery", as every recovery would fail the same way.
    Unstartable(String),
    /// A stop signal came while it was asked.
    Stopped,
}

/// A stop signal came while the check waited: it ends there, and no
/// further place is probed (SPEC "rch's daemon", step 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped;

/// Whose listener a probe accepts (SPEC "rch's daemon", step 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    /// Only a process of this user or root: a socket rch found or one of
    /// its usual places, where another user may have planted a listener.
    ThisUser,
    /// Whoever listens: a socket the operator named (`--socket`,
    /// `RCH_SOCKET_PATH`).
    Anyone,
}

impl ChosenBy {
    /// A named socket is the operator's choice; one rch found is trusted
    /// only when this user's.
    pub fn trust(self) -> Trust {
        match self {
            ChosenBy::Option | ChosenBy::Environment => Trust::Anyone,
            ChosenBy::Rch => Trust::ThisUser,
        }
    }
}

/// What a daemon that answered healthy showed of itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The uid of the process listening (`SO_PEERCRED`).
    pub listener: u32,
    /// From the connect to the whole reply.
    pub took: Duration,
}

/// How one probe of a socket ended, when it did not answer healthy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoAnswer {
    /// Why it is not up.
    Down(String),
    Stopped,
}

impl From<String> for NoAnswer {
    fn from(why: String) -> NoAnswer {
        NoAnswer::Down(why)
    }
}

/// Whether a listener of uid `listener` is this user's, for a process of
/// uid `me`: the same uid, or root.
pub fn is_this_users(listener: u32, me: u32) -> bool {
    listener == me || listener == 0
}

/// Why another user's listener is not taken for rch's daemon.
pub fn foreign_listener(socket: &Path, listener: u32) -> String {
    let whose = match account::user_name(listener) {
        Some(name) => format!("uid {listener} ({name})"),
        None => format!("uid {listener}"),
    };
    format!(
        "the process listening at {} is {whose}, not this user's",
        socket.display()
    )
}

/// Where the run's daemon is: `explicit` (`--socket` or `RCH_SOCKET_PATH`,
/// taken without asking), else what `rch` says it resolves, asked in the
/// children's environment `env`.
pub fn which(
    explicit: Option<&Path>,
    rch: &Path,
    env: &[(OsString, OsString)],
    stop: &dyn Fn() -> bool,
) -> Result<(PathBuf, ChosenBy), Unnamed> {
    if let Some(socket) = explicit {
        let from_env =
            config::process_env("RCH_SOCKET_PATH").is_some_and(|value| Path::new(&value) == socket);
        let chosen_by = if from_env {
            ChosenBy::Environment
        } else {
            ChosenBy::Option
        };
        return Ok((socket.to_path_buf(), chosen_by));
    }
    ask_rch(rch, env, stop).map(|socket| (socket, ChosenBy::Rch))
}

/// Runs `<rch> --json --format json daemon status` as a recovery would run
/// (same environment additions, a process group of its own, killed past
/// [`STATUS_DEADLINE`] or at a stop signal) and reads the socket from its
/// answer.
pub fn ask_rch(
    rch: &Path,
    env: &[(OsString, OsString)],
    stop: &dyn Fn() -> bool,
) -> Result<PathBuf, Unnamed> {
    let args: Vec<OsString> = ["--json", "--format", "json", "daemon", "status"]
        .into_iter()
        .map(OsString::from)
        .collect();
    let spec = ChildSpec {
        program: rch,
        args: &args,
        env,
    };
    let report =
        child::run_capturing(&spec, Capture::Stdout, STATUS_DEADLINE, stop).map_err(|error| {
            match child::shortage(&error.source) {
                Some(what) => Unnamed::HostFault(format!(
                    "the host could not start `{} --json --format json daemon status` ({what}): {error}",
                    rch.display()
                )),
                None => Unnamed::Unstartable(format!(
                    "`{} --json --format json daemon status` could not be started: {error}",
                    rch.display()
                )),
            }
        })?;
    let no_answer = |why: String| Err(Unnamed::NoAnswer(why));
    match report.ending {
        Ending::Exited(status) if status.success() && report.tail_overflowed => no_answer(format!(
            "printed more than {} KiB, more than rch's answer takes",
            child::ANSWER_BYTES / 1024
        )),
        Ending::Exited(status) if status.success() => {
            parse_status(&report.tail).map_err(Unnamed::NoAnswer)
        }
        Ending::Exited(status) => no_answer(format!("failed: {status}")),
        Ending::TimedOut => no_answer(format!(
            "did not answer within {}s (killed)",
            STATUS_DEADLINE.as_secs()
        )),
        Ending::Interrupted => Err(Unnamed::Stopped),
    }
}

/// The whole check of `socket`: up to [`TRIES`] tries `waits.pause` apart,
/// accepting a listener as `chosen_by` says; when none answers, the first
/// other usual place where a daemon of this user answers. A stop signal
/// ends it wherever it waits.
pub fn check(
    socket: PathBuf,
    chosen_by: ChosenBy,
    waits: &Waits,
    stop: &dyn Fn() -> bool,
) -> Result<Report, Stopped> {
    let trust = chosen_by.trust();
    let mut probed = probe(&socket, waits, trust, stop);
    for _ in 1..TRIES {
        match probed {
            Ok(_) => break,
            Err(NoAnswer::Stopped) => return Err(Stopped),
            Err(NoAnswer::Down(_)) => {}
        }
        pause(waits.pause, stop)?;
        probed = probe(&socket, waits, trust, stop);
    }
    let (probed, answer) = match probed {
        Ok(answer) => (Ok(()), Some(answer)),
        Err(NoAnswer::Stopped) => return Err(Stopped),
        Err(NoAnswer::Down(why)) => (Err(why), None),
    };
    let elsewhere = match probed {
        Ok(()) => None,
        Err(_) => answering_elsewhere(&socket, waits, stop)?,
    };
    let mut report = Report::new(socket, chosen_by, probed, elsewhere);
    report.answer = answer;
    Ok(report)
}

/// Sleeps `length` in short slices, ending early at a stop signal.
fn pause(length: Duration, stop: &dyn Fn() -> bool) -> Result<(), Stopped> {
    let until = Instant::now() + length;
    loop {
        if stop() {
            return Err(Stopped);
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(STOP_SLICE));
    }
}

/// The first of rch's other usual places where a socket of this user's,
/// listened on by this user or root, answers healthy (one try each); not
/// the chosen socket under another name.
fn answering_elsewhere(
    socket: &Path,
    waits: &Waits,
    stop: &dyn Fn() -> bool,
) -> Result<Option<PathBuf>, Stopped> {
    let uid = account::euid();
    let chosen = std::fs::metadata(socket).ok().map(|m| (m.dev(), m.ino()));
    for place in usual_places(socket, config::process_env, uid) {
        let Ok(meta) = std::fs::symlink_metadata(&place) else {
            continue;
        };
        if !meta.file_type().is_socket()
            || meta.uid() != uid
            || chosen == Some((meta.dev(), meta.ino()))
        {
            continue;
        }
        match probe(&place, waits, Trust::ThisUser, stop) {
            Ok(_) => return Ok(Some(place)),
            Err(NoAnswer::Stopped) => return Err(Stopped),
            Err(NoAnswer::Down(_)) => {}
        }
    }
    Ok(None)
}

/// One try: connect, check who listens (`trust`), `GET /health\n`,
/// half-close, read the reply, judge it. Each wait is cut into slices of
/// at most [`STOP_SLICE`], so a stop signal ends it within one.
pub fn probe(
    socket: &Path,
    waits: &Waits,
    trust: Trust,
    stop: &dyn Fn() -> bool,
) -> Result<Answer, NoAnswer> {
    let started = Instant::now();
    let mut stream = connect_within(socket, waits.connect, stop)?;
    let listener = peer_uid(&stream)
        .map_err(|error| format!("cannot tell who listens at {}: {error}", socket.display()))?;
    if trust == Trust::ThisUser && !is_this_users(listener, account::euid()) {
        // Nothing is sent to another user's process.
        return Err(foreign_listener(socket, listener).into());
    }
    let sent = stream
        .set_write_timeout(Some(waits.connect))
        .and_then(|()| stream.write_all(b"GET /health\n"))
        .and_then(|()| stream.shutdown(std::net::Shutdown::Write));
    if let Err(error) = sent {
        return Err(match error.kind() {
            io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset => {
                "it closed the connection without a reply".to_owned()
            }
            _ => format!("cannot send the health request: {error}"),
        }
        .into());
    }
    let reply = read_reply(&mut stream, waits.read, stop)?;
    judge_reply(&reply)?;
    Ok(Answer {
        listener,
        took: started.elapsed(),
    })
}

/// Connects within `timeout`, a slice at a time (a fresh socket each), so
/// a stop signal is seen while a full listen queue keeps it waiting; an
/// error says what is at the path when it is not a listening socket.
fn connect_within(
    socket: &Path,
    timeout: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<UnixStream, NoAnswer> {
    let until = Instant::now() + timeout;
    loop {
        if stop() {
            return Err(NoAnswer::Stopped);
        }
        let left = until.saturating_duration_since(Instant::now());
        let error = match connect(socket, left.min(STOP_SLICE).max(Duration::from_millis(1))) {
            Ok(stream) => return Ok(stream),
            Err(error) => error,
        };
        let waited = matches!(
            error.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        );
        if waited && !until.saturating_duration_since(Instant::now()).is_zero() {
            continue;
        }
        let why = match error.kind() {
            io::ErrorKind::NotFound => not_there(socket),
            io::ErrorKind::ConnectionRefused => refused(path_kind(socket, true)),
            _ if waited => format!(
                "it did not accept the connection within {}",
                seconds(timeout)
            ),
            _ => format!("cannot connect: {error}"),
        };
        return Err(NoAnswer::Down(why));
    }
}

/// What is at a path, as a message names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathKind {
    Socket,
    Directory,
    Fifo,
    RegularFile,
    Device,
    /// A symbolic link whose target does not exist.
    DanglingLink,
}

impl PathKind {
    fn article(self) -> &'static str {
        match self {
            PathKind::Socket => "a socket",
            PathKind::Directory => "a directory",
            PathKind::Fifo => "a FIFO",
            PathKind::RegularFile => "a regular file",
            PathKind::Device => "a device",
            PathKind::DanglingLink => "a symbolic link to nothing",
        }
    }
}

/// What is at `path` (its target when `follow`, as `connect` follows a
/// link); None when nothing is.
fn path_kind(path: &Path, follow: bool) -> Option<PathKind> {
    let meta = if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    };
    let Ok(meta) = meta else {
        let dangling = follow
            && std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
        return dangling.then_some(PathKind::DanglingLink);
    };
    let kind = meta.file_type();
    Some(if kind.is_socket() {
        PathKind::Socket
    } else if kind.is_dir() {
        PathKind::Directory
    } else if kind.is_fifo() {
        PathKind::Fifo
    } else if kind.is_file() {
        PathKind::RegularFile
    } else if kind.is_symlink() {
        PathKind::DanglingLink
    } else {
        PathKind::Device
    })
}

/// Why a connect found nothing to connect to (ENOENT).
fn not_there(socket: &Path) -> String {
    match path_kind(socket, true) {
        Some(PathKind::DanglingLink) => {
            "no socket at all (a symbolic link to a path where nothing is)".to_owned()
        }
        _ => "no socket at all (nothing is at that path)".to_owned(),
    }
}

/// Why a connect was refused, by what is at the path: Linux refuses a
/// connect to a directory, a FIFO or a file just as to a socket nobody
/// listens on.
pub fn refused(kind: Option<PathKind>) -> String {
    match kind {
        Some(PathKind::Socket) | None => {
            "connection refused (a socket file with no daemon behind it)".to_owned()
        }
        Some(kind) => format!(
            "there is {} at that path, not a socket (connection refused)",
            kind.article()
        ),
    }
}

/// Reads until EOF, [`REPLY_LIMIT`] bytes, or `within` has passed since
/// the request (one deadline for the whole reply, however it trickles in),
/// a slice at a time so a stop signal is seen.
fn read_reply(
    stream: &mut UnixStream,
    within: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<u8>, NoAnswer> {
    let deadline = Instant::now() + within;
    let mut reply = Vec::new();
    let mut chunk = [0u8; 8192];
    while reply.len() < REPLY_LIMIT {
        if stop() {
            return Err(NoAnswer::Stopped);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(no_reply(within, &reply).into());
        }
        stream
            .set_read_timeout(Some(left.min(STOP_SLICE)))
            .map_err(|error| format!("cannot read the reply: {error}"))?;
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => reply.extend_from_slice(&chunk[..n.min(REPLY_LIMIT - reply.len())]),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::Interrupted
                        | io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                ) => {}
            Err(error) if error.kind() == io::ErrorKind::ConnectionReset => break,
            Err(error) => return Err(format!("cannot read the reply: {error}").into()),
        }
    }
    Ok(reply)
}

fn no_reply(within: Duration, partial: &[u8]) -> String {
    if partial.is_empty() {
        format!("no reply within {}", seconds(within))
    } else {
        format!("no complete reply within {}", seconds(within))
    }
}

/// "3s", or "250ms" under a second (the tests' shortened waits).
pub fn seconds(duration: Duration) -> String {
    if duration.subsec_millis() == 0 && duration.as_secs() > 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{}ms", duration.as_millis())
    }
}

/// The uid of the process at the other end of a connected Unix socket, as
/// the kernel recorded it when that process listened (`SO_PEERCRED`).
/// (std's `UnixStream::peer_cred` is not stable.)
fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    // SAFETY: ucred is plain old data; all zeroes is a valid value.
    let mut credentials: libc::ucred = unsafe { std::mem::zeroed() };
    let mut length = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the descriptor is the stream's own, open for the call;
    // `credentials` is a valid ucred that outlives the call, and `length`
    // holds its size, which the kernel writes no further than.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut credentials as *mut libc::ucred).cast(),
            &mut length,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(credentials.uid)
}

/// A blocking connect to the Unix socket at `path`, bounded by `timeout`:
/// `SO_SNDTIMEO` bounds the wait of a Unix-domain `connect` on a full
/// listen queue (which a non-blocking connect would refuse at once with
/// `EAGAIN` rather than let us wait for), and std has no way to set it
/// before connecting. The descriptor is close-on-exec.
fn connect(path: &Path, timeout: Duration) -> io::Result<UnixStream> {
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: sockaddr_un is plain old data; all zeroes is a valid value.
    let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.is_empty() || bytes.contains(&0) || bytes.len() >= address.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "not a usable socket path (empty, a NUL byte, or longer than {} bytes)",
                address.sun_path.len() - 1
            ),
        ));
    }
    address.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (slot, byte) in address.sun_path.iter_mut().zip(bytes) {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: socket takes plain integers and returns a new descriptor or -1.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket and is owned by nothing else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let timeval = libc::timeval {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_usec: libc::suseconds_t::from(timeout.subsec_micros() as i32),
    };
    // SAFETY: `timeval` is a valid timeval that outlives the call, and its
    // size is passed with it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            (&timeval as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let length = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    loop {
        // SAFETY: `address` is a valid sockaddr_un whose first `length`
        // bytes hold the family and the NUL-terminated path.
        let rc = unsafe {
            libc::connect(
                fd,
                (&address as *const libc::sockaddr_un).cast(),
                length as libc::socklen_t,
            )
        };
        if rc == 0 {
            return Ok(UnixStream::from(owned));
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rchs_status_answer_names_the_socket() {
        let answer = br#"{"success":true,"data":{"running":false,"socket_path":"/run/user/1000/rch.sock","pid":null}}"#;
        assert_eq!(
            parse_status(answer),
            Ok(PathBuf::from("/run/user/1000/rch.sock"))
        );
        assert_eq!(
            parse_status(b"{\"success\": true, \"data\": {\"socket_path\": \"/tmp/rch.sock\"}}\n"),
            Ok(PathBuf::from("/tmp/rch.sock"))
        );
    }

    #[test]
    fn anything_else_is_no_answer() {
        for (stdout, why) in [
            (&b""[..], "printed nothing"),
            (b"  \n", "printed nothing"),
            (b"error: unrecognized subcommand 'daemon'\n", "no JSON"),
            (b"{\"success\":true}\nmore", "no JSON"),
            (
                b"{\"success\":false,\"error\":{\"code\":\"RCH-E100\"}}",
                "success",
            ),
            (b"{\"data\":{\"socket_path\":\"/x\"}}", "success"),
            (b"{\"success\":true,\"data\":{}}", "socket_path"),
            (
                b"{\"success\":true,\"data\":{\"socket_path\":\"\"}}",
                "socket_path",
            ),
            (
                b"{\"success\":true,\"data\":{\"socket_path\":7}}",
                "socket_path",
            ),
            (b"[1,2]", "success"),
        ] {
            let error = parse_status(stdout).expect_err("no socket");
            assert!(error.contains(why), "{stdout:?}: {error}");
        }
    }

    #[test]
    fn rchds_healthy_reply_is_up() {
        let reply = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"status\":\"healthy\",\"version\":\"2.1.24\",\"uptime_seconds\":12}";
        assert_eq!(judge_reply(reply), Ok(()));
        assert_eq!(
            judge_reply(b"HTTP/1.1 200 OK\n\n{\"status\": \"healthy\"}\n"),
            Ok(())
        );
    }

    #[test]
    fn every_other_reply_says_why_it_is_not_up() {
        for (reply, why) in [
            (&b""[..], "closed the connection without a reply"),
            (
                b"HTTP/1.0 200 OK\r\n\r\n{\"status\":\"starting\"}",
                "\"starting\"",
            ),
            (
                b"HTTP/1.0 500 Internal Server Error\r\n\r\n{\"status\":\"healthy\"}",
                "HTTP/1.0 500 Internal Server Error",
            ),
            (b"HTTP/2 200\r\n\r\n{\"status\":\"healthy\"}", "not HTTP"),
            (b"SSH-2.0-OpenSSH_9.6\r\n", "not HTTP"),
            (b"HTTP/1.0\r\n\r\n", "no code"),
            (b"HTTP/1.0 200 OK\r\n", "ends before a body"),
            (b"HTTP/1.0 200 OK\r\n\r\nok", "not JSON"),
            (b"HTTP/1.0 200 OK\r\n\r\n[\"healthy\"]", "not a JSON object"),
            (
                b"HTTP/1.0 200 OK\r\n\r\n{\"version\":\"2\"}",
                "no \"status\"",
            ),
            (
                b"HTTP/1.0 2000 OK\r\n\r\n{\"status\":\"healthy\"}",
                "answered",
            ),
        ] {
            let error = judge_reply(reply).expect_err("not up");
            assert!(
                error.contains(why),
                "{:?}: {error}",
                String::from_utf8_lossy(reply)
            );
        }
    }

    #[test]
    fn the_usual_places_follow_rch_and_leave_out_the_chosen_one() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| OsString::from(value))
            }
        };
        let strings = |places: Vec<PathBuf>| -> Vec<String> {
            places
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect()
        };
        // A terminal: all four; rch chose the first.
        let terminal = env(&[("XDG_RUNTIME_DIR", "/run/user/1000"), ("HOME", "/home/a")]);
        assert_eq!(
            strings(usual_places(
                Path::new("/run/user/1000/rch.sock"),
                terminal,
                1000
            )),
            ["/home/a/.cache/rch/rch.sock", "/tmp/rch.sock"]
        );
        // cron: no XDG_RUNTIME_DIR; rch chose ~/.cache, so /run/user/<uid>
        // is the first place left.
        let cron = env(&[("HOME", "/home/a"), ("XDG_RUNTIME_DIR", "")]);
        assert_eq!(
            strings(usual_places(
                Path::new("/home/a/.cache/rch/rch.sock"),
                cron,
                1000
            )),
            ["/run/user/1000/rch.sock", "/tmp/rch.sock"]
        );
        let cache = env(&[("XDG_CACHE_HOME", "/c"), ("HOME", "/home/a")]);
        assert_eq!(
            strings(usual_places(Path::new("/elsewhere.sock"), cache, 7)),
            ["/run/user/7/rch.sock", "/c/rch/rch.sock", "/tmp/rch.sock"]
        );
        let nothing = env(&[]);
        assert_eq!(
            strings(usual_places(Path::new("/tmp/rch.sock"), nothing, 0)),
            ["/run/user/0/rch.sock"]
        );
    }

    fn report(chosen_by: ChosenBy, probed: Result<(), String>, other: Option<&str>) -> Report {
        Report::new(
            PathBuf::from("/home/a/.cache/rch/rch.sock"),
            chosen_by,
            probed,
            other.map(PathBuf::from),
        )
    }

    #[test]
    fn up_is_quiet_and_success() {
        let up = report(ChosenBy::Rch, Ok(()), Some("/run/user/1000/rch.sock"));
        assert!(up.up);
        assert_eq!(up.answering_elsewhere, None, "only looked for when down");
        assert_eq!(up.exit_code(), ExitCode::Success);
        assert_eq!(up.message(), None);
        assert_eq!(
            up.line(),
            "rch's daemon answers at /home/a/.cache/rch/rch.sock (as rch resolves it)"
        );
    }

    #[test]
    fn down_is_75_and_says_socket_how_and_fix() {
        let down = report(
            ChosenBy::Environment,
            Err("no socket at all (nothing is at that path)".into()),
            None,
        );
        assert_eq!(down.exit_code(), ExitCode::TempFail);
        assert_eq!(
            down.lease_error(),
            "rch's daemon at /home/a/.cache/rch/rch.sock is not answering: no socket at all (nothing is at that path)"
        );
        let message = down.message().expect("message");
        for words in [
            "/home/a/.cache/rch/rch.sock",
            "named by RCH_SOCKET_PATH",
            "no socket at all",
            "no lease was charged",
            "systemctl --user start rchd",
        ] {
            assert!(message.contains(words), "{message} lacks {words}");
        }
    }

    #[test]
    fn answering_elsewhere_is_78_and_names_both_paths_and_the_variable() {
        let wrong = report(
            ChosenBy::Rch,
            Err("no socket at all (nothing is at that path)".into()),
            Some("/run/user/1000/rch.sock"),
        );
        assert_eq!(wrong.exit_code(), ExitCode::Config);
        let message = wrong.message().expect("message");
        for words in [
            "/home/a/.cache/rch/rch.sock",
            "/run/user/1000/rch.sock",
            "as rch resolves it",
            "XDG_RUNTIME_DIR=/run/user/1000 or RCH_SOCKET_PATH=/run/user/1000/rch.sock",
            "crontab",
        ] {
            assert!(message.contains(words), "{message} lacks {words}");
        }
        let named = report(
            ChosenBy::Option,
            Err("no socket at all (nothing is at that path)".into()),
            Some("/tmp/rch.sock"),
        );
        assert!(
            named
                .message()
                .is_some_and(|m| m.ends_with("--socket /tmp/rch.sock"))
        );
    }

    #[test]
    fn a_daemon_lost_during_the_run_keeps_only_the_why() {
        let mut report = report(ChosenBy::Rch, Ok(()), None);
        let lease_error = format!(
            "{} (after the recovery failed: exit status: 1)",
            not_answering(&report.socket, "no socket at all")
        );
        report.lose(&lease_error);
        assert!(!report.up && report.lost);
        assert_eq!(
            report.error.as_deref(),
            Some("no socket at all (after the recovery failed: exit status: 1)")
        );
        assert_eq!(report.exit_code(), ExitCode::TempFail);
        assert!(
            report
                .message()
                .is_some_and(|m| m.contains("stopped answering during the run"))
        );
    }

    #[test]
    fn only_this_users_or_roots_listener_is_this_users() {
        assert!(is_this_users(1000, 1000));
        assert!(is_this_users(0, 1000));
        assert!(is_this_users(0, 0));
        assert!(!is_this_users(65534, 1000));
        assert!(!is_this_users(1000, 0));
        assert_eq!(ChosenBy::Rch.trust(), Trust::ThisUser);
        assert_eq!(ChosenBy::Option.trust(), Trust::Anyone);
        assert_eq!(ChosenBy::Environment.trust(), Trust::Anyone);
        let why = foreign_listener(Path::new("/tmp/rch.sock"), 4_000_000_000);
        assert_eq!(
            why,
            "the process listening at /tmp/rch.sock is uid 4000000000, not this user's"
        );
    }

    #[test]
    fn a_refused_connect_names_what_is_at_the_path() {
        assert_eq!(
            refused(Some(PathKind::Socket)),
            "connection refused (a socket file with no daemon behind it)"
        );
        for (kind, words) in [
            (
                PathKind::Directory,
                "there is a directory at that path, not a socket",
            ),
            (PathKind::Fifo, "there is a FIFO at that path, not a socket"),
            (
                PathKind::RegularFile,
                "there is a regular file at that path, not a socket",
            ),
            (
                PathKind::Device,
                "there is a device at that path, not a socket",
            ),
        ] {
            assert!(refused(Some(kind)).starts_with(words), "{kind:?}");
        }
    }

    #[test]
    fn what_is_at_a_path_is_told_by_its_kind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let at = |name: &str| dir.path().join(name);
        std::fs::create_dir(at("dir")).expect("mkdir");
        std::fs::write(at("file"), "x").expect("write");
        std::os::unix::fs::symlink(at("nowhere"), at("dangling")).expect("symlink");
        let listener = std::os::unix::net::UnixListener::bind(at("sock")).expect("bind");
        assert_eq!(path_kind(&at("dir"), true), Some(PathKind::Directory));
        assert_eq!(path_kind(&at("file"), true), Some(PathKind::RegularFile));
        assert_eq!(path_kind(&at("sock"), true), Some(PathKind::Socket));
        assert_eq!(
            path_kind(&at("dangling"), true),
            Some(PathKind::DanglingLink)
        );
        assert_eq!(path_kind(&at("nothing"), true), None);
        assert!(not_there(&at("dangling")).contains("symbolic link"));
        assert!(not_there(&at("nothing")).starts_with("no socket at all"));
        // The listener's own uid is this process's.
        let stream = UnixStream::connect(at("sock")).expect("connect");
        assert_eq!(peer_uid(&stream).expect("SO_PEERCRED"), account::euid());
        drop(listener);
    }

    #[test]
    fn a_stop_ends_every_wait_of_the_check() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("silent.sock");
        // Accepts (the kernel's queue does) and never answers.
        let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
        let waits = Waits {
            connect: Duration::from_secs(30),
            read: Duration::from_secs(30),
            pause: Duration::from_secs(30),
        };
        let started = Instant::now();
        let stop_after = |ms: u64| move || started.elapsed() > Duration::from_millis(ms);
        assert_eq!(
            probe(&socket, &waits, Trust::Anyone, &stop_after(200)),
            Err(NoAnswer::Stopped)
        );
        assert_eq!(pause(waits.pause, &|| true), Err(Stopped));
        assert_eq!(
            check(socket, ChosenBy::Option, &waits, &|| true),
            Err(Stopped)
        );
    }

    #[test]
    fn a_path_that_cannot_be_a_socket_address_is_refused_before_connecting() {
        let long = PathBuf::from(format!("/tmp/{}", "x".repeat(200)));
        let error = connect(&long, Duration::from_millis(10)).expect_err("too long");
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }
}

//! One try at rch's daemon: connect to its Unix socket, ask the kernel who
//! listens (`SO_PEERCRED`), send rch's health request, read and judge the
//! reply (SPEC "rch's daemon", steps 2, 6 and 7).
//!
//! Kept apart from [`crate::rch::daemon`], which decides which socket to try,
//! how often, and what the findings add up to: this room knows one socket
//! at a time. Every wait is cut into short slices with a stop signal looked
//! for between them, so a stopped run never sits out a 10 s read; a
//! listener of another user is told apart before anything is sent to it;
//! and a path that is no listening socket says what it is instead.

use crate::rch::release::Version;
use crate::{account, config, log, sys};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// The most of a health reply that is read: rchd's is a few dozen bytes.
pub const REPLY_LIMIT: usize = 64 * 1024;

/// The longest the check waits without looking for a stop signal: each
/// wait (rch's answer, connect, the reply, the pause between tries) is cut
/// into slices no longer, so a stopped run ends within a second.
pub const STOP_SLICE: Duration = Duration::from_millis(100);

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

/// The release a healthy reply names in its `version` (`"2.1.12"`), if
/// it names one.
pub fn rchd_version(reply: &[u8]) -> Option<Version> {
    let value: serde_json::Value = serde_json::from_slice(body_of(reply)?).ok()?;
    crate::rch::release::number_of(value.get("version")?.as_str()?)
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

/// What a daemon that answered healthy showed of itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The uid of the process listening (`SO_PEERCRED`).
    pub listener: u32,
    /// From the connect to the whole reply.
    pub took: Duration,
    /// rchd's own release, from the reply's `version` (rchd's
    /// `CARGO_PKG_VERSION` in every 2.1.x); None when it names none.
    pub rchd: Option<Version>,
}

/// How one probe of a socket ended, when it did not answer healthy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoAnswer {
    /// Why it is not up.
    Down(String),
    /// A process of another user (this uid) listens there, and the probe
    /// trusts only this user's: nothing was sent to it.
    Foreign(u32),
    Stopped,
}

impl NoAnswer {
    /// Why the daemon at `socket` counts as not answering; None for a stop.
    pub fn why(&self, socket: &Path) -> Option<String> {
        match self {
            NoAnswer::Down(why) => Some(why.clone()),
            NoAnswer::Foreign(listener) => Some(foreign_listener(socket, *listener)),
            NoAnswer::Stopped => None,
        }
    }
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
    let listener = sys::socket::peer_uid(stream.as_fd())
        .map_err(|error| format!("cannot tell who listens at {}: {error}", socket.display()))?;
    if trust == Trust::ThisUser && !is_this_users(listener, account::euid()) {
        // Nothing is sent to another user's process.
        return Err(NoAnswer::Foreign(listener));
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
        rchd: rchd_version(&reply),
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
        let error = match sys::socket::connect_unix(
            socket,
            left.min(STOP_SLICE).max(Duration::from_millis(1)),
        ) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn rchds_release_is_the_version_its_health_reply_names() {
        // rchd 2.1.0-2.1.34's `handle_health`: `version: ctx.version`, its
        // own CARGO_PKG_VERSION.
        let reply = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"status\":\"healthy\",\"version\":\"2.1.12\",\"uptime_seconds\":12}\n";
        assert_eq!(rchd_version(reply), Some(Version::new(2, 1, 12)));
        // The real rchd 2.1.34's and 2.1.16's replies, byte for byte
        // (tests/data/real-rch-<release>/README.md).
        for (real, release) in [
            (
                &include_bytes!("../../tests/data/real-rch-2.1.34/rchd-health-reply.txt")[..],
                Version::new(2, 1, 34),
            ),
            (
                &include_bytes!("../../tests/data/real-rch-2.1.16/rchd-health-reply.txt")[..],
                Version::new(2, 1, 16),
            ),
        ] {
            assert_eq!(judge_reply(real), Ok(()));
            assert_eq!(rchd_version(real), Some(release));
        }
        let fake = Some(Version::new(0, 0, 0));
        for (reply, expected) in [
            (
                &b"HTTP/1.0 200 OK\r\n\r\n{\"status\":\"healthy\"}"[..],
                None,
            ),
            (
                b"HTTP/1.0 200 OK\r\n\r\n{\"status\":\"healthy\",\"version\":\"0.0.0-fake\"}",
                fake,
            ),
            (
                b"HTTP/1.0 200 OK\r\n\r\n{\"status\":\"healthy\",\"version\":2}",
                None,
            ),
            (
                b"HTTP/1.0 200 OK\r\n\r\n{\"status\":\"healthy\",\"version\":\"rchd\"}",
                None,
            ),
            (b"HTTP/1.0 200 OK\r\n", None),
        ] {
            let shown = String::from_utf8_lossy(reply);
            assert_eq!(rchd_version(reply), expected, "{shown}");
        }
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
    fn only_this_users_or_roots_listener_is_this_users() {
        assert!(is_this_users(1000, 1000));
        assert!(is_this_users(0, 1000));
        assert!(is_this_users(0, 0));
        assert!(!is_this_users(65534, 1000));
        assert!(!is_this_users(1000, 0));
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
        assert_eq!(
            sys::socket::peer_uid(stream.as_fd()).expect("SO_PEERCRED"),
            account::euid()
        );
        drop(listener);
    }

    #[test]
    fn a_path_that_cannot_be_a_socket_address_is_refused_before_connecting() {
        let long = std::path::PathBuf::from(format!("/tmp/{}", "x".repeat(200)));
        let error =
            sys::socket::connect_unix(&long, Duration::from_millis(10)).expect_err("too long");
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }
}

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
//! The decisions (what `rch --json --format json daemon status` said, which
//! places to look at, what the findings add up to) are plain functions over
//! bytes and paths; the child is the thin I/O around them. One try at a
//! socket (who listens, the health request, what its reply means) is
//! [`crate::rch::health`]'s.
//!
//! Its rooms: [`ask`] asks `rch` (which socket it resolves, how it was
//! chosen, its release by `--version` and `--capabilities`); this file
//! checks the socket, looks where else one of this user's daemons
//! answers, and says what it adds up to ([`Report`]). What `ask` offers is
//! re-exported here, so callers keep `daemon::which` and the like.

pub mod ask;

use crate::exit::ExitCode;
use crate::{account, config};
pub use ask::{
    STATUS_DEADLINE, Unnamed, ask_capabilities, ask_rch, ask_version, capabilities_of, chosen_by,
    did_not_answer, parse_status, which,
};
use std::ffi::OsString;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::rch::health::STOP_SLICE;
pub use crate::rch::health::{
    Answer, NoAnswer, REPLY_LIMIT, TEST_WAIT_VAR, Trust, Waits, foreign_listener, is_this_users,
    judge_reply, probe,
};

/// Tries of the check before any recovery; the one after a failed
/// recovery is a single try.
pub const TRIES: u32 = 3;

/// How the socket was chosen; the message names it, so an operator knows
/// which knob to turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChosenBy {
    /// `--socket`.
    Option,
    /// `RCH_SOCKET_PATH` in rch-sweep's own environment.
    Environment,
    /// `RCH_DAEMON_SOCKET`, rch's alias of `RCH_SOCKET_PATH`, when that is
    /// unset.
    Alias,
    /// `rch --json --format json daemon status`: as rch resolves it.
    Rch,
}

impl ChosenBy {
    /// The JSON summary's `chosen_by`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChosenBy::Option => "option",
            ChosenBy::Environment | ChosenBy::Alias => "environment",
            ChosenBy::Rch => "rch",
        }
    }

    /// How a message says it.
    pub fn how(self) -> &'static str {
        match self {
            ChosenBy::Option => "named by --socket",
            ChosenBy::Environment => "named by RCH_SOCKET_PATH",
            ChosenBy::Alias => "named by RCH_DAEMON_SOCKET, rch's alias of RCH_SOCKET_PATH",
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
    /// The uid of another user's process found listening at the socket,
    /// which therefore counts as not answering.
    pub foreign_listener: Option<u32>,
}

/// The error each due lease is deferred with.
pub fn not_answering(socket: &Path, why: &str) -> String {
    format!("rch's daemon at {} is not answering: {why}", shown(socket))
}

/// A socket as a message names it: its path, or `""` for the empty one an
/// empty `RCH_SOCKET_PATH` names.
fn shown(socket: &Path) -> String {
    if socket.as_os_str().is_empty() {
        "\"\"".to_owned()
    } else {
        socket.display().to_string()
    }
}

/// Why no daemon answers at the empty socket: rch, told an empty
/// `RCH_SOCKET_PATH` (or, with that unset, an empty `RCH_DAEMON_SOCKET`),
/// takes it as its socket and finds none there (rch-lease-format.md §10.x).
fn named_empty(chosen_by: ChosenBy) -> String {
    match chosen_by {
        ChosenBy::Environment => "RCH_SOCKET_PATH is set but empty: rch takes it as its socket, finds none there, and does not read its alias RCH_DAEMON_SOCKET".to_owned(),
        ChosenBy::Alias => "RCH_DAEMON_SOCKET is set but empty and RCH_SOCKET_PATH unset: rch takes it as its socket and finds none there".to_owned(),
        ChosenBy::Option => "--socket is empty: it names no socket".to_owned(),
        ChosenBy::Rch => "rch names an empty socket".to_owned(),
    }
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
            foreign_listener: None,
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

    /// 78 when it answers only elsewhere, or no socket is named (an empty
    /// `RCH_SOCKET_PATH`): neither will mend itself; else 75; nothing when
    /// it is up.
    pub fn exit_code(&self) -> ExitCode {
        match (self.up, &self.answering_elsewhere) {
            (true, _) => ExitCode::Success,
            (false, Some(_)) => ExitCode::Config,
            (false, None) if self.named_empty() => ExitCode::Config,
            (false, None) => ExitCode::TempFail,
        }
    }

    /// The socket named is the empty one.
    fn named_empty(&self) -> bool {
        self.socket.as_os_str().is_empty()
    }

    /// What the run says about it on stderr and in the summary's `error`:
    /// the socket, how it was chosen, what happened to the leases, and the
    /// fix. None when it is up.
    pub fn message(&self) -> Option<String> {
        if self.up {
            return None;
        }
        let socket = shown(&self.socket);
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
            None if self.named_empty() => match self.chosen_by {
                ChosenBy::Option => "Name the socket rch's daemon listens on: --socket PATH".to_owned(),
                ChosenBy::Alias => "Unset RCH_DAEMON_SOCKET (rch then resolves its own socket) or set it to the socket rch's daemon listens on, where the run gets its environment (the crontab line, the unit's drop-in)".to_owned(),
                ChosenBy::Environment | ChosenBy::Rch => "Unset RCH_SOCKET_PATH (rch then resolves its own socket) or set it to the socket rch's daemon listens on, where the run gets its environment (the crontab line, the unit's drop-in)".to_owned(),
            },
            None if self.foreign_listener.is_some() => {
                "Start this user's own daemon (systemctl --user start rchd, or rch daemon start) where rch looks for it, or name the socket of the daemon meant with --socket / RCH_SOCKET_PATH; another user's process is never handed this user's recoveries"
                    .to_owned()
            }
            None => {
                "Start it (systemctl --user start rchd, or rch daemon start); the next run retries"
                    .to_owned()
            }
        })
    }

    /// The human summary's line.
    pub fn line(&self) -> String {
        let socket = shown(&self.socket);
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

/// The fix for a daemon answering at `other` while rch looks elsewhere,
/// set where the run gets its environment: `RCH_SOCKET_PATH` alone, which
/// rch obeys whatever its config files say. rch is run without its config
/// cache (see [`crate::rch::rch_env`]), so the cache is never why.
fn point_at(other: &Path, chosen_by: ChosenBy) -> String {
    let socket = format!("RCH_SOCKET_PATH={}", other.display());
    match chosen_by {
        ChosenBy::Option => format!("--socket {}", other.display()),
        ChosenBy::Environment | ChosenBy::Alias => format!("{socket} instead"),
        ChosenBy::Rch => {
            format!("set {socket} on the crontab line or in the unit's drop-in (systemctl edit)")
        }
    }
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

/// A stop signal came while the check waited: it ends there, and no
/// further place is probed (SPEC "rch's daemon", step 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped;

impl ChosenBy {
    /// A named socket is the operator's choice; one rch found is trusted
    /// only when this user's.
    pub fn trust(self) -> Trust {
        match self {
            ChosenBy::Option | ChosenBy::Environment | ChosenBy::Alias => Trust::Anyone,
            ChosenBy::Rch => Trust::ThisUser,
        }
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
    if socket.as_os_str().is_empty() {
        // Nothing to try, and nothing that a retry would mend.
        let elsewhere = answering_elsewhere(&socket, waits, stop)?;
        return Ok(Report::new(
            socket,
            chosen_by,
            Err(named_empty(chosen_by)),
            elsewhere,
        ));
    }
    let trust = chosen_by.trust();
    let mut probed = probe(&socket, waits, trust, stop);
    for _ in 1..TRIES {
        match probed {
            // Another user's listener will not become this user's.
            Ok(_) | Err(NoAnswer::Foreign(_)) => break,
            Err(NoAnswer::Stopped) => return Err(Stopped),
            Err(NoAnswer::Down(_)) => {}
        }
        pause(waits.pause, stop)?;
        probed = probe(&socket, waits, trust, stop);
    }
    let (probed, answer, foreign) = match probed {
        Ok(answer) => (Ok(()), Some(answer), None),
        Err(NoAnswer::Foreign(listener)) => (
            Err(foreign_listener(&socket, listener)),
            None,
            Some(listener),
        ),
        Err(NoAnswer::Down(why)) => (Err(why), None, None),
        Err(NoAnswer::Stopped) => return Err(Stopped),
    };
    let elsewhere = match probed {
        Ok(()) => None,
        Err(_) => answering_elsewhere(&socket, waits, stop)?,
    };
    let mut report = Report::new(socket, chosen_by, probed, elsewhere);
    report.answer = answer;
    report.foreign_listener = foreign;
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
            Err(NoAnswer::Down(_) | NoAnswer::Foreign(_)) => {}
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An environment holding only `pairs`, as `usual_places` and
    /// `chosen_by` read one (the tests of `ask` use it too).
    pub(super) fn env(
        pairs: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&str) -> Option<OsString> {
        move |name: &str| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        }
    }

    #[test]
    fn the_usual_places_follow_rch_and_leave_out_the_chosen_one() {
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
        // RCH_SOCKET_PATH alone: rch obeys it whatever its config says,
        // and with rch's config cache off the cache is never why.
        let message = wrong.message().expect("message");
        let fix = "Point rch at it: set RCH_SOCKET_PATH=/run/user/1000/rch.sock on the crontab line or in the unit's drop-in (systemctl edit)";
        for words in [
            "/home/a/.cache/rch/rch.sock",
            "/run/user/1000/rch.sock",
            "as rch resolves it",
        ] {
            assert!(message.contains(words), "{message} lacks {words}");
        }
        assert!(message.ends_with(fix), "{message}");
        assert_eq!(wrong.fix().as_deref(), Some(fix));
        for gone in ["XDG_RUNTIME_DIR", "config.cache", "config cache"] {
            assert!(!message.contains(gone), "{message} names {gone}");
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
    fn another_users_listener_is_75_with_a_fix_of_its_own() {
        let mut foreign = report(
            ChosenBy::Rch,
            Err(foreign_listener(Path::new("/tmp/rch.sock"), 4_000_000_000)),
            None,
        );
        foreign.foreign_listener = Some(4_000_000_000);
        assert_eq!(foreign.exit_code(), ExitCode::TempFail);
        let message = foreign.message().expect("message");
        for words in [
            "is uid 4000000000, not this user's",
            "Start this user's own daemon",
            "--socket / RCH_SOCKET_PATH",
        ] {
            assert!(message.contains(words), "{message} lacks {words}");
        }
    }

    #[test]
    fn an_empty_socket_is_looked_for_nowhere_and_will_not_mend_itself() {
        let waits = Waits {
            connect: Duration::from_millis(50),
            read: Duration::from_millis(50),
            pause: Duration::from_secs(30),
        };
        let started = Instant::now();
        let report =
            check(PathBuf::new(), ChosenBy::Environment, &waits, &|| false).expect("not stopped");
        // No try to repeat: the 30 s pause is never taken.
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(!report.up);
        let message = report.message().expect("not up");
        if report.answering_elsewhere.is_none() {
            assert_eq!(report.exit_code(), ExitCode::Config);
            assert!(
                message.starts_with("rch's daemon at \"\" (named by RCH_SOCKET_PATH) is not answering: RCH_SOCKET_PATH is set but empty"),
                "{message}"
            );
            assert!(
                message.contains("does not read its alias RCH_DAEMON_SOCKET"),
                "{message}"
            );
            assert!(
                report
                    .fix()
                    .is_some_and(|fix| fix.starts_with("Unset RCH_SOCKET_PATH")),
                "{message}"
            );
        }
        assert!(
            report
                .lease_error()
                .starts_with("rch's daemon at \"\" is not answering")
        );
        let alias = Report::new(
            PathBuf::new(),
            ChosenBy::Alias,
            Err(named_empty(ChosenBy::Alias)),
            None,
        );
        assert_eq!(alias.exit_code(), ExitCode::Config);
        assert!(
            alias
                .fix()
                .is_some_and(|fix| fix.starts_with("Unset RCH_DAEMON_SOCKET"))
        );
    }

    #[test]
    fn a_named_socket_is_trusted_whoever_listens_one_rch_found_only_if_ours() {
        assert_eq!(ChosenBy::Rch.trust(), Trust::ThisUser);
        assert_eq!(ChosenBy::Option.trust(), Trust::Anyone);
        assert_eq!(ChosenBy::Environment.trust(), Trust::Anyone);
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
}

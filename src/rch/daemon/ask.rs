//! What `rch` says of its daemon and itself: the socket
//! `rch --json --format json daemon status` resolves (or why it names
//! none), how that socket was chosen, and its release by `--version` and
//! `--capabilities`; each a child with rch's environment under a
//! deadline, its answer read by a plain function.

use super::ChosenBy;
use crate::rch::child::{self, Capture, ChildSpec, Ending};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long `rch ... daemon status` may take before its group is killed.
pub const STATUS_DEADLINE: Duration = Duration::from_secs(10);

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

/// Where the run's daemon is: `explicit` (`--socket`, `RCH_SOCKET_PATH` or
/// its alias `RCH_DAEMON_SOCKET`, taken without asking), else what `rch`
/// says it resolves, asked in the children's environment `env`.
pub fn which(
    explicit: Option<&Path>,
    rch: &Path,
    env: &[(OsString, OsString)],
    stop: &dyn Fn() -> bool,
) -> Result<(PathBuf, ChosenBy), Unnamed> {
    if let Some(socket) = explicit {
        // As rch reads them: set, even empty.
        let chosen_by = chosen_by(socket, |name| std::env::var_os(name));
        return Ok((socket.to_path_buf(), chosen_by));
    }
    ask_rch(rch, env, stop).map(|socket| (socket, ChosenBy::Rch))
}

/// How a named `socket` was named: by `RCH_SOCKET_PATH` when it holds it,
/// else by `RCH_DAEMON_SOCKET` when that holds it (rch reads the alias only
/// without `RCH_SOCKET_PATH`), else by `--socket`. `env` gives a variable
/// as rch reads it: set even when empty (an empty one names the empty
/// socket, and keeps rch from its alias).
pub fn chosen_by(socket: &Path, env: impl Fn(&str) -> Option<OsString>) -> ChosenBy {
    match (env("RCH_SOCKET_PATH"), env("RCH_DAEMON_SOCKET")) {
        (Some(value), _) if Path::new(&value) == socket => ChosenBy::Environment,
        (None, Some(value)) if Path::new(&value) == socket => ChosenBy::Alias,
        _ => ChosenBy::Option,
    }
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
    let report = run_rch(
        rch,
        &["--json", "--format", "json", "daemon", "status"],
        env,
        stop,
        "cannot ask rch for its daemon's socket",
    )?;
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

/// Runs `<rch> <args>` for its answer on stdout, as `daemon status` is run
/// (the same environment, deadline and process group); `what` says in a
/// host fault's error what could not be asked. The two ways it cannot be
/// started are a recovery's child's: the host's shortage (75) or the
/// install's (78).
fn run_rch(
    rch: &Path,
    args: &[&str],
    env: &[(OsString, OsString)],
    stop: &dyn Fn() -> bool,
    what: &str,
) -> Result<child::ChildReport, Unnamed> {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let spec = ChildSpec {
        program: rch,
        args: &args,
        env,
        remove: crate::rch::rch_env::REMOVED,
    };
    let shown = || {
        let words: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
        format!("{} {}", rch.display(), words.join(" "))
    };
    child::run_capturing(&spec, Capture::Stdout, STATUS_DEADLINE, stop).map_err(|error| {
        match crate::shortage::what(&error.source) {
            Some(short) => Unnamed::HostFault(format!(
                "the host could not start a recovery ({short}): {what} (`{}`): {error}",
                shown()
            )),
            None => Unnamed::Unstartable(format!("`{}` could not be started: {error}", shown())),
        }
    })
}

/// The first line `<rch> --version` prints, asked once by a real run with
/// something due, as `daemon status` is asked ([`run_rch`]): which release
/// runs decides what its finished recovery leaves ([`crate::rch::release`]). An
/// `rch` that answers nothing readable (fails, times out, prints nothing)
/// gives an empty line, which no release is read from.
pub fn ask_version(
    rch: &Path,
    env: &[(OsString, OsString)],
    stop: &dyn Fn() -> bool,
) -> Result<String, Unnamed> {
    let report = run_rch(
        rch,
        &["--version"],
        env,
        stop,
        "cannot ask rch for its version",
    )?;
    match report.ending {
        Ending::Exited(status) if status.success() => {
            Ok(crate::rch::release::first_line(&report.tail))
        }
        Ending::Exited(_) | Ending::TimedOut => Ok(String::new()),
        Ending::Interrupted => Err(Unnamed::Stopped),
    }
}

/// rch's own release, from `<rch> --capabilities` (asked once by a real
/// run with something due, as `--version` is: [`run_rch`]), or why it
/// cannot be read ([`capabilities_of`]).
pub fn ask_capabilities(
    rch: &Path,
    env: &[(OsString, OsString)],
    stop: &dyn Fn() -> bool,
) -> Result<Result<crate::rch::release::Version, String>, Unnamed> {
    let report = run_rch(
        rch,
        &["--capabilities"],
        env,
        stop,
        "cannot ask rch for its release",
    )?;
    capabilities_of(&report).ok_or(Unnamed::Stopped)
}

/// What a `<rch> --capabilities` child said of rch's release, or why it
/// said nothing readable: it failed (an rch without the flag exits 2: it
/// just cannot tell), did not answer within its deadline (what it printed
/// meanwhile is not read), or printed something else
/// ([`crate::rch::release::from_capabilities`]). None when a stop signal ended
/// it.
pub fn capabilities_of(
    report: &child::ChildReport,
) -> Option<Result<crate::rch::release::Version, String>> {
    Some(match report.ending {
        Ending::Exited(status) if status.success() && report.tail_overflowed => Err(format!(
            "printed more than {} KiB",
            child::ANSWER_BYTES / 1024
        )),
        Ending::Exited(status) if status.success() => {
            crate::rch::release::from_capabilities(&report.tail)
        }
        Ending::Exited(status) => Err(format!("failed: {status}")),
        Ending::TimedOut => Err(did_not_answer(report.deadline)),
        Ending::Interrupted => return None,
    })
}

/// A child that did not exit within `deadline`: said so, never quoting
/// what it printed meanwhile as if it were rch's answer.
pub fn did_not_answer(deadline: Duration) -> String {
    format!("did not answer in {} s", deadline.as_secs())
}

#[cfg(test)]
mod tests {
    use super::super::tests::env;
    use super::super::*;
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
    fn rch_daemon_socket_names_the_socket_only_without_rch_socket_path() {
        let socket = Path::new("/a.sock");
        assert_eq!(
            chosen_by(socket, env(&[("RCH_DAEMON_SOCKET", "/a.sock")])),
            ChosenBy::Alias
        );
        // An empty RCH_SOCKET_PATH is set, as rch reads it: the alias is
        // not read, so /a.sock came from --socket; the empty socket is
        // RCH_SOCKET_PATH's.
        assert_eq!(
            chosen_by(
                socket,
                env(&[("RCH_DAEMON_SOCKET", "/a.sock"), ("RCH_SOCKET_PATH", "")])
            ),
            ChosenBy::Option
        );
        assert_eq!(
            chosen_by(
                Path::new(""),
                env(&[("RCH_DAEMON_SOCKET", "/a.sock"), ("RCH_SOCKET_PATH", "")])
            ),
            ChosenBy::Environment
        );
        assert_eq!(
            chosen_by(Path::new(""), env(&[("RCH_DAEMON_SOCKET", "")])),
            ChosenBy::Alias
        );
        assert_eq!(
            chosen_by(
                socket,
                env(&[
                    ("RCH_DAEMON_SOCKET", "/a.sock"),
                    ("RCH_SOCKET_PATH", "/a.sock")
                ])
            ),
            ChosenBy::Environment
        );
        // RCH_SOCKET_PATH set elsewhere: the socket came from --socket.
        assert_eq!(
            chosen_by(
                socket,
                env(&[
                    ("RCH_DAEMON_SOCKET", "/a.sock"),
                    ("RCH_SOCKET_PATH", "/b.sock")
                ])
            ),
            ChosenBy::Option
        );
        assert_eq!(chosen_by(socket, env(&[])), ChosenBy::Option);
        assert_eq!(ChosenBy::Alias.as_str(), "environment");
        assert!(ChosenBy::Alias.how().contains("RCH_DAEMON_SOCKET"));
        assert_eq!(ChosenBy::Alias.trust(), Trust::Anyone);
    }
}

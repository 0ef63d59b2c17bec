//! doctor's `rch` check: the `rch` a run finds, what it says of itself
//! (`--version`, and whether `jobs recover --help` runs), what its release
//! is known not to do, and whether a timer's and cron's `PATH` find the
//! same one.

use super::ok_or_warn;
use super::rch_release;
use crate::cli::RunArgs;
use crate::config;
use crate::exit::ExitCode;
use crate::rch::child::{self, Capture, ChildSpec, Ending};
use crate::sweep::preflight::{self, DoctorCheck, Finding};
use crate::{log, rch::rch_env, route};
use anyhow::Result;
use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

/// How long `rch --version` (and `--capabilities`) may take.
const VERSION_DEADLINE: Duration = Duration::from_secs(10);

/// `rch` as a run finds it; then what it says of itself (the first line of
/// `--version`, and its own release from `--capabilities`: see
/// [`rch_release`]), with a warning for a release with known limits, and
/// whether a timer's and cron's `PATH` find the same one.
pub(super) fn rch(args: &RunArgs) -> Finding {
    let path_var = std::env::var_os("PATH");
    let home = std::env::var_os("HOME");
    let explicit = args.rch.as_deref();
    let found = match preflight::rch(explicit, path_var.as_deref(), home.as_deref()) {
        Ok(found) => found,
        Err(finding) => return finding,
    };
    let mut warnings = Vec::new();
    let mut fixes = Vec::new();
    let version = match version(&found) {
        VersionAnswer::Told(line) => line,
        VersionAnswer::Broken(why) => {
            return Finding::fail(
                DoctorCheck::Rch,
                ExitCode::Config,
                format!(
                    "{}: `--version` {why}; a run would exit 78 at its first recovery",
                    found.display()
                ),
                "repair or reinstall rch (a shim or wrapper exits 127 when the program it runs is missing, 126 when it may not run it), or point --rch / RCH_SWEEP_RCH at an rch that runs",
            );
        }
        VersionAnswer::Failed(why) => {
            warnings.push(format!("`{} --version` {why}", found.display()));
            fixes.push("check that this rch runs for this user (rch --version)".to_owned());
            String::new()
        }
    };
    // rch's own release, which a run decides by (`--version` prints
    // rch-common's).
    let release = rch_release::release(
        &version,
        &rch_release::capabilities(&found, VERSION_DEADLINE),
    );
    if let Err(why) = recovers(&found) {
        return Finding::fail(
            DoctorCheck::Rch,
            ExitCode::Config,
            format!(
                "{}{}: `jobs recover --help` {why}: this rch cannot recover a lease (rch 1.x has no `jobs` command); a run would exit 78 at its first recovery",
                found.display(),
                if version.is_empty() {
                    String::new()
                } else {
                    format!(" ({version})")
                }
            ),
            "install rch 2.1 or later (the one rchd and its wrappers use), or point --rch / RCH_SWEEP_RCH at it",
        );
    }
    warnings.extend(release.warnings);
    fixes.extend(release.fixes);
    // A path with a slash is the same for any PATH.
    let by_path = explicit.is_none_or(|rch| rch.components().count() == 1 && !rch.is_absolute());
    if by_path {
        let fallbacks = if explicit.is_none() {
            "then ~/.local/bin, ~/.cargo/bin, /usr/local/bin"
        } else {
            "no fallbacks for a name given"
        };
        for (whose, path) in [
            ("a timer's PATH", route::timer_path()),
            ("cron's PATH", route::CRON_PATH),
        ] {
            let other = config::resolve_rch(explicit, Some(OsStr::new(path)), home.as_deref());
            if other.as_ref().is_ok_and(|other| same_file(other, &found)) {
                continue;
            }
            let other = match &other {
                Ok(other) => other.display().to_string(),
                Err(_) => "no rch".to_owned(),
            };
            warnings.push(format!("{whose} ({path}, {fallbacks}) would find {other}"));
        }
        if warnings.iter().any(|w| w.contains("PATH (")) {
            fixes.push(format!(
                "name it for the timer and cron: --rch {} (or Environment=RCH_SWEEP_RCH={} in the unit, RCH_SWEEP_RCH={} on the crontab line)",
                found.display(),
                found.display(),
                found.display()
            ));
        }
    }
    let found_text = match (version.is_empty(), release.shown.strip_prefix("; ")) {
        (true, None) => found.display().to_string(),
        (true, Some(shown)) => format!("{} ({shown})", found.display()),
        (false, _) => format!("{} ({version}{})", found.display(), release.shown),
    };
    ok_or_warn(DoctorCheck::Rch, found_text, &warnings, &fixes)
}

/// Whether two paths name one file (a `PATH` entry may reach it through a
/// symlinked folder).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => a == b,
    }
}

/// What `rch --version` told.
enum VersionAnswer {
    /// Exited 0: its first line.
    Told(String),
    /// Could not be started, or exited 126 or 127: a run's every recovery
    /// would be the same configuration error (78).
    Broken(String),
    /// Exited otherwise non-zero, or did not answer in time.
    Failed(String),
}

/// The first line `rch --version` prints, or why there is none: it could
/// not be started or exited 126/127 (quoting the last line of its stderr),
/// or did not exit 0 within [`VERSION_DEADLINE`] (its process group is
/// killed past it).
fn version(rch: &Path) -> VersionAnswer {
    let args = ["--version".into()];
    let spec = ChildSpec {
        program: rch,
        args: &args,
        env: &rch_env::for_rch(Vec::new()),
        remove: rch_env::REMOVED,
    };
    let report =
        match child::run_capturing(&spec, Capture::StdoutAndStderr, VERSION_DEADLINE, &|| false) {
            Ok(report) => report,
            Err(error) => {
                return VersionAnswer::Broken(format!("could not be started: {}", error.source));
            }
        };
    let said = last_line(&report.stderr_tail)
        .map(|line| format!(", saying: {line}"))
        .unwrap_or_default();
    match report.ending {
        Ending::Exited(status) if status.success() => {}
        Ending::Exited(status) if matches!(status.code(), Some(126 | 127)) => {
            return VersionAnswer::Broken(format!("failed: {status}{said}"));
        }
        Ending::Exited(status) => return VersionAnswer::Failed(format!("failed: {status}{said}")),
        Ending::TimedOut => {
            return VersionAnswer::Failed(format!(
                "did not answer within {}s (killed)",
                VERSION_DEADLINE.as_secs()
            ));
        }
        Ending::Interrupted => return VersionAnswer::Failed("was interrupted".to_owned()),
    }
    let text = String::from_utf8_lossy(&report.tail);
    let line = text.lines().map(str::trim).find(|line| !line.is_empty());
    VersionAnswer::Told(
        line.map(|line| log::printable(line).chars().take(200).collect())
            .unwrap_or_else(|| "printed nothing".to_owned()),
    )
}

/// Whether `<rch> jobs recover --help` exits 0 within [`VERSION_DEADLINE`]:
/// an `rch` that cannot recover a lease (rch 1.x has no `jobs` command;
/// clap exits 2) would make a run's first recovery a configuration error.
/// The error quotes its stderr's telling line (clap's `error:` line, else
/// the last).
fn recovers(rch: &Path) -> Result<(), String> {
    let args = ["jobs".into(), "recover".into(), "--help".into()];
    let spec = ChildSpec {
        program: rch,
        args: &args,
        env: &rch_env::for_rch(Vec::new()),
        remove: rch_env::REMOVED,
    };
    let report = child::run_capturing(&spec, Capture::StdoutAndStderr, VERSION_DEADLINE, &|| false)
        .map_err(|error| format!("could not be started: {}", error.source))?;
    let line = child::usage_line(&report.stderr_tail);
    let said = if line.is_empty() {
        String::new()
    } else {
        format!(", saying: {}", line.chars().take(200).collect::<String>())
    };
    match report.ending {
        Ending::Exited(status) if status.success() => Ok(()),
        Ending::Exited(status) => Err(format!("failed: {status}{said}")),
        Ending::TimedOut => Err(format!(
            "did not answer within {}s (killed)",
            VERSION_DEADLINE.as_secs()
        )),
        Ending::Interrupted => Err("was interrupted".to_owned()),
    }
}

/// The last non-empty line of a stderr tail, printable and at most 200
/// characters.
fn last_line(tail: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(tail);
    let line = text.lines().map(str::trim).rfind(|line| !line.is_empty())?;
    Some(log::printable(line).chars().take(200).collect())
}

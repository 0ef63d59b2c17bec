//! `rch-sweep doctor`: "will the timer's run work?", answered before the
//! timer finds out.
//!
//! It takes the options of `run`, so it checks the very lease directory,
//! state file, `rch` and metrics file a run with them would use, through
//! the same [`preflight`] checks a run stops at: what a run refuses, this
//! reports as `fail`. It adds what only a person needs to see (who holds a
//! lock, what `rch --version` and `rch --capabilities` say, what a timer's
//! `PATH` would find, whether rch's daemon answers where `rch` looks for it
//! and which rchd it is, what the journals look like, what the host and the
//! environment hold that a timer's run would not) and changes nothing: no file is written, renamed or created,
//! no lock taken, no program started but `<rch> --version`, `<rch>
//! --capabilities`, `<rch> jobs recover --help` and `<rch> --json --format
//! json daemon status`.
//!
//! `--as ROUTE` answers for the run cron or a unit starts rather than for
//! this shell: [`super::doctor_as`] reads the route's crontab or unit and
//! re-executes this very binary with its options in its environment.

use super::{Target, doctor_rch};
use crate::child::{self, Capture, ChildSpec, Ending};
use crate::cli::{DoctorArgs, RunArgs};
use crate::config;
use crate::exit::ExitCode;
use crate::held::Told;
use crate::lease_dir::{LeaseDirFound, recovery_lock};
use crate::owner::ProcFs;
use crate::plan::{self, Slot};
use crate::preflight::{self, DoctorCheck, Finding, Intent, Status};
use crate::scan::{self, Scan, ScanOptions};
use crate::state::backoff::{Backoff, now_unix_ms};
use crate::verdict::SkipReason;
use crate::{account, daemon, host, log, rch_env, recover, release, route, state};
use anyhow::Result;
use std::borrow::Borrow;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long `rch --version` (and `--capabilities`) may take.
const VERSION_DEADLINE: Duration = Duration::from_secs(10);

pub fn run(args: DoctorArgs) -> Result<ExitCode> {
    if let Some(route) = args.route {
        let handed = super::doctor_as::FromDoctor {
            given: given_on_command_line(),
            human: |findings| human(findings, colour()),
        };
        return super::doctor_as::run(route, &args.run, &handed);
    }
    let in_route = args.in_route;
    let route_fails = args.route_fails;
    let args = args.run;
    super::run::check_args(&args)?;
    super::run::refuse_tilde(&args)?;
    let target = Target::resolve(&args.paths);
    // `rch --version` before rch is asked for its daemon, as listed.
    let rch_finding = not_yet(&target, rch(&args));
    let (daemon_finding, rch_socket) = daemon(&target, &args);
    let mut findings = vec![
        preflight::lease_dir(&target.lease_dir, Intent::Doctor),
        not_yet(&target, state(&target)),
        preflight::locks_held(&target.lease_dir, &target.state_file),
        rch_finding,
        not_yet(&target, daemon_finding),
    ];
    if let Some(path) = &args.metrics_file {
        findings.push(preflight::metrics_and_others(
            path,
            &target.lease_dir.resolved,
        ));
    }
    findings.push(journals(&target, &args));
    findings.push(host_check(&target));
    findings.push(match in_route {
        Some(route) => super::doctor_as::environment_finding(route, &route_fails),
        None => environment(&args, rch_socket.as_deref()),
    });
    let code = if findings.iter().any(|f| f.status == Status::Fail) {
        ExitCode::Failed
    } else {
        ExitCode::Success
    };
    let text = if args.json {
        json(&findings, code)
    } else {
        human(&findings, colour())
    };
    // A closed stdout (`| head`) is not worth an error.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(code)
}

/// While the lease directory does not exist a run has nothing to sweep and
/// exits 0 before it looks at the state or `rch` (the metrics file it still
/// writes, so that check stands): what would fail it once rch creates the
/// directory is a warning now, since a run refuses exactly what doctor
/// fails.
fn not_yet(target: &Target, finding: Finding) -> Finding {
    if finding.status != Status::Fail || !matches!(target.lease_dir.found, LeaseDirFound::Missing) {
        return finding;
    }
    Finding::warn(
        finding.check,
        format!(
            "{}; a run now exits 0 (no lease directory yet), but once rch creates it a run exits {}",
            finding.finding,
            finding.code.code()
        ),
        finding.fix.unwrap_or_default(),
    )
}

/// The state path and folder (what a run refuses before its lock), then
/// the file's content (what it refuses once it reads it).
fn state(target: &Target) -> Finding {
    // Another user's, private to them: nothing more to see (a run by this
    // user is refused by the lease directory's check).
    if let Some(hidden) = preflight::hidden_backoff(&target.lease_dir, &target.state_file) {
        return hidden.finding(&target.state_file);
    }
    let path = preflight::state_path(&target.lease_dir, &target.state_file, Intent::Doctor);
    if path.status == Status::Fail {
        return path;
    }
    let content = preflight::state_content(&target.state_file, Intent::Doctor);
    if content.status == Status::Ok && path.status == Status::Warn {
        return path;
    }
    content
}

/// `rch` as a run finds it; then what it says of itself (the first line of
/// `--version`, and its own release from `--capabilities`: see
/// [`doctor_rch`]), with a warning for a release with known limits, and
/// whether a timer's and cron's `PATH` find the same one.
fn rch(args: &RunArgs) -> Finding {
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
    let release = doctor_rch::release(
        &version,
        &doctor_rch::capabilities(&found, VERSION_DEADLINE),
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

/// What a check found: ok with nothing to warn of, else a warning that
/// adds each concern to what was found and gives every fix.
fn ok_or_warn<F: Borrow<str>>(
    check: DoctorCheck,
    found: String,
    warnings: &[String],
    fixes: &[F],
) -> Finding {
    if warnings.is_empty() {
        Finding::ok(check, found)
    } else {
        Finding::warn(
            check,
            format!("{found}; {}", warnings.join("; ")),
            fixes.join("; "),
        )
    }
}

/// rch's daemon as a run with something due would check it (SPEC "rch's
/// daemon"): the socket `--socket` / `RCH_SOCKET_PATH` names, else the one
/// `rch --json --format json daemon status` says it resolves, asked in the
/// children's environment; then whether a daemon answers there, and when
/// not, whether one of this user's answers at another usual place.
fn daemon(target: &Target, args: &RunArgs) -> (Finding, Option<PathBuf>) {
    let check = DoctorCheck::Daemon;
    let rch = preflight::rch(
        args.rch.as_deref(),
        std::env::var_os("PATH").as_deref(),
        std::env::var_os("HOME").as_deref(),
    );
    let rch = match (rch, &args.socket) {
        (Ok(rch), _) => rch,
        // Only the socket is needed, and it is named.
        (Err(_), Some(_)) => Default::default(),
        (Err(_), None) => {
            let finding = Finding::warn(
                check,
                "not checked: there is no rch to ask which socket it uses (see rch above)",
                "install rch, or name the daemon's socket: --socket PATH / RCH_SOCKET_PATH",
            );
            return (finding, None);
        }
    };
    let settings = recover::Settings {
        rch,
        socket: None,
        daemon_waits: None,
        daemon_trust: daemon::Trust::ThisUser,
        // doctor recovers nothing: no completion or answer is read here.
        release: None,
        lease_dir: target.lease_dir.resolved.clone(),
        state_home: target.lease_dir.state_home().to_path_buf(),
        recover_timeout: Duration::ZERO,
        kill_grace: Duration::ZERO,
    };
    let env = recover::child_env(&settings);
    let (socket, chosen_by) = match daemon::which(
        args.socket.as_deref(),
        &settings.rch,
        &env,
        &|| false,
    ) {
        Ok(found) => found,
        Err(daemon::Unnamed::NoAnswer(why)) => {
            let finding = Finding::warn(
                check,
                format!(
                    "`{} --json --format json daemon status` {why}: rch names no socket, so a run checks no daemon, and while one is down every recovery fails and is charged to its lease",
                    settings.rch.display()
                ),
                "use an rch that has `rch daemon status`, or name the daemon's socket: --socket PATH / RCH_SOCKET_PATH=PATH (on the crontab line or in the unit's drop-in)",
            );
            return (finding, None);
        }
        Err(daemon::Unnamed::HostFault(why) | daemon::Unnamed::Unstartable(why)) => {
            let finding = Finding::warn(
                check,
                format!("not checked: {why}"),
                "see the rch check above; a run that cannot ask rch starts no recovery (75 or 78)",
            );
            return (finding, None);
        }
        Err(daemon::Unnamed::Stopped) => {
            return (Finding::warn(check, "not checked: interrupted", ""), None);
        }
    };
    let named_by_rch = (chosen_by == daemon::ChosenBy::Rch).then(|| socket.clone());
    let Ok(report) = daemon::check(socket, chosen_by, &daemon::Waits::for_this_build(), &|| {
        false
    }) else {
        return (Finding::warn(check, "not checked: interrupted", ""), None);
    };
    (daemon_finding(&report), named_by_rch)
}

/// How long a daemon may take to answer before doctor warns: rch itself
/// gives up connecting after 3 s.
const SLOW_REPLY: Duration = Duration::from_secs(3);

/// The `daemon` check's finding from the check's report: a fail when it
/// does not answer (as a run would stop), a warning when it answers slowly
/// or its listener is another user's (only a socket named explicitly is
/// used so), else ok with the reply's time.
fn daemon_finding(report: &daemon::Report) -> Finding {
    let check = DoctorCheck::Daemon;
    if let Some(fix) = report.fix() {
        return Finding::fail(check, report.exit_code(), report.line(), fix);
    }
    let Some(answer) = report.answer else {
        return Finding::ok(check, report.line());
    };
    let rchd = answer
        .rchd
        .map(|version| format!(" (rchd {version})"))
        .unwrap_or_default();
    let found = format!("{}, in {}{rchd}", report.line(), took(answer.took));
    let mut warnings = Vec::new();
    let mut fixes = Vec::new();
    // rchd's own release, whatever rch's: 2.1.8–2.1.16 recover leases
    // themselves, unlocked.
    if let Some(version) = answer.rchd.filter(|v| release::rchd_recovers_unlocked(*v)) {
        let (finding, fix) = release::rchd_unlocked_finding(version);
        warnings.push(finding);
        fixes.push(fix);
    }
    if !daemon::is_this_users(answer.listener, account::euid()) {
        warnings.push(format!(
            "{}: every recovery would go to it",
            daemon::foreign_listener(&report.socket, answer.listener)
        ));
        fixes.push("name the socket of this user's own rch daemon (--socket / RCH_SOCKET_PATH), unless that user's daemon is meant to serve this one".to_owned());
    }
    if answer.took > SLOW_REPLY {
        warnings.push(format!(
            "its reply took longer than {} (rch itself gives up connecting after 3 s)",
            took(SLOW_REPLY)
        ));
        fixes.push("find out why rch's daemon is slow (systemctl --user status rchd, its log, the host's load)".to_owned());
    }
    ok_or_warn(check, found, &warnings, &fixes)
}

/// `12 ms`, or `3.4 s` from a second on.
fn took(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        format!("{} ms", duration.as_millis())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
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

/// The counts a dry run would give, and what in them asks for a look.
fn journals(target: &Target, args: &RunArgs) -> Finding {
    let check = DoctorCheck::Journals;
    match &target.lease_dir.found {
        LeaseDirFound::Missing => {
            return Finding::ok(check, "no lease directory yet: nothing to judge");
        }
        LeaseDirFound::NotADirectory | LeaseDirFound::Unreadable(_) => {
            return Finding::warn(
                check,
                "not judged: the lease directory cannot be read",
                "see lease_dir above",
            );
        }
        LeaseDirFound::Directory { .. } => {}
    }
    let now = now_unix_ms();
    let opened = target.lease_dir.open();
    let scanned = match &opened {
        Ok(dir) => {
            let options = ScanOptions {
                now_unix_ms: now,
                stale_after_ms: args.stale_after.saturating_mul(1000),
                keep_skipped: false,
            };
            scan::scan(dir, &options, &ProcFs::system())
        }
        Err(error) => Err(std::io::Error::new(error.kind(), error.to_string())),
    };
    let scan = match scanned {
        Ok(scan) => scan,
        Err(error) => {
            return Finding::warn(
                check,
                format!("not judged: cannot list the lease directory: {error}"),
                "check its permissions and the disk",
            );
        }
    };
    let mut backoff = match state::load(&target.state_file, state::Access::Read) {
        Ok(state::Loaded::Valid(backoff)) => backoff,
        _ => Backoff::empty(),
    };
    backoff.prune(&scan.candidates, now, args.backoff_max.saturating_mul(1000));
    let slots = plan::dry_run(
        &scan.candidates,
        &backoff,
        now,
        usize::from(args.max_recoveries),
    );
    let mut counts = journal_counts(&scan, &slots);
    let (mut warnings, mut fixes) = journal_concerns(&scan);
    match crate::held::for_doctor(&backoff, now) {
        Some(Told::Note(note)) => {
            let _ = write!(counts, "; {note}");
        }
        Some(Told::Warning(warning, fix)) => {
            warnings.push(warning);
            fixes.push(fix);
        }
        None => {}
    }
    if let Ok(dir) = &opened {
        let refused = refused_locks(dir, &target.lease_dir.resolved, &scan);
        if !refused.is_empty() {
            warnings.push(format!(
                "{} candidate{} recovery lock{} rch refuses (a run defers {} and exits 74): {}",
                refused.len(),
                if refused.len() == 1 { "'s" } else { "s'" },
                if refused.len() == 1 {
                    " is one"
                } else {
                    "s are ones"
                },
                if refused.len() == 1 { "it" } else { "them" },
                refused
                    .iter()
                    .map(|refusal| refusal.error())
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
            fixes.push(
                refused
                    .iter()
                    .map(recovery_lock::LockRefusal::fix)
                    .collect::<Vec<_>>()
                    .join("; "),
            );
        }
    }
    ok_or_warn(check, counts, &warnings, &fixes)
}

/// The recovery locks of `scan`'s candidates that rch refuses (not a
/// regular file, another user's, more than one link, open to group or
/// others), each with why, in `lease_dir`.
fn refused_locks(
    dir: &crate::lease_dir::LeaseDir,
    lease_dir: &Path,
    scan: &Scan,
) -> Vec<recovery_lock::LockRefusal> {
    use std::os::fd::AsFd;
    scan.candidates
        .iter()
        .filter_map(|candidate| {
            recovery_lock::refusal_at(dir.as_fd(), lease_dir, &candidate.wrapper_id)
        })
        .collect()
}

/// What a dry run would count: journals, candidates by their slot in the
/// plan, and the skipped ones by reason.
fn journal_counts(scan: &Scan, slots: &[Slot]) -> String {
    let count = |slot: Slot| slots.iter().filter(|s| **s == slot).count();
    let skipped: Vec<String> = SkipReason::ALL
        .iter()
        .filter(|reason| scan.skipped[reason.index()] > 0)
        .map(|reason| format!("{} {}", scan.skipped[reason.index()], reason.as_str()))
        .collect();
    let mut counts = format!(
        "{} journal{}: {} candidate{} ({} would recover now, {} backing off, {} deferred)",
        scan.scanned,
        if scan.scanned == 1 { "" } else { "s" },
        scan.candidates.len(),
        if scan.candidates.len() == 1 { "" } else { "s" },
        count(Slot::WouldRecover),
        count(Slot::BackingOff),
        count(Slot::Deferred),
    );
    let total: usize = scan.skipped.iter().sum();
    if total > 0 {
        let _ = write!(counts, ", {total} skipped ({})", skipped.join(", "));
    }
    counts
}

/// What in a scan asks for a look, and what to do about it: journals
/// never recovered as they stand, and heartbeats from a clock ahead.
fn journal_concerns(scan: &Scan) -> (Vec<String>, Vec<String>) {
    let odd: Vec<String> = [
        SkipReason::Malformed,
        SkipReason::Unreadable,
        SkipReason::OwnerUnverified,
    ]
    .iter()
    .filter(|reason| scan.skipped[reason.index()] > 0)
    .map(|reason| format!("{} {}", scan.skipped[reason.index()], reason.as_str()))
    .collect();
    let mut warnings = Vec::new();
    let mut fixes = Vec::new();
    if !odd.is_empty() {
        warnings.push(format!("never recovered as they stand: {}", odd.join(", ")));
        fixes.push(
            "see why: rch-sweep --dry-run -v lists them, rch-sweep explain WRAPPER_ID shows the evidence"
                .to_owned(),
        );
    }
    if scan.heartbeats_ahead > 0 {
        warnings.push(format!(
            "{} heartbeat{} more than {} s in the future: this machine's clock is behind, and such leases look fresh",
            scan.heartbeats_ahead,
            if scan.heartbeats_ahead == 1 { " lies" } else { "s lie" },
            scan::CLOCK_AHEAD_MS / 1000
        ));
        fixes.push(
            "check time sync (timedatectl status, chronyc tracking); such a lease waits until its heartbeat's time has passed, or recover it by hand: rch jobs recover <id>"
                .to_owned(),
        );
    }
    (warnings, fixes)
}

/// The host a run meets: its PID namespace, and room where the state is
/// saved (none at all fails: a run would exit 74).
fn host_check(target: &Target) -> Finding {
    let facts = host::look(&target.state_file);
    let concerns = host::concerns(&facts);
    if concerns.is_empty() {
        return Finding::ok(DoctorCheck::Host, host::summary(&facts));
    }
    let fatal = concerns.iter().any(|concern| concern.fatal);
    let (findings, fixes): (Vec<String>, Vec<String>) = concerns
        .into_iter()
        .map(|concern| (concern.finding, concern.fix))
        .unzip();
    let (finding, fix) = (findings.join("; "), fixes.join("; "));
    if fatal {
        Finding::fail(DoctorCheck::Host, ExitCode::Io, finding, fix)
    } else {
        Finding::warn(DoctorCheck::Host, finding, fix)
    }
}

/// Which decisions of this run rest on a variable a timer or cron line
/// lacks ([`route::rests_on`]), and how to carry each over.
/// `rch_socket`: the socket `rch` named when doctor asked it (the daemon
/// check), if it did.
fn environment(args: &RunArgs, rch_socket: Option<&Path>) -> Finding {
    let env = config::process_env;
    let explicit = args.rch.as_deref();
    let name = explicit.unwrap_or(Path::new("rch"));
    let bare = name.components().count() == 1 && !name.is_absolute();
    let rch_path_entry = if bare {
        let path_var = env("PATH").unwrap_or_default();
        std::env::split_paths(&path_var)
            .filter(|dir| dir.is_absolute())
            .find(|dir| config::is_executable(&dir.join(name)))
    } else {
        None
    };
    // The socket rests on XDG_RUNTIME_DIR when rch named one under it; an
    // rch that names none resolves `$XDG_RUNTIME_DIR/rch.sock` when a
    // socket stands there and no config file says otherwise.
    let runtime_socket = env("XDG_RUNTIME_DIR").is_some_and(|dir| match rch_socket {
        Some(socket) => socket.starts_with(&dir),
        None => {
            use std::os::unix::fs::FileTypeExt;
            std::fs::symlink_metadata(PathBuf::from(dir).join("rch.sock"))
                .is_ok_and(|meta| meta.file_type().is_socket())
        }
    });
    let facts = route::EnvironmentFacts {
        env: &env,
        given: given_on_command_line(),
        uid: account::euid(),
        rch_path_entry,
        runtime_socket,
    };
    let rests = route::rests_on(&facts);
    let empty = empty_state_homes(config::set_but_empty);
    if rests.is_empty() && empty.is_none() {
        return Finding::ok(
            DoctorCheck::Environment,
            "no decision rests on a variable a timer or cron line lacks",
        );
    }
    let mut found = Vec::new();
    let mut fixes = Vec::new();
    if !rests.is_empty() {
        let findings: Vec<&str> = rests.iter().map(|rest| rest.finding.as_str()).collect();
        let settings: Vec<&str> = rests.iter().map(|rest| rest.setting.as_str()).collect();
        found.push(format!(
            "decisions rest on variables a timer or cron line lacks: {}",
            findings.join("; ")
        ));
        fixes.push(format!(
            "carry them over: {} on the crontab line (above it, or before the command), or Environment= lines in a drop-in (systemctl --user edit rch-sweep.service, or systemctl edit rch-sweep@USER.service); then check with `rch-sweep doctor --as cron` or `--as user-timer`",
            settings.join(" ")
        ));
    }
    if let Some((finding, fix)) = empty {
        found.push(finding);
        fixes.push(fix);
    }
    Finding::warn(DoctorCheck::Environment, found.join("; "), fixes.join("; "))
}

/// `RCH_STATE_HOME` or `XDG_STATE_HOME` set but empty (as
/// `set_but_empty` tells): rch-sweep takes such a variable as unset, as
/// the XDG rules say, but rch 2.1 joins it into a relative path, so its
/// wrappers write leases under whatever folder they ran in. The finding
/// and its fix, when any is.
fn empty_state_homes(set_but_empty: impl Fn(&str) -> bool) -> Option<(String, String)> {
    let names: Vec<&str> = ["RCH_STATE_HOME", "XDG_STATE_HOME"]
        .into_iter()
        .filter(|name| set_but_empty(name))
        .collect();
    if names.is_empty() {
        return None;
    }
    let which = names.join(" and ");
    let verb = if names.len() == 1 { "is" } else { "are" };
    Some((
        format!(
            "{which} {verb} set but empty: rch-sweep takes an empty variable as unset, but rch 2.1 then writes leases under the working folder of each wrapper (rch/job-leases), where no sweep looks"
        ),
        format!(
            "unset {which} (or set it to a folder) wherever rch's wrappers run, and in the sweep's environment"
        ),
    ))
}

/// Which of the options a route keeps were given on the command line
/// rather than by their variables (clap merges the two; its matches know).
fn given_on_command_line() -> route::Given {
    use clap::CommandFactory;
    use clap::parser::ValueSource;
    let Ok(matches) = crate::cli::Cli::command().try_get_matches_from(crate::cli::args_os()) else {
        return route::Given::default();
    };
    let Some(doctor) = matches.subcommand_matches("doctor") else {
        return route::Given::default();
    };
    let given = |id: &str| doctor.value_source(id) == Some(ValueSource::CommandLine);
    route::Given {
        lease_dir: given("lease_dir"),
        state_file: given("state_file"),
        rch: given("rch"),
        socket: given("socket"),
        metrics_file: given("metrics_file"),
    }
}

/// Colour only for a person: stdout is a terminal and `NO_COLOR` is unset
/// (or empty, which counts as unset here as everywhere).
fn colour() -> bool {
    use std::io::IsTerminal;
    let terminal = std::io::stdout().is_terminal();
    terminal && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// One line per check, aligned, status first; the fix on the next line,
/// under the finding.
fn human(findings: &[Finding], colour: bool) -> String {
    let width = findings
        .iter()
        .map(|f| f.check.as_str().len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for finding in findings {
        let status = finding.status.as_str();
        let shown = if colour {
            let code = match finding.status {
                Status::Ok => "32",
                Status::Warn => "33",
                Status::Fail => "31;1",
            };
            format!("\x1b[{code}m{status:4}\x1b[0m")
        } else {
            format!("{status:4}")
        };
        let _ = writeln!(
            out,
            "{shown}  {:width$}  {}",
            finding.check.as_str(),
            log::printable(&finding.finding)
        );
        if let Some(fix) = finding
            .fix
            .as_deref()
            .filter(|_| finding.status != Status::Ok)
        {
            let _ = writeln!(out, "{:4}  {:width$}  fix: {}", "", "", log::printable(fix));
        }
    }
    out
}

/// SPEC's document: `{"version": 1, "checks": [...], "exit_code": N}`,
/// from structs, so the keys come in SPEC's order.
fn json(findings: &[Finding], code: ExitCode) -> String {
    #[derive(serde::Serialize)]
    struct Row<'a> {
        check: &'a str,
        status: &'a str,
        finding: &'a str,
        fix: Option<&'a str>,
    }
    #[derive(serde::Serialize)]
    struct DoctorDocument<'a> {
        version: u32,
        checks: Vec<Row<'a>>,
        exit_code: i32,
    }
    let checks = findings
        .iter()
        .map(|finding| Row {
            check: finding.check.as_str(),
            status: finding.status.as_str(),
            finding: &finding.finding,
            fix: finding
                .fix
                .as_deref()
                .filter(|_| finding.status != Status::Ok),
        })
        .collect();
    let document = DoctorDocument {
        version: 1,
        checks,
        exit_code: code.code(),
    };
    format!("{}\n", serde_json::to_string(&document).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings() -> Vec<Finding> {
        vec![
            Finding::ok(DoctorCheck::LeaseDir, "/l, owned by alice (uid 1000)"),
            Finding::warn(
                DoctorCheck::State,
                "state folder /s does not exist yet",
                "nothing to do",
            ),
            Finding::fail(
                DoctorCheck::Rch,
                ExitCode::Config,
                "rch client: not found",
                "install rch",
            ),
        ]
    }

    #[test]
    fn text_aligns_checks_and_puts_each_fix_under_its_finding() {
        let text = human(&findings(), false);
        let under = " ".repeat("warn  lease_dir  ".len());
        assert_eq!(
            text,
            format!(
                "ok    lease_dir  /l, owned by alice (uid 1000)\n\
                 warn  state      state folder /s does not exist yet\n\
                 {under}fix: nothing to do\n\
                 fail  rch        rch client: not found\n\
                 {under}fix: install rch\n"
            )
        );
        assert!(human(&findings(), true).contains("\x1b[31;1mfail\x1b[0m"));
    }

    #[test]
    fn an_empty_state_home_variable_is_named() {
        assert_eq!(empty_state_homes(|_| false), None);
        let (finding, fix) = empty_state_homes(|name| name == "XDG_STATE_HOME").expect("a warning");
        assert!(
            finding.starts_with("XDG_STATE_HOME is set but empty")
                && finding.contains("rch/job-leases"),
            "{finding}"
        );
        assert!(fix.starts_with("unset XDG_STATE_HOME"), "{fix}");
        let (both, _) = empty_state_homes(|_| true).expect("a warning");
        assert!(
            both.starts_with("RCH_STATE_HOME and XDG_STATE_HOME are set but empty"),
            "{both}"
        );
    }

    #[test]
    fn json_lists_every_check_in_order_with_a_null_fix_when_ok() {
        let value: serde_json::Value =
            serde_json::from_str(&json(&findings(), ExitCode::Failed)).expect("json");
        assert_eq!(value["version"], 1);
        assert_eq!(value["exit_code"], 1);
        let checks = value["checks"].as_array().expect("checks");
        let names: Vec<&str> = checks
            .iter()
            .map(|c| c["check"].as_str().expect("name"))
            .collect();
        assert_eq!(names, ["lease_dir", "state", "rch"]);
        assert!(checks[0]["fix"].is_null());
        assert_eq!(checks[2]["status"], "fail");
        assert_eq!(checks[2]["fix"], "install rch");
    }
}

//! doctor's `daemon` check: the socket a run would check (named, or the
//! one `rch` names), whether a daemon answers there, how fast, and whose
//! it is.

use super::super::Target;
use super::ok_or_warn;
use crate::cli::RunArgs;
use crate::sweep::preflight::{self, DoctorCheck, Finding};
use crate::{account, rch::daemon, rch::recover, rch::release};
use std::path::PathBuf;
use std::time::Duration;

/// rch's daemon as a run with something due would check it (SPEC "rch's
/// daemon"): the socket `--socket` / `RCH_SOCKET_PATH` names, else the one
/// `rch --json --format json daemon status` says it resolves, asked in the
/// children's environment; then whether a daemon answers there, and when
/// not, whether one of this user's answers at another usual place.
pub(super) fn daemon(target: &Target, args: &RunArgs) -> (Finding, Option<PathBuf>) {
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

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
//! environment hold that a timer's run would not) and changes nothing: no
//! file is written, renamed or created, no lock taken, no program started
//! but those [`crate::cli::DOCTOR_STARTS`] lists (the one list `--help`, the
//! man page and the README give).
//!
//! `--as ROUTE` answers for the run cron or a unit starts rather than for
//! this shell: [`super::doctor_as`] reads the route's crontab or unit and
//! re-executes this very binary with its options in its environment.
//!
//! Its rooms, one a check that needs more than [`preflight`] gives:
//! [`rch_client`] and [`rch_release`] (`rch`: the client found and run,
//! and which release it is), [`daemon`](mod@daemon) (`daemon`),
//! [`journals`](mod@journals) (`journals`),
//! [`environment`](mod@environment) (`environment`). This file runs them in
//! doctor's order, adds the thin ones (`state`, `host`), and prints the
//! findings for people or as SPEC's JSON document.

pub mod daemon;
pub mod environment;
pub mod journals;
pub mod rch_client;
pub mod rch_release;

use super::Target;
use crate::cli::DoctorArgs;
use crate::exit::ExitCode;
use crate::lease_dir::LeaseDirFound;
use crate::sweep::preflight::{self, DoctorCheck, Finding, Intent, Status};
use crate::{judge::host, log};
use anyhow::Result;
use daemon::daemon;
use environment::{environment, given_on_command_line};
use journals::journals;
use rch_client::rch;
use std::borrow::Borrow;
use std::fmt::Write as _;
use std::io::Write as _;

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

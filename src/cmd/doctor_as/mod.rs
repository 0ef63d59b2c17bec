//! `doctor --as ROUTE`: the checks of `doctor` as a run started by cron or
//! a unit meets them, read from that route's own configuration.
//!
//! cron: the user's crontab as `crontab -l` prints it and this user's
//! lines of `/etc/crontab` and `/etc/cron.d`, read by [`crontab`]: every
//! line that runs rch-sweep (through its wrappers) is checked with its own
//! options in its own environment, one report each; a line doctor cannot
//! follow is listed with a warning, and when no line can be followed the
//! `environment` check fails and nothing else is checked. The units: `rch-sweep.service` of the user manager,
//! `rch-sweep@<user>.service` of the system manager, as the running
//! manager describes it (`systemctl show`), else as its files on disk
//! merge ([`unit_file`]), else the shipped unit. Each check runs in this
//! very binary again (`/proc/self/exe`), with the route's options in the
//! route's environment and working directory and nothing else; doctor's
//! own options stand in only where the route gives none. The reading here
//! is thin: the decisions are in [`crontab`], [`unit_file`] and
//! [`route`].

use crate::cli::{Route, RunArgs};
use crate::exit::{ExitCode, Fatal};
use crate::rch::child::{self, Capture, ChildSpec, Ending};
use crate::route::vars::{self, Vars};
use crate::sweep::preflight::{DoctorCheck, Finding};
use crate::{account, config, log, route};
use anyhow::Result;
use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod cron;
mod unit;

/// How long `crontab -l` and `systemctl show` may take.
const READ_DEADLINE: Duration = Duration::from_secs(10);

/// What `doctor` hands `doctor --as`: this module takes nothing else of
/// doctor's (so neither imports the other).
pub struct FromDoctor {
    /// Which options were given on doctor's command line.
    pub given: route::Given,
    /// doctor's text for a list of findings, as it prints its own.
    pub human: fn(&[Finding]) -> String,
}

/// One run of doctor as the route would start rch-sweep.
struct Planned {
    /// The crontab line it stands for: its number and text.
    line: Option<(usize, String)>,
    /// The system crontab that holds the line (`None`: the user's own).
    file: Option<String>,
    env: Vars,
    cwd: PathBuf,
    /// The route's own options; `None`: doctor's own.
    options: Option<Vec<String>>,
    /// What the route would refuse of this run alone (a crontab line cron
    /// cannot start), on top of the plan's `failures`.
    failures: Vec<String>,
}

/// What a route gives, and what doctor has to say about reading it.
#[derive(Default)]
struct Plan {
    /// Where it was read from.
    from: Vec<String>,
    warnings: Vec<String>,
    notes: Vec<String>,
    /// What the route would refuse to start (each names the setting and
    /// the file holding it): the `environment` check of every run fails.
    failures: Vec<String>,
    runs: Vec<Planned>,
    /// Why no run can be checked as the route starts it: the
    /// `environment` check fails with this, and nothing else is checked.
    refused: Option<Unfollowed>,
}

/// The `environment` check's failure when doctor cannot tell what the
/// route runs.
struct Unfollowed {
    finding: String,
    fix: String,
}

pub fn run(route: Route, args: &RunArgs, doctor: &FromDoctor) -> Result<ExitCode> {
    let uid = account::euid();
    let account = account::entry(uid);
    let base =
        route::environment(route, uid, account.as_ref(), config::process_env).map_err(|why| {
            Fatal::error(
                ExitCode::Config,
                format!("doctor --as {}: {why}", route.as_str()),
            )
        })?;
    let base_vars: Vars = base
        .vars
        .iter()
        .map(|(name, value)| ((*name).to_owned(), value.to_string_lossy().into_owned()))
        .collect();
    let plan = match route {
        Route::Cron => cron::plan(&base_vars, account.as_ref(), &base.cwd),
        Route::UserTimer | Route::SystemTimer => {
            unit::plan(route, uid, account.as_ref(), &base_vars).map_err(|why| {
                Fatal::error(
                    ExitCode::Config,
                    format!("doctor --as {}: {why}", route.as_str()),
                )
            })?
        }
    };
    if let Some(refusal) = &plan.refused {
        return Ok(refused(route, args, &plan, refusal, doctor));
    }
    report(route, args, &plan, doctor.given)
}

/// Prints the one failed check when no run can be checked, and exits 1:
/// never doctor's own options instead, which would check a sweep the
/// route never starts.
fn refused(
    route: Route,
    args: &RunArgs,
    plan: &Plan,
    refusal: &Unfollowed,
    doctor: &FromDoctor,
) -> ExitCode {
    let code = ExitCode::Failed;
    let finding = Finding::fail(
        DoctorCheck::Environment,
        code,
        refusal.finding.clone(),
        refusal.fix.clone(),
    );
    let mut stdout = std::io::stdout();
    if args.json {
        let document = RouteDocument {
            version: 1,
            route: route.as_str(),
            checks: vec![CheckRow {
                check: DoctorCheck::Environment.as_str().to_owned(),
                status: "fail".to_owned(),
                finding: refusal.finding.clone(),
                fix: Some(refusal.fix.clone()),
                line: None,
            }],
            reports: None,
            from: &plan.from,
            warnings: &plan.warnings,
            notes: &plan.notes,
            exit_code: code.code(),
            error: None,
        };
        let text = serde_json::to_string(&document).unwrap_or_default();
        let _ = writeln!(stdout, "{text}");
    } else {
        let _ = write!(
            stdout,
            "as {}: no run doctor can check\n{}{}",
            route.as_str(),
            route_lines(plan, &plan.notes),
            (doctor.human)(std::slice::from_ref(&finding))
        );
    }
    code
}

/// Finds a program as `execvp` would on this process's `PATH` (absolute
/// entries only), else at the usual places.
fn program(name: &str, usual: &[&str]) -> Option<PathBuf> {
    let path = config::process_env("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .chain(usual.iter().map(PathBuf::from))
        .find(|candidate| config::is_executable(candidate))
}

/// What a reading program printed, or why it printed nothing usable.
enum ToolAnswer {
    Out(String),
    /// Exited non-zero: its code and the last line of its stderr.
    Failed(Option<i32>, String),
    /// Could not be run, timed out, or printed more than is kept.
    Broken(String),
}

/// Runs `program args` (stdin from `/dev/null`, within [`READ_DEADLINE`]).
fn ask(program: &Path, args: &[&str]) -> ToolAnswer {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let spec = ChildSpec {
        program,
        args: &args,
        env: &[],
        remove: &[],
    };
    let report = match child::run_capturing(&spec, Capture::StdoutAndStderr, READ_DEADLINE, &|| {
        false
    }) {
        Ok(report) => report,
        Err(error) => return ToolAnswer::Broken(format!("could not be started: {}", error.source)),
    };
    match report.ending {
        Ending::Exited(status) if status.success() => {
            if report.tail_overflowed {
                return ToolAnswer::Broken(format!(
                    "printed more than the {} KiB doctor reads",
                    child::TAIL_BYTES / 1024
                ));
            }
            ToolAnswer::Out(String::from_utf8_lossy(&report.tail).into_owned())
        }
        Ending::Exited(status) => {
            ToolAnswer::Failed(status.code(), child::last_line(&report.stderr_tail))
        }
        Ending::TimedOut => ToolAnswer::Broken(format!(
            "did not answer within {}s (killed)",
            READ_DEADLINE.as_secs()
        )),
        Ending::Interrupted => ToolAnswer::Broken("was interrupted".to_owned()),
    }
}

/// An option a route gives that only doctor takes: its run exits 2, and
/// doctor must not follow it into another `--as`.
fn refused_option(args: &[String]) -> Option<String> {
    args.iter()
        .find(|arg| *arg == "--as" || arg.starts_with("--as="))
        .map(|_| "--as, an option of doctor only (the run exits 2 on it)".to_owned())
}

/// `--quiet` and `--json`: how doctor prints, kept as given to doctor.
pub(super) fn is_output_flag(arg: &str) -> bool {
    matches!(arg, "--quiet" | "-q" | "--json")
}

/// The arguments of the doctor run for `planned`: the route's options
/// (less `--quiet`, `--json`) with doctor's own `--json` and `--quiet`, or
/// doctor's own command line less `--as`.
fn child_args(
    route: Route,
    planned: &Planned,
    failures: &[String],
    args: &RunArgs,
    own: &[OsString],
) -> Vec<OsString> {
    let mut argv = match &planned.options {
        None => without_as(own),
        Some(options) => {
            let mut out: Vec<OsString> = vec!["doctor".into()];
            out.extend(
                options
                    .iter()
                    .filter(|arg| !is_output_flag(arg))
                    .map(OsString::from),
            );
            if args.json {
                out.push("--json".into());
            }
            if args.quiet {
                out.push("--quiet".into());
            }
            out
        }
    };
    argv.extend(["--in-route".into(), route.as_str().into()]);
    for failure in failures {
        argv.push(format!("--route-fail={failure}").into());
    }
    argv
}

/// The `environment` check of a doctor that `doctor --as` re-executed:
/// its environment is the route's own, so nothing in it rests on a login
/// shell's variables; it fails with what the route would refuse to start
/// (`failures`, handed over by `--route-fail`).
pub(super) fn environment_finding(
    route: Route,
    failures: &[String],
) -> crate::sweep::preflight::Finding {
    use crate::sweep::preflight::{DoctorCheck, Finding};
    if failures.is_empty() {
        return Finding::ok(
            DoctorCheck::Environment,
            format!(
                "this is the environment {} gives the run (doctor --as {}), nothing of a login shell's",
                route.as_str(),
                route.as_str()
            ),
        );
    }
    Finding::fail(
        DoctorCheck::Environment,
        ExitCode::Failed,
        format!(
            "{} would not run rch-sweep: {}",
            route.as_str(),
            failures.join("; ")
        ),
        format!(
            "fix what is named, then run doctor --as {} again",
            route.as_str()
        ),
    )
}

/// Runs this binary as doctor for `planned`: the route's environment and
/// working directory and nothing else, stdout captured when `capture`.
fn run_one(
    route: Route,
    planned: &Planned,
    failures: &[String],
    args: &RunArgs,
    capture: bool,
) -> Result<std::process::Output> {
    use std::os::unix::process::CommandExt;
    let failures: Vec<String> = failures.iter().chain(&planned.failures).cloned().collect();
    let argv: Vec<OsString> = crate::cli::args_os();
    let mut command = std::process::Command::new("/proc/self/exe");
    if let Some(arg0) = argv.first() {
        command.arg0(arg0);
    }
    command
        .args(child_args(
            route,
            planned,
            &failures,
            args,
            argv.get(1..).unwrap_or_default(),
        ))
        .env_clear()
        .envs(planned.env.iter().map(|(name, value)| (name, value)))
        .current_dir(&planned.cwd)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .stdout(if capture {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::inherit()
        });
    let _ = std::io::stdout().flush();
    if !Path::new("/proc/self/exe").exists() {
        return Err(Fatal::error(
            ExitCode::Config,
            format!(
                "doctor --as {}: doctor runs its checks in this very binary again, through /proc/self/exe, and there is no /proc here: mount it (mount -t proc proc /proc) or run doctor where it is",
                route.as_str()
            ),
        ));
    }
    if !planned.cwd.is_dir() {
        return Err(Fatal::error(
            ExitCode::Config,
            format!(
                "doctor --as {}: {} starts the run in {}, which is no folder here: the run does not start there (make the folder, or set HOME to one that exists)",
                route.as_str(),
                route.as_str(),
                log::printable(&planned.cwd.display().to_string())
            ),
        ));
    }
    command.output().map_err(|error| {
        Fatal::error(
            ExitCode::Config,
            format!(
                "doctor --as {}: cannot run rch-sweep in {} with that environment: {error}; {} starts a run there",
                route.as_str(),
                planned.cwd.display(),
                route.as_str()
            ),
        )
    })
}

/// A check's row, as a doctor document has it; with `line` in the summary
/// of a crontab's reports.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize)]
struct CheckRow {
    check: String,
    status: String,
    finding: String,
    fix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
}

/// The document a re-executed doctor printed (a report or an error).
#[derive(Debug, Default, serde::Deserialize)]
struct ChildDocument {
    #[serde(default)]
    checks: Vec<CheckRow>,
    exit_code: i32,
    #[serde(default)]
    error: Option<String>,
}

/// One crontab line's report in the JSON document.
#[derive(serde::Serialize)]
struct LineReport<'a> {
    line: usize,
    /// The system crontab that holds it; absent for the user's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    text: &'a str,
    version: u32,
    checks: Vec<CheckRow>,
    exit_code: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// doctor's document with the route: `checks` first after `as`, as in
/// every doctor document.
#[derive(serde::Serialize)]
struct RouteDocument<'a> {
    version: u32,
    #[serde(rename = "as")]
    route: &'a str,
    checks: Vec<CheckRow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reports: Option<Vec<LineReport<'a>>>,
    from: &'a [String],
    warnings: &'a [String],
    notes: &'a [String],
    exit_code: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// What a re-executed doctor printed, or, when that is no document, an
/// error saying so.
fn document_of(output: &std::process::Output) -> ChildDocument {
    let code = child_code(output.status).code();
    serde_json::from_slice::<ChildDocument>(&output.stdout).unwrap_or_else(|_| ChildDocument {
        checks: Vec::new(),
        exit_code: code,
        error: Some(format!(
            "doctor with these options printed no report (exit {code}); its message is on stderr"
        )),
    })
}

/// How bad a status is.
fn severity(status: &str) -> u8 {
    match status {
        "fail" => 2,
        "warn" => 1,
        _ => 0,
    }
}

/// Each check once, in the order the reports give them, at its worst
/// across the reports (the first line's when several are as bad), with
/// the line it comes from.
fn worst_checks(reports: &[LineReport<'_>]) -> Vec<CheckRow> {
    let mut out: Vec<CheckRow> = Vec::new();
    for report in reports {
        for row in &report.checks {
            let row = CheckRow {
                line: Some(report.line),
                ..row.clone()
            };
            match out.iter_mut().find(|seen| seen.check == row.check) {
                Some(seen) if severity(&row.status) > severity(&seen.status) => *seen = row,
                Some(_) => {}
                None => out.push(row),
            }
        }
    }
    out
}

/// The exit status of a re-executed doctor, as ours.
fn child_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => exit_code(code),
        (None, Some(signal)) => ExitCode::Signal(signal),
        (None, None) => ExitCode::Failed,
    }
}

/// The exit status of a code, as ours.
fn exit_code(code: i32) -> ExitCode {
    match code {
        0 => ExitCode::Success,
        2 => ExitCode::Usage,
        74 => ExitCode::Io,
        75 => ExitCode::TempFail,
        78 => ExitCode::Config,
        129..=191 => ExitCode::Signal(code - 128),
        _ => ExitCode::Failed,
    }
}

/// The first run's that did not succeed, else success.
fn combined(codes: &[ExitCode]) -> ExitCode {
    codes
        .iter()
        .copied()
        .find(|code| code.code() != 0)
        .unwrap_or(ExitCode::Success)
}

/// The arguments with `--as ROUTE` (or `--as=ROUTE`) taken out. Since clap
/// accepted them, a token `--as` is the option (clap takes no value that
/// begins with `--` for another option), followed by its value.
fn without_as(args: &[OsString]) -> Vec<OsString> {
    let mut kept = Vec::with_capacity(args.len());
    let mut tokens = args.iter();
    while let Some(token) = tokens.next() {
        if token == "--as" {
            tokens.next();
        } else if !token.as_encoded_bytes().starts_with(b"--as=") {
            kept.push(token.clone());
        }
    }
    kept
}

/// What a run was given, on the line that heads its text report.
fn run_header(route: Route, planned: &Planned) -> String {
    let vars: Vec<String> = planned
        .env
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    format!(
        "as {}: {}, working directory {} (every other variable dropped)\n",
        route.as_str(),
        log::printable(&vars.join(" ")),
        log::printable(&planned.cwd.display().to_string())
    )
}

/// Where this shell's lease directory and the route's part ways, when
/// neither the route's options nor doctor's name one.
fn lease_dir_note(
    route: Route,
    planned: &Planned,
    args: &RunArgs,
    given: route::Given,
) -> Option<String> {
    let names_it = |options: &[String]| {
        options
            .iter()
            .any(|a| a == "--lease-dir" || a.starts_with("--lease-dir="))
    };
    match &planned.options {
        Some(options) if names_it(options) => return None,
        None if given.lease_dir => return None,
        _ => {}
    }
    let here = args
        .paths
        .lease_dir
        .clone()
        .unwrap_or_else(|| config::default_lease_dir(config::process_env));
    let there = match vars::get(&planned.env, "RCH_SWEEP_LEASE_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => config::default_lease_dir(|name: &str| {
            vars::get(&planned.env, name).map(OsString::from)
        }),
    };
    (here != there).then(|| {
        format!(
            "note: at this shell the lease directory is {}; {} sweeps {}\n",
            log::printable(&here.display().to_string()),
            route.as_str(),
            log::printable(&there.display().to_string())
        )
    })
}

/// The route's own lines of a text report: where it was read, warnings,
/// notes.
fn route_lines(plan: &Plan, notes: &[String]) -> String {
    let mut out = String::new();
    if !plan.from.is_empty() {
        out.push_str(&format!(
            "from: {}\n",
            log::printable(&plan.from.join("; "))
        ));
    }
    for warning in &plan.warnings {
        out.push_str(&format!("warning: {}\n", log::printable(warning)));
    }
    for note in notes {
        out.push_str(&format!("note: {}\n", log::printable(note)));
    }
    out
}

/// `line 3 of the crontab runs rch-sweep`, `lines 3, 5 of the crontab and
/// line 2 of /etc/cron.d/rch run rch-sweep`: the lines a text report
/// follows.
fn which_lines(runs: &[Planned]) -> String {
    let mut groups: Vec<(Option<&str>, Vec<String>)> = Vec::new();
    for run in runs {
        let Some((number, _)) = &run.line else {
            continue;
        };
        let file = run.file.as_deref();
        match groups.iter_mut().find(|(f, _)| *f == file) {
            Some((_, numbers)) => numbers.push(number.to_string()),
            None => groups.push((file, vec![number.to_string()])),
        }
    }
    let total: usize = groups.iter().map(|(_, n)| n.len()).sum();
    let parts: Vec<String> = groups
        .iter()
        .map(|(file, numbers)| {
            format!(
                "{} {} of {}",
                if numbers.len() == 1 { "line" } else { "lines" },
                numbers.join(", "),
                file.unwrap_or("the crontab")
            )
        })
        .collect();
    format!(
        "{} {} rch-sweep",
        log::printable(&parts.join(" and ")),
        if total == 1 { "runs" } else { "run" }
    )
}

/// Runs the plan and prints its reports: text as the runs go, or one JSON
/// document at the end.
fn report(route: Route, args: &RunArgs, plan: &Plan, given: route::Given) -> Result<ExitCode> {
    let argv: Vec<OsString> = crate::cli::args_os();
    let doctors: Vec<String> = without_as(argv.get(1..).unwrap_or_default())
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .filter(|arg| arg != "doctor" && !is_output_flag(arg))
        .collect();
    let mut notes = plan.notes.clone();
    if plan.runs.iter().any(|run| run.options.is_some()) && !doctors.is_empty() {
        let whose = if route == Route::Cron {
            "each rch-sweep line of the crontab gives its own"
        } else {
            "the unit's ExecStart= gives its own"
        };
        notes.push(format!(
            "the options given to doctor ({}) are not used: {whose}",
            doctors.join(" ")
        ));
    }
    let mut codes = Vec::with_capacity(plan.runs.len());
    let mut stdout = std::io::stdout();
    if args.json {
        let mut reports = Vec::new();
        let mut single = ChildDocument::default();
        for planned in &plan.runs {
            let output = run_one(route, planned, &plan.failures, args, true)?;
            codes.push(child_code(output.status));
            let document = document_of(&output);
            match &planned.line {
                Some((line, text)) => reports.push(LineReport {
                    line: *line,
                    file: planned.file.as_deref(),
                    text,
                    version: 1,
                    checks: document.checks,
                    exit_code: document.exit_code,
                    error: document.error,
                }),
                None => single = document,
            }
        }
        let (checks, reports, error) = if reports.is_empty() {
            (single.checks, None, single.error)
        } else {
            (worst_checks(&reports), Some(reports), None)
        };
        let document = RouteDocument {
            version: 1,
            route: route.as_str(),
            checks,
            reports,
            from: &plan.from,
            warnings: &plan.warnings,
            notes: &notes,
            exit_code: combined(&codes).code(),
            error,
        };
        let text = serde_json::to_string(&document).unwrap_or_default();
        let _ = writeln!(stdout, "{text}");
        return Ok(combined(&codes));
    }
    let by_line = plan.runs.iter().any(|run| run.line.is_some());
    if by_line {
        let _ = write!(
            stdout,
            "as {}: {}\n{}",
            route.as_str(),
            which_lines(&plan.runs),
            route_lines(plan, &notes)
        );
    }
    for planned in &plan.runs {
        let mut head = String::new();
        if let Some((line, text)) = &planned.line {
            let of = planned
                .file
                .as_deref()
                .map(|file| format!(" of {file}"))
                .unwrap_or_default();
            head.push_str(&format!(
                "\nline {line}{}: {}\n",
                log::printable(&of),
                log::printable(text)
            ));
        }
        head.push_str(&run_header(route, planned));
        if !by_line {
            head.push_str(&route_lines(plan, &notes));
        }
        if let Some(note) = lease_dir_note(route, planned, args, given) {
            head.push_str(&note);
        }
        let _ = stdout.write_all(head.as_bytes());
        let output = run_one(route, planned, &plan.failures, args, false)?;
        codes.push(child_code(output.status));
    }
    Ok(combined(&codes))
}
#[cfg(test)]
mod tests {
    use super::*;

    fn run_args(extra: &[&str]) -> RunArgs {
        use clap::Parser;
        let argv = ["rch-sweep", "doctor"].iter().chain(extra);
        match crate::cli::Cli::try_parse_from(argv)
            .expect("parse")
            .command
        {
            Some(crate::cli::Command::Doctor(doctor)) => doctor.run,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn as_is_taken_out_of_the_command_line() {
        let args: Vec<OsString> = [
            "doctor",
            "--as",
            "cron",
            "--lease-dir",
            "/l",
            "--as=user-timer",
            "--json",
        ]
        .map(OsString::from)
        .to_vec();
        assert_eq!(
            without_as(&args),
            ["doctor", "--lease-dir", "/l", "--json"].map(OsString::from)
        );
        for code in [0, 1, 2, 74, 75, 78, 130] {
            assert_eq!(exit_code(code).code(), code);
        }
        assert_eq!(
            combined(&[ExitCode::Success, ExitCode::Failed, ExitCode::Config]).code(),
            1
        );
        assert_eq!(combined(&[]).code(), 0);
    }

    fn row(check: &str, status: &str) -> CheckRow {
        CheckRow {
            check: check.into(),
            status: status.into(),
            finding: format!("{check} {status}"),
            fix: None,
            line: None,
        }
    }

    #[test]
    fn the_summary_of_several_reports_gives_each_check_at_its_worst() {
        let reports = [
            LineReport {
                line: 3,
                file: None,
                text: "a",
                version: 1,
                checks: vec![row("lease_dir", "warn"), row("daemon", "ok")],
                exit_code: 0,
                error: None,
            },
            LineReport {
                line: 5,
                file: None,
                text: "b",
                version: 1,
                checks: vec![row("lease_dir", "warn"), row("daemon", "fail")],
                exit_code: 1,
                error: None,
            },
        ];
        let worst = worst_checks(&reports);
        assert_eq!(worst.len(), 2);
        assert_eq!((worst[0].line, worst[0].status.as_str()), (Some(3), "warn"));
        assert_eq!((worst[1].line, worst[1].status.as_str()), (Some(5), "fail"));
        let text = serde_json::to_string(&worst[1]).expect("json");
        assert_eq!(
            text,
            r#"{"check":"daemon","status":"fail","finding":"daemon fail","fix":null,"line":5}"#
        );
    }

    #[test]
    fn the_routes_options_replace_doctors_but_for_how_it_prints() {
        let planned = Planned {
            line: Some((3, "x".into())),
            file: None,
            env: Vars::new(),
            cwd: PathBuf::from("/"),
            options: Some(
                ["--quiet", "--lease-dir", "/l", "--json", "-q"]
                    .map(String::from)
                    .to_vec(),
            ),
            failures: Vec::new(),
        };
        let mut args = run_args(&["--json"]);
        let own: Vec<OsString> = ["doctor", "--as", "cron", "--lease-dir", "/mine", "--json"]
            .map(OsString::from)
            .to_vec();
        assert_eq!(
            child_args(Route::Cron, &planned, &[], &args, &own),
            [
                "doctor",
                "--lease-dir",
                "/l",
                "--json",
                "--in-route",
                "cron"
            ]
            .map(OsString::from)
        );
        args.json = false;
        args.quiet = true;
        assert_eq!(
            child_args(Route::Cron, &planned, &[], &args, &own),
            [
                "doctor",
                "--lease-dir",
                "/l",
                "--quiet",
                "--in-route",
                "cron"
            ]
            .map(OsString::from)
        );
        let doctors = Planned {
            options: None,
            ..planned
        };
        assert_eq!(
            child_args(Route::Cron, &doctors, &[], &args, &own),
            [
                "doctor",
                "--lease-dir",
                "/mine",
                "--json",
                "--in-route",
                "cron"
            ]
            .map(OsString::from)
        );
        // What the route would refuse rides along, one option each.
        assert_eq!(
            child_args(
                Route::UserTimer,
                &doctors,
                &["-x masks rch-sweep.service".to_owned()],
                &args,
                &own
            )[4..],
            [
                "--in-route",
                "user-timer",
                "--route-fail=-x masks rch-sweep.service"
            ]
            .map(OsString::from)
        );
        assert!(refused_option(&["--as=cron".to_owned()]).is_some());
        assert!(refused_option(&["--asx".to_owned()]).is_none());
    }
}

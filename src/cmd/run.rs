//! `rch-sweep [run]`: the run's steps in order, each a call into the room
//! that owns it: the checks every command makes ([`crate::sweep::preflight`]);
//! the lease directory opened and locked ([`crate::lease_dir`]), the state
//! folder and the state lock ([`crate::state`]), the metrics path and
//! `rch` checked, an interrupted run's leftovers cleaned
//! ([`crate::sweep::persist`]), the state loaded, the signal handlers in place;
//! then scan ([`crate::sweep::scan`]), plan ([`crate::sweep::plan`]), rch's daemon when
//! something is due ([`crate::rch::daemon`]), recover ([`crate::sweep::dispatch`]),
//! record ([`crate::sweep::record`]), save ([`crate::sweep::persist`]), report. A dry
//! run and `--check` stop after the plan and write nothing.

use super::Target;
use crate::cli::RunArgs;
use crate::exit::{ExitCode, Fatal};
use crate::judge::owner::ProcFs;
use crate::judge::verdict::Candidate;
use crate::lease_dir::sweep_lock::{self, SweepLockError};
use crate::lease_dir::{LeaseDir, LeaseDirFound, writable};
use crate::rch::recover::AttemptOutcome::NotCharged;
use crate::rch::recover::Fault;
use crate::state::Store;
use crate::state::backoff::{Backoff, now_unix_ms};
use crate::sweep::plan::{self, Slot};
use crate::sweep::preflight::{self, Intent};
use crate::sweep::record::{self, Policy};
use crate::sweep::report::{LeaseLine, LeaseOutcome, Summary};
use crate::sweep::scan::{self, Scan, ScanOptions};
use crate::{
    fsio, log, rch::daemon, rch::recover, rch::release, signals, state, sweep::dispatch,
    sweep::persist,
};
use anyhow::{Context, Result};
use std::cell::RefCell;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Validated settings of one run.
struct Run {
    args: RunArgs,
    target: Target,
    intent: Intent,
    started: Instant,
    now_unix_ms: u64,
    /// Set when a real run that opened the state folder ([`Store`]) stops
    /// on an error: the state read through that folder (its last success
    /// and held leases), for the metrics of that error
    /// ([`metrics_on_error`]), so that no step reads the state by its path
    /// after the folder was opened.
    stored_state: RefCell<Option<Option<Backoff>>>,
}

impl Run {
    fn dry(&self) -> bool {
        self.intent != Intent::Run
    }
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    check_args(&args)?;
    let intent = if args.check {
        Intent::Check
    } else if args.dry_run {
        Intent::DryRun
    } else {
        Intent::Run
    };
    let run = Run {
        target: Target::resolve(&args.paths),
        args,
        intent,
        started: Instant::now(),
        now_unix_ms: now_unix_ms(),
        stored_state: RefCell::new(None),
    };
    let result = if let Err(error) = refuse_tilde(&run.args) {
        Err(error)
    } else if matches!(run.target.lease_dir.found, LeaseDirFound::Missing) {
        missing_lease_dir(&run)
    } else {
        run.target.check(run.intent).and_then(|()| {
            if run.dry() {
                dry_run(&run)
            } else {
                sweep(&run)
            }
        })
    };
    if let Err(error) = &result {
        metrics_on_error(&run, error);
    }
    result
}

/// A real run that ends in 74 or 78 before its summary (no `rch`, an
/// unknown state version, a bad path) still writes its metrics: that exit
/// code, zero counts, the last success as it was, so an install broken
/// from its first run shows up in monitoring (SPEC "Metrics file"). Not
/// for another user's lease directory (nothing is created for it), not
/// when the metrics path failed its own check, and not for a held lock
/// (75: another sweep is writing them).
fn metrics_on_error(run: &Run, error: &anyhow::Error) {
    let code = crate::exit::code_of(error);
    let Some(path) = run.args.metrics_file.as_deref() else {
        return;
    };
    if run.dry()
        || !matches!(code, ExitCode::Io | ExitCode::Config)
        || run
            .target
            .lease_dir
            .owner()
            .is_some_and(|uid| uid != crate::account::euid())
        || preflight::metrics(path).status == preflight::Status::Fail
    {
        return;
    }
    let mut summary = summary(run, Scan::default(), Duration::ZERO, Vec::new());
    summary.exit_code = code;
    let in_state = run
        .stored_state
        .take()
        .unwrap_or_else(|| state_by_path(run));
    // The run learned nothing of its leases: what earlier runs learned,
    // when the state tells it, else no count at all (SPEC "No lease waits
    // in silence": not a 0 that would end an alert's `for:`).
    summary.held = in_state
        .as_ref()
        .map(|backoff| crate::sweep::report::Held::of(backoff, run.now_unix_ms));
    let in_state = in_state.and_then(|backoff| backoff.last_success_unix_ms);
    let previous = persist::last_success_before(path, &summary.lease_dir, in_state);
    persist::write_metrics(path, &mut summary, previous, None);
}

/// The state file, read by its path: only for a run that stopped before
/// it opened the state folder.
fn state_by_path(run: &Run) -> Option<Backoff> {
    match state::read(&run.target.state_file, state::Access::Read) {
        Ok((state::StateFound::Valid(backoff), _)) => Some(backoff),
        Ok((state::StateFound::Missing, _)) => Some(Backoff::empty()),
        _ => None,
    }
}

/// What no single flag's parser can see (exit 2).
pub(super) fn check_args(args: &RunArgs) -> Result<()> {
    if let Some(metrics) = &args.metrics_file
        && !metrics.as_os_str().to_string_lossy().ends_with(".prom")
    {
        return Err(Fatal::error(
            ExitCode::Usage,
            format!(
                "--metrics-file {} must end in .prom (node_exporter's textfile collector reads only those)",
                metrics.display()
            ),
        ));
    }
    args.check_backoff()
        .map_err(|why| Fatal::error(ExitCode::Usage, why))
}

/// SPEC's `~` rule over every path a run or `doctor` takes (78).
pub(super) fn refuse_tilde(args: &RunArgs) -> Result<()> {
    super::refuse_tilde(
        &args.paths,
        &[
            ("--rch", args.rch.as_deref()),
            ("--socket", args.socket.as_deref()),
            ("--metrics-file", args.metrics_file.as_deref()),
        ],
    )
}

/// Nothing to do, and nothing created: no state folder, state or lock. A
/// folder someone named and that does not exist is most likely a typo,
/// which would otherwise sweep nothing forever, so it earns a warning.
fn missing_lease_dir(run: &Run) -> Result<ExitCode> {
    let finding = preflight::lease_dir(&run.target.lease_dir, run.intent);
    if run.target.lease_dir.explicit {
        // Even with --quiet: a typo here sweeps nothing forever, and a cron
        // line mails only what it prints.
        log::warn_always(finding.message());
    } else {
        log::info(finding.finding);
    }
    if let Some(path) = &run.args.metrics_file {
        let finding = metrics_finding(run, path);
        if run.dry() {
            finding.warn_only();
        } else {
            finding.enforce()?;
        }
    }
    let mut summary = summary(run, Scan::default(), Duration::ZERO, Vec::new());
    if !run.dry() {
        // A run with nothing to sweep succeeded, though it has no state.
        if let Some(path) = &run.args.metrics_file {
            let previous = persist::last_success_before(path, &summary.lease_dir, None);
            persist::write_metrics(path, &mut summary, previous, Some(now_unix_ms()));
        }
    }
    print(run, &summary);
    Ok(summary.exit_code)
}

fn open_lease_dir(run: &Run) -> Result<LeaseDir> {
    run.target
        .lease_dir
        .open()
        .map_err(|error| super::unreadable_lease_dir(&run.target.lease_dir, &error))
}

fn scan_leases(run: &Run, dir: &LeaseDir) -> Result<(Scan, Duration)> {
    let options = ScanOptions {
        now_unix_ms: run.now_unix_ms,
        stale_after_ms: run.args.stale_after.saturating_mul(1000),
        keep_skipped: run.args.verbose,
    };
    let started = Instant::now();
    let scan = scan::scan(dir, &options, &ProcFs::system())
        .map_err(|error| super::unreadable_lease_dir(&run.target.lease_dir, &error))?;
    Ok((scan, started.elapsed()))
}

fn dry_run(run: &Run) -> Result<ExitCode> {
    if let Some(path) = &run.args.metrics_file {
        metrics_finding(run, path).warn_only();
    }
    let dir = open_lease_dir(run)?;
    let mut backoff = run.target.readable_backoff(state::load_for_plan)?;
    let (mut scan, scan_duration) = scan_leases(run, &dir)?;
    // The same clamping a real run saves, applied to a copy.
    backoff.prune(&scan.candidates, run.now_unix_ms, policy(run).max_ms);
    let slots = plan::dry_run(
        &scan.candidates,
        &backoff,
        run.now_unix_ms,
        usize::from(run.args.max_recoveries),
    );
    let due_now = slots.iter().any(|slot| *slot != Slot::BackingOff);
    // Each candidate moves into its line rather than being copied: memory
    // grows with the candidates, so they are held once.
    let leases = std::mem::take(&mut scan.candidates)
        .into_iter()
        .zip(slots)
        .map(|(candidate, slot)| {
            let outcome = match slot {
                Slot::BackingOff => LeaseOutcome::BackingOff,
                Slot::WouldRecover => LeaseOutcome::WouldRecover,
                Slot::Deferred => LeaseOutcome::Deferred,
            };
            record::line(candidate, outcome, None, None, &backoff)
        })
        .collect();
    let mut summary = summary(run, scan, scan_duration, leases);
    if run.args.check && due_now {
        summary.exit_code = ExitCode::Failed;
    }
    print(run, &summary);
    Ok(summary.exit_code)
}

/// Takes the sweep lock on the open lease directory (held by `dir`'s
/// descriptor until the run ends): busy is 75, naming the holder's PID
/// when `/proc/locks` tells; any other failure 74.
fn take_sweep_lock(run: &Run, dir: &LeaseDir) -> Result<()> {
    let shown = run.target.lease_dir.display();
    sweep_lock::acquire(dir).map_err(|error| match error {
        SweepLockError::Busy => Fatal::error(
            ExitCode::TempFail,
            format!(
                "another rch-sweep{} is sweeping the lease directory {shown} (perhaps through another path or with another state file); try again when it is done",
                sweep_lock::holder(&run.target.lease_dir.resolved)
                    .map(|pid| format!(" (pid {pid})"))
                    .unwrap_or_default()
            ),
        ),
        SweepLockError::Io(error) => Fatal::error(
            ExitCode::Io,
            format!("cannot lock the lease directory {shown}: {error}"),
        ),
    })
}

/// Creates the state folder (0700) when it is missing, only once the lease
/// directory is ours for this run, and opens it once, without following a
/// link, checked on that descriptor; a folder that cannot be made, or is
/// found untrusted, is 74. That descriptor then serves the state lock and
/// every read and write of the run, so a folder someone made or swapped in
/// since the preflight is refused (74), never written into, and one
/// swapped in later gets nothing: the state stays beside the lock.
fn open_state_folder(run: &Run) -> Result<Store> {
    let state_dir = fsio::parent_dir(&run.target.state_file);
    Store::create(&run.target.state_file).map_err(|error| {
        let message = if state::folder::is_untrusted(&error) {
            error.to_string()
        } else {
            format!(
                "cannot create state folder {}: {error}",
                state_dir.display()
            )
        };
        Fatal::error(ExitCode::Io, message)
    })
}

/// A real run, step by step, once the checks every command makes have
/// passed: open the lease directory and take its sweep lock, make the
/// state folder and take the state lock (busy is 75), check what the run
/// will write and run, tidy up after an interrupted run, load the state;
/// then scan, plan, recover, record, save and report.
fn sweep(run: &Run) -> Result<ExitCode> {
    let dir = open_lease_dir(run)?;
    take_sweep_lock(run, &dir)?;
    let store = open_state_folder(run)?;
    let result = sweep_in(run, &dir, &store);
    if result.is_err() && run.args.metrics_file.is_some() {
        run.stored_state.replace(Some(store.as_it_stands()));
    }
    result
}

/// [`sweep`] once the state folder is open: everything from the state lock
/// on.
fn sweep_in(run: &Run, dir: &LeaseDir, store: &Store) -> Result<ExitCode> {
    // Held, like the sweep lock, until the run ends.
    let _state_lock = store.lock()?;
    check_metrics_path(run)?;
    let rch = find_rch(run)?;
    clean_leftovers(run, store);
    let mut backoff = store.load_for_run(run.now_unix_ms)?;
    signals::install().context("cannot install signal handlers")?;
    let (mut scan, scan_duration) = scan_leases(run, dir)?;
    let policy = policy(run);
    // A scan that a host shortage cut short judged less than it lists: no
    // entry is pruned as "no longer a candidate" and nothing is due, so
    // every lease's backoff stays as it was, and the run ends 75.
    let shortage = scan.shortage_error();
    let due = if shortage.is_none() {
        backoff.prune(&scan.candidates, policy.now_unix_ms, policy.max_ms);
        plan::due(&scan.candidates, &backoff, policy.now_unix_ms)
    } else {
        Vec::new()
    };
    let (attempts, daemon, release) = recoveries(run, rch, dir, &scan.candidates, due);
    let candidates = std::mem::take(&mut scan.candidates);
    let mut summary = summary(run, scan, scan_duration, Vec::new());
    summary.daemon = daemon;
    summary.rch = release;
    if let Some(error) = shortage {
        log::error(&error);
        summary.fail(ExitCode::TempFail, error);
    }
    record::attempts(candidates, attempts, &policy, &mut backoff, &mut summary);
    if run.args.quiet {
        let shown = run.target.lease_dir.resolved.display().to_string();
        crate::sweep::held::say_daily(&mut backoff, run.now_unix_ms, &shown);
    }
    let metrics_file = run.args.metrics_file.as_deref();
    persist::save(store, metrics_file, &mut backoff, &mut summary, run.started);
    print(run, &summary);
    Ok(summary.exit_code)
}

/// The metrics path a real run will replace, checked as `doctor` checks
/// it: a failure ends the run (74), a warning is printed.
fn check_metrics_path(run: &Run) -> Result<()> {
    match &run.args.metrics_file {
        Some(path) => metrics_finding(run, path).enforce(),
        None => Ok(()),
    }
}

/// The metrics path checked as `doctor` checks it, another `.prom` file
/// with series for this lease directory in its folder included: such a
/// twin is a warning (not under `--quiet`), as node_exporter serves one
/// file's series or the other's, stale or not.
fn metrics_finding(run: &Run, path: &std::path::Path) -> preflight::Finding {
    preflight::metrics_and_others(path, &run.target.lease_dir.resolved)
}

/// `rch`, found as `execvp` finds it; 78 when it is nowhere this user may
/// run it.
fn find_rch(run: &Run) -> Result<PathBuf> {
    preflight::rch(
        run.args.rch.as_deref(),
        std::env::var_os("PATH").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
    .map_err(|finding| Fatal::error(finding.code, finding.message()))
}

/// The temporary files a killed run left beside the state file and the
/// metrics file, removed (now that this run holds the locks).
fn clean_leftovers(run: &Run, store: &Store) {
    persist::clean_state_leftovers(store);
    if let Some(metrics) = &run.args.metrics_file {
        persist::clean_leftovers(metrics);
    }
}

/// What the check of rch's daemon before any recovery came to.
enum DaemonCheck {
    /// Nothing due, or `rch` named no socket: nothing checked, nothing
    /// pinned.
    Unchecked,
    /// Checked, up or not.
    Checked(daemon::Report),
    /// `rch ... daemon status` could not be started: the host's fault or
    /// the install's, as a recovery's child would be; every due candidate
    /// is kept back with the error.
    NotStarted(Fault, String),
    /// A stop signal ended it: nothing starts, and the run stops as a
    /// signalled run does.
    Stopped,
}

/// The recoveries of the `due` candidates, an attempt each (None for the
/// others), what was learnt of rch's daemon, and which rch release runs.
/// Only a run with something to recover needs the lease directory to be
/// writable, the release and the daemon; the others neither look nor ask
/// rch nor touch a socket (and an empty run stays fast). While rch could
/// not rewrite a journal in `dir` (74), or its daemon does not answer, no
/// recovery starts: each due candidate is kept back.
fn recoveries(
    run: &Run,
    rch: PathBuf,
    dir: &LeaseDir,
    candidates: &[Candidate],
    due: Vec<(usize, &Candidate)>,
) -> (
    Vec<Option<recover::Attempt>>,
    Option<daemon::Report>,
    Option<release::Asked>,
) {
    if !due.is_empty()
        && let Err(why) = writable::check(dir)
    {
        let error = why.error(&run.target.lease_dir.display());
        let outcome = NotCharged(Fault::LeaseDir, error);
        return (kept_back(candidates, &due, &outcome, true), None, None);
    }
    let mut settings = recover_settings(run, rch);
    let mut asked = None;
    let check = if due.is_empty() {
        DaemonCheck::Unchecked
    } else {
        match ask_release(&mut settings) {
            Ok(release) => {
                asked = Some(release);
                check_daemon(run, &mut settings)
            }
            Err(check) => *check,
        }
    };
    let max = usize::from(run.args.max_recoveries);
    let (attempts, mut daemon) = match check {
        DaemonCheck::Unchecked => (dispatch::recover_due(candidates, due, max, &settings), None),
        DaemonCheck::Checked(report) if report.up => (
            dispatch::recover_due(candidates, due, max, &settings),
            Some(report),
        ),
        DaemonCheck::Checked(report) => {
            let outcome = NotCharged(Fault::DaemonDown, report.lease_error());
            (kept_back(candidates, &due, &outcome, true), Some(report))
        }
        DaemonCheck::NotStarted(fault, error) => {
            let outcome = NotCharged(fault, error);
            (kept_back(candidates, &due, &outcome, false), None)
        }
        DaemonCheck::Stopped => (vec![None; candidates.len()], None),
    };
    if let Some(report) = daemon.as_mut().filter(|report| report.up)
        && let Some(error) = lost_daemon(&attempts)
    {
        report.lose(error);
    }
    (attempts, daemon, asked)
}

/// Which rch release runs (`rch --version` for the summary, then `rch
/// --capabilities` for rch's own release, each asked once as `daemon
/// status` is), and so what its finished recovery leaves
/// ([`release::completion`]); an `rch` that cannot be started is kept from
/// every recovery as the daemon check keeps it (75 or 78), a stop signal
/// stops the run. A `--capabilities` that cannot be read leaves the release
/// to `--version`'s line, and says so on stderr.
fn ask_release(settings: &mut recover::Settings) -> Result<release::Asked, Box<DaemonCheck>> {
    let stop = || signals::received().is_some();
    let env = recover::child_env(settings);
    let not_started = |error| {
        Box::new(match error {
            daemon::Unnamed::HostFault(error) => DaemonCheck::NotStarted(Fault::Host, error),
            daemon::Unnamed::Unstartable(error) | daemon::Unnamed::NoAnswer(error) => {
                DaemonCheck::NotStarted(Fault::Config, error)
            }
            daemon::Unnamed::Stopped => DaemonCheck::Stopped,
        })
    };
    let line = daemon::ask_version(&settings.rch, &env, &stop).map_err(not_started)?;
    let capabilities = daemon::ask_capabilities(&settings.rch, &env, &stop).map_err(not_started)?;
    let asked = release::Asked {
        path: settings.rch.clone(),
        line,
        capabilities,
    };
    if let Err(why) = &asked.capabilities {
        log::info(format!(
            "`{} --capabilities` {why}: rch's own release is not known from it, so it is read from `--version`'s line (rch-common's version, which may not be rch's)",
            settings.rch.display()
        ));
    }
    settings.release = asked.release();
    Ok(asked)
}

/// Which daemon `rch` will use (`--socket` / `RCH_SOCKET_PATH`, else what
/// `rch` says) and whether it answers; once known, every child is pinned to
/// it and a failed recovery is checked against it again. An `rch` that
/// cannot say leaves the run as it was before such checks: nothing checked,
/// nothing pinned (SPEC "rch's daemon", step 1); one that cannot be
/// started is a recovery's child that cannot (75 or 78).
fn check_daemon(run: &Run, settings: &mut recover::Settings) -> DaemonCheck {
    let stop = || signals::received().is_some();
    let env = recover::child_env(settings);
    let (socket, chosen_by) = match daemon::which(
        run.args.socket.as_deref(),
        &settings.rch,
        &env,
        &stop,
    ) {
        Ok(found) => found,
        Err(daemon::Unnamed::NoAnswer(why)) => {
            log::info(format!(
                "`{} --json --format json daemon status` {why}: rch's daemon is not checked, so a recovery failing for want of it is charged to its lease (name the socket with --socket or RCH_SOCKET_PATH; rch-sweep doctor checks it)",
                settings.rch.display()
            ));
            return DaemonCheck::Unchecked;
        }
        Err(daemon::Unnamed::HostFault(error)) => {
            return DaemonCheck::NotStarted(Fault::Host, error);
        }
        Err(daemon::Unnamed::Unstartable(error)) => {
            return DaemonCheck::NotStarted(Fault::Config, error);
        }
        Err(daemon::Unnamed::Stopped) => return DaemonCheck::Stopped,
    };
    let waits = daemon::Waits::for_this_build();
    let Ok(report) = daemon::check(socket, chosen_by, &waits, &stop) else {
        return DaemonCheck::Stopped;
    };
    settings.socket = Some(report.socket.clone());
    settings.daemon_waits = Some(waits);
    settings.daemon_trust = chosen_by.trust();
    DaemonCheck::Checked(report)
}

/// The attempts of a run that starts no recovery: the due candidates kept
/// back with `outcome`, their entries unchanged. A daemon that does not
/// answer is every lease's error (`every`); an `rch` that could not be
/// asked is told as a recovery's child that could not start: the first due
/// lease carries the error, the others are deferred unstarted (SPEC "One
/// recovery", step 2).
fn kept_back(
    candidates: &[Candidate],
    due: &[(usize, &Candidate)],
    outcome: &recover::AttemptOutcome,
    every: bool,
) -> Vec<Option<recover::Attempt>> {
    let mut attempts = vec![None; candidates.len()];
    let carrying = if every { due.len() } else { 1 };
    for (index, _) in due.iter().take(carrying) {
        attempts[*index] = Some(recover::Attempt::ended(outcome.clone(), Duration::ZERO));
    }
    attempts
}

/// The error of the first attempt whose recheck found rch's daemon gone
/// (SPEC "rch's daemon", step 4), if any.
fn lost_daemon(attempts: &[Option<recover::Attempt>]) -> Option<&str> {
    attempts
        .iter()
        .flatten()
        .find_map(|attempt| match &attempt.outcome {
            recover::AttemptOutcome::NotCharged(Fault::DaemonDown, error) => Some(error.as_str()),
            _ => None,
        })
}

fn recover_settings(run: &Run, rch: PathBuf) -> recover::Settings {
    recover::Settings {
        rch,
        socket: run.args.socket.clone(),
        daemon_waits: None,
        daemon_trust: daemon::Trust::ThisUser,
        release: None,
        lease_dir: run.target.lease_dir.resolved.clone(),
        state_home: run.target.lease_dir.state_home().to_path_buf(),
        recover_timeout: Duration::from_secs(run.args.recover_timeout),
        kill_grace: Duration::from_secs(run.args.kill_grace),
    }
}

fn summary(run: &Run, scan: Scan, scan_duration: Duration, leases: Vec<LeaseLine>) -> Summary {
    Summary {
        dry_run: run.dry(),
        lease_dir: run.target.lease_dir.resolved.clone(),
        lease_dir_present: !matches!(run.target.lease_dir.found, LeaseDirFound::Missing),
        state_file: run.target.state_file.clone(),
        now_unix_ms: run.now_unix_ms,
        duration: run.started.elapsed(),
        scan_duration,
        scanned: scan.scanned,
        skipped: scan.skipped,
        leases,
        skipped_list: scan.skipped_list,
        exit_code: ExitCode::Success,
        errors: Vec::new(),
        daemon: None,
        held: Some(crate::sweep::report::Held::default()),
        rch: None,
    }
}

fn print(run: &Run, summary: &Summary) {
    use std::io::Write;
    let text = if run.args.json {
        format!("{}\n", summary.json())
    } else if run.args.quiet {
        return;
    } else {
        log::printable(&summary.human(run.args.verbose)).into_owned()
    };
    // A closed stdout (`| head`) is not worth failing the run over.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn policy(run: &Run) -> Policy {
    Policy {
        now_unix_ms: run.now_unix_ms,
        base_ms: run.args.backoff_base.saturating_mul(1000),
        max_ms: run.args.backoff_max.saturating_mul(1000),
        max_recoveries: usize::from(run.args.max_recoveries),
    }
}

//! `rch-sweep [run]`: scan → judge → plan → recover → record → report.
//!
//! The main thread owns the queue and the backoff state; each recovery runs
//! on a thread of its own (its child's parent-death signal is tied to that
//! thread) and reports back over a channel. The state file is written once,
//! at the end, also after a signal.

use crate::backoff::{Backoff, now_unix_ms};
use crate::cli::RunArgs;
use crate::exit::{ExitCode, Fatal};
use crate::judge::Candidate;
use crate::lock;
use crate::owner::ProcFs;
use crate::plan::{self, Queue, Slot};
use crate::recover::{self, Attempt};
use crate::report::{LeaseLine, LineDetail, Outcome, Summary};
use crate::scan::{self, Scan, ScanError, ScanOptions};
use crate::state::{Access, Loaded};
use crate::{config, fsio, log, metrics, signals, state};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How often the main loop looks at the signal flag while recoveries run.
const POLL: Duration = Duration::from_millis(100);

/// Validated settings of one run.
struct Run {
    args: RunArgs,
    lease_dir: PathBuf,
    state_file: PathBuf,
    dry_run: bool,
    started: Instant,
    now_unix_ms: u64,
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let (lease_dir, state_file) = super::resolve_paths(&args.paths);
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
        .map_err(|why| Fatal::error(ExitCode::Usage, why))?;
    let run = Run {
        dry_run: args.dry_run || args.check,
        args,
        lease_dir,
        state_file,
        started: Instant::now(),
        now_unix_ms: now_unix_ms(),
    };
    let Some(resolved) = check_lease_dir(&run.lease_dir)? else {
        return missing_lease_dir(&run);
    };
    if !run.dry_run {
        check_named_job_leases(&run.lease_dir, &resolved)?;
    }
    super::check_state_outside_leases(&run.lease_dir, &run.state_file)?;
    if run.dry_run {
        dry_run(&run)
    } else {
        if let Some(path) = &run.args.metrics_file {
            metrics::check_folder(path)?;
        }
        sweep(&run, resolved).inspect_err(|error| print_lock_held(&run, error))
    }
}

/// The lease directory with symlinks resolved; `None` when it does not
/// exist (nothing to do). One that exists but is no directory is a
/// configuration error.
fn check_lease_dir(lease_dir: &Path) -> Result<Option<PathBuf>> {
    match std::fs::metadata(lease_dir) {
        Ok(meta) if !meta.is_dir() => Err(super::not_a_directory(lease_dir)),
        Ok(_) => std::fs::canonicalize(lease_dir)
            .map(Some)
            .map_err(|error| super::unreadable_lease_dir(lease_dir, &error)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(super::unreadable_lease_dir(lease_dir, &error)),
    }
}

/// `rch` finds its journals only as `<state home>/job-leases`, and the child
/// is pointed at the judged directory through `RCH_STATE_HOME` = its parent;
/// a directory of another name would send `rch` somewhere else than what
/// was judged, so a real run refuses it up front.
fn check_named_job_leases(lease_dir: &Path, resolved: &Path) -> Result<()> {
    if resolved.file_name() == Some(std::ffi::OsStr::new("job-leases")) {
        return Ok(());
    }
    Err(Fatal::error(
        ExitCode::Config,
        format!(
            "lease directory {} (resolved: {}) is not named job-leases; rch looks for its journals only in <state home>/job-leases, so `rch jobs recover` would not find these. Point --lease-dir / RCH_SWEEP_LEASE_DIR at rch's job-leases folder (a dry run accepts any folder)",
            lease_dir.display(),
            resolved.display()
        ),
    ))
}

/// Nothing to do, and nothing created: no state folder, state or lock. A
/// folder someone named and that does not exist is most likely a typo,
/// which would otherwise sweep nothing forever, so it earns a warning.
fn missing_lease_dir(run: &Run) -> Result<ExitCode> {
    let message = format!(
        "lease directory {} does not exist; nothing to do",
        run.lease_dir.display()
    );
    if run.args.paths.lease_dir.is_some() {
        log::warn(format!(
            "{message} (check --lease-dir / RCH_SWEEP_LEASE_DIR for a typo)"
        ));
    } else {
        log::info(message);
    }
    let mut summary = summary(run, Scan::default(), Vec::new(), ExitCode::Success);
    if !run.dry_run {
        write_metrics(run, &mut summary, Some(now_unix_ms()));
    }
    print(run, &summary);
    Ok(summary.exit_code)
}

fn scan_leases(run: &Run) -> Result<Scan> {
    let options = ScanOptions {
        now_unix_ms: run.now_unix_ms,
        stale_after_ms: run.args.stale_after.saturating_mul(1000),
        keep_skipped: run.args.verbose,
    };
    // The path was checked up front; these cover it changing since.
    let scan =
        scan::scan(&run.lease_dir, &options, &ProcFs::system()).map_err(|error| match error {
            ScanError::NotADirectory => super::not_a_directory(&run.lease_dir),
            ScanError::Io(error) => super::unreadable_lease_dir(&run.lease_dir, &error),
        })?;
    if scan.dir_missing {
        log::info(format!(
            "lease directory {} does not exist; nothing to do",
            run.lease_dir.display()
        ));
    }
    Ok(scan)
}

fn dry_run(run: &Run) -> Result<ExitCode> {
    let mut backoff = match state::load(&run.state_file, Access::Read)? {
        Loaded::Missing => Backoff::empty(),
        Loaded::Valid(backoff) => backoff,
        Loaded::Corrupt(why, _) => {
            log::warn(format!(
                "state file {} does not parse ({why}); planning without backoff (a real run moves it aside)",
                run.state_file.display()
            ));
            Backoff::empty()
        }
    };
    let mut scan = scan_leases(run)?;
    // The same clamping a real run saves, applied to a copy.
    backoff.prune(&scan.candidates, run.now_unix_ms, backoff_max_ms(run));
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
                Slot::BackingOff => Outcome::BackingOff,
                Slot::WouldRecover => Outcome::WouldRecover,
                Slot::Deferred => Outcome::Deferred,
            };
            owned_line(candidate, outcome, None, None, &backoff)
        })
        .collect();
    let exit_code = if run.args.check && due_now {
        ExitCode::Failed
    } else {
        ExitCode::Success
    };
    report(run, scan, leases, exit_code);
    Ok(exit_code)
}

fn sweep(run: &Run, lease_dir: PathBuf) -> Result<ExitCode> {
    let rch = config::resolve_rch(
        run.args.rch.as_deref(),
        std::env::var_os("PATH").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
    .map_err(|why| Fatal::error(ExitCode::Config, format!("rch client: {why}")))?;
    // Before the state folder or the lock is created beside it.
    state::check_path(&run.state_file, Access::Write)?;
    let state_dir = fsio::parent_dir(&run.state_file);
    fsio::ensure_private_dir(state_dir).map_err(|error| {
        Fatal::error(
            ExitCode::Io,
            format!(
                "cannot create state folder {}: {error}",
                state_dir.display()
            ),
        )
    })?;
    let _lock = lock::acquire_for(&run.state_file)?;
    clean_temps(&run.state_file);
    if let Some(metrics) = &run.args.metrics_file {
        clean_temps(metrics);
    }
    let mut backoff = load_state(run)?;
    signals::install().context("cannot install signal handlers")?;

    let scan = scan_leases(run)?;
    let now = run.now_unix_ms;
    backoff.prune(&scan.candidates, now, backoff_max_ms(run));
    let settings = recover::Settings {
        rch,
        socket: run.args.socket.clone(),
        lease_dir,
        recover_timeout: Duration::from_secs(run.args.recover_timeout),
        kill_grace: Duration::from_secs(run.args.kill_grace),
    };
    let due = plan::due(&scan.candidates, &backoff, now);
    let attempts = execute(
        due,
        scan.candidates.len(),
        usize::from(run.args.max_recoveries),
        &settings,
    );
    let signal = signals::received();
    let (leases, mut exit_code) = record(run, &scan.candidates, attempts, &mut backoff, signal);
    if exit_code == ExitCode::Success {
        backoff.last_success_unix_ms = Some(now_unix_ms());
    }
    if let Err(error) = state::save(&run.state_file, &backoff) {
        log::error(format!(
            "cannot write state file {}: {error}; backoff of this run is lost",
            run.state_file.display()
        ));
        exit_code = exit_code.merge(ExitCode::Io);
    }
    let mut summary = summary(run, scan, leases, exit_code);
    write_metrics(run, &mut summary, backoff.last_success_unix_ms);
    print(run, &summary);
    Ok(summary.exit_code)
}

/// Records each candidate's attempt in the backoff state and turns it into a
/// report line; returns the lines in plan order and the run's exit code.
fn record(
    run: &Run,
    candidates: &[Candidate],
    attempts: Vec<Option<Attempt>>,
    backoff: &mut Backoff,
    signal: Option<i32>,
) -> (Vec<LeaseLine>, ExitCode) {
    let mut exit_code = ExitCode::Success;
    let mut leases = Vec::with_capacity(candidates.len());
    for (candidate, attempt) in candidates.iter().zip(attempts) {
        let Some(attempt) = attempt else {
            let outcome = if backoff.is_due(&candidate.wrapper_id, run.now_unix_ms) {
                Outcome::Deferred
            } else {
                Outcome::BackingOff
            };
            leases.push(line(candidate, outcome, None, None, backoff));
            continue;
        };
        let ended = attempt.ended_unix_ms;
        let (outcome, error) = match attempt.outcome {
            recover::Outcome::Recovered => {
                backoff.forget(&candidate.wrapper_id);
                (Outcome::Recovered, None)
            }
            recover::Outcome::Vanished => {
                backoff.forget(&candidate.wrapper_id);
                (Outcome::Vanished, None)
            }
            recover::Outcome::Failed(error) => {
                let base_ms = run.args.backoff_base.saturating_mul(1000);
                backoff.record_failure(candidate, &error, ended, base_ms, backoff_max_ms(run));
                exit_code = exit_code.merge(ExitCode::Failed);
                log::error(format!(
                    "recovery of {} on {} failed: {error}",
                    candidate.wrapper_id, candidate.worker_id
                ));
                (Outcome::Failed, Some(error))
            }
            recover::Outcome::Interrupted(error) => {
                let name = signals::name(signal.unwrap_or(libc::SIGTERM));
                let error = format!("interrupted by {name}: {error}");
                backoff.record_interrupted(candidate, &error, ended);
                (Outcome::Interrupted, Some(error))
            }
        };
        leases.push(line(
            candidate,
            outcome,
            Some(attempt.duration),
            error,
            backoff,
        ));
    }
    if let Some(signal) = signal {
        warn_stopped(signal, &leases);
        exit_code = ExitCode::Signal(signal);
    }
    (leases, exit_code)
}

/// The warning a stopped run leaves in the log: which signal, and what it
/// cut short.
fn warn_stopped(signal: i32, leases: &[LeaseLine]) {
    let interrupted = leases
        .iter()
        .filter(|line| line.outcome == Outcome::Interrupted)
        .count();
    log::warn(format!(
        "stopped by {}: no further recovery started; {interrupted} running recover{} interrupted (process group killed, no failure counted, retried next run)",
        signals::name(signal),
        if interrupted == 1 { "y" } else { "ies" },
    ));
}

/// Runs the due candidates through the queue; returns, per candidate index,
/// the attempt made (None: never started).
fn execute(
    due: Vec<(usize, Candidate)>,
    candidates: usize,
    max: usize,
    settings: &recover::Settings,
) -> Vec<Option<Attempt>> {
    let mut attempts: Vec<Option<Attempt>> = vec![None; candidates];
    let mut queue = Queue::new(due, max);
    let (done_tx, done_rx) = mpsc::channel::<(usize, String, Attempt)>();
    let stop = || signals::received().is_some();
    std::thread::scope(|scope| {
        let mut running = 0usize;
        loop {
            if stop() {
                queue.stop();
            }
            while let Some((index, candidate)) = queue.next_start() {
                let done_tx = done_tx.clone();
                let worker_id = candidate.worker_id.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("recover-{index}"))
                    .spawn_scoped(scope, move || {
                        let attempt =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                recover::recover(settings, &candidate, &stop)
                            }))
                            .unwrap_or_else(|_| {
                                let panicked = "recovery thread panicked".to_owned();
                                Attempt::ended(recover::Outcome::Failed(panicked), Duration::ZERO)
                            });
                        // The receiver lives until every thread has reported.
                        let _ = done_tx.send((index, candidate.worker_id, attempt));
                    });
                match spawned {
                    Ok(_) => running += 1,
                    Err(error) => {
                        let why = format!("cannot start a recovery thread: {error}");
                        attempts[index] = Some(Attempt::ended(
                            recover::Outcome::Failed(why),
                            Duration::ZERO,
                        ));
                        // Nothing runs on that worker; its lane is free again.
                        queue.finished(&worker_id);
                    }
                }
            }
            if running == 0 {
                break;
            }
            match done_rx.recv_timeout(POLL) {
                Ok((index, worker_id, attempt)) => {
                    running -= 1;
                    queue.finished(&worker_id);
                    attempts[index] = Some(attempt);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    });
    attempts
}

fn load_state(run: &Run) -> Result<Backoff> {
    let path = &run.state_file;
    match state::load(path, Access::Write)? {
        Loaded::Missing => Ok(Backoff::empty()),
        Loaded::Valid(backoff) => Ok(backoff),
        Loaded::Corrupt(why, read) => {
            let aside = state::quarantine(path, read, run.now_unix_ms).map_err(|error| {
                Fatal::error(
                    ExitCode::Io,
                    format!(
                        "state file {} does not parse ({why}) and cannot be moved aside: {error}",
                        path.display()
                    ),
                )
            })?;
            log::warn(format!(
                "state file {} does not parse ({why}); moved it to {} and starting with empty backoff",
                path.display(),
                aside.display()
            ));
            Ok(Backoff::empty())
        }
    }
}

fn clean_temps(path: &Path) {
    match fsio::remove_stale_temps(path) {
        Ok(removed) => {
            for stale in removed {
                log::info(format!(
                    "removed {} left by an interrupted run",
                    stale.display()
                ));
            }
        }
        Err(error) => log::warn(format!(
            "cannot clean temporary files beside {}: {error}",
            path.display()
        )),
    }
}

fn line(
    candidate: &Candidate,
    outcome: Outcome,
    duration: Option<Duration>,
    error: Option<String>,
    backoff: &Backoff,
) -> LeaseLine {
    owned_line(candidate.clone(), outcome, duration, error, backoff)
}

/// [`line`] for a candidate that is no longer needed elsewhere.
fn owned_line(
    candidate: Candidate,
    outcome: Outcome,
    duration: Option<Duration>,
    error: Option<String>,
    backoff: &Backoff,
) -> LeaseLine {
    let entry = backoff.leases.get(&candidate.wrapper_id);
    let detail = LineDetail {
        duration,
        error,
        failures: entry.map(|entry| entry.failures),
        next_attempt_unix_ms: entry.map(|entry| entry.next_attempt_unix_ms),
    };
    LeaseLine::new(candidate, outcome, detail)
}

fn summary(run: &Run, scan: Scan, leases: Vec<LeaseLine>, exit_code: ExitCode) -> Summary {
    Summary {
        dry_run: run.dry_run,
        lease_dir: run.lease_dir.clone(),
        state_file: run.state_file.clone(),
        now_unix_ms: run.now_unix_ms,
        duration: run.started.elapsed(),
        scanned: scan.scanned,
        skipped: scan.skipped,
        leases,
        skipped_list: scan.skipped_list,
        exit_code,
    }
}

fn report(run: &Run, scan: Scan, leases: Vec<LeaseLine>, exit_code: ExitCode) {
    print(run, &summary(run, scan, leases, exit_code));
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

/// Writes the metrics file when one was asked for; failing to is an I/O
/// error of the run (74), reported but not fatal to what was recorded.
fn write_metrics(run: &Run, summary: &mut Summary, last_success_unix_ms: Option<u64>) {
    if let Some(path) = &run.args.metrics_file
        && let Err(error) = metrics::write(path, summary, last_success_unix_ms)
    {
        log::error(format!(
            "cannot write metrics file {}: {error}",
            path.display()
        ));
        summary.exit_code = summary.exit_code.merge(ExitCode::Io);
    }
}

/// With `--json`, a run that found the lock held still prints one document
/// (SPEC "JSON summary"), so `rch-sweep --json | jq` never reads empty input.
/// The error itself is reported by `main`, as for any other run.
fn print_lock_held(run: &Run, error: &anyhow::Error) {
    use std::io::Write;
    if !run.args.json || crate::exit::code_of(error) != ExitCode::Locked {
        return;
    }
    let document = serde_json::json!({
        "version": 1,
        "exit_code": ExitCode::Locked.code(),
        "error": format!("{error:#}"),
    });
    let _ = writeln!(std::io::stdout().lock(), "{document}");
}

fn backoff_max_ms(run: &Run) -> u64 {
    run.args.backoff_max.saturating_mul(1000)
}

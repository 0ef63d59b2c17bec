//! `rch-sweep [run]`: preflight → scan → judge → plan → recover → record →
//! report.
//!
//! The main thread owns the queue and the backoff state; each recovery runs
//! on a thread of its own (its child's parent-death signal is tied to that
//! thread) and reports back over a channel. The state file is written once,
//! at the end, also after a signal.

use super::Target;
use crate::backoff::{Backoff, now_unix_ms};
use crate::cli::RunArgs;
use crate::exit::{ExitCode, Fatal};
use crate::journal::LeaseDir;
use crate::lease_dir::{self, Found};
use crate::lock;
use crate::owner::ProcFs;
use crate::plan::{self, Queue, Slot};
use crate::preflight::{self, Intent};
use crate::recover::{self, Attempt};
use crate::report::{LeaseLine, LineDetail, Outcome, Summary};
use crate::scan::{self, Scan, ScanOptions};
use crate::state::{Access, Loaded};
use crate::verdict::Candidate;
use crate::{fsio, log, metrics, signals, state};
use anyhow::{Context, Result};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How often the main loop looks at the signal flag while recoveries run.
const POLL: Duration = Duration::from_millis(100);

/// Validated settings of one run.
struct Run {
    args: RunArgs,
    target: Target,
    intent: Intent,
    started: Instant,
    now_unix_ms: u64,
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
    };
    if matches!(run.target.lease_dir.found, Found::Missing) {
        return missing_lease_dir(&run);
    }
    run.target.check(run.intent)?;
    if run.dry() {
        dry_run(&run)
    } else {
        sweep(&run)
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

/// Nothing to do, and nothing created: no state folder, state or lock. A
/// folder someone named and that does not exist is most likely a typo,
/// which would otherwise sweep nothing forever, so it earns a warning.
fn missing_lease_dir(run: &Run) -> Result<ExitCode> {
    let finding = preflight::lease_dir(&run.target.lease_dir, run.intent);
    if run.target.lease_dir.explicit {
        log::warn(finding.message());
    } else {
        log::info(finding.finding);
    }
    if let Some(path) = &run.args.metrics_file {
        let finding = preflight::metrics(path);
        if run.dry() {
            finding.warn_only();
        } else {
            finding.enforce()?;
        }
    }
    let mut summary = summary(run, Scan::default(), Duration::ZERO, Vec::new());
    if !run.dry() {
        // A run with nothing to sweep succeeded, though it has no state.
        write_metrics(run, &mut summary, None, Some(now_unix_ms()));
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
        preflight::metrics(path).warn_only();
    }
    let dir = open_lease_dir(run)?;
    let state_file = &run.target.state_file;
    let mut backoff = match state::load(state_file, Access::Read)? {
        Loaded::Missing => Backoff::empty(),
        Loaded::Valid(backoff) => backoff,
        Loaded::Corrupt(why, _) => {
            log::warn(format!(
                "state file {} does not parse ({why}); planning without backoff (a real run moves it aside)",
                state_file.display()
            ));
            Backoff::empty()
        }
    };
    let (mut scan, scan_duration) = scan_leases(run, &dir)?;
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
            line(candidate, outcome, None, None, &backoff)
        })
        .collect();
    let mut summary = summary(run, scan, scan_duration, leases);
    if run.args.check && due_now {
        summary.exit_code = ExitCode::Failed;
    }
    print(run, &summary);
    Ok(summary.exit_code)
}

/// Takes the lease directory's lock, then the state lock: busy is 75, any
/// other failure 74. The state folder is created (0700) only once the lease
/// directory is ours for this run.
fn acquire_locks(run: &Run, dir: &LeaseDir) -> Result<lock::Lock> {
    let shown = run.target.lease_dir.display();
    lease_dir::lock(dir).map_err(|error| match error {
        lease_dir::LockError::Busy => Fatal::error(
            ExitCode::Locked,
            format!(
                "another rch-sweep is sweeping the lease directory {shown} (perhaps through another path or with another state file); try again when it is done"
            ),
        ),
        lease_dir::LockError::Io(error) => Fatal::error(
            ExitCode::Io,
            format!("cannot lock the lease directory {shown}: {error}"),
        ),
    })?;
    let state_dir = fsio::parent_dir(&run.target.state_file);
    fsio::ensure_private_dir(state_dir).map_err(|error| {
        Fatal::error(
            ExitCode::Io,
            format!(
                "cannot create state folder {}: {error}",
                state_dir.display()
            ),
        )
    })?;
    lock::acquire_for(&run.target.state_file)
}

fn sweep(run: &Run) -> Result<ExitCode> {
    let dir = open_lease_dir(run)?;
    let _lock = acquire_locks(run, &dir)?;
    if let Some(path) = &run.args.metrics_file {
        preflight::metrics(path).enforce()?;
    }
    let rch = preflight::rch(
        run.args.rch.as_deref(),
        std::env::var_os("PATH").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
    .map_err(|finding| Fatal::error(finding.code, finding.message()))?;
    clean_temps(&run.target.state_file);
    if let Some(metrics) = &run.args.metrics_file {
        clean_temps(metrics);
    }
    let mut backoff = load_state(run)?;
    signals::install().context("cannot install signal handlers")?;

    let (mut scan, scan_duration) = scan_leases(run, &dir)?;
    let now = run.now_unix_ms;
    backoff.prune(&scan.candidates, now, backoff_max_ms(run));
    let settings = recover::Settings {
        rch,
        socket: run.args.socket.clone(),
        lease_dir: run.target.lease_dir.resolved.clone(),
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
    let candidates = std::mem::take(&mut scan.candidates);
    let mut summary = summary(run, scan, scan_duration, Vec::new());
    record(run, candidates, attempts, &mut backoff, &mut summary);
    let previous_success = backoff.last_success_unix_ms;
    if summary.exit_code == ExitCode::Success {
        backoff.last_success_unix_ms = Some(now_unix_ms());
    }
    if let Err(error) = state::save(&run.target.state_file, &backoff) {
        let message = format!(
            "cannot write state file {}: {error}; the backoff of this run is lost",
            run.target.state_file.display()
        );
        log::error(&message);
        summary.fail(ExitCode::Io, message);
        backoff.last_success_unix_ms = previous_success;
    }
    let this_success = backoff.last_success_unix_ms;
    write_metrics(run, &mut summary, previous_success, this_success);
    if summary.exit_code != ExitCode::Success && this_success != previous_success {
        // The metrics could not be written after the state recorded this
        // run as a success: take that back, so no record says it was one.
        backoff.last_success_unix_ms = previous_success;
        if let Err(error) = state::save(&run.target.state_file, &backoff) {
            log::error(format!(
                "cannot write state file {}: {error}",
                run.target.state_file.display()
            ));
        }
    }
    summary.duration = run.started.elapsed();
    print(run, &summary);
    Ok(summary.exit_code)
}

/// Records each candidate's attempt in the backoff state and turns it into
/// a report line, in plan order, merging what each outcome means for the
/// exit code into the summary.
fn record(
    run: &Run,
    candidates: Vec<Candidate>,
    attempts: Vec<Option<Attempt>>,
    backoff: &mut Backoff,
    summary: &mut Summary,
) {
    let signal = signals::received();
    let mut leases = Vec::with_capacity(candidates.len());
    for (candidate, attempt) in candidates.into_iter().zip(attempts) {
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
                backoff.record_failure(&candidate, &error, ended, base_ms, backoff_max_ms(run));
                summary.exit_code = summary.exit_code.merge(ExitCode::Failed);
                log::error(format!(
                    "recovery of {} on {} failed: {error}",
                    candidate.wrapper_id, candidate.worker_id
                ));
                (Outcome::Failed, Some(error))
            }
            recover::Outcome::Interrupted(error) => {
                let name = signals::name(signal.unwrap_or(libc::SIGTERM));
                let error = format!("interrupted by {name}: {error}");
                backoff.record_interrupted(&candidate, &error, ended);
                (Outcome::Interrupted, Some(error))
            }
            recover::Outcome::NotStarted(error) => {
                // The host's fault: the lease keeps its backoff entry exactly
                // as it was, and waits for the next run like any deferred one.
                let message = format!(
                    "{error}; no further recovery was started and no lease was charged a failure. Fix the rch install (or --rch / RCH_SWEEP_RCH); rch-sweep doctor checks it"
                );
                if !summary.errors.contains(&message) {
                    log::error(&message);
                }
                summary.fail(ExitCode::Config, message);
                (Outcome::Deferred, Some(error))
            }
        };
        let duration = (outcome != Outcome::Deferred).then_some(attempt.duration);
        leases.push(line(candidate, outcome, duration, error, backoff));
    }
    if let Some(signal) = signal {
        warn_stopped(signal, &leases);
        summary.exit_code = ExitCode::Signal(signal);
    }
    summary.leases = leases;
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
/// the attempt made (None: never started). A signal, or a child that could
/// not be started at all (a broken `rch` would fail every other one the
/// same way), stops further starts; running recoveries finish.
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
                    if matches!(attempt.outcome, recover::Outcome::NotStarted(_)) {
                        queue.stop();
                    }
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
    let path = &run.target.state_file;
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

/// A candidate's report line, with its backoff entry as it stands now. The
/// candidate moves into the line: memory grows with the candidates, so
/// each is held once.
fn line(
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

fn summary(run: &Run, scan: Scan, scan_duration: Duration, leases: Vec<LeaseLine>) -> Summary {
    Summary {
        dry_run: run.dry(),
        lease_dir: run.target.lease_dir.resolved.clone(),
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

/// Writes the metrics file when one was asked for; failing to is an I/O
/// error of the run (74), reported but not fatal to what was recorded. The
/// last success it reports is this run's only when the run exits 0.
fn write_metrics(
    run: &Run,
    summary: &mut Summary,
    previous_success: Option<u64>,
    this_success: Option<u64>,
) {
    let Some(path) = &run.args.metrics_file else {
        return;
    };
    let last_success = if summary.exit_code == ExitCode::Success {
        this_success
    } else {
        previous_success
    };
    if let Err(error) = metrics::write(path, summary, last_success) {
        let message = format!("cannot write metrics file {}: {error}", path.display());
        log::error(&message);
        summary.fail(ExitCode::Io, message);
    }
}

fn backoff_max_ms(run: &Run) -> u64 {
    run.args.backoff_max.saturating_mul(1000)
}

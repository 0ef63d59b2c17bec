//! `rch-sweep [run]`: the run's steps in order, each a call: preflight
//! (lease directory, locks, metrics path, `rch`, state), scan, plan,
//! recover ([`crate::dispatch`]), record ([`crate::record`]), save
//! ([`crate::persist`]), report. A dry run and `--check` stop after the
//! plan and write nothing.

use super::Target;
use crate::backoff::{Backoff, now_unix_ms};
use crate::cli::RunArgs;
use crate::exit::{ExitCode, Fatal};
use crate::journal::LeaseDir;
use crate::lease_dir::{self, Found};
use crate::lock;
use crate::owner::ProcFs;
use crate::plan::{self, Slot};
use crate::preflight::{self, Intent};
use crate::record::{self, Policy};
use crate::report::{LeaseLine, Outcome, Summary};
use crate::scan::{self, Scan, ScanOptions};
use crate::{dispatch, fsio, log, persist, recover, signals, state};
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::{Duration, Instant};

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
        if let Some(path) = &run.args.metrics_file {
            persist::write_metrics(path, &mut summary, None, Some(now_unix_ms()));
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
        preflight::metrics(path).warn_only();
    }
    let dir = open_lease_dir(run)?;
    let mut backoff = state::load_for_plan(&run.target.state_file)?;
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
                Slot::BackingOff => Outcome::BackingOff,
                Slot::WouldRecover => Outcome::WouldRecover,
                Slot::Deferred => Outcome::Deferred,
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

/// Takes the lease directory's lock, then the state lock: busy is 75, any
/// other failure 74. The state folder is created (0700) only once the lease
/// directory is ours for this run; whether it was just made or was there,
/// it is opened without following a link and checked on that descriptor,
/// and the lock is opened through it, so a folder someone made or swapped
/// in since the preflight is refused (74), never written into.
fn acquire_locks(run: &Run, dir: &LeaseDir) -> Result<lock::Lock> {
    let shown = run.target.lease_dir.display();
    lease_dir::lock(dir).map_err(|error| match error {
        lease_dir::LockError::Busy => Fatal::error(
            ExitCode::TempFail,
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
        let message = if fsio::is_untrusted_folder(&error) {
            error.to_string()
        } else {
            format!(
                "cannot create state folder {}: {error}",
                state_dir.display()
            )
        };
        Fatal::error(ExitCode::Io, message)
    })?;
    lock::acquire_for(&run.target.state_file)
}

/// What a real run holds once its preflight passed, until it ends: the
/// lease directory, open (its descriptor holds the lease-directory lock);
/// the state lock; `rch`; the state to plan with.
struct Ready {
    dir: LeaseDir,
    _state_lock: lock::Lock,
    rch: PathBuf,
    backoff: Backoff,
}

/// A real run, step by step.
fn sweep(run: &Run) -> Result<ExitCode> {
    let Ready {
        dir,
        _state_lock,
        rch,
        mut backoff,
    } = preflight(run)?;
    let (mut scan, scan_duration) = scan_leases(run, &dir)?;
    let policy = policy(run);
    backoff.prune(&scan.candidates, policy.now_unix_ms, policy.max_ms);
    let due = plan::due(&scan.candidates, &backoff, policy.now_unix_ms);
    let attempts = dispatch::recover_due(
        &scan.candidates,
        due,
        usize::from(run.args.max_recoveries),
        &recover_settings(run, rch),
    );
    let candidates = std::mem::take(&mut scan.candidates);
    let mut summary = summary(run, scan, scan_duration, Vec::new());
    record::attempts(candidates, attempts, &policy, &mut backoff, &mut summary);
    let metrics_file = run.args.metrics_file.as_deref();
    persist::save(
        &run.target.state_file,
        metrics_file,
        &mut backoff,
        &mut summary,
    );
    summary.duration = run.started.elapsed();
    print(run, &summary);
    Ok(summary.exit_code)
}

/// A real run's preflight past the checks every command makes: the lease
/// directory opened and locked, the state lock, the metrics path, `rch`
/// (found as `execvp` finds it; 78 when it is not), the leftovers of an
/// interrupted run cleaned, the state loaded, the signal handlers in place.
fn preflight(run: &Run) -> Result<Ready> {
    let dir = open_lease_dir(run)?;
    let state_lock = acquire_locks(run, &dir)?;
    if let Some(path) = &run.args.metrics_file {
        preflight::metrics(path).enforce()?;
    }
    let rch = preflight::rch(
        run.args.rch.as_deref(),
        std::env::var_os("PATH").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
    .map_err(|finding| Fatal::error(finding.code, finding.message()))?;
    persist::clean_leftovers(&run.target.state_file);
    if let Some(metrics) = &run.args.metrics_file {
        persist::clean_leftovers(metrics);
    }
    let backoff = state::load_for_run(&run.target.state_file, run.now_unix_ms)?;
    signals::install().context("cannot install signal handlers")?;
    Ok(Ready {
        dir,
        _state_lock: state_lock,
        rch,
        backoff,
    })
}

fn recover_settings(run: &Run, rch: PathBuf) -> recover::Settings {
    recover::Settings {
        rch,
        socket: run.args.socket.clone(),
        lease_dir: run.target.lease_dir.resolved.clone(),
        recover_timeout: Duration::from_secs(run.args.recover_timeout),
        kill_grace: Duration::from_secs(run.args.kill_grace),
    }
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

fn policy(run: &Run) -> Policy {
    Policy {
        now_unix_ms: run.now_unix_ms,
        base_ms: run.args.backoff_base.saturating_mul(1000),
        max_ms: run.args.backoff_max.saturating_mul(1000),
    }
}

//! What a real run leaves behind once its recoveries are recorded: the
//! state file, then the metrics file, and the honest last success between
//! them. A run is recorded as a success only when it exits 0 with its state
//! saved; should the metrics then fail, or a stop signal arrive while the
//! records are written, that is taken back, so no record says a run
//! succeeded that did not. Also the cleanup of the temporary files an
//! interrupted run left beside them.

use crate::exit::ExitCode;
use crate::state::Store;
use crate::state::backoff::{Backoff, now_unix_ms};
use crate::sweep::report::Summary;
use crate::{fsio, log, signals, sweep::metrics};
use std::path::Path;
use std::time::Instant;

/// Saves `backoff` to the state file (in the state folder the run opened
/// once, `state`) and writes the metrics file when one is named, in that
/// order. A failure to write either is an I/O error of the
/// run (74), added to `summary`, never fatal to what the other records.
/// The run's duration is taken once, after the state is saved, for the
/// metrics and the summary alike.
///
/// A stop signal that arrives while the records are written still decides
/// the exit (128+N) and makes the run no success (SPEC "JSON summary"), so
/// the outcome is final only once the signals are held, after both writes.
/// The state is saved once with the outcome as it stands before them; if
/// the final one is no success while the state recorded one (a signal
/// meanwhile, or metrics that could not be written), the records say so
/// again: the metrics rewritten, the state's earlier success put back.
pub fn save(
    state: &Store,
    metrics_file: Option<&Path>,
    backoff: &mut Backoff,
    summary: &mut Summary,
    started: Instant,
) {
    // What the records said before this run.
    let earlier = backoff.last_success_unix_ms;
    let reported =
        metrics_file.and_then(|path| last_success_before(path, &summary.lease_dir, earlier));
    // The outcome as it stands once the recoveries are recorded.
    note_late_signal(summary, signals::received());
    let recorded = save_state(state, backoff, summary);
    summary.duration = started.elapsed();
    note_late_signal(summary, signals::received());
    if let Some(path) = metrics_file {
        write_metrics(path, summary, reported, recorded);
    }
    // The outcome made final: past this point a signal stays pending until
    // exit, so what the records say now is what the run was.
    if note_late_signal(summary, signals::hold())
        && let Some(path) = metrics_file
    {
        write_metrics(path, summary, reported, recorded);
    }
    if summary.exit_code != ExitCode::Success && recorded != earlier {
        take_back_success(state, backoff, earlier);
    }
}

/// Saves the state with this run's success, when it exits 0 as it stands;
/// failing to is 74, added to `summary`. The last success the state file
/// holds afterwards.
fn save_state(state: &Store, backoff: &mut Backoff, summary: &mut Summary) -> Option<u64> {
    let earlier = backoff.last_success_unix_ms;
    if summary.exit_code == ExitCode::Success {
        backoff.last_success_unix_ms = Some(now_unix_ms());
    }
    if let Err(error) = state.save(backoff) {
        let message = format!(
            "cannot write state file {}: {error}; the backoff of this run is lost",
            state.path().display()
        );
        log::error(&message);
        summary.fail(ExitCode::Io, message);
        backoff.last_success_unix_ms = earlier;
    }
    backoff.last_success_unix_ms
}

/// Saves the state again with its `earlier` last success, for a run whose
/// success it recorded and which, once final, is none. The run already
/// exits non-zero, so a failure here is only said.
fn take_back_success(state: &Store, backoff: &mut Backoff, earlier: Option<u64>) {
    backoff.last_success_unix_ms = earlier;
    if let Err(error) = state.save(backoff) {
        log::error(format!(
            "cannot write state file {}: {error}",
            state.path().display()
        ));
    }
}

/// A stop signal the run had not yet acted on, which now decides its exit
/// (SPEC "JSON summary": a signal that arrives while the state or the
/// metrics are written still makes the exit 128+N); true when it changed it.
fn note_late_signal(summary: &mut Summary, signal: Option<i32>) -> bool {
    match signal {
        Some(signal) if !matches!(summary.exit_code, ExitCode::Signal(_)) => {
            log::warn(format!(
                "stopped by {} after the recoveries, while the state and metrics were written: the run is not counted as a success",
                signals::name(signal)
            ));
            summary.exit_code = ExitCode::Signal(signal);
            true
        }
        _ => false,
    }
}

/// The last success to report when this run is none: the later of the
/// state file's (`state_success`) and what the metrics file at `path`
/// reports now, before it is replaced.
pub fn last_success_before(
    path: &Path,
    lease_dir: &Path,
    state_success: Option<u64>,
) -> Option<u64> {
    state_success.max(metrics::reported_last_success(path, lease_dir))
}

/// Writes the metrics file; failing to is an I/O error of the run (74),
/// reported but not fatal to what was recorded. The last success it
/// reports is `this_success` only when the run exits 0, else the previous
/// ([`last_success_before`]); never the earlier of the two.
pub fn write_metrics(
    path: &Path,
    summary: &mut Summary,
    previous_success: Option<u64>,
    this_success: Option<u64>,
) {
    let last_success = if summary.exit_code == ExitCode::Success {
        this_success.max(previous_success)
    } else {
        previous_success
    };
    if let Err(error) = metrics::write(path, summary, last_success) {
        let message = format!("cannot write metrics file {}: {error}", path.display());
        log::error(&message);
        summary.fail(ExitCode::Io, message);
    }
}

/// Removes the temporary files a killed run left beside `path` (only our
/// own regular files), saying what went.
pub fn clean_leftovers(path: &Path) {
    said_removed(fsio::remove_stale_temps(path), path);
}

/// [`clean_leftovers`] of the state file, in the state folder the run
/// opened.
pub fn clean_state_leftovers(state: &Store) {
    said_removed(state.remove_stale_temps(), state.path());
}

/// Says which leftovers beside `path` went, or why they could not.
fn said_removed(removed: std::io::Result<Vec<std::path::PathBuf>>, path: &Path) {
    match removed {
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

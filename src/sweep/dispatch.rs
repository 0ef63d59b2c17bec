//! The recoveries of one real run: the due candidates drawn from the plan's
//! [`Queue`] (start budget, in-flight cap, one per worker), each recovered on
//! a thread of its own (its child's parent-death signal is tied to that
//! thread), each result sent back over a channel to the one thread that
//! owns the queue.

use crate::judge::verdict::Candidate;
use crate::rch::recover::{self, Attempt, AttemptOutcome, Settings};
use crate::signals;
use crate::sweep::plan::Queue;
use std::sync::mpsc;
use std::time::Duration;

/// How often the loop looks at the signal flag while recoveries run.
const POLL: Duration = Duration::from_millis(100);

/// Runs `due` (borrowed from `candidates`, in plan order) through the queue;
/// returns, per index of `candidates`, the attempt made (None: never
/// started). A signal, or an attempt that failed through no fault of its
/// lease but of the host or the `rch` install (the next would fail the
/// same way), stops further starts; running recoveries finish.
pub fn recover_due(
    candidates: &[Candidate],
    due: Vec<(usize, &Candidate)>,
    max: usize,
    settings: &Settings,
) -> Vec<Option<Attempt>> {
    let mut attempts: Vec<Option<Attempt>> = vec![None; candidates.len()];
    let mut queue = Queue::new(due, max);
    let (done_tx, done_rx) = mpsc::channel::<(usize, Attempt)>();
    let stop = || signals::received().is_some();
    std::thread::scope(|scope| {
        let mut running = 0usize;
        loop {
            if stop() {
                queue.stop();
            }
            while let Some((index, candidate)) = queue.next_start() {
                let done_tx = done_tx.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("recover-{index}"))
                    .spawn_scoped(scope, move || {
                        let attempt =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                recover::recover(settings, candidate, &stop)
                            }))
                            .unwrap_or_else(|_| {
                                let panicked = "recovery thread panicked".to_owned();
                                Attempt::ended(AttemptOutcome::Failed(panicked), Duration::ZERO)
                            });
                        // The receiver lives until every thread has reported.
                        let _ = done_tx.send((index, attempt));
                    });
                match spawned {
                    Ok(_) => running += 1,
                    Err(error) => {
                        // The host's fault, not the lease's: nothing is
                        // charged and nothing more is started.
                        attempts[index] =
                            Some(Attempt::ended(recover::no_thread(&error), Duration::ZERO));
                        // Nothing runs on that worker; its lane is free again.
                        queue.finished(&candidate.worker_id);
                        queue.stop();
                    }
                }
            }
            if running == 0 {
                break;
            }
            match done_rx.recv_timeout(POLL) {
                Ok((index, attempt)) => {
                    running -= 1;
                    queue.finished(&candidates[index].worker_id);
                    if let AttemptOutcome::NotCharged(fault, _) = &attempt.outcome
                        && fault.stops_starts()
                    {
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

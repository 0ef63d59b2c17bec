//! The read-back of a finished recovery: whether the journal `rch jobs
//! recover` left behind shows the delivery and the daemon's mark, by the
//! release of rch that ran it (rch-lease-format.md §10). A pure function of
//! the journal before and after; [`crate::rch::recover`] reads them.

use super::settled_handoff;
use crate::lease::{DurableJobLease, LeaseState};

pub const IDENTITY_CHANGED: &str = "recovery journal identity changed; completion not confirmed";
pub const NOT_ACKNOWLEDGED: &str =
    "recovery command exited without durable daemon/delivery acknowledgement";

/// What a finished recovery leaves in the journal, which depends on the
/// release of rch that ran it (rch-lease-format.md §10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// rch 2.1.17 and later (and an rch whose version cannot be read): the
    /// delivery and the daemon's mark, `recovery.daemon_exit_code` or, from
    /// 2.1.34, `recovery.daemon_record_absent: true`.
    DaemonMarked,
    /// rch 2.1.0 to 2.1.16 finish a recovery with no daemon handoff and
    /// never write a daemon mark: the delivery is all there is to see.
    DeliveryOnly,
}

/// A zero exit can mean only that a live wrapper was asked to resume, so a
/// recovery counts as done only when the journal read back is the same lease
/// and shows both the delivery and the daemon's terminal receipt, or, for a
/// build the daemon no longer knew, rch's mark that it had no record
/// (`daemon_record_absent: true`, which rch 2.1.34 writes only past its
/// 24-hour cap and rchd 2.1.34's own recovery task accepts in place of the
/// receipt).
pub fn verify_completion(
    before: &DurableJobLease,
    after: &DurableJobLease,
    completion: Completion,
) -> Result<(), &'static str> {
    if before.identity != after.identity
        || before.worker_id != after.worker_id
        || before.wrapper_pid != after.wrapper_pid
        || before.process_start_ticks != after.process_start_ticks
        || before.boot_id != after.boot_id
        || before.process_birth != after.process_birth
        || before.command_fingerprint != after.command_fingerprint
    {
        return Err(IDENTITY_CHANGED);
    }
    let daemon_exit = after
        .recovery
        .as_ref()
        .and_then(|recipe| recipe.daemon_exit_code.as_i64())
        .and_then(|code| i32::try_from(code).ok());
    let record_absent = after
        .recovery
        .as_ref()
        .is_some_and(|recipe| recipe.daemon_record_absent.as_bool() == Some(true));
    let delivered = settled_handoff(after);
    if !after.terminal_acknowledged
        || after.state != LeaseState::Finished
        || delivered.is_none()
        || delivered != after.exit_code
        || (completion == Completion::DaemonMarked && daemon_exit.is_none() && !record_absent)
    {
        return Err(NOT_ACKNOWLEDGED);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::samples::{handoff, handoff_recipe, with_recipe};
    use serde_json::{Value, json};

    /// `before` as a recovery leaves it: delivered with `exit`, the
    /// daemon's receipt `daemon_exit` in the recipe, terminal.
    fn marked(before: &DurableJobLease, after: &DurableJobLease) -> Result<(), &'static str> {
        verify_completion(before, after, Completion::DaemonMarked)
    }

    fn completed(before: &DurableJobLease, exit: i32, daemon_exit: Value) -> DurableJobLease {
        let mut recipe = handoff_recipe(exit);
        recipe["daemon_exit_code"] = daemon_exit;
        let mut after = with_recipe(before, recipe);
        after.exit_code = Some(exit);
        after.state = LeaseState::Finished;
        after.terminal_acknowledged = true;
        after.heartbeat_unix_ms += 1;
        after
    }

    #[test]
    fn completion_needs_delivery_and_daemon_evidence_without_conflating_exits() {
        let before = handoff(0, 11, 102);
        assert_eq!(marked(&before, &before), Err(NOT_ACKNOWLEDGED));
        let complete = completed(&before, 102, json!(130));
        assert_eq!(marked(&before, &complete), Ok(()));

        for receipt in [Value::Null, json!("130"), json!(1u64 << 40), json!(130.5)] {
            assert_eq!(
                marked(&before, &completed(&before, 102, receipt.clone())),
                Err(NOT_ACKNOWLEDGED),
                "daemon_exit_code {receipt}"
            );
        }
        // rch 2.1.34: a build its daemon no longer knew settles on the
        // recorded absence instead of a receipt; only a JSON `true` counts.
        let mut forgotten = handoff_recipe(102);
        forgotten["daemon_record_absent"] = json!(true);
        let forgotten = with_recipe(&complete, forgotten);
        assert_eq!(marked(&before, &forgotten), Ok(()));
        for mark in [json!("true"), json!(1), json!(false), Value::Null] {
            let mut recipe = handoff_recipe(102);
            recipe["daemon_record_absent"] = mark.clone();
            assert_eq!(
                marked(&before, &with_recipe(&complete, recipe)),
                Err(NOT_ACKNOWLEDGED),
                "daemon_record_absent {mark}"
            );
        }
        let mut absent_unfinished = forgotten.clone();
        absent_unfinished.terminal_acknowledged = false;
        assert_eq!(marked(&before, &absent_unfinished), Err(NOT_ACKNOWLEDGED));
        let mut absent_contradicting = forgotten;
        absent_contradicting.exit_code = Some(0);
        assert_eq!(
            marked(&before, &absent_contradicting),
            Err(NOT_ACKNOWLEDGED)
        );
        let mut false_success = complete.clone();
        false_success.exit_code = Some(0);
        assert_eq!(marked(&before, &false_success), Err(NOT_ACKNOWLEDGED));
        let mut not_finished = complete.clone();
        not_finished.state = LeaseState::Running;
        assert_eq!(marked(&before, &not_finished), Err(NOT_ACKNOWLEDGED));
        let mut recipe = handoff_recipe(102);
        recipe["daemon_exit_code"] = json!(130);
        recipe["retired"] = json!(false);
        assert_eq!(
            marked(&before, &with_recipe(&complete, recipe)),
            Err(NOT_ACKNOWLEDGED)
        );
    }

    #[test]
    fn an_unmarked_completion_of_rch_before_2_1_17_counts_only_for_such_an_rch() {
        // rch 2.1.0–2.1.16: delivered, terminal, `finished`, no daemon
        // handoff, so neither daemon_exit_code nor daemon_record_absent.
        let before = handoff(0, 11, 102);
        let mut after = with_recipe(&before, handoff_recipe(102));
        after.exit_code = Some(102);
        after.state = LeaseState::Finished;
        after.terminal_acknowledged = true;
        assert_eq!(
            verify_completion(&before, &after, Completion::DeliveryOnly),
            Ok(())
        );
        assert_eq!(
            verify_completion(&before, &after, Completion::DaemonMarked),
            Err(NOT_ACKNOWLEDGED)
        );
        // The delivery is still checked in full.
        let mut unfinished = after.clone();
        unfinished.terminal_acknowledged = false;
        let mut contradicting = after.clone();
        contradicting.exit_code = Some(0);
        for wrong in [unfinished, contradicting, before.clone()] {
            assert_eq!(
                verify_completion(&before, &wrong, Completion::DeliveryOnly),
                Err(NOT_ACKNOWLEDGED)
            );
        }
        let mut other = after;
        other.wrapper_pid = 12;
        assert_eq!(
            verify_completion(&before, &other, Completion::DeliveryOnly),
            Err(IDENTITY_CHANGED)
        );
    }

    #[test]
    fn completion_refuses_a_journal_with_another_identity() {
        let before = handoff(0, 11, 102);
        let complete = completed(&before, 102, json!(130));
        let changes: [fn(&mut DurableJobLease); 7] = [
            |l| l.identity.remote_build_id = Some(8),
            |l| l.worker_id = Some("other".into()),
            |l| l.wrapper_pid = 12,
            |l| l.process_start_ticks = Some(124),
            |l| l.boot_id = None,
            |l| {
                l.process_birth = Some(crate::lease::ProcessIdentity {
                    boot_id: "3f1c2a9e-5b7d-4e2a-9c1f-0a1b2c3d4e5f".into(),
                    start: crate::lease::ProcessStart::Darwin {
                        seconds: 1791280000,
                        microseconds: 1,
                    },
                })
            },
            |l| l.command_fingerprint = "blake3:other".into(),
        ];
        for (index, change) in changes.iter().enumerate() {
            let mut replaced = complete.clone();
            change(&mut replaced);
            assert_eq!(
                marked(&before, &replaced),
                Err(IDENTITY_CHANGED),
                "change {index}"
            );
        }
    }
}

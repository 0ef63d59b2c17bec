//! A lease held without a start that reached rch's verdict (deferred for
//! any reason, stuck, waiting for rch's 24 hours), as the surfaces that
//! are not the run's table tell it: `status`, `explain`, doctor's
//! `journals`, and the once-a-day line of a `--quiet` run, which cron
//! mails (SPEC "No lease waits in silence"). The data and the times live
//! in the state file ([`crate::state::backoff::HeldLease`]).

use crate::human::{one_line, span, utc};
use crate::log;
use crate::state::backoff::{Backoff, HeldLease, LONG_HELD_MS};

/// "held for 7h 0m (since 2026-10-06 09:46:43 UTC), not charged: <why>".
pub fn told(held: &HeldLease, now_ms: u64) -> String {
    format!(
        "held for {} (since {}), not charged: {}",
        span(held.held_ms(now_ms)),
        utc(held.since_unix_ms),
        one_line(&held.error)
    )
}

/// Under `--quiet`, one line for each lease held six hours or more that
/// no run has told of for a day, marked told in `backoff` (which the run
/// then saves, so the day survives restarts). Printed even under
/// `--quiet` and on a run that exits 75: a lease held that long no longer
/// fixes itself, and a cron line mails only what a run prints.
pub fn say_daily(backoff: &mut Backoff, now_ms: u64, lease_dir: &str) {
    for (id, held) in backoff.to_say(now_ms) {
        log::warn_always(log::printable(&format!(
            "lease {id} on worker {} is {}; it is said once a day while it waits (rch-sweep status --lease-dir {lease_dir} shows it, rch-sweep explain --lease-dir {lease_dir} {id} says why)",
            held.worker_id,
            told(&held, now_ms)
        )));
    }
}

/// What doctor's `journals` check says of the held leases.
#[derive(Debug, PartialEq, Eq)]
pub enum Told {
    /// Beside the counts: none has waited six hours yet.
    Note(String),
    /// One has (the alert RchSweepLeaseHeld fires): a warning, and its fix.
    Warning(String, String),
}

/// The most leases doctor names, longest held first.
const SHOWN: usize = 3;

/// What doctor says of the leases `backoff` holds at `now_ms` (pruned to
/// the candidates by the caller), each with why; `None` when none is.
pub fn for_doctor(backoff: &Backoff, now_ms: u64) -> Option<Told> {
    if backoff.held.is_empty() {
        return None;
    }
    let mut held: Vec<(&String, &HeldLease)> = backoff.held.iter().collect();
    held.sort_by_key(|(id, held)| (held.since_unix_ms, *id));
    let long = held
        .iter()
        .filter(|(_, held)| held.held_ms(now_ms) >= LONG_HELD_MS)
        .count();
    let mut named: Vec<String> = held
        .iter()
        .take(SHOWN)
        .map(|(id, held)| format!("{id} {}", told(held, now_ms)))
        .collect();
    if held.len() > SHOWN {
        named.push(format!("and {} more", held.len() - SHOWN));
    }
    let said = format!(
        "{} lease{} held without a recovery that reached rch's verdict: {}",
        held.len(),
        if held.len() == 1 { "" } else { "s" },
        named.join("; ")
    );
    Some(if long == 0 {
        Told::Note(said)
    } else {
        Told::Warning(
            format!("{long} held for 6h or more (alert RchSweepLeaseHeld); {said}"),
            "fix what each reason names (the recovery lock, rch's daemon, rch's release, room on the disk); rch-sweep status lists every held lease, rch-sweep explain WRAPPER_ID shows one".to_owned(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `backoff` holds `id` since `since_ms` for `error`.
    fn hold(backoff: &mut Backoff, id: &str, error: &str, since_ms: u64) {
        let held = HeldLease {
            since_unix_ms: since_ms,
            error: error.into(),
            ..HeldLease::default()
        };
        backoff.held.insert(id.into(), held);
    }

    #[test]
    fn doctor_notes_a_hold_and_warns_of_one_six_hours_old() {
        let hour = 3_600_000;
        let mut backoff = Backoff::empty();
        assert_eq!(for_doctor(&backoff, 0), None);
        hold(&mut backoff, "rchw-b", "busy\nlocked", hour);
        let Some(Told::Note(note)) = for_doctor(&backoff, 2 * hour) else {
            panic!("a note");
        };
        assert!(
            note.starts_with("1 lease held without a recovery that reached rch's verdict: rchw-b held for 1h 0m (since 1970-01-01 01:00:00 UTC), not charged: busy locked"),
            "{note}"
        );
        for id in ["rchw-a", "rchw-c", "rchw-d"] {
            hold(&mut backoff, id, "daemon down", 0);
        }
        let Some(Told::Warning(warning, fix)) = for_doctor(&backoff, 6 * hour) else {
            panic!("a warning");
        };
        assert!(warning.starts_with("3 held for 6h or more"), "{warning}");
        assert!(warning.contains("4 leases held"), "{warning}");
        assert!(warning.contains("rchw-a held for 6h 0m"), "{warning}");
        assert!(warning.ends_with("; and 1 more"), "{warning}");
        assert!(
            !warning.contains("rchw-b"),
            "the longest held first: {warning}"
        );
        assert!(fix.contains("rch-sweep status"), "{fix}");
    }
}

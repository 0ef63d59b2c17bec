//! Journal bytes → verdict: `lease::parse`, then `judge::judge` with the
//! owner gone (and alive, to compare), `settled_handoff`,
//! `owns_unretired_source`, `verify_completion(&lease, &lease, DeliveryOnly)` and the
//! owner identity a journal records. None may panic, and the verdicts must
//! agree with SPEC.md's rules where they overlap.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rch_sweep::lease;
use rch_sweep::judge::{self, SkipReason};
use rch_sweep::judge::owner::{Kill, Namespace, Observation, Presence, Recorded, StatSeen};

/// A canonical wrapper id no seed uses, for the "name differs" case.
const OTHER_ID: &str = "rchw-00000000-0000-4000-8000-000000000000";
/// A day after the demo journals' heartbeats.
const NOW: u64 = 1_791_366_403_512;
const STALE_AFTER: u64 = 900_000;
const BOOT: &str = "3f1c2a9e-5b7d-4e2a-9c1f-0a1b2c3d4e5f";

/// /proc facts of an owner that is gone, alive (when the record allows it)
/// or cannot be judged.
fn observed(pid: u32, recorded: &Recorded, presence: Presence) -> Observation {
    let mut observation = Observation {
        pid,
        recorded: recorded.clone(),
        namespace: Some(Namespace::Own),
        boot_id: Some(BOOT.into()),
        stat: StatSeen::Absent(Kill::NoSuchProcess),
        shortage: None,
    };
    match (presence, recorded) {
        (Presence::Gone, _) => {}
        (Presence::Alive, Recorded::Linux { boot_id, ticks }) => {
            observation.boot_id = Some(boot_id.clone());
            observation.stat = StatSeen::Seen {
                pid,
                state: b'S',
                threads: 1,
                start_ticks: *ticks,
            };
        }
        (Presence::Alive, _) => {
            observation.stat = StatSeen::Seen {
                pid,
                state: b'S',
                threads: 1,
                start_ticks: 1,
            };
        }
        (Presence::Unverified, _) => observation.boot_id = None,
    }
    observation
}

fuzz_target!(|data: &[u8]| {
    // The scan's name check runs on arbitrary directory entries.
    if let Some(id) = lease::wrapper_id_of(data) {
        assert!(lease::is_wrapper_id(id));
    }
    let Ok(lease) = lease::parse(data) else {
        return;
    };
    let handoff = judge::settled_handoff(&lease);
    let owns = judge::owns_unretired_source(&lease);
    let _ = Recorded::of(&lease);
    if judge::verify_completion(&lease, &lease, judge::Completion::DeliveryOnly).is_ok() {
        // Complete means acknowledged, finished and a settled handoff.
        assert!(lease.terminal_acknowledged);
        assert!(handoff.is_some());
        assert_eq!(handoff, lease.exit_code);
    }

    let own_id = lease.identity.local_wrapper_id.clone();
    let cases = [
        (own_id.as_str(), NOW, STALE_AFTER),
        (own_id.as_str(), u64::MAX, 0),
        (own_id.as_str(), 0, u64::MAX),
        (own_id.as_str(), lease.heartbeat_unix_ms, 0),
        (own_id.as_str(), lease.heartbeat_unix_ms, 1),
        (OTHER_ID, NOW, STALE_AFTER),
    ];
    for (file_id, now, stale_after) in cases {
        let mut asked = false;
        let gone = judge::judge(
            file_id,
            lease.clone(),
            now,
            stale_after,
            |pid, recorded| {
                asked = true;
                assert!(pid > 1, "presence asked for pid {pid}");
                observed(pid, recorded, Presence::Gone)
            },
            Vec::new(),
        );
        let alive = judge::judge(
            file_id,
            lease.clone(),
            now,
            stale_after,
            |pid, recorded| observed(pid, recorded, Presence::Alive),
            Vec::new(),
        );
        let unverified = judge::judge(
            file_id,
            lease.clone(),
            now,
            stale_after,
            |pid, recorded| observed(pid, recorded, Presence::Unverified),
            Vec::new(),
        );
        // Every check that was reached says what it saw, in table order.
        for judgement in [&gone, &alive, &unverified] {
            assert!(
                judgement
                    .checks
                    .windows(2)
                    .all(|w| w[0].check < w[1].check && w[0].passed)
            );
            assert!(
                judgement
                    .checks
                    .iter()
                    .all(|c| !c.evidence.to_string().is_empty())
            );
            assert_eq!(judgement.verdict.is_err(), judgement.deciding().is_some());
        }
        let (gone, alive, unverified) = (gone.verdict, alive.verdict, unverified.verdict);
        match &gone {
            Ok(candidate) => {
                assert!(asked);
                assert_eq!(candidate.wrapper_id, file_id);
                assert!(candidate.build_id > 0);
                assert!(!candidate.worker_id.is_empty());
                assert_eq!(candidate.heartbeat_unix_ms, lease.heartbeat_unix_ms);
                assert!(owns || handoff.is_some());
                assert!(!lease.terminal_acknowledged);
                assert!(lease.schema_version == 1 && lease.wrapper_pid > 1);
                assert!(now.saturating_sub(lease.heartbeat_unix_ms) >= stale_after);
                // Alive needs a usable record: with none, or an invalid
                // one, an existing PID may have been reused (unverified).
                if matches!(Recorded::of(&lease), Recorded::Linux { .. }) {
                    assert_eq!(alive, Err(SkipReason::OwnerAlive));
                } else {
                    assert_eq!(alive, Err(SkipReason::OwnerUnverified));
                }
                assert_eq!(unverified, Err(SkipReason::OwnerUnverified));
            }
            Err(reason) => {
                // Presence was never the deciding question.
                assert!(!asked);
                assert_eq!(&alive, &gone);
                assert_eq!(&unverified, &gone);
                if file_id != lease.identity.local_wrapper_id || lease.schema_version != 1 {
                    assert_eq!(*reason, SkipReason::Malformed);
                } else if lease.terminal_acknowledged {
                    assert_eq!(*reason, SkipReason::Terminal);
                }
            }
        }
    }
});

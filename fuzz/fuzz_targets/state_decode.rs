//! State file bytes → backoff: `state::decode`; a decoded state, put through
//! the arithmetic a run applies to it (prune, failure, interruption), must
//! re-serialize (compact and pretty, as `state::save` writes it) to bytes
//! that decode to an equal state.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rch_sweep::state::backoff::{Backoff, VERSION};
use rch_sweep::judge::Candidate;
use rch_sweep::state::{self, Decode};

fn round_trips(backoff: &Backoff) {
    let compact = serde_json::to_vec(backoff).expect("a state serializes");
    let pretty = serde_json::to_vec_pretty(backoff).expect("a state serializes");
    for bytes in [compact, pretty] {
        match state::decode(&bytes) {
            Ok(again) => assert_eq!(&again, backoff),
            Err(error) => panic!(
                "a saved state does not decode ({error:?}): {}",
                String::from_utf8_lossy(&bytes)
            ),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let backoff = match state::decode(data) {
        Ok(backoff) => backoff,
        Err(Decode::UnknownVersion(version)) => {
            assert_ne!(version, VERSION);
            return;
        }
        Err(Decode::Corrupt(_)) => return,
    };
    assert_eq!(backoff.version, VERSION);
    round_trips(&backoff);

    // What a run does to it before saving, at clocks and settings on the edges.
    let candidates: Vec<Candidate> = backoff
        .leases
        .iter()
        .take(8)
        .map(|(id, entry)| Candidate {
            wrapper_id: id.clone(),
            worker_id: entry.worker_id.clone(),
            build_id: entry.build_id,
            heartbeat_unix_ms: entry.last_attempt_unix_ms,
        })
        .collect();
    for (now, base, max) in [
        (1_791_280_003_512, 600_000, 21_600_000),
        (0, 0, 0),
        (u64::MAX, u64::MAX, u64::MAX),
    ] {
        let mut run = backoff.clone();
        run.prune(&candidates[..candidates.len() / 2], now, max);
        for candidate in &candidates {
            let due = run.is_due(&candidate.wrapper_id, now);
            if let Some(entry) = run.leases.get(&candidate.wrapper_id) {
                assert!(entry.next_attempt_unix_ms <= now.saturating_add(max));
                assert_eq!(due, entry.next_attempt_unix_ms <= now);
            } else {
                assert!(due);
            }
            run.record_failure(candidate, "exit status: 1: boom", now, base, max);
            run.record_interrupted(candidate, "interrupted by SIGTERM", now);
        }
        round_trips(&run);
    }
});

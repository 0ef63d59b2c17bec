//! A state file that already holds a backoff entry, as an earlier run that
//! failed to recover a lease would have left it.

use super::{World, now_ms};
use serde_json::{Value, json};
use std::fs;

/// The entry an earlier run left for a lease on `w1` that failed three
/// times: due again now.
pub fn due_entry() -> Value {
    json!({
        "failures": 3,
        "next_attempt_unix_ms": now_ms() - 1000,
        "last_attempt_unix_ms": now_ms() - 60_000,
        "last_error": "exit status: 1: worker unreachable",
        "worker_id": "w1",
        "build_id": 30052631078502447u64,
    })
}

/// The entry an earlier run left for a lease on `worker` that failed
/// twice, an hour ago: due again now.
pub fn twice_failed_entry(worker: &str) -> Value {
    json!({
        "failures": 2,
        "next_attempt_unix_ms": now_ms() - 60_000,
        "last_attempt_unix_ms": now_ms() - 3_600_000,
        "last_error": "exit status: 1: earlier",
        "worker_id": worker,
        "build_id": 30052631078502447u64,
    })
}

/// Writes the world's state file (pretty, as the binary writes it) with
/// `entry` for `id` and, where given, the last success (ms); returns the
/// bytes written.
pub fn write_entry(
    world: &World,
    id: &str,
    entry: &Value,
    last_success_ms: Option<u64>,
) -> Vec<u8> {
    let mut state = json!({"version": 1});
    if let Some(ms) = last_success_ms {
        state["last_success_unix_ms"] = json!(ms);
    }
    state["leases"] = json!({id: entry});
    let bytes = serde_json::to_vec_pretty(&state).expect("json");
    fs::create_dir_all(world.state_file().parent().expect("folder")).expect("mkdir");
    fs::write(world.state_file(), &bytes).expect("write state");
    bytes
}

/// [`write_entry`] with a [`due_entry`]; returns the entry and the bytes.
pub fn write_due_entry(world: &World, id: &str, last_success_ms: Option<u64>) -> (Value, Vec<u8>) {
    let entry = due_entry();
    let bytes = write_entry(world, id, &entry, last_success_ms);
    (entry, bytes)
}

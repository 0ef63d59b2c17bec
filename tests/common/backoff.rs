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

/// Writes the world's state file (pretty, as the binary writes it) with
/// one [`due_entry`] for `id` and, where given, the last success (ms);
/// returns the entry and the bytes written.
pub fn write_due_entry(world: &World, id: &str, last_success_ms: Option<u64>) -> (Value, Vec<u8>) {
    let entry = due_entry();
    let mut state = json!({"version": 1});
    if let Some(ms) = last_success_ms {
        state["last_success_unix_ms"] = json!(ms);
    }
    state["leases"] = json!({id: entry.clone()});
    let bytes = serde_json::to_vec_pretty(&state).expect("json");
    fs::create_dir_all(world.state_file().parent().expect("folder")).expect("mkdir");
    fs::write(world.state_file(), &bytes).expect("write state");
    (entry, bytes)
}

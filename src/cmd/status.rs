//! `rch-sweep status`: the backoff entries of the state file, for people or
//! as JSON with a `due` flag. Reads only; takes no lock.

use crate::backoff::{Backoff, now_unix_ms};
use crate::cli::StatusArgs;
use crate::exit::ExitCode;
use crate::report::span;
use crate::state;
use anyhow::Result;
use std::io::Write;

pub fn run(args: StatusArgs) -> Result<ExitCode> {
    let (lease_dir, state_file) = super::resolve_paths(&args.paths);
    super::check_state_outside_leases(&lease_dir, &state_file)?;
    let backoff =
        state::load_existing(&state_file, state::Access::Read)?.unwrap_or_else(Backoff::empty);
    let now = now_unix_ms();
    let text = if args.json {
        json(&backoff, now)
    } else {
        // Stored errors came from children: never print them raw.
        crate::log::printable(&human(&backoff, now, &state_file.display().to_string())).into_owned()
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(ExitCode::Success)
}

/// The state file's `leases` object, each entry with `due` added.
fn json(backoff: &Backoff, now: u64) -> String {
    let leases: serde_json::Map<String, serde_json::Value> = backoff
        .leases
        .iter()
        .map(|(id, entry)| {
            let mut value = serde_json::to_value(entry).unwrap_or_default();
            if let Some(object) = value.as_object_mut() {
                object.insert("due".into(), backoff.is_due(id, now).into());
            }
            (id.clone(), value)
        })
        .collect();
    format!("{}\n", serde_json::Value::Object(leases))
}

fn human(backoff: &Backoff, now: u64, path: &str) -> String {
    if backoff.leases.is_empty() {
        return format!("no leases are backing off ({path})\n");
    }
    let mut out = String::new();
    for (id, entry) in &backoff.leases {
        let when = if entry.next_attempt_unix_ms <= now {
            "due now".to_owned()
        } else {
            format!("next attempt in {}", span(entry.next_attempt_unix_ms - now))
        };
        out.push_str(&format!(
            "{id}  worker {}  build {}  {} failure{}  {when}\n",
            entry.worker_id,
            entry.build_id,
            entry.failures,
            if entry.failures == 1 { "" } else { "s" },
        ));
        if let Some(error) = &entry.last_error {
            out.push_str(&format!("    last error: {error}\n"));
        }
    }
    out
}

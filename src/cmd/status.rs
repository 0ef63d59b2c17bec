//! `rch-sweep status`: the backoff entries of the state file, for people or
//! as JSON with a `due` flag. Reads only; takes no lock.

use crate::account;
use crate::cli::StatusArgs;
use crate::exit::{ExitCode, Fatal};
use crate::human::{span, utc};
use crate::state;
use crate::state::backoff::{self, Backoff, Hold, now_unix_ms};
use crate::sweep::preflight::{self, Intent};
use anyhow::Result;
use std::io::Write;
use std::path::Path;

/// The cap on a next attempt as shown: `--backoff-max`'s default, since
/// status does not take the flag.
const MAX_MS: u64 = crate::cli::DEFAULT_BACKOFF_MAX_SECS * 1000;

pub fn run(args: StatusArgs) -> Result<ExitCode> {
    super::refuse_tilde(&args.paths, &[])?;
    let target = super::Target::resolve(&args.paths);
    target.check(Intent::Read)?;
    // Unlike a dry run, status has nothing to show without the backoff.
    if let Some(hidden) = preflight::hidden_backoff(&target.lease_dir, &target.state_file) {
        let owner = account::login(hidden.owner);
        return Err(Fatal::error(
            ExitCode::Io,
            format!(
                "cannot read the backoff in {} ({}): it is {}'s, in a folder only they may enter; run status as its owner: `runuser -u {owner} -- rch-sweep status`",
                target.state_file.display(),
                hidden.error,
                account::describe(hidden.owner)
            ),
        ));
    }
    let state_file = target.state_file;
    let backoff =
        state::load_existing(&state_file, state::Access::Read)?.unwrap_or_else(Backoff::empty);
    let now = now_unix_ms();
    let text = if args.json {
        json(&backoff, now, &state_file)
    } else {
        // Stored errors came from children: never print them raw.
        crate::log::printable(&human(&backoff, now, &state_file.display().to_string())).into_owned()
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(ExitCode::Success)
}

/// SPEC's document: `{"version": 1, "state_file", "leases"}`, the leases
/// as the state file holds them, each entry with `due` added.
fn json(backoff: &Backoff, now: u64, state_file: &Path) -> String {
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
    // The leases held without a verdict, as stored, each with how long
    // it has been held; the key only when one is (SPEC: add, don't rename).
    let held: serde_json::Map<String, serde_json::Value> = backoff
        .held
        .iter()
        .map(|(id, held)| {
            let mut value = serde_json::to_value(held).unwrap_or_default();
            if let Some(object) = value.as_object_mut() {
                object.insert("held_seconds".into(), (held.held_ms(now) / 1000).into());
            }
            (id.clone(), value)
        })
        .collect();
    // A struct, not `json!`, so the keys come in SPEC's order.
    #[derive(serde::Serialize)]
    struct StatusDocument<'a> {
        version: u32,
        state_file: std::borrow::Cow<'a, str>,
        leases: serde_json::Map<String, serde_json::Value>,
        #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
        held: serde_json::Map<String, serde_json::Value>,
    }
    let document = StatusDocument {
        version: 1,
        state_file: state_file.to_string_lossy(),
        leases,
        held,
    };
    format!("{}\n", serde_json::to_string(&document).unwrap_or_default())
}

fn human(backoff: &Backoff, now: u64, path: &str) -> String {
    if backoff.leases.is_empty() && backoff.held.is_empty() {
        return format!("no leases are backing off ({path})\n");
    }
    let mut out = String::new();
    // A lease held with no entry of its own (never charged) is listed as
    // one with no failures, due now, beside the others in id order.
    let mut ids: Vec<&String> = backoff.leases.keys().chain(backoff.held.keys()).collect();
    ids.sort();
    ids.dedup();
    for id in ids {
        let fresh;
        let entry = match (backoff.leases.get(id), backoff.held.get(id)) {
            (Some(entry), _) => entry,
            (None, Some(held)) => {
                fresh = backoff::Entry {
                    worker_id: held.worker_id.clone(),
                    build_id: held.build_id,
                    ..backoff::Entry::default()
                };
                &fresh
            }
            (None, None) => continue,
        };
        // As the next run will save it (SPEC "Backoff"); --json keeps the
        // entry as stored.
        let next = backoff::capped(
            entry.next_attempt_unix_ms,
            now,
            backoff::cap_ms(entry, MAX_MS),
        );
        let when = if let Some(hold) = entry.hold.filter(|_| next > now) {
            held(hold, next, now)
        } else if next <= now {
            "due now".to_owned()
        } else if next < entry.next_attempt_unix_ms {
            format!(
                "next attempt in {} (capped at the default --backoff-max; the state holds {} ahead: the clock jumped back)",
                span(next - now),
                span(entry.next_attempt_unix_ms - now)
            )
        } else {
            format!("next attempt in {}", span(next - now))
        };
        out.push_str(&format!(
            "{id}  worker {}  build {}  {} failure{}  {when}\n",
            entry.worker_id,
            entry.build_id,
            entry.failures,
            if entry.failures == 1 { "" } else { "s" },
        ));
        if let Some(error) = &entry.last_error {
            out.push_str(&indented("    last error: ", error));
        }
        if let Some(held) = backoff.held.get(id) {
            out.push_str(&indented(
                "    waiting: ",
                &crate::sweep::held::told(held, now),
            ));
        }
    }
    out
}

/// The wait of an entry that waits on rch, not on its failures: until a
/// time.
fn held(hold: Hold, next: u64, now: u64) -> String {
    match hold {
        Hold::DaemonRecordWait => format!(
            "waiting until {} (in {}): rch finishes it once the lease is 24h old",
            utc(next),
            span(next - now)
        ),
        Hold::Stuck => format!(
            "stuck: this rch never completes it; retried in {}, not counted as a failure (upgrade rch to 2.1.34)",
            span(next - now)
        ),
    }
}

/// `error` after `label`, each further line of it indented under the
/// first, so a multi-line error (a child's stderr tail) stays under its
/// entry rather than reading like the next one.
fn indented(label: &str, error: &str) -> String {
    let pad = " ".repeat(label.len());
    let mut out = String::new();
    for (index, line) in error.lines().enumerate() {
        out.push_str(if index == 0 { label } else { &pad });
        out.push_str(line);
        out.push('\n');
    }
    if out.is_empty() {
        out.push_str(label.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_of_an_error_stays_under_its_entry() {
        assert_eq!(
            indented("    last error: ", "exit status: 1: first\nsecond\n third"),
            "    last error: exit status: 1: first\n                second\n                 third\n"
        );
        assert_eq!(indented("    last error: ", ""), "    last error:\n");
    }
}

//! Journals as large as rch writes them (a fingerprint per output file of a
//! big workspace's build), through the real binary: judged, re-read before
//! the start and read back after it at any size up to 64 MiB, and refused
//! unread past it. How much memory that takes is a benchmark figure
//! (`scripts/bench.sh`), not something asserted here.

mod common;

use common::*;
use serde_json::json;

const LIMIT: u64 = 64 * 1024 * 1024;

/// Output files that make a journal of about 3 MiB.
const OUTPUTS_3_MIB: usize = 26_000;

#[test]
fn a_3_mib_journal_is_a_candidate_and_a_real_run_recovers_it() {
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS).with_outputs(OUTPUTS_3_MIB);
    let file = journal.file_name();
    // The fake rch writes back the completed journal, just as big.
    let id = world.will_complete(journal);
    let rch = world.completing_rch();
    let size = std::fs::metadata(world.leases().join(&file))
        .expect("journal")
        .len();
    assert!(size > 3 * 1024 * 1024, "{size} bytes");
    let completed = std::fs::read(world.path("done").join(&file)).expect("completed");
    assert!(completed.len() as u64 > 3 * 1024 * 1024);

    let (code, document) = world.json(&["--dry-run"]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(
        outcomes(&document),
        [(id.clone(), "would_recover".to_owned())]
    );

    let (code, document) = world.json(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(outcomes(&document), [(id, "recovered".to_owned())]);
    assert_eq!(document["recovered"], 1);
    assert_eq!(
        std::fs::read(world.leases().join(&file)).expect("journal"),
        completed,
        "the client wrote the completed journal"
    );
    assert_eq!(world.state()["leases"], json!({}));
    // Read back after the run, the big journal is terminal.
    let (code, document) = world.json(&["--dry-run"]);
    assert_eq!(
        (code, document["skipped"].clone()),
        (0, json!({"terminal": 1}))
    );
}

#[test]
fn a_journal_of_64_mib_is_judged_and_one_byte_more_is_not_read() {
    let world = World::new();
    // A recoverable journal, padded with the whitespace JSON allows after
    // it to exactly the limit; and one more byte. (The padding is what
    // makes this test take a second or two: all of it is read.)
    let at_limit = Journal::stale("hz4", 2 * HOUR_MS);
    let over = Journal::stale("w2", 2 * HOUR_MS);
    for (journal, size) in [(&at_limit, LIMIT), (&over, LIMIT + 1)] {
        let path = world.add(journal);
        let text = journal.text();
        let padding = size - text.len() as u64;
        let mut bytes = text.into_bytes();
        bytes.resize(size as usize, b' ');
        assert_eq!(bytes.len() as u64, size, "{padding} bytes of padding");
        std::fs::write(&path, bytes).expect("pad");
    }

    let (code, document) = world.json(&["--dry-run", "-v"]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(
        outcomes(&document),
        [(at_limit.id.clone(), "would_recover".to_owned())]
    );
    assert_eq!(document["skipped"], json!({"unreadable": 1}));
    let row = document["leases"]
        .as_array()
        .expect("leases")
        .iter()
        .find(|row| row["file"] == over.file_name().as_str())
        .expect("a row for the journal over the limit");
    assert_eq!(row["reason"], "unreadable");
    assert_eq!(
        row["detail"],
        "67,108,865 bytes, over the 64 MiB limit: not read"
    );
}

#[test]
fn a_live_owner_with_no_recorded_identity_is_unverified() {
    let world = World::new();
    // This very process is alive; the journal records no boot id or start
    // time to tell it from a later process that reused the PID.
    let unrecorded = Journal::stale("hz4", 2 * HOUR_MS)
        .set("wrapper_pid", json!(std::process::id()))
        .remove("boot_id")
        .remove("process_start_ticks");
    world.add(&unrecorded);
    let (code, document) = world.json(&["--dry-run", "-v"]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["skipped"], json!({"owner_unverified": 1}));
    assert_eq!(document["candidates"], 0);
    let detail = document["leases"][0]["detail"].as_str().expect("detail");
    assert!(detail.contains("no identity recorded"), "{detail}");
    // The same journal with the owner's real identity is a live owner.
    world.add(&Journal {
        id: unrecorded.id.clone(),
        root: Journal::stale("hz4", 2 * HOUR_MS)
            .owned_by_this_process()
            .set(
                "identity",
                json!({"local_wrapper_id": unrecorded.id, "remote_build_id": 30052631078502447u64}),
            )
            .set_recipe("wrapper_id", json!(unrecorded.id))
            .root,
    });
    let (_, document) = world.json(&["--dry-run"]);
    assert_eq!(document["skipped"], json!({"owner_alive": 1}));
}

/// Journals larger than this are parsed at most two at a time.
const GATED: u64 = 1024 * 1024;

#[test]
fn at_most_two_journals_over_1_mib_are_parsed_at_once_whatever_the_threads() {
    if !tool_or_skip("/usr/bin/strace", "strace") {
        return;
    }
    let strace = std::path::Path::new("/usr/bin/strace");
    // Eight journals of one 3 MiB string each (the string a parse must
    // hold whole), and eight scan threads: one each.
    let world = World::new();
    let mut ids = Vec::new();
    for worker in 0..8 {
        let journal = Journal::stale(&format!("w{worker}"), 2 * HOUR_MS)
            .set_recipe("note", json!("x".repeat(3 << 20)));
        world.add(&journal);
        ids.push((journal.id.clone(), "would_recover".to_owned()));
    }
    ids.sort();
    let log = world.path("strace.log");
    let output = std::process::Command::new(strace)
        .args([
            "-f",
            "-qq",
            "-s",
            "0",
            "-e",
            "trace=openat,read,close",
            "-o",
        ])
        .arg(&log)
        .arg(BIN)
        .args([
            "--dry-run",
            "--json",
            "--max-recoveries",
            "8",
            "--lease-dir",
        ])
        .arg(world.leases())
        .arg("--state-file")
        .arg(world.state_file())
        .env("RCH_SWEEP_SCAN_THREADS", "8")
        .env_remove("RCH_STATE_HOME")
        .output()
        .expect("run under strace");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let mut seen = outcomes(&document);
    seen.sort();
    assert_eq!(seen, ids);

    // Each journal is parsed past 1 MiB from its first read that starts
    // there (taken only with a place at the gate) to its read that finds
    // the end (made before the place is given back). strace logs a call
    // as the thread makes it, and a thread can only take a place after
    // another gave it back, so these spans, in the log's order, overlap
    // only as far as the gate lets them.
    let spans = parse_spans(&std::fs::read_to_string(&log).expect("strace log"));
    assert_eq!(
        spans.len(),
        8,
        "every journal was read to its end: {spans:?}"
    );
    let mut edges: Vec<(usize, i32)> = spans
        .iter()
        .flat_map(|(start, end)| [(*start, 1), (*end, -1)])
        .collect();
    edges.sort();
    let (mut now, mut most) = (0, 0);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    assert!(
        (1..=2).contains(&most),
        "{most} journals over 1 MiB were parsed at once"
    );
}

/// The spans (log line of the first read of a journal that starts past
/// [`GATED`], log line of the read that returns 0) in `strace -f` output.
fn parse_spans(log: &str) -> Vec<(usize, usize)> {
    // By fd: bytes read so far, and where the span started.
    let mut open: std::collections::HashMap<i64, (u64, Option<usize>)> = Default::default();
    // By thread: a call logged as unfinished, and the line it began on.
    let mut pending: std::collections::HashMap<&str, (String, usize)> = Default::default();
    let mut spans = Vec::new();
    for (line_no, line) in log.lines().enumerate() {
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        let (call, began) = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid, (head.to_owned(), line_no));
            continue;
        } else if rest.starts_with("<... ") {
            let Some((head, began)) = pending.remove(pid) else {
                continue;
            };
            let tail = rest.split_once("resumed>").map_or("", |(_, tail)| tail);
            (format!("{head}{tail}"), began)
        } else {
            (rest.to_owned(), line_no)
        };
        let Some((_, result)) = call.rsplit_once(" = ") else {
            continue;
        };
        let Ok(result) = result
            .split_whitespace()
            .next()
            .unwrap_or("")
            .parse::<i64>()
        else {
            continue;
        };
        let fd_arg = |name: &str| {
            call.strip_prefix(name)?
                .split([',', ')'])
                .next()?
                .trim()
                .parse::<i64>()
                .ok()
        };
        if call.starts_with("openat(") && call.contains("rchw-") && result >= 0 {
            open.insert(result, (0, None));
        } else if let Some(fd) = fd_arg("read(") {
            if let Some((read, start)) = open.get_mut(&fd) {
                if *read > GATED && start.is_none() {
                    *start = Some(began);
                }
                if result == 0 {
                    if let Some(start) = start.take() {
                        spans.push((start, line_no));
                    }
                } else if result > 0 {
                    *read += result as u64;
                }
            }
        } else if let Some(fd) = fd_arg("close(") {
            open.remove(&fd);
        }
    }
    spans
}

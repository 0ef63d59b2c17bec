//! The parallel scan gives exactly the serial scan's answer: the JSON of
//! `--dry-run --json -v` (less its timing) over a large mixed lease directory
//! is the same with one scan thread and with several
//! (`RCH_SWEEP_SCAN_THREADS`), down to the order of candidates with equal
//! heartbeats and of the skipped rows.

mod common;

use common::*;
use serde_json::{Value, json};

/// Journals in the directory: enough batches (of 128) for every thread.
const JOURNALS: usize = 3000;

/// The kinds of journal, dealt out by index so each batch holds a mix.
const KINDS: usize = 14;

/// Runs a verbose dry run with `threads` scan threads; the document without
/// its `duration_ms`, which is the one thing that may differ.
fn dry_run(world: &World, threads: &str) -> Value {
    let output = world
        .command(&["--dry-run", "--json", "-v"])
        .env("RCH_SWEEP_SCAN_THREADS", threads)
        .output()
        .expect("run rch-sweep");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut document: Value = serde_json::from_slice(&output.stdout).expect("one JSON document");
    let object = document.as_object_mut().expect("an object");
    assert!(object.remove("duration_ms").is_some(), "{object:?}");
    // A fresh heartbeat's evidence names its age, which grows between two
    // runs; it must be there, and is compared without the number.
    for row in document["leases"].as_array_mut().expect("leases") {
        if row["reason"] == "heartbeat_fresh" {
            let detail = row["detail"].as_str().expect("detail on a verbose row");
            assert!(detail.starts_with("heartbeat "), "{detail}");
            row["detail"] = json!("heartbeat <age>");
        }
    }
    document
}

#[test]
fn a_parallel_scan_reports_exactly_what_the_serial_scan_reports() {
    let world = World::new();
    let me = std::process::id();
    let now = now_ms();
    // Two heartbeats shared by many candidates: their order is the tie-break
    // by wrapper id, whichever threads judged them.
    let tie_a = now - 30 * HOUR_MS;
    let tie_b = now - 2 * HOUR_MS;
    for index in 0..JOURNALS {
        let journal = Journal::stale(["hz4", "w2", "fsn1"][index % 3], HOUR_MS);
        let journal = match index % KINDS {
            0 => journal.set("heartbeat_unix_ms", json!(tie_a)),
            1 => journal.set("heartbeat_unix_ms", json!(tie_b)),
            2 => journal.set("heartbeat_unix_ms", json!(now - HOUR_MS - index as u64)),
            3 => journal.settled(0).set("heartbeat_unix_ms", json!(tie_a)),
            4 => journal.completed(0),
            5 => journal.set_recipe("retired", json!(true)),
            6 => {
                let id = journal.id.clone();
                journal.set("identity", json!({"local_wrapper_id": id}))
            }
            7 => journal.set("heartbeat_unix_ms", json!(now - 1000)),
            8 => journal.set("wrapper_pid", json!(1)),
            9 => journal.owned_by_this_process(),
            // A live PID with no identity recorded: unverified.
            10 => journal
                .set("wrapper_pid", json!(me))
                .remove("boot_id")
                .remove("process_start_ticks"),
            11 => journal.set("wrapper_pid", json!(3_000_000_000u32)),
            12 => journal.set("schema_version", json!(2)),
            _ => {
                // Named for one wrapper, written for another.
                let other = Journal::stale("hz4", HOUR_MS);
                world.write(&journal.file_name(), other.text());
                continue;
            }
        };
        world.add(&journal);
    }
    // Entries no journal list holds twice: bad names, a truncated and an
    // oversized journal, entries that are no regular file, and ones that
    // are not journals at all (not counted).
    world.write("not-a-wrapper.json", Journal::stale("hz4", HOUR_MS).text());
    world.write(
        &format!("{}.json", new_id().to_uppercase().replace("RCHW", "rchw")),
        Journal::stale("hz4", HOUR_MS).text(),
    );
    world.write(&format!("{}.json", new_id()), "{\"schema_version\": 1");
    // Past the 64 MiB limit: a sparse file, never read.
    std::fs::File::create(world.leases().join(format!("{}.json", new_id())))
        .and_then(|file| file.set_len(64 * 1024 * 1024 + 1))
        .expect("sparse file");
    std::fs::create_dir(world.leases().join(format!("{}.json", new_id()))).expect("mkdir");
    std::os::unix::fs::symlink(
        "/etc/hostname",
        world.leases().join(format!("{}.json", new_id())),
    )
    .expect("symlink");
    mkfifo(&world.leases().join(format!("{}.json", new_id())));
    world.write("notes.txt", "not a journal");
    world.write(&format!("{}.recovery.lock", new_id()), "");
    // Another user's journal, where this test may make one.
    let foreign = is_root() && {
        let path = world.add(&Journal::stale("hz4", HOUR_MS));
        std::os::unix::fs::chown(path, Some(65534), Some(65534)).is_ok()
    };

    let serial = dry_run(&world, "1");
    // The directory is what it was meant to be: every reason this test can
    // make occurs, and candidates share heartbeats.
    let extra = 7 + usize::from(foreign);
    assert_eq!(
        serial["scanned"],
        json!(JOURNALS + extra),
        "{}",
        serial["skipped"]
    );
    // Every reason this test can make: another user's journal only as root.
    let reasons = REASONS
        .into_iter()
        .filter(|reason| foreign || *reason != "foreign_owner");
    for reason in reasons {
        assert!(
            serial["skipped"][reason].as_u64() > Some(0),
            "{reason}: {}",
            serial["skipped"]
        );
    }
    let candidates = serial["candidates"].as_u64().expect("candidates");
    assert!(candidates > 800, "{candidates}");
    let ties = serial["leases"]
        .as_array()
        .expect("leases")
        .iter()
        .filter(|lease| lease["heartbeat_unix_ms"] == json!(tie_a))
        .count();
    assert!(ties > 400, "{ties}");
    let files: Vec<&str> = serial["leases"]
        .as_array()
        .expect("leases")
        .iter()
        .filter_map(|lease| lease["file"].as_str())
        .collect();
    assert_eq!(files.len(), JOURNALS + extra - candidates as usize);
    assert!(files.is_sorted(), "skipped rows in file-name order");

    for threads in ["2", "5"] {
        let parallel = dry_run(&world, threads);
        assert!(
            parallel == serial,
            "{threads} scan threads differ from the serial scan:\nserial:   {}\nparallel: {}",
            serial["skipped"],
            parallel["skipped"]
        );
    }
}

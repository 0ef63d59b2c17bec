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

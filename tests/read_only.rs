//! The read-only commands (a dry run, `explain`, `doctor`, `status`) and the
//! backoff they show: run by another user (a monitor account), who may not
//! read the owner's private state, and after the clock jumped back, when a
//! stored next attempt lies further ahead than any run would wait.

mod common;

use common::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;

/// A state file holding `entries` (`(wrapper id, next attempt)`), each
/// with three failures on hz4.
fn write_state(world: &World, entries: &[(&str, u64)]) {
    let leases: serde_json::Map<String, Value> = entries
        .iter()
        .map(|(id, next)| {
            (
                (*id).to_owned(),
                json!({"failures": 3, "next_attempt_unix_ms": next,
                       "last_attempt_unix_ms": now_ms() - HOUR_MS,
                       "last_error": "exit status: 1: worker unreachable",
                       "worker_id": "hz4", "build_id": 30052631078502447u64}),
            )
        })
        .collect();
    let state = world.state_file();
    std::fs::create_dir_all(state.parent().expect("folder")).expect("mkdir");
    std::fs::write(&state, json!({"version": 1, "leases": leases}).to_string()).expect("state");
}

/// root's sweep (lease directory, journal, backoff) as another user sees
/// it: the world traversable, the state folder private (0700) as a run
/// makes it, or open (0755) with the state file 0600 as a run writes it.
fn roots_sweep(private_folder: bool) -> (World, String) {
    let world = World::new();
    std::fs::set_permissions(world.dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod world");
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&journal);
    write_state(&world, &[(&journal.id, now_ms() + HOUR_MS)]);
    let folder = world.state_file().parent().expect("folder").to_path_buf();
    let mode = if private_folder { 0o700 } else { 0o755 };
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(mode)).expect("chmod");
    std::fs::set_permissions(world.state_file(), std::fs::Permissions::from_mode(0o600))
        .expect("chmod");
    (world, journal.id)
}

#[test]
fn another_users_dry_run_explain_and_doctor_go_on_without_the_private_backoff() {
    if !is_root() {
        eprintln!("skipped: running as another user needs root");
        return;
    }
    for private_folder in [true, false] {
        let (world, id) = roots_sweep(private_folder);
        let before = snapshot(world.dir.path());
        let said = |output: &std::process::Output| {
            let text = stderr(output);
            assert!(
                text.contains("cannot read the backoff in")
                    && text.contains("going on without it")
                    && text.contains("runuser -u root -- rch-sweep"),
                "private folder {private_folder}: {text}"
            );
        };

        let output = as_nobody(&mut world.sub(&["--dry-run", "--json"]))
            .output()
            .expect("dry run");
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let document = one_document(&output);
        assert_eq!(document["scanned"], 1);
        said(&output);

        let output = as_nobody(&mut world.sub(&["explain", "--json", &id]))
            .output()
            .expect("explain");
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let document = one_document(&output);
        let journal = &document["journals"][0];
        assert_eq!(journal["reason"], "foreign_owner", "{document}");
        assert_eq!(journal["backoff"], Value::Null, "shown without its entry");
        said(&output);

        // doctor fails the lease directory (a run by this user would be
        // refused) and says what it could not see, as a warning.
        let output = as_nobody(&mut world.sub(&["doctor", "--json", "--rch", "/bin/true"]))
            .output()
            .expect("doctor");
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        let document = one_document(&output);
        let check = |name: &str| {
            document["checks"]
                .as_array()
                .expect("checks")
                .iter()
                .find(|check| check["check"] == name)
                .cloned()
                .unwrap_or_else(|| panic!("no {name} check: {document}"))
        };
        assert_eq!(check("lease_dir")["status"], "fail");
        let state = check("state");
        assert_eq!(state["status"], "warn", "{state}");
        let finding = state["finding"].as_str().expect("finding");
        assert!(
            finding.contains("cannot read the backoff") && finding.contains("going on without it"),
            "{finding}"
        );
        assert!(
            state["fix"]
                .as_str()
                .is_some_and(|fix| fix.contains("runuser -u root")),
            "{state}"
        );

        assert_eq!(
            snapshot(world.dir.path()),
            before,
            "a read changed something"
        );
    }
}

#[test]
fn another_users_status_names_the_owner_to_run_it_as() {
    if !is_root() {
        eprintln!("skipped: running as another user needs root");
        return;
    }
    for private_folder in [true, false] {
        let (world, _) = roots_sweep(private_folder);
        let output = as_nobody(&mut world.sub(&["status"]))
            .output()
            .expect("status");
        assert_eq!(output.status.code(), Some(74), "{}", stderr(&output));
        assert!(
            stderr(&output).contains("`runuser -u root -- rch-sweep status`"),
            "{}",
            stderr(&output)
        );
        let output = as_nobody(&mut world.sub(&["status", "--json"]))
            .output()
            .expect("status");
        assert_error_document(&output, 74, "runuser -u root -- rch-sweep status");
    }
}

#[test]
fn the_owners_own_unreadable_state_is_still_an_io_error() {
    if !is_root() {
        eprintln!("skipped: a state its owner cannot read needs another user than root");
        return;
    }
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    write_state(&world, &[]);
    world.hand_to_nobody();
    give_to_nobody(&world.state_file());
    std::fs::set_permissions(world.state_file(), std::fs::Permissions::from_mode(0o000))
        .expect("chmod");
    for args in [&["--dry-run"][..], &["explain", "rchw-x"], &["status"]] {
        let output = as_nobody(&mut world.sub(args)).output().expect("run");
        assert_eq!(
            output.status.code(),
            Some(74),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            !stderr(&output).contains("going on without it"),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
fn status_and_explain_show_a_next_attempt_past_the_cap_as_the_next_run_saves_it() {
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&journal);
    // The clock jumped back a year since the failure was recorded.
    let stored = now_ms() + 365 * 24 * HOUR_MS;
    write_state(&world, &[(&journal.id, stored)]);

    let output = world.sub(&["status"]).output().expect("status");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("next attempt in 6h 0m"),
        "{}",
        stdout(&output)
    );
    assert!(
        !stdout(&output).contains("next attempt in 365d"),
        "{}",
        stdout(&output)
    );
    // The JSON keeps the entry as stored.
    let output = world.sub(&["status", "--json"]).output().expect("status");
    let document = one_document(&output);
    assert_eq!(
        document["leases"][&journal.id]["next_attempt_unix_ms"],
        stored
    );
    assert_eq!(document["leases"][&journal.id]["due"], false);

    let output = world
        .sub(&["explain", &journal.id])
        .output()
        .expect("explain");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let line = |label: &str| {
        text.lines()
            .find(|line| line.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} line: {text}"))
            .to_owned()
    };
    assert!(line("backoff").ends_with("(in 6h 0m)"), "{text}");
    assert!(line("next run").contains("backing_off until"), "{text}");
    assert!(line("next run").ends_with("(in 6h 0m)"), "{text}");
    let output = world
        .sub(&["explain", "--json", &journal.id])
        .output()
        .expect("explain");
    let document = one_document(&output);
    assert_eq!(
        document["journals"][0]["backoff"]["next_attempt_unix_ms"],
        stored
    );
    assert_eq!(document["journals"][0]["next"], "backing_off");

    // What a dry run shows already; and nothing was written by any of them.
    let (code, document) = world.json(&["--dry-run"]);
    assert_eq!(code, 0);
    let lease = &document["leases"][0];
    assert_eq!(lease["outcome"], "backing_off");
    let shown = lease["next_attempt_unix_ms"]
        .as_u64()
        .expect("next attempt");
    assert!(shown <= now_ms() + 6 * HOUR_MS, "{lease}");
    assert_eq!(
        world.state()["leases"][&journal.id]["next_attempt_unix_ms"],
        stored
    );
}

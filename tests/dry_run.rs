//! `--dry-run` and `--check` of the real binary over temporary lease
//! directories: every SPEC verdict, hostile entries, order, exit codes, and
//! that a dry run writes nothing.

mod common;

use common::*;
use serde_json::json;
use std::os::unix::fs::symlink;
use std::process::Stdio;
use std::time::Duration;
use wait_timeout::ChildExt;

/// Runs the binary but fails the test instead of hanging forever.
fn json_within(world: &World, args: &[&str], limit: Duration) -> (i32, serde_json::Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let mut child = world
        .command(&all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let status = child.wait_timeout(limit).expect("wait");
    let Some(status) = status else {
        let _ = child.kill();
        panic!("rch-sweep did not finish within {limit:?}");
    };
    let output = child.wait_with_output().expect("output");
    let document = serde_json::from_slice(&output.stdout).expect("one JSON document");
    (status.code().unwrap_or(-1), document)
}

#[test]
fn mixed_journals_get_exactly_the_spec_verdicts_in_plan_order() {
    let world = World::new();
    let me = std::process::id();
    let oldest = Journal::stale("hz4", 30 * HOUR_MS);
    let newer = Journal::stale("w2", 2 * HOUR_MS);
    let handoff = Journal::stale("fsn1", 5 * HOUR_MS).settled(102);
    // A live PID whose recorded start time differs: reused, so gone.
    let reused = Journal::stale("w3", 3 * HOUR_MS)
        .set("wrapper_pid", json!(me))
        .set("boot_id", json!(boot_id()))
        .set("process_start_ticks", json!(own_start_ticks() + 1));
    for candidate in [&oldest, &newer, &handoff, &reused] {
        world.add(candidate);
    }

    let terminal = Journal::stale("hz4", HOUR_MS).completed(0);
    let not_owning = Journal::stale("hz4", HOUR_MS).set_recipe("retired", json!(true));
    let unadmitted = Journal::stale("hz4", HOUR_MS);
    let unadmitted = {
        let id = unadmitted.id.clone();
        unadmitted.set("identity", json!({"local_wrapper_id": id}))
    };
    let fresh = Journal::stale("hz4", 1000);
    let no_pid = Journal::stale("hz4", HOUR_MS).set("wrapper_pid", json!(1));
    // A live PID, but no identity recorded to tell it from a process that
    // reused the PID: unverified, as rch's owner_presence says Unknown.
    let live_no_identity = Journal::stale("hz4", HOUR_MS)
        .set("wrapper_pid", json!(me))
        .remove("boot_id")
        .remove("process_start_ticks");
    let alive_matching = Journal::stale("hz4", HOUR_MS).owned_by_this_process();
    let half_identity = Journal::stale("hz4", HOUR_MS)
        .set("wrapper_pid", json!(me))
        .remove("process_start_ticks");
    let huge_pid = Journal::stale("hz4", HOUR_MS).set("wrapper_pid", json!(3_000_000_000u32));
    let schema = Journal::stale("hz4", HOUR_MS).set("schema_version", json!(2));
    for journal in [
        &terminal,
        &not_owning,
        &unadmitted,
        &fresh,
        &no_pid,
        &live_no_identity,
        &alive_matching,
        &half_identity,
        &huge_pid,
        &schema,
    ] {
        world.add(journal);
    }
    // Named for one wrapper, written for another.
    let other = Journal::stale("hz4", HOUR_MS);
    world.write(&format!("{}.json", new_id()), other.text());
    world.write(
        &format!("{}.json", new_id()),
        "{\"schema_version\": 1, \"identity\"",
    );
    world.write(&format!("{}.json", new_id()), "[".repeat(100_000));
    let deep_recipe = Journal::stale("hz4", HOUR_MS);
    let text = deep_recipe.text().replacen(
        "\"recovery\": {",
        &format!(
            "\"recovery\": {}{}, \"x\": {{",
            "[".repeat(100_000),
            "]".repeat(100_000)
        ),
        1,
    );
    world.write(&deep_recipe.file_name(), text);
    // Large garbage is read (and refused) as rch would; past the limit a
    // file is not read at all (a sparse one: nothing is written).
    world.write(&format!("{}.json", new_id()), vec![b'x'; 5 * 1024 * 1024]);
    std::fs::File::create(world.leases().join(format!("{}.json", new_id())))
        .and_then(|file| file.set_len(64 * 1024 * 1024 + 1))
        .expect("sparse file");
    world.write("not-a-wrapper.json", oldest.text());
    world.write(
        &format!("{}.json", new_id().to_uppercase().replace("RCHW", "rchw")),
        newer.text(),
    );
    // Entries that are not journals: not counted.
    world.write(&format!("{}.recovery.lock", oldest.id), "");
    world.write(&format!("{}.recover", oldest.id), "{}");
    world.write(&format!(".{}.json.4242.17.tmp", oldest.id), oldest.text());
    std::fs::create_dir(world.leases().join("retrieval")).expect("mkdir");

    let (code, document) = json_within(&world, &["--dry-run"], Duration::from_secs(30));
    assert_eq!(code, 0, "{document}");
    assert_eq!(
        outcomes(&document),
        [
            (oldest.id.clone(), "would_recover".to_owned()),
            (handoff.id.clone(), "would_recover".to_owned()),
            (reused.id.clone(), "would_recover".to_owned()),
            (newer.id.clone(), "would_recover".to_owned()),
        ]
    );
    assert_eq!(
        document["skipped"],
        json!({"bad_name": 2, "unreadable": 1, "malformed": 6, "terminal": 1, "not_owning": 1,
               "not_admitted": 1, "heartbeat_fresh": 1, "no_pid": 1, "owner_alive": 1,
               "owner_unverified": 3})
    );
    // 4 candidates, 10 judged journals, 5 unparsable ones, one too large,
    // 2 bad names.
    assert_eq!(document["scanned"], 4 + 10 + 5 + 1 + 2);
    assert_eq!(document["candidates"], 4);
    assert_eq!(document["would_recover"], 4);
    assert_eq!(document["attempted"], 0);
    assert_eq!(document["dry_run"], true);
    assert_eq!(document["exit_code"], 0);
    let first = &document["leases"][0];
    assert_eq!(first["worker_id"], "hz4");
    assert_eq!(first["build_id"], 30052631078502447u64);
    assert!(first["heartbeat_unix_ms"].is_u64());
}

#[test]
fn links_fifos_sockets_and_folders_are_not_regular_and_never_block() {
    let world = World::new();
    let real = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&real);
    let outside = world.path("outside.json");
    std::fs::write(&outside, Journal::stale("w2", 2 * HOUR_MS).text()).expect("write");
    symlink(&outside, world.leases().join(format!("{}.json", new_id()))).expect("symlink");
    symlink(
        world.leases().join(real.file_name()),
        world.leases().join(format!("{}.json", new_id())),
    )
    .expect("symlink");
    mkfifo(&world.leases().join(format!("{}.json", new_id())));
    let _socket =
        std::os::unix::net::UnixListener::bind(world.leases().join(format!("{}.json", new_id())))
            .expect("socket");
    std::fs::create_dir(world.leases().join("x.json")).expect("mkdir");

    let (code, document) = json_within(&world, &["--dry-run", "-v"], Duration::from_secs(30));
    assert_eq!(code, 0);
    assert_eq!(document["skipped"], json!({"not_regular": 5}));
    assert_eq!(
        outcomes(&document),
        [(real.id.clone(), "would_recover".to_owned())]
    );
    // -v lists skipped journals after the candidates, in file-name order.
    let skipped: Vec<&serde_json::Value> = document["leases"]
        .as_array()
        .expect("array")
        .iter()
        .filter(|lease| lease["outcome"] == "skipped")
        .collect();
    let files: Vec<&str> = skipped.iter().filter_map(|l| l["file"].as_str()).collect();
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted);
    assert_eq!(files.last(), Some(&"x.json"));
    assert!(skipped.iter().all(|l| l["reason"] == "not_regular"));
    assert!(
        skipped[0]["wrapper_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("rchw-"))
    );
    assert!(skipped.last().and_then(|l| l.get("wrapper_id")).is_none());
}

#[test]
fn a_non_utf8_name_is_a_bad_name() {
    use std::os::unix::ffi::OsStrExt;
    let world = World::new();
    let name = std::ffi::OsStr::from_bytes(b"rchw-\xff\xfe.json");
    std::fs::write(
        world.leases().join(name),
        Journal::stale("hz4", HOUR_MS).text(),
    )
    .expect("write");
    let (code, document) = world.json(&["--dry-run", "-v"]);
    assert_eq!(code, 0);
    assert_eq!(document["skipped"], json!({"bad_name": 1}));
    assert_eq!(document["leases"][0]["file"], "rchw-\u{fffd}\u{fffd}.json");
}

#[test]
fn journals_of_another_user_are_never_candidates() {
    if !is_root() {
        eprintln!("skipped: chown to another user needs root");
        return;
    }
    let world = World::new();
    let foreign = Journal::stale("hz4", 2 * HOUR_MS);
    let path = world.add(&foreign);
    std::os::unix::fs::chown(&path, Some(65534), Some(65534)).expect("chown");
    let (code, document) = world.json(&["--dry-run"]);
    assert_eq!(code, 0);
    assert_eq!(document["skipped"], json!({"foreign_owner": 1}));
    assert_eq!(document["candidates"], 0);
}

#[test]
fn a_dry_run_writes_nothing_and_needs_no_rch() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let before = files_in(&world.leases());
    let output = world.run(&[
        "--dry-run",
        "--rch",
        "/nonexistent/rch",
        "--metrics-file",
        "/nonexistent/m.prom",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("would recover"),
        "{}",
        stdout(&output)
    );
    assert_eq!(files_in(&world.leases()), before);
    assert!(
        !world.state_file().parent().expect("parent").exists(),
        "no state folder"
    );
}

#[test]
fn backoff_in_the_state_file_sets_candidates_aside_and_check_reports_due_work() {
    let world = World::new();
    let a = Journal::stale("a", 5 * HOUR_MS);
    let b = Journal::stale("b", 4 * HOUR_MS);
    let c = Journal::stale("c", 3 * HOUR_MS);
    for journal in [&a, &b, &c] {
        world.add(journal);
    }
    let now = now_ms();
    std::fs::create_dir_all(world.state_file().parent().expect("parent")).expect("mkdir");
    let state = json!({"version": 1, "leases": {
        a.id.clone(): {"failures": 2, "next_attempt_unix_ms": now + HOUR_MS, "worker_id": "a", "build_id": 1},
        b.id.clone(): {"failures": 1, "next_attempt_unix_ms": now - 1000, "worker_id": "b", "build_id": 1},
    }});
    std::fs::write(world.state_file(), state.to_string()).expect("state");
    let (code, document) = world.json(&["--dry-run", "--max-recoveries", "1"]);
    assert_eq!(code, 0);
    assert_eq!(
        outcomes(&document),
        [
            (a.id.clone(), "backing_off".to_owned()),
            (b.id.clone(), "would_recover".to_owned()),
            (c.id.clone(), "deferred".to_owned()),
        ]
    );
    assert_eq!(document["leases"][0]["failures"], 2);
    assert_eq!(document["backing_off"], 1);
    assert_eq!(document["deferred"], 1);
    let (code, check) = world.json(&["--check", "--max-recoveries", "1"]);
    assert_eq!(code, 1, "due work makes --check exit 1");
    assert_eq!(check["exit_code"], 1);
    assert_eq!(check["dry_run"], true);
    // With only the backing-off one left, nothing is due now.
    std::fs::remove_file(world.leases().join(b.file_name())).expect("rm");
    std::fs::remove_file(world.leases().join(c.file_name())).expect("rm");
    assert_eq!(world.run(&["--check"]).status.code(), Some(0));
}

#[test]
fn a_corrupt_state_file_is_only_warned_about_in_a_dry_run() {
    let world = World::new();
    world.add(&Journal::stale("a", 5 * HOUR_MS));
    std::fs::create_dir_all(world.state_file().parent().expect("parent")).expect("mkdir");
    std::fs::write(world.state_file(), "{not json").expect("write");
    let output = world.run(&["--dry-run"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("does not parse"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read(world.state_file()).expect("kept"),
        b"{not json"
    );
    std::fs::write(world.state_file(), r#"{"version": 9, "leases": {}}"#).expect("write");
    let output = world.run(&["--dry-run"]);
    assert_eq!(output.status.code(), Some(78), "{}", stderr(&output));
    assert!(stderr(&output).contains("version 9"), "{}", stderr(&output));
}

#[test]
fn lease_directory_problems_have_their_exit_codes() {
    let world = World::new();
    let missing = world.path("absent");
    let output = World::bare_command()
        .args(["--dry-run", "--lease-dir", missing.to_str().expect("utf8")])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("does not exist"),
        "{}",
        stderr(&output)
    );

    let file = world.path("file");
    std::fs::write(&file, "").expect("write");
    let output = World::bare_command()
        .args(["--dry-run", "--lease-dir", file.to_str().expect("utf8")])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(78));
    assert!(
        stderr(&output).contains("not a directory"),
        "{}",
        stderr(&output)
    );

    if is_root() {
        eprintln!("skipped the 74 case: root reads any directory");
        return;
    }
    let locked = world.path("locked");
    std::fs::create_dir(&locked).expect("mkdir");
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000))
        .expect("chmod");
    let output = World::bare_command()
        .args(["--dry-run", "--lease-dir", locked.to_str().expect("utf8")])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(74), "{}", stderr(&output));
}

#[test]
fn quiet_prints_nothing_and_verbose_lists_every_journal() {
    let world = World::new();
    let candidate = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&candidate);
    world.add(&Journal::stale("hz4", 2 * HOUR_MS).completed(0));
    let quiet = world.run(&["--dry-run", "-q"]);
    assert_eq!(quiet.status.code(), Some(0));
    assert_eq!(stdout(&quiet), "");
    assert_eq!(stderr(&quiet), "");
    let verbose = stdout(&world.run(&["--dry-run", "-v"]));
    assert!(verbose.contains(&candidate.id), "{verbose}");
    assert!(verbose.contains("terminal"), "{verbose}");
    assert!(verbose.contains("1 would recover"), "{verbose}");
}

#[test]
fn defaults_come_from_rchs_environment_and_empty_variables_count_as_unset() {
    let world = World::new();
    let home = world.path("state-home");
    std::fs::create_dir_all(home.join("job-leases")).expect("mkdir");
    std::fs::write(
        home.join("job-leases")
            .join(Journal::stale("hz4", 2 * HOUR_MS).file_name()),
        Journal::stale("hz4", 2 * HOUR_MS).text(),
    )
    .expect("write");
    let output = std::process::Command::new(BIN)
        .args(["--dry-run", "--json"])
        .env_clear()
        .env("RCH_STATE_HOME", &home)
        .env("RCH_SWEEP_LEASE_DIR", "")
        .env("XDG_STATE_HOME", "/nonexistent")
        .output()
        .expect("run");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(
        document["lease_dir"],
        home.join("job-leases").to_str().expect("utf8")
    );
    assert_eq!(
        document["state_file"],
        home.join("rch-sweep/backoff.json").to_str().expect("utf8")
    );
    assert_eq!(document["scanned"], 1);
}

#[test]
fn help_shows_every_environment_variable_and_default() {
    let help = stdout(&World::new().run(&["--help"]));
    for needle in [
        "RCH_SWEEP_LEASE_DIR",
        "RCH_SWEEP_STATE_FILE",
        "RCH_SWEEP_RCH",
        "RCH_SOCKET_PATH",
        "RCH_SWEEP_METRICS_FILE",
        "[default: 4]",
        "[default: 300]",
        "[default: 30]",
        "[default: 900]",
        "[default: 600]",
        "[default: 21600]",
        "$RCH_STATE_HOME/job-leases",
        "status",
        "forget",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}:\n{help}");
    }
    let bad = World::new().run(&["--max-recoveries", "0"]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = World::new().run(&["--metrics-file", "/tmp/x.txt", "--dry-run"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

//! A completion without a daemon record (issue 33, SPEC *One recovery*
//! step 6), on the real binary with `examples/fake-rch` and
//! `examples/fake-rchd`: rch 2.1.34 finishes a lease whose build its daemon
//! no longer knows, once the lease is 24 hours old, with
//! `recovery.daemon_record_absent: true` and no `daemon_exit_code`; rchd
//! 2.1.34 accepts exactly that, and so must the sweep. A younger lease the
//! daemon does not know stays unacknowledged, and that is a failure as
//! before.

mod common;

use common::*;
use serde_json::{Value, json};
use std::path::Path;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// A real run over `world` with `examples/fake-rch` and the daemon at
/// `socket`: exit code and summary.
fn sweep(world: &World, socket: &Path) -> (i32, Value, String) {
    let home = world.path("home");
    std::fs::create_dir_all(&home).expect("home");
    let output = world
        .command(&["--json", "--rch", FAKE_RCH, "--socket", utf8(socket)])
        .current_dir(world.dir.path())
        .env("HOME", &home)
        .output()
        .expect("run rch-sweep");
    (
        output.status.code().unwrap_or(-1),
        one_document(&output),
        stderr(&output),
    )
}

fn journal(world: &World, id: &str) -> Value {
    let path = world.leases().join(format!("{id}.json"));
    serde_json::from_slice(&std::fs::read(path).expect("journal")).expect("journal parses")
}

#[test]
fn a_lease_past_24_hours_whose_build_the_daemon_forgot_is_recovered() {
    let world = World::new();
    let daemon = FakeDaemon::forgetting(&world.path("rch.sock"));
    let old = Journal::stale("w1", 25 * HOUR_MS);
    world.add(&old);

    let (code, document, stderr) = sweep(&world, &daemon.socket);
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(outcomes(&document), [(old.id.clone(), "recovered".into())]);
    assert_eq!(document["failed"], 0, "{document}");
    // What rch 2.1.34 leaves: finished, the absence marked, no receipt.
    let after = journal(&world, &old.id);
    assert_eq!(after["terminal_acknowledged"], true, "{after}");
    assert_eq!(after["state"], "finished");
    assert_eq!(after["recovery"]["daemon_record_absent"], true, "{after}");
    assert!(
        after["recovery"].get("daemon_exit_code").is_none(),
        "{after}"
    );
    assert_eq!(after["exit_code"], after["recovery"]["returned"]);
    // Nothing charged, nothing left to back off.
    assert_eq!(world.state()["leases"], json!({}));
    // The next run finds it terminal.
    let (code, document, _) = sweep(&world, &daemon.socket);
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["recovered"], 0, "{document}");
}

/// rch 2.1.34 says it waits until the lease is 24 hours old: not a failure
/// of the lease (SPEC "rch's answers are read, not counted"), but a wait
/// until its heartbeat + 24 h + 1 min.
#[test]
fn a_younger_lease_the_daemon_does_not_know_stays_unacknowledged_and_waits_uncharged() {
    let world = World::new();
    let daemon = FakeDaemon::forgetting(&world.path("rch.sock"));
    let young = Journal::stale("w1", 2 * HOUR_MS);
    world.add(&young);

    let (code, document, stderr) = sweep(&world, &daemon.socket);
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(outcomes(&document), [(young.id.clone(), "deferred".into())]);
    let error = document["leases"][0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("acknowledgement waits until the lease is 24h old"),
        "{error}"
    );
    // Delivered and retired, but not acknowledged: a settled handoff, and
    // no daemon_record_absent (rch writes it only past 24 hours).
    let after = journal(&world, &young.id);
    assert_eq!(after["terminal_acknowledged"], false, "{after}");
    assert_eq!(after["recovery"]["retired"], true, "{after}");
    assert!(after["recovery"].get("daemon_record_absent").is_none());
    let entry = &world.state()["leases"][&young.id];
    assert_eq!(entry["failures"], 0, "{entry}");
    assert_eq!(entry["hold"], "daemon_record_wait", "{entry}");
    let heartbeat = after["heartbeat_unix_ms"].as_u64().expect("heartbeat");
    assert_eq!(
        entry["next_attempt_unix_ms"],
        heartbeat + 24 * HOUR_MS + 60_000,
        "{entry}"
    );
}

#[test]
fn a_build_the_daemon_knows_still_needs_its_receipt() {
    // The same fake with a daemon that knows the build: the completion
    // carries daemon_exit_code, as before.
    let world = World::new();
    let daemon = FakeDaemon::start(&world.path("rch.sock"), Reply::Healthy);
    let old = Journal::stale("w1", 25 * HOUR_MS);
    world.add(&old);
    let (code, document, stderr) = sweep(&world, &daemon.socket);
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(document["recovered"], 1, "{document}");
    let after = journal(&world, &old.id);
    assert_eq!(after["recovery"]["daemon_exit_code"], 0, "{after}");
    assert!(after["recovery"].get("daemon_record_absent").is_none());
}

/// A completion that claims the absence with anything but JSON `true` is
/// not rch's and is refused, as rchd refuses it.
#[test]
fn only_a_json_true_marks_the_absence() {
    let world = World::new();
    let daemon = FakeDaemon::forgetting(&world.path("rch.sock"));
    let old = Journal::stale("w1", 25 * HOUR_MS);
    world.add(&old);
    // An rch that writes the mark as a string: the lease is completed but
    // the completion is not rch's.
    let done = old.completed(0).set_recipe("daemon_exit_code", Value::Null);
    let mut text = done.text();
    text = text.replace(
        "\"daemon_exit_code\": null",
        "\"daemon_record_absent\": \"true\"",
    );
    let staged = world.path("staged.json");
    std::fs::write(&staged, text).expect("staged");
    let rch = world.fake_rch(
        "rch",
        &format!("cp '{}' \"$leases/$3.json\"", staged.display()),
    );
    let home = world.path("home");
    std::fs::create_dir_all(&home).expect("home");
    let output = world
        .command(&[
            "--json",
            "--rch",
            utf8(&rch),
            "--socket",
            utf8(&daemon.socket),
        ])
        .env("HOME", &home)
        .output()
        .expect("run");
    let document = one_document(&output);
    assert_eq!(output.status.code(), Some(1), "{document}");
    assert_eq!(
        document["leases"][0]["error"],
        "recovery command exited without durable daemon/delivery acknowledgement"
    );
}

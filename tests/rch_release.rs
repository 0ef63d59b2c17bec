//! The rch that runs, whichever 2.1.x it is (issue 40), on the real
//! binary: a run asks `rch --version` and checks a completion by that
//! release (rch 2.1.0–2.1.16 write no daemon mark); doctor names the
//! release and warns of its known limits; `RCH_DAEMON_SOCKET` is rch's
//! alias of `RCH_SOCKET_PATH`.

mod common;

use common::doctor_rows::row;
use common::isolated::{run_json, sweep};
use common::*;
use serde_json::{Value, json};
use std::path::Path;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// A fake `rch` whose `--version` prints `version` and whose `jobs
/// recover` leaves the journal as rch 2.1.16 does: delivered, finished,
/// terminal, and no daemon mark (no `daemon_exit_code`, no
/// `daemon_record_absent`).
fn unmarked_rch(world: &World, version: &str) -> (std::path::PathBuf, String) {
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    world.add(&journal);
    let id = journal.id.clone();
    let done = world.path("done");
    std::fs::create_dir_all(&done).expect("mkdir done");
    let completed = journal.completed(0).remove_recipe("daemon_exit_code");
    std::fs::write(done.join(completed.file_name()), completed.text()).expect("write");
    let version = format!("echo '{version}'");
    let body = format!("cp \"{}/$3.json\" \"$leases/$3.json\"", done.display());
    let rch = world.fake_rch_with(
        "rch",
        &FakeRch {
            version: Some(&version),
            recover: &body,
            ..FakeRch::default()
        },
    );
    (rch, id)
}

#[test]
fn rch_2_1_16s_completion_without_a_daemon_mark_is_recovered() {
    let world = World::new();
    let (rch, id) = unmarked_rch(&world, "rch 2.1.16");
    let (code, document, stderr) = run_json(sweep(&world, &["--rch", utf8(&rch)]));
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(outcomes(&document), [(id.clone(), "recovered".into())]);
    assert_eq!(
        document["rch"],
        json!({"path": utf8(&rch), "version": "rch 2.1.16"}),
        "{document}"
    );
    assert!(
        world.state()["leases"].get(&id).is_none(),
        "nothing charged"
    );
}

#[test]
fn rch_2_1_24s_completion_without_a_daemon_mark_is_a_failure() {
    let world = World::new();
    let (rch, id) = unmarked_rch(&world, "rch 2.1.24");
    let (code, document, stderr) = run_json(sweep(&world, &["--rch", utf8(&rch)]));
    assert_eq!(code, 1, "{document}\n{stderr}");
    assert_eq!(outcomes(&document), [(id, "failed".into())]);
    assert_eq!(document["rch"]["version"], "rch 2.1.24", "{document}");
}

#[test]
fn an_unreadable_version_keeps_the_daemon_mark_required() {
    let world = World::new();
    let (rch, id) = unmarked_rch(&world, "rch version unknown");
    let (code, document, stderr) = run_json(sweep(&world, &["--rch", utf8(&rch)]));
    assert_eq!(code, 1, "{document}\n{stderr}");
    assert_eq!(outcomes(&document), [(id, "failed".into())]);
    assert_eq!(document["rch"]["version"], "rch version unknown");
}

#[test]
fn the_human_summary_says_the_release() {
    let world = World::new();
    let (rch, _) = unmarked_rch(&world, "rch 2.1.16");
    let output = sweep(&world, &["--rch", utf8(&rch)]).output().expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains(&format!("rch: {} says \"rch 2.1.16\"", rch.display())),
        "{text}"
    );
}

/// doctor's `rch` row with a fake `rch` whose `--version` prints `version`.
fn doctor_rch_row(version: &str) -> Value {
    let world = World::new();
    let version = format!("echo '{version}'");
    let rch = world.fake_rch_with(
        "rch",
        &FakeRch {
            version: Some(&version),
            ..FakeRch::default()
        },
    );
    let mut command = sweep(&world, &["doctor", "--json", "--rch", utf8(&rch)]);
    let output = command.output().expect("doctor");
    let document: Value = serde_json::from_slice(&output.stdout).expect("json");
    row(&document, "rch").clone()
}

#[test]
fn doctor_names_the_release_and_warns_of_its_known_limits() {
    let old = doctor_rch_row("rch 2.1.16");
    assert_eq!(old["status"], "warn", "{old}");
    let finding = old["finding"].as_str().expect("finding");
    assert!(finding.contains("(rch 2.1.16)"), "{old}");
    assert!(finding.contains("no per-lease recovery lock"), "{old}");
    let fix = old["fix"].as_str().expect("fix");
    assert!(
        fix.contains("rch --version 2.1.34") && fix.contains("rchd"),
        "{old}"
    );

    let middle = doctor_rch_row("rch 2.1.24");
    assert_eq!(middle["status"], "warn", "{middle}");
    let finding = middle["finding"].as_str().expect("finding");
    assert!(finding.contains("(rch 2.1.24)"), "{middle}");
    assert!(finding.contains("never completes"), "{middle}");
    assert!(
        middle["fix"].as_str().expect("fix").contains("2.1.34"),
        "{middle}"
    );

    let current = doctor_rch_row("rch 2.1.34");
    assert_eq!(current["status"], "ok", "{current}");
    assert!(
        current["finding"]
            .as_str()
            .expect("finding")
            .contains("(rch 2.1.34)"),
        "{current}"
    );
}

/// A run whose fake `rch` knows its daemon, with `vars` set: the summary.
fn run_with(world: &World, rch: &Path, vars: &[(&str, &Path)]) -> (i32, Value, String) {
    let mut command = sweep(world, &["--rch", utf8(rch)]);
    command.env("RCH_SWEEP_TEST_DAEMON_WAIT_MS", "500");
    for (name, value) in vars {
        command.env(name, value);
    }
    run_json(command)
}

#[test]
fn rch_daemon_socket_names_the_socket_unless_rch_socket_path_does() {
    let world = World::new();
    let daemon = FakeDaemon::start(&world.path("alias.sock"), Reply::Healthy);
    let rch = world.completing_daemon_rch();
    world.will_complete(Journal::stale("w1", 2 * HOUR_MS));
    let (code, document, stderr) = run_with(&world, &rch, &[("RCH_DAEMON_SOCKET", &daemon.socket)]);
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(document["recovered"], 1, "{document}");
    assert_eq!(
        document["daemon"],
        json!({"socket": utf8(&daemon.socket), "chosen_by": "environment", "up": true}),
        "{document}"
    );

    // RCH_SOCKET_PATH wins: nothing answers there, so nothing starts (75).
    world.will_complete(Journal::stale("w2", 2 * HOUR_MS));
    let nowhere = world.path("nowhere.sock");
    let (code, document, stderr) = run_with(
        &world,
        &rch,
        &[
            ("RCH_DAEMON_SOCKET", &daemon.socket),
            ("RCH_SOCKET_PATH", &nowhere),
        ],
    );
    assert_eq!(code, 75, "{document}\n{stderr}");
    assert_eq!(document["daemon"]["socket"], utf8(&nowhere), "{document}");
    assert_eq!(document["daemon"]["up"], false, "{document}");
    assert_eq!(document["attempted"], 0, "{document}");
}

#[test]
fn a_tilde_in_rch_daemon_socket_is_refused() {
    let world = World::new();
    let rch = world.completing_rch();
    world.will_complete(Journal::stale("w1", 2 * HOUR_MS));
    let (code, document, _) = run_with(
        &world,
        &rch,
        &[("RCH_DAEMON_SOCKET", Path::new("~/rch.sock"))],
    );
    assert_eq!(code, 78, "{document}");
    assert!(
        document["error"]
            .as_str()
            .is_some_and(|error| error.contains("RCH_DAEMON_SOCKET")),
        "{document}"
    );
}

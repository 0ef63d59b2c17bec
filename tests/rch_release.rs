//! The rch that runs, whichever 2.1.x it is (issues 40 and 46), on the
//! real binary: a run decides by rch's own release, the `"version"` of
//! `rch --capabilities` (`rch --version` prints rch-common's: an rch 2.1.16
//! installed without `--locked` says 2.1.34), falling back to `--version`'s
//! number, and checks a completion by that release (rch 2.1.0–2.1.16 write
//! no daemon mark); doctor names the release, warns of its known limits,
//! of the two answers disagreeing or neither being readable, and of an
//! rchd 2.1.8–2.1.16; `RCH_DAEMON_SOCKET` is rch's alias of
//! `RCH_SOCKET_PATH`, and an empty `RCH_SOCKET_PATH` is set, as rch reads
//! it.

mod common;

use common::doctor_rows::row;
use common::isolated::{run_json, sweep};
use common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// What a fake `rch` answers `--version` and `--capabilities` with, as
/// shell.
struct Says<'a> {
    version: &'a str,
    capabilities: &'a str,
}

impl Says<'_> {
    /// An rch installed `--locked`, whose rch-common is its own release:
    /// both answers name `release`.
    fn both(release: &str) -> (String, String) {
        (format!("echo 'rch {release}'"), capabilities_says(release))
    }
}

/// A fake `rch` that answers as `says` and whose `jobs recover` leaves the
/// journal as rch 2.1.16 does: delivered, finished, terminal, and no daemon
/// mark (no `daemon_exit_code`, no `daemon_record_absent`).
fn unmarked_rch(world: &World, says: &Says<'_>) -> (std::path::PathBuf, String) {
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    world.add(&journal);
    let id = journal.id.clone();
    let done = world.path("done");
    std::fs::create_dir_all(&done).expect("mkdir done");
    let completed = journal.completed(0).remove_recipe("daemon_exit_code");
    std::fs::write(done.join(completed.file_name()), completed.text()).expect("write");
    let body = format!("cp \"{}/$3.json\" \"$leases/$3.json\"", done.display());
    let rch = world.fake_rch_with(
        "rch",
        &FakeRch {
            version: Some(says.version),
            capabilities: Some(says.capabilities),
            recover: &body,
            ..FakeRch::default()
        },
    );
    (rch, id)
}

/// [`unmarked_rch`] of an rch whose two answers both name `release`.
fn unmarked_rch_of(world: &World, release: &str) -> (std::path::PathBuf, String) {
    let (version, capabilities) = Says::both(release);
    unmarked_rch(
        world,
        &Says {
            version: &version,
            capabilities: &capabilities,
        },
    )
}

/// `--capabilities` of an rch that has no such flag: clap's usage error.
const NO_CAPABILITIES: &str =
    "echo \"error: unexpected argument '--capabilities' found\" >&2\nexit 2";

#[test]
fn rch_2_1_16s_completion_without_a_daemon_mark_is_recovered() {
    let world = World::new();
    let (rch, id) = unmarked_rch_of(&world, "2.1.16");
    let (code, document, stderr) = run_json(sweep(&world, &["--rch", utf8(&rch)]));
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(outcomes(&document), [(id.clone(), "recovered".into())]);
    assert_eq!(
        document["rch"],
        json!({"path": utf8(&rch), "version": "rch 2.1.16", "release": "2.1.16"}),
        "{document}"
    );
    assert!(
        world.state()["leases"].get(&id).is_none(),
        "nothing charged"
    );
}

#[test]
fn an_rch_2_1_16_whose_version_says_2_1_34_is_decided_by_its_capabilities() {
    // rch 2.1.16 installed without --locked: `--version` prints the newest
    // rch-common's version.
    let world = World::new();
    let capabilities = capabilities_says("2.1.16");
    let (rch, id) = unmarked_rch(
        &world,
        &Says {
            version: "echo 'rch 2.1.34'",
            capabilities: &capabilities,
        },
    );
    let (code, document, stderr) = run_json(sweep(&world, &["--rch", utf8(&rch)]));
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(outcomes(&document), [(id.clone(), "recovered".into())]);
    assert_eq!(
        document["rch"],
        json!({"path": utf8(&rch), "version": "rch 2.1.34", "release": "2.1.16"}),
        "{document}"
    );
    assert!(
        world.state()["leases"].get(&id).is_none(),
        "nothing charged"
    );
    // The human summary says both.
    let world = World::new();
    let (rch, _) = unmarked_rch(
        &world,
        &Says {
            version: "echo 'rch 2.1.34'",
            capabilities: &capabilities,
        },
    );
    let output = sweep(&world, &["--rch", utf8(&rch)]).output().expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", common::stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains(&format!(
            "rch: {} says \"rch 2.1.34\", release 2.1.16 by --capabilities: a completion without the daemon's mark counts",
            rch.display()
        )),
        "{text}"
    );
}

#[test]
fn rch_2_1_24s_completion_without_a_daemon_mark_is_a_failure() {
    let world = World::new();
    let (rch, id) = unmarked_rch_of(&world, "2.1.24");
    let (code, document, stderr) = run_json(sweep(&world, &["--rch", utf8(&rch)]));
    assert_eq!(code, 1, "{document}\n{stderr}");
    assert_eq!(outcomes(&document), [(id, "failed".into())]);
    assert_eq!(document["rch"]["version"], "rch 2.1.24", "{document}");
    assert_eq!(document["rch"]["release"], "2.1.24", "{document}");
}

#[test]
fn without_capabilities_the_release_is_read_from_version() {
    let world = World::new();
    let (rch, id) = unmarked_rch(
        &world,
        &Says {
            version: "echo 'rch 2.1.16'",
            capabilities: NO_CAPABILITIES,
        },
    );
    let (code, document, stderr) = run_json(sweep(&world, &["--rch", utf8(&rch)]));
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(outcomes(&document), [(id, "recovered".into())]);
    assert_eq!(document["rch"]["release"], "2.1.16", "{document}");
    assert!(
        stderr.contains(
            "--capabilities` failed: exit status: 2: rch's own release is not known from it"
        ),
        "{stderr}"
    );
}

#[test]
fn when_neither_answer_can_be_read_the_daemon_mark_stays_required() {
    let world = World::new();
    let (rch, id) = unmarked_rch(
        &world,
        &Says {
            version: "echo 'rch version unknown'",
            capabilities: NO_CAPABILITIES,
        },
    );
    let (code, document, stderr) = run_json(sweep(&world, &["--rch", utf8(&rch)]));
    assert_eq!(code, 1, "{document}\n{stderr}");
    assert_eq!(outcomes(&document), [(id, "failed".into())]);
    assert_eq!(document["rch"]["version"], "rch version unknown");
    assert_eq!(
        document["rch"].get("release"),
        Some(&Value::Null),
        "{document}"
    );
}

#[test]
fn a_hung_capabilities_is_not_read_and_its_group_is_killed() {
    // It prints 2.1.34's object, then never exits: what it printed is not
    // its answer, so the release is --version's 2.1.16.
    let world = World::new();
    let pids = world.path("pids");
    let hang = format!(
        "{}\nsleep 60 &\necho \"$$ $!\" > '{}'\nwait",
        capabilities_says("2.1.34"),
        pids.display()
    );
    let (rch, id) = unmarked_rch(
        &world,
        &Says {
            version: "echo 'rch 2.1.16'",
            capabilities: &hang,
        },
    );
    let started = Instant::now();
    let (code, document, stderr) = run_json(sweep(&world, &["--rch", utf8(&rch)]));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(outcomes(&document), [(id, "recovered".into())]);
    assert_eq!(document["rch"]["release"], "2.1.16", "{document}");
    assert!(
        stderr.contains(&format!(
            "`{} --capabilities` did not answer in 10 s: rch's own release is not known from it",
            rch.display()
        )),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&pids).expect("pids");
    for pid in text
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
    {
        assert!(
            gone_within(pid, 5),
            "process {pid} of the --capabilities group survived"
        );
    }

    // doctor: the same words, never the version the hung answer printed.
    let rch_row = doctor_rch_row(&Says {
        version: "echo 'rch 2.1.16'",
        capabilities: &format!("{}\nexec sleep 60", capabilities_says("2.1.34")),
    });
    let finding = rch_row["finding"].as_str().expect("finding");
    assert_eq!(rch_row["status"], "warn", "{rch_row}");
    assert!(
        finding.contains(
            "`rch --capabilities` did not answer in 10 s: rch's own release is not known"
        ),
        "{rch_row}"
    );
    assert!(!finding.contains("2.1.34"), "{rch_row}");
}

#[test]
fn the_human_summary_says_the_release() {
    let world = World::new();
    let (rch, _) = unmarked_rch_of(&world, "2.1.16");
    let output = sweep(&world, &["--rch", utf8(&rch)]).output().expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains(&format!(
            "rch: {} says \"rch 2.1.16\": a completion",
            rch.display()
        )),
        "{text}"
    );
}

/// doctor's `rch` row with a fake `rch` that answers as `says`.
fn doctor_rch_row(says: &Says<'_>) -> Value {
    let world = World::new();
    let rch = world.fake_rch_with(
        "rch",
        &FakeRch {
            version: Some(says.version),
            capabilities: Some(says.capabilities),
            ..FakeRch::default()
        },
    );
    let mut command = sweep(&world, &["doctor", "--json", "--rch", utf8(&rch)]);
    let output = command.output().expect("doctor");
    let document: Value = serde_json::from_slice(&output.stdout).expect("json");
    row(&document, "rch").clone()
}

/// [`doctor_rch_row`] of an rch whose two answers both name `release`.
fn doctor_rch_row_of(release: &str) -> Value {
    let (version, capabilities) = Says::both(release);
    doctor_rch_row(&Says {
        version: &version,
        capabilities: &capabilities,
    })
}

#[test]
fn doctor_names_the_release_and_warns_of_its_known_limits() {
    let old = doctor_rch_row_of("2.1.16");
    assert_eq!(old["status"], "warn", "{old}");
    let finding = old["finding"].as_str().expect("finding");
    assert!(finding.contains("(rch 2.1.16)"), "{old}");
    assert!(finding.contains("no per-lease recovery lock"), "{old}");
    let fix = old["fix"].as_str().expect("fix");
    assert!(
        fix.contains("rch --version 2.1.34") && fix.contains("rchd"),
        "{old}"
    );

    let middle = doctor_rch_row_of("2.1.24");
    assert_eq!(middle["status"], "warn", "{middle}");
    let finding = middle["finding"].as_str().expect("finding");
    assert!(finding.contains("(rch 2.1.24)"), "{middle}");
    assert!(finding.contains("never completes"), "{middle}");
    assert!(
        middle["fix"].as_str().expect("fix").contains("2.1.34"),
        "{middle}"
    );

    let current = doctor_rch_row_of("2.1.34");
    assert_eq!(current["status"], "ok", "{current}");
    assert!(
        current["finding"]
            .as_str()
            .expect("finding")
            .contains("(rch 2.1.34)"),
        "{current}"
    );
}

#[test]
fn doctor_warns_when_version_and_capabilities_disagree() {
    let capabilities = capabilities_says("2.1.16");
    let unlocked = doctor_rch_row(&Says {
        version: "echo 'rch 2.1.34'",
        capabilities: &capabilities,
    });
    assert_eq!(unlocked["status"], "warn", "{unlocked}");
    let finding = unlocked["finding"].as_str().expect("finding");
    assert!(
        finding.contains("(rch 2.1.34; release 2.1.16 by --capabilities)"),
        "{unlocked}"
    );
    assert!(
        finding.contains("`rch --version` says 2.1.34 but `rch --capabilities` says 2.1.16")
            && finding.contains("installed without --locked"),
        "{unlocked}"
    );
    // The limits are the release's that runs: 2.1.16 takes no lock.
    assert!(finding.contains("no per-lease recovery lock"), "{unlocked}");
    assert!(
        unlocked["fix"]
            .as_str()
            .is_some_and(|fix| fix.contains("--locked rch --version 2.1.16")),
        "{unlocked}"
    );
}

#[test]
fn doctor_warns_when_neither_answer_says_the_release() {
    let neither = doctor_rch_row(&Says {
        version: "echo 'rch version unknown'",
        capabilities: NO_CAPABILITIES,
    });
    assert_eq!(neither["status"], "warn", "{neither}");
    let finding = neither["finding"].as_str().expect("finding");
    assert!(
        finding.contains("neither `rch --version` nor `rch --capabilities` (failed: exit status: 2) says which release runs: the completion rule is unknown"),
        "{neither}"
    );
    // And when --version fails too: still the same warning, never ok.
    let failing = doctor_rch_row(&Says {
        version: "exit 1",
        capabilities: NO_CAPABILITIES,
    });
    assert_eq!(failing["status"], "warn", "{failing}");
    assert!(
        failing["finding"]
            .as_str()
            .is_some_and(|f| f.contains("the completion rule is unknown")),
        "{failing}"
    );
}

/// doctor's `daemon` row, the socket named with `--socket`.
fn doctor_daemon_row(world: &World, socket: &Path, vars: &[(&str, &str)]) -> (i32, Value) {
    let rch = world.completing_daemon_rch();
    let mut command = sweep(world, &["doctor", "--json", "--rch", utf8(&rch)]);
    if !socket.as_os_str().is_empty() {
        command.args(["--socket", utf8(socket)]);
    }
    for (name, value) in vars {
        command.env(name, value);
    }
    let output = command.output().expect("doctor");
    let document: Value = serde_json::from_slice(&output.stdout).expect("json");
    (
        output.status.code().unwrap_or(-1),
        row(&document, "daemon").clone(),
    )
}

#[test]
fn doctor_warns_of_an_rchd_2_1_8_to_2_1_16_whatever_rchs_release() {
    let world = World::new();
    let old = FakeDaemon::of_release(&world.path("old.sock"), "2.1.12");
    // rch is 2.1.34 (the fake's default): the warning is rchd's own.
    let (code, daemon) = doctor_daemon_row(&world, &old.socket, &[]);
    assert_eq!(
        (code, daemon["status"].as_str()),
        (0, Some("warn")),
        "{daemon}"
    );
    let finding = daemon["finding"].as_str().expect("finding");
    assert!(finding.contains("(rchd 2.1.12)"), "{daemon}");
    assert!(
        finding.contains(
            "rchd 2.1.12 recovers dead leases itself every 5 minutes, with no recovery lock"
        ),
        "{daemon}"
    );
    assert!(
        daemon["fix"]
            .as_str()
            .is_some_and(|fix| fix.contains("rchd --version 2.1.34")),
        "{daemon}"
    );

    let current = FakeDaemon::of_release(&world.path("new.sock"), "2.1.34");
    let (code, daemon) = doctor_daemon_row(&world, &current.socket, &[]);
    assert_eq!(
        (code, daemon["status"].as_str()),
        (0, Some("ok")),
        "{daemon}"
    );
    assert!(
        daemon["finding"]
            .as_str()
            .is_some_and(|f| f.ends_with("(rchd 2.1.34)")),
        "{daemon}"
    );
}

#[test]
fn an_empty_rch_socket_path_is_set_as_rch_reads_it() {
    // rch takes an empty RCH_SOCKET_PATH as its socket, finds no daemon
    // there, and does not read its alias: neither does rch-sweep, though a
    // daemon answers at the alias.
    let world = World::new();
    let daemon = FakeDaemon::start(&world.path("alias.sock"), Reply::Healthy);
    let alias = utf8(&daemon.socket);
    let (code, row) = doctor_daemon_row(
        &world,
        Path::new(""),
        &[("RCH_SOCKET_PATH", ""), ("RCH_DAEMON_SOCKET", alias)],
    );
    assert_eq!((code, row["status"].as_str()), (1, Some("fail")), "{row}");
    let finding = row["finding"].as_str().expect("finding");
    assert!(
        finding.contains("RCH_SOCKET_PATH is set but empty: rch takes it as its socket, finds none there, and does not read its alias RCH_DAEMON_SOCKET"),
        "{row}"
    );
    assert!(
        row["fix"]
            .as_str()
            .is_some_and(|fix| fix.starts_with("Unset RCH_SOCKET_PATH")),
        "{row}"
    );

    // A run: nothing starts, nothing is charged, and it will not mend
    // itself (78).
    let rch = world.completing_daemon_rch();
    let id = world.will_complete(Journal::stale("w1", 2 * HOUR_MS));
    let mut command = sweep(&world, &["--rch", utf8(&rch)]);
    command
        .env("RCH_SOCKET_PATH", "")
        .env("RCH_DAEMON_SOCKET", alias);
    let (code, document, stderr) = run_json(command);
    assert_eq!(code, 78, "{document}\n{stderr}");
    assert_eq!(document["attempted"], 0, "{document}");
    assert_eq!(
        (
            &document["daemon"]["socket"],
            &document["daemon"]["chosen_by"],
            &document["daemon"]["up"]
        ),
        (&json!(""), &json!("environment"), &json!(false)),
        "{document}"
    );
    assert_eq!(outcomes(&document), [(id.clone(), "deferred".into())]);
    assert!(
        world.state()["leases"].get(&id).is_none(),
        "nothing charged"
    );
    assert!(
        stderr.contains("RCH_SOCKET_PATH is set but empty"),
        "{stderr}"
    );
    assert_eq!(daemon.requests(), 0, "the alias's daemon was asked");
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

//! No lease waits in silence (issue 47): a lease a run holds without a
//! start that reached rch's verdict (deferred for any reason, stuck,
//! waiting for rch's 24 hours) is told of wherever a charged one is: the
//! text summary's line, `status`, `explain`, doctor's `journals`, the
//! metrics (`rch_sweep_lease_held_seconds`, counted from the state file so
//! that it survives restarts) and, under `--quiet`, one line a day. Also
//! the metrics fixes of the same issue: `rch_sweep_backing_off` counts the
//! leases the run charged, a 74/78 run that learned nothing keeps the
//! counts the state holds, and a second `.prom` file for the same lease
//! directory is warned of. A run that holds no lease says and writes what
//! it did before.
//!
//! The real binary against fake `rch` scripts that find the lease
//! directory only as rch does; "seven hours" is the state file's held
//! time moved back, as a run seven hours earlier would have left it.

mod common;

use common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;

const HOUR_S: u64 = 3600;

/// rch's answer when another process holds the lease's recovery lock.
const BUSY: &str = "echo 'Error: cannot acquire exclusive job recovery: journal is held by another handle; retry the same wrapper' >&2\nexit 1";

/// What the run says of a busy lease, as its `--json` `error` has it.
const BUSY_WHY: &str = "another process is recovering this lease";

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

fn busy_rch(world: &World) -> std::path::PathBuf {
    world.fake_rch("rch", BUSY)
}

/// A world with one stale lease on `w1` and an rch that finds it busy.
fn one_busy_lease() -> (World, Journal, std::path::PathBuf) {
    let world = World::new();
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    world.add(&journal);
    let rch = busy_rch(&world);
    (world, journal, rch)
}

/// Moves every held lease's start `hours` back in the state file, and
/// its last `--quiet` line too when it has one: the state a run `hours`
/// earlier would have left.
fn held_earlier(world: &World, hours: u64) {
    let mut state = world.state();
    let held = state["held"].as_object_mut().expect("held leases");
    assert!(!held.is_empty(), "nothing held: {state}");
    for lease in held.values_mut() {
        for key in ["since_unix_ms", "said_unix_ms"] {
            if let Some(ms) = lease[key].as_u64() {
                lease[key] = json!(ms - hours * HOUR_S * 1000);
            }
        }
    }
    std::fs::write(
        world.state_file(),
        serde_json::to_vec_pretty(&state).expect("json"),
    )
    .expect("write state");
}

/// `name{lease_dir="<the world's>"...}` value in a metrics file.
fn sample(prom: &Path, world: &World, name: &str, extra: &str) -> Option<f64> {
    let prefix = format!(
        "{name}{{lease_dir=\"{}\"{extra}}} ",
        world.leases().display()
    );
    std::fs::read_to_string(prom)
        .expect("metrics file")
        .lines()
        .find_map(|line| line.strip_prefix(&prefix)?.trim().parse().ok())
}

fn text(output: &Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

#[test]
fn a_deferred_lease_says_why_in_the_summary_status_explain_and_doctor() {
    let (world, journal, rch) = one_busy_lease();
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    assert_eq!(code, 0, "{document}");
    let error = document["leases"][0]["error"].as_str().expect("error");
    assert!(error.contains(BUSY_WHY), "{document}");

    // The text summary's line gives the --json error, with -v too.
    for verbose in [false, true] {
        let mut args = vec!["--rch", utf8(&rch)];
        if verbose {
            args.push("-v");
        }
        let output = world.run(&args);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        let line = stdout(&output)
            .lines()
            .find(|line| line.starts_with(&journal.id))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no line for {}: {}", journal.id, text(&output)));
        assert!(line.contains("deferred, held for"), "{line}");
        assert!(line.contains(error), "{line}");
    }

    // status --json adds the hold, each key of it documented.
    let status = world.sub(&["status", "--json"]).output().expect("status");
    let document: Value = serde_json::from_str(&stdout(&status)).expect("status json");
    let held = &document["held"][&journal.id];
    assert!(
        held["error"].as_str().is_some_and(|e| e.contains(BUSY_WHY)),
        "{document}"
    );
    let man = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/man/rch-sweep.1"))
        .expect("man page");
    let json_output = man.split(".SH JSON OUTPUT").nth(1).expect("JSON OUTPUT");
    for key in ["held"]
        .into_iter()
        .chain(held.as_object().expect("held").keys().map(String::as_str))
    {
        assert!(
            json_output.contains(&format!("\n.B {key}\n")),
            "JSON OUTPUT of the man page does not document {key}"
        );
    }

    // status, explain and doctor's journals say why it waits.
    let status = world.sub(&["status"]).output().expect("status");
    let said = stdout(&status);
    assert!(said.contains(&journal.id), "{said}");
    assert!(
        said.contains("held for") && said.contains(BUSY_WHY),
        "{said}"
    );
    let explain = world
        .sub(&["explain", &journal.id])
        .output()
        .expect("explain");
    let said = stdout(&explain);
    assert!(
        said.contains("waiting  held for") && said.contains(BUSY_WHY),
        "{said}"
    );
    let doctor = world
        .sub(&["doctor", "--json", "--rch", utf8(&rch)])
        .output()
        .expect("doctor");
    let document: Value = serde_json::from_str(&stdout(&doctor)).expect("doctor json");
    let journals = document["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|check| check["check"] == "journals")
        .expect("journals check");
    let finding = journals["finding"].as_str().expect("finding");
    assert!(
        finding.contains("held without a recovery") && finding.contains(BUSY_WHY),
        "{finding}"
    );
    assert_eq!(journals["status"], "ok", "under 6 h: {journals}");
}

/// A lease a run did not start (its budget went to the leases before it)
/// is held too, and its line says so; its JSON line carries no error of
/// its own, as before.
#[test]
fn a_lease_left_unstarted_by_the_budget_says_why() {
    let world = World::new();
    world.add_three_stale(["w1", "w2", "w3"]);
    let rch = busy_rch(&world);
    let output = world.run(&["--rch", utf8(&rch), "--max-recoveries", "2"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let said = stdout(&output);
    let unstarted: Vec<&str> = said
        .lines()
        .filter(|line| line.contains("(--max-recoveries) went to the leases before it"))
        .collect::<Vec<_>>();
    assert_eq!(unstarted.len(), 1, "{said}");
    assert!(unstarted[0].contains("deferred"), "{}", unstarted[0]);
    let (_, document) = world.json(&["--rch", utf8(&rch), "--max-recoveries", "2"]);
    assert!(document["leases"][2].get("error").is_none(), "{document}");
    assert_eq!(
        world.state()["held"].as_object().map(|held| held.len()),
        Some(3)
    );
}

#[test]
fn a_quiet_run_says_a_lease_held_six_hours_once_a_day() {
    let (world, journal, rch) = one_busy_lease();
    let quiet = || world.run(&["--quiet", "--rch", utf8(&rch)]);
    // Held for no time yet: --quiet prints nothing, as before.
    let output = quiet();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(text(&output), "", "a fresh hold is not said");
    // Held for seven hours (the state an earlier run left): one line.
    held_earlier(&world, 7);
    let output = quiet();
    let said = text(&output);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains(&journal.id), "{said}");
    assert!(said.contains("held for 7h"), "{said}");
    assert!(said.contains(BUSY_WHY), "{said}");
    assert!(said.contains("once a day"), "{said}");
    // Five minutes later, another process: nothing (the day is in the
    // state file).
    let output = quiet();
    assert_eq!(text(&output), "", "said once a day");
    // A day later: said again.
    held_earlier(&world, 25);
    let said = text(&quiet());
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains(&journal.id), "{said}");
    // A run without --quiet says it in its table, and marks nothing.
    let said_at = world.state()["held"][&journal.id]["said_unix_ms"].clone();
    let output = world.run(&["--rch", utf8(&rch)]);
    assert!(
        stdout(&output).contains("held for 1d 8h"),
        "{}",
        text(&output)
    );
    assert_eq!(world.state()["held"][&journal.id]["said_unix_ms"], said_at);
}

#[test]
fn the_backing_off_gauge_counts_the_leases_this_run_charged() {
    let world = World::new();
    world.add_three_stale(["w1", "w2", "w3"]);
    let rch = world.fake_rch("rch", "echo 'Error: worker unreachable' >&2\nexit 1");
    let prom = world.path("rch-sweep.prom");
    let output = world.run(&["--rch", utf8(&rch), "--metrics-file", utf8(&prom)]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let failed = sample(&prom, &world, "rch_sweep_recoveries", ",outcome=\"failed\"");
    assert_eq!(failed, Some(3.0));
    assert_eq!(
        sample(&prom, &world, "rch_sweep_backing_off", ""),
        Some(3.0)
    );
    // The next run attempts none of them: still three.
    let output = world.run(&["--rch", utf8(&rch), "--metrics-file", utf8(&prom)]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(
        sample(&prom, &world, "rch_sweep_backing_off", ""),
        Some(3.0)
    );
}

#[test]
fn a_run_that_stops_before_its_scan_keeps_what_the_state_holds_of_leases() {
    let world = World::new();
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    world.add(&journal);
    // rch 2.1.20 never completes it: stuck, held since seven hours.
    let stuck = world.fake_rch_with(
        "rch",
        &FakeRch {
            version: Some("echo 'rch 2.1.20'"),
            capabilities: Some(&capabilities_says("2.1.20")),
            recover: "echo 'Error: daemon has no exact terminal receipt for recovered wrapper/build/worker' >&2\nexit 1",
            ..FakeRch::default()
        },
    );
    let prom = world.path("rch-sweep.prom");
    let output = world.run(&["--rch", utf8(&stuck), "--metrics-file", utf8(&prom)]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stuck_series = ",state=\"stuck\"";
    assert_eq!(
        sample(&prom, &world, "rch_sweep_leases", stuck_series),
        Some(1.0)
    );
    // The next runs find no rch (78, before they scan): they learned
    // nothing of the leases, and write what the state holds, not a 0.
    let no_rch = || {
        let output = world.run(&[
            "--rch",
            utf8(&world.path("no-such-rch")),
            "--metrics-file",
            utf8(&prom),
        ]);
        assert_eq!(output.status.code(), Some(78), "{}", text(&output));
        assert_eq!(sample(&prom, &world, "rch_sweep_exit_code", ""), Some(78.0));
    };
    no_rch();
    assert_eq!(
        sample(&prom, &world, "rch_sweep_leases", stuck_series),
        Some(1.0)
    );
    held_earlier(&world, 7);
    no_rch();
    let held = sample(&prom, &world, "rch_sweep_lease_held_seconds", "").expect("held");
    assert!(held >= (7 * HOUR_S) as f64, "{held}");
    // A state this build cannot read tells nothing: no count at all.
    std::fs::write(world.state_file(), r#"{"version": 99}"#).expect("write");
    let output = world.run(&["--metrics-file", utf8(&prom), "--rch", utf8(&stuck)]);
    assert_eq!(output.status.code(), Some(78), "{}", text(&output));
    assert_eq!(sample(&prom, &world, "rch_sweep_exit_code", ""), Some(78.0));
    assert_eq!(
        sample(&prom, &world, "rch_sweep_leases", stuck_series),
        None
    );
    assert_eq!(
        sample(&prom, &world, "rch_sweep_lease_held_seconds", ""),
        None
    );
}

#[test]
fn a_second_metrics_file_for_the_same_lease_directory_is_warned_of() {
    let world = World::new();
    let textfile = world.path("textfile");
    std::fs::create_dir(&textfile).expect("mkdir");
    let prom = textfile.join("rch-sweep.prom");
    let twin = textfile.join("rch-sweep-old.prom");
    std::fs::write(
        &twin,
        format!(
            "rch_sweep_exit_code{{lease_dir=\"{}\"}} 78\n",
            world.leases().display()
        ),
    )
    .expect("twin");
    let rch = busy_rch(&world);
    let output = world.run(&["--rch", utf8(&rch), "--metrics-file", utf8(&prom)]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let said = stderr(&output);
    assert!(
        said.contains(utf8(&twin)) && said.contains("also holds rch_sweep_ series"),
        "{said}"
    );
    let output = world.run(&[
        "--quiet",
        "--rch",
        utf8(&rch),
        "--metrics-file",
        utf8(&prom),
    ]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(text(&output), "", "not under --quiet");
}

/// Nothing changes for a run that holds no lease: one lease recovered and
/// one charged a failure leave no held lease in the state, their lines
/// and `status` as before, `--quiet` silent, and the held time 0.
#[test]
fn a_run_that_holds_no_lease_says_and_keeps_what_it_did() {
    let world = World::new();
    let recovered = world.will_complete(Journal::stale("w1", 3 * HOUR_MS));
    let failing = Journal::stale("w2", 2 * HOUR_MS);
    world.add(&failing);
    let rch = world.completing_rch();
    let prom = world.path("rch-sweep.prom");
    let output = world.run(&[
        "--quiet",
        "--rch",
        utf8(&rch),
        "--metrics-file",
        utf8(&prom),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(!text(&output).contains("held"), "{}", text(&output));
    let state = world.state();
    assert!(state.get("held").is_none(), "{state}");
    assert!(state["leases"].get(&recovered).is_none(), "{state}");
    assert_eq!(state["leases"][&failing.id]["failures"], 1, "{state}");
    assert_eq!(
        sample(&prom, &world, "rch_sweep_lease_held_seconds", ""),
        Some(0.0)
    );
    let status = stdout(&world.sub(&["status"]).output().expect("status"));
    assert!(
        !status.contains("waiting") && !status.contains("held"),
        "{status}"
    );
    let output = world.run(&["--rch", utf8(&rch)]);
    let line = stdout(&output);
    assert!(line.contains("backing off (1 failure, retry in"), "{line}");
    assert!(!line.contains("held"), "{line}");
}

/// `forget` forgets a held lease too (its id, or `--all`): the next run
/// holds it from then on, as a lease seen for the first time.
#[test]
fn forget_forgets_a_held_lease() {
    let (world, journal, rch) = one_busy_lease();
    let run = || world.run(&["--rch", utf8(&rch)]);
    run();
    assert!(world.state()["held"].get(&journal.id).is_some());
    let forget = world
        .sub(&["forget", &journal.id])
        .output()
        .expect("forget");
    assert_eq!(forget.status.code(), Some(0), "{}", text(&forget));
    assert!(world.state().get("held").is_none(), "{}", world.state());
    run();
    let forget = world.sub(&["forget", "--all"]).output().expect("forget");
    assert_eq!(forget.status.code(), Some(0), "{}", text(&forget));
    assert!(world.state().get("held").is_none(), "{}", world.state());
}

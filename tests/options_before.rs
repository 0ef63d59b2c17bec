//! SPEC, Synopsis: the options of `run` that a subcommand also takes may
//! stand before it as well as after it (issue 36):
//! `rch-sweep --lease-dir D status` is `rch-sweep status --lease-dir D`.
//! Each subcommand that takes such options is run both ways on the same
//! world, and must do and print the same; an option the subcommand does
//! not take is refused before it as after it.

mod common;

use common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;

/// A world with one stranded journal and a backoff entry for it.
fn world_with_entry() -> (World, String) {
    let world = World::new();
    let journal = Journal::dead_owner("w1", 7, now_ms() - 3_600_000);
    world.add(&journal);
    let state = world.state_file();
    std::fs::create_dir_all(state.parent().expect("folder")).expect("mkdir state");
    let now = now_ms();
    let document = json!({
        "version": 1,
        "last_success_unix_ms": 0,
        "leases": {
            journal.id.clone(): {
                "failures": 1,
                "next_attempt_unix_ms": now + 600_000,
                "last_attempt_unix_ms": now,
                "last_error": "exit status: 1: worker unreachable",
                "worker_id": "w1",
                "build_id": 7
            }
        }
    });
    std::fs::write(&state, document.to_string()).expect("write state");
    (world, journal.id.clone())
}

fn paths(world: &World) -> Vec<String> {
    vec![
        "--lease-dir".to_owned(),
        world.leases().display().to_string(),
        "--state-file".to_owned(),
        world.state_file().display().to_string(),
    ]
}

/// The binary with `before`, then the subcommand, then `after`.
fn run(before: &[String], sub: &str, after: &[String]) -> Output {
    World::bare_command()
        .args(before)
        .arg(sub)
        .args(after)
        .output()
        .expect("run rch-sweep")
}

/// Runs `sub` with the world's paths (and `options`) before it and after
/// it; both must exit `code` and print the same.
fn both_ways(world: &World, sub: &str, options: &[&str], rest: &[&str]) -> (Output, Output) {
    let mut given = paths(world);
    given.extend(options.iter().map(|option| (*option).to_owned()));
    let rest: Vec<String> = rest.iter().map(|word| (*word).to_owned()).collect();
    let before = run(&given, sub, &rest);
    let mut after_args = given.clone();
    after_args.extend(rest.iter().cloned());
    let after = run(&[], sub, &after_args);
    assert_eq!(
        before.status.code(),
        after.status.code(),
        "{sub}: options before it exit {:?} ({}), after it {:?} ({})",
        before.status.code(),
        stderr(&before),
        after.status.code(),
        stderr(&after)
    );
    (before, after)
}

#[test]
fn status_takes_its_options_before_it() {
    let (world, id) = world_with_entry();
    let (before, after) = both_ways(&world, "status", &["--json"], &[]);
    assert_eq!(before.status.code(), Some(0), "{}", stderr(&before));
    assert_eq!(stdout(&before), stdout(&after));
    let document: Value = serde_json::from_str(&stdout(&before)).expect("json");
    assert!(document["leases"].get(&id).is_some(), "{document}");
}

#[test]
fn explain_takes_its_options_before_it() {
    let (world, id) = world_with_entry();
    let (before, after) = both_ways(
        &world,
        "explain",
        &["--stale-after", "60", "--json"],
        &[&id],
    );
    assert_eq!(before.status.code(), Some(0), "{}", stderr(&before));
    assert_eq!(stdout(&before), stdout(&after));
    let document: Value = serde_json::from_str(&stdout(&before)).expect("json");
    assert_eq!(
        document["journals"][0]["wrapper_id"],
        id.as_str(),
        "{document}"
    );
}

#[test]
fn forget_takes_its_options_before_it() {
    // Two worlds alike: forget the entry with the options before `forget`
    // in one and after it in the other; the state files then agree.
    let (first, id) = world_with_entry();
    let second = World::new();
    for entry in std::fs::read_dir(first.leases()).expect("list") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), second.leases().join(entry.file_name())).expect("copy");
    }
    let state = second.state_file();
    std::fs::create_dir_all(state.parent().expect("folder")).expect("mkdir state");
    std::fs::copy(first.state_file(), &state).expect("same state");
    let before = run(&paths(&first), "forget", std::slice::from_ref(&id));
    let mut after_args = paths(&second);
    after_args.push(id.clone());
    let after = run(&[], "forget", &after_args);
    for (output, world) in [(&before, &first), (&after, &second)] {
        assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
        let state: Value =
            serde_json::from_str(&std::fs::read_to_string(world.state_file()).expect("state"))
                .expect("state json");
        assert!(state["leases"].get(&id).is_none(), "{state}");
    }
    assert_eq!(
        stdout(&before),
        stdout(&after).replace(
            &second.dir.path().display().to_string(),
            &first.dir.path().display().to_string(),
        )
    );
}

/// doctor's checks as (check, status, finding), minus the ones whose
/// finding changes from one moment to the next (free space, reply times).
fn checks(output: &Output) -> Vec<(String, String, String)> {
    let document: Value = serde_json::from_str(&stdout(output))
        .unwrap_or_else(|error| panic!("{error}: {}", stdout(output)));
    document["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|check| {
            let name = check["check"].as_str().unwrap_or_default().to_owned();
            let finding = match name.as_str() {
                "host" | "daemon" => String::new(),
                _ => check["finding"].as_str().unwrap_or_default().to_owned(),
            };
            (
                name,
                check["status"].as_str().unwrap_or_default().to_owned(),
                finding,
            )
        })
        .collect()
}

#[test]
fn doctor_takes_the_options_of_run_before_it() {
    let (world, _) = world_with_entry();
    let rch = world.fake_rch("rch", "exit 1");
    let rch = rch.display().to_string();
    let (before, after) = both_ways(
        &world,
        "doctor",
        &["--rch", &rch, "--stale-after", "60", "--json"],
        &[],
    );
    let found = checks(&before);
    assert_eq!(found, checks(&after));
    let rch_check = found
        .iter()
        .find(|(name, _, _)| name == "rch")
        .expect("an rch check");
    assert!(rch_check.2.contains(&rch), "{rch_check:?}");
    let lease_dir = found
        .iter()
        .find(|(name, _, _)| name == "lease_dir")
        .expect("a lease_dir check");
    assert!(
        lease_dir.2.contains(&world.leases().display().to_string()),
        "{lease_dir:?}"
    );
}

#[test]
fn an_option_the_subcommand_does_not_take_is_refused_before_it_too() {
    let world = World::new();
    let leases = world.leases().display().to_string();
    for (before, sub, after) in [
        (vec!["--dry-run"], "status", vec![]),
        (vec!["--max-recoveries", "2"], "forget", vec!["--all"]),
        (vec!["--quiet"], "explain", vec!["rchw-x"]),
        (
            vec!["--lease-dir", leases.as_str()],
            "completions",
            vec!["bash"],
        ),
        // Given on both sides: as given twice after it.
        (
            vec!["--lease-dir", leases.as_str()],
            "status",
            vec!["--lease-dir", leases.as_str()],
        ),
    ] {
        let before: Vec<String> = before.iter().map(|word| (*word).to_owned()).collect();
        let after: Vec<String> = after.iter().map(|word| (*word).to_owned()).collect();
        let output = run(&before, sub, &after);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{before:?} {sub} {after:?}: {}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), "", "{before:?} {sub}");
    }
    assert!(!Path::new(&world.state_file()).exists());
}

#[test]
fn doctor_as_a_route_takes_the_options_of_run_before_it() {
    // doctor --as re-executes itself with the options it was given: those
    // that stood before `doctor` must reach that run as those after it do,
    // and the report must not note a lease directory the shell did not name.
    let (world, _) = world_with_entry();
    let (before, after) = both_ways(&world, "doctor", &[], &["--as", "cron"]);
    // The free space of the state's file system moves between two runs.
    let steady = |output: &Output| -> Vec<String> {
        format!("{}{}", stdout(output), stderr(output))
            .lines()
            .filter(|line| !line.contains(" host "))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(steady(&before), steady(&after));
    let leases = world.leases().display().to_string();
    assert!(
        steady(&before)
            .iter()
            .any(|line| line.contains("lease_dir") && line.contains(&leases)),
        "{:?}",
        steady(&before)
    );
}

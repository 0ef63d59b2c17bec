//! What every `rch` rch-sweep starts is told (SPEC "What changed since the
//! fifth wave", "rch's answers are read", item 4): `RCH_NO_UPDATE_CHECK=1`
//! and `RCH_DISABLE_CONFIG_CACHE=1`, for a run's `daemon status` and `jobs
//! recover` (and its `--version` and `--capabilities`, where a run asks
//! them) and for doctor's `--version`, `--capabilities`, `jobs recover
//! --help` and `daemon status`.
//!
//! The fake `rch` writes each call's arguments and the two variables as it
//! saw them to `$HOME/rch-env.log` (the world's home, given by `isolate`),
//! before it does anything else.

mod common;

use common::isolated::{isolate, run_json, sweep};
use common::*;
use std::fs;
use std::path::Path;

/// One line a call: `<args>|<RCH_NO_UPDATE_CHECK>|<RCH_DISABLE_CONFIG_CACHE>`.
const RECORD: &str = r#"printf '%s|%s|%s\n' "$*" "${RCH_NO_UPDATE_CHECK-unset}" "${RCH_DISABLE_CONFIG_CACHE-unset}" >> "$HOME/rch-env.log""#;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// A fake rch that records its environment, knows its daemon and completes
/// a lease prepared by `will_complete`.
fn recording_rch(world: &World) -> std::path::PathBuf {
    fs::create_dir_all(world.path("done")).expect("done");
    let recover = format!(
        "cp \"{done}/$3.json\" \"$leases/$3.json\"",
        done = world.path("done").display()
    );
    world.fake_rch_with(
        "rch",
        &FakeRch {
            first: RECORD,
            recover: &recover,
            daemon: true,
            ..FakeRch::default()
        },
    )
}

/// The recorded calls: (arguments, the two values as seen).
fn calls(world: &World) -> Vec<(String, String)> {
    fs::read_to_string(world.path("home").join("rch-env.log"))
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let (args, seen) = line.split_once('|').expect("a recorded line");
            (args.to_owned(), seen.to_owned())
        })
        .collect()
}

/// Every call saw both variables set to 1, and each of `kinds` (a prefix
/// of the arguments) was called.
fn assert_told(calls: &[(String, String)], kinds: &[&str]) {
    for kind in kinds {
        assert!(
            calls.iter().any(|(args, _)| args.starts_with(kind)),
            "no `{kind}` call among {calls:?}"
        );
    }
    for (args, seen) in calls {
        assert_eq!(
            seen, "1|1",
            "`rch {args}` saw RCH_NO_UPDATE_CHECK|RCH_DISABLE_CONFIG_CACHE = {seen}"
        );
    }
}

#[test]
fn every_rch_a_run_starts_gets_no_update_check_and_no_config_cache() {
    let world = World::new();
    let runtime = world.path("run");
    fs::create_dir_all(&runtime).expect("runtime dir");
    let _daemon = FakeDaemon::start(&runtime.join("rch.sock"), Reply::Healthy);
    let rch = recording_rch(&world);
    let id = world.will_complete(Journal::stale("w1", 2 * HOUR_MS));
    let mut command = sweep(&world, &["--rch", utf8(&rch)]);
    command.env("XDG_RUNTIME_DIR", &runtime);
    let (code, document, stderr) = run_json(command);
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(document["recovered"], 1, "{document}");
    assert_told(
        &calls(&world),
        &[
            "--version",
            "--capabilities",
            "--json --format json daemon status",
            &format!("jobs recover {id} --timeout-secs"),
        ],
    );
}

#[test]
fn every_rch_doctor_starts_gets_no_update_check_and_no_config_cache() {
    let world = World::new();
    let runtime = world.path("run");
    fs::create_dir_all(&runtime).expect("runtime dir");
    let _daemon = FakeDaemon::start(&runtime.join("rch.sock"), Reply::Healthy);
    let rch = recording_rch(&world);
    world.add(&Journal::stale("w1", 2 * HOUR_MS));
    let mut doctor = world.sub(&["doctor", "--json", "--rch", utf8(&rch)]);
    isolate(&world, &mut doctor);
    doctor.env("XDG_RUNTIME_DIR", &runtime);
    let output = doctor.output().expect("doctor");
    assert!(
        output.status.code().is_some(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_told(
        &calls(&world),
        &[
            "--version",
            "--capabilities",
            "jobs recover --help",
            "--json --format json daemon status",
        ],
    );
}

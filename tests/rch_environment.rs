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
//!
//! And what every `rch` is run without (issue 46): `RCH_JSON`,
//! `RCH_OUTPUT_FORMAT`, `TOON_DEFAULT_FORMAT`, with any of which rch writes
//! its error as JSON on stdout and nothing on stderr.

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

/// What every rch 2.1.x does when `RCH_JSON` (not empty, not `0`),
/// `RCH_OUTPUT_FORMAT` or `TOON_DEFAULT_FORMAT` is set (main.rs,
/// `top_level_machine_output_requested`): its error goes to stdout as a
/// JSON envelope, and nothing to stderr. Then `answer` answers.
const MACHINE_OUTPUT: &str = r#"machine=no
case "${RCH_JSON-}" in ''|0) ;; *) machine=yes ;; esac
[ -n "${RCH_OUTPUT_FORMAT-}" ] && machine=yes
[ -n "${TOON_DEFAULT_FORMAT-}" ] && machine=yes
echo "$machine" >> "$HOME/machine.log"
answer() {
  if [ $machine = yes ]; then printf '{"success":false,"error":{"code":"RCH-E504","message":"%s"}}\n' "$1"
  else echo "Error: $1" >&2; fi
  exit 1
}"#;

/// A sweep run with any of the three in its environment: every rch it
/// starts runs without them, so rch's answer is on stderr and read (a busy
/// lock is deferred, not charged).
#[test]
fn rchs_answers_are_read_whatever_output_format_the_sweeps_environment_asks_for() {
    for (name, value) in [
        ("RCH_JSON", "1"),
        ("RCH_OUTPUT_FORMAT", "json"),
        ("TOON_DEFAULT_FORMAT", "toon"),
    ] {
        let world = World::new();
        let journal = Journal::stale("w1", 2 * HOUR_MS);
        world.add(&journal);
        let rch = world.fake_rch_with(
            "rch",
            &FakeRch {
                first: MACHINE_OUTPUT,
                recover: "answer 'cannot acquire exclusive job recovery: journal is held by another handle; retry the same wrapper'",
                ..FakeRch::default()
            },
        );
        let mut command = sweep(&world, &["--rch", utf8(&rch)]);
        command.env(name, value);
        let (code, document, stderr) = run_json(command);
        assert_eq!(code, 0, "{name}: {document}\n{stderr}");
        let row = &document["leases"][0];
        assert_eq!(row["outcome"], "deferred", "{name}: {document}");
        assert!(
            row["error"]
                .as_str()
                .is_some_and(|e| e.contains("another process is recovering this lease")),
            "{name}: {row}"
        );
        let seen = fs::read_to_string(world.path("home").join("machine.log")).expect("log");
        assert!(
            !seen.is_empty() && seen.lines().all(|line| line == "no"),
            "{name}: rch saw machine output asked for: {seen}"
        );
    }
}

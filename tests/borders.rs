//! Where rch-sweep meets what it did not write: the `rch` child it hands a
//! lease to (which directory it sees, which descriptors, where it is found)
//! and the files around the state path (what is never followed, renamed,
//! created or written). Every fake `rch` here finds the lease directory only
//! as the real one does (`common::RCH_LEASE_DIR_SH`).

mod common;

use common::{DEAD_PID, HOUR_MS, Journal, World, outcomes, stderr};
use serde_json::json;
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};

const ADMISSION_CHANGED: &str = "recovery admission changed after scanning; client was not started";

/// Every entry below `dir` with its type, size and inode, to prove that
/// nothing was renamed, created or written.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (String, u64, u64)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries {
            let entry = entry.expect("entry");
            let meta = std::fs::symlink_metadata(entry.path()).expect("lstat");
            let kind = format!("{:?}", meta.file_type());
            if meta.is_dir() {
                stack.push(entry.path());
            }
            out.insert(entry.path(), (kind, meta.len(), meta.ino()));
        }
    }
    out
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_symlinked_lease_dir_is_recovered_whatever_rch_state_home_and_xdg_say() {
    let world = World::new();
    let id = world.will_complete(Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.completing_rch();
    let alias = world.path("alias");
    symlink(world.leases(), &alias).expect("symlink");
    let output = World::bare_command()
        .env("RCH_STATE_HOME", world.path("elsewhere"))
        .env("XDG_STATE_HOME", world.path("elsewhere-too"))
        .arg("--json")
        .arg("--lease-dir")
        .arg(&alias)
        .arg("--state-file")
        .arg(world.state_file())
        .arg("--rch")
        .arg(&rch)
        .output()
        .expect("run");
    let document: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON document");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(outcomes(&document), [(id, "recovered".to_owned())]);
    assert!(!world.path("elsewhere").exists());
}

#[test]
fn a_real_run_refuses_a_lease_dir_not_named_job_leases_and_a_dry_run_takes_it() {
    let world = World::new();
    let other = world.path("leases");
    std::fs::create_dir(&other).expect("mkdir");
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    std::fs::write(other.join(journal.file_name()), journal.text()).expect("write");
    let rch = world.fake_rch(
        "rch",
        &format!("touch '{}'", world.path("started").display()),
    );
    let before = tree(world.dir.path());
    let run = |args: &[&str]| {
        World::bare_command()
            .arg("--lease-dir")
            .arg(&other)
            .args(args)
            .output()
            .expect("run")
    };
    let output = run(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(output.status.code(), Some(78), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("job-leases"),
        "{}",
        stderr(&output)
    );
    assert_eq!(tree(world.dir.path()), before, "nothing created or started");
    // A link elsewhere in the path does not help: the name is judged with
    // symlinks resolved. (Only a link that is itself named job-leases is
    // how rch reaches it: tests/where_it_looks.rs.)
    let alias = world.path("alias");
    symlink(world.dir.path(), &alias).expect("symlink");
    let output = World::bare_command()
        .arg("--lease-dir")
        .arg(alias.join("leases"))
        .args(["--rch", rch.to_str().expect("utf8")])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(78), "{}", stderr(&output));
    for dry in [&["--dry-run"][..], &["--check"]] {
        let output = run(dry);
        assert_ne!(output.status.code(), Some(78), "{}", stderr(&output));
    }
    assert!(!world.path("started").exists());
}

#[test]
fn a_descriptor_rch_sweep_inherited_never_reaches_the_child() {
    use std::os::unix::process::CommandExt;
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let fds = world.path("fds");
    let rch = world.fake_rch(
        "rch",
        &format!(
            "for fd in 7 200; do [ -e /proc/$$/fd/$fd ] && echo \"leaked $fd\"; done > '{fds}'\nls -l /proc/$$/fd >> '{fds}'\nexit 1",
            fds = fds.display()
        ),
    );
    let inherited = std::fs::File::create(world.path("inherited-marker")).expect("create");
    let raw = std::os::fd::AsRawFd::as_raw_fd(&inherited);
    let mut command = world.command(&["--rch", rch.to_str().expect("utf8")]);
    // SAFETY: dup2 is async-signal-safe; it leaves the copies without
    // close-on-exec, as a careless parent (cron, a CI runner) would.
    unsafe {
        command.pre_exec(move || {
            for target in [7, 200] {
                if libc::dup2(raw, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let output = command.output().expect("run");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let seen = std::fs::read_to_string(&fds).expect("the child ran");
    assert!(!seen.contains("leaked"), "{seen}");
    assert!(!seen.contains("inherited-marker"), "{seen}");
}

#[test]
fn rch_is_found_in_home_local_bin_when_path_lacks_it() {
    let world = World::new();
    let id = world.will_complete(Journal::stale("hz4", 2 * HOUR_MS));
    let home = world.path("home");
    let bin = home.join(".local/bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    std::fs::rename(world.completing_rch(), bin.join("rch")).expect("install rch");
    let output = world
        .command(&["--json"])
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home)
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(outcomes(&document), [(id, "recovered".to_owned())]);
}

#[test]
fn process_birth_must_have_rchs_shape_and_a_dead_pid_is_gone_whatever_it_recorded() {
    let world = World::new();
    let boot = common::BOOT;
    let mut expected = BTreeMap::new();
    for (birth, verdict) in [
        (json!(format!("{boot}:123")), "malformed"),
        (
            json!({"boot_id": boot, "start": {"platform": "linux", "ticks": -5}}),
            "malformed",
        ),
        (
            json!({"boot_id": boot, "start": {"platform": "beos", "ticks": 5}}),
            "malformed",
        ),
        (json!({"boot_id": boot, "start": {"ticks": 5}}), "malformed"),
        (json!({"boot_id": boot}), "malformed"),
        // The tag is a variant identifier: a JSON string, in the map and
        // the sequence form alike (rch: "invalid type: map, expected
        // variant identifier").
        (
            json!({"boot_id": boot, "start": {"platform": {"linux": null}, "ticks": 7}}),
            "malformed",
        ),
        (
            json!({"boot_id": boot, "start": {"platform": {"darwin": null}, "seconds": 1, "microseconds": 2}}),
            "malformed",
        ),
        (
            json!({"boot_id": boot, "start": [{"linux": null}, 7]}),
            "malformed",
        ),
        (
            json!({"boot_id": boot, "start": {"platform": ["linux"], "ticks": 7}}),
            "malformed",
        ),
        (
            json!({"boot_id": boot, "start": {"platform": 0, "ticks": 7}}),
            "malformed",
        ),
        (json!({"boot_id": boot, "start": [0, 7]}), "malformed"),
        (
            json!({"boot_id": boot, "start": {"platform": true, "ticks": 7}}),
            "malformed",
        ),
        (
            json!({"boot_id": boot, "start": {"platform": null, "ticks": 7}}),
            "malformed",
        ),
        (
            json!({"boot_id": boot, "start": ["linux", 7]}),
            "would_recover",
        ),
        (json!(null), "would_recover"),
        (
            json!({"boot_id": boot, "start": {"platform": "linux", "ticks": 5}}),
            "would_recover",
        ),
        (
            json!({"boot_id": boot, "start": {"platform": "darwin", "seconds": 1791280000, "microseconds": 5}}),
            "would_recover",
        ),
    ] {
        let journal = Journal::stale(&format!("w{}", expected.len()), 2 * HOUR_MS)
            .set("process_birth", birth)
            .set("wrapper_pid", json!(DEAD_PID));
        world.add(&journal);
        expected.insert(journal.id.clone(), verdict.to_owned());
    }
    let (code, document) = world.json(&["--dry-run", "-v", "--max-recoveries", "64"]);
    assert_eq!(code, 0);
    let seen: BTreeMap<String, String> = document["leases"]
        .as_array()
        .expect("leases")
        .iter()
        .map(|lease| {
            let verdict = if lease["outcome"] == "skipped" {
                &lease["reason"]
            } else {
                &lease["outcome"]
            };
            (
                lease["wrapper_id"].as_str().expect("id").to_owned(),
                verdict.as_str().expect("verdict").to_owned(),
            )
        })
        .collect();
    assert_eq!(seen, expected);
}

#[test]
fn journals_rewritten_while_an_earlier_recovery_runs_are_refused_without_a_child() {
    let world = World::new();
    let first = Journal::stale("hz4", 9 * HOUR_MS);
    let schema = Journal::stale("hz4", 8 * HOUR_MS);
    let renamed = Journal::stale("hz4", 7 * HOUR_MS);
    for journal in [&first, &schema, &renamed] {
        world.add(journal);
    }
    let schema_text = schema
        .text()
        .replace("\"schema_version\": 1", "\"schema_version\": 2");
    let other_id = common::new_id();
    let renamed_text = renamed.text().replace(
        &format!("\"local_wrapper_id\": \"{}\"", renamed.id),
        &format!("\"local_wrapper_id\": \"{other_id}\""),
    );
    assert_ne!(schema_text, schema.text());
    assert_ne!(renamed_text, renamed.text());
    std::fs::write(world.path("schema.json"), schema_text).expect("write");
    std::fs::write(world.path("renamed.json"), renamed_text).expect("write");
    let log = world.path("calls.log");
    let rch = world.fake_rch(
        "rch",
        &format!(
            "echo \"$3\" >> '{log}'\ncp '{schema_src}' \"$leases/{schema}.json\"\ncp '{renamed_src}' \"$leases/{renamed}.json\"\nexit 1",
            log = log.display(),
            schema_src = world.path("schema.json").display(),
            renamed_src = world.path("renamed.json").display(),
            schema = schema.id,
            renamed = renamed.id,
        ),
    );
    let (code, document) = world.json(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(code, 1);
    let calls = std::fs::read_to_string(&log).expect("log");
    assert_eq!(calls.lines().collect::<Vec<_>>(), [first.id.as_str()]);
    assert_eq!(
        outcomes(&document),
        [
            (first.id.clone(), "failed".to_owned()),
            (schema.id.clone(), "failed".to_owned()),
            (renamed.id.clone(), "failed".to_owned()),
        ]
    );
    for row in [1, 2] {
        assert_eq!(document["leases"][row]["error"], ADMISSION_CHANGED);
    }
}

/// An I/O refusal (74) whose message says `why`.
fn assert_refused(output: &std::process::Output, why: &str, context: &str) {
    assert_eq!(
        output.status.code(),
        Some(74),
        "{context}: {}",
        stderr(output)
    );
    assert!(
        stderr(output).contains(why),
        "{context}: {}",
        stderr(output)
    );
}

/// The state path holds something rch-sweep did not create: every command
/// answers 74 and leaves the whole folder exactly as it was.
fn assert_state_path_refused(world: &World, what: &str) {
    let rch = world.fake_rch("rch", "exit 1");
    let before = tree(world.dir.path());
    let rch = rch.to_str().expect("utf8");
    for args in [
        &["--rch", rch][..],
        &["--dry-run"],
        &["--check"],
        &["status"],
        &["status", "--json"],
        &["forget", "--all"],
    ] {
        let output = world_command(world, args).output().expect("run");
        assert_refused(&output, "left it as it is", &format!("{what}, {args:?}"));
        assert_eq!(tree(world.dir.path()), before, "{what}, {args:?}");
    }
}

fn world_with_a_candidate() -> World {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    std::fs::create_dir_all(world.state_file().parent().expect("parent")).expect("mkdir");
    world
}

#[test]
fn a_directory_fifo_or_symlink_at_the_state_path_is_74_and_left_alone() {
    let world = world_with_a_candidate();
    std::fs::create_dir(world.state_file()).expect("mkdir");
    std::fs::write(world.state_file().join("keep"), "mine").expect("write");
    assert_state_path_refused(&world, "a directory");

    let world = world_with_a_candidate();
    common::mkfifo(&world.state_file());
    assert_state_path_refused(&world, "a FIFO");

    for target_text in [
        "{\"version\": 1}",
        "not json: what a user keeps in ~/.bashrc",
    ] {
        let world = world_with_a_candidate();
        let target = world.path("bashrc");
        std::fs::write(&target, target_text).expect("write");
        symlink(&target, world.state_file()).expect("symlink");
        assert_state_path_refused(&world, "a symlink");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), target_text);
    }
}

#[test]
fn another_users_state_file_or_lock_is_74_for_run_and_forget() {
    if !is_root() {
        eprintln!("skipped: making another user's file needs root (chown)");
        return;
    }
    let nobody = 65534;
    let world = world_with_a_candidate();
    let state = json!({"version": 1, "leases": {}}).to_string();
    std::fs::write(world.state_file(), &state).expect("write");
    std::os::unix::fs::chown(world.state_file(), Some(nobody), Some(nobody)).expect("chown");
    let rch = world.fake_rch("rch", "exit 1");
    let rch = rch.to_str().expect("utf8");
    let before = tree(world.dir.path());
    for args in [&["--rch", rch][..], &["forget", "--all"]] {
        let output = world_command(&world, args).output().expect("run");
        assert_refused(&output, "another user", &format!("{args:?}"));
        assert_eq!(tree(world.dir.path()), before, "{args:?}");
    }
    // Reading it changes nothing and is allowed.
    for args in [&["--dry-run"][..], &["status"]] {
        let output = world_command(&world, args).output().expect("run");
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    assert_eq!(tree(world.dir.path()), before);

    let world = world_with_a_candidate();
    let lock = world.path("state/backoff.json.lock");
    std::fs::write(&lock, "4242\n").expect("write");
    std::os::unix::fs::chown(&lock, Some(nobody), Some(nobody)).expect("chown");
    let before = tree(world.dir.path());
    for args in [&["--rch", rch][..], &["forget", "--all"]] {
        let output = world_command(&world, args).output().expect("run");
        assert_eq!(
            output.status.code(),
            Some(74),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(tree(world.dir.path()), before, "{args:?}");
    }
    assert_eq!(std::fs::read_to_string(&lock).expect("read"), "4242\n");
}

/// The binary with `args`, the world's lease dir and `state` (when given)
/// put after a leading subcommand.
fn command_with(world: &World, state: Option<&Path>, args: &[&str]) -> std::process::Command {
    let mut command = World::bare_command();
    let rest = match args.first() {
        Some(&sub) if matches!(sub, "status" | "forget") => {
            command.arg(sub);
            &args[1..]
        }
        _ => args,
    };
    command.arg("--lease-dir").arg(world.leases());
    if let Some(state) = state {
        command.arg("--state-file").arg(state);
    }
    command.args(rest);
    command
}

/// The world's lease dir and state file around `args`.
fn world_command(world: &World, args: &[&str]) -> std::process::Command {
    command_with(world, Some(&world.state_file()), args)
}

#[test]
fn a_state_path_inside_the_lease_dir_is_78_and_nothing_is_created_there() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.fake_rch("rch", "exit 1");
    let before = tree(&world.leases());
    for state in [
        world.leases(),
        world.leases().join("rch-sweep/backoff.json"),
        world.leases().join("backoff.json"),
    ] {
        for args in [
            &["--rch", rch.to_str().expect("utf8")][..],
            &["--dry-run"],
            &["status"],
            &["forget", "--all"],
        ] {
            let output = command_with(&world, None, args)
                .env("RCH_SWEEP_STATE_FILE", &state)
                .output()
                .expect("run");
            assert_eq!(
                output.status.code(),
                Some(78),
                "{}, {args:?}: {}",
                state.display(),
                stderr(&output)
            );
            assert_eq!(tree(&world.leases()), before, "{args:?}");
        }
    }
    assert!(world.leases().is_dir());
}

#[test]
fn a_missing_named_lease_dir_warns_and_creates_nothing() {
    let world = World::new();
    let typo = world.path("typo/job-leases");
    let metrics = world.path("rch-sweep.prom");
    let rch = world.fake_rch("rch", "exit 1");
    let before = tree(world.dir.path());
    let output = World::bare_command()
        .arg("--lease-dir")
        .arg(&typo)
        .args(["--rch", rch.to_str().expect("utf8")])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("warning"), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("does not exist"),
        "{}",
        stderr(&output)
    );
    assert_eq!(tree(world.dir.path()), before, "nothing created");
    assert!(!world.path("typo").exists());
    // Asked for, the metrics file is still written, and only it.
    let output = World::bare_command()
        .env("RCH_SWEEP_LEASE_DIR", &typo)
        .arg("--metrics-file")
        .arg(&metrics)
        .args(["--rch", rch.to_str().expect("utf8")])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("warning"), "{}", stderr(&output));
    assert!(metrics.is_file());
    assert!(!world.path("typo").exists());
}

#[test]
fn a_lease_dir_removed_during_the_run_makes_the_rest_vanished_not_failed() {
    let world = World::new();
    let first = Journal::stale("hz4", 9 * HOUR_MS);
    let second = Journal::stale("hz4", 8 * HOUR_MS);
    world.add(&first);
    world.add(&second);
    // The first recovery's client finds the whole folder cleaned up under it.
    // Its journal, read back after it exited 1, is gone too: vanished, not
    // failed (SPEC "rch's answers are read, not counted", 1).
    let rch = world.fake_rch("rch", "rm -rf \"$leases\"\nexit 1");
    let (code, document) = world.json(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(code, 0);
    assert_eq!(
        outcomes(&document),
        [
            (first.id.clone(), "vanished".to_owned()),
            (second.id.clone(), "vanished".to_owned()),
        ]
    );
    assert!(!world.leases().exists(), "nothing recreated it");
}

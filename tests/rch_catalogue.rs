//! The whole catalogue of rch's answers (issue 46; SPEC "rch's answer is
//! its `Error:` line, and the whole catalogue is read"): one test per row
//! of SPEC's table, each on rch's exact words (as rch 2.1.0–2.1.34's
//! sources print them, filled in as rch fills them), with the release a
//! fake `--version` names; the words outside rch's `Error:` line count for
//! nothing; a child ended at the deadline or by a signal is read back; a
//! heartbeat of 0 is stuck.
//!
//! Each runs the real binary against fake `rch` scripts that find the
//! lease directory only as rch does and print what rch prints: log lines,
//! then `Error: {error:#}`. Two leases on one worker, so the second starts
//! only once the first is answered: whether it starts says whether the run
//! went on.

mod common;

use common::backoff::write_due_entry;
use common::locks::{hold_flock, release};
use common::mounts::private_mount_namespace;
use common::*;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// The last success every state file here starts with (ms).
const EARLIER_SUCCESS_MS: u64 = 1_700_000_000_000;

/// What rch logs before its answer (its default log level is info, on
/// stderr) and what follows a TOML error's first line.
const LOG: &str = "\u{1b}[32m INFO\u{1b}[0m rch::hook::retrieval_recovery: recovering wrapper\n";

/// std's `try_lock` texts, as rch 2.1.x prints them inside its words.
const WOULD_BLOCK: &str = "lock acquisition failed because the operation would block";
const LOCK_IO_ERROR: &str = "lock acquisition failed due to I/O error";

/// A run where the first of two leases on worker w1 got `stderr` from an
/// rch whose `--version` says `version`, and the second was recovered if
/// started.
struct Ran {
    world: World,
    code: i32,
    document: Value,
    first: String,
    second: String,
    entry: Value,
}

impl Ran {
    fn started(&self) -> Vec<String> {
        fs::read_to_string(self.world.path("started.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn row(&self, id: &str) -> &Value {
        self.document["leases"]
            .as_array()
            .expect("leases")
            .iter()
            .find(|lease| lease["wrapper_id"] == id)
            .unwrap_or_else(|| panic!("no row for {id}: {}", self.document))
    }

    fn first_error(&self) -> &str {
        self.row(&self.first)["error"].as_str().unwrap_or("")
    }

    /// The first lease was not charged: deferred, its entry exactly as it
    /// was.
    fn first_not_charged(&self, what: &str) {
        assert_eq!(
            self.row(&self.first)["outcome"],
            "deferred",
            "{what}: {}",
            self.document
        );
        let saved = self.world.state();
        assert_eq!(saved["leases"][&self.first], self.entry, "{what}: {saved}");
    }

    /// The second lease started after the first and was recovered.
    fn went_on(&self, what: &str) {
        assert_eq!(
            self.row(&self.second)["outcome"],
            "recovered",
            "{what}: {}",
            self.document
        );
        assert_eq!(
            self.started(),
            [self.first.clone(), self.second.clone()],
            "{what}"
        );
    }

    /// No further child started: the second lease is deferred.
    fn stopped(&self, what: &str) {
        assert_eq!(
            self.row(&self.second)["outcome"],
            "deferred",
            "{what}: {}",
            self.document
        );
        assert_eq!(self.started(), std::slice::from_ref(&self.first), "{what}");
    }

    /// The run exited `code`, the first lease deferred and not charged, no
    /// further start, and the run's error holding `words`.
    fn held_and_stopped(&self, code: i32, what: &str, words: &str) {
        assert_eq!(self.code, code, "{what}: {}", self.document);
        self.first_not_charged(what);
        self.stopped(what);
        assert!(run_error(self).contains(words), "{what}: {}", self.document);
    }

    /// The first lease was charged one more failure.
    fn first_charged(&self, what: &str) {
        let row = self.row(&self.first);
        assert_eq!(row["outcome"], "failed", "{what}: {}", self.document);
        assert_eq!(row["failures"], 4, "{what}: {row}");
    }
}

/// The script the first lease's `rch jobs recover` runs: `then` (with
/// `$leases` and `$3`), then `stderr` (a file) on stderr, exit 1.
fn first_answers_after(version: &str, then: &str, stderr: &str) -> Ran {
    let world = World::new();
    let first = Journal::stale("w1", 3 * HOUR_MS);
    world.add(&first);
    let second = world.will_complete(Journal::stale("w1", 2 * HOUR_MS));
    let (entry, _) = write_due_entry(&world, &first.id, Some(EARLIER_SUCCESS_MS));
    let answer = world.path("answer.txt");
    fs::write(&answer, format!("{LOG}{stderr}")).expect("answer");
    let started = world.path("started.log");
    let version_line = format!("echo 'rch {version}'");
    let capabilities = capabilities_says(version);
    let rch = world.fake_rch_with(
        "rch",
        &FakeRch {
            version: Some(&version_line),
            capabilities: Some(&capabilities),
            recover: &format!(
                "echo \"$3\" >> '{started}'\n\
                 if [ \"$3\" = '{first}' ]; then\n{then}\ncat '{answer}' >&2\nexit 1\nfi\n\
                 cp '{done}/'\"$3.json\" \"$leases/$3.json\"",
                started = started.display(),
                first = first.id,
                answer = answer.display(),
                done = world.path("done").display(),
            ),
            ..FakeRch::default()
        },
    );
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    Ran {
        world,
        code,
        document,
        first: first.id,
        second,
        entry,
    }
}

fn first_answers(version: &str, stderr: &str) -> Ran {
    first_answers_after(version, ":", stderr)
}

/// A run with `rch` whose deadline (1 s and 1 s of grace) ends a child
/// that sleeps.
fn at_a_short_deadline(world: &World, rch: &Path) -> (i32, Value) {
    world.json(&[
        "--rch",
        utf8(rch),
        "--recover-timeout",
        "1",
        "--kill-grace",
        "1",
    ])
}

/// The run's `error` (74, 75, 78).
fn run_error(ran: &Ran) -> &str {
    ran.document["error"].as_str().unwrap_or("")
}

// --------------------------------------------------- rch's configuration

#[test]
fn rchs_configuration_is_78_charges_nothing_and_names_the_file() {
    let user = "/home/u/.config/rch/config.toml";
    let project = "/p/.rch/config.toml";
    for (version, stderr, file) in [
        (
            "2.1.34",
            format!(
                "Error: Failed to parse \"{user}\": TOML parse error at line 1, column 9\n  |\n1 | [general\n  |         ^\ninvalid table header\nexpected `.`, `]`\n"
            ),
            user,
        ),
        (
            "2.1.0",
            format!("Error: Failed to read \"{user}\": Permission denied (os error 13)\n"),
            user,
        ),
        (
            "2.1.16",
            format!(
                "Error: Failed to decode merged config for \"{project}\": invalid type: string \"x\", expected u32\n"
            ),
            project,
        ),
    ] {
        let ran = first_answers(version, &stderr);
        ran.held_and_stopped(78, &stderr, "Fix the file rch names");
        let error = ran.first_error();
        assert!(
            error.contains(&format!("configuration file {file}"))
                && error.contains("(rch: Error: Failed to"),
            "{error}"
        );
    }
}

// ------------------------------------------------------------ the daemon

#[test]
fn rchs_daemon_answers_are_75_as_a_daemon_that_is_down() {
    for (version, answer) in [
        ("2.1.0", "Daemon socket not found at /run/user/0/rch.sock"),
        (
            "2.1.34",
            "Timed out connecting to daemon socket: deadline has elapsed",
        ),
        (
            "2.1.16",
            "Timed out sending daemon command: deadline has elapsed",
        ),
        (
            "2.1.34",
            "Timed out waiting for daemon response: deadline has elapsed",
        ),
        ("2.1.8", "daemon response has no body"),
        (
            "2.1.21",
            "daemon refused job status; ownership remains unresolved",
        ),
        ("2.1.17", "incomplete recovery daemon response: early eof"),
        ("2.1.34", "recovery daemon refused the request"),
        (
            "2.1.24",
            "invalid recovery daemon JSON: expected value at line 1 column 1",
        ),
        ("2.1.34", "oversized recovery daemon reply"),
        (
            "2.1.30",
            "non-UTF-8 recovery daemon reply: invalid utf-8 sequence of 1 bytes from index 0",
        ),
        (
            "2.1.34",
            "recovery daemon request timed out; completion remains pending",
        ),
    ] {
        let ran = first_answers(version, &format!("Error: {answer}\n"));
        ran.held_and_stopped(75, answer, "no lease was charged");
        assert!(ran.first_error().contains(answer), "{}", ran.first_error());
    }
}

/// A daemon that went away for five seconds: it answered the run's check
/// and answers the check after the failure again, but rch met it gone.
#[test]
fn a_daemon_gone_for_five_seconds_is_75_though_it_answers_again() {
    let world = World::new();
    let first = Journal::stale("w1", 3 * HOUR_MS);
    world.add(&first);
    let second = world.will_complete(Journal::stale("w1", 2 * HOUR_MS));
    let (entry, _) = write_due_entry(&world, &first.id, Some(EARLIER_SUCCESS_MS));
    let socket = world.path("rch.sock");
    let daemon = FakeDaemon::start(&socket, Reply::Healthy);
    let rch = world.daemon_rch(
        "rch",
        &format!(
            "if [ \"$3\" = '{}' ]; then echo \"Error: Daemon socket not found at $RCH_SOCKET_PATH\" >&2; exit 1; fi\n\
             cp '{}/'\"$3.json\" \"$leases/$3.json\"",
            first.id,
            world.path("done").display()
        ),
    );
    let (code, document) = world.json(&["--rch", utf8(&rch), "--socket", utf8(&socket)]);
    assert_eq!(code, 75, "{document}");
    let rows = outcomes(&document);
    assert_eq!(
        rows,
        [
            (first.id.clone(), "deferred".to_owned()),
            (second, "deferred".to_owned())
        ]
    );
    assert_eq!(world.state()["leases"][&first.id], entry);
    assert!(daemon.requests() >= 2, "checked before and after");
    assert!(
        document["error"]
            .as_str()
            .is_some_and(|e| e.contains(&format!("from its daemon at {}", socket.display()))),
        "{document}"
    );
}

// -------------------------------------------------------- another holder

#[test]
fn another_holder_defers_the_lease_and_the_others_go_on() {
    for (version, answer) in [
        (
            "2.1.34",
            "cannot acquire exclusive job recovery: journal is held by another handle; retry the same wrapper".to_owned(),
        ),
        (
            "2.1.18",
            format!("cannot acquire exclusive job recovery: {WOULD_BLOCK}; another recovery may be active; retry the same wrapper"),
        ),
        (
            "2.1.34",
            format!("output publication into /data/projects/myproj is held by another wrapper: {WOULD_BLOCK}"),
        ),
        (
            "2.1.2",
            format!("output publication into /data/projects/myproj is held by another wrapper: {WOULD_BLOCK}"),
        ),
        (
            "2.1.0",
            format!("output ownership is held by another live wrapper for /data/projects/myproj: {WOULD_BLOCK}; the original wrapper must finish collection"),
        ),
    ] {
        let ran = first_answers(version, &format!("Error: {answer}\n"));
        assert_eq!(ran.code, 0, "{answer}: {}", ran.document);
        ran.first_not_charged(&answer);
        ran.went_on(&answer);
        assert!(ran.first_error().contains(&answer), "{}", ran.first_error());
    }
}

/// rch waits up to 600 s for an output folder another wrapper holds and
/// prints nothing meanwhile: a child ended at the deadline then (or by
/// rch's own --timeout-secs) was waiting for another wrapper.
#[test]
fn a_child_ended_while_another_wrapper_held_its_output_folder_is_deferred() {
    for rchs_own_deadline in [false, true] {
        let world = World::new();
        let first = Journal::stale("w1", 3 * HOUR_MS);
        world.add(&first);
        let (entry, _) = write_due_entry(&world, &first.id, Some(EARLIER_SUCCESS_MS));
        let locks = world.leases().join("output-locks");
        fs::create_dir(&locks).expect("mkdir");
        let held = locks.join("6f1c3b7e2a4d4c8e9b1f3e5a7d9c2b10");
        let holder = hold_flock(Command::new("flock"), &held, ":");
        let wait = if rchs_own_deadline {
            "sleep 1\necho 'Error: same-id job deadline elapsed during artifact recovery (use the retained journal for same-id retry); journal retained; no command replayed' >&2\nexit 1"
        } else {
            "exec sleep 30"
        };
        let rch = world.fake_rch("rch", wait);
        let (code, document) = at_a_short_deadline(&world, &rch);
        release(holder);
        assert_eq!(code, 0, "{document}");
        let row = &document["leases"][0];
        assert_eq!(row["outcome"], "deferred", "{document}");
        assert!(
            row["error"].as_str().is_some_and(|e| e
                .contains("rch was waiting to publish into an output folder another process")
                && e.contains(utf8(&held))),
            "{row}"
        );
        assert_eq!(world.state()["leases"][&first.id], entry);
    }
    // The same deadline with no output folder held is the lease's failure.
    {
        let world = World::new();
        let first = Journal::stale("w1", 3 * HOUR_MS);
        world.add(&first);
        fs::create_dir(world.leases().join("output-locks")).expect("mkdir");
        fs::write(world.leases().join("output-locks/free"), "").expect("write");
        let rch = world.fake_rch("rch", "exec sleep 30");
        let (code, document) = at_a_short_deadline(&world, &rch);
        assert_eq!(code, 1, "{document}");
        assert_eq!(document["leases"][0]["outcome"], "failed", "{document}");
    }
}

// ------------------------------------------------------ no usable locks

#[test]
fn a_file_system_without_usable_locks_is_74_once_naming_it() {
    for (version, answer) in [
        (
            "2.1.34",
            "cannot inspect exclusive job journal ownership: No locks available (os error 37)"
                .to_owned(),
        ),
        (
            "2.1.20",
            format!(
                "cannot acquire exclusive job recovery: {LOCK_IO_ERROR}; another recovery may be active; retry the same wrapper"
            ),
        ),
        (
            "2.1.34",
            format!(
                "output publication into /data/projects/myproj is held by another wrapper: {LOCK_IO_ERROR}"
            ),
        ),
    ] {
        let ran = first_answers(version, &format!("Error: {answer}\n"));
        ran.held_and_stopped(74, &answer, "no usable lock");
        let error = ran.first_error();
        assert!(
            error.contains("lies on ") && error.contains("which gives rch no usable lock"),
            "{error}"
        );
        // Once for the run.
        assert_eq!(
            run_error(&ran).matches("no usable lock").count(),
            1,
            "{}",
            ran.document
        );
    }
}

// ----------------------------------------------------------------- races

#[test]
fn a_race_with_another_writer_is_deferred_to_the_next_run() {
    for answer in [
        "recovery lock path changed during acquisition",
        "durable job identity changed before recovery; reload the same wrapper, never replay",
        "job journal changed during owner inspection; retry with its latest evidence",
        "recovery journal changed during daemon reconciliation; acknowledgement refused",
    ] {
        let ran = first_answers("2.1.34", &format!("Error: {answer}\n"));
        assert_eq!(ran.code, 0, "{answer}: {}", ran.document);
        ran.first_not_charged(answer);
        ran.went_on(answer);
        assert!(
            ran.first_error().contains("retried next run"),
            "{}",
            ran.first_error()
        );
    }
}

// ------------------------------------------------------- the lock file

/// What the pre-start look finds, for each of the four conditions rch
/// refuses, with its own fix: chmod 600 only for the mode.
#[test]
fn each_lock_rch_refuses_is_found_before_the_start_with_its_own_fix() {
    type Make = fn(&World, &Path);
    let cases: Vec<(&str, Make, &str)> = vec![
        (
            "open to others",
            |_, lock| {
                fs::write(lock, "").expect("write");
                fs::set_permissions(lock, fs::Permissions::from_mode(0o644)).expect("chmod");
            },
            "chmod 600",
        ),
        (
            "two links",
            |world, lock| {
                fs::write(lock, "").expect("write");
                fs::set_permissions(lock, fs::Permissions::from_mode(0o600)).expect("chmod");
                fs::hard_link(lock, world.path("backup-copy.lock")).expect("link");
            },
            "remove the extra link",
        ),
        (
            "a folder",
            |_, lock| fs::create_dir(lock).expect("mkdir"),
            "remove it (rm -r",
        ),
        (
            "a symbolic link",
            |world, lock| {
                let target = world.path("elsewhere.lock");
                fs::write(&target, "").expect("write");
                fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).expect("chmod");
                std::os::unix::fs::symlink(&target, lock).expect("symlink");
            },
            "remove it (rm",
        ),
        (
            "another owner",
            |_, lock| {
                fs::write(lock, "").expect("write");
                fs::set_permissions(lock, fs::Permissions::from_mode(0o600)).expect("chmod");
                give_to_nobody(lock);
            },
            "remove it as root (sudo rm",
        ),
    ];
    for (what, make, fix) in cases {
        if what == "another owner" && !is_root() {
            continue;
        }
        let world = World::new();
        let first = Journal::stale("w1", 3 * HOUR_MS);
        world.add(&first);
        let second = world.will_complete(Journal::stale("w2", 2 * HOUR_MS));
        let (entry, _) = write_due_entry(&world, &first.id, Some(EARLIER_SUCCESS_MS));
        let lock = world.leases().join(format!("{}.recovery.lock", first.id));
        make(&world, &lock);
        let started = world.path("started.log");
        let rch = world.fake_rch(
            "rch",
            &format!(
                "echo \"$3\" >> '{}'\ncp '{}/'\"$3.json\" \"$leases/$3.json\"",
                started.display(),
                world.path("done").display()
            ),
        );
        let (code, document) = world.json(&["--rch", utf8(&rch)]);
        assert_eq!(code, 74, "{what}: {document}");
        let rows = outcomes(&document);
        assert!(
            rows.contains(&(first.id.clone(), "deferred".to_owned())),
            "{what}: {document}"
        );
        assert!(
            rows.contains(&(second.clone(), "recovered".to_owned())),
            "{what}: {document}"
        );
        assert_eq!(
            fs::read_to_string(&started).expect("started"),
            format!("{second}\n"),
            "{what}"
        );
        let row = &document["leases"]
            .as_array()
            .expect("leases")
            .iter()
            .find(|row| row["wrapper_id"] == first.id.as_str())
            .expect("row")["error"];
        let error = row.as_str().expect("error");
        assert!(
            error.contains("unsafe recovery lock file") && error.contains(fix),
            "{what}: {error}"
        );
        assert_eq!(
            error.contains("chmod"),
            fix == "chmod 600",
            "{what}: {error}"
        );
        assert_eq!(world.state()["leases"][&first.id], entry, "{what}");

        // explain and doctor say the same.
        let output = world
            .command(&["explain", "--json", &first.id])
            .output()
            .expect("explain");
        let explained: Value = serde_json::from_str(&stdout(&output)).expect("json");
        assert!(
            explained["journals"][0]["recovery_lock"]
                .as_str()
                .is_some_and(|e| e.contains(fix)),
            "{what}: {explained}"
        );
        let output = world
            .command(&["doctor", "--json", "--rch", utf8(&rch)])
            .output()
            .expect("doctor");
        let doctor: Value = serde_json::from_str(&stdout(&output)).expect("json");
        let journals = common::doctor_rows::row(&doctor, "journals");
        assert_eq!(journals["status"], "warn", "{what}: {journals}");
        assert!(
            journals["fix"].as_str().is_some_and(|f| f.contains(fix)),
            "{what}: {journals}"
        );
    }
}

/// rch's own words for a lock that became unsafe after the look: the
/// lease is deferred with the fix a look afterwards finds; rch 2.1.16
/// takes no lock, so a lock it would never open is no reason to wait.
#[test]
fn rchs_unsafe_lock_answer_is_read_and_releases_before_the_lock_ignore_it() {
    let ran = first_answers_after(
        "2.1.34",
        "l=\"$leases/$3.recovery.lock\"; : > \"$l\"; chmod 644 \"$l\"",
        "Error: unsafe recovery lock file\n",
    );
    assert_eq!(ran.code, 74, "{}", ran.document);
    ran.first_not_charged("unsafe");
    ran.went_on("unsafe");
    assert!(
        ran.first_error()
            .ends_with("(rch: Error: unsafe recovery lock file)"),
        "{}",
        ran.first_error()
    );
    assert!(
        ran.first_error().contains("fix: chmod 600"),
        "{}",
        ran.first_error()
    );

    let world = World::new();
    let journal = Journal::stale("w1", 3 * HOUR_MS);
    let id = world.will_complete(journal);
    let lock = world.leases().join(format!("{id}.recovery.lock"));
    fs::write(&lock, "").expect("write");
    fs::set_permissions(&lock, fs::Permissions::from_mode(0o644)).expect("chmod");
    let capabilities = capabilities_says("2.1.16");
    let rch = world.fake_rch_with(
        "rch",
        &FakeRch {
            version: Some("echo 'rch 2.1.16'"),
            capabilities: Some(&capabilities),
            recover: &format!(
                "cp '{}/'\"$3.json\" \"$leases/$3.json\"",
                world.path("done").display()
            ),
            ..FakeRch::default()
        },
    );
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["leases"][0]["outcome"], "recovered", "{document}");
}

// ------------------------------------------- read-only, permission denied

/// Each of `answers` (an OS error of rch's that a look at the lease
/// directory does not confirm) is the first lease's failure, charged, its
/// error saying where to look instead (`words`), and the run goes on.
fn charged_elsewhere(answers: &[&str], words: &str) {
    for answer in answers {
        let ran = first_answers("2.1.34", &format!("Error: {answer}\n"));
        assert_eq!(ran.code, 1, "{answer}: {}", ran.document);
        ran.first_charged(answer);
        ran.went_on(answer);
        assert!(ran.first_error().contains(words), "{}", ran.first_error());
    }
}

/// `Permission denied` and `Read-only file system` that are not the lease
/// directory's (a look finds it, the journal and its lock writable): the
/// lease's failure, and the run goes on.
#[test]
fn a_refusal_elsewhere_is_the_leases_failure_and_the_run_goes_on() {
    charged_elsewhere(
        &[
            "failed to publish into /data/projects/myproj/target: Permission denied (os error 13)",
            "Read-only file system (os error 30)",
        ],
        "the refusal is elsewhere",
    );
}

/// The lease directory made read-only while rch ran: 74, as the check
/// before the start says, nothing charged, no further start.
#[test]
fn a_lease_directory_gone_read_only_under_rch_is_74() {
    if !root_or_skip("a_lease_directory_gone_read_only_under_rch_is_74") {
        return;
    }
    let world = World::new();
    fs::set_permissions(world.dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    let first = Journal::stale("w1", 3 * HOUR_MS);
    world.add(&first);
    let second = world.will_complete(Journal::stale("w1", 2 * HOUR_MS));
    let (entry, _) = write_due_entry(&world, &first.id, Some(EARLIER_SUCCESS_MS));
    let started = world.path("started.log");
    let rch = world.fake_rch(
        "rch",
        &format!(
            "echo \"$3\" >> '{}'\n\
             if [ \"$3\" = '{}' ]; then mount -o remount,bind,ro \"$leases\"; echo 'Error: Read-only file system (os error 30)' >&2; exit 1; fi\n\
             cp '{}/'\"$3.json\" \"$leases/$3.json\"",
            started.display(),
            first.id,
            world.path("done").display()
        ),
    );
    let script = format!(
        "set -eu\nmount --bind \"$1/job-leases\" \"$1/job-leases\"\n\
         code=0; '{BIN}' --lease-dir \"$1/job-leases\" --state-file \"$1/state/backoff.json\" --rch '{}' --json > \"$1/out.json\" 2> \"$1/err\" || code=$?\n\
         echo \"$code\" > \"$1/code\"",
        rch.display()
    );
    let document = in_namespace(&world, &script, 74);
    stopped_after_the_first(
        &document,
        [&first.id, &second],
        &started,
        &[
            "is read-only (mounted ro)",
            "(rch: Error: Read-only file system",
        ],
    );
    assert_eq!(world.state()["leases"][&first.id], entry);
}

// ------------------------------------------------------ no space, quota

/// shared/repro/wave7/r1: ENOSPC or EDQUOT while the lease directory has
/// room is somewhere else (the project's output folder, a worker): the
/// lease's failure, charged, and the run goes on with the next lease.
/// While the lease directory's file system is short now (a second
/// `fstatvfs`): 75, nothing charged, no further start.
#[test]
fn no_space_is_the_lease_directorys_only_when_it_is_short_now() {
    charged_elsewhere(
        &[
            "failed to publish recovered outputs into /data/projects/myproj/target: No space left on device (os error 28)",
            "failed to stage outputs: Disk quota exceeded (os error 122)",
        ],
        "the shortage is elsewhere",
    );
    if !root_or_skip("no_space_is_the_lease_directorys_only_when_it_is_short_now") {
        return;
    }
    let world = World::new();
    fs::set_permissions(world.dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    let first = Journal::stale("w1", 3 * HOUR_MS);
    let second = Journal::stale("w1", 2 * HOUR_MS);
    let src = world.path("src");
    fs::create_dir(&src).expect("mkdir");
    for journal in [&first, &second] {
        fs::write(src.join(journal.file_name()), journal.text()).expect("write");
    }
    let started = world.path("started.log");
    // rch fills the file system, then meets ENOSPC rewriting the journal.
    let rch = world.fake_rch(
        "rch",
        &format!(
            "echo \"$3\" >> '{}'\n\
             dd if=/dev/zero of=\"$leases/../filler\" bs=64k 2>/dev/null || true\n\
             echo 'Error: failed to persist recovery journal: No space left on device (os error 28)' >&2; exit 1",
            started.display()
        ),
    );
    let script = format!(
        r#"set -eu
W=$1
mkdir "$W/fs"
mount -t tmpfs -o size=4m,mode=0755 tmpfs "$W/fs"
mkdir -p "$W/fs/state/job-leases"
cp "$W"/src/*.json "$W/fs/state/job-leases/"
code=0
env -i PATH=/usr/bin:/bin RCH_STATE_HOME="$W/fs/state" '{BIN}' --rch '{rch}' --state-file "$W/state.json" --json > "$W/out.json" 2> "$W/err" || code=$?
echo "$code" > "$W/code"
umount "$W/fs""#,
        rch = rch.display()
    );
    let document = in_namespace(&world, &script, 75);
    stopped_after_the_first(
        &document,
        [&first.id, &second.id],
        &started,
        &["has no room for rch's rewrite"],
    );
}

/// Runs `script` in a private mount namespace (`$1` the world's folder),
/// where it runs the binary with `--json` into `$1/out.json`, its stderr
/// into `$1/err` and its exit code into `$1/code`, which must be `code`.
/// The document.
fn in_namespace(world: &World, script: &str, code: i32) -> Value {
    let output = private_mount_namespace(script)
        .arg(world.dir.path())
        .output()
        .expect("unshare");
    assert!(output.status.success(), "{}", stderr(&output));
    let err = fs::read_to_string(world.path("err")).unwrap_or_default();
    assert_eq!(
        fs::read_to_string(world.path("code")).expect("code").trim(),
        code.to_string(),
        "{err}"
    );
    serde_json::from_str(&fs::read_to_string(world.path("out.json")).expect("out")).expect("json")
}

/// Both leases deferred, only the first started (noted in `started`), and
/// the run's error holding each of `words`.
fn stopped_after_the_first(document: &Value, ids: [&String; 2], started: &Path, words: &[&str]) {
    assert_eq!(
        outcomes(document),
        [
            (ids[0].clone(), "deferred".to_owned()),
            (ids[1].clone(), "deferred".to_owned())
        ],
        "{document}"
    );
    let error = document["error"].as_str().unwrap_or("");
    assert!(
        words.iter().all(|words| error.contains(words)),
        "{document}"
    );
    assert_eq!(
        fs::read_to_string(started).expect("started"),
        format!("{}\n", ids[0])
    );
}

// ------------------------------------------ outside the Error: line

/// A phrase of the table that stands anywhere but in rch's `Error:` line
/// (a log line, a warning, a `Caused by` line) is not rch's answer: the
/// lease failed.
#[test]
fn the_phrase_outside_the_error_line_counts_for_nothing() {
    for stderr in [
        " INFO rch::hook: cannot acquire exclusive job recovery: journal is held by another handle; retry the same wrapper\nError: ssh: connect to host w1 port 22: Connection refused\n",
        "Error: failed to publish recovered outputs into /data/projects/myproj/target\n\nCaused by:\n    No space left on device (os error 28)\n",
        "warning: Daemon socket not found at /run/user/0/rch.sock\nError: same-id remote execution has no durable completion yet; command was not replayed\n",
        "Error: Failed to parse \"/home/u/.config/rch/config.toml\": no\nError: remote lo completion unconfirmed\n",
    ] {
        let ran = first_answers("2.1.34", stderr);
        assert_eq!(ran.code, 1, "{stderr}: {}", ran.document);
        ran.first_charged(stderr);
        ran.went_on(stderr);
    }
}

// --------------------------------------------------- the 24-hour wait

/// rch 2.1.34 ends its 24 h wait only for a heartbeat above 0: a lease
/// whose heartbeat is 0 is stuck, not retried every run.
#[test]
fn a_24_hour_wait_with_heartbeat_0_is_stuck() {
    let world = World::new();
    let journal = Journal::stale("w1", 0).set("heartbeat_unix_ms", 0.into());
    world.add(&journal);
    let started = world.path("started.log");
    let rch = world.fake_rch(
        "rch",
        &format!(
            "echo \"$3\" >> '{}'\necho 'Error: daemon has no record of recovered build 30052631078502447; acknowledgement waits until the lease is 24h old' >&2\nexit 1",
            started.display()
        ),
    );
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    assert_eq!(code, 0, "{document}");
    let row = &document["leases"][0];
    assert_eq!(row["outcome"], "stuck", "{document}");
    assert_eq!(row["hold"], "stuck", "{row}");
    assert!(
        row["error"]
            .as_str()
            .is_some_and(|e| e.contains("which is 0")),
        "{row}"
    );
    let entry = &world.state()["leases"][&journal.id];
    assert_eq!(entry["failures"], 0, "{entry}");
    // Not retried by the next run.
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(
        fs::read_to_string(&started)
            .expect("started")
            .lines()
            .count(),
        1
    );
}

// ------------------------------------------ read back after any ending

/// shared/repro/wave7/r8: an rch that completed the journal and then hung
/// (killed at the deadline), or was killed by a signal after completing
/// it: the journal read back is complete, so the lease is recovered.
#[test]
fn a_child_ended_at_the_deadline_or_by_a_signal_after_completing_is_recovered() {
    for (what, then) in [("deadline", "exec sleep 30"), ("signal", "kill -9 $$")] {
        let world = World::new();
        let id = world.will_complete(Journal::stale("w1", 3 * HOUR_MS));
        write_due_entry(&world, &id, Some(EARLIER_SUCCESS_MS));
        let rch = world.fake_rch(
            "rch",
            &format!(
                "cp '{}/'\"$3.json\" \"$leases/$3.json.tmp\" && mv \"$leases/$3.json.tmp\" \"$leases/$3.json\"\n{then}",
                world.path("done").display()
            ),
        );
        let (code, document) = at_a_short_deadline(&world, &rch);
        assert_eq!(code, 0, "{what}: {document}");
        let row = &document["leases"][0];
        assert_eq!(row["outcome"], "recovered", "{what}: {document}");
        assert!(
            row["note"]
                .as_str()
                .is_some_and(|n| n.contains("read back is complete")),
            "{what}: {row}"
        );
        assert!(
            world.state()["leases"]
                .as_object()
                .expect("leases")
                .is_empty(),
            "{what}"
        );
    }
}

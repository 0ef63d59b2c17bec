//! `rch-sweep explain` of the real binary over a lease directory holding a
//! candidate and one journal per skip reason that can be made here: it agrees
//! with the dry run, shows every check in order with its evidence, reports
//! missing journals, and reads without locking or writing anything. Also the
//! `detail` of `--verbose` rows.

mod common;

use common::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::os::unix::fs::symlink;

/// The order of SPEC's table.
const CHECKS: [&str; 12] = REASONS;

/// A lease directory with one journal per verdict; `expected` maps each
/// entry name to the verdict it must get (`candidate` or a skip reason).
struct Mixed {
    world: World,
    expected: BTreeMap<String, &'static str>,
    candidate: String,
    backed_off: String,
    live: String,
    /// A 3 MiB candidate, and a journal past the 64 MiB limit.
    big: String,
    too_big: String,
    /// A live PID with no identity recorded.
    unrecorded: String,
}

impl Mixed {
    fn new() -> Mixed {
        let world = World::new();
        let mut expected = BTreeMap::new();
        let mut add = |journal: &Journal, verdict: &'static str| {
            world.add(journal);
            expected.insert(journal.file_name(), verdict);
        };
        let candidate = Journal::stale("hz4", 30 * HOUR_MS);
        let backed_off = Journal::stale("w2", 2 * HOUR_MS);
        add(&candidate, "candidate");
        add(&backed_off, "candidate");
        add(&Journal::stale("hz4", HOUR_MS).completed(0), "terminal");
        add(
            &Journal::stale("hz4", HOUR_MS).set_recipe("retired", json!(true)),
            "not_owning",
        );
        let unadmitted = Journal::stale("hz4", HOUR_MS);
        let id = unadmitted.id.clone();
        add(
            &unadmitted.set("identity", json!({"local_wrapper_id": id})),
            "not_admitted",
        );
        add(&Journal::stale("hz4", 1000), "heartbeat_fresh");
        add(
            &Journal::stale("hz4", HOUR_MS).set("wrapper_pid", json!(1)),
            "no_pid",
        );
        // The test process itself, with its real identity: a live owner.
        let live = Journal::stale("hz4", HOUR_MS).owned_by_this_process();
        add(&live, "owner_alive");
        add(
            &Journal::stale("hz4", HOUR_MS).set("wrapper_pid", json!(3_000_000_000u32)),
            "owner_unverified",
        );
        add(
            &Journal::stale("hz4", HOUR_MS).set("schema_version", json!(2)),
            "malformed",
        );
        // A name rch never writes, holding a recoverable journal.
        world.write("notes.json", Journal::stale("hz4", HOUR_MS).text());
        expected.insert("notes.json".into(), "bad_name");
        // A link to a recoverable journal, and a folder with a journal's name.
        let target = world.path("elsewhere.json");
        std::fs::write(&target, Journal::stale("hz4", HOUR_MS).text()).expect("write");
        let link = format!("{}.json", new_id());
        symlink(&target, world.leases().join(&link)).expect("symlink");
        expected.insert(link, "not_regular");
        let folder = format!("{}.json", new_id());
        std::fs::create_dir(world.leases().join(&folder)).expect("mkdir");
        expected.insert(folder, "not_regular");
        // A large build's journal (3 MiB of output fingerprints): judged on
        // its merits. One past the 64 MiB limit (a journal followed by a
        // sparse stretch of zeros) is not read at all.
        let big = Journal::stale("fsn1", 4 * HOUR_MS).with_outputs(26_000);
        world.add(&big);
        expected.insert(big.file_name(), "candidate");
        let too_big = Journal::stale("hz4", HOUR_MS);
        std::fs::File::options()
            .write(true)
            .open(world.add(&too_big))
            .and_then(|file| file.set_len(64 * 1024 * 1024 + 1))
            .expect("extend");
        expected.insert(too_big.file_name(), "unreadable");
        // A live PID, but nothing recorded to tell it from a reused one.
        let unrecorded = Journal::stale("hz4", HOUR_MS)
            .set("wrapper_pid", json!(std::process::id()))
            .remove("boot_id")
            .remove("process_start_ticks");
        world.add(&unrecorded);
        expected.insert(unrecorded.file_name(), "owner_unverified");
        if is_root() {
            let foreign = Journal::stale("hz4", HOUR_MS);
            let path = world.add(&foreign);
            std::os::unix::fs::chown(&path, Some(65534), Some(65534)).expect("chown");
            expected.insert(foreign.file_name(), "foreign_owner");
        }
        // The backed-off candidate fails again in an hour.
        let next_attempt = now_ms() + HOUR_MS;
        std::fs::create_dir_all(world.state_file().parent().expect("state folder")).expect("mkdir");
        std::fs::write(
            world.state_file(),
            json!({"version": 1, "leases": {backed_off.id.clone(): {
                "failures": 2, "next_attempt_unix_ms": next_attempt,
                "last_attempt_unix_ms": now_ms(), "last_error": "exit status: 1: worker unreachable",
                "worker_id": "w2", "build_id": 30052631078502447u64}}})
            .to_string(),
        )
        .expect("state file");
        Mixed {
            world,
            expected,
            candidate: candidate.id,
            backed_off: backed_off.id,
            live: live.file_name(),
            big: big.file_name(),
            too_big: too_big.file_name(),
            unrecorded: unrecorded.file_name(),
        }
    }

    /// `explain --json` of `names`; (exit code, document).
    fn explain(&self, names: &[String]) -> (i32, Value) {
        let mut args = vec!["explain".to_owned(), "--json".to_owned()];
        args.extend(names.iter().cloned());
        let output = self.run(&args);
        let document = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
            panic!(
                "explain printed no JSON document ({error}): {}\nstderr: {}",
                stdout(&output),
                stderr(&output)
            )
        });
        (output.status.code().unwrap_or(-1), document)
    }

    /// The binary with `args` (a subcommand first) and the world's paths.
    fn run(&self, args: &[String]) -> std::process::Output {
        let (command, rest) = args.split_first().expect("a command");
        World::bare_command()
            .arg(command)
            .arg("--lease-dir")
            .arg(self.world.leases())
            .arg("--state-file")
            .arg(self.world.state_file())
            .args(rest)
            .output()
            .expect("run rch-sweep")
    }

    /// The dry run's verdict per entry name (`--dry-run --json -v`).
    fn dry_run_verdicts(&self) -> (BTreeMap<String, String>, Value) {
        let (code, document) = self.world.json(&["--dry-run", "-v"]);
        assert_eq!(code, 0, "{document}");
        let verdicts = document["leases"]
            .as_array()
            .expect("leases")
            .iter()
            .map(|row| match row["outcome"].as_str() {
                Some("skipped") => (
                    row["file"].as_str().expect("file").to_owned(),
                    row["reason"].as_str().expect("reason").to_owned(),
                ),
                _ => (
                    format!("{}.json", row["wrapper_id"].as_str().expect("wrapper id")),
                    "candidate".to_owned(),
                ),
            })
            .collect();
        (verdicts, document)
    }

    /// Each entry name in one of the three forms an argument may take.
    fn names_in_every_form(&self) -> Vec<String> {
        self.expected
            .keys()
            .enumerate()
            .map(|(index, file)| match index % 3 {
                0 => file.clone(),
                1 => self.world.leases().join(file).display().to_string(),
                _ => file.strip_suffix(".json").unwrap_or(file).to_owned(),
            })
            .collect()
    }
}

/// `3,145,728`: a byte count as explain prints it.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn journals(document: &Value) -> &Vec<Value> {
    document["journals"].as_array().expect("journals array")
}

fn by_file(document: &Value) -> BTreeMap<String, Value> {
    journals(document)
        .iter()
        .map(|journal| {
            (
                journal["file"].as_str().expect("file").to_owned(),
                journal.clone(),
            )
        })
        .collect()
}

/// The checks of a journal: names in order, results, evidence.
fn checks(journal: &Value) -> Vec<(String, bool, String)> {
    journal["checks"]
        .as_array()
        .expect("checks array")
        .iter()
        .map(|check| {
            (
                check["check"].as_str().expect("check name").to_owned(),
                check["passed"].as_bool().expect("passed"),
                check["evidence"].as_str().expect("evidence").to_owned(),
            )
        })
        .collect()
}

#[test]
fn explain_agrees_with_the_dry_run_and_shows_every_check_in_order() {
    let mixed = Mixed::new();
    let (dry_run, _) = mixed.dry_run_verdicts();
    // The directory holds what it was built to hold, or this test proves little.
    let expected: BTreeMap<String, String> = mixed
        .expected
        .iter()
        .map(|(file, verdict)| (file.clone(), (*verdict).to_owned()))
        .collect();
    assert_eq!(dry_run, expected);

    let (code, document) = mixed.explain(&mixed.names_in_every_form());
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["version"], 1);
    let explained = by_file(&document);
    assert_eq!(
        explained.keys().collect::<Vec<_>>(),
        dry_run.keys().collect::<Vec<_>>()
    );
    for (file, journal) in &explained {
        let verdict = &dry_run[file];
        let checks = checks(journal);
        let names: Vec<&str> = checks.iter().map(|(name, _, _)| name.as_str()).collect();
        assert_eq!(names, CHECKS[..names.len()], "{file}: table order");
        assert!(
            checks.iter().all(|(_, _, evidence)| !evidence.is_empty()),
            "{file}: every check carries evidence: {checks:?}"
        );
        if verdict == "candidate" {
            assert_eq!(journal["verdict"], "candidate", "{file}");
            assert!(journal.get("reason").is_none(), "{file}");
            assert_eq!(names.len(), CHECKS.len(), "{file}: all checks run");
            assert!(checks.iter().all(|(_, passed, _)| *passed), "{file}");
        } else {
            assert_eq!(journal["verdict"], "skipped", "{file}");
            assert_eq!(journal["reason"], verdict.as_str(), "{file}");
            let (last, rest) = checks.split_last().expect("a deciding check");
            assert_eq!(&last.0, verdict, "{file}: stops at the failing check");
            assert!(!last.1, "{file}: the deciding check failed");
            assert!(rest.iter().all(|(_, passed, _)| *passed), "{file}");
            assert_eq!(journal["next"], "skipped", "{file}");
        }
        let wrapper_id = file.strip_suffix(".json").expect("json name");
        if wrapper_id.starts_with("rchw-") {
            assert_eq!(journal["wrapper_id"], wrapper_id, "{file}");
        } else {
            assert!(journal.get("wrapper_id").is_none(), "{file}");
        }
    }

    // The live owner's evidence names its PID and the identity that matched.
    let live = checks(&explained[&mixed.live]);
    let (_, _, evidence) = live.last().expect("owner check");
    let me = std::process::id();
    assert!(
        evidence.contains(&format!("pid {me}")) && evidence.contains("= recorded"),
        "{evidence}"
    );

    // The size check shows the journal's size: a large one is read and
    // judged, one past the limit is not read.
    let size = |file: &str| checks(&explained[file])[3].clone();
    let big_size = std::fs::metadata(mixed.world.leases().join(&mixed.big))
        .expect("big")
        .len();
    assert!(big_size > 3 * 1024 * 1024, "{big_size}");
    assert_eq!(
        size(&mixed.big),
        (
            "unreadable".to_owned(),
            true,
            format!("{} bytes, within the 64 MiB limit", thousands(big_size))
        )
    );
    assert_eq!(
        size(&mixed.too_big),
        (
            "unreadable".to_owned(),
            false,
            "67,108,865 bytes, over the 64 MiB limit: not read".to_owned()
        )
    );
    // A live PID with no identity recorded may have been reused.
    let unrecorded = checks(&explained[&mixed.unrecorded]);
    let me = std::process::id();
    assert_eq!(unrecorded[10].0, "owner_alive");
    assert!(unrecorded[10].1, "not taken for a live owner");
    let (check, passed, evidence) = &unrecorded[11];
    assert_eq!((check.as_str(), *passed), ("owner_unverified", false));
    assert!(
        evidence.starts_with(&format!("pid {me}: /proc/{me}/stat state "))
            && evidence.ends_with(
                "no identity recorded to tell the owner from a process that reused the PID: unverified"
            ),
        "{evidence}"
    );

    // A candidate backing off shows its entry; the other would be recovered.
    let backed_off = &explained[&format!("{}.json", mixed.backed_off)];
    assert_eq!(backed_off["next"], "backing_off");
    assert_eq!(backed_off["backoff"]["failures"], 2);
    assert_eq!(
        backed_off["backoff"]["last_error"],
        "exit status: 1: worker unreachable"
    );
    let candidate = &explained[&format!("{}.json", mixed.candidate)];
    assert_eq!(candidate["next"], "would_recover");
    assert_eq!(candidate["backoff"], Value::Null);
    let (_, _, owner) = checks(candidate)[10].clone();
    assert!(owner.contains("absent from /proc"), "{owner}");
}

#[test]
fn a_missing_journal_is_reported_and_the_others_are_still_explained() {
    let mixed = Mixed::new();
    let missing = new_id();
    let outside = mixed.world.path("elsewhere.json");
    let names = vec![
        mixed.candidate.clone(),
        missing.clone(),
        outside.display().to_string(),
        mixed.live.clone(),
    ];
    let (code, document) = mixed.explain(&names);
    assert_eq!(code, 1, "{document}");
    let journals = journals(&document);
    assert_eq!(journals.len(), 4, "{document}");
    assert_eq!(journals[0]["verdict"], "candidate");
    assert_eq!(journals[3]["verdict"], "skipped");
    for (journal, file) in [
        (&journals[1], format!("{missing}.json")),
        (&journals[2], "elsewhere.json".to_owned()),
    ] {
        assert_eq!(journal["file"], file.as_str());
        assert_eq!(journal["verdict"], "missing", "{journal}");
        assert!(
            !journal["error"].as_str().unwrap_or_default().is_empty(),
            "{journal}"
        );
        assert_eq!(journal["checks"], json!([]));
        assert_eq!(journal["next"], Value::Null);
        assert!(journal.as_object().expect("object").contains_key("backoff"));
    }
    assert_eq!(journals[1]["wrapper_id"], missing.as_str());
    assert!(
        journals[2]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("not a journal inside the lease directory"),
        "{}",
        journals[2]
    );

    let human = mixed.run(&["explain".into(), missing.clone()]);
    assert_eq!(human.status.code(), Some(1));
    assert!(
        stdout(&human).contains("verdict  missing"),
        "{}",
        stdout(&human)
    );
}

#[test]
fn explain_works_while_a_sweep_holds_the_lock_and_changes_nothing() {
    let mixed = Mixed::new();
    let state_before = std::fs::read(mixed.world.state_file()).expect("state");
    let state_dir = mixed
        .world
        .state_file()
        .parent()
        .expect("folder")
        .to_owned();
    let lock_path = rch_sweep::state::lock::lock_path(&mixed.world.state_file());
    let lock = std::fs::File::create(&lock_path).expect("lock file");
    // SAFETY: a valid open descriptor.
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let folder_before = files_in(&state_dir);
    let leases_before = files_in(&mixed.world.leases());

    let names = mixed.names_in_every_form();
    let (code, document) = mixed.explain(&names);
    assert_eq!(code, 0, "{document}");
    assert_eq!(journals(&document).len(), mixed.expected.len());
    let mut args = vec!["explain".to_owned()];
    args.extend(names);
    let human = mixed.run(&args);
    assert_eq!(human.status.code(), Some(0), "{}", stderr(&human));

    // A real run is refused meanwhile: the lock is really held.
    let refused = mixed.world.run(&["--rch", "/bin/true"]);
    assert_eq!(refused.status.code(), Some(75), "{}", stderr(&refused));
    assert_eq!(
        std::fs::read(mixed.world.state_file()).expect("state"),
        state_before
    );
    assert_eq!(files_in(&state_dir), folder_before);
    assert_eq!(files_in(&mixed.world.leases()), leases_before);
    drop(lock);
}

#[test]
fn the_human_report_names_the_path_every_check_the_verdict_and_the_next_step() {
    let mixed = Mixed::new();
    let backed_off = format!("{}.json", mixed.backed_off);
    let output = mixed.run(&["explain".into(), backed_off.clone(), mixed.live.clone()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let path = mixed.world.leases().join(&backed_off);
    assert!(
        text.contains(&format!("path     {}", path.display())),
        "{text}"
    );
    for check in CHECKS {
        assert!(text.contains(&format!("pass  {check}")), "{check}: {text}");
    }
    assert!(text.contains("verdict  candidate"), "{text}");
    assert!(text.contains("2 failures (worker w2"), "{text}");
    assert!(
        text.contains("last error: exit status: 1: worker unreachable"),
        "{text}"
    );
    assert!(text.contains("next run backing_off until "), "{text}");
    let me = std::process::id();
    assert!(text.contains("FAIL  owner_alive"), "{text}");
    assert!(
        text.contains(&format!("pid {me}: /proc/{me}/stat state ")),
        "{text}"
    );
    assert!(text.contains("verdict  skipped: owner_alive"), "{text}");
}

#[test]
fn a_corrupt_state_file_is_warned_about_and_explained_without_backoff() {
    let mixed = Mixed::new();
    std::fs::write(mixed.world.state_file(), "{ not json").expect("write");
    let output = mixed.run(&["explain".into(), "--json".into(), mixed.backed_off.clone()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("does not parse"),
        "{}",
        stderr(&output)
    );
    let document: Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(document["journals"][0]["backoff"], Value::Null);
    assert_eq!(document["journals"][0]["next"], "would_recover");
    assert_eq!(
        std::fs::read_to_string(mixed.world.state_file()).expect("state"),
        "{ not json",
        "left as it was"
    );
}

#[test]
fn verbose_rows_carry_the_evidence_of_the_deciding_check() {
    let mixed = Mixed::new();
    let (_, document) = mixed.dry_run_verdicts();
    let rows: Vec<&Value> = document["leases"]
        .as_array()
        .expect("leases")
        .iter()
        .filter(|row| row["outcome"] == "skipped")
        .collect();
    assert_eq!(
        rows.len(),
        mixed
            .expected
            .values()
            .filter(|verdict| **verdict != "candidate")
            .count()
    );
    let names: Vec<String> = rows
        .iter()
        .map(|row| row["file"].as_str().expect("file").to_owned())
        .collect();
    let (_, explained) = mixed.explain(&names);
    let explained = by_file(&explained);
    for row in &rows {
        let file = row["file"].as_str().expect("file");
        let detail = row["detail"].as_str().unwrap_or_default();
        assert!(!detail.is_empty(), "{row}");
        // The same words explain gives for the deciding check (the heartbeat
        // ages of two runs may differ by a second, so those only by prefix;
        // the live owner is this test process, running or sleeping as its
        // threads go, so its state letter is left out).
        let (_, _, evidence) = checks(&explained[file]).pop().expect("deciding check");
        if row["reason"] == "heartbeat_fresh" {
            assert!(detail.starts_with("heartbeat "), "{detail}");
        } else {
            assert_eq!(without_state(detail), without_state(&evidence), "{file}");
        }
    }
    let me = std::process::id();
    let live = rows
        .iter()
        .find(|row| row["reason"] == "owner_alive")
        .expect("live owner row");
    assert!(
        live["detail"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("pid {me}")),
        "{live}"
    );
    // Without --verbose there are no rows, so no detail is made.
    let (_, quiet) = mixed.world.json(&["--dry-run"]);
    assert!(
        quiet["leases"]
            .as_array()
            .expect("leases")
            .iter()
            .all(|row| row.get("detail").is_none())
    );

    let text = stdout(&mixed.world.run(&["--dry-run", "-v"]));
    let line = text
        .lines()
        .find(|line| line.contains(&mixed.live))
        .expect("a row for the live owner");
    assert!(
        line.contains("owner_alive: pid ") && line.contains(&format!("pid {me}")),
        "{line}"
    );
}

/// Owner evidence with the process's state letter (`state S,`) left out.
fn without_state(text: &str) -> String {
    match text.split_once(" state ") {
        Some((head, tail)) => {
            let rest = tail.split_once(',').map_or("", |(_, rest)| rest);
            format!("{head} state ?,{rest}")
        }
        None => text.to_owned(),
    }
}

//! The real sweep against fake `rch` scripts: concurrency and per-worker
//! exclusion, order, the child's argv and environment, completion checks,
//! backoff across runs, the state file, the lock and signals.

mod common;

use common::*;
use serde_json::json;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Lines of a log the fake scripts append to.
fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A fake rch that logs `start <id> <ns>` and `end <id> <ns>` around a
/// sleep, then exits with `exit`.
fn timing_rch(world: &World, sleep: &str, exit: i32) -> std::path::PathBuf {
    let log = world.path("calls.log");
    world.fake_rch(
        "rch",
        &format!(
            "echo \"start $3 $(date +%s%N)\" >> '{log}'\nsleep {sleep}\necho \"end $3 $(date +%s%N)\" >> '{log}'\nexit {exit}",
            log = log.display()
        ),
    )
}

struct Span {
    id: String,
    start: u128,
    end: u128,
}

fn spans(world: &World) -> Vec<Span> {
    let lines = log_lines(&world.path("calls.log"));
    let field = |line: &String, n: usize| line.split(' ').nth(n).unwrap_or_default().to_owned();
    lines
        .iter()
        .filter(|line| line.starts_with("start "))
        .map(|start| {
            let id = field(start, 1);
            let end = lines
                .iter()
                .find(|line| line.starts_with("end ") && field(line, 1) == id)
                .map(|line| field(line, 2).parse().unwrap_or(0))
                .unwrap_or(0);
            Span {
                start: field(start, 2).parse().unwrap_or(0),
                end,
                id,
            }
        })
        .collect()
}

#[test]
fn one_worker_runs_one_recovery_at_a_time_and_four_at_most() {
    let world = World::new();
    let journals: Vec<Journal> = (0..6)
        .map(|i| Journal::stale("hz4", (10 - i) * HOUR_MS))
        .collect();
    for journal in &journals {
        world.add(journal);
    }
    let rch = timing_rch(&world, "0.2", 1);
    let (code, document) = world.json(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(code, 1, "{document}");
    let spans = spans(&world);
    let started: Vec<&str> = spans.iter().map(|s| s.id.as_str()).collect();
    let expected: Vec<&str> = journals[..4].iter().map(|j| j.id.as_str()).collect();
    assert_eq!(started, expected, "oldest first, four of them");
    for pair in spans.windows(2) {
        assert!(pair[1].start >= pair[0].end, "same worker overlapped");
    }
    assert_eq!(document["attempted"], 4);
    assert_eq!(document["failed"], 4);
    assert_eq!(document["deferred"], 2);
    assert_eq!(document["candidates"], 6);
    let outcomes: Vec<String> = outcomes(&document).into_iter().map(|(_, o)| o).collect();
    assert_eq!(
        outcomes,
        [
            "failed", "failed", "failed", "failed", "deferred", "deferred"
        ]
    );
}

#[test]
fn four_workers_recover_in_parallel() {
    let world = World::new();
    for (i, worker) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        world.add(&Journal::stale(worker, (10 - i as u64) * HOUR_MS));
    }
    let rch = timing_rch(&world, "0.5", 1);
    let (code, document) = world.json(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(code, 1);
    let spans = spans(&world);
    assert_eq!(spans.len(), 4, "the start budget is 4");
    let last_start = spans.iter().map(|s| s.start).max().unwrap_or(0);
    let first_end = spans.iter().map(|s| s.end).min().unwrap_or(0);
    assert!(last_start < first_end, "all four ran at once");
    assert_eq!(document["deferred"], 1);
}

#[test]
fn max_recoveries_one_takes_the_oldest_heartbeat() {
    let world = World::new();
    let newer = Journal::stale("a", 2 * HOUR_MS);
    let oldest = Journal::stale("b", 9 * HOUR_MS);
    let middle = Journal::stale("c", 5 * HOUR_MS);
    for journal in [&newer, &oldest, &middle] {
        world.add(journal);
    }
    let rch = timing_rch(&world, "0", 1);
    let (_, document) = world.json(&[
        "--rch",
        rch.to_str().expect("utf8"),
        "--max-recoveries",
        "1",
    ]);
    let started: Vec<String> = spans(&world).into_iter().map(|s| s.id).collect();
    assert_eq!(started, std::slice::from_ref(&oldest.id));
    assert_eq!(
        outcomes(&document),
        [
            (oldest.id.clone(), "failed".to_owned()),
            (middle.id.clone(), "deferred".to_owned()),
            (newer.id.clone(), "deferred".to_owned()),
        ]
    );
}

#[test]
fn the_child_gets_exact_argv_the_socket_and_no_shell() {
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&journal);
    let seen = world.path("seen");
    let rch = world.fake_rch(
        "rch",
        &format!(
            "for arg in \"$@\"; do printf '%s\\n' \"$arg\"; done > '{seen}'\nprintf 'socket=%s\\n' \"$RCH_SOCKET_PATH\" >> '{seen}'\nexit 3",
            seen = seen.display()
        ),
    );
    // A socket name no shell may see unquoted, with a daemon answering
    // there: the run checks it and hands the child exactly that.
    let socket = world.path("rch test;$(x).sock");
    let _daemon = FakeDaemon::start(&socket, Reply::Healthy);
    let (code, document) = world.json(&[
        "--rch",
        rch.to_str().expect("utf8"),
        "--socket",
        socket.to_str().expect("utf8"),
        "--recover-timeout",
        "77",
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        log_lines(&seen),
        [
            "jobs".to_owned(),
            "recover".to_owned(),
            journal.id.clone(),
            "--timeout-secs".to_owned(),
            "77".to_owned(),
            format!("socket={}", socket.display()),
        ]
    );
    assert_eq!(document["leases"][0]["error"], "exit status: 3");
}

#[test]
fn exit_zero_without_completion_fails_and_leaves_the_journal_untouched() {
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS).settled(102);
    let path = world.add(&journal);
    let before = std::fs::read(&path).expect("read");
    let rch = world.fake_rch("rch", "exit 0");
    let (code, document) = world.json(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(code, 1);
    assert_eq!(
        document["leases"][0]["error"],
        "recovery command exited without durable daemon/delivery acknowledgement"
    );
    assert_eq!(std::fs::read(&path).expect("read"), before, "byte for byte");
    let entry = &world.state()["leases"][&journal.id];
    assert_eq!(entry["failures"], 1);
    assert_eq!(entry["worker_id"], "hz4");
    assert_eq!(entry["build_id"], 30052631078502447u64);
}

#[test]
fn exit_zero_with_the_completed_journal_recovers_and_clears_backoff() {
    let world = World::new();
    let id = world.will_complete(Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.completing_rch();
    std::fs::create_dir_all(world.state_file().parent().expect("parent")).expect("mkdir");
    std::fs::write(
        world.state_file(),
        json!({"version": 1, "leases": {id.clone(): {
            "failures": 3, "next_attempt_unix_ms": 0, "worker_id": "hz4", "build_id": 1}}})
        .to_string(),
    )
    .expect("state");
    let (code, document) = world.json(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["recovered"], 1);
    assert!(document["leases"][0]["duration_ms"].is_u64());
    let state = world.state();
    assert_eq!(state["leases"], json!({}));
    assert!(
        state["last_success_unix_ms"]
            .as_u64()
            .is_some_and(|ms| ms >= now_ms() - 60_000)
    );
    // The journal is terminal now: a second run has nothing to do.
    let (code, document) = world.json(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!((code, document["candidates"].clone()), (0, json!(0)));
    assert_eq!(document["skipped"], json!({"terminal": 1}));
}

#[test]
fn a_completed_journal_with_another_identity_is_not_success() {
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&journal);
    let rch = world.completing_rch();
    let name = journal.file_name();
    let replaced = journal
        .completed(0)
        .set("process_start_ticks", json!(987654321));
    std::fs::write(world.path("done").join(name), replaced.text()).expect("write");
    let (code, document) = world.json(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(code, 1);
    assert_eq!(
        document["leases"][0]["error"],
        "recovery journal identity changed; completion not confirmed"
    );
}

fn set_next_attempt(world: &World, id: &str, next: u64) {
    let mut state = world.state();
    state["leases"][id]["next_attempt_unix_ms"] = json!(next);
    std::fs::write(world.state_file(), state.to_string()).expect("write state");
}

#[test]
fn failures_back_off_doubling_across_runs() {
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&journal);
    let rch = world.fake_rch("rch", "echo 'worker hz4 unreachable' >&2\nexit 1");
    let args = [
        "--rch",
        rch.to_str().expect("utf8"),
        "--backoff-base",
        "60",
        "--backoff-max",
        "600",
    ];
    let mut previous_failures = 0;
    for (run, delay_s) in [(1u64, 60u64), (2, 120), (3, 240)] {
        let before = now_ms();
        let (code, document) = world.json(&args);
        let after = now_ms();
        assert_eq!(code, 1, "run {run}");
        let entry = world.state()["leases"][&journal.id].clone();
        assert_eq!(entry["failures"], run, "run {run}");
        assert!(entry["failures"].as_u64() > Some(previous_failures));
        previous_failures = run;
        let next = entry["next_attempt_unix_ms"].as_u64().expect("next");
        assert!(
            next >= before + delay_s * 1000 && next <= after + delay_s * 1000,
            "run {run}"
        );
        assert_eq!(
            entry["last_error"],
            "exit status: 1: worker hz4 unreachable"
        );
        assert_eq!(document["leases"][0]["failures"], run);
        assert_eq!(document["leases"][0]["next_attempt_unix_ms"], next);
        // A run before the next attempt leaves it alone.
        let (code, waiting) = world.json(&args);
        assert_eq!(code, 0);
        assert_eq!(outcomes(&waiting)[0].1, "backing_off");
        assert_eq!(world.state()["leases"][&journal.id]["failures"], run);
        set_next_attempt(&world, &journal.id, 1);
    }
    // A clock that jumped back: a next attempt beyond now + max is clamped.
    set_next_attempt(&world, &journal.id, now_ms() + 100 * HOUR_MS);
    let (_, document) = world.json(&args);
    let next = world.state()["leases"][&journal.id]["next_attempt_unix_ms"]
        .as_u64()
        .expect("next");
    assert!(next <= now_ms() + 600_000, "clamped to now + max");
    assert_eq!(outcomes(&document)[0].1, "backing_off");
    // Once the journal is gone, its entry is dropped.
    std::fs::remove_file(world.leases().join(journal.file_name())).expect("rm");
    let (code, _) = world.json(&args);
    assert_eq!(code, 0);
    assert_eq!(world.state()["leases"], json!({}));
}

#[test]
fn a_journal_that_vanished_or_changed_before_its_start_is_handled_without_the_client() {
    let world = World::new();
    let first = Journal::stale("hz4", 9 * HOUR_MS);
    let vanishing = Journal::stale("hz4", 8 * HOUR_MS);
    let moved = Journal::stale("hz4", 7 * HOUR_MS);
    for journal in [&first, &vanishing, &moved] {
        world.add(journal);
    }
    let moved_text = moved
        .text()
        .replace("\"worker_id\": \"hz4\"", "\"worker_id\": \"w9\"");
    std::fs::write(world.path("moved.json"), moved_text).expect("write");
    let log = world.path("calls.log");
    // The first recovery removes the second journal and moves the third to
    // another worker, as if their owners' work finished elsewhere.
    let rch = world.fake_rch(
        "rch",
        &format!(
            "echo \"$3\" >> '{log}'\nrm -f \"$leases/{vanishing}.json\"\ncp '{moved_src}' \"$leases/{moved}.json\"\nexit 1",
            log = log.display(),
            vanishing = vanishing.id,
            moved = moved.id,
            moved_src = world.path("moved.json").display(),
        ),
    );
    let (code, document) = world.json(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(code, 1);
    assert_eq!(
        log_lines(&log),
        std::slice::from_ref(&first.id),
        "only the first client ran"
    );
    assert_eq!(
        outcomes(&document),
        [
            (first.id.clone(), "failed".to_owned()),
            (vanishing.id.clone(), "vanished".to_owned()),
            (moved.id.clone(), "failed".to_owned()),
        ]
    );
    assert_eq!(
        document["leases"][2]["error"],
        "recovery admission changed after scanning; client was not started"
    );
    assert_eq!(document["attempted"], 3);
    assert_eq!(document["vanished"], 1);
}

/// A sweep whose recovery deadline is 1 s (timeout 1, no grace); the run
/// itself must end long before the 30 s the fake child would take.
fn run_with_a_one_second_deadline(world: &World, rch: &Path) -> (i32, serde_json::Value) {
    let started = Instant::now();
    let result = world.json(&[
        "--rch",
        rch.to_str().expect("utf8"),
        "--recover-timeout",
        "1",
        "--kill-grace",
        "0",
    ]);
    assert!(started.elapsed() < Duration::from_secs(20));
    result
}

#[test]
fn a_hung_child_is_killed_at_the_deadline() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.fake_rch("rch", "echo started >&2\nexec sleep 30");
    let (code, document) = run_with_a_one_second_deadline(&world, &rch);
    assert_eq!(code, 1);
    assert_eq!(
        document["leases"][0]["error"],
        "timed out after 1000ms waiting for child exit and diagnostic EOF: started"
    );
}

#[test]
fn a_missing_rch_is_a_configuration_error() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let output = world.run(&["--rch", "/nonexistent/rch"]);
    assert_eq!(output.status.code(), Some(78));
    assert!(
        stderr(&output).contains("/nonexistent/rch"),
        "{}",
        stderr(&output)
    );
    let output = world
        .command(&[])
        .env("PATH", "/nonexistent")
        .env("HOME", world.path("home"))
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(78));
    let home = world.path("home");
    for place in [
        "/nonexistent/rch".to_owned(),
        format!("{}/.local/bin/rch", home.display()),
        format!("{}/.cargo/bin/rch", home.display()),
    ] {
        assert!(stderr(&output).contains(&place), "{}", stderr(&output));
    }
}

#[test]
fn a_corrupt_state_file_is_moved_aside_and_an_unknown_version_stops_the_run() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.fake_rch("rch", "exit 1");
    let state_dir = world.state_file().parent().expect("parent").to_path_buf();
    std::fs::create_dir_all(&state_dir).expect("mkdir");
    std::fs::write(world.state_file(), "{\"version\": 1, \"leases\": [").expect("write");
    let output = world.run(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let aside: Vec<String> = files_in(&state_dir)
        .into_iter()
        .filter(|name| name.starts_with("backoff.json.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "{:?}", files_in(&state_dir));
    assert_eq!(
        std::fs::read(state_dir.join(&aside[0])).expect("read"),
        b"{\"version\": 1, \"leases\": ["
    );
    let message = stderr(&output);
    assert!(
        message.contains(&world.state_file().display().to_string()),
        "{message}"
    );
    assert!(message.contains(&aside[0]), "{message}");
    assert_eq!(world.state()["version"], 1, "a fresh state was written");

    let unknown = r#"{"version": 2, "leases": {}}"#;
    std::fs::write(world.state_file(), unknown).expect("write");
    let output = world.run(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(output.status.code(), Some(78));
    assert_eq!(
        std::fs::read_to_string(world.state_file()).expect("read"),
        unknown
    );
}

/// Holds the run lock the way another sweep would.
fn hold_lock(world: &World) -> std::fs::File {
    use std::os::fd::AsRawFd;
    let state_dir = world.state_file().parent().expect("parent").to_path_buf();
    std::fs::create_dir_all(&state_dir).expect("mkdir");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(state_dir.join("backoff.json.lock"))
        .expect("open lock");
    // SAFETY: a valid open descriptor.
    assert_eq!(
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    use std::io::Write;
    writeln!(&file, "4242").expect("write pid");
    file
}

#[test]
fn a_held_lock_is_exit_75_for_run_and_forget_but_not_for_status_or_dry_run() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.fake_rch("rch", "exit 1");
    let _held = hold_lock(&world);
    let output = world.run(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(output.status.code(), Some(75));
    assert!(stderr(&output).contains("pid 4242"), "{}", stderr(&output));
    let forget = World::bare_command()
        .arg("forget")
        .arg("--state-file")
        .arg(world.state_file())
        .arg("--all")
        .output()
        .expect("run");
    assert_eq!(forget.status.code(), Some(75), "{}", stderr(&forget));
    let status = World::bare_command()
        .arg("status")
        .arg("--state-file")
        .arg(world.state_file())
        .output()
        .expect("run");
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    assert_eq!(world.run(&["--dry-run"]).status.code(), Some(0));
}

#[test]
fn a_held_lock_prints_one_json_document_and_what_the_docs_say_otherwise() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.fake_rch(
        "rch",
        &format!("touch '{}'", world.path("started").display()),
    );
    let rch = rch.to_str().expect("utf8");
    let _held = hold_lock(&world);

    let output = world.run(&["--json", "--rch", rch]);
    assert_eq!(output.status.code(), Some(75), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(text.lines().count(), 1, "one document on one line: {text}");
    let document: serde_json::Value = serde_json::from_str(&text).expect("json");
    let keys: Vec<&String> = document.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["error", "exit_code", "version"], "{document}");
    assert_eq!(document["version"], 1);
    assert_eq!(document["exit_code"], 75);
    let error = document["error"].as_str().expect("error text");
    assert!(
        error.contains("pid 4242") && error.contains("backoff.json.lock"),
        "{error}"
    );

    // README and systemd/README.md: the default prints one warning line on
    // stderr and nothing on stdout; --quiet prints nothing at all.
    let output = world.run(&["--rch", rch]);
    assert_eq!(output.status.code(), Some(75));
    assert_eq!(stdout(&output), "");
    let lines: Vec<String> = stderr(&output).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("rch-sweep: warning: another rch-sweep (pid 4242) holds "),
        "{lines:?}"
    );
    let output = world.run(&["--quiet", "--rch", rch]);
    assert_eq!(output.status.code(), Some(75));
    assert_eq!(
        (stdout(&output), stderr(&output)),
        (String::new(), String::new())
    );
    let output = world.run(&["--quiet", "--json", "--rch", rch]);
    assert_eq!(output.status.code(), Some(75));
    assert_eq!(stderr(&output), "");
    assert!(stdout(&output).contains("\"exit_code\":75"));
    assert!(
        !world.path("started").exists(),
        "no child while the lock is held"
    );
}

/// A sweep of one stale lease whose fake rch sleeps (touching no journal),
/// started with `--json` and a metrics file; returns it once the child runs,
/// with the PIDs of the child and its grandchild.
fn sweep_with_a_sleeping_child(
    world: &World,
    journal: &Journal,
    json: bool,
) -> (std::process::Child, Vec<u32>) {
    world.add(journal);
    let pids = world.path("pids");
    let rch = world.fake_rch(
        "rch",
        &format!(
            "sleep 30 &\necho \"$$ $!\" > '{pids}.tmp'\nmv '{pids}.tmp' '{pids}'\nwait",
            pids = pids.display()
        ),
    );
    std::fs::create_dir_all(world.path("textfile")).expect("mkdir textfile");
    let prom = world.path("textfile/rch.prom");
    let mut args = vec![
        "--rch",
        rch.to_str().expect("utf8"),
        "--metrics-file",
        prom.to_str().expect("utf8"),
    ];
    if json {
        args.push("--json");
    }
    let child = world
        .command(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids.exists() {
        assert!(Instant::now() < deadline, "the fake rch never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = std::fs::read_to_string(&pids).expect("pids");
    let group: Vec<u32> = text
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    assert_eq!(group.len(), 2);
    (child, group)
}

/// Sends `signals` to `child` in order and waits (bounded) for its output.
fn stop_with(mut child: std::process::Child, signals: &[i32]) -> std::process::Output {
    for signal in signals {
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(child.id() as i32, *signal) };
    }
    use wait_timeout::ChildExt;
    let status = child.wait_timeout(Duration::from_secs(10)).expect("wait");
    if status.is_none() {
        let _ = child.kill();
        panic!("rch-sweep did not stop on {signals:?}");
    }
    child.wait_with_output().expect("output")
}

#[test]
fn sigterm_kills_the_childs_group_writes_state_and_adds_no_failure() {
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    let (child, group) = sweep_with_a_sleeping_child(&world, &journal, true);
    let output = stop_with(child, &[libc::SIGTERM]);
    assert_eq!(output.status.code(), Some(143), "{}", stderr(&output));
    for pid in &group {
        assert!(
            gone_within(*pid, 5),
            "process {pid} of the child's group survived"
        );
    }
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(document["exit_code"], 143);
    assert_eq!(
        outcomes(&document),
        [(journal.id.clone(), "interrupted".to_owned())]
    );
    assert_eq!(document["interrupted"], 1);
    assert_eq!(document["failed"], 0);
    let count = |key: &str| document[key].as_u64().unwrap_or_else(|| panic!("{key}"));
    assert_eq!(count("attempted"), 1);
    assert_eq!(
        count("attempted"),
        count("recovered") + count("failed") + count("vanished") + count("interrupted")
    );
    assert_eq!(
        count("candidates"),
        count("backing_off") + count("attempted") + count("deferred")
    );
    assert!(
        stderr(&output).contains("warning: stopped by SIGTERM"),
        "{}",
        stderr(&output)
    );
    let metrics = std::fs::read_to_string(world.path("textfile/rch.prom")).expect("metrics");
    let label = format!("lease_dir=\"{}\"", world.leases().display());
    for line in [
        format!("rch_sweep_recoveries{{{label},outcome=\"interrupted\"}} 1"),
        format!("rch_sweep_recoveries{{{label},outcome=\"failed\"}} 0"),
        format!("rch_sweep_exit_code{{{label}}} 143"),
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no `{line}` in:\n{metrics}"
        );
    }
    let entry = &world.state()["leases"][&journal.id];
    assert_eq!(entry["failures"], 0, "an interruption is no failure");
    assert!(
        entry["next_attempt_unix_ms"]
            .as_u64()
            .is_some_and(|next| next <= now_ms())
    );
    assert!(
        entry["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("SIGTERM")),
        "{entry}"
    );
}

#[test]
fn the_table_names_an_interrupted_attempt_as_such() {
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    let (child, _) = sweep_with_a_sleeping_child(&world, &journal, false);
    let output = stop_with(child, &[libc::SIGTERM]);
    assert_eq!(output.status.code(), Some(143), "{}", stderr(&output));
    let table = stdout(&output);
    let row = table
        .lines()
        .find(|line| line.starts_with(&journal.id))
        .unwrap_or_else(|| panic!("no row for the lease:\n{table}"));
    assert!(row.contains("interrupted by SIGTERM after "), "{row}");
    assert!(!row.contains("failed"), "{row}");
    assert!(
        table.contains("0 failed, 0 vanished, 1 interrupted"),
        "{table}"
    );
}

#[test]
fn the_first_of_several_signals_decides_the_exit_code() {
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    let (child, group) = sweep_with_a_sleeping_child(&world, &journal, true);
    // Two signals pending at one moment are delivered lowest number first
    // (SIGINT before SIGTERM), so the second is sent only once the first
    // has been seen to act: the child's process group is dead.
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    for pid in &group {
        assert!(gone_within(*pid, 5), "SIGTERM did not act: {pid} lives");
    }
    let output = stop_with(child, &[libc::SIGINT]);
    assert_eq!(output.status.code(), Some(143), "{}", stderr(&output));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(document["exit_code"], 143);
    assert_eq!(document["interrupted"], 1);
    for pid in &group {
        assert!(gone_within(*pid, 5), "process {pid} survived");
    }
    assert!(
        world.state()["leases"][&journal.id]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("SIGTERM")),
        "the first signal is the one named"
    );
}

#[test]
fn no_temporary_files_are_left_in_the_state_folder() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.fake_rch("rch", "exit 1");
    let state_dir = world.state_file().parent().expect("parent").to_path_buf();
    std::fs::create_dir_all(&state_dir).expect("mkdir");
    // One left by a run that was SIGKILLed while saving.
    std::fs::write(state_dir.join(".backoff.json.Xk3j9a.tmp"), "{").expect("write");
    for _ in 0..2 {
        world.run(&["--rch", rch.to_str().expect("utf8")]);
    }
    assert_eq!(files_in(&state_dir), ["backoff.json", "backoff.json.lock"]);
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path| std::fs::metadata(path).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&world.state_file()), 0o600);
    assert_eq!(mode(&state_dir), 0o755, "an existing folder keeps its mode");
    let fresh = World::new();
    fresh.add(&Journal::stale("hz4", 2 * HOUR_MS));
    fresh.run(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(mode(fresh.state_file().parent().expect("parent")), 0o700);
}

#[test]
fn status_and_forget_manage_backoff_entries() {
    let world = World::new();
    let a = Journal::stale("a", 3 * HOUR_MS);
    let b = Journal::stale("b", 2 * HOUR_MS);
    world.add(&a);
    world.add(&b);
    let rch = world.fake_rch("rch", "echo boom >&2; exit 1");
    world.run(&["--rch", rch.to_str().expect("utf8")]);
    let sub = |args: &[&str]| {
        World::bare_command()
            .args(args)
            .arg("--state-file")
            .arg(world.state_file())
            .output()
            .expect("run")
    };
    let status: serde_json::Value =
        serde_json::from_slice(&sub(&["status", "--json"]).stdout).expect("json");
    assert_eq!(status["version"], 1);
    assert_eq!(
        status["state_file"],
        world.state_file().to_str().expect("utf8")
    );
    let leases = &status["leases"];
    assert_eq!(leases[&a.id]["failures"], 1);
    assert_eq!(leases[&a.id]["due"], false);
    assert_eq!(leases[&a.id]["last_error"], "exit status: 1: boom");
    let human = stdout(&sub(&["status"]));
    assert!(
        human.contains(&a.id) && human.contains("last error: exit status: 1: boom"),
        "{human}"
    );

    let forget = sub(&["forget", &a.id, "rchw-00000000-0000-4000-8000-000000000000"]);
    assert_eq!(forget.status.code(), Some(0));
    assert!(
        stderr(&forget).contains("has no backoff entry"),
        "{}",
        stderr(&forget)
    );
    let status: serde_json::Value =
        serde_json::from_slice(&sub(&["status", "--json"]).stdout).expect("json");
    assert!(status["leases"].get(&a.id).is_none());
    assert!(status["leases"].get(&b.id).is_some());
    assert_eq!(sub(&["forget", "--all"]).status.code(), Some(0));
    assert_eq!(world.state()["leases"], json!({}));
}

#[test]
fn forget_takes_ids_and_file_names_and_refuses_anything_else_whole() {
    let world = World::new();
    let a = Journal::stale("a", 3 * HOUR_MS);
    let b = Journal::stale("b", 2 * HOUR_MS);
    world.add(&a);
    world.add(&b);
    let rch = world.fake_rch("rch", "exit 1");
    world.run(&["--rch", rch.to_str().expect("utf8")]);
    let forget = |args: &[&str]| {
        World::bare_command()
            .arg("forget")
            .arg("--state-file")
            .arg(world.state_file())
            .args(args)
            .output()
            .expect("run")
    };
    let before = std::fs::read(world.state_file()).expect("state");
    let uuid = a.id.strip_prefix("rchw-").expect("prefix");
    for bad in [
        "not-an-id".to_owned(),
        a.id.to_uppercase(),
        format!("rchw-{}", uuid.to_uppercase()),
        uuid.to_owned(),
        format!("{}.jsonx", a.id),
        format!("leases/{}.json", a.id),
    ] {
        // A valid id beside it: the bad one still stops everything.
        let output = forget(&[&b.id, &bad]);
        assert_eq!(output.status.code(), Some(2), "{bad}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(&format!("{bad:?}"))
                && stderr(&output).contains("nothing was forgotten"),
            "{bad}: {}",
            stderr(&output)
        );
        assert_eq!(
            std::fs::read(world.state_file()).expect("state"),
            before,
            "{bad}: the state file changed"
        );
    }
    let output = forget(&[&a.file_name()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let leases = &world.state()["leases"];
    assert!(leases.get(&a.id).is_none(), "{leases}");
    assert!(leases.get(&b.id).is_some(), "{leases}");
}

/// `forget` takes a journal's path as `explain` does: inside the lease
/// directory, absolute or relative to the working directory; a path
/// anywhere else forgets nothing (2).
#[test]
fn forget_takes_journal_paths_inside_the_lease_directory() {
    let world = World::new();
    let a = Journal::stale("a", 3 * HOUR_MS);
    let b = Journal::stale("b", 2 * HOUR_MS);
    world.add(&a);
    world.add(&b);
    let rch = world.fake_rch("rch", "exit 1");
    world.run(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(
        world.state()["leases"].as_object().map(|l| l.len()),
        Some(2)
    );
    let forget = |args: &[&str]| {
        world
            .sub(&[&["forget"], args].concat())
            .current_dir(world.dir.path())
            .output()
            .expect("run")
    };
    let before = std::fs::read(world.state_file()).expect("state");
    let elsewhere = world.path(&a.file_name());
    std::fs::write(&elsewhere, a.text()).expect("copy outside");
    let outside = elsewhere.to_str().expect("utf8");
    let output = forget(&[&b.id, outside]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("is not a journal inside the lease directory")
            && stderr(&output).contains("nothing was forgotten"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read(world.state_file()).expect("state"), before);

    let absolute = world.leases().join(a.file_name());
    let output = forget(&[absolute.to_str().expect("utf8")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let relative = format!("job-leases/{}", b.file_name());
    let output = forget(&[&relative]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(world.state()["leases"], json!({}));
}

#[test]
fn a_stderr_flood_keeps_only_the_last_words() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.fake_rch(
        "rch",
        "head -c 20000000 /dev/zero | tr '\\0' 'x' >&2\necho >&2\necho 'final: source claim held' >&2\nexit 4",
    );
    let (code, document) = world.json(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(code, 1);
    let error = document["leases"][0]["error"].as_str().expect("error");
    assert!(error.starts_with("exit status: 4: "), "{error}");
    assert!(error.ends_with("final: source claim held"), "{error}");
    assert!(error.chars().count() <= "exit status: 4: ".len() + 400);
}

#[test]
fn a_grandchild_holding_stderr_is_bounded_by_the_deadline_and_killed() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let pid_file = world.path("grandchild");
    // The client exits 0 at once, but leaves a process holding its stderr.
    let rch = world.fake_rch(
        "rch",
        &format!("sleep 30 &\necho $! > '{}'\nexit 0", pid_file.display()),
    );
    let (code, document) = run_with_a_one_second_deadline(&world, &rch);
    assert_eq!(code, 1);
    assert_eq!(
        document["leases"][0]["error"],
        "timed out after 1000ms waiting for child exit and diagnostic EOF"
    );
    let grandchild: u32 = std::fs::read_to_string(&pid_file)
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    assert!(
        gone_within(grandchild, 5),
        "the grandchild survived the group kill"
    );
}

#[test]
fn escape_sequences_from_the_child_never_reach_the_terminal_or_the_state() {
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&journal);
    let rch = world.fake_rch(
        "rch",
        "printf 'boom\\033]0;owned\\007\\033[2J done\\n' >&2\nexit 1",
    );
    let output = world.run(&["--rch", rch.to_str().expect("utf8")]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(message.contains("boom"), "{message}");
    assert!(
        !message.contains('\u{1b}') && !message.contains('\u{7}'),
        "{message:?}"
    );
    let stored = world.state()["leases"][&journal.id]["last_error"]
        .as_str()
        .expect("last error")
        .to_owned();
    // Taken out whole (SPEC "One recovery", step 5), not left half-printed.
    assert_eq!(stored, "exit status: 1: boom done");
    assert!(!stored.contains('\u{1b}'), "{stored:?}");
    let status = World::bare_command()
        .args(["status", "--state-file"])
        .arg(world.state_file())
        .output()
        .expect("status");
    assert!(!stdout(&status).contains('\u{1b}'));
}

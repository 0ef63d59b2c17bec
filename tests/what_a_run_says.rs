//! What a run says (issue 34): `--quiet` prints nothing for a run that
//! exits 75 (cron would mail it every five minutes for what fixes itself)
//! and still prints the errors of any other; a failure's `last_error` is
//! text that begins at a line start, rch's colour codes taken out; the
//! summary's "retry in" counts from the run's end, as `status` does.

mod common;

use common::*;
use serde_json::json;
use std::fs;
use std::os::fd::AsRawFd;
use std::path::Path;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

#[test]
fn quiet_prints_nothing_for_a_run_that_exits_75_and_errors_for_any_other() {
    let world = World::new();
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    world.add(&journal);
    let rch = world.fake_rch("rch", "echo 'worker w1 unreachable' >&2\nexit 1");
    let missing = world.path("missing.sock");
    let quiet = |extra: &[&str]| {
        let mut args = vec!["--quiet", "--rch", utf8(&rch)];
        args.extend_from_slice(extra);
        world
            .command(&args)
            .env("RCH_SWEEP_TEST_DAEMON_WAIT_MS", "50")
            .output()
            .expect("run")
    };

    // rch's daemon is down: 75, every lease kept back, not a word.
    let output = quiet(&["--socket", utf8(&missing)]);
    assert_eq!(output.status.code(), Some(75), "{}", stderr(&output));
    assert_eq!(
        (stdout(&output), stderr(&output)),
        (String::new(), String::new())
    );
    assert_eq!(world.state()["leases"], json!({}));

    // Another sweep holds the state lock: 75, not a word.
    let lock_path = world.state_file().with_file_name("backoff.json.lock");
    let lock = fs::File::create(&lock_path).expect("lock file");
    // SAFETY: flock on a descriptor this test owns, for its lifetime.
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let output = quiet(&["--socket", utf8(&missing)]);
    assert_eq!(output.status.code(), Some(75), "{}", stderr(&output));
    assert_eq!(
        (stdout(&output), stderr(&output)),
        (String::new(), String::new())
    );
    drop(lock);

    // The same run with --json still prints its document (asked for).
    let output = quiet(&["--json", "--socket", utf8(&missing)]);
    assert_eq!(output.status.code(), Some(75), "{}", stderr(&output));
    assert_eq!(one_document(&output)["exit_code"], 75);
    assert_eq!(stderr(&output), "");

    // A failure charged (1) and a broken install (78) are still said.
    let output = quiet(&[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("failed: exit status: 1: worker w1 unreachable"),
        "{}",
        stderr(&output)
    );
    assert_eq!(stdout(&output), "");
    let output = world
        .command(&["--quiet", "--rch", utf8(&world.path("no-rch"))])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(78), "{}", stderr(&output));
    assert!(stderr(&output).contains("error: "), "{}", stderr(&output));
}

#[test]
fn a_failures_error_is_its_last_line_without_colour_codes() {
    let world = World::new();
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    world.add(&journal);
    // What rch 2.1.34 writes: colour-coded update-check warnings (with a
    // hyperlink), then the real error, a long last line.
    let last = format!(
        "Error: [RCH-E207] worker w1 refused the build: {}",
        "the remote toolchain does not match; ".repeat(9)
    );
    let last = last.trim_end();
    let body = format!(
        "for i in 1 2 3 4 5 6 7 8; do\n\
         printf '\\033[1;33mwarning\\033[0m: update check %s failed: \\033]8;;https://example.org/rch\\033\\\\release notes\\033]8;;\\033\\\\ unreachable\\n' \"$i\" >&2\n\
         done\n\
         printf '%s\\n' '{last}' >&2\nexit 1"
    );
    let rch = world.fake_rch("rch", &body);
    let output = world
        .command(&["--json", "--rch", utf8(&rch)])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let document = one_document(&output);
    let expected = format!("exit status: 1: {last}");
    assert_eq!(
        document["leases"][0]["error"],
        expected.as_str(),
        "{document}"
    );
    assert_eq!(
        world.state()["leases"][&journal.id]["last_error"],
        expected.as_str()
    );
    let status = world.sub(&["status"]).output().expect("status");
    let text = stdout(&status);
    assert!(text.contains(last) && !text.contains('\u{fffd}'), "{text}");
}

#[test]
fn retry_in_counts_from_the_runs_end() {
    let world = World::new();
    world.add(&Journal::stale("w1", 2 * HOUR_MS));
    // A failure two seconds into the run: its backoff (10 min) runs from
    // its end, so from the run's end the retry is less than 10 min away.
    let rch = world.fake_rch("rch", "sleep 2\necho 'failed' >&2\nexit 1");
    let output = world.command(&["--rch", utf8(&rch)]).output().expect("run");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    let after = text
        .split("1 failure, retry in ")
        .nth(1)
        .unwrap_or_else(|| panic!("no retry in: {text}"));
    let (minutes, rest) = after.split_once("m ").expect("minutes");
    let seconds = rest.split_once('s').expect("seconds").0;
    let total: u64 = minutes.parse::<u64>().expect("m") * 60 + seconds.parse::<u64>().expect("s");
    assert!(
        total <= 600,
        "retry in {total} s from the run's end: {text}"
    );
}

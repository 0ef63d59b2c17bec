//! rch's answers are read, not counted (issue 41): a `rch jobs recover`
//! that exits 1 is not yet a failure of its lease. The journal is read
//! back first (finished by someone else: recovered; gone: vanished), then
//! rch's `Error:` line is matched against its own phrases (busy lock,
//! owner refusal, the 24-hour wait, the missing receipt of 2.1.17–2.1.33,
//! a slow daemon), and before each start an unsafe lock file and a file
//! system without room for rch's rewrite defer the lease. Nothing here is
//! charged. The whole catalogue of issue 46 is tests/rch_catalogue.rs.
//!
//! Each runs the real binary against fake `rch` scripts that find the
//! lease directory only as rch does; the full file system needs root (a
//! tmpfs in a private mount namespace).

mod common;

use common::backoff::write_due_entry;
use common::mounts::private_mount_namespace;
use common::*;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// The last success every state file here starts with (ms).
const EARLIER_SUCCESS_MS: u64 = 1_700_000_000_000;

/// rch 2.1.34's stderr opens with colour-coded update-check warnings; the
/// answer is its last line.
const WARNINGS: &str =
    r"printf '\033[1;33mwarning\033[0m: update check failed: error sending request\n' >&2";

/// A fake rch that notes each start in `started.log`, then runs `then`
/// (with `$leases` and `$3`, the wrapper id).
fn noting_rch(world: &World, then: &str) -> std::path::PathBuf {
    let started = world.path("started.log");
    world.fake_rch(
        "rch",
        &format!("echo \"$3\" >> '{}'\n{then}", started.display()),
    )
}

/// The wrapper ids rch was started for, in order.
fn started(world: &World) -> Vec<String> {
    fs::read_to_string(world.path("started.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A fake rch that says `answer` as rch says its errors (after its
/// warnings) and exits 1, leaving the journal as it was.
fn answering_rch(world: &World, answer: &str) -> std::path::PathBuf {
    noting_rch(
        world,
        &format!("{WARNINGS}\necho 'Error: {answer}' >&2\nexit 1"),
    )
}

/// The lease row of `id`.
fn lease<'a>(document: &'a Value, id: &str) -> &'a Value {
    document["leases"]
        .as_array()
        .expect("leases")
        .iter()
        .find(|lease| lease["wrapper_id"] == id)
        .unwrap_or_else(|| panic!("no row for {id}: {document}"))
}

/// The state file holds exactly `entry` for `id`: nothing was charged.
fn assert_entry_unchanged(world: &World, id: &str, entry: &Value) {
    let saved = world.state();
    assert_eq!(&saved["leases"][id], entry, "{saved}");
    assert_eq!(
        saved["leases"].as_object().expect("leases").len(),
        1,
        "{saved}"
    );
}

// ------------------------------------------------------------ 1. read back

#[test]
fn a_child_that_exits_1_after_someone_else_finished_the_lease_is_recovered() {
    let world = World::new();
    let journal = Journal::stale("w1", 3 * HOUR_MS);
    let id = world.will_complete(journal);
    write_due_entry(&world, &id, Some(EARLIER_SUCCESS_MS));
    // rchd's own task finished it between our look and rch's: rch finds
    // the journal complete and refuses with its lock message.
    let rch = noting_rch(
        &world,
        &format!(
            "cp '{}/'\"$3.json\" \"$leases/$3.json\"\n{WARNINGS}\n\
             echo 'Error: cannot acquire exclusive job recovery: journal is held by another handle; retry the same wrapper' >&2\nexit 1",
            world.path("done").display()
        ),
    );
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    assert_eq!(code, 0, "{document}");
    let row = lease(&document, &id);
    assert_eq!(row["outcome"], "recovered", "{document}");
    assert!(row.get("error").is_none(), "{row}");
    assert!(
        row["note"]
            .as_str()
            .is_some_and(|note| note.contains("finished by someone else")),
        "{row}"
    );
    assert_eq!(
        (document["recovered"].clone(), document["failed"].clone()),
        (1.into(), 0.into())
    );
    assert!(
        world.state()["leases"]
            .as_object()
            .expect("leases")
            .is_empty()
    );
}

#[test]
fn a_child_that_exits_1_after_the_journal_went_is_vanished() {
    let world = World::new();
    let journal = Journal::stale("w1", 3 * HOUR_MS);
    world.add(&journal);
    write_due_entry(&world, &journal.id, Some(EARLIER_SUCCESS_MS));
    let rch = noting_rch(
        &world,
        "rm \"$leases/$3.json\"\necho 'Error: lease journal not found' >&2\nexit 1",
    );
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(
        lease(&document, &journal.id)["outcome"],
        "vanished",
        "{document}"
    );
    assert_eq!(document["failed"], 0);
    assert!(
        world.state()["leases"]
            .as_object()
            .expect("leases")
            .is_empty()
    );
}

// ------------------------------------------------------- 2. rch's phrases

/// Two due leases on one worker (so one runs after the other), the first
/// with an entry (3 failures, due now); rch answers `answer` for the first
/// and recovers the second. Returns the exit code, the document, both ids
/// and the entry.
fn first_answers(answer: &str) -> (World, i32, Value, [String; 2], Value) {
    let world = World::new();
    let first = Journal::stale("w1", 3 * HOUR_MS);
    world.add(&first);
    let second = world.will_complete(Journal::stale("w1", 2 * HOUR_MS));
    let (entry, _) = write_due_entry(&world, &first.id, Some(EARLIER_SUCCESS_MS));
    let rch = noting_rch(
        &world,
        &format!(
            "if [ \"$3\" = '{}' ]; then\n{WARNINGS}\nprintf '%b\\n' 'Error: {answer}' >&2\nexit 1\nfi\n\
             cp '{}/'\"$3.json\" \"$leases/$3.json\"",
            first.id,
            world.path("done").display()
        ),
    );
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    (world, code, document, [first.id, second], entry)
}

#[test]
fn rch_busy_with_another_recovery_or_refusing_the_owner_defers_and_others_go_on() {
    for (answer, words) in [
        (
            // Coloured, as rch 2.1.34 colours parts of its errors.
            "cannot acquire \\033[1mexclusive\\033[0m job recovery: journal is \\033[1mheld\\033[0m by another handle; retry the same wrapper",
            "another process is recovering this lease",
        ),
        (
            // rch's exact words (2.1.17 and later).
            "original wrapper is still present or unverified; use jobs attach or retry after it exits; no recovery started",
            "original wrapper is still present or unverified",
        ),
    ] {
        let (world, code, document, [first, second], entry) = first_answers(answer);
        assert_eq!(code, 0, "{answer}: {document}");
        let row = lease(&document, &first);
        assert_eq!(row["outcome"], "deferred", "{answer}: {document}");
        let error = row["error"].as_str().expect("error");
        assert!(error.contains(words), "{answer}: {error}");
        assert!(!error.contains('\u{1b}'), "{error:?}");
        // Not charged, and the next lease on that worker still started.
        assert_eq!(row["failures"], 3, "{row}");
        assert_eq!(
            lease(&document, &second)["outcome"],
            "recovered",
            "{document}"
        );
        assert_eq!(started(&world), [first.clone(), second.clone()]);
        assert_entry_unchanged(&world, &first, &entry);
    }
}

/// A full disk in rch's words is the lease directory's only when its file
/// system is short now (tests/rch_catalogue.rs); a slow daemon always is
/// the daemon's.
#[test]
fn a_slow_daemon_in_rchs_words_is_75_and_starts_nothing_more() {
    let answer = "recovery daemon request timed out; completion remains pending";
    let (world, code, document, [first, second], entry) = first_answers(answer);
    assert_eq!(code, 75, "{answer}: {document}");
    let row = lease(&document, &first);
    assert_eq!(row["outcome"], "deferred", "{answer}: {document}");
    assert!(
        row["error"]
            .as_str()
            .is_some_and(|e| e.contains("no answer it could use from its daemon")),
        "{answer}: {row}"
    );
    assert_eq!(
        lease(&document, &second)["outcome"],
        "deferred",
        "{document}"
    );
    assert_eq!(
        started(&world),
        vec![first.clone()],
        "{answer}: no further start"
    );
    assert!(
        document["error"]
            .as_str()
            .is_some_and(|e| e.contains("no lease was charged"))
    );
    assert_entry_unchanged(&world, &first, &entry);
}

#[test]
fn rch_waiting_24_hours_for_a_forgotten_build_defers_until_then() {
    let world = World::new();
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    let heartbeat = now_ms() - 2 * HOUR_MS;
    let journal = journal.set("heartbeat_unix_ms", heartbeat.into());
    world.add(&journal);
    let rch = answering_rch(
        &world,
        "daemon has no record of recovered build 30052631078502447; acknowledgement waits until the lease is 24h old",
    );
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    assert_eq!(code, 0, "{document}");
    let row = lease(&document, &journal.id);
    assert_eq!(row["outcome"], "deferred", "{document}");
    let until = heartbeat + 24 * HOUR_MS + 60_000;
    assert_eq!(row["next_attempt_unix_ms"], until, "{row}");
    assert_eq!(row["hold"], "daemon_record_wait", "{row}");
    assert!(
        row["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("waiting until ")),
        "{row}"
    );
    // An entry with no failure, kept however long --backoff-max is.
    let entry = &world.state()["leases"][&journal.id];
    assert_eq!(entry["failures"], 0, "{entry}");
    assert_eq!(entry["next_attempt_unix_ms"], until, "{entry}");
    assert_eq!(entry["hold"], "daemon_record_wait", "{entry}");

    // The next run leaves it be (not pulled forward to now + 6 h).
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(lease(&document, &journal.id)["outcome"], "backing_off");
    assert_eq!(started(&world).len(), 1);
    assert_eq!(
        world.state()["leases"][&journal.id]["next_attempt_unix_ms"],
        until
    );

    // status shows the wait until a time.
    let output = world.command(&[]).arg("status").output().expect("status");
    let text = stdout(&output);
    assert!(
        text.contains("waiting until 2") && text.contains("UTC"),
        "{text}"
    );
    let output = world
        .command(&["status", "--json"])
        .output()
        .expect("status");
    let status: Value = serde_json::from_str(&stdout(&output)).expect("json");
    assert_eq!(status["leases"][&journal.id]["hold"], "daemon_record_wait");
    assert_eq!(status["leases"][&journal.id]["due"], false);
}

/// rch 2.1.17–2.1.33 never complete a build their daemon forgot. Which
/// release runs is read from `rch --capabilities` by the run.
#[test]
fn rch_2_1_30_without_a_terminal_receipt_is_stuck_not_charged() {
    let world = World::new();
    let journal = Journal::stale("w1", 3 * HOUR_MS);
    world.add(&journal);
    let (entry, _) = write_due_entry(&world, &journal.id, Some(EARLIER_SUCCESS_MS));
    let rch = world.fake_rch_with(
        "rch",
        &FakeRch {
            version: Some("echo 'rch 2.1.30'"),
            capabilities: Some(&capabilities_says("2.1.30")),
            recover: "echo 'Error: daemon has no exact terminal receipt for recovered wrapper/build/worker' >&2\nexit 1",
            ..FakeRch::default()
        },
    );
    let prom = world.path("rch.prom");
    let (code, document) = world.json(&["--rch", utf8(&rch), "--metrics-file", utf8(&prom)]);
    assert_eq!(code, 0, "{document}");
    let row = lease(&document, &journal.id);
    assert_eq!(row["outcome"], "stuck", "{document}");
    assert_eq!(row["hold"], "stuck");
    assert!(
        row["error"]
            .as_str()
            .is_some_and(|e| e.contains("upgrade rch to 2.1.34"))
    );
    assert_eq!(document["stuck"], 1);
    let saved = &world.state()["leases"][&journal.id];
    assert_eq!(saved["failures"], entry["failures"], "{saved}");
    assert_eq!(saved["hold"], "stuck");
    let metrics = fs::read_to_string(&prom).expect("metrics");
    assert!(metrics.contains("state=\"stuck\"} 1"), "{metrics}");
}

// ------------------------------------------------ 3. before the start

// A recovery lock rch refuses, looked at before the start (with explain
// and doctor): tests/rch_catalogue.rs, each of the four conditions.

/// shared/repro/wave6/r4_full_fs_charged.sh: a lease directory whose file
/// system has room for the state but not for rch's rewrite of a 1.2 MB
/// journal. Run in a private mount namespace on a 4 MiB tmpfs.
#[test]
fn a_file_system_without_room_for_rchs_rewrite_is_75_and_charges_nothing() {
    if !root_or_skip("a_file_system_without_room_for_rchs_rewrite") {
        return;
    }
    let world = World::new();
    fs::set_permissions(world.dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    let src = world.path("src");
    fs::create_dir(&src).expect("mkdir");
    let journals = [
        Journal::stale("w1", 3 * HOUR_MS),
        Journal::stale("w2", 2 * HOUR_MS),
    ];
    for journal in &journals {
        fs::write(src.join(journal.file_name()), journal.text()).expect("write");
    }
    // rch's rewrite: a temporary copy renamed over the journal.
    let rch = noting_rch(
        &world,
        "j=\"$leases/$3.json\"\n\
         if ! err=$(cp \"$j\" \"$j.tmp\" 2>&1); then echo \"Error: failed to persist recovery journal: $err\" >&2; rm -f \"$j.tmp\"; exit 1; fi\n\
         mv \"$j.tmp\" \"$j\"; echo 'Error: daemon has no record' >&2; exit 1",
    );
    let script = format!(
        r#"set -eu
W=$1
mkdir "$W/fs"
mount -t tmpfs -o size=4m,mode=0755 tmpfs "$W/fs"
mkdir -p "$W/fs/state/job-leases"
for f in "$W"/src/*.json; do
  cp "$f" "$W/fs/state/job-leases/"
  head -c 1200000 /dev/zero | tr '\0' ' ' >> "$W/fs/state/job-leases/$(basename "$f")"
done
dd if=/dev/zero of="$W/fs/filler" bs=4k count=10000 2>/dev/null || true
truncate -s -65536 "$W/fs/filler"
code=0
env -i PATH=/usr/bin:/bin RCH_STATE_HOME="$W/fs/state" '{BIN}' --rch '{rch}' --json > "$W/out.json" 2> "$W/err" || code=$?
echo "$code" > "$W/code"
cp "$W/fs/state/rch-sweep/backoff.json" "$W/state.json" 2>/dev/null || true
umount "$W/fs""#,
        rch = rch.display()
    );
    let output = private_mount_namespace(&script)
        .arg(world.dir.path())
        .output()
        .expect("unshare");
    assert!(output.status.success(), "{}", stderr(&output));
    let err = fs::read_to_string(world.path("err")).unwrap_or_default();
    let code = fs::read_to_string(world.path("code")).expect("code");
    assert_eq!(code.trim(), "75", "{err}");
    let document: Value =
        serde_json::from_str(&fs::read_to_string(world.path("out.json")).expect("out"))
            .expect("json");
    for journal in &journals {
        assert_eq!(
            lease(&document, &journal.id)["outcome"],
            "deferred",
            "{document}"
        );
    }
    assert!(
        document["error"]
            .as_str()
            .is_some_and(|e| e.contains("no room for rch's rewrite")),
        "{document}"
    );
    assert!(started(&world).is_empty(), "rch was started");
    let state: Value = fs::read_to_string(world.path("state.json"))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let charged = state["leases"]
        .as_object()
        .is_some_and(|leases| leases.values().any(|entry| entry["failures"] != 0));
    assert!(!charged, "{state}");
}

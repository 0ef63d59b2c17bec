//! A failure is charged to a lease only when the lease is why it failed
//! (issue 28): a broken `rch` shim (126/127), a host that cannot start a
//! recovery (no thread, process or descriptor), a lease another process is
//! already recovering, a process group that must never be killed once its
//! leader was reaped, and a report that tells the truth about the run.
//! Each runs the real binary; tests that need root (another user, a PID
//! namespace) say so and skip without it.

mod common;

use common::backoff::write_due_entry;
use common::doctor_rows::row;
use common::locks::{self, TAKE_RECOVERY_LOCK_SH, release};
use common::wrap::{under_strace, wrapped};
use common::*;
use serde_json::{Value, json};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// The last success every state file here starts with (ms).
const EARLIER_SUCCESS_MS: u64 = 1_700_000_000_000;

/// Writes a state file with one backoff entry for `id` (3 failures, due
/// now) and [`EARLIER_SUCCESS_MS`]; returns the entry as written.
fn state_with_entry(world: &World, id: &str) -> Value {
    write_due_entry(world, id, Some(EARLIER_SUCCESS_MS)).0
}

/// The state file's entries are exactly `id`'s, as it was written:
/// nothing was charged.
fn assert_nothing_charged(world: &World, id: &str, entry: &Value) {
    let saved = world.state();
    assert_eq!(&saved["leases"][id], entry, "{saved}");
    assert_eq!(
        saved["leases"].as_object().expect("leases").len(),
        1,
        "{saved}"
    );
}

/// [`assert_nothing_charged`], in a run that is no success.
fn assert_nothing_charged_no_success(world: &World, id: &str, entry: &Value) {
    assert_nothing_charged(world, id, entry);
    assert_eq!(world.state()["last_success_unix_ms"], EARLIER_SUCCESS_MS);
}

/// (wrapper id, outcome, error) of each lease row.
fn rows(document: &Value) -> Vec<(String, String, Option<String>)> {
    document["leases"]
        .as_array()
        .expect("leases")
        .iter()
        .map(|lease| {
            (
                lease["wrapper_id"].as_str().expect("id").to_owned(),
                lease["outcome"].as_str().expect("outcome").to_owned(),
                lease["error"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

// ------------------------------------------------------------------ 1. shim

/// Three stale leases on `w1`, oldest first, added to the world.
fn three_due_on_w1(world: &World) -> [Journal; 3] {
    world.add_three_stale(["w1", "w1", "w1"])
}

#[test]
fn an_rch_shim_that_exits_126_or_127_is_78_and_costs_no_lease_a_failure() {
    // rch installed as a wrapper whose program is on a login shell's PATH
    // only (127), or is not executable (126): the shell says so on stderr.
    let cases = [
        (127, "exec rch-bin \"$@\"", "rch-bin: not found"),
        (126, "exec \"$0.bin\" \"$@\"", "Permission denied"),
    ];
    for (code, exec, words) in cases {
        let world = World::new();
        let [first, second, third] = three_due_on_w1(&world);
        let entry = state_with_entry(&world, &first.id);
        let started = world.path("started.log");
        let rch = world.fake_rch(
            "rch",
            &format!("echo \"$3\" >> '{}'\n{exec}", started.display()),
        );
        let program = world.path("rch.bin");
        fs::write(&program, "#!/bin/sh\nexit 0\n").expect("write");
        fs::set_permissions(&program, fs::Permissions::from_mode(0o644)).expect("chmod");
        let output = world
            .command(&["--json", "--rch", utf8(&rch)])
            .env("PATH", "/usr/bin:/bin")
            .output()
            .expect("run");
        assert_eq!(output.status.code(), Some(78), "{}", stderr(&output));
        let document = one_document(&output);
        assert_eq!(document["exit_code"], 78);
        let rows = rows(&document);
        assert_eq!(
            rows.iter()
                .map(|(id, outcome, _)| (id.as_str(), outcome.as_str()))
                .collect::<Vec<_>>(),
            [
                (first.id.as_str(), "deferred"),
                (second.id.as_str(), "deferred"),
                (third.id.as_str(), "deferred"),
            ],
            "{document}"
        );
        let error = rows[0].2.as_deref().expect("the first says why");
        assert!(
            error.contains(&format!("exited {code}")) && error.ends_with(words),
            "{code}: {error}"
        );
        assert_eq!((&rows[1].2, &rows[2].2), (&None, &None), "{document}");
        assert_eq!(
            (document["attempted"].clone(), document["failed"].clone()),
            (json!(0), json!(0))
        );
        // No further start after the first: the others would fail alike.
        assert_eq!(
            fs::read_to_string(&started)
                .expect("started")
                .lines()
                .count(),
            1
        );
        assert_nothing_charged_no_success(&world, &first.id, &entry);
        assert!(
            stderr(&output).contains("no lease was charged a failure"),
            "{}",
            stderr(&output)
        );
    }
}

/// rch 1.x, as 1.0.58 answers: a version, and clap's usage error (exit 2)
/// for `jobs` (it has no such command) and anything else. Each call is
/// logged to `calls`.
fn rch_1x(world: &World, calls: &Path) -> PathBuf {
    world.script(
        "rch",
        &format!(
            "echo \"$*\" >> '{calls}'\n\
             if [ \"$1\" = --version ]; then echo 'rch 1.0.58'; exit 0; fi\n\
             printf '\\033[1;31merror:\\033[0m unrecognized subcommand '\\''%s'\\''\\n\\nUsage: rch [OPTIONS] <COMMAND>\\n\\nFor more information, try '\\''--help'\\''.\\n' \"$1\" >&2\n\
             exit 2",
            calls = calls.display()
        ),
    )
}

#[test]
fn an_rch_without_jobs_recover_is_78_and_costs_no_lease_a_failure() {
    let world = World::new();
    three_due_on_w1(&world);
    let calls = world.path("calls.log");
    let rch = rch_1x(&world, &calls);
    let output = world
        .command(&["--json", "--rch", utf8(&rch)])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(78), "{}", stderr(&output));
    let document = one_document(&output);
    let rows = rows(&document);
    assert!(
        rows.iter().all(|(_, outcome, _)| outcome == "deferred"),
        "{document}"
    );
    let error = rows[0].2.as_deref().expect("the first says why");
    assert!(
        error.contains("exited 2, rch's usage error: this rch cannot recover a lease")
            && error.ends_with(
                ": error: unrecognized subcommand 'jobs' ... For more information, try '--help'."
            ),
        "{error}"
    );
    assert_eq!((&rows[1].2, &rows[2].2), (&None, &None), "{document}");
    assert_eq!(
        (document["attempted"].clone(), document["failed"].clone()),
        (json!(0), json!(0))
    );
    let recoveries = fs::read_to_string(&calls)
        .expect("calls")
        .lines()
        .filter(|line| line.starts_with("jobs recover"))
        .count();
    assert_eq!(recoveries, 1, "no further start");
    // Written, and empty: nothing charged, no success claimed.
    let state = world.state();
    assert_eq!(state["leases"], json!({}), "{state}");
    assert!(state["last_success_unix_ms"].is_null(), "{state}");
    let status = world.sub(&["status", "--json"]).output().expect("status");
    assert_eq!(one_document(&status)["leases"], json!({}));
    assert!(
        stderr(&output).contains("no lease was charged a failure"),
        "{}",
        stderr(&output)
    );

    // doctor sees it before a run does.
    let output = world
        .sub(&["doctor", "--json", "--rch", utf8(&rch)])
        .output()
        .expect("doctor");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let document = one_document(&output);
    let check = row(&document, "rch");
    assert_eq!(check["status"], "fail", "{check}");
    let finding = check["finding"].as_str().expect("finding");
    assert!(
        finding.contains("(rch 1.0.58): `jobs recover --help` failed: exit status: 2, saying: error: unrecognized subcommand 'jobs' ... For more information, try '--help'.")
            && finding.contains("a run would exit 78"),
        "{finding}"
    );
}

// ------------------------------------------------------------------ 2. host

/// A uid nothing else on this machine runs as: RLIMIT_NPROC counts every
/// process of the user, so another test's `nobody` would change the count.
const LIMITED_UID: u32 = 64_128;

/// Makes the world [`LIMITED_UID`]'s to sweep, as `hand_to_nobody` does.
fn hand_to_limited(world: &World) {
    let give = |path: &Path| {
        std::os::unix::fs::chown(path, Some(LIMITED_UID), Some(LIMITED_UID)).expect("chown")
    };
    fs::set_permissions(world.dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    give(&world.leases());
    for entry in fs::read_dir(world.leases()).expect("list") {
        give(&entry.expect("entry").path());
    }
    let folder = world.state_file().parent().expect("folder").to_path_buf();
    fs::create_dir_all(&folder).expect("mkdir");
    give(&folder);
    if world.state_file().exists() {
        give(&world.state_file());
    }
}

/// The sweep of `world` as [`LIMITED_UID`] with at most `nproc` processes
/// and threads of that user (`prlimit --nproc`, as an operator reproduces
/// it).
fn sweep_with_nproc(world: &World, rch: &Path, nproc: u32) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut inner = world.command(&["--json", "--rch", utf8(rch)]);
    inner.env("HOME", world.dir.path());
    let limit = format!("--nproc={nproc}");
    wrapped(&["prlimit", &limit, "--"], &inner)
        .uid(LIMITED_UID)
        .gid(LIMITED_UID)
        .output()
        .expect("run under prlimit")
}

#[test]
fn a_host_out_of_threads_or_processes_is_75_and_charges_no_lease() {
    if !root_or_skip("a_host_out_of_threads_or_processes")
        || !tool_or_skip("/usr/bin/prlimit", "util-linux")
    {
        return;
    }
    // 1: not even a recovery thread can be started. 2: one thread, but no
    // child process (and no second thread), on three workers at once.
    for nproc in [1, 2] {
        let world = World::new();
        let journals = world.add_three_stale(["w1", "w2", "w3"]);
        let entry = state_with_entry(&world, &journals[0].id);
        let started = world.path("started.log");
        let rch = world.fake_rch(
            "rch",
            &format!("echo \"$3\" >> '{}'\nexit 1", started.display()),
        );
        hand_to_limited(&world);
        let output = sweep_with_nproc(&world, &rch, nproc);
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(75), "nproc {nproc}: {text}");
        let document = one_document(&output);
        assert_eq!(document["exit_code"], 75);
        let rows = rows(&document);
        assert!(
            rows.iter().all(|(_, outcome, _)| outcome == "deferred"),
            "nproc {nproc}: {document}"
        );
        let errors: Vec<&str> = rows.iter().filter_map(|row| row.2.as_deref()).collect();
        assert!(!errors.is_empty(), "{document}");
        for error in &errors {
            assert!(
                error.starts_with("the host could not start a recovery (no thread or process could be created: this user's process limit (RLIMIT_NPROC")
                    && error.contains("Resource temporarily unavailable"),
                "nproc {nproc}: {error}"
            );
        }
        assert!(!started.exists(), "no child ran");
        assert_nothing_charged_no_success(&world, &journals[0].id, &entry);
        assert!(
            text.contains("no lease was charged a failure") && text.contains("ulimit -u"),
            "{text}"
        );
    }
}

#[test]
fn a_process_out_of_descriptors_is_75_and_charges_no_lease() {
    if !tool_or_skip("/usr/bin/strace", "strace") {
        return;
    }
    let world = World::new();
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    world.add(&journal);
    let entry = state_with_entry(&world, &journal.id);
    let rch = world.fake_rch("rch", "exit 1");
    // Every pipe the sweep asks for fails as when the process is out of
    // descriptors (the child's stderr pipe is the first).
    let inner = world.command(&["--json", "--rch", utf8(&rch)]);
    let output = under_strace(&["-f"], "pipe,pipe2", "error=EMFILE", &inner)
        .output()
        .expect("run under strace");
    assert_eq!(output.status.code(), Some(75), "{}", stderr(&output));
    let document = one_document(&output);
    assert_eq!(
        rows(&document),
        [(
            journal.id.clone(),
            "deferred".to_owned(),
            document["leases"][0]["error"].as_str().map(str::to_owned)
        )]
    );
    let error = document["leases"][0]["error"].as_str().expect("error");
    assert!(
        error.contains("too many open files (RLIMIT_NOFILE)"),
        "{error}"
    );
    assert_nothing_charged_no_success(&world, &journal.id, &entry);
}

// ------------------------------------------------------------------ 3. lock

/// A process that holds an exclusive `flock` on `path` (util-linux's
/// `flock`, as an operator's `rch jobs recover` or rchd would), returned
/// once it holds it.
fn hold_flock(path: &Path) -> Child {
    locks::hold_flock(Command::new("flock"), path, "")
}

/// A fake `rch jobs recover` that, as the real one, takes the lease's
/// recovery lock without waiting and fails at once when another process
/// holds it; with the lock, it completes the lease (`done/<id>.json`).
/// `before` runs first (after logging the start).
fn locking_rch(world: &World, before: &str) -> PathBuf {
    std::fs::create_dir_all(world.path("done")).expect("mkdir done");
    world.fake_rch(
        "rch",
        &format!(
            "echo \"$3\" >> '{log}'\n{before}\n{TAKE_RECOVERY_LOCK_SH}\n\
             cp '{done}'/\"$3.json\" \"$leases/$3.json\"",
            log = world.path("started.log").display(),
            done = world.path("done").display(),
        ),
    )
}

fn lock_file(world: &World, id: &str) -> PathBuf {
    world.leases().join(format!("{id}.recovery.lock"))
}

#[test]
fn a_lease_another_process_is_recovering_is_deferred_and_not_charged() {
    if !tool_or_skip("/usr/bin/flock", "util-linux") {
        return;
    }
    let world = World::new();
    let busy = Journal::stale("w1", 3 * HOUR_MS);
    let busy_id = busy.id.clone();
    world.will_complete(busy);
    let free_id = world.will_complete(Journal::stale("w2", HOUR_MS));
    let entry = state_with_entry(&world, &busy_id);
    let rch = locking_rch(&world, "");
    let holder = hold_flock(&lock_file(&world, &busy_id));
    let expected = format!(
        "another process (pid {}) is recovering this lease",
        holder.id()
    );

    // The attempt counts against the start budget: with one start, the
    // other lease waits for the next run.
    let (code, document) = world.json(&["--rch", utf8(&rch), "--max-recoveries", "1"]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(
        rows(&document),
        [
            (busy_id.clone(), "deferred".into(), Some(expected.clone())),
            (free_id.clone(), "deferred".into(), None),
        ]
    );
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(
        rows(&document),
        [
            (busy_id.clone(), "deferred".into(), Some(expected.clone())),
            (free_id.clone(), "recovered".into(), None),
        ]
    );
    assert_eq!(
        (document["attempted"].clone(), document["deferred"].clone()),
        (json!(1), json!(1))
    );
    // rch was never started for the lease someone else is recovering.
    assert_eq!(
        fs::read_to_string(world.path("started.log")).expect("log"),
        format!("{free_id}\n")
    );
    assert_eq!(world.state()["leases"][&busy_id], entry);
    release(holder);
    // Once the other recovery is over, the lease is this sweep's again.
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(
        rows(&document),
        [(busy_id.clone(), "recovered".into(), None)]
    );
}

#[test]
fn a_failure_while_another_process_took_the_lock_is_not_charged() {
    if !tool_or_skip("/usr/bin/flock", "util-linux") {
        return;
    }
    let world = World::new();
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    let id = journal.id.clone();
    world.will_complete(journal);
    let entry = state_with_entry(&world, &id);
    // The client starts while nobody holds the lock, and finds it taken
    // when it reaches for it: rchd's recovery task came first.
    let (started, go) = (world.path("started"), world.path("go"));
    let rch = locking_rch(
        &world,
        &format!(
            "touch '{}'\nwhile [ ! -e '{}' ]; do sleep 0.02; done",
            started.display(),
            go.display()
        ),
    );
    let sweep = world
        .command(&["--json", "--rch", utf8(&rch)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !started.exists() {
        assert!(Instant::now() < deadline, "the client never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let holder = hold_flock(&lock_file(&world, &id));
    fs::write(&go, "").expect("go");
    let output = sweep.wait_with_output().expect("sweep");
    let expected = format!(
        "another process (pid {}) is recovering this lease",
        holder.id()
    );
    release(holder);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let document = one_document(&output);
    assert_eq!(
        rows(&document),
        [(id.clone(), "deferred".into(), Some(expected))]
    );
    assert_nothing_charged(&world, &id, &entry);
}

#[test]
fn a_lock_the_failed_client_itself_took_is_no_other_process() {
    // The client takes the lock in its own process, as rch does (so
    // /proc/locks names the client), leaves a helper holding it, and
    // fails: that failure is its lease's, and is charged.
    let world = World::new();
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    world.add(&journal);
    let helper = world.path("helper.pid");
    let rch = world.fake_rch(
        "rch",
        &format!(
            r#"LEASES="$leases" exec perl -MFcntl=:flock -MPOSIX=setsid -e '
open(my $lock, ">>", "$ENV{{LEASES}}/$ARGV[0].recovery.lock") or exit 3;
flock($lock, LOCK_EX | LOCK_NB) or exit 4;
my $pid = fork();
if ($pid == 0) {{ setsid(); close STDERR; close STDOUT; sleep 30; exit 0; }}
open(my $out, ">", "{helper}") or exit 5; print $out "$pid\n"; close $out;
print STDERR "recovery failed on the worker\n"; exit 1;' "$3""#,
            helper = helper.display()
        ),
    );
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    let helper_pid: Option<i32> = fs::read_to_string(&helper)
        .ok()
        .and_then(|pid| pid.trim().parse().ok());
    if let Some(pid) = helper_pid.filter(|pid| *pid > 1) {
        // SAFETY: signals the test's own helper by its exact pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(helper_pid.is_some(), "the helper never started: {document}");
    assert_eq!(code, 1, "{document}");
    assert_eq!(
        rows(&document),
        [(
            journal.id.clone(),
            "failed".into(),
            Some("exit status: 1: recovery failed on the worker".into())
        )]
    );
    assert_eq!(world.state()["leases"][&journal.id]["failures"], 1);
}

// ------------------------------------------------------------------ 4. group

/// Runs in a new PID namespace as its init: the sweep (arguments "$@")
/// in the background; once the fake rch (which leaves a `setsid` helper
/// holding its stderr) has exited, asks the kernel for the rch's PID for
/// an unrelated process-group leader (`ns_last_pid`), then reports, after
/// the sweep: `<rch pid> <unrelated pid> <its state letter> <sweep's exit>`.
const PID_REUSE_SCRIPT: &str = r#"
out=$1; pidfile=$2; shift 2
"$@" > "$out" 2> "$out.err" &
sweep=$!
while [ ! -s "$pidfile" ]; do sleep 0.02; done
rch=$(cat "$pidfile")
state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1; }
while [ -e "/proc/$rch" ] && [ "$(state "$rch")" != Z ]; do sleep 0.02; done
echo $((rch - 1)) > /proc/sys/kernel/ns_last_pid
setsid sleep 60 &
unrelated=$!
wait "$sweep"
code=$?
echo "$rch $unrelated $(state "$unrelated") $code"
"#;

#[test]
fn a_group_is_never_killed_once_its_leader_was_reaped() {
    if !root_or_skip("a_group_is_never_killed_once_its_leader_was_reaped") {
        return;
    }
    let namespace = ["unshare", "--pid", "--fork", "--mount-proc"];
    let works = Command::new(namespace[0])
        .args(&namespace[1..])
        .args(["sh", "-c", "echo 1 > /proc/sys/kernel/ns_last_pid"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !works {
        eprintln!("skipped: no new PID namespace with a writable ns_last_pid here");
        return;
    }
    let world = World::new();
    world.add(&Journal::stale("w1", 2 * HOUR_MS));
    let pidfile = world.path("rch.pid");
    // The client exits at once, leaving a helper that escaped its group
    // (setsid) with its stderr open: the run waits for EOF until the
    // deadline, and then kills the client's group.
    let rch = world.fake_rch(
        "rch",
        &format!(
            "setsid sleep 30 &\necho $$ > '{pid}.tmp' && mv '{pid}.tmp' '{pid}'\nexit 0",
            pid = pidfile.display()
        ),
    );
    let out = world.path("sweep.json");
    let inner = world.command(&[
        "--json",
        "--rch",
        utf8(&rch),
        "--recover-timeout",
        "4",
        "--kill-grace",
        "0",
    ]);
    let mut prefix: Vec<&str> = namespace.to_vec();
    prefix.extend([
        "sh",
        "-c",
        PID_REUSE_SCRIPT,
        "sh",
        utf8(&out),
        utf8(&pidfile),
    ]);
    let output = wrapped(&prefix, &inner).output().expect("unshare");
    let report = stdout(&output);
    let fields: Vec<&str> = report.split_whitespace().collect();
    let [rch_pid, unrelated, state, code] = fields[..] else {
        panic!("{report}\n{}", stderr(&output));
    };
    let sweep_err = fs::read_to_string(world.path("sweep.json.err")).unwrap_or_default();
    assert_eq!(code, "1", "{report}: {sweep_err}");
    let document: Value =
        serde_json::from_str(&fs::read_to_string(&out).expect("summary")).expect("json");
    assert_eq!(
        document["leases"][0]["error"],
        "timed out after 4000ms waiting for child exit and diagnostic EOF"
    );
    assert!(
        state == "S" || state == "R",
        "the unrelated process {unrelated} (the client was {rch_pid}) was killed: state {state}"
    );
}

// ------------------------------------------------------------------ 5. report

/// The value of the sample `name` (with the lease-directory label of
/// `lease_dir` and, when given, `extra`) in a metrics file.
fn sample(prom: &Path, lease_dir: &Path, name: &str, extra: &str) -> f64 {
    let text = fs::read_to_string(prom).expect("metrics file");
    let separator = if extra.is_empty() { "" } else { "," };
    let prefix = format!(
        "{name}{{lease_dir=\"{}\"{separator}{extra}}} ",
        lease_dir.display()
    );
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
        .parse()
        .expect("a number")
}

/// A metrics folder in the world and the file in it.
fn metrics_path(world: &World) -> PathBuf {
    fs::create_dir_all(world.path("textfile")).expect("mkdir");
    world.path("textfile/rch.prom")
}

/// The binary with `args` run by strace, which acts (`inject`) on the
/// `when`-th rename of the main thread: the state file's replacement is
/// the first, the metrics file's the second.
fn sweep_under_strace(world: &World, args: &[&str], inject: &str) -> std::process::Output {
    let inner = world.command(args);
    under_strace(&[], "rename,renameat,renameat2", inject, &inner)
        .output()
        .expect("run under strace")
}

#[test]
fn a_signal_while_the_state_or_metrics_are_written_still_decides_the_exit() {
    if !tool_or_skip("/usr/bin/strace", "strace") {
        return;
    }
    // The first rename replaces the state file, the second the metrics.
    for when in [1, 2] {
        let world = World::new();
        let id = world.will_complete(Journal::stale("w1", 2 * HOUR_MS));
        state_with_entry(&world, &new_id());
        let rch = world.completing_rch();
        let prom = metrics_path(&world);
        let args = ["--json", "--rch", utf8(&rch), "--metrics-file", utf8(&prom)];
        let output = sweep_under_strace(&world, &args, &format!("signal=SIGTERM:when={when}"));
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(143), "rename {when}: {text}");
        let document = one_document(&output);
        assert_eq!(document["exit_code"], 143);
        // The recovery happened; the run is still no success.
        assert_eq!(rows(&document), [(id, "recovered".into(), None)]);
        assert!(text.contains("stopped by SIGTERM"), "{text}");
        assert_eq!(
            world.state()["last_success_unix_ms"],
            EARLIER_SUCCESS_MS,
            "rename {when}"
        );
        let leases = world.leases();
        assert_eq!(sample(&prom, &leases, "rch_sweep_exit_code", ""), 143.0);
        assert_eq!(
            sample(
                &prom,
                &leases,
                "rch_sweep_last_success_timestamp_seconds",
                ""
            ),
            1_700_000_000.0,
            "rename {when}"
        );
    }
}

#[test]
fn the_run_duration_is_one_measurement_taken_after_the_save() {
    if !tool_or_skip("/usr/bin/strace", "strace") {
        return;
    }
    let world = World::new();
    world.will_complete(Journal::stale("w1", 2 * HOUR_MS));
    let rch = world.completing_rch();
    let prom = metrics_path(&world);
    // The state file's rename takes a quarter of a second more.
    let output = sweep_under_strace(
        &world,
        &["--json", "--rch", utf8(&rch), "--metrics-file", utf8(&prom)],
        "delay_exit=250000:when=1",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let document = one_document(&output);
    let json_ms = document["duration_ms"].as_u64().expect("duration_ms") as f64;
    let metrics_ms = sample(&prom, &world.leases(), "rch_sweep_run_duration_seconds", "") * 1000.0;
    assert!(
        (json_ms..json_ms + 1.0).contains(&metrics_ms),
        "JSON {json_ms} ms, metrics {metrics_ms} ms"
    );
    assert!(
        metrics_ms >= 250.0,
        "taken before the save: {metrics_ms} ms"
    );
}

/// A metrics file as an earlier run left it, reporting `seconds` as the
/// last success of `lease_dir`.
fn earlier_metrics(prom: &Path, lease_dir: &Path, seconds: u64) {
    fs::write(
        prom,
        format!(
            "# HELP rch_sweep_last_success_timestamp_seconds x\n\
             # TYPE rch_sweep_last_success_timestamp_seconds gauge\n\
             rch_sweep_last_success_timestamp_seconds{{lease_dir=\"{}\"}} {seconds}\n",
            lease_dir.display()
        ),
    )
    .expect("write metrics");
}

#[test]
fn a_run_that_ends_in_74_or_78_before_its_summary_still_writes_its_metrics() {
    // (what is wrong, exit code, the last success the metrics then report)
    type Setup = fn(&World, &Path) -> Vec<String>;
    let cases: [(&str, Setup, i32, u64); 6] = [
        (
            "a state path beginning with ~",
            |_, _| vec!["--state-file".into(), "~/state/backoff.json".into()],
            78,
            0,
        ),
        (
            "no rch",
            |_, _| vec!["--rch".into(), "/nonexistent/rch".into()],
            78,
            1_700_000_000,
        ),
        (
            "an unknown state version",
            |world, prom| {
                fs::write(world.state_file(), r#"{"version": 99}"#).expect("write");
                earlier_metrics(prom, &world.leases(), 1_700_000_500);
                vec![]
            },
            78,
            1_700_000_500,
        ),
        (
            "a state path that is a folder",
            |world, _| {
                let folder = world.path("state/folder.json");
                fs::create_dir_all(&folder).expect("mkdir");
                vec!["--state-file".into(), folder.display().to_string()]
            },
            74,
            0,
        ),
        (
            "a lease directory that is a file",
            |world, _| {
                let file = world.path("elsewhere/job-leases");
                fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
                fs::write(&file, "").expect("write");
                vec!["--lease-dir".into(), file.display().to_string()]
            },
            78,
            1_700_000_000,
        ),
        (
            "a state path inside the lease directory",
            |world, _| {
                let inside = world.leases().join("backoff.json");
                vec!["--state-file".into(), inside.display().to_string()]
            },
            78,
            0,
        ),
    ];
    for (what, setup, code, last_success) in cases {
        let world = World::new();
        world.add(&Journal::stale("w1", 2 * HOUR_MS));
        state_with_entry(&world, &new_id());
        let rch = world.fake_rch("rch", "exit 1");
        let prom = metrics_path(&world);
        let mut args = vec![
            "--json".to_owned(),
            "--metrics-file".to_owned(),
            utf8(&prom).to_owned(),
        ];
        args.extend(setup(&world, &prom));
        if !args.iter().any(|arg| arg == "--rch") {
            args.extend(["--rch".to_owned(), utf8(&rch).to_owned()]);
        }
        if !args.iter().any(|arg| arg == "--state-file") {
            args.extend([
                "--state-file".to_owned(),
                utf8(&world.state_file()).to_owned(),
            ]);
        }
        let leases = match args.iter().position(|arg| arg == "--lease-dir") {
            Some(at) => PathBuf::from(&args[at + 1]),
            None => {
                args.extend(["--lease-dir".to_owned(), utf8(&world.leases()).to_owned()]);
                world.leases()
            }
        };
        let output = World::bare_command().args(&args).output().expect("run");
        assert_eq!(
            output.status.code(),
            Some(code),
            "{what}: {}",
            stderr(&output)
        );
        assert_error_document(&output, code, "");
        assert_eq!(
            sample(&prom, &leases, "rch_sweep_exit_code", ""),
            f64::from(code),
            "{what}"
        );
        assert_eq!(
            sample(
                &prom,
                &leases,
                "rch_sweep_last_success_timestamp_seconds",
                ""
            ),
            last_success as f64,
            "{what}"
        );
        for (name, extra) in [
            ("rch_sweep_journals_scanned", ""),
            ("rch_sweep_candidates", ""),
            ("rch_sweep_recoveries", "outcome=\"failed\""),
        ] {
            assert_eq!(sample(&prom, &leases, name, extra), 0.0, "{what}: {name}");
        }
    }
}

#[test]
fn a_held_lock_writes_no_metrics() {
    let world = World::new();
    world.add(&Journal::stale("w1", 2 * HOUR_MS));
    let rch = world.fake_rch("rch", "exit 1");
    let prom = metrics_path(&world);
    // Another sweep's lock, held by flock(1) on the very lock file.
    fs::create_dir_all(world.state_file().parent().expect("folder")).expect("mkdir");
    fs::set_permissions(
        world.state_file().parent().expect("folder"),
        fs::Permissions::from_mode(0o700),
    )
    .expect("chmod");
    let lock = world.path("state/backoff.json.lock");
    let held = hold_flock(&lock);
    let output = world.run(&["--rch", utf8(&rch), "--metrics-file", utf8(&prom)]);
    release(held);
    assert_eq!(output.status.code(), Some(75), "{}", stderr(&output));
    assert!(!prom.exists(), "a held lock wrote metrics");
}

#[test]
fn the_last_success_reported_never_goes_backwards() {
    let world = World::new();
    let prom = metrics_path(&world);
    let rch = world.fake_rch("rch", "exit 1");
    // No lease directory yet: a success, with no state to keep it in.
    fs::remove_dir(world.leases()).expect("rmdir");
    let output = world.run(&["--rch", utf8(&rch), "--metrics-file", utf8(&prom)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let leases = world.leases();
    let name = "rch_sweep_last_success_timestamp_seconds";
    let first = sample(&prom, &leases, name, "");
    assert!(first > 0.0);
    // Then rch starts leaving leases, and the first one fails.
    fs::create_dir(&leases).expect("mkdir");
    world.add(&Journal::stale("w1", 2 * HOUR_MS));
    let output = world.run(&["--rch", utf8(&rch), "--metrics-file", utf8(&prom)]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(sample(&prom, &leases, name, ""), first);
    assert!(world.state()["last_success_unix_ms"].is_null());
}

// ------------------------------------------------------------------ docs

fn repo_text(path: &str) -> String {
    fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect(path)
}

/// The rows of the markdown table "what happened | the lease | ...".
fn charged_table(markdown: &str) -> Vec<String> {
    markdown
        .lines()
        .skip_while(|line| !line.starts_with("| what happened | the lease |"))
        .take_while(|line| line.starts_with('|'))
        .map(str::to_owned)
        .collect()
}

/// (the lease, exit) of each row of the man page's tables, in order: the
/// table is split in two (groff fits a table on one page), each with the
/// same header.
fn man_charged_rows(page: &str) -> Vec<(String, String)> {
    let blocks: Vec<&str> = page
        .match_indices("what happened\tthe lease")
        .map(|(start, _)| &page[start..page[start..].find(".TE").expect(".TE") + start])
        .collect();
    assert!(!blocks.is_empty(), "the man page's table");
    blocks.into_iter().flat_map(man_block_rows).collect()
}

/// (the lease, exit) of each row of one of the man page's tables.
fn man_block_rows(block: &str) -> Vec<(String, String)> {
    let roman = |field: &str| {
        field
            .replace("\\fB", "")
            .replace("\\fI", "")
            .replace("\\fP", "")
    };
    let ends: Vec<Vec<&str>> = block
        .lines()
        .filter(|line| line.starts_with("T}\t"))
        .map(|line| line.split('\t').collect())
        .collect();
    let leases = ends
        .iter()
        .filter(|fields| fields[1].starts_with("\\fB"))
        .map(|fields| roman(fields[1]));
    let exits = ends
        .iter()
        .filter_map(|fields| fields.last())
        .filter(|last| **last != "T{")
        .map(|last| roman(last));
    leases.zip(exits).collect()
}

#[test]
fn the_readme_man_page_and_systemd_readme_give_one_table_of_what_is_charged() {
    let readme = charged_table(&repo_text("README.md"));
    assert_eq!(readme.len(), 27, "{readme:#?}");
    assert_eq!(readme, charged_table(&repo_text("systemd/README.md")));
    let rows: Vec<(String, String)> = readme[2..]
        .iter()
        .map(|row| {
            let cells: Vec<&str> = row.split(" | ").collect();
            (
                cells[1].trim_matches('`').to_owned(),
                cells[4].trim_end_matches(" |").to_owned(),
            )
        })
        .collect();
    assert_eq!(rows, man_charged_rows(&repo_text("man/rch-sweep.1")));
}

/// The re-read of a journal just before its start fails because the
/// process is out of descriptors (EMFILE): the host's fault, not the
/// lease's (SPEC "One recovery" step 2). strace counts an injection per
/// thread: each recovery's thread opens the lease directory, then the
/// journal, so `when=2` fails every re-read's open (a scan thread that
/// opens two journals may lose the second one too: that one is skipped
/// `unreadable`, which is no charge either, and drops its entry as it does
/// for any journal that is no candidate).
#[test]
fn a_reread_the_host_has_no_descriptor_for_is_75_and_charges_no_lease() {
    if !tool_or_skip("/usr/bin/strace", "strace") {
        return;
    }
    let world = World::new();
    let first = Journal::stale("w1", 3 * HOUR_MS);
    let second = Journal::stale("w2", 2 * HOUR_MS);
    world.add(&first);
    world.add(&second);
    let entry = state_with_entry(&world, &first.id);
    let started = world.path("started.log");
    let rch = world.fake_rch(
        "rch",
        &format!("echo \"$3\" >> '{}'\nexit 1", started.display()),
    );
    let leases = world.leases();
    let inner = world.command(&["--json", "--rch", utf8(&rch)]);
    let output = under_strace(
        &["-f", "-P", utf8(&leases)],
        "openat",
        "error=EMFILE:when=2",
        &inner,
    )
    .output()
    .expect("run under strace");
    assert_eq!(output.status.code(), Some(75), "{}", stderr(&output));
    let document = one_document(&output);
    assert_eq!(document["exit_code"], 75, "{document}");
    assert_eq!(document["failed"], 0, "{document}");
    let rows = rows(&document);
    assert!(!rows.is_empty(), "{document}");
    for (id, outcome, error) in &rows {
        assert_eq!(outcome, "deferred", "{document}");
        // A scan thread that lost its own open instead cuts the scan short:
        // then nothing is due, and the run's error names the shortage.
        let Some(error) = error.as_deref() else {
            let run_error = document["error"].as_str().unwrap_or_default();
            assert!(run_error.contains("Too many open files"), "{document}");
            continue;
        };
        assert!(
            error.starts_with(
                "the host could not start a recovery (this process has too many open files (RLIMIT_NOFILE))"
            ) && error.contains(&format!("{id}.json"))
                && error.contains("Too many open files"),
            "{error}"
        );
    }
    assert!(!started.exists(), "no child ran");
    // Nothing charged, nothing dropped: the one entry is as it was written
    // (a scan cut short prunes nothing), and no other appeared.
    let saved = world.state();
    assert_eq!(saved["leases"], json!({ &first.id: entry }), "{saved}");
    assert_eq!(saved["last_success_unix_ms"], EARLIER_SUCCESS_MS);
    let said = stderr(&output);
    assert!(
        said.contains("no lease was charged a failure")
            || said.contains("every lease keeps its backoff"),
        "{said}"
    );
}

/// The metrics of a run that stops on an error after it opened the state
/// folder report the last success of the state in that folder, read
/// through it, never by the path again (SPEC "Files"): a folder swapped in
/// meanwhile, with a later last success, is not what they report.
#[test]
fn the_metrics_of_an_error_after_the_state_folder_opened_read_the_state_in_that_folder() {
    if !tool_or_skip("/usr/bin/strace", "strace") {
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let world = World::new();
    world.add(&Journal::stale("w1", 2 * HOUR_MS));
    state_with_entry(&world, &new_id());
    let prom = metrics_path(&world);
    let state_file = world.state_file();
    let lock_file = world.path("state/backoff.json.lock");
    // Stopped (SIGSTOP) as its second flock returns: the state lock, taken
    // on the folder the run opened, before `rch` is looked for.
    let mut child = Command::new("/usr/bin/strace")
        .args(["-qq", "-o", "/dev/null", "-e", "trace=flock"])
        .args(["-e", "inject=flock:signal=SIGSTOP:when=2", BIN, "--json"])
        .args(["--lease-dir", utf8(&world.leases())])
        .args(["--state-file", utf8(&state_file)])
        .args(["--metrics-file", utf8(&prom)])
        .args(["--rch", "/nonexistent/rch"])
        .env_remove("RCH_STATE_HOME")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start strace");
    let sweep = loop {
        let held = fs::metadata(&lock_file)
            .ok()
            .map(|meta| format!(":{} ", meta.ino()));
        let locks = fs::read_to_string("/proc/locks").expect("/proc/locks");
        let holder = held.and_then(|held| {
            locks
                .lines()
                .filter(|line| line.contains(" FLOCK ") && line.contains(&held))
                .find_map(|line| line.split_whitespace().nth(4)?.parse::<i32>().ok())
        });
        if let Some(pid) = holder {
            break pid;
        }
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("the sweep ended ({status}) before it took the state lock");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // The folder renamed away, another with a later last success in its place.
    fs::rename(world.path("state"), world.path("state.away")).expect("rename");
    fs::create_dir(world.path("state")).expect("mkdir");
    fs::set_permissions(world.path("state"), fs::Permissions::from_mode(0o700)).expect("chmod");
    fs::write(
        &state_file,
        r#"{"version": 1, "last_success_unix_ms": 1800000000000, "leases": {}}"#,
    )
    .expect("write");
    // SAFETY: kill with a PID of our own child's child and a valid signal.
    assert_eq!(unsafe { libc::kill(sweep, libc::SIGCONT) }, 0);
    let output = child.wait_with_output().expect("wait for the sweep");
    assert_eq!(output.status.code(), Some(78), "{}", stderr(&output));
    assert_eq!(
        sample(
            &prom,
            &world.leases(),
            "rch_sweep_last_success_timestamp_seconds",
            ""
        ),
        (EARLIER_SUCCESS_MS / 1000) as f64
    );
}

//! rch's daemon (issue 27) on the real binary: the socket a run checks is
//! the one every child gets; a daemon that is down, lost during the run, or
//! looked for in the wrong place charges no lease (75, 78); a failure while
//! it answers is charged as before; only a real run with something due asks
//! `rch` or touches a socket; `doctor` reports it.
//!
//! The daemon is `examples/fake-rchd` on a real Unix socket, speaking rch's
//! health protocol; the `rch` is a fake that resolves its socket as rch does
//! (`examples/fake-rch`) and, like rch, asks the daemon before a recovery.
//! Every command runs with a home of its own and no `XDG_RUNTIME_DIR`,
//! `XDG_CACHE_HOME` or `XDG_CONFIG_HOME` unless a test sets one, so no
//! daemon of the machine running the tests is ever seen.

mod common;

use common::backoff::{twice_failed_entry, write_entry};
use common::isolated::{isolate, run_json, sweep};
use common::mounts::private_mount_namespace;
use common::*;
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The debug build's shortening of the check's waits (connect, read, pause
/// between tries), so a daemon that never answers costs a test 2.5 s, not
/// 32 s. What the waits are is not what these tests test.
const WAIT_MS: (&str, &str) = ("RCH_SWEEP_TEST_DAEMON_WAIT_MS", "500");

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// A folder for a daemon's socket, as `XDG_RUNTIME_DIR` would be.
fn runtime_dir(world: &World) -> PathBuf {
    let dir = world.path("run");
    fs::create_dir_all(&dir).expect("runtime dir");
    dir
}

/// Writes a state file with one entry for `id`, failed twice and due now
/// (no last success); returns the entry as written.
fn seed_entry(world: &World, id: &str, worker: &str) -> Value {
    let entry = twice_failed_entry(worker);
    write_entry(world, id, &entry, None);
    entry
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The value of `name{lease_dir=...}` in a metrics file.
fn gauge(prom: &Path, name: &str) -> Option<f64> {
    let text = fs::read_to_string(prom).expect("metrics file");
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find(|line| line.starts_with(&format!("{name}{{")) && !line.contains(",outcome"))
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
}

#[test]
fn the_socket_each_child_gets_is_the_one_the_run_checked() {
    let world = World::new();
    let runtime = runtime_dir(&world);
    let daemon = FakeDaemon::start(&runtime.join("rch.sock"), Reply::Healthy);
    let seen = world.path("seen");
    // Each child records the socket it was handed, then recovers.
    let body = format!(
        "echo \"$3 $RCH_SOCKET_PATH\" >> '{seen}'\ncp \"{done}/$3.json\" \"$leases/$3.json\"",
        seen = seen.display(),
        done = world.path("done").display()
    );
    let rch = world.daemon_rch("rch", &body);
    let first = world.will_complete(Journal::stale("hz4", 3 * HOUR_MS));
    let second = world.will_complete(Journal::stale("w2", 2 * HOUR_MS));
    let mut command = sweep(&world, &["--rch", utf8(&rch)]);
    command.env("XDG_RUNTIME_DIR", &runtime);
    let (code, document, stderr) = run_json(command);
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(document["recovered"], 2, "{document}");
    // rch resolved $XDG_RUNTIME_DIR/rch.sock; that is what was checked
    // and what each child got.
    assert_eq!(
        document["daemon"],
        json!({"socket": utf8(&daemon.socket), "chosen_by": "rch", "up": true}),
        "{document}"
    );
    let mut got = lines(&seen);
    got.sort();
    let mut expected = vec![
        format!("{first} {}", daemon.socket.display()),
        format!("{second} {}", daemon.socket.display()),
    ];
    expected.sort();
    assert_eq!(got, expected);

    // The human summary says it too.
    world.will_complete(Journal::stale("fsn1", 2 * HOUR_MS));
    let mut command = sweep(&world, &["--rch", utf8(&rch)]);
    command.env("XDG_RUNTIME_DIR", &runtime);
    let output = command.output().expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(
        stdout(&output).contains(&format!(
            "rch's daemon answers at {} (as rch resolves it)\n",
            daemon.socket.display()
        )),
        "{}",
        stdout(&output)
    );
}

fn stderr_of(output: &Output) -> String {
    stderr(output)
}

#[test]
fn a_daemon_lost_between_two_recoveries_charges_nothing_and_starts_no_more() {
    let world = World::new();
    let runtime = runtime_dir(&world);
    let daemon = FakeDaemon::start(&runtime.join("rch.sock"), Reply::Healthy);
    let calls = world.path("calls");
    // The first recovery takes the daemon's socket away and fails, as rch
    // fails when its daemon dies under it.
    let body = format!(
        "echo \"$3\" >> '{calls}'\nrm -f \"$RCH_SOCKET_PATH\"\necho 'rch: [RCH-E504] lost the daemon' >&2\nexit 1",
        calls = calls.display()
    );
    let rch = world.daemon_rch("rch", &body);
    // Three leases on one worker: recovered one after another.
    let journals: Vec<Journal> = [4, 3, 2]
        .map(|hours| Journal::stale("w1", hours * HOUR_MS))
        .into();
    for journal in &journals {
        world.add(journal);
    }
    let ids: Vec<String> = journals.iter().map(|j| j.id.clone()).collect();
    let entry = seed_entry(&world, &ids[0], "w1");

    let mut command = sweep(&world, &["--rch", utf8(&rch)]);
    command
        .env("XDG_RUNTIME_DIR", &runtime)
        .env(WAIT_MS.0, WAIT_MS.1);
    let (code, document, stderr) = run_json(command);
    assert_eq!(code, 75, "{document}\n{stderr}");
    assert_eq!(
        lines(&calls),
        [ids[0].clone()],
        "no further recovery started"
    );
    assert_eq!(
        outcomes(&document),
        ids.iter()
            .map(|id| (id.clone(), "deferred".to_owned()))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        (document["failed"].clone(), document["attempted"].clone()),
        (json!(0), json!(0))
    );
    let socket = daemon.socket.display().to_string();
    let error = document["leases"][0]["error"].as_str().expect("error");
    assert!(
        error.starts_with(&format!(
            "rch's daemon at {socket} is not answering: no socket at all (nothing is at that path)"
        )) && error.contains("after the recovery failed: exit status: 1"),
        "{error}"
    );
    assert_eq!(document["daemon"]["up"], false, "{document}");
    assert_eq!(document["daemon"]["socket"], socket.as_str());
    let message = document["error"].as_str().expect("run error");
    for words in [
        socket.as_str(),
        "stopped answering during the run",
        "as rch resolves it",
        "systemctl --user start rchd",
    ] {
        assert!(message.contains(words), "{message} lacks {words}");
        assert!(stderr.contains(words), "{stderr} lacks {words}");
    }
    // Nothing charged: the seeded entry exactly as it was, no new ones.
    let state = world.state();
    assert_eq!(state["leases"], json!({ids[0].clone(): entry}), "{state}");
}

#[test]
fn a_failure_while_the_daemon_answers_is_charged_as_before() {
    let world = World::new();
    let runtime = runtime_dir(&world);
    let daemon = FakeDaemon::start(&runtime.join("rch.sock"), Reply::Healthy);
    let rch = world.daemon_rch("rch", "echo 'worker w1 unreachable' >&2\nexit 1");
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    world.add(&journal);
    let mut command = sweep(&world, &["--rch", utf8(&rch)]);
    command.env("XDG_RUNTIME_DIR", &runtime);
    let (code, document, stderr) = run_json(command);
    assert_eq!(code, 1, "{document}\n{stderr}");
    assert_eq!(document["failed"], 1, "{document}");
    assert_eq!(
        document["leases"][0]["error"],
        "exit status: 1: worker w1 unreachable"
    );
    assert_eq!(document["daemon"]["up"], true, "{document}");
    assert!(document.get("error").is_none(), "{document}");
    assert_eq!(world.state()["leases"][&journal.id]["failures"], 1);
    // Asked four times: by rch when asked which socket it uses (it reports
    // whether its daemon runs), by the check before the recoveries, by the
    // child itself, and by the recheck before the failure was charged.
    assert_eq!(daemon.requests(), 4);
}

#[test]
fn nothing_asks_rch_or_touches_the_socket_but_a_real_run_with_something_due() {
    let world = World::new();
    let runtime = runtime_dir(&world);
    let daemon = FakeDaemon::start(&runtime.join("rch.sock"), Reply::Healthy);
    let calls = world.path("calls");
    let log = format!("echo \"$*\" >> '{}'", calls.display());
    let rch = world.fake_rch_with(
        "rch",
        &FakeRch {
            first: &log,
            recover: "exit 1",
            daemon: true,
            ..FakeRch::default()
        },
    );
    let rch = utf8(&rch);
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    world.add(&journal);
    let prom = world.path("rch.prom");
    let prom = utf8(&prom);
    let quiet = |args: &[&str]| {
        let mut command = sweep(&world, args);
        command.env("XDG_RUNTIME_DIR", &runtime);
        command.output().expect("run")
    };
    let sub = |args: &[&str]| {
        let mut command = world.sub(args);
        isolate(&world, &mut command);
        command.env("XDG_RUNTIME_DIR", &runtime);
        command.output().expect("run")
    };
    assert_eq!(quiet(&["--rch", rch, "--dry-run"]).status.code(), Some(0));
    assert_eq!(quiet(&["--rch", rch, "--check"]).status.code(), Some(1));
    assert_eq!(sub(&["explain", &journal.id]).status.code(), Some(0));
    assert_eq!(sub(&["status"]).status.code(), Some(0));
    assert_eq!(lines(&calls), Vec::<String>::new(), "rch was asked");
    assert_eq!(daemon.requests(), 0, "the socket was touched");

    // A real run with nothing due (the lease backs off): nothing asked,
    // no daemon in the summary or the metrics.
    let mut entry = twice_failed_entry("w1");
    entry["next_attempt_unix_ms"] = json!(now_ms() + HOUR_MS);
    write_entry(&world, &journal.id, &entry, None);
    let mut command = sweep(&world, &["--rch", rch, "--metrics-file", prom]);
    command.env("XDG_RUNTIME_DIR", &runtime);
    let (code, document, _) = run_json(command);
    assert_eq!(
        (code, document["backing_off"].clone()),
        (0, json!(1)),
        "{document}"
    );
    assert!(document.get("daemon").is_none(), "{document}");
    assert!(document.get("rch").is_none(), "{document}");
    assert_eq!(gauge(Path::new(prom), "rch_sweep_daemon_up"), None);
    assert_eq!(lines(&calls), Vec::<String>::new(), "rch was asked");
    assert_eq!(daemon.requests(), 0, "the socket was touched");

    // Once it is due, the run asks rch (its version line and its own
    // release, then its socket) and checks the daemon.
    let forget = sub(&["forget", "--all"]);
    assert_eq!(forget.status.code(), Some(0), "{}", stderr(&forget));
    let mut command = sweep(&world, &["--rch", rch, "--metrics-file", prom]);
    command.env("XDG_RUNTIME_DIR", &runtime);
    let (code, document, _) = run_json(command);
    assert_eq!(code, 1, "{document}");
    assert_eq!(document["daemon"]["up"], true, "{document}");
    assert_eq!(gauge(Path::new(prom), "rch_sweep_daemon_up"), Some(1.0));
    assert_eq!(
        lines(&calls).get(..3),
        Some(
            &[
                "--version".to_owned(),
                "--capabilities".to_owned(),
                "--json --format json daemon status".to_owned()
            ][..]
        )
    );
    assert_eq!(
        document["rch"],
        json!({"path": rch, "version": "rch 2.1.34 (fake, rch-sweep tests)", "release": "2.1.34"}),
        "{document}"
    );
    assert!(daemon.requests() >= 2, "checked, then asked by the child");
}

/// One way a daemon is not answering, and what the run must say about it.
struct Down {
    name: &'static str,
    /// Sets up the socket (a daemon, a stale file, or nothing) and returns
    /// the daemon to keep alive.
    arrange: fn(&Path) -> Option<FakeDaemon>,
    why: &'static str,
    /// How the socket reaches the run: `--socket`, `RCH_SOCKET_PATH`, or
    /// `rch` resolving `$XDG_RUNTIME_DIR/rch.sock`.
    chosen_by: &'static str,
}

fn downs() -> Vec<Down> {
    vec![
        Down {
            name: "no socket",
            arrange: |_| None,
            why: "no socket at all (nothing is at that path)",
            chosen_by: "option",
        },
        Down {
            name: "a socket file nobody listens on",
            arrange: |socket| {
                drop(std::os::unix::net::UnixListener::bind(socket).expect("bind"));
                None
            },
            why: "connection refused (a socket file with no daemon behind it)",
            chosen_by: "environment",
        },
        Down {
            name: "starting",
            arrange: |socket| Some(FakeDaemon::start(socket, Reply::Starting)),
            why: "it reports status \"starting\", not \"healthy\"",
            chosen_by: "rch",
        },
        Down {
            name: "HTTP 500",
            arrange: |socket| Some(FakeDaemon::start(socket, Reply::Error)),
            why: "it answered \"HTTP/1.0 500 Internal Server Error\"",
            chosen_by: "option",
        },
        Down {
            name: "closes without a byte",
            arrange: |socket| Some(FakeDaemon::start(socket, Reply::Close)),
            why: "it closed the connection without a reply",
            chosen_by: "environment",
        },
        Down {
            name: "never answers",
            arrange: |socket| Some(FakeDaemon::start(socket, Reply::Silent)),
            why: "no reply within 500ms",
            chosen_by: "rch",
        },
    ]
}

/// Whether a daemon of this machine may answer at one of rch's usual
/// places the tests cannot move (`/run/user/<uid>`, `/tmp`): a run that
/// finds its own daemon down would then rightly exit 78, not 75.
fn host_daemon_socket() -> Option<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    [
        format!("/run/user/{uid}/rch.sock"),
        "/tmp/rch.sock".to_owned(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|path| fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()))
}

#[test]
fn a_daemon_down_before_any_recovery_defers_every_due_lease_and_exits_75() {
    if let Some(socket) = host_daemon_socket() {
        eprintln!(
            "skipped: this machine's rch daemon socket {} would answer",
            socket.display()
        );
        return;
    }
    for down in downs() {
        let world = World::new();
        let runtime = runtime_dir(&world);
        let socket = runtime.join("rch.sock");
        let daemon = (down.arrange)(&socket);
        let started = world.path("started");
        let rch = world.daemon_rch("rch", &format!("touch '{}'\nexit 0", started.display()));
        let older = Journal::stale("w1", 3 * HOUR_MS);
        let newer = Journal::stale("w2", 2 * HOUR_MS);
        world.add(&older);
        world.add(&newer);
        let entry = seed_entry(&world, &older.id, "w1");
        let prom = world.path("rch.prom");
        let mut command = sweep(
            &world,
            &["--rch", utf8(&rch), "--metrics-file", utf8(&prom)],
        );
        command.env(WAIT_MS.0, WAIT_MS.1);
        let how = match down.chosen_by {
            "option" => {
                command.args(["--socket", utf8(&socket)]);
                "named by --socket"
            }
            "environment" => {
                command.env("RCH_SOCKET_PATH", &socket);
                "named by RCH_SOCKET_PATH"
            }
            _ => {
                command.env("XDG_RUNTIME_DIR", &runtime);
                "as rch resolves it"
            }
        };
        let (code, document, stderr) = run_json(command);
        let name = down.name;
        assert_eq!(code, 75, "{name}: {document}\n{stderr}");
        assert_eq!(
            document["daemon"],
            json!({"socket": utf8(&socket), "chosen_by": down.chosen_by, "up": false,
                "error": down.why}),
            "{name}"
        );
        let lease_error = format!(
            "rch's daemon at {} is not answering: {}",
            socket.display(),
            down.why
        );
        for lease in document["leases"].as_array().expect("leases") {
            assert_eq!(lease["outcome"], "deferred", "{name}: {document}");
            assert_eq!(lease["error"], lease_error.as_str(), "{name}");
        }
        assert_eq!(document["deferred"], 2, "{name}");
        assert_eq!(document["attempted"], 0, "{name}");
        for words in [
            utf8(&socket),
            how,
            down.why,
            "no lease was charged",
            "systemctl --user start rchd",
        ] {
            assert!(stderr.contains(words), "{name}: {stderr} lacks {words}");
            assert!(
                document["error"]
                    .as_str()
                    .is_some_and(|e| e.contains(words)),
                "{name}: {document} lacks {words}"
            );
        }
        assert!(!started.exists(), "{name}: a recovery ran");
        assert_eq!(
            world.state()["leases"],
            json!({older.id.clone(): entry}),
            "{name}: an entry changed"
        );
        assert_eq!(gauge(&prom, "rch_sweep_daemon_up"), Some(0.0), "{name}");
        assert_eq!(gauge(&prom, "rch_sweep_exit_code"), Some(75.0), "{name}");
        if name == "no socket" {
            // And in words, for a person at a terminal.
            let mut command = sweep(&world, &["--rch", utf8(&rch), "--socket", utf8(&socket)]);
            command.env(WAIT_MS.0, WAIT_MS.1);
            let output = command.output().expect("run");
            assert_eq!(output.status.code(), Some(75));
            assert!(
                stdout(&output).contains(&format!(
                    "rch's daemon does not answer at {} (named by --socket): no socket at all (nothing is at that path)\n",
                    socket.display()
                )),
                "{}",
                stdout(&output)
            );
        }
        drop(daemon);
    }
}

/// `~/.config/rch/config.toml` naming `socket` as the daemon's.
fn rch_config(home: &Path, socket: &str) {
    let folder = home.join(".config/rch");
    fs::create_dir_all(&folder).expect("mkdir");
    fs::write(
        folder.join("config.toml"),
        format!("[general]\nsocket_path = \"{socket}\"\n"),
    )
    .expect("config");
}

#[test]
fn rch_looking_in_the_wrong_place_while_its_daemon_answers_elsewhere_exits_78() {
    // rch's config names a socket left from an old setup; the user
    // service's daemon answers at $XDG_RUNTIME_DIR/rch.sock.
    let world = World::new();
    let runtime = runtime_dir(&world);
    let daemon = FakeDaemon::start(&runtime.join("rch.sock"), Reply::Healthy);
    let home = world.path("home");
    rch_config(&home, "~/.cache/rch/old.sock");
    let stale = home.join(".cache/rch/old.sock");
    let rch = world.daemon_rch(
        "rch",
        &format!(
            "cp \"{done}/$3.json\" \"$leases/$3.json\"",
            done = world.path("done").display()
        ),
    );
    let id = world.will_complete(Journal::stale("w1", 2 * HOUR_MS));
    let entry = seed_entry(&world, &id, "w1");
    let mut command = sweep(&world, &["--rch", utf8(&rch)]);
    command
        .env("XDG_RUNTIME_DIR", &runtime)
        .env(WAIT_MS.0, WAIT_MS.1);
    let (code, document, stderr) = run_json(command);
    assert_eq!(code, 78, "{document}\n{stderr}");
    assert_eq!(
        document["daemon"],
        json!({"socket": utf8(&stale), "chosen_by": "rch", "up": false,
            "error": "no socket at all (nothing is at that path)", "answering_elsewhere": utf8(&daemon.socket)}),
        "{document}"
    );
    let fix = format!("RCH_SOCKET_PATH={}", daemon.socket.display());
    for words in [
        utf8(&stale),
        utf8(&daemon.socket),
        "as rch resolves it",
        fix.as_str(),
        "no lease was charged",
    ] {
        assert!(stderr.contains(words), "{stderr} lacks {words}");
    }
    assert_eq!(outcomes(&document), [(id.clone(), "deferred".to_owned())]);
    assert_eq!(world.state()["leases"], json!({id.clone(): entry}));

    // The fix it names works.
    let mut command = sweep(&world, &["--rch", utf8(&rch)]);
    command
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("RCH_SOCKET_PATH", &daemon.socket);
    let (code, document, stderr) = run_json(command);
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(document["recovered"], 1);
    assert_eq!(document["daemon"]["chosen_by"], "environment");
}

/// cron's own environment (no `XDG_RUNTIME_DIR`): `rch` looks at
/// `~/.cache/rch/rch.sock` while the user service's daemon listens at
/// `/run/user/<uid>/rch.sock`. That folder is made on a tmpfs in a private
/// mount namespace of the test, so the machine's `/run/user` is untouched;
/// where that is not permitted, the test says so and skips.
#[test]
fn in_crons_environment_the_user_services_daemon_at_run_user_is_named() {
    if !root_or_skip("mounting a private /run/user") {
        return;
    }
    let private = private_mount_namespace("true").output();
    if !private.is_ok_and(|output| output.status.success()) {
        eprintln!("skipped: unshare --mount is not permitted here");
        return;
    }
    let world = World::new();
    let home = world.path("home");
    fs::create_dir_all(&home).expect("home");
    let started = world.path("started");
    let rch = world.daemon_rch("rch", &format!("touch '{}'", started.display()));
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    world.add(&journal);
    let out = world.path("out.json");
    let ready = world.path("ready");
    let script = r#"
[ -d /run/user ] || mount -t tmpfs -o mode=0755 rch-sweep-run /run || exit 99
mount -t tmpfs -o mode=0755 rch-sweep-test /run/user 2>/dev/null \
  || { mkdir -p /run/user && mount -t tmpfs -o mode=0755 rch-sweep-test /run/user; } || exit 99
uid=$(id -u)
mkdir -m 0700 "/run/user/$uid"
python3 "$1" --socket "/run/user/$uid/rch.sock" > "$2" &
daemon=$!
n=0
until grep -q ready "$2"; do n=$((n + 1)); [ $n -lt 600 ] || exit 98; sleep 0.05; done
status=0
env -i HOME="$3" LOGNAME=root SHELL=/bin/sh PATH=/usr/bin:/bin \
  "$4" --json --lease-dir "$5" --state-file "$6" --rch "$7" > "$8" || status=$?
kill "$daemon"; wait "$daemon"
exit $status
"#;
    let output = private_mount_namespace(script)
        .args([
            FAKE_RCHD,
            utf8(&ready),
            utf8(&home),
            BIN,
            utf8(&world.leases()),
            utf8(&world.state_file()),
            utf8(&rch),
            utf8(&out),
        ])
        .output()
        .expect("unshare");
    if output.status.code() == Some(99) {
        eprintln!(
            "skipped: cannot mount a tmpfs on /run/user: {}",
            stderr(&output)
        );
        return;
    }
    let document: Value = serde_json::from_str(&fs::read_to_string(&out).unwrap_or_default())
        .unwrap_or_else(|_| panic!("no JSON document; {}", stderr(&output)));
    assert_eq!(
        output.status.code(),
        Some(78),
        "{document}\n{}",
        stderr(&output)
    );
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let right = format!("/run/user/{uid}/rch.sock");
    let wrong = home.join(".cache/rch/rch.sock");
    assert_eq!(
        document["daemon"],
        json!({"socket": utf8(&wrong), "chosen_by": "rch", "up": false,
            "error": "no socket at all (nothing is at that path)", "answering_elsewhere": right}),
        "{document}"
    );
    // RCH_SOCKET_PATH alone: it works whatever rch's config says.
    let fix = format!(
        "Point rch at it: set RCH_SOCKET_PATH={right} on the crontab line or in the unit's drop-in (systemctl edit)"
    );
    assert!(
        document["error"]
            .as_str()
            .is_some_and(|e| e.ends_with(&fix)),
        "{document}"
    );
    assert!(!started.exists(), "a recovery ran");
    assert_eq!(world.state()["leases"], json!({}));
}

/// rch 2.1's config cache as an earlier rch run without `XDG_RUNTIME_DIR`
/// left it in `home`: schema 3, keyed by the config files rch reads from
/// `cwd` (none exists: 0 and 0), the merged config with the default socket
/// `~/.cache/rch/rch.sock` resolved.
fn write_rch_config_cache(home: &Path, cwd: &Path) -> PathBuf {
    let cached_default = home.join(".cache/rch/rch.sock");
    let absent = |path: PathBuf| json!({"path": utf8(&path), "mtime_unix_nanos": 0, "len": 0});
    let cache = home.join(".cache/rch/config.cache.json");
    fs::create_dir_all(cache.parent().expect("folder")).expect("mkdir");
    let document = json!({
        "schema_version": 3,
        "source_fingerprints": [
            absent(home.join(".config/rch/config.toml")),
            absent(cwd.join(".rch/config.toml")),
        ],
        "config": {"general": {"enabled": true, "socket_path": utf8(&cached_default)}},
    });
    fs::write(&cache, document.to_string()).expect("write the cache");
    cache
}

#[test]
fn rchs_config_cache_no_longer_decides_the_socket() {
    // A user timer's environment: XDG_RUNTIME_DIR is set and the user
    // service's daemon answers under it, while rch's config cache, written
    // by an rch run without XDG_RUNTIME_DIR, holds ~/.cache's socket. rch
    // is run with its cache off, so it resolves the socket from this
    // environment: the run and doctor both find the daemon, and the
    // user's cache is left as it was.
    let world = World::new();
    let runtime = runtime_dir(&world);
    let daemon = FakeDaemon::start(&runtime.join("rch.sock"), Reply::Healthy);
    let home = world.path("home");
    let cwd = fs::canonicalize(world.dir.path()).expect("world");
    let cache = write_rch_config_cache(&home, &cwd);
    let cached = fs::read(&cache).expect("the cache");
    let rch = world.daemon_rch(
        "rch",
        &format!(
            "cp \"{done}/$3.json\" \"$leases/$3.json\"",
            done = world.path("done").display()
        ),
    );
    let id = world.will_complete(Journal::stale("w1", 2 * HOUR_MS));

    // doctor, asked in the timer's environment, finds the daemon.
    let mut doctor = world.sub(&["doctor", "--json", "--rch", utf8(&rch)]);
    isolate(&world, &mut doctor);
    doctor
        .current_dir(&cwd)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env(WAIT_MS.0, WAIT_MS.1);
    let output = doctor.output().expect("doctor");
    let report = one_document(&output);
    let row = report["checks"]
        .as_array()
        .and_then(|rows| rows.iter().find(|row| row["check"] == "daemon"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(row["status"], "ok", "{report}");
    assert!(
        row["finding"]
            .as_str()
            .is_some_and(|found| found.contains(utf8(&daemon.socket))),
        "{row}"
    );

    // So does the run, which recovers.
    let mut command = sweep(&world, &["--rch", utf8(&rch)]);
    command
        .current_dir(&cwd)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env(WAIT_MS.0, WAIT_MS.1);
    let (code, document, stderr) = run_json(command);
    assert_eq!(code, 0, "{document}\n{stderr}");
    assert_eq!(document["daemon"]["socket"], utf8(&daemon.socket));
    assert_eq!(outcomes(&document), [(id, "recovered".to_owned())]);
    assert_eq!(fs::read(&cache).expect("the cache"), cached);
}

#[test]
fn doctor_reports_the_daemon_as_a_run_would_meet_it() {
    if let Some(socket) = host_daemon_socket() {
        eprintln!(
            "skipped: this machine's rch daemon socket {} would answer",
            socket.display()
        );
        return;
    }
    let world = World::new();
    world.add(&Journal::stale("w1", 2 * HOUR_MS));
    let runtime = runtime_dir(&world);
    let doctor = |rch: &Path, env: &[(&str, &Path)], extra: &[&str]| {
        let mut command = world.sub(&["doctor", "--json", "--rch", utf8(rch)]);
        command.args(extra);
        isolate(&world, &mut command);
        command.env(WAIT_MS.0, WAIT_MS.1);
        for (key, value) in env {
            command.env(key, value);
        }
        let output = command.output().expect("doctor");
        let document = one_document(&output);
        let row = document["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .find(|row| row["check"] == "daemon")
            .cloned()
            .unwrap_or_else(|| panic!("no daemon row: {document}"));
        (output.status.code().unwrap_or(-1), row)
    };
    let field = |row: &Value, key: &str| row[key].as_str().unwrap_or_default().to_owned();

    // An rch without `daemon status`: warn, and say what that costs.
    let old = world.fake_rch("rch-old", "exit 1");
    let (code, row) = doctor(&old, &[], &[]);
    assert_eq!(
        (code, field(&row, "status")),
        (0, "warn".to_owned()),
        "{row}"
    );
    assert!(
        field(&row, "finding").contains("daemon status` failed: exit status: 2"),
        "{row}"
    );
    assert!(
        field(&row, "finding").contains("charged to its lease"),
        "{row}"
    );
    assert!(field(&row, "fix").contains("--socket"), "{row}");

    // rch resolves $XDG_RUNTIME_DIR/rch.sock, where nothing answers: fail.
    let rch = world.daemon_rch("rch", "exit 1");
    let socket = runtime.join("rch.sock");
    let (code, row) = doctor(&rch, &[("XDG_RUNTIME_DIR", &runtime)], &[]);
    assert_eq!(
        (code, field(&row, "status")),
        (1, "fail".to_owned()),
        "{row}"
    );
    assert_eq!(
        field(&row, "finding"),
        format!(
            "rch's daemon does not answer at {} (as rch resolves it): no socket at all (nothing is at that path)",
            socket.display()
        )
    );
    assert!(
        field(&row, "fix").contains("systemctl --user start rchd"),
        "{row}"
    );

    // It answers, but only at another usual place: fail, naming both.
    let elsewhere = world.path("other-run");
    fs::create_dir_all(&elsewhere).expect("mkdir");
    let daemon = FakeDaemon::start(&elsewhere.join("rch.sock"), Reply::Healthy);
    rch_config(&world.path("home"), utf8(&socket));
    let (code, row) = doctor(&rch, &[("XDG_RUNTIME_DIR", &elsewhere)], &[]);
    assert_eq!(
        (code, field(&row, "status")),
        (1, "fail".to_owned()),
        "{row}"
    );
    let finding = field(&row, "finding");
    assert!(
        finding.contains(utf8(&socket))
            && finding.contains(&format!("one answers at {}", daemon.socket.display())),
        "{row}"
    );
    assert!(
        field(&row, "fix").contains(&format!("RCH_SOCKET_PATH={}", daemon.socket.display())),
        "{row}"
    );

    // Named with --socket where it answers: ok, even for an old rch.
    let (code, row) = doctor(&old, &[], &["--socket", utf8(&daemon.socket)]);
    assert_eq!((code, field(&row, "status")), (0, "ok".to_owned()), "{row}");
    // An ok finding gives the reply's time, and rchd's release.
    let finding = field(&row, "finding");
    let took = finding
        .strip_prefix(&format!(
            "rch's daemon answers at {} (named by --socket), in ",
            daemon.socket.display()
        ))
        .and_then(|rest| rest.strip_suffix(" (rchd 2.1.34)"))
        .unwrap_or_default();
    assert!(took.ends_with(" ms") || took.ends_with(" s"), "{finding}");
}

/// A fake `rch` whose `daemon status` runs the shell command `answer` (an
/// older rch, without the command, when it is empty) and whose recovery
/// writes the `RCH_SOCKET_PATH` it was given to `seen`, then fails.
fn answering_rch(world: &World, answer: &str, seen: &Path) -> PathBuf {
    let first = if answer.is_empty() {
        String::new()
    } else {
        format!("if [ \"$*\" = '--json --format json daemon status' ]; then {answer}; exit 0; fi")
    };
    let recover = format!(
        "printf 'socket=%s\\n' \"$RCH_SOCKET_PATH\" > '{}'\necho 'worker w1 unreachable' >&2\nexit 1",
        seen.display()
    );
    world.fake_rch_with(
        "rch",
        &FakeRch {
            first: &first,
            recover: &recover,
            ..FakeRch::default()
        },
    )
}

#[test]
fn an_rch_that_cannot_name_its_socket_leaves_the_run_as_it_was() {
    // An older rch (no such command), one printing something else, one
    // whose answer names no socket: nothing checked, nothing pinned, and a
    // failure is charged as it always was.
    for (name, answer) in [
        ("no daemon status", ""),
        ("not JSON", "echo 'rchd is running'"),
        (
            "no socket_path",
            r#"echo '{"success": true, "data": {"running": true}}'"#,
        ),
    ] {
        let world = World::new();
        let seen = world.path("seen");
        let rch = answering_rch(&world, answer, &seen);
        let journal = Journal::stale("w1", 2 * HOUR_MS);
        world.add(&journal);
        let (code, document, stderr) = run_json(sweep(&world, &["--rch", utf8(&rch)]));
        assert_eq!(code, 1, "{name}: {document}\n{stderr}");
        assert!(document.get("daemon").is_none(), "{name}: {document}");
        assert_eq!(lines(&seen), ["socket="], "{name}: a socket was pinned");
        assert_eq!(
            world.state()["leases"][&journal.id]["failures"],
            1,
            "{name}"
        );
    }
}

/// SPEC: rch's `daemon status` answer is read up to 64 KiB. One of 20 KiB
/// (other keys before `socket_path`, as a newer rch may print) is read
/// whole: the run checks and pins the socket it names. One over 64 KiB is
/// no answer: the run goes on as before, nothing pinned.
#[test]
fn an_answer_of_rch_up_to_64_kib_is_read_whole() {
    for (pad, read) in [(20 * 1024, true), (70 * 1024, false)] {
        let world = World::new();
        let socket = runtime_dir(&world).join("rch.sock");
        let _daemon = FakeDaemon::start(&socket, Reply::Healthy);
        let seen = world.path("seen");
        let answer = format!(
            "printf '{{\"success\": true, \"data\": {{\"notes\": \"%s\", \"running\": true, \"socket_path\": \"%s\"}}}}\\n' \
             \"$(head -c {pad} /dev/zero | tr '\\0' x)\" '{}'",
            socket.display()
        );
        let rch = answering_rch(&world, &answer, &seen);
        world.add(&Journal::stale("w1", 2 * HOUR_MS));
        let (code, document, stderr) = run_json(sweep(&world, &["--rch", utf8(&rch)]));
        assert_eq!(code, 1, "{pad}: {document}\n{stderr}");
        if read {
            assert_eq!(
                document["daemon"],
                json!({"socket": utf8(&socket), "chosen_by": "rch", "up": true}),
                "{document}"
            );
            assert_eq!(lines(&seen), [format!("socket={}", socket.display())]);
        } else {
            assert!(document.get("daemon").is_none(), "{document}");
            assert_eq!(lines(&seen), ["socket="], "a socket was pinned");
        }
    }
}

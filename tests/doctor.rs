//! `rch-sweep doctor` (issue 19) on the real binary: a healthy setup, every
//! `fail` and `warn` row of SPEC's table made to happen once, a tree that
//! is the same before and after, a fake `rch` that sees only `--version`,
//! a hanging `--version`, and for every refusal of a real run that the
//! preflight knows, `doctor` reporting `fail` for the same setup.

mod common;

use common::doctor_rows::row;
use common::*;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// A fake `rch` that writes every argument list it is given to `rch.log`
/// and answers `--version` as rch does; a recovery would fail.
fn logging_rch(world: &World) -> PathBuf {
    logging_rch_with(world, false)
}

/// [`logging_rch`], knowing its daemon (`daemon status`) when `daemon`.
fn logging_rch_with(world: &World, daemon: bool) -> PathBuf {
    let log = format!("echo \"$*\" >> '{}'", world.path("rch.log").display());
    world.fake_rch_with(
        "rch",
        &FakeRch {
            first: &log,
            version: Some("echo 'rch 2.1.34'"),
            recover: "exit 1",
            daemon,
            ..FakeRch::default()
        },
    )
}

fn rch_calls(world: &World) -> Vec<String> {
    fs::read_to_string(world.path("rch.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// What one setup hands the two commands.
struct Setup {
    lease_dir: PathBuf,
    state_file: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    nobody: bool,
}

impl Setup {
    fn of(world: &World) -> Setup {
        Setup {
            lease_dir: world.leases(),
            state_file: world.state_file(),
            args: vec!["--rch".into(), utf8(&logging_rch(world)).into()],
            env: Vec::new(),
            nobody: false,
        }
    }

    fn command(&self, subcommand: Option<&str>, extra: &[&str]) -> Command {
        let mut command = World::bare_command();
        if let Some(sub) = subcommand {
            command.arg(sub);
        }
        command
            .arg("--lease-dir")
            .arg(&self.lease_dir)
            .arg("--state-file")
            .arg(&self.state_file)
            .args(&self.args)
            .args(extra);
        for (key, value) in &self.env {
            command.env(key, value);
        }
        if self.nobody {
            as_nobody(&mut command);
        }
        command
    }

    /// `doctor --json`: its exit code and document.
    fn doctor(&self) -> (i32, Value) {
        let output = self
            .command(Some("doctor"), &["--json"])
            .output()
            .expect("doctor");
        let document = one_document(&output);
        assert_eq!(document["exit_code"], output.status.code().unwrap_or(-1));
        (output.status.code().unwrap_or(-1), document)
    }
}

fn names(document: &Value) -> Vec<String> {
    document["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|row| row["check"].as_str().expect("name").to_owned())
        .collect()
}

/// Every check, in SPEC's order (`metrics` with a metrics file named).
const EVERY_CHECK: [&str; 9] = [
    "lease_dir",
    "state",
    "lock",
    "rch",
    "daemon",
    "metrics",
    "journals",
    "host",
    "environment",
];

#[test]
fn a_healthy_setup_passes_every_check_and_changes_nothing() {
    for existing in [true, false] {
        let world = World::new();
        world.add(&Journal::stale("hz4", 2 * HOUR_MS));
        let mut setup = Setup::of(&world);
        // rch knows its daemon, which answers where rch looks for it under
        // any route: `~/.cache/rch/rch.sock`, with no XDG_RUNTIME_DIR (a
        // socket found through it would rest on a variable cron lacks). The
        // home is outside the world, whose tree must not change.
        setup.args[1] = utf8(&logging_rch_with(&world, true)).into();
        let home = tempfile::tempdir().expect("home");
        fs::create_dir_all(home.path().join(".cache/rch")).expect("mkdir cache");
        setup.env = vec![("HOME".into(), utf8(home.path()).into())];
        let daemon = FakeDaemon::start(&home.path().join(".cache/rch/rch.sock"), Reply::Healthy);
        let textfile = world.path("textfile");
        fs::create_dir(&textfile).expect("mkdir");
        let prom = textfile.join("rch.prom");
        setup
            .args
            .extend(["--metrics-file".into(), utf8(&prom).into()]);
        if existing {
            // A state folder, a state file and a lock file of an earlier
            // run, and a metrics file.
            let folder = world.state_file().parent().expect("folder").to_path_buf();
            fs::create_dir(&folder).expect("mkdir");
            fs::set_permissions(&folder, fs::Permissions::from_mode(0o700)).expect("chmod");
            fs::write(world.state_file(), r#"{"version": 1, "leases": {}}"#).expect("state");
            fs::write(
                world.state_file().with_file_name("backoff.json.lock"),
                "77\n",
            )
            .expect("lock");
            fs::write(&prom, "# old\n").expect("metrics");
            fs::set_permissions(&prom, fs::Permissions::from_mode(0o644)).expect("chmod");
        }
        // The fake's log exists before, so writing it changes no folder.
        fs::write(world.path("rch.log"), "").expect("log");
        let log = world.path("rch.log");
        let tree = || {
            let mut tree = snapshot(world.dir.path());
            tree.remove(&log);
            tree
        };
        let before = tree();
        let (code, document) = setup.doctor();
        assert_eq!(code, 0, "{document}");
        // SPEC's key order, as the document is written.
        let raw = stdout(
            &setup
                .command(Some("doctor"), &["--json"])
                .output()
                .expect("doctor"),
        );
        assert!(
            raw.starts_with(
                r#"{"version":1,"checks":[{"check":"lease_dir","status":"ok","finding":"#
            ),
            "{raw}"
        );
        assert!(raw.trim_end().ends_with(r#"],"exit_code":0}"#), "{raw}");
        assert_eq!(names(&document), EVERY_CHECK);
        for row in document["checks"].as_array().expect("checks") {
            let expected = if !existing && row["check"] == "state" {
                "warn" // the folder does not exist yet: a run creates it
            } else {
                "ok"
            };
            assert_eq!(row["status"], expected, "{row}");
            if expected == "ok" {
                assert!(row["fix"].is_null(), "{row}");
            }
        }
        assert!(
            row(&document, "rch")["finding"]
                .as_str()
                .is_some_and(|f| f.contains("rch 2.1.34")),
            "{document}"
        );
        assert!(
            row(&document, "journals")["finding"]
                .as_str()
                .is_some_and(|f| f.starts_with("1 journal: 1 candidate (1 would recover now")),
            "{document}"
        );
        // An ok finding gives the reply's time.
        let daemon_finding = row(&document, "daemon")["finding"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            daemon_finding.starts_with(&format!(
                "rch's daemon answers at {} (as rch resolves it), in ",
                daemon.socket.display()
            )),
            "{document}"
        );
        let asked = [
            "--version",
            "--capabilities",
            "jobs recover --help",
            "--json --format json daemon status",
        ];
        assert_eq!(
            rch_calls(&world),
            [asked, asked].concat(),
            "the fake saw more than --version, --capabilities, jobs recover --help and daemon status"
        );
        assert_eq!(tree(), before, "existing {existing}");
        // Text: one aligned line per check, status first.
        let output = setup.command(Some("doctor"), &[]).output().expect("doctor");
        let text = stdout(&output);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("fix:"))
            .collect();
        assert_eq!(lines.len(), EVERY_CHECK.len(), "{text}");
        for (line, name) in lines.iter().zip(EVERY_CHECK) {
            assert!(
                line.starts_with("ok    ") || line.starts_with("warn  "),
                "{line}"
            );
            assert_eq!(&line[6..6 + name.len()], name, "{text}");
        }
        assert!(!text.contains('\x1b'), "colour on a pipe: {text:?}");
    }
}

/// One setup a real run refuses: the check doctor must fail and the code
/// the run exits with.
struct Refusal {
    name: &'static str,
    check: &'static str,
    code: i32,
    needs_root: bool,
    arrange: fn(&World, &mut Setup),
}

fn refusals() -> Vec<Refusal> {
    vec![
        Refusal {
            name: "lease directory is a file",
            check: "lease_dir",
            code: 78,
            needs_root: false,
            arrange: |world, setup| {
                setup.lease_dir = world.path("a-file");
                fs::write(&setup.lease_dir, "").expect("write");
            },
        },
        Refusal {
            name: "lease directory not named job-leases",
            check: "lease_dir",
            code: 78,
            needs_root: false,
            arrange: |world, setup| {
                setup.lease_dir = world.path("leases");
                fs::create_dir(&setup.lease_dir).expect("mkdir");
            },
        },
        Refusal {
            name: "lease directory of another user",
            check: "lease_dir",
            code: 78,
            needs_root: true,
            arrange: |world, _| give_to_nobody(&world.leases()),
        },
        Refusal {
            name: "state path inside the lease directory",
            check: "state",
            code: 78,
            needs_root: false,
            arrange: |world, setup| setup.state_file = world.leases().join("state/backoff.json"),
        },
        Refusal {
            name: "state path is a directory",
            check: "state",
            code: 74,
            needs_root: false,
            arrange: |world, _| fs::create_dir_all(world.state_file()).expect("mkdir"),
        },
        Refusal {
            name: "state path is a symlink",
            check: "state",
            code: 74,
            needs_root: false,
            arrange: |world, _| {
                fs::create_dir_all(world.state_file().parent().expect("folder")).expect("mkdir");
                fs::write(world.path("elsewhere.json"), r#"{"version": 1}"#).expect("write");
                symlink(world.path("elsewhere.json"), world.state_file()).expect("symlink");
            },
        },
        Refusal {
            name: "state path is a FIFO",
            check: "state",
            code: 74,
            needs_root: false,
            arrange: |world, _| {
                fs::create_dir_all(world.state_file().parent().expect("folder")).expect("mkdir");
                mkfifo(&world.state_file());
            },
        },
        Refusal {
            name: "state file of another user",
            check: "state",
            code: 74,
            needs_root: true,
            arrange: |world, _| {
                fs::create_dir_all(world.state_file().parent().expect("folder")).expect("mkdir");
                fs::write(world.state_file(), r#"{"version": 1}"#).expect("write");
                give_to_nobody(&world.state_file());
            },
        },
        Refusal {
            name: "lock file of another user",
            check: "state",
            code: 74,
            needs_root: true,
            arrange: |world, _| {
                fs::create_dir_all(world.state_file().parent().expect("folder")).expect("mkdir");
                let lock = world.state_file().with_file_name("backoff.json.lock");
                fs::write(&lock, "").expect("write");
                give_to_nobody(&lock);
            },
        },
        Refusal {
            name: "state folder of another user",
            check: "state",
            code: 74,
            needs_root: true,
            arrange: |world, _| {
                let folder = world.state_file().parent().expect("folder").to_path_buf();
                fs::create_dir_all(&folder).expect("mkdir");
                give_to_nobody(&folder);
            },
        },
        Refusal {
            name: "state folder writable by others",
            check: "state",
            code: 74,
            needs_root: false,
            arrange: |world, _| {
                let folder = world.state_file().parent().expect("folder").to_path_buf();
                fs::create_dir_all(&folder).expect("mkdir");
                fs::set_permissions(&folder, fs::Permissions::from_mode(0o777)).expect("chmod");
            },
        },
        Refusal {
            name: "state file of an unknown version",
            check: "state",
            code: 78,
            needs_root: false,
            arrange: |world, _| {
                fs::create_dir_all(world.state_file().parent().expect("folder")).expect("mkdir");
                fs::write(world.state_file(), r#"{"version": 9}"#).expect("write");
            },
        },
        Refusal {
            name: "rch found nowhere",
            check: "rch",
            code: 78,
            needs_root: false,
            arrange: |world, setup| {
                setup.args.clear();
                setup.env = vec![
                    ("PATH".into(), "/nonexistent".into()),
                    ("HOME".into(), utf8(&world.path("home")).into()),
                ];
            },
        },
        Refusal {
            name: "rch not executable by this user",
            check: "rch",
            code: 78,
            needs_root: false,
            arrange: |world, setup| {
                let rch = world.path("rch-plain");
                fs::write(&rch, "#!/bin/sh\nexit 0\n").expect("write");
                fs::set_permissions(&rch, fs::Permissions::from_mode(0o644)).expect("chmod");
                setup.args = vec!["--rch".into(), utf8(&rch).into()];
            },
        },
        Refusal {
            name: "metrics folder missing",
            check: "metrics",
            code: 74,
            needs_root: false,
            arrange: |world, setup| {
                let prom = world.path("none/rch.prom");
                setup
                    .args
                    .extend(["--metrics-file".into(), utf8(&prom).into()]);
            },
        },
        Refusal {
            name: "metrics path is a directory",
            check: "metrics",
            code: 74,
            needs_root: false,
            arrange: |world, setup| {
                let prom = world.path("textfile/rch.prom");
                fs::create_dir_all(&prom).expect("mkdir");
                setup
                    .args
                    .extend(["--metrics-file".into(), utf8(&prom).into()]);
            },
        },
        Refusal {
            name: "metrics path is a symlink",
            check: "metrics",
            code: 74,
            needs_root: false,
            arrange: |world, setup| {
                fs::create_dir(world.path("textfile")).expect("mkdir");
                let prom = world.path("textfile/rch.prom");
                symlink(world.path("elsewhere.prom"), &prom).expect("symlink");
                setup
                    .args
                    .extend(["--metrics-file".into(), utf8(&prom).into()]);
            },
        },
        Refusal {
            name: "lock path is a directory",
            check: "state",
            code: 74,
            needs_root: false,
            arrange: |world, _| {
                let lock = world.state_file().with_file_name("backoff.json.lock");
                fs::create_dir_all(lock).expect("mkdir");
            },
        },
        Refusal {
            name: "lock path is a symlink",
            check: "state",
            code: 74,
            needs_root: false,
            arrange: |world, _| {
                fs::create_dir_all(world.state_file().parent().expect("folder")).expect("mkdir");
                let lock = world.state_file().with_file_name("backoff.json.lock");
                symlink(world.path("elsewhere.lock"), lock).expect("symlink");
            },
        },
        Refusal {
            name: "state folder is a file",
            check: "state",
            code: 74,
            needs_root: false,
            arrange: |world, _| {
                fs::write(world.state_file().parent().expect("folder"), "").expect("write");
            },
        },
        Refusal {
            name: "state folder not writable by this user",
            check: "state",
            code: 74,
            needs_root: true,
            arrange: |world, setup| {
                world.hand_to_nobody();
                // Root's, mode 0755: trusted, but nobody cannot write into it.
                let folder = world.path("root-state");
                fs::create_dir(&folder).expect("mkdir");
                setup.state_file = folder.join("backoff.json");
                setup.nobody = true;
            },
        },
        Refusal {
            name: "state folder missing and its parent not writable by this user",
            check: "state",
            code: 74,
            needs_root: true,
            arrange: |world, setup| {
                world.hand_to_nobody();
                let above = world.path("root-owned");
                fs::create_dir(&above).expect("mkdir");
                setup.state_file = above.join("rch-sweep/backoff.json");
                setup.nobody = true;
            },
        },
        Refusal {
            name: "lock file this user may not open for writing",
            check: "state",
            code: 74,
            needs_root: true,
            arrange: |world, setup| {
                world.hand_to_nobody();
                let lock = world.state_file().with_file_name("backoff.json.lock");
                fs::write(&lock, "").expect("write");
                give_to_nobody(&lock);
                fs::set_permissions(&lock, fs::Permissions::from_mode(0o400)).expect("chmod");
                setup.nobody = true;
            },
        },
        Refusal {
            name: "state file this user may not read",
            check: "state",
            code: 74,
            needs_root: true,
            arrange: |world, setup| {
                world.hand_to_nobody();
                fs::write(world.state_file(), r#"{"version": 1}"#).expect("write");
                give_to_nobody(&world.state_file());
                fs::set_permissions(world.state_file(), fs::Permissions::from_mode(0o000))
                    .expect("chmod");
                setup.nobody = true;
            },
        },
        Refusal {
            name: "lease directory this user may not list",
            check: "lease_dir",
            code: 74,
            needs_root: true,
            arrange: |world, setup| {
                world.hand_to_nobody();
                fs::set_permissions(world.leases(), fs::Permissions::from_mode(0o300))
                    .expect("chmod");
                setup.nobody = true;
            },
        },
        Refusal {
            name: "metrics file of another user",
            check: "metrics",
            code: 74,
            needs_root: true,
            arrange: |world, setup| {
                fs::create_dir(world.path("textfile")).expect("mkdir");
                let prom = world.path("textfile/rch.prom");
                fs::write(&prom, "").expect("write");
                give_to_nobody(&prom);
                setup
                    .args
                    .extend(["--metrics-file".into(), utf8(&prom).into()]);
            },
        },
        Refusal {
            name: "metrics folder missing, with no lease directory yet",
            check: "metrics",
            code: 74,
            needs_root: false,
            arrange: |world, setup| {
                setup.lease_dir = world.path("none/job-leases");
                let prom = world.path("nowhere/rch.prom");
                setup
                    .args
                    .extend(["--metrics-file".into(), utf8(&prom).into()]);
            },
        },
        Refusal {
            name: "metrics folder not writable by this user",
            check: "metrics",
            code: 74,
            needs_root: true,
            arrange: |world, setup| {
                world.hand_to_nobody();
                fs::create_dir(world.path("textfile")).expect("mkdir");
                let prom = world.path("textfile/rch.prom");
                setup
                    .args
                    .extend(["--metrics-file".into(), utf8(&prom).into()]);
                setup.nobody = true;
            },
        },
    ]
}

#[test]
fn doctor_fails_every_setup_a_real_run_refuses() {
    let mut checked = 0;
    for refusal in refusals() {
        if refusal.needs_root && !is_root() {
            eprintln!("{}: skipped: needs root (CI runs as root)", refusal.name);
            continue;
        }
        let world = World::new();
        world.add(&Journal::stale("hz4", 2 * HOUR_MS));
        let mut setup = Setup::of(&world);
        (refusal.arrange)(&world, &mut setup);
        if setup.nobody {
            // The fake's log must be writable by nobody too.
            fs::write(world.path("rch.log"), "").expect("log");
            give_to_nobody(&world.path("rch.log"));
        }
        let output = setup.command(None, &[]).output().expect("run");
        assert_eq!(
            output.status.code(),
            Some(refusal.code),
            "{}: the run: {}",
            refusal.name,
            stderr(&output)
        );
        assert!(
            rch_calls(&world)
                .iter()
                .all(|call| !call.starts_with("jobs")),
            "{}: a recovery started",
            refusal.name
        );
        let (code, document) = setup.doctor();
        assert_eq!(code, 1, "{}: {document}", refusal.name);
        if refusal.name == "rch found nowhere" {
            // SPEC: the finding lists every path tried.
            let finding = row(&document, "rch")["finding"]
                .as_str()
                .unwrap_or_default();
            for tried in [
                "/nonexistent/rch",
                "home/.local/bin/rch",
                "home/.cargo/bin/rch",
            ] {
                assert!(finding.contains(tried), "{tried} not in {finding}");
            }
        }
        assert_eq!(
            row(&document, refusal.check)["status"],
            "fail",
            "{}: {document}",
            refusal.name
        );
        let fails: Vec<&Value> = document["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .filter(|row| row["status"] == "fail")
            .collect();
        assert_eq!(fails.len(), 1, "{}: {document}", refusal.name);
        assert!(fails[0]["fix"].as_str().is_some_and(|fix| !fix.is_empty()));
        checked += 1;
    }
    assert!(checked >= 17, "too few setups ran: {checked}");
}

/// Without a lease directory a run has nothing to sweep and exits 0 before
/// it looks at the state or `rch`: what would stop it once rch creates the
/// directory is a warning then, not a fail, so that doctor still fails
/// exactly what a run refuses.
#[test]
fn without_a_lease_directory_what_a_run_does_not_refuse_only_warns() {
    let world = World::new();
    let mut setup = Setup::of(&world);
    setup.lease_dir = world.path("absent/job-leases");
    fs::create_dir_all(world.state_file().parent().expect("folder")).expect("mkdir");
    mkfifo(&world.state_file());
    setup.args.clear();
    setup.env = vec![
        ("PATH".into(), "/nonexistent".into()),
        ("HOME".into(), utf8(&world.path("home")).into()),
    ];
    let output = setup.command(None, &[]).output().expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let (code, document) = setup.doctor();
    assert_eq!(code, 0, "{document}");
    for check in ["lease_dir", "state", "rch"] {
        assert_eq!(row(&document, check)["status"], "warn", "{document}");
    }
    for check in ["state", "rch"] {
        let finding = row(&document, check)["finding"]
            .as_str()
            .unwrap_or_default();
        assert!(finding.contains("a run now exits 0"), "{finding}");
    }
}

#[test]
fn every_warning_row_of_the_table_happens() {
    // lease_dir: missing, and a state home named for the lease directory.
    let world = World::new();
    let mut setup = Setup::of(&world);
    setup.lease_dir = world.path("absent/job-leases");
    let (code, document) = setup.doctor();
    assert_eq!(
        (code, row(&document, "lease_dir")["status"].as_str()),
        (0, Some("warn"))
    );
    assert!(
        row(&document, "lease_dir")["finding"]
            .as_str()
            .is_some_and(|f| f.contains("does not exist"))
    );
    setup.lease_dir = world.dir.path().to_path_buf();
    let (_, document) = setup.doctor();
    let lease_dir = row(&document, "lease_dir");
    // A real run would refuse the name: that fail comes first.
    assert_eq!(lease_dir["status"], "fail", "{document}");
    // Named job-leases, empty but for a job-leases folder of its own.
    let nested = World::new();
    fs::create_dir(nested.leases().join("job-leases")).expect("mkdir");
    let (code, document) = Setup::of(&nested).doctor();
    let lease_dir = row(&document, "lease_dir");
    assert_eq!(
        (code, lease_dir["status"].as_str()),
        (0, Some("warn")),
        "{document}"
    );
    assert!(
        lease_dir["finding"]
            .as_str()
            .is_some_and(|f| f.contains("holds no journal but a job-leases folder")),
        "{lease_dir}"
    );

    // state: a file that does not parse; the folder not there yet.
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let setup = Setup::of(&world);
    let (code, document) = setup.doctor();
    assert_eq!(
        (code, row(&document, "state")["status"].as_str()),
        (0, Some("warn"))
    );
    assert!(
        row(&document, "state")["finding"]
            .as_str()
            .is_some_and(|f| f.contains("does not exist yet"))
    );
    fs::create_dir(world.state_file().parent().expect("folder")).expect("mkdir");
    fs::write(world.state_file(), "{ not json").expect("write");
    let (code, document) = setup.doctor();
    assert_eq!(
        (code, row(&document, "state")["status"].as_str()),
        (0, Some("warn"))
    );
    assert!(
        row(&document, "state")["finding"]
            .as_str()
            .is_some_and(|f| f.contains("does not parse"))
    );
    assert_eq!(
        fs::read(world.state_file()).expect("read"),
        b"{ not json",
        "doctor moved it"
    );
    fs::remove_file(world.state_file()).expect("rm");

    // lock: held now by a sweep (here: this test), its PID in the file.
    {
        use std::os::fd::AsRawFd;
        let lock_path = world.state_file().with_file_name("backoff.json.lock");
        fs::write(&lock_path, "4242\n").expect("write");
        let lock = fs::File::open(&lock_path).expect("open");
        // SAFETY: a valid open descriptor.
        assert_eq!(
            unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
            0
        );
        let (code, document) = setup.doctor();
        let lock_row = row(&document, "lock");
        assert_eq!(
            (code, lock_row["status"].as_str()),
            (0, Some("warn")),
            "{document}"
        );
        assert!(
            lock_row["finding"]
                .as_str()
                .is_some_and(|f| f.contains("pid 4242")),
            "{lock_row}"
        );
        drop(lock);
        let leases = fs::File::open(world.leases()).expect("open dir");
        // SAFETY: a valid open descriptor.
        assert_eq!(
            unsafe { libc::flock(leases.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
            0
        );
        let (_, document) = setup.doctor();
        assert!(
            row(&document, "lock")["finding"]
                .as_str()
                .is_some_and(|f| f.contains("the lease directory")),
            "{document}"
        );
        drop(leases);
        let (_, document) = setup.doctor();
        assert_eq!(row(&document, "lock")["status"], "ok", "{document}");
    }

    // rch: --version fails; a timer's PATH would find another rch or none.
    let failing = world.fake_rch_with(
        "rch-failing",
        &FakeRch {
            version: Some("echo broken >&2\nexit 3"),
            ..FakeRch::default()
        },
    );
    let mut other = Setup::of(&world);
    other.args = vec!["--rch".into(), utf8(&failing).into()];
    let (code, document) = other.doctor();
    let rch = row(&document, "rch");
    assert_eq!(
        (code, rch["status"].as_str()),
        (0, Some("warn")),
        "{document}"
    );
    assert!(
        rch["finding"]
            .as_str()
            .is_some_and(|f| f.contains("--version` failed: exit status: 3")),
        "{rch}"
    );
    let bin = world.path("bin");
    fs::create_dir(&bin).expect("mkdir");
    fs::copy(logging_rch(&world), bin.join("rch")).expect("copy");
    fs::set_permissions(bin.join("rch"), fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut on_path = Setup::of(&world);
    on_path.args.clear();
    on_path.env = vec![
        ("PATH".into(), format!("{}:/usr/bin:/bin", bin.display())),
        ("HOME".into(), utf8(&world.path("home")).into()),
    ];
    let (code, document) = on_path.doctor();
    let rch = row(&document, "rch");
    assert_eq!(
        (code, rch["status"].as_str()),
        (0, Some("warn")),
        "{document}"
    );
    assert!(
        rch["finding"]
            .as_str()
            .is_some_and(|f| f.contains("a timer's PATH") && f.contains("would find no rch")),
        "{rch}"
    );
    assert!(
        rch["fix"]
            .as_str()
            .is_some_and(|f| f.contains(&format!("--rch {}", bin.join("rch").display())))
    );
    // A different rch where a timer looks (~/.local/bin, after the timer's
    // PATH) warns too, naming it; the same file through a symlinked PATH
    // entry does not.
    let installed = world.path("home/.local/bin");
    fs::create_dir_all(&installed).expect("mkdir");
    fs::copy(logging_rch(&world), installed.join("rch")).expect("copy");
    fs::set_permissions(installed.join("rch"), fs::Permissions::from_mode(0o755)).expect("chmod");
    let (code, document) = on_path.doctor();
    let rch = row(&document, "rch");
    let expected = format!("would find {}", installed.join("rch").display());
    assert_eq!(
        (code, rch["status"].as_str()),
        (0, Some("warn")),
        "{document}"
    );
    assert!(
        rch["finding"]
            .as_str()
            .is_some_and(|f| f.contains(&expected)),
        "{rch}"
    );
    let linked = world.path("linked-bin");
    symlink(&installed, &linked).expect("symlink");
    on_path.env[0].1 = format!("{}:/usr/bin:/bin", linked.display());
    let (_, document) = on_path.doctor();
    assert_eq!(row(&document, "rch")["status"], "ok", "{document}");

    // metrics: others cannot read the file.
    fs::create_dir(world.path("textfile")).expect("mkdir");
    let prom = world.path("textfile/rch.prom");
    fs::write(&prom, "").expect("write");
    fs::set_permissions(&prom, fs::Permissions::from_mode(0o600)).expect("chmod");
    let mut metrics = Setup::of(&world);
    metrics
        .args
        .extend(["--metrics-file".into(), utf8(&prom).into()]);
    let (code, document) = metrics.doctor();
    let row_metrics = row(&document, "metrics");
    assert_eq!(
        (code, row_metrics["status"].as_str()),
        (0, Some("warn")),
        "{document}"
    );
    assert!(
        row_metrics["finding"]
            .as_str()
            .is_some_and(|f| f.contains("mode 0600"))
    );

    // journals: malformed and unverified ones, a heartbeat from the future.
    world.write(&format!("{}.json", new_id()), "{ not json");
    world.add(
        &Journal::stale("w2", 2 * HOUR_MS).set("wrapper_pid", serde_json::json!(3_000_000_000u64)),
    );
    let (code, document) = setup.doctor();
    let journals = row(&document, "journals");
    assert_eq!(
        (code, journals["status"].as_str()),
        (0, Some("warn")),
        "{document}"
    );
    let finding = journals["finding"].as_str().expect("finding");
    assert!(
        finding.contains("1 malformed") && finding.contains("1 owner_unverified"),
        "{finding}"
    );
    assert!(
        journals["fix"]
            .as_str()
            .is_some_and(|f| f.contains("rch-sweep explain"))
    );
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    world.add(&Journal::dead_owner("w2", 7, now_ms() + 10 * 60_000));
    let (_, document) = Setup::of(&world).doctor();
    let journals = row(&document, "journals");
    assert_eq!(journals["status"], "warn", "{document}");
    assert!(
        journals["finding"]
            .as_str()
            .is_some_and(|f| f.contains("1 heartbeat lies more than 60 s in the future")),
        "{journals}"
    );
    // Such a lease waits until then, or is recovered by hand.
    assert!(
        journals["fix"]
            .as_str()
            .is_some_and(|f| f.contains("rch jobs recover <id>")),
        "{journals}"
    );
}

#[test]
fn a_hanging_version_is_answered_within_fifteen_seconds_and_killed() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let pids = world.path("pids");
    let hang = format!("sleep 60 &\necho \"$$ $!\" > '{}'\nwait", pids.display());
    let rch = world.fake_rch_with(
        "rch-hanging",
        &FakeRch {
            version: Some(&hang),
            ..FakeRch::default()
        },
    );
    let mut setup = Setup::of(&world);
    setup.args = vec!["--rch".into(), utf8(&rch).into()];
    let started = Instant::now();
    let (code, document) = setup.doctor();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    let rch_row = row(&document, "rch");
    assert_eq!(
        (code, rch_row["status"].as_str()),
        (0, Some("warn")),
        "{document}"
    );
    assert!(
        rch_row["finding"]
            .as_str()
            .is_some_and(|f| f.contains("did not answer within 10s"))
    );
    let text = fs::read_to_string(&pids).expect("pids");
    for pid in text
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
    {
        assert!(
            gone_within(pid, 5),
            "process {pid} of the --version group survived"
        );
    }
}

#[test]
fn the_demos_stand_in_for_rch_passes_the_rch_check_as_rch_2_1_does() {
    // README's demo runs `doctor` with examples/fake-rch: it answers `jobs
    // recover --help` with 0, as rch 2.1 does (rch 1.x exits 2 there).
    let world = World::new();
    let output = world
        .command(&["doctor", "--json", "--rch", FAKE_RCH])
        .output()
        .expect("doctor");
    let document: Value = serde_json::from_slice(&output.stdout).expect("json");
    let check = row(&document, "rch");
    assert_eq!(check["status"], "ok", "{check}");
}

/// SPEC, sixth wave, metrics: node_exporter serves one of two `.prom`
/// files that hold series for the same lease directory (a renamed
/// `--metrics-file` leaves the old one behind, stale `exit_code 78` and
/// all), so doctor warns, naming the other file; a file for another lease
/// directory, or one that is not `.prom`, is none of its business.
#[test]
fn another_prom_file_for_the_same_lease_directory_warns() {
    let world = World::new();
    let folder = world.path("textfile");
    fs::create_dir(&folder).expect("textfile folder");
    let rch = world.fake_rch("rch", "exit 0");
    let prom = folder.join("rch-sweep.prom");
    let doctor = |world: &World| {
        world.json(&[
            "doctor",
            "--rch",
            rch.to_str().expect("utf8"),
            "--metrics-file",
            prom.to_str().expect("utf8"),
        ])
    };
    fs::write(folder.join("node.prom"), "node_load1 1\n").expect("write");
    fs::write(
        folder.join("bob.prom"),
        "rch_sweep_exit_code{lease_dir=\"/home/bob/.local/state/rch/job-leases\"} 0\n",
    )
    .expect("write");
    let (_, document) = doctor(&world);
    assert_eq!(row(&document, "metrics")["status"], "ok", "{document}");
    // A real run of this lease directory writes the old file.
    let old = folder.join("old-name.prom");
    let output = world.run(&[
        "--rch",
        rch.to_str().expect("utf8"),
        "--metrics-file",
        old.to_str().expect("utf8"),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(old.exists());
    fs::copy(&old, folder.join("old-name.prom.bak")).expect("copy");
    let (code, document) = doctor(&world);
    let metrics = row(&document, "metrics");
    assert_eq!(metrics["status"], "warn", "{document}");
    let finding = metrics["finding"].as_str().unwrap_or_default();
    assert!(
        finding.contains(&format!("{} also holds rch_sweep_ series", old.display())),
        "{finding}"
    );
    assert!(
        !finding.contains("bob.prom") && !finding.contains(".bak"),
        "{finding}"
    );
    assert!(
        metrics["fix"]
            .as_str()
            .is_some_and(|fix| fix.starts_with(&format!("remove {}", old.display()))),
        "{document}"
    );
    assert_eq!(code, document["exit_code"].as_i64().unwrap_or(-1) as i32);
}

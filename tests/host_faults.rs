//! Nothing the host does is charged to a lease (issue 34): a lock held on
//! btrfs or overlayfs is seen (`/proc/locks` names a file by its mount's
//! device, not `stat`'s), a lease directory rch cannot write (a read-only
//! mount, or not this user's to write) starts no recovery and exits 74,
//! and doctor fails a state folder's file system with no byte or no inode
//! free and warns of an empty state-home variable.
//!
//! The file systems are real: a loop-mounted btrfs image, an overlayfs
//! whose upper layer is a tmpfs, a read-only bind mount, a full tmpfs,
//! each mounted in a private mount namespace of its own (`unshare -m
//! --propagation private`) so that nothing leaks to the host, and the
//! binary run in it with `nsenter`. They need root (CI runs as root) and
//! skip, saying so, only where no loop device can be had.

mod common;

use common::backoff::write_due_entry;
use common::doctor_rows::row;
use common::locks::{TAKE_RECOVERY_LOCK_SH, hold_flock, release};
use common::mounts::private_mount_namespace;
use common::*;
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// A private mount namespace whose shell ran a setup script and now waits
/// on its stdin: what it mounted is seen only by the commands run in it
/// ([`Namespace::command`]). Dropped, its stdin closes, it unmounts what
/// it mounted (a loop device with it) and exits, and the namespace is gone.
struct Namespace {
    shell: Child,
    stdin: Option<ChildStdin>,
    /// What the setup said after `ready` (a path it made).
    said: String,
}

impl Namespace {
    /// Runs `setup` (sh, with `$W` the folder `dir`) in a new private mount
    /// namespace; `teardown` runs when the namespace is dropped. A setup
    /// that prints `skip: <why>` and exits is a skip (`Err(why)`); one that
    /// fails otherwise fails the test.
    fn start(dir: &Path, setup: &str, teardown: &str) -> Result<Namespace, String> {
        let script = format!(
            "set -eu\nPATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH\nW=$1\n{setup}\nread -r _ || true\n{teardown}\n"
        );
        let mut shell = private_mount_namespace(&script)
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("unshare");
        let mut line = String::new();
        BufReader::new(shell.stdout.as_mut().expect("stdout"))
            .read_line(&mut line)
            .expect("read");
        let line = line.trim().to_owned();
        if let Some(why) = line.strip_prefix("skip: ") {
            let _ = shell.wait();
            return Err(why.to_owned());
        }
        let Some(said) = line.strip_prefix("ready") else {
            let _ = shell.wait();
            let mut error = String::new();
            let _ = shell
                .stderr
                .take()
                .expect("stderr")
                .read_to_string(&mut error);
            panic!("the namespace's setup failed: {line}\n{error}");
        };
        Ok(Namespace {
            stdin: shell.stdin.take(),
            shell,
            said: said.trim().to_owned(),
        })
    }

    /// `program` run in the namespace, in an environment with nothing of
    /// the host's settings but `PATH`.
    fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new("nsenter");
        command
            .arg(format!("--target={}", self.shell.id()))
            .args(["--mount", "--"])
            .arg(program)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
        command
    }

    /// The binary run in the namespace with `args`.
    fn sweep(&self, args: &[&str]) -> Output {
        self.command(BIN).args(args).output().expect("rch-sweep")
    }

    /// `path` as it is in the namespace, seen from outside it.
    fn outside(&self, path: &Path) -> PathBuf {
        Path::new(&format!("/proc/{}/root", self.shell.id())).join(
            path.strip_prefix("/")
                .expect("an absolute path in the namespace"),
        )
    }

    /// A process in the namespace that holds an exclusive `flock` on
    /// `path` (util-linux's `flock`, as rchd's recovery task or an
    /// operator's `rch jobs recover` would), returned once it holds it;
    /// `then` runs in it first (`$0` is the path).
    fn hold(&self, path: &Path, then: &str) -> Child {
        hold_flock(self.command("flock"), path, then)
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"\n");
        }
        let _ = self.shell.wait();
    }
}

/// The JSON document a run printed, and its exit code.
fn run_document(output: &Output) -> (i32, Value) {
    (output.status.code().unwrap_or(-1), one_document(output))
}

/// The setup of a loop-mounted btrfs with a subvolume `home`, the world's
/// journals copied into `home/job-leases`: a skip where no loop device can
/// be had.
const BTRFS: &str = r#"
if ! losetup -f >/dev/null 2>&1; then echo "skip: no loop device can be had here"; exit 0; fi
truncate -s 256M "$W/fs.img"
mkfs.btrfs -q -f "$W/fs.img" >/dev/null
mkdir "$W/fs"
mount -o loop "$W/fs.img" "$W/fs"
btrfs subvolume create "$W/fs/home" >/dev/null
cp -a "$W/job-leases" "$W/fs/home/"
echo "ready $W/fs/home"
"#;

/// The setup of an overlayfs at `fs` whose lower layer (the world's
/// journals) lies on the host's file system and whose upper layer is a
/// tmpfs.
const OVERLAY: &str = r#"
mkdir "$W/lower" "$W/upper" "$W/fs"
cp -a "$W/job-leases" "$W/lower/"
mount -t tmpfs tmpfs "$W/upper"
mkdir "$W/upper/up" "$W/upper/work"
mount -t overlay overlay -o "lowerdir=$W/lower,upperdir=$W/upper/up,workdir=$W/upper/work" "$W/fs"
echo "ready $W/fs"
"#;

/// On the file system `setup` mounts, with the lease directory (and the
/// state beside it) there: a recovery lock held by another process defers
/// its lease uncharged and starts no `rch`; a held lease-directory lock is
/// 75 naming its holder; doctor sees both that and a held state lock.
fn held_locks_are_seen(name: &str, setup: &str, teardown: &str) {
    if !root_or_skip(name) || !tool_or_skip("/usr/bin/flock", "util-linux") {
        return;
    }
    let world = World::new();
    let busy = Journal::stale("w1", 3 * HOUR_MS);
    world.add(&busy);
    let log = world.path("started.log");
    let rch = world.fake_rch(
        "rch",
        &format!(
            "echo \"$3\" >> '{log}'\n{TAKE_RECOVERY_LOCK_SH}\n\
             echo 'recovery failed on the worker' >&2; exit 1",
            log = log.display()
        ),
    );
    let ns = match Namespace::start(world.dir.path(), setup, teardown) {
        Ok(ns) => ns,
        Err(why) => {
            eprintln!("{name}: skipped: {why}");
            return;
        }
    };
    let home = PathBuf::from(&ns.said);
    let leases = home.join("job-leases");
    let state_file = home.join("rch-sweep/backoff.json");
    let run = |extra: &[&str]| {
        let mut args = vec!["--json", "--lease-dir", utf8(&leases), "--rch", utf8(&rch)];
        args.extend_from_slice(extra);
        ns.sweep(&args)
    };

    // rchd's own recovery task holds the lease's recovery lock.
    let lock = leases.join(format!("{}.recovery.lock", busy.id));
    let holder = ns.hold(&lock, "");
    let expected = format!(
        "another process (pid {}) is recovering this lease",
        holder.id()
    );
    let output = run(&[]);
    release(holder);
    let (code, document) = run_document(&output);
    assert_eq!(code, 0, "{document}\n{}", stderr(&output));
    assert_eq!(document["leases"][0]["outcome"], "deferred", "{document}");
    assert_eq!(
        document["leases"][0]["error"],
        json!(expected),
        "{document}"
    );
    assert_eq!(document["failed"], 0);
    assert!(!log.exists(), "rch was started for a lease being recovered");
    let saved: Value = serde_json::from_slice(
        &fs::read(ns.outside(&state_file)).expect("the state file, on the mount"),
    )
    .expect("state");
    assert_eq!(saved["leases"], json!({}), "a failure was charged: {saved}");

    // While `path` is held (`then` run under the lock first), a run is 75
    // and its stderr says `says` of the holder, and doctor's lock row
    // warns of `what` (pid).
    let held_is_named = |path: &Path, then: &str, says: &str, what: &str| {
        let holder = ns.hold(path, then);
        let output = run(&[]);
        let doctor = ns.sweep(&[
            "doctor",
            "--json",
            "--lease-dir",
            utf8(&leases),
            "--rch",
            utf8(&rch),
        ]);
        let pid = holder.id();
        release(holder);
        assert_eq!(output.status.code(), Some(75), "{}", stderr(&output));
        assert!(
            stderr(&output).contains(&format!("another rch-sweep (pid {pid}) {says}")),
            "{}",
            stderr(&output)
        );
        let document = one_document(&doctor);
        let row = row(&document, "lock");
        assert_eq!(row["status"], "warn", "{row}");
        assert!(
            row["finding"]
                .as_str()
                .is_some_and(|finding| finding.contains(&format!("{what} (pid {pid})"))),
            "{row}"
        );
    };

    // Another sweep holds the lease directory: 75, naming it; doctor too.
    held_is_named(
        &leases,
        "",
        "is sweeping",
        &format!("the lease directory {}", leases.display()),
    );

    // Something holds the state lock and wrote no PID in it: /proc/locks
    // names it, to a run (75) and to doctor.
    let state_lock = home.join("rch-sweep/backoff.json.lock");
    held_is_named(
        &state_lock,
        ": > \"$0\"",
        "holds",
        &format!("the state lock {}", state_lock.display()),
    );
}

#[test]
fn on_btrfs_a_held_recovery_lock_defers_its_lease_and_doctor_sees_held_locks() {
    if !tool_or_skip("/usr/sbin/mkfs.btrfs", "btrfs-progs") {
        return;
    }
    held_locks_are_seen("on_btrfs", BTRFS, "umount \"$W/fs\"");
}

#[test]
fn on_overlayfs_a_held_recovery_lock_defers_its_lease_and_doctor_sees_held_locks() {
    held_locks_are_seen(
        "on_overlayfs",
        OVERLAY,
        "umount \"$W/fs\"\numount \"$W/upper\"",
    );
}

/// A fake rch that notes each start in `marks/started` (a folder anyone
/// may write, for runs as another user) and fails.
fn noting_rch(world: &World) -> (PathBuf, PathBuf) {
    let marks = world.path("marks");
    fs::create_dir(&marks).expect("mkdir");
    fs::set_permissions(&marks, fs::Permissions::from_mode(0o777)).expect("chmod");
    let started = marks.join("started");
    let rch = world.fake_rch(
        "rch",
        &format!(
            "echo \"$3\" >> '{}'\necho 'cannot write the journal' >&2\nexit 1",
            started.display()
        ),
    );
    (rch, started)
}

/// Two due leases (on `w1` and `w2`), the first with a backoff entry, and
/// a [`noting_rch`]: returns the first's id and entry, the rch, and where
/// it notes a start.
fn two_due_leases(world: &World) -> (String, Value, PathBuf, PathBuf) {
    let first = Journal::stale("w1", 3 * HOUR_MS);
    let second = Journal::stale("w2", 2 * HOUR_MS);
    world.add(&first);
    world.add(&second);
    let entry = write_due_entry(world, &first.id, None).0;
    let (rch, started) = noting_rch(world);
    (first.id, entry, rch, started)
}

/// The options naming a run's lease directory, state file and `rch`.
fn places<'a>(leases: &'a Path, state_file: &'a Path, rch: &'a Path) -> [&'a str; 6] {
    [
        "--lease-dir",
        utf8(leases),
        "--state-file",
        utf8(state_file),
        "--rch",
        utf8(rch),
    ]
}

/// What every run into an unwritable lease directory shows: 74, every due
/// lease deferred with `error`, the backoff entry as it was, no new one,
/// no `rch` started.
fn assert_unwritable_run(output: &Output, error: &str, state: &Value, entry: (&str, &Value)) {
    let (code, document) = run_document(output);
    assert_eq!(code, 74, "{document}\n{}", stderr(output));
    let rows: Vec<(Value, Value)> = document["leases"]
        .as_array()
        .expect("leases")
        .iter()
        .map(|row| (row["outcome"].clone(), row["error"].clone()))
        .collect();
    assert_eq!(
        rows,
        vec![(json!("deferred"), json!(error)); 2],
        "{document}"
    );
    assert_eq!(
        (document["attempted"].clone(), document["deferred"].clone()),
        (json!(0), json!(2))
    );
    assert!(
        document["error"].as_str().is_some_and(
            |text| text.starts_with(error) && text.contains("no lease was charged a failure")
        ),
        "{document}"
    );
    assert_eq!(state["leases"], json!({entry.0: entry.1}), "{state}");
}

#[test]
fn a_read_only_lease_directory_starts_nothing_charges_nothing_and_exits_74() {
    if !root_or_skip("a_read_only_lease_directory") {
        return;
    }
    let world = World::new();
    let (id, entry, rch, started) = two_due_leases(&world);
    let setup = r#"
mount --bind "$W/job-leases" "$W/job-leases"
mount -o remount,bind,ro "$W/job-leases"
echo ready
"#;
    let ns = Namespace::start(world.dir.path(), setup, "umount \"$W/job-leases\"")
        .expect("a bind mount needs no loop device");
    let leases = world.leases();
    let prom = world.path("rch.prom");
    let state_file = world.state_file();
    let common = places(&leases, &state_file, &rch);
    let mut args = vec!["--json", "--metrics-file", utf8(&prom)];
    args.extend_from_slice(&common);
    let output = ns.sweep(&args);
    let error = format!(
        "the lease directory {} is read-only (mounted ro): rch could not rewrite a journal",
        leases.display()
    );
    assert_unwritable_run(&output, &error, &world.state(), (&id, &entry));
    assert!(!started.exists(), "rch was started");
    let metrics = fs::read_to_string(&prom).expect("metrics written");
    assert!(
        metrics.contains("rch_sweep_exit_code{lease_dir="),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|line| line.starts_with("rch_sweep_exit_code") && line.ends_with(" 74")),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|line| line.contains("outcome=\"deferred\"") && line.ends_with(" 2")),
        "{metrics}"
    );

    // doctor fails the lease directory the same way.
    let mut args = vec!["doctor", "--json"];
    args.extend_from_slice(&common);
    let document = one_document(&ns.sweep(&args));
    let row = row(&document, "lease_dir");
    assert_eq!(row["status"], "fail", "{row}");
    assert!(
        row["finding"].as_str().is_some_and(|f| f.contains(&error)),
        "{row}"
    );
    assert_eq!(document["exit_code"], 1);

    // Nothing due: nothing is looked at, and the run is a success.
    let mut args = vec!["--json", "--stale-after", "86400"];
    args.extend_from_slice(&common);
    let (code, document) = run_document(&ns.sweep(&args));
    assert_eq!(code, 0, "{document}");
}

#[test]
fn a_lease_directory_this_user_may_not_write_starts_nothing_and_exits_74() {
    if !root_or_skip("a_lease_directory_this_user_may_not_write") {
        return;
    }
    let world = World::new();
    let (id, entry, rch, started) = two_due_leases(&world);
    world.hand_to_nobody();
    give_to_nobody(&world.state_file());
    // Its owner's, but not writable: as rch would meet it running as them.
    fs::set_permissions(world.leases(), fs::Permissions::from_mode(0o500)).expect("chmod");
    let output = as_nobody(&mut world.command(&["--json", "--rch", utf8(&rch)]))
        .output()
        .expect("run as nobody");
    let error = format!(
        "the lease directory {} is not writable by nobody (uid {NOBODY}): rch could not rewrite a journal",
        world.leases().display()
    );
    assert_unwritable_run(&output, &error, &world.state(), (&id, &entry));
    assert!(!started.exists(), "rch was started");
    let output = as_nobody(&mut world.sub(&["doctor", "--json", "--rch", utf8(&rch)]))
        .output()
        .expect("doctor as nobody");
    let row = row(&one_document(&output), "lease_dir").clone();
    assert_eq!(row["status"], "fail", "{row}");
    assert!(
        row["finding"].as_str().is_some_and(|f| f.contains(&error)),
        "{row}"
    );
}

/// A tiny tmpfs at `$W/full` with the state folder in it, then filled:
/// `fill` uses up its bytes or its inodes.
fn full_tmpfs(options: &str, fill: &str) -> String {
    format!(
        r#"mkdir "$W/full"
mount -t tmpfs -o {options} tmpfs "$W/full"
mkdir -m 0700 "$W/full/rch-sweep"
{fill}
echo ready"#
    )
}

#[test]
fn doctor_fails_a_state_file_system_with_no_byte_or_no_inode_free_and_a_run_exits_74() {
    if !root_or_skip("doctor_fails_a_state_file_system") {
        return;
    }
    let cases = [
        (
            "no byte",
            full_tmpfs(
                "size=256k,nr_inodes=1000",
                "dd if=/dev/zero of=\"$W/full/filler\" bs=4096 2>/dev/null || true",
            ),
            "0 bytes",
        ),
        (
            "no inode",
            full_tmpfs(
                "size=4m,nr_inodes=8",
                "i=0; while touch \"$W/full/f$i\" 2>/dev/null; do i=$((i+1)); done",
            ),
            "no inode free",
        ),
    ];
    for (case, setup, words) in cases {
        let world = World::new();
        world.add(&Journal::stale("w1", 3 * HOUR_MS));
        let (rch, started) = noting_rch(&world);
        let ns = Namespace::start(world.dir.path(), &setup, "umount \"$W/full\"")
            .expect("a tmpfs needs no loop device");
        let state_file = world.path("full/rch-sweep/backoff.json");
        let leases = world.leases();
        let common = places(&leases, &state_file, &rch);
        let mut args = vec!["--json"];
        args.extend_from_slice(&common);
        let output = ns.sweep(&args);
        assert_eq!(
            output.status.code(),
            Some(74),
            "{case}: {}",
            stderr(&output)
        );
        assert!(!started.exists(), "{case}: rch was started");
        let mut args = vec!["doctor", "--json"];
        args.extend_from_slice(&common);
        let document = one_document(&ns.sweep(&args));
        let row = row(&document, "host");
        assert_eq!(row["status"], "fail", "{case}: {row}");
        assert!(
            row["finding"]
                .as_str()
                .is_some_and(|f| f.contains(words) && f.contains("exit 74")),
            "{case}: {row}"
        );
        assert_eq!(document["exit_code"], 1, "{case}");
    }
}

#[test]
fn doctor_warns_of_an_empty_state_home_variable() {
    let world = World::new();
    let rch = world.fake_rch("rch", "exit 1");
    for name in ["XDG_STATE_HOME", "RCH_STATE_HOME"] {
        let output = world
            .sub(&["doctor", "--json", "--rch", utf8(&rch)])
            .env(name, "")
            .output()
            .expect("doctor");
        let row = row(&one_document(&output), "environment").clone();
        assert_eq!(row["status"], "warn", "{name}: {row}");
        assert!(
            row["finding"]
                .as_str()
                .is_some_and(|f| f.contains(&format!("{name} is set but empty"))
                    && f.contains("rch/job-leases")),
            "{name}: {row}"
        );
    }
    // Set to a folder, or unset, it is no concern of this check.
    let output = world
        .sub(&["doctor", "--json", "--rch", utf8(&rch)])
        .env("XDG_STATE_HOME", world.path("xdg"))
        .output()
        .expect("doctor");
    let row = row(&one_document(&output), "environment").clone();
    assert!(
        !row["finding"]
            .as_str()
            .is_some_and(|f| f.contains("set but empty")),
        "{row}"
    );
}

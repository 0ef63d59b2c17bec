//! A run with nothing due pays for none of the host checks a recovery
//! needs (issue 34: "no `statx`/mountinfo read on a run with nothing
//! due"): the lease directory's mount and access (`fstatvfs`, which
//! glibc makes an `fstatfs`, and `faccessat`), the mount id `statx` reports, the mount table `/proc/locks` is read by, and
//! `/proc/locks` itself are asked only once a lease is due. Seen with
//! strace on the real binary; the same run with one due lease shows each
//! of them, so the trace is known to see them.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

/// The system calls and opened paths of one real run, from strace.
fn traced(world: &World, rch: &Path, socket: &Path) -> String {
    let trace = world.path("trace");
    let mut inner = world.command(&[
        "--quiet",
        "--rch",
        rch.to_str().expect("utf-8"),
        "--socket",
        socket.to_str().expect("utf-8"),
    ]);
    inner.env("HOME", world.dir.path());
    let mut strace = Command::new("strace");
    strace
        .args(["-f", "-qq", "-o"])
        .arg(&trace)
        .args(["-e", "trace=%file,fstatfs,statfs"])
        .arg(inner.get_program())
        .args(inner.get_args());
    for (key, value) in inner.get_envs() {
        match value {
            Some(value) => strace.env(key, value),
            None => strace.env_remove(key),
        };
    }
    let output = strace.output().expect("run strace");
    assert!(
        output.status.success(),
        "exit {:?}: {}",
        output.status.code(),
        stderr(&output)
    );
    std::fs::read_to_string(&trace).expect("trace")
}

/// What a recovery's host checks leave in a trace: `fstatvfs` (glibc's
/// `fstatfs`), `faccessat` on an open directory's descriptor (the other
/// access checks of a run name a path), `statx` asked for the mount id
/// (std's own `statx` asks for `STATX_ALL`, and the kernel adds the mount
/// id to any answer: only the request counts), the mount table and
/// `/proc/locks`.
fn recovery_checks(trace: &str) -> Vec<&'static str> {
    let seen = |check: &str| -> bool {
        trace.lines().any(|line| match check {
            "fstatvfs" => line.contains(" fstatfs("),
            "faccessat on a descriptor" => line
                .split_once("faccessat")
                .and_then(|(_, call)| call.split_once('('))
                .is_some_and(|(_, args)| args.starts_with(|c: char| c.is_ascii_digit())),
            "statx for the mount id" => {
                line.contains(" statx(")
                    && line
                        .split('{')
                        .next()
                        .is_some_and(|request| request.contains("STATX_MNT_ID"))
            }
            path => line.contains(path),
        })
    };
    [
        "fstatvfs",
        "faccessat on a descriptor",
        "statx for the mount id",
        "/proc/self/mountinfo",
        "/proc/locks",
    ]
    .into_iter()
    .filter(|check| seen(check))
    .collect()
}

#[test]
fn a_run_with_nothing_due_asks_nothing_of_mounts_or_locks() {
    if std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
    {
        assert!(std::env::var_os("CI").is_none(), "CI installs strace");
        eprintln!("skipped: strace is not installed");
        return;
    }
    let world = World::new();
    let daemon = FakeDaemon::start(&world.path("rch.sock"), Reply::Healthy);
    let rch = world.completing_daemon_rch();
    // Nothing due: a lease rch already finished.
    world.add(&Journal::stale("w1", 3_600_000).completed(0));
    let quiet = traced(&world, &rch, &daemon.socket);
    assert_eq!(recovery_checks(&quiet), Vec::<&str>::new(), "{quiet}");
    // Nor is rch started: not `--version`, not `--capabilities` (issue
    // 46), not `daemon status`.
    let rch_started = |trace: &str| trace.contains(&format!("execve(\"{}\"", rch.display()));
    assert!(!rch_started(&quiet), "{quiet}");

    // One due lease, with the recovery lock file an earlier `rch jobs
    // recover` left (rch never removes it): each check is made, and the
    // trace shows it.
    let id = world.will_complete(Journal::stale("w2", 3_600_000));
    let lock = world.leases().join(format!("{id}.recovery.lock"));
    std::fs::write(&lock, "").expect("lock file");
    // 0600, as rch makes it (one open to others is refused: 74).
    std::fs::set_permissions(&lock, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod");
    let busy = traced(&world, &rch, &daemon.socket);
    assert_eq!(
        recovery_checks(&busy),
        [
            "fstatvfs",
            "faccessat on a descriptor",
            "statx for the mount id",
            "/proc/self/mountinfo",
            "/proc/locks"
        ],
        "{busy}"
    );
    assert!(rch_started(&busy), "{busy}");
    assert_eq!(world.state()["leases"].get(&id), None, "recovered");
    daemon.stop();
}

//! The helper every test that adds accounts, crontabs, units or drop-ins
//! uses (tests/common/private_host.rs, issue 43): what is made inside is
//! real there, and the host's files are as they were, to the byte and the
//! inode. Needs root (CI runs as root).

mod common;

use common::private_host::{
    HolderPaths, Namespace, PrivateHost, Refusal, check_holder, judge_holder, pidfd_open,
};
use common::*;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

/// What the host shows of `path`: its bytes (empty for a folder) and its
/// inode, size, mode and change time, as `.ci/run` lists them.
fn host_view(path: &str) -> Option<(Vec<u8>, u64, u64, u32, i64, i64)> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let bytes = if meta.is_file() {
        std::fs::read(path).expect("read")
    } else {
        Vec::new()
    };
    Some((
        bytes,
        meta.ino(),
        meta.size(),
        meta.mode(),
        meta.ctime(),
        meta.ctime_nsec(),
    ))
}

const WATCHED: [&str; 8] = [
    "/etc/passwd",
    "/etc/group",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/passwd-",
    "/etc",
    "/etc/systemd",
    "/var/spool/cron/crontabs",
];

#[test]
fn an_account_and_its_crontab_made_inside_leave_the_host_as_it_was() {
    let Some(host) =
        PrivateHost::new("an_account_and_its_crontab_made_inside_leave_the_host_as_it_was")
    else {
        return;
    };
    if !tool_or_skip("/usr/sbin/useradd", "passwd") || !tool_or_skip("/usr/bin/crontab", "cron") {
        return;
    }
    account_and_crontab_inside(&host);
}

/// A `useradd` on the host holds `/etc/passwd.lock` and `/etc/group.lock`
/// while a test makes its account inside: the test's `useradd` does not
/// see them. (The host here is a namespace of this test's own, whose
/// `/etc` is an overlay with those two locks in it: the machine's `/etc`
/// is not touched. This test binary runs the next test there.)
#[test]
fn the_hosts_password_locks_do_not_fail_a_useradd_inside() {
    const TEST: &str = "the_hosts_password_locks_do_not_fail_a_useradd_inside";
    if PrivateHost::new(TEST).is_none()
        || !tool_or_skip("/usr/sbin/useradd", "passwd")
        || !tool_or_skip("/usr/bin/crontab", "cron")
    {
        return;
    }
    let stage = tempfile::tempdir().expect("tempdir");
    passes_in_a_namespace(
        "mount -t tmpfs rch-sweep-test \"$1\" && mkdir \"$1/upper\" \"$1/work\" \
         && mount -t overlay -o \"lowerdir=/etc,upperdir=$1/upper,workdir=$1/work\" rch-sweep-test /etc \
         && touch /etc/passwd.lock /etc/group.lock",
        stage.path(),
        "useradd_inside_while_the_host_holds_its_locks",
    );
}

/// Runs this test binary's ignored `test` in a private mount namespace
/// that `setup` (a shell script, `$1` being `folder`) made, and fails
/// unless it passed there.
fn passes_in_a_namespace(setup: &str, folder: &Path, test: &str) {
    let output = common::mounts::private_mount_namespace(&format!(
        "{setup} && exec \"$2\" --exact --ignored \"$3\""
    ))
    .arg(folder)
    .arg(std::env::current_exe().expect("this test binary"))
    .arg(test)
    .output()
    .expect("unshare");
    assert!(
        output.status.success() && stdout(&output).contains("1 passed"),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
}

#[test]
#[ignore = "run by the_hosts_password_locks_do_not_fail_a_useradd_inside, in a namespace whose /etc holds the locks"]
fn useradd_inside_while_the_host_holds_its_locks() {
    assert!(
        Path::new("/etc/passwd.lock").exists(),
        "not in the test's namespace"
    );
    let host =
        PrivateHost::new("useradd_inside_while_the_host_holds_its_locks").expect("a private host");
    account_and_crontab_inside(&host);
}

/// Makes an account and its crontab inside `host`, and sees that the
/// host's files are as they were.
fn account_and_crontab_inside(host: &PrivateHost) {
    let before: Vec<_> = WATCHED.iter().map(|path| host_view(path)).collect();
    let name = "rchsweep-private";
    let made = host
        .command("useradd")
        .args(["--no-create-home", "--user-group", name])
        .output()
        .expect("useradd");
    assert!(made.status.success(), "useradd: {}", stderr(&made));
    let seen = host
        .command("getent")
        .args(["passwd", name])
        .output()
        .expect("getent");
    assert!(
        stdout(&seen).starts_with(&format!("{name}:")),
        "{}",
        stderr(&seen)
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("crontab");
    std::fs::write(&file, "0 0 30 2 * /usr/bin/true\n").expect("write");
    let installed = host
        .command("crontab")
        .args(["-u", name])
        .arg(&file)
        .output()
        .expect("crontab");
    assert!(
        installed.status.success(),
        "crontab: {}",
        stderr(&installed)
    );
    let listed = host
        .command("crontab")
        .args(["-u", name, "-l"])
        .output()
        .expect("crontab -l");
    assert!(
        stdout(&listed).contains("/usr/bin/true"),
        "{}",
        stderr(&listed)
    );
    // Outside, no such account, and no crontab of its.
    let outside = std::process::Command::new("getent")
        .args(["passwd", name])
        .output()
        .expect("getent");
    assert!(!outside.status.success(), "{}", stdout(&outside));
    assert!(!Path::new("/var/spool/cron/crontabs").join(name).exists());
    let after: Vec<_> = WATCHED.iter().map(|path| host_view(path)).collect();
    for ((path, before), after) in WATCHED.iter().zip(&before).zip(&after) {
        assert!(before == after, "{path} changed on the host");
    }
}

#[test]
fn files_written_inside_are_seen_only_inside() {
    let Some(host) = PrivateHost::new("files_written_inside_are_seen_only_inside") else {
        return;
    };
    let unit = Path::new("/etc/systemd/system/rch-sweep-private-test.service");
    let cron = Path::new("/etc/cron.d/rch-sweep-private-test");
    // Not among the folders the holder made private: covered on demand.
    let packaged = Path::new("/usr/lib/systemd/system/rch-sweep-private-test.service");
    let before: Vec<_> = WATCHED.iter().map(|path| host_view(path)).collect();
    for path in [unit, cron, packaged] {
        host.write(path, b"[Unit]\n");
        let read = host.command("cat").arg(path).output().expect("cat");
        assert_eq!(stdout(&read), "[Unit]\n", "{}", stderr(&read));
        assert!(!path.exists(), "{} is on the host", path.display());
    }
    // A test's own folders are the host's, seen alike inside.
    let dir = tempfile::tempdir().expect("tempdir");
    host.write(&dir.path().join("mine"), b"x");
    assert_eq!(std::fs::read(dir.path().join("mine")).expect("read"), b"x");
    let read = host
        .command_as(NOBODY, NOBODY, dir.path(), "cat")
        .arg("mine")
        .output()
        .expect("cat");
    assert_eq!(stdout(&read), "x", "{}", stderr(&read));
    let id = host
        .command_as(NOBODY, NOBODY, dir.path(), "id")
        .arg("-u")
        .output()
        .expect("id");
    assert_eq!(stdout(&id).trim(), NOBODY.to_string());
    // No manager and no user's runtime folders inside: /run is private
    // (mount(8) may keep its table there).
    let run = host
        .command("ls")
        .args(["-A", "/run"])
        .output()
        .expect("ls");
    assert!(
        stdout(&run).lines().all(|name| name == "mount"),
        "{}{}",
        stdout(&run),
        stderr(&run)
    );
    let after: Vec<_> = WATCHED.iter().map(|path| host_view(path)).collect();
    for ((path, before), after) in WATCHED.iter().zip(&before).zip(&after) {
        assert!(before == after, "{path} changed on the host");
    }
}

#[test]
fn the_namespace_ends_with_the_helper() {
    let Some(host) = PrivateHost::new("the_namespace_ends_with_the_helper") else {
        return;
    };
    let pid = host.pid();
    assert!(alive(pid));
    drop(host);
    assert!(!alive(pid), "the holder {pid} outlived its PrivateHost");
}

/// The holder check over what it reads, with a stand-in for `/proc`: each
/// `ns/mnt` a file, a link to another standing for a shared namespace
/// (`stat` follows it, as it follows the kernel's), and real pidfds, of
/// this process (running) and of a child that has exited.
#[test]
fn the_holder_check_reads_each_ns_mnt_and_the_pidfd() {
    let proc = tempfile::tempdir().expect("tempdir");
    let mnt = |who: &str| proc.path().join(who).join("ns/mnt");
    for who in ["1", "self", "77"] {
        std::fs::create_dir_all(proc.path().join(who).join("ns")).expect("mkdir");
    }
    let link = |who: &str, to: &str| {
        let _ = std::fs::remove_file(mnt(who));
        std::os::unix::fs::symlink(format!("../../{to}/ns/mnt"), mnt(who)).expect("symlink");
    };
    let own = |who: &str| {
        let _ = std::fs::remove_file(mnt(who));
        std::fs::write(mnt(who), who).expect("write");
    };
    own("1");
    link("self", "1");
    own("77");
    let paths = HolderPaths::new(proc.path(), 77);
    let running = pidfd_open(std::process::id()).expect("pidfd of this process");
    let mut child = Command::new("true").spawn().expect("true");
    let exited = pidfd_open(child.id()).expect("pidfd of a child not yet reaped");
    child.wait().expect("wait");

    assert_eq!(check_holder(&paths, &running), Ok(()));
    assert_eq!(check_holder(&paths, &exited), Err(Refusal::Exited));
    // The holder's pid now names a process of the host.
    link("77", "1");
    assert_eq!(check_holder(&paths, &running), Err(Refusal::HostsNamespace));
    // A test run in a namespace of its own (`unshare -m cargo test`),
    // whose holder never left it: the host's files all the same.
    own("self");
    link("77", "self");
    assert_eq!(check_holder(&paths, &running), Err(Refusal::OwnNamespace));
    std::fs::remove_file(mnt("77")).expect("rm");
    assert_eq!(check_holder(&paths, &running), Err(Refusal::Unreadable));
    // Pid 1's namespace unreadable (as in a sandbox that refuses ptrace
    // access to pid 1): the test's own is the host it can see.
    own("77");
    std::fs::remove_file(mnt("1")).expect("rm");
    assert_eq!(check_holder(&paths, &running), Ok(()));
    link("77", "self");
    assert_eq!(check_holder(&paths, &running), Err(Refusal::OwnNamespace));
    own("77");
    std::fs::remove_file(mnt("self")).expect("rm");
    assert_eq!(check_holder(&paths, &running), Err(Refusal::OwnUnreadable));
}

#[test]
fn the_holder_check_wants_a_running_holder_apart_from_host_and_test() {
    let ns = |dev, ino| Some(Namespace { dev, ino });
    let (host, holder, other) = (ns(4, 1), ns(4, 2), ns(4, 3));
    // Same inode number on another device: another namespace.
    let elsewhere = ns(5, 1);
    use Refusal::*;
    // (running, holder's, pid 1's, the test's own): the verdict.
    let table = [
        ((true, holder, host, host), Ok(())),
        ((true, holder, host, other), Ok(())),
        ((true, elsewhere, host, host), Ok(())),
        ((true, holder, None, host), Ok(())),
        ((false, holder, host, host), Err(Exited)),
        ((true, None, host, host), Err(Unreadable)),
        ((true, host, host, host), Err(HostsNamespace)),
        ((true, holder, host, holder), Err(OwnNamespace)),
        ((true, holder, None, holder), Err(OwnNamespace)),
        ((true, holder, host, None), Err(OwnUnreadable)),
        ((true, holder, None, None), Err(OwnUnreadable)),
    ];
    for ((running, holder, host, own), verdict) in table {
        assert_eq!(
            judge_holder(running, holder, host, own),
            verdict,
            "{running} {holder:?} {host:?} {own:?}"
        );
    }
}

/// A holder that died is never acted through: a command asked for fails
/// the test, one made before fails to start (also once the PrivateHost is
/// gone and the pid may be reused), and no path through its root is given.
#[test]
fn a_holder_that_exited_is_never_acted_through() {
    let Some(host) = PrivateHost::new("a_holder_that_exited_is_never_acted_through") else {
        return;
    };
    let mut made_before = host.command("true");
    let mut kept = host.command("true");
    assert!(made_before.status().expect("nsenter").success());
    let pid = host.pid();
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    assert!(gone_within(pid, 10), "the holder {pid} outlived SIGKILL");

    let refused = |what: &dyn Fn()| {
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(what))
            .expect_err("acted through a holder that exited");
        let said = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(said.contains(&format!("(pid {pid}) has exited")), "{said}");
    };
    refused(&|| drop(host.command("true")));
    refused(&|| drop(host.inside(Path::new("/etc/passwd"))));
    refused(&|| host.write(Path::new("/etc/cron.d/x"), b""));
    let started = made_before.status().map(|status| status.code());
    assert_eq!(
        started.map_err(|error| error.raw_os_error()),
        Err(Some(libc::ESRCH))
    );
    drop(host);
    let started = kept.status().map(|status| status.code());
    assert_eq!(
        started.map_err(|error| error.raw_os_error()),
        Err(Some(libc::ESRCH))
    );
}

/// On a host without `/var/spool/cron` the holder makes none private, and
/// a crontab written there is covered on demand rather than written
/// through to the host. (The host here is a namespace of this test's own
/// whose `/var/spool` is an empty tmpfs; this test binary runs the next
/// test there.)
#[test]
fn a_host_without_var_spool_cron_gets_no_crontab_from_a_test() {
    const TEST: &str = "a_host_without_var_spool_cron_gets_no_crontab_from_a_test";
    if PrivateHost::new(TEST).is_none() {
        return;
    }
    passes_in_a_namespace(
        "mount -t tmpfs rch-sweep-test /var/spool",
        Path::new("/var/spool"),
        "a_crontab_written_where_the_host_has_no_var_spool_cron",
    );
}

#[test]
#[ignore = "run by a_host_without_var_spool_cron_gets_no_crontab_from_a_test, in a namespace with no /var/spool/cron"]
fn a_crontab_written_where_the_host_has_no_var_spool_cron() {
    let spool = Path::new("/var/spool/cron");
    assert!(
        !spool.exists() && Path::new("/var/spool").is_dir(),
        "not in the test's namespace"
    );
    let host = PrivateHost::new("a_crontab_written_where_the_host_has_no_var_spool_cron")
        .expect("a private host");
    let crontab = spool.join("crontabs/rchsweep-private");
    host.write(&crontab, b"0 0 30 2 * /usr/bin/true\n");
    let read = host.command("cat").arg(&crontab).output().expect("cat");
    assert_eq!(
        stdout(&read),
        "0 0 30 2 * /usr/bin/true\n",
        "{}",
        stderr(&read)
    );
    assert!(!spool.exists(), "{} was made on the host", spool.display());
}

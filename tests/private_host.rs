//! The helper every test that adds accounts, crontabs, units or drop-ins
//! uses (tests/common/private_host.rs, issue 43): what is made inside is
//! real there, and the host's files are as they were, to the byte and the
//! inode. Needs root (CI runs as root).

mod common;

use common::private_host::PrivateHost;
use common::*;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

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
    let output = common::mounts::private_mount_namespace(
        "mount -t tmpfs rch-sweep-test \"$1\" && mkdir \"$1/upper\" \"$1/work\" \
         && mount -t overlay -o \"lowerdir=/etc,upperdir=$1/upper,workdir=$1/work\" rch-sweep-test /etc \
         && touch /etc/passwd.lock /etc/group.lock && exec \"$2\" --exact --ignored \"$3\"",
    )
    .arg(stage.path())
    .arg(std::env::current_exe().expect("this test binary"))
    .arg("useradd_inside_while_the_host_holds_its_locks")
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

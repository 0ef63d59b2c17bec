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
    std::fs::write(dir.path().join("mine"), "x").expect("write");
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

//! A throwaway account inside a [`PrivateHost`] (the real `useradd`), whose
//! home is a fresh [`World`]: the account, its crontab and whatever the
//! test writes under `/etc` go with the namespace when it is dropped. The
//! tests that use it wrap it with what only they need (their own
//! environment for doctor, files under `/etc`).
#![allow(dead_code)]

use super::private_host::PrivateHost;
use super::{World, root_or_skip, stderr, stdout, tool_or_skip};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

pub struct TestAccount {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub world: World,
    pub host: PrivateHost,
}

impl TestAccount {
    /// The account `name` in a private host of its own. `None` (having said
    /// why) where the test cannot run: not root, no private mount
    /// namespace, or no `useradd`/`crontab` outside CI.
    pub fn new(test: &str, name: &str) -> Option<TestAccount> {
        if !root_or_skip(test)
            || !tool_or_skip("/usr/sbin/useradd", "passwd")
            || !tool_or_skip("/usr/bin/crontab", "cron")
        {
            return None;
        }
        let host = PrivateHost::new(test)?;
        let world = World::new();
        fs::set_permissions(world.dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
        let made = host
            .command("useradd")
            .args(["--no-create-home", "--shell", "/bin/sh", "--user-group"])
            .arg("--home-dir")
            .arg(world.dir.path())
            .arg(name)
            .output()
            .expect("useradd");
        assert!(made.status.success(), "useradd: {}", stderr(&made));
        let id = |flag: &str| -> u32 {
            let output = host.command("id").args([flag, name]).output().expect("id");
            stdout(&output).trim().parse().expect("a number from id")
        };
        Some(TestAccount {
            uid: id("-u"),
            gid: id("-g"),
            name: name.to_owned(),
            world,
            host,
        })
    }

    pub fn home(&self) -> &Path {
        self.world.dir.path()
    }

    /// Everything in the home folder becomes the account's.
    pub fn hand_over(&self) {
        let status = Command::new("chown")
            .args(["-R", &format!("{}:{}", self.uid, self.gid)])
            .arg(self.home())
            .status()
            .expect("chown");
        assert!(status.success());
    }

    /// Installs `text` as the account's crontab with the real `crontab`.
    pub fn crontab(&self, text: &str) {
        let file = self.world.path("crontab.txt");
        fs::write(&file, text).expect("write crontab");
        let output = self
            .host
            .command("crontab")
            .args(["-u", &self.name])
            .arg(&file)
            .output()
            .expect("crontab");
        assert!(output.status.success(), "crontab: {}", stderr(&output));
    }

    /// `program` as this account, in its home, inside the namespace.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        self.host
            .command_as(self.uid, self.gid, self.home(), program)
    }
}

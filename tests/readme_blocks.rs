//! The README's blocks an operator pastes, pasted (issue 36):
//! - every cron block, into a real crontab of a throwaway user (`crontab
//!   FILE`, as that user), must install exactly one active rch-sweep line,
//!   and the `doctor --as cron` that follows it must run as that user and
//!   report; the user and its crontab live in a private mount namespace
//!   ([`PrivateHost`], issue 43), never on the host;
//! - every demo block, run with bash in the checkout, must leave the shell
//!   it ran in without `RCH_STATE_HOME` or `RCH_SOCKET_PATH`, so later
//!   commands there still target the operator's own leases, and must remove
//!   the temporary folder it made.

mod common;

use common::private_host::PrivateHost;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const README: &str = "README.md";
const SYSTEMD_README: &str = "systemd/README.md";

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo(path)).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// The fenced blocks of a Markdown text, in order: (info string, body).
fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_owned(), String::new())),
            (Some(_), Some(rest)) if rest.trim().is_empty() => {
                blocks.extend(open.take());
            }
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

// ---------------------------------------------------------------------------
// cron

/// A route's block: what goes into the crontab, and the doctor command that
/// checks it (the `sh` block right after it).
#[derive(Debug, Clone, PartialEq)]
struct CronBlock {
    crontab: String,
    doctor: String,
}

fn cron_blocks(path: &str) -> Vec<CronBlock> {
    let blocks = fenced_blocks(&read(path));
    blocks
        .iter()
        .enumerate()
        .filter(|(_, (info, _))| info == "cron")
        .map(|(at, (_, crontab))| {
            let doctor = blocks
                .get(at + 1)
                .filter(|(info, _)| info == "sh")
                .map(|(_, body)| body.trim().to_owned())
                .unwrap_or_else(|| {
                    panic!("{path}: no sh block with doctor --as cron after {crontab}")
                });
            CronBlock {
                crontab: crontab.clone(),
                doctor,
            }
        })
        .collect()
}

/// The lines cron acts on: neither blank nor a comment.
fn active_lines(crontab: &str) -> Vec<&str> {
    crontab
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
}

/// A commented line that would be a job or a variable without its `#`: an
/// alternative that invites pasting it active.
fn is_commented_alternative(line: &str) -> bool {
    let Some(rest) = line.trim().strip_prefix('#') else {
        return false;
    };
    let rest = rest.trim_start();
    let variable = rest.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    let job = rest.starts_with(|c: char| c == '*' || c == '@' || c.is_ascii_digit());
    variable || job
}

/// The program of a crontab job line or a shell command, `~` and `$HOME`
/// spelt one way.
fn program(command: &str) -> String {
    command
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .replace("$HOME/", "~/")
}

#[test]
fn every_cron_block_runs_one_sweep_and_names_its_check() {
    let blocks = cron_blocks(README);
    assert!(
        blocks.len() >= 3,
        "{README}: one block per route: {blocks:#?}"
    );
    for block in &blocks {
        let active = active_lines(&block.crontab);
        let sweeps: Vec<&&str> = active
            .iter()
            .filter(|line| line.contains("rch-sweep"))
            .collect();
        assert_eq!(sweeps.len(), 1, "not one active rch-sweep line: {block:#?}");
        for line in block.crontab.lines() {
            assert!(
                !is_commented_alternative(line),
                "a commented alternative, active once pasted: {line:?} in {block:#?}"
            );
        }
        // Every other active line is a variable line.
        for line in &active {
            if !line.contains("rch-sweep") {
                assert!(line.contains('='), "neither a job nor a variable: {line}");
            }
        }
        // Its check: that very program's doctor --as cron, one command.
        let job = sweeps[0]
            .splitn(6, ' ')
            .nth(5)
            .unwrap_or_else(|| panic!("no command on {}", sweeps[0]));
        assert_eq!(block.doctor.lines().count(), 1, "{block:#?}");
        let words: Vec<&str> = block.doctor.split_whitespace().collect();
        assert_eq!(
            words.get(1..),
            Some(&["doctor", "--as", "cron"][..]),
            "{block:#?}"
        );
        assert_eq!(program(&block.doctor), program(job), "{block:#?}");
    }
    // systemd/README.md gives the same blocks.
    assert_eq!(
        cron_blocks(SYSTEMD_README),
        blocks,
        "{SYSTEMD_README} and {README} differ"
    );
}

/// A throwaway account, made with useradd inside `host`: it and its
/// crontab go with the namespace, also when a test panics.
struct ThrowawayUser<'a> {
    name: String,
    uid: u32,
    gid: u32,
    home: PathBuf,
    host: &'a PrivateHost,
}

impl<'a> ThrowawayUser<'a> {
    fn new(host: &'a PrivateHost, parent: &Path) -> ThrowawayUser<'a> {
        let name = format!("rchsweep-cron{}", std::process::id());
        let home = parent.join(&name);
        let status = host
            .command("useradd")
            .args([
                "--create-home",
                "--user-group",
                "--shell",
                "/bin/sh",
                "--home-dir",
            ])
            .arg(&home)
            .arg(&name)
            .status()
            .expect("run useradd");
        assert!(status.success(), "useradd {name}");
        let id = |flag: &str| -> u32 {
            let output = host
                .command("id")
                .arg(flag)
                .arg(&name)
                .output()
                .expect("id");
            stdout(&output).trim().parse().expect("a number")
        };
        ThrowawayUser {
            uid: id("-u"),
            gid: id("-g"),
            name,
            home,
            host,
        }
    }

    /// `args` run as this user (runuser, as an administrator would).
    fn run(&self, args: &[&str]) -> Output {
        self.host
            .command_in(&self.home, "runuser")
            .args(["-u", &self.name, "--"])
            .args(args)
            .output()
            .expect("runuser")
    }
}

#[test]
fn each_cron_block_installs_as_a_real_crontab_and_doctor_as_cron_reports_on_it() {
    if !root_or_skip("each_cron_block_installs_as_a_real_crontab") {
        return;
    }
    if !tool_or_skip("/usr/bin/crontab", "cron") {
        return;
    }
    let Some(host) = PrivateHost::new("each_cron_block_installs_as_a_real_crontab") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let user = ThrowawayUser::new(&host, dir.path());
    let blocks = cron_blocks(README);
    assert!(blocks.len() >= 3, "{blocks:#?}");
    for (number, block) in blocks.iter().enumerate() {
        let file = dir.path().join(format!("crontab-{number}"));
        std::fs::write(&file, &block.crontab).expect("write the block");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let installed = user.run(&["crontab", &file.display().to_string()]);
        assert!(
            installed.status.success(),
            "crontab refused block {number}: {}\n{}",
            stderr(&installed),
            block.crontab
        );
        let listed = user.run(&["crontab", "-l"]);
        assert!(listed.status.success(), "crontab -l: {}", stderr(&listed));
        let listed = stdout(&listed);
        let sweeps: Vec<&str> = active_lines(&listed)
            .into_iter()
            .filter(|line| line.contains("rch-sweep"))
            .collect();
        assert_eq!(
            sweeps.len(),
            1,
            "crontab -l after block {number}:\n{listed}"
        );
        assert_eq!(
            active_lines(&listed),
            active_lines(&block.crontab),
            "{listed}"
        );

        // The check the block names, as that user, with the binary under
        // test standing in for the route's installed one.
        let output = host
            .command_as(user.uid, user.gid, &user.home, BIN)
            .args(["doctor", "--as", "cron", "--json"])
            .env_clear()
            .env("HOME", &user.home)
            .env("LOGNAME", &user.name)
            .env("USER", &user.name)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .expect("run doctor --as cron");
        let code = output.status.code();
        assert!(
            matches!(code, Some(0 | 1)),
            "doctor --as cron after block {number} exited {code:?}: {}",
            stderr(&output)
        );
        let document: serde_json::Value = serde_json::from_str(stdout(&output).trim())
            .unwrap_or_else(|error| panic!("{error}: {}\n{}", stdout(&output), stderr(&output)));
        assert_eq!(document["as"], "cron", "{document}");
        // One report, for the block's one sweep line, checked in that line's
        // environment: its daemon row looks where the block's variable says.
        let reports = document["reports"].as_array().expect("reports");
        assert_eq!(reports.len(), 1, "{document}");
        assert_eq!(reports[0]["text"], sweeps[0], "{document}");
        let daemon = reports[0]["checks"]
            .as_array()
            .expect("the line's checks")
            .iter()
            .find(|check| check["check"] == "daemon")
            .expect("a daemon check");
        let variable = active_lines(&block.crontab)
            .into_iter()
            .find_map(|line| line.strip_prefix("RCH_SOCKET_PATH="))
            .expect("the block names rch's socket");
        assert!(
            daemon["finding"]
                .as_str()
                .is_some_and(|finding| finding.contains(variable)),
            "{daemon}"
        );
    }
}

// ---------------------------------------------------------------------------
// The demo

/// The README's demo blocks: the `sh` blocks before "## What it is for"
/// that use the checked-in stand-ins.
fn demo_blocks() -> Vec<String> {
    let readme = read(README);
    let intro = readme.split("\n## ").next().unwrap_or_default();
    fenced_blocks(intro)
        .into_iter()
        .filter(|(info, body)| info == "sh" && body.contains("examples/fake-rch"))
        .map(|(_, body)| body)
        .collect()
}

#[test]
fn the_demo_blocks_leave_the_shell_pointing_at_the_operators_own_leases() {
    let blocks = demo_blocks();
    assert_eq!(blocks.len(), 3, "{blocks:#?}");
    // What each block's `cargo run --release --` commands exit with, in order.
    let expected: [&[i32]; 3] = [&[0, 0], &[0], &[75, 0, 0]];
    for (block, expected) in blocks.iter().zip(expected) {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("exits");
        let home = dir.path().join("home");
        std::fs::create_dir(&home).expect("home");
        // `cargo run --release --` is the binary under test; once a
        // stand-in daemon was started, the first run waits (bounded) for
        // its socket, as cargo's own start gives it time to.
        let script = format!(
            "cargo() {{\n\
               [ \"$1 $2 $3\" = 'run --release --' ] || {{ echo \"unexpected: cargo $*\" >&2; return 99; }}\n\
               shift 3\n\
               if [ -n \"$(jobs -p)\" ]; then\n\
                 tries=0\n\
                 while [ ! -S \"$demo/rch.sock\" ] && [ $tries -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); done\n\
               fi\n\
               \"$BIN\" \"$@\"\n\
               status=$?\n\
               echo $status >> \"$LOG\"\n\
               return $status\n\
             }}\n\
             {block}\n\
             printf 'RCH_STATE_HOME=%s\\n' \"${{RCH_STATE_HOME-unset}}\"\n\
             printf 'RCH_SOCKET_PATH=%s\\n' \"${{RCH_SOCKET_PATH-unset}}\"\n\
             printf 'exported=%s\\n' \"$(env | grep -c '^RCH_')\"\n"
        );
        // Output to files, not pipes: a stand-in daemon a failed block left
        // running would hold a pipe open. The block's process group is
        // ended after it, whatever it left.
        let out = dir.path().join("stdout");
        let err = dir.path().join("stderr");
        let mut child = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &script])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("TMPDIR", dir.path())
            .env("BIN", env!("CARGO_BIN_EXE_rch-sweep"))
            .env("LOG", &log)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(&out).expect("stdout file"))
            .stderr(std::fs::File::create(&err).expect("stderr file"))
            .process_group(0)
            .spawn()
            .expect("run bash");
        let status = child.wait().expect("wait for bash");
        // Listed before the process group is ended: the block itself must
        // have removed its copy (made with mktemp, in TMPDIR).
        let left = files_in(dir.path());
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", child.id())])
            .stderr(std::process::Stdio::null())
            .status();
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        let errors = std::fs::read_to_string(&err).unwrap_or_default();
        let exits: Vec<i32> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.parse().ok())
            .collect();
        assert_eq!(
            exits, expected,
            "the block's runs exited otherwise ({status}):\n{block}\nstdout:\n{text}\nstderr:\n{errors}"
        );
        for line in [
            "RCH_STATE_HOME=unset",
            "RCH_SOCKET_PATH=unset",
            "exported=0",
        ] {
            assert!(
                text.lines().any(|got| got == line),
                "after the block the shell has {:?}, not {line}:\n{block}",
                text.lines()
                    .filter(|got| got.starts_with(line.split('=').next().unwrap_or_default()))
                    .collect::<Vec<_>>()
            );
        }
        assert_eq!(
            left,
            ["exits", "home", "stderr", "stdout"],
            "the block left its temporary folder behind:\n{block}"
        );
    }
}

//! `doctor --as user-timer|system-timer` reads a unit as systemd 252 does
//! (issue 42; reproductions r1 and r2 of the sixth wave): masks, the
//! words of `Environment=`, `EnvironmentFile=` globs and comments,
//! `environment.d`, `/etc/xdg/systemd/user`, the type-wide and dash-prefix
//! drop-in folders, and what systemd would refuse to start, which fails
//! the `environment` check.
//!
//! Each test runs the real binary as root inside a private mount namespace
//! ([`PrivateHost`]): a temporary folder is bound over `/root` there, so
//! the user manager's folders (`~/.config/systemd/user`, ...) are the
//! test's, and units under `/etc/systemd`, `/etc/xdg` or `/usr/lib` are
//! seen only inside. No systemd manager answers there (`/run` is empty),
//! so doctor reads the files.

mod common;

use common::doctor_rows::row;
use common::private_host::PrivateHost;
use common::*;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A private host whose `/root` is `world/root`, with the lease folders
/// the unit should (`good`) and should not (`wrong`) sweep.
struct Units {
    host: PrivateHost,
    world: World,
}

impl Units {
    fn new(test: &str) -> Option<Units> {
        let host = PrivateHost::new(test)?;
        let world = World::new();
        for dir in ["root", "good/job-leases", "wrong/job-leases"] {
            fs::create_dir_all(world.path(dir)).expect("mkdir");
        }
        let output = host
            .command("/bin/mount")
            .arg("--bind")
            .arg(world.path("root"))
            .arg("/root")
            .output()
            .expect("mount");
        assert!(output.status.success(), "mount: {}", stderr(&output));
        Some(Units { host, world })
    }

    /// A path of root's home (`/root/...` inside), written from outside.
    fn home(&self, path: &str) -> PathBuf {
        self.world.path("root").join(path)
    }

    fn write_home(&self, path: &str, text: &str) -> PathBuf {
        let file = self.home(path);
        fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        fs::write(&file, text).expect("write");
        file
    }

    fn good(&self) -> String {
        self.world.path("good/job-leases").display().to_string()
    }

    fn wrong(&self) -> String {
        self.world.path("wrong/job-leases").display().to_string()
    }

    /// `doctor --as ROUTE` (with `--json` when asked) as root inside, from
    /// a login shell with only `HOME`, `USER` and a plain `PATH`.
    fn doctor(&self, route: &str, json: bool) -> Output {
        let mut command = self.host.command(BIN);
        command
            .env_clear()
            .env("HOME", "/root")
            .env("USER", "root")
            .env("PATH", "/usr/bin:/bin")
            .args(["doctor", "--as", route]);
        if json {
            command.arg("--json");
        }
        command.output().expect("doctor")
    }

    fn document(&self, route: &str) -> (Output, Value, String) {
        let output = self.doctor(route, true);
        let text = stdout(&output);
        let document: Value = serde_json::from_str(text.trim())
            .unwrap_or_else(|error| panic!("{error}: {text} {}", stderr(&output)));
        (output, document, text)
    }
}

fn finding<'a>(document: &'a Value, check: &str) -> &'a str {
    row(document, check)["finding"].as_str().unwrap_or_default()
}

/// A unit running the built binary with `settings` in `[Service]`.
fn unit(settings: &str) -> String {
    format!("[Unit]\nDescription=test\n\n[Service]\nType=oneshot\n{settings}\n")
}

/// The first line of the version `systemctl --version` prints here, as a
/// number (systemd 252 on Debian 12); 252 where there is none.
fn systemd_version() -> u32 {
    std::process::Command::new("systemctl")
        .arg("--version")
        .output()
        .ok()
        .and_then(|output| {
            stdout(&output)
                .split_whitespace()
                .nth(1)
                .and_then(|word| word.parse().ok())
        })
        .unwrap_or(252)
}

/// r1, first case: `systemctl --user mask` links the unit in
/// `~/.config/systemd/user` to `/dev/null`; a copy lower in the search
/// path (`~/.local/share/systemd/user`) never runs. doctor says the unit
/// is masked (`fail`, exit 1) and reads nothing of the copy.
#[test]
fn a_masked_user_unit_fails_and_no_copy_further_down_is_read() {
    let Some(units) = Units::new("a_masked_user_unit_fails_and_no_copy_further_down_is_read")
    else {
        return;
    };
    units.write_home(
        ".local/share/systemd/user/rch-sweep.service",
        &unit(&format!("ExecStart={BIN} --lease-dir {}", units.wrong())),
    );
    let masked = units.home(".config/systemd/user/rch-sweep.service");
    fs::create_dir_all(masked.parent().expect("parent")).expect("mkdir");
    symlink("/dev/null", &masked).expect("mask");

    let (output, document, text) = units.document("user-timer");
    assert_eq!(output.status.code(), Some(1), "{document}");
    assert_eq!(
        row(&document, "environment")["status"],
        "fail",
        "{document}"
    );
    assert!(
        finding(&document, "environment")
            .contains("/root/.config/systemd/user/rch-sweep.service masks rch-sweep.service"),
        "{document}"
    );
    assert!(!text.contains(&units.wrong()), "{document}");
    // The other checks went on, with what systemd would give.
    assert!(
        finding(&document, "lease_dir").contains("/root/.local/state/rch/job-leases"),
        "{document}"
    );
}

/// r1, second case: a drop-in of the same name linked to `/dev/null` in a
/// higher folder masks the vendor's drop-in; its `--lease-dir` is never
/// applied.
#[test]
fn a_masked_drop_in_hides_the_same_name_further_down() {
    let Some(units) = Units::new("a_masked_drop_in_hides_the_same_name_further_down") else {
        return;
    };
    units.write_home(
        ".local/share/systemd/user/rch-sweep.service",
        &unit(&format!("ExecStart={BIN} --lease-dir {}", units.good())),
    );
    units.write_home(
        ".local/share/systemd/user/rch-sweep.service.d/50-vendor.conf",
        &format!(
            "[Service]\nExecStart=\nExecStart={BIN} --lease-dir {}\n",
            units.wrong()
        ),
    );
    let masked = units.home(".config/systemd/user/rch-sweep.service.d/50-vendor.conf");
    fs::create_dir_all(masked.parent().expect("parent")).expect("mkdir");
    symlink("/dev/null", &masked).expect("mask");

    let (_, document, text) = units.document("user-timer");
    assert!(
        finding(&document, "lease_dir").contains(&units.good()),
        "{document}"
    );
    assert!(!text.contains(&units.wrong()), "{document}");
    assert_eq!(row(&document, "environment")["status"], "ok", "{document}");
}

/// r2: three forms systemd 252 reads otherwise than a plain reading does.
#[test]
fn environment_words_globs_and_comments_as_systemd_reads_them() {
    let Some(units) = Units::new("environment_words_globs_and_comments_as_systemd_reads_them")
    else {
        return;
    };
    let checked = |settings: &str| -> String {
        units.write_home(
            ".config/systemd/user/rch-sweep.service",
            &unit(&format!("{settings}\nExecStart={BIN}")),
        );
        let (_, document, _) = units.document("user-timer");
        let lease_dir = finding(&document, "lease_dir");
        lease_dir
            .split(',')
            .next()
            .unwrap_or_default()
            .trim_start_matches("lease directory ")
            .to_owned()
    };
    // a) One invalid word ("-v") is skipped, not the rest of the line.
    assert_eq!(
        checked(&format!(
            "Environment=FLAGS=-q -v RCH_SWEEP_LEASE_DIR={}",
            units.good()
        )),
        units.good()
    );
    // b) An EnvironmentFile= glob, optional.
    units.write_home(
        ".config/rch-sweep/lease.env",
        &format!("RCH_SWEEP_LEASE_DIR={}\n", units.good()),
    );
    units.write_home(
        ".config/rch-sweep/.hidden.env",
        "RCH_SWEEP_LEASE_DIR=/hidden\n",
    );
    assert_eq!(
        checked("EnvironmentFile=-%h/.config/rch-sweep/*.env"),
        units.good()
    );
    // c) A comment ending in a backslash takes the next line before 254.
    units.write_home(
        ".config/rch-sweep/c.conf",
        &format!(
            "RCH_SWEEP_LEASE_DIR={}\n# old path was C:\\\nRCH_SWEEP_LEASE_DIR={}\n",
            units.good(),
            units.wrong()
        ),
    );
    let expected = if systemd_version() < 254 {
        units.good()
    } else {
        units.wrong()
    };
    assert_eq!(
        checked("EnvironmentFile=%h/.config/rch-sweep/c.conf"),
        expected
    );
}

/// What systemd would refuse to start fails the `environment` check,
/// naming the setting and the file that holds it: a missing
/// `EnvironmentFile=` without `-`, an `ExecStart=` program that does not
/// exist, a missing `WorkingDirectory=` without `-`. With `-` (and a
/// program that exists) the same unit passes, and no advice to add the
/// `-` it has is given.
#[test]
fn what_systemd_would_refuse_to_start_fails_the_environment_check() {
    let Some(units) = Units::new("what_systemd_would_refuse_to_start_fails_the_environment_check")
    else {
        return;
    };
    let template = Path::new("/etc/systemd/system/rch-sweep@.service");
    units.host.write(
        template,
        unit("User=%i\nExecStart=/nonexistent/bin/rch-sweep --quiet").as_bytes(),
    );
    let drop_in = Path::new("/etc/systemd/system/rch-sweep@root.service.d/10-env.conf");
    units.host.write(
        drop_in,
        b"[Service]\nEnvironmentFile=/etc/rch-sweep/missing.env\nWorkingDirectory=/nonexistent-dir\n",
    );

    let (output, document, _) = units.document("system-timer");
    assert_eq!(output.status.code(), Some(1), "{document}");
    let environment = row(&document, "environment");
    assert_eq!(environment["status"], "fail", "{document}");
    let said = finding(&document, "environment");
    for expected in [
        "ExecStart= program /nonexistent/bin/rch-sweep (set in /etc/systemd/system/rch-sweep@.service) does not exist",
        "EnvironmentFile=/etc/rch-sweep/missing.env (in /etc/systemd/system/rch-sweep@root.service.d/10-env.conf) does not exist",
        "WorkingDirectory=/nonexistent-dir (set in /etc/systemd/system/rch-sweep@root.service.d/10-env.conf)",
    ] {
        assert!(said.contains(expected), "{expected}: {document}");
    }
    // The order of the checks is doctor's, environment last.
    let checks: Vec<&str> = document["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|c| c["check"].as_str())
        .collect();
    assert_eq!(checks.last(), Some(&"environment"), "{document}");
    // The text report says it too.
    let output = units.doctor("system-timer", false);
    assert!(
        stdout(&output).contains("ExecStart= program /nonexistent/bin/rch-sweep"),
        "{}",
        stdout(&output)
    );

    units.host.write(
        template,
        unit(&format!(
            "User=%i\nExecStart={BIN} --lease-dir {}",
            units.good()
        ))
        .as_bytes(),
    );
    units.host.write(
        drop_in,
        b"[Service]\nEnvironmentFile=-/etc/rch-sweep/missing.env\nEnvironmentFile=-/etc/rch-sweep/dir.env\nWorkingDirectory=-/nonexistent-dir\n",
    );
    units.host.write(Path::new("/etc/rch-sweep/dir.env/x"), b"");
    let (_, document, _) = units.document("system-timer");
    assert_eq!(row(&document, "environment")["status"], "ok", "{document}");
    let warnings = document["warnings"].to_string();
    assert!(
        warnings.contains("/etc/rch-sweep/dir.env") && !warnings.contains("prefix it with -"),
        "{document}"
    );
}

/// The user manager: the unit found in `/etc/xdg/systemd/user`; the
/// drop-ins of the type-wide `service.d/` and the dash-prefix
/// `rch-.service.d/`; the variables of `environment.d`, where a file in
/// `~/.config/environment.d` overrides the same name in
/// `/usr/lib/environment.d` and a later file sees an earlier one's.
#[test]
fn the_user_manager_reads_xdg_environment_d_and_every_drop_in_folder() {
    let Some(units) =
        Units::new("the_user_manager_reads_xdg_environment_d_and_every_drop_in_folder")
    else {
        return;
    };
    let good_parent = units.world.path("good").display().to_string();
    let wrong_parent = units.world.path("wrong").display().to_string();
    // Debian links /etc/xdg/systemd/user to /etc/systemd/user; a folder of
    // its own here (inside only), so that only its place in the search
    // path finds the unit.
    let output = units
        .host
        .command("/bin/sh")
        .args([
            "-c",
            "rm -f /etc/xdg/systemd/user && mkdir -p /etc/xdg/systemd/user",
        ])
        .output()
        .expect("sh");
    assert!(output.status.success(), "{}", stderr(&output));
    units.host.write(
        Path::new("/etc/xdg/systemd/user/rch-sweep.service"),
        unit(&format!("ExecStart={BIN}")).as_bytes(),
    );
    units.host.write(
        Path::new("/etc/systemd/user/service.d/10-all.conf"),
        b"[Service]\nEnvironment=FROM_SERVICE_D=1\n",
    );
    units.host.write(
        Path::new("/etc/systemd/user/rch-.service.d/20-prefix.conf"),
        b"[Service]\nEnvironment=FROM_PREFIX=1\n",
    );
    units.host.write(
        Path::new("/usr/lib/environment.d/50-rch.conf"),
        format!("LEASES={wrong_parent}\n").as_bytes(),
    );
    units.write_home(
        ".config/environment.d/50-rch.conf",
        &format!("LEASES={good_parent}\n"),
    );
    units.host.write(
        Path::new("/etc/environment.d/60-rch.conf"),
        b"RCH_SWEEP_LEASE_DIR=${LEASES}/job-leases\n",
    );

    let (_, document, _) = units.document("user-timer");
    assert!(
        finding(&document, "lease_dir").contains(&units.good()),
        "{document}"
    );
    let from = document["from"].to_string();
    for file in [
        "/etc/xdg/systemd/user/rch-sweep.service",
        "/etc/systemd/user/service.d/10-all.conf",
        "/etc/systemd/user/rch-.service.d/20-prefix.conf",
        "/root/.config/environment.d/50-rch.conf",
    ] {
        assert!(from.contains(file), "{file}: {document}");
    }
    assert!(
        !from.contains("/usr/lib/environment.d/50-rch.conf"),
        "{document}"
    );
    let output = units.doctor("user-timer", false);
    let first = stdout(&output)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    for variable in [
        "FROM_SERVICE_D=1".to_owned(),
        "FROM_PREFIX=1".to_owned(),
        format!("RCH_SWEEP_LEASE_DIR={}", units.good()),
    ] {
        assert!(first.contains(&variable), "{variable}: {first}");
    }
}

/// Where `systemctl --version` does not answer, the environment files are
/// read as systemd 252 reads them, and a note says so.
#[test]
fn without_systemctls_version_252_is_assumed_and_said() {
    let Some(units) = Units::new("without_systemctls_version_252_is_assumed_and_said") else {
        return;
    };
    for systemctl in ["/usr/bin/systemctl", "/bin/systemctl"] {
        if Path::new(systemctl).exists() {
            let output = units
                .host
                .command("/bin/mount")
                .args(["--bind", "/bin/false", systemctl])
                .output()
                .expect("mount");
            assert!(output.status.success(), "{}", stderr(&output));
        }
    }
    units.write_home(
        ".config/rch-sweep/c.conf",
        &format!(
            "RCH_SWEEP_LEASE_DIR={}\n# C:\\\nRCH_SWEEP_LEASE_DIR={}\n",
            units.good(),
            units.wrong()
        ),
    );
    units.write_home(
        ".config/systemd/user/rch-sweep.service",
        &unit(&format!(
            "EnvironmentFile=%h/.config/rch-sweep/c.conf\nExecStart={BIN}"
        )),
    );
    let (_, document, _) = units.document("user-timer");
    let notes = document["notes"].to_string();
    assert!(
        notes.contains("systemctl --version does not say which systemd runs")
            && notes.contains("read as systemd 252"),
        "{document}"
    );
    assert!(
        finding(&document, "lease_dir").contains(&units.good()),
        "{document}"
    );
}

/// The lines of `unit` that `systemd-analyze verify` (systemd's own
/// parser, no manager: run inside the private host, whose `/run` is an
/// empty tmpfs) says it ignores in part or whole, as `file:N`: "Invalid
/// syntax, ignoring" and "Invalid environment assignment, ignoring".
/// `None` (said) where it is not installed or does not run here.
fn ignored_by_systemd(host: &PrivateHost, unit: &Path) -> Option<Vec<usize>> {
    if !Path::new("/usr/bin/systemd-analyze").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "systemd-analyze is missing; .ci/run installs systemd"
        );
        eprintln!("skipped: systemd-analyze is not installed (apt-get install systemd)");
        return None;
    }
    let output = host
        .command("/usr/bin/systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(unit)
        .output()
        .expect("systemd-analyze");
    let text = format!("{}{}", stdout(&output), stderr(&output));
    let prefix = format!("{}:", unit.display());
    let said: Vec<&str> = text.lines().filter(|l| l.starts_with(&prefix)).collect();
    if said.is_empty() {
        eprintln!("skipped: systemd-analyze verify says nothing of the unit here: {text}");
        return None;
    }
    Some(
        said.iter()
            .filter(|line| {
                line.contains("Invalid syntax, ignoring")
                    || line.contains("Invalid environment assignment, ignoring")
            })
            .filter_map(|line| line[prefix.len()..].split(':').next()?.parse().ok())
            .collect::<std::collections::BTreeSet<usize>>()
            .into_iter()
            .collect(),
    )
}

/// Issue 48 (r3 of the seventh wave): an escape systemd does not know ends
/// an `Environment=` line's parse ("Invalid syntax, ignoring"), the words
/// before it set and none after; doctor read on (keeping the character)
/// and checked a lease directory systemd never sets. Now doctor reads the
/// unit as systemd does and warns naming file and line, on exactly the
/// lines `systemd-analyze verify` names; a line ending in `\\` is no
/// continuation; in `ExecStart=` such an escape keeps its backslash.
#[test]
fn unit_escapes_are_read_as_systemd_analyze_reads_them() {
    let Some(units) = Units::new("unit_escapes_are_read_as_systemd_analyze_reads_them") else {
        return;
    };
    let state = units.world.path("st\\dx/backoff.json");
    let settings = format!(
        "Environment=RCH_SWEEP_LEASE_DIR={good} NOTE=C:\\data RCH_SWEEP_LEASE_DIR={wrong}\n\
         Environment=RCH_SWEEP_LEASE_DIR={wrong}\\x4\n\
         Environment=\"RCH_SWEEP_LEASE_DIR={wrong}\\ x\"\n\
         Environment=A=1 NOT-A-NAME=2 BYTE=\\xff B=\\x41\\u00e9\n\
         Environment=TRAIL=C:\\\\\n\
         Environment=KEEP=kept\n\
         ExecStart={BIN} --state-file {state}",
        good = units.good(),
        wrong = units.wrong(),
        state = state.display()
    );
    units.write_home(".config/systemd/user/rch-sweep.service", &unit(&settings));
    // As doctor and systemd-analyze see it inside.
    let file = Path::new("/root/.config/systemd/user/rch-sweep.service");
    let (_, document, _) = units.document("user-timer");
    // The words before an unknown escape are set, none after it.
    assert!(
        finding(&document, "lease_dir").contains(&units.good()),
        "{document}"
    );
    // ExecStart= keeps the backslash of \d.
    assert!(
        finding(&document, "state").contains(&format!(
            "state folder {} ",
            state.parent().expect("parent").display()
        )),
        "{document}"
    );
    // The lines doctor warns about, by file and line.
    let prefix = format!("{}:", file.display());
    let mut warned: Vec<usize> = document["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(|w| w.as_str()?.strip_prefix(&prefix))
        .filter(|rest| rest.contains("systemd ignores Environment="))
        .filter_map(|rest| rest.split(':').next()?.parse().ok())
        .collect();
    warned.sort_unstable();
    // unit() puts [Service] on line 4 and Type= on 5: the settings start on 6.
    assert_eq!(warned, [6, 7, 8, 9], "{document}");
    if let Some(ignored) = ignored_by_systemd(&units.host, file) {
        assert_eq!(warned, ignored, "{document}");
    }

    // In the program's name, the kept backslash is a name systemd refuses
    // ("Executable name contains special characters"): a fatal error of
    // the unit, which never starts.
    units.write_home(
        ".config/systemd/user/rch-sweep.service",
        &unit("ExecStart=/opt/x\\dy/rch-sweep --quiet"),
    );
    let (output, document, _) = units.document("user-timer");
    assert_eq!(output.status.code(), Some(1), "{document}");
    let said = finding(&document, "environment");
    assert!(
        said.contains(":6: ExecStart=/opt/x\\dy/rch-sweep --quiet: the program's name")
            && said.contains("systemd does not start the unit"),
        "{document}"
    );
    if ignored_by_systemd(&units.host, file).is_some() {
        let output = units
            .host
            .command("/usr/bin/systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(file)
            .output()
            .expect("systemd-analyze");
        let text = stderr(&output);
        assert!(
            text.contains(":6: Executable name contains special characters")
                && text.contains("fatal error"),
            "{text}"
        );
    }
}

/// Issue 48: a line of an environment file that systemd drops, though it
/// looks meant to set a variable, gets a note naming the file and the
/// line: `export NAME=value` (systemd takes no `export`) and, before
/// systemd 254, a line taken into a comment above it that ends in `\`
/// (the README promised a note for it; none appeared). In an
/// `EnvironmentFile=` and in `environment.d` alike.
#[test]
fn environment_file_lines_systemd_drops_are_noted_with_file_and_line() {
    let Some(units) =
        Units::new("environment_file_lines_systemd_drops_are_noted_with_file_and_line")
    else {
        return;
    };
    units.write_home(
        ".config/rch-sweep/lease.env",
        &format!(
            "RCH_SWEEP_LEASE_DIR={}\nexport RCH_SWEEP_LEASE_DIR={}\n# was C:\\\nRCH_SWEEP_STATE_FILE=/x\n",
            units.good(),
            units.wrong()
        ),
    );
    units.write_home(
        ".config/environment.d/50-rch.conf",
        "export RCH_SOCKET_PATH=/nowhere.sock\n",
    );
    units.write_home(
        ".config/systemd/user/rch-sweep.service",
        &unit(&format!(
            "EnvironmentFile=%h/.config/rch-sweep/lease.env\nExecStart={BIN}"
        )),
    );
    let (_, document, _) = units.document("user-timer");
    assert!(
        finding(&document, "lease_dir").contains(&units.good()),
        "{document}"
    );
    let notes: Vec<&str> = document["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    let has = |text: &str| notes.iter().any(|n| n.contains(text));
    assert!(
        has(
            "EnvironmentFile /root/.config/rch-sweep/lease.env: line 2: \"export RCH_SWEEP_LEASE_DIR\" is no variable name (systemd takes no `export` before a name)"
        ),
        "{notes:?}"
    );
    assert!(
        has(
            "environment.d /root/.config/environment.d/50-rch.conf: line 1: \"export RCH_SOCKET_PATH\" is no variable name"
        ),
        "{notes:?}"
    );
    let swallowed = "EnvironmentFile /root/.config/rch-sweep/lease.env: line 4: systemd reads it as part of the comment on line 3";
    assert_eq!(has(swallowed), systemd_version() < 254, "{notes:?}");
}

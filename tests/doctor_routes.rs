//! `doctor --as` reads the route's own configuration (issue 35): the
//! crontab of the user running doctor, through the real `crontab -l`, and
//! the unit with its drop-ins, from the files systemd itself would read.
//! So the fix doctor prescribes (a variable line in the crontab, a drop-in)
//! is what it checks next time, and the options a line or `ExecStart=`
//! gives are the ones checked.
//!
//! Each test makes a throwaway account (the real `useradd`) whose home is
//! the test's world, installs its crontab with the real `crontab`, and runs
//! doctor as that account. Unit files go where systemd looks: the
//! account's `~/.config/systemd/user`, and for the system template an
//! instance drop-in under `/etc/systemd/system`. All of it happens inside
//! a private mount namespace ([`PrivateHost`], issue 43): the host's
//! accounts, crontabs and units are never touched, and the namespace (with
//! the account, its crontab and the drop-ins) goes when the test ends. No
//! systemd manager is started, and none answers inside (its `/run` is
//! private), so the files on disk are what doctor reads there; the test of
//! the manager's path runs on the host, only where a manager answers. They
//! need root (CI runs as root).

mod common;

use common::account::TestAccount;
use common::doctor_rows::row;
use common::*;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use wait_timeout::ChildExt;

static NEXT: AtomicUsize = AtomicUsize::new(0);

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// A throwaway account whose home is a fresh [`World`], in a private
/// namespace of its own: the account, its crontab and whatever the test
/// writes under `/etc` go with the namespace when it is dropped.
struct TestUser {
    account: TestAccount,
}

impl std::ops::Deref for TestUser {
    type Target = TestAccount;

    fn deref(&self) -> &TestAccount {
        &self.account
    }
}

impl TestUser {
    /// `None` (having said why) where the test cannot run: not root, or no
    /// `useradd`/`crontab` outside CI.
    fn new(test: &str) -> Option<TestUser> {
        let name = format!(
            "rchsw{}n{}",
            std::process::id() % 100_000,
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let account = TestAccount::new(test, &name)?;
        Some(TestUser { account })
    }

    /// The binary as this account, from a login shell that has only
    /// `HOME`, `LOGNAME` and a plain `PATH`.
    fn doctor(&self, args: &[&str]) -> Output {
        self.command(BIN)
            .env_clear()
            .env("HOME", self.home())
            .env("LOGNAME", &self.name)
            .env("PATH", "/usr/bin:/bin")
            .args(args)
            .output()
            .expect("doctor")
    }

    /// The first line of `doctor --as <route>` for a person: what the
    /// route's environment is, as doctor read it.
    fn first_line_as(&self, route: &str) -> String {
        let output = self.doctor(&["doctor", "--as", route]);
        stdout(&output)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    /// A folder `/run/user/<uid>` would be, in the world, with a stand-in
    /// rchd answering there.
    fn runtime_dir_with_daemon(&self) -> (PathBuf, FakeDaemon) {
        let runtime = self.world.path(&format!("run/user/{}", self.uid));
        fs::create_dir_all(&runtime).expect("mkdir runtime");
        let daemon = FakeDaemon::start(&runtime.join("rch.sock"), Reply::Healthy);
        (runtime, daemon)
    }
}

fn finding<'a>(document: &'a Value, check: &str) -> &'a str {
    row(document, check)["finding"].as_str().unwrap_or_default()
}

/// The unit's own files a report names as read (the host's
/// `environment.d` files, which the user manager reads too, left out).
fn unit_files(document: &Value) -> Vec<String> {
    strings(&document["from"])
        .into_iter()
        .filter(|from| !from.starts_with("environment.d "))
        .collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| item.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The first finding: the real cron job worked once the crontab
/// had `XDG_RUNTIME_DIR=/run/user/<uid>`, but `doctor --as cron` still
/// said the daemon did not answer. Now the variable line is read, and the
/// line's own options (`--lease-dir`, `--rch`) are the ones checked.
#[test]
fn a_runtime_dir_line_in_the_crontab_reaches_the_daemon() {
    let Some(user) = TestUser::new("a_runtime_dir_line_in_the_crontab_reaches_the_daemon") else {
        return;
    };
    user.world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let rch = user.world.daemon_rch("rch", "exit 1");
    let (runtime, _daemon) = user.runtime_dir_with_daemon();
    user.hand_over();
    let leases = user.world.leases();
    // February 30th: a cron daemon on the host never runs the test's line.
    let sweep = format!(
        "0 0 30 2 * {BIN} --quiet --lease-dir {} --rch {}",
        leases.display(),
        rch.display()
    );

    // Without the variable line: what cron's run meets, the daemon looked
    // for under ~/.cache.
    user.crontab(&format!("{sweep}\n"));
    let output = user.doctor(&["doctor", "--as", "cron", "--json"]);
    let before = one_document(&output);
    assert_eq!(output.status.code(), Some(1), "{before}");
    let report = &before["reports"][0];
    assert_eq!(row(report, "daemon")["status"], "fail", "{before}");
    assert!(
        finding(report, "daemon").contains(".cache/rch/rch.sock"),
        "{before}"
    );

    // The fix doctor prescribes, a variable line above the sweep's: the
    // daemon answers, and doctor says so.
    user.crontab(&format!(
        "# the daemon is a user service\nXDG_RUNTIME_DIR={}\n{sweep}\n",
        runtime.display()
    ));
    let output = user.doctor(&["doctor", "--as", "cron", "--json"]);
    let after = one_document(&output);
    assert_eq!(output.status.code(), Some(0), "{after}");
    assert_eq!(after["as"], "cron");
    let reports = after["reports"].as_array().expect("reports");
    assert_eq!(reports.len(), 1, "{after}");
    assert_eq!(reports[0]["line"], 3);
    assert_eq!(reports[0]["text"], sweep.as_str());
    assert_eq!(row(&reports[0], "daemon")["status"], "ok", "{after}");
    assert!(
        finding(&reports[0], "daemon").contains(&format!("{}/rch.sock", runtime.display())),
        "{after}"
    );
    // The line's options: its lease directory, its rch.
    assert!(
        finding(&reports[0], "lease_dir").contains(utf8(&leases)),
        "{after}"
    );
    assert!(finding(&reports[0], "rch").contains(utf8(&rch)), "{after}");
    // The summary gives each check at its worst, with its line.
    assert_eq!(row(&after, "daemon")["line"], 3, "{after}");
    assert_eq!(row(&after, "environment")["status"], "ok", "{after}");
    assert!(
        strings(&after["from"])
            .iter()
            .any(|from| from.contains(&format!("the crontab of {}", user.name))),
        "{after}"
    );
}

/// Every line that runs rch-sweep is checked with its own options, one
/// report each, headed with its number and text; a line with a pipe is
/// listed, not followed; doctor's own options stand in for none of them.
#[test]
fn each_sweep_line_is_checked_with_its_own_options() {
    let Some(user) = TestUser::new("each_sweep_line_is_checked_with_its_own_options") else {
        return;
    };
    let rch = user.world.daemon_rch("rch", "exit 1");
    let elsewhere = user.world.path("elsewhere/job-leases");
    fs::create_dir_all(&elsewhere).expect("mkdir");
    fs::create_dir(user.world.path("metrics")).expect("mkdir");
    let metrics = user.world.path("metrics/rch-sweep.prom");
    user.hand_over();
    let first = format!(
        "0 0 30 2 * {BIN} --lease-dir {} --metrics-file {} --rch {}",
        elsewhere.display(),
        metrics.display(),
        rch.display()
    );
    let second = format!("@hourly {BIN} --rch '{}' --quiet", rch.display());
    let piped = format!(
        "0 0 30 2 * {BIN} --lease-dir {} | logger -t rch-sweep",
        elsewhere.display()
    );
    user.crontab(&format!(
        "MAILTO=\"\"\n{first}\n{second}\n{piped}\n0 3 * * * /usr/bin/true\n"
    ));
    let output = user.doctor(&[
        "doctor",
        "--as",
        "cron",
        "--json",
        "--lease-dir",
        "/nonexistent/job-leases",
    ]);
    let document = one_document(&output);
    let reports = document["reports"].as_array().expect("reports");
    let lines: Vec<(i64, &str)> = reports
        .iter()
        .map(|r| {
            (
                r["line"].as_i64().unwrap_or(0),
                r["text"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        lines,
        [(2, first.as_str()), (3, second.as_str())],
        "{document}"
    );
    // Line 2: its lease directory and its metrics file.
    assert!(
        finding(&reports[0], "lease_dir").contains(utf8(&elsewhere)),
        "{document}"
    );
    assert!(
        finding(&reports[0], "metrics").contains(utf8(&metrics)),
        "{document}"
    );
    // Line 3: rch's default lease directory in cron's HOME, no metrics.
    let default = user.home().join(".local/state/rch/job-leases");
    assert!(
        finding(&reports[1], "lease_dir").contains(utf8(&default)),
        "{document}"
    );
    assert!(
        !reports[1]["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .any(|r| r["check"] == "metrics"),
        "{document}"
    );
    // Line 4 is listed with why, and not followed.
    let warnings = strings(&document["warnings"]);
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("line 4 ") && w.contains("a pipe") && w.ends_with(&piped)),
        "{document}"
    );
    assert!(!document.to_string().contains("/nonexistent/job-leases\","));
    assert!(
        strings(&document["notes"])
            .iter()
            .any(|n| n.contains("(--lease-dir /nonexistent/job-leases) are not used")),
        "{document}"
    );
    // The same for a person: one block a line.
    let output = user.doctor(&["doctor", "--as", "cron"]);
    let text = stdout(&output);
    assert!(
        text.starts_with("as cron: lines 2, 3 of the crontab run rch-sweep\n"),
        "{text}"
    );
    for heading in [
        format!("\nline 2: {first}\n"),
        format!("\nline 3: {second}\n"),
    ] {
        assert!(text.contains(&heading), "{heading} not in {text}");
    }
    assert!(
        text.contains(
            "\nwarning: line 4 runs rch-sweep in a form doctor cannot follow (a pipe (|))"
        ),
        "{text}"
    );
    assert_eq!(text.matches("\nok    lock ").count(), 2, "{text}");
}

/// A crontab with no rch-sweep line: doctor's own options, in the
/// environment the crontab's variable lines leave (CRLF or not), with a
/// warning.
#[test]
fn a_crontab_without_a_sweep_line_is_said_to_have_none() {
    let Some(user) = TestUser::new("a_crontab_without_a_sweep_line_is_said_to_have_none") else {
        return;
    };
    let rch = user.world.daemon_rch("rch", "exit 1");
    let state_home = user.world.path("state");
    fs::create_dir_all(state_home.join("rch/job-leases")).expect("mkdir");
    user.hand_over();
    // Saved with Windows line ends: cron reads the variable line all the
    // same (Debian's crontab -l shows each CR as \r).
    user.crontab(&format!(
        "XDG_STATE_HOME={}\r\n0 3 * * * /usr/bin/true\r\n",
        state_home.display()
    ));
    let output = user.doctor(&["doctor", "--as", "cron", "--json", "--rch", utf8(&rch)]);
    let document = one_document(&output);
    assert!(document.get("reports").is_none(), "{document}");
    assert!(
        strings(&document["warnings"])
            .iter()
            .any(|w| w.starts_with("no line of the crontab runs rch-sweep")),
        "{document}"
    );
    assert!(
        finding(&document, "lease_dir").contains(utf8(&state_home.join("rch/job-leases"))),
        "{document}"
    );
    assert!(finding(&document, "rch").contains(utf8(&rch)), "{document}");
}

/// The shipped user unit installed in `~/.config/systemd/user`, with an
/// `ExecStart=` naming `--lease-dir %h/...` and a drop-in that sets
/// `XDG_RUNTIME_DIR`: doctor checks that lease directory and finds the
/// daemon. Then a later drop-in with an empty `Environment=` drops every
/// variable the unit and the first drop-in set, `PATH` included.
#[test]
fn an_installed_user_unit_and_its_drop_ins_are_read() {
    let Some(user) = TestUser::new("an_installed_user_unit_and_its_drop_ins_are_read") else {
        return;
    };
    user.world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    user.world.daemon_rch("rch", "exit 1");
    let (runtime, _daemon) = user.runtime_dir_with_daemon();
    let units = user.home().join(".config/systemd/user");
    let drop_ins = units.join("rch-sweep.service.d");
    fs::create_dir_all(&drop_ins).expect("mkdir");
    let shipped = include_str!("../systemd/rch-sweep.service");
    assert!(shipped.contains("\nExecStart=rch-sweep\n"));
    // The program by its path: a bare rch-sweep is looked up in systemd's
    // fixed search path, where this host may have none (that fails).
    let unit = shipped.replace(
        "\nExecStart=rch-sweep\n",
        &format!("\nExecStart={BIN} --lease-dir %h/job-leases --rch %h/rch\n"),
    );
    fs::write(units.join("rch-sweep.service"), unit).expect("unit");
    let runtime_conf = drop_ins.join("10-runtime.conf");
    fs::write(
        &runtime_conf,
        format!(
            "[Service]\nEnvironment=XDG_RUNTIME_DIR={}\n",
            runtime
                .display()
                .to_string()
                .replace(&user.uid.to_string(), "%U")
        ),
    )
    .expect("drop-in");
    user.hand_over();

    let output = user.doctor(&["doctor", "--as", "user-timer", "--json"]);
    let document = one_document(&output);
    assert_eq!(output.status.code(), Some(0), "{document}");
    assert_eq!(
        unit_files(&document),
        [
            units.join("rch-sweep.service").display().to_string(),
            runtime_conf.display().to_string()
        ],
        "{document}"
    );
    assert!(strings(&document["warnings"]).is_empty(), "{document}");
    assert!(
        finding(&document, "lease_dir").contains(utf8(&user.world.leases())),
        "{document}"
    );
    assert_eq!(row(&document, "daemon")["status"], "ok", "{document}");
    assert!(
        finding(&document, "daemon").contains(utf8(&runtime)),
        "{document}"
    );
    let first = user.first_line_as("user-timer");
    let home = user.home().display().to_string();
    assert!(
        first.contains(&format!(
            " XDG_RUNTIME_DIR={} PATH={home}/.local/bin:{home}/.cargo/bin:/usr/local/bin:/usr/bin:/bin",
            runtime.display()
        )),
        "{first}"
    );

    // An empty Environment= in a later drop-in resets the list: the unit's
    // PATH and the runtime folder are gone, the manager's own PATH and
    // XDG_RUNTIME_DIR (/run/user/<uid>, where no daemon answers) remain.
    fs::write(
        drop_ins.join("20-reset.conf"),
        "[Service]\nEnvironment=\nEnvironment=RCH_SWEEP_TEST_MARK=1\n",
    )
    .expect("drop-in");
    let output = user.doctor(&["doctor", "--as", "user-timer", "--json"]);
    let document = one_document(&output);
    assert_eq!(output.status.code(), Some(1), "{document}");
    assert_eq!(unit_files(&document).len(), 3, "{document}");
    assert_eq!(row(&document, "daemon")["status"], "fail", "{document}");
    let first = user.first_line_as("user-timer");
    // (The host's environment.d may add variables between the two.)
    assert!(
        first.contains(&format!(
            " XDG_RUNTIME_DIR=/run/user/{} PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ",
            user.uid
        )),
        "{first}"
    );
    assert!(first.contains(" RCH_SWEEP_TEST_MARK=1,"), "{first}");
}

/// The shipped system template under `/etc/systemd/system` (the private
/// one: empty until now) and the drop-in folder of `user`'s instance, as
/// `systemctl edit rch-sweep@USER.service` makes it: the folder.
fn instance_drop_in_folder(user: &TestUser) -> PathBuf {
    let etc = Path::new("/etc/systemd/system");
    user.host.write(
        &etc.join("rch-sweep@.service"),
        include_str!("../systemd/rch-sweep@.service").as_bytes(),
    );
    let folder = etc.join(format!("rch-sweep@{}.service.d", user.name));
    fs::create_dir(user.host.inside(&folder)).expect("mkdir drop-in folder");
    folder
}

/// The system template with an instance drop-in under
/// `/etc/systemd/system`, as `systemctl edit rch-sweep@USER.service`
/// leaves it: its `XDG_RUNTIME_DIR` reaches the daemon, its `ExecStart=`
/// options are checked, and `%h` there is root's home (the system
/// manager's user), whatever `User=` says.
#[test]
fn the_system_template_with_an_instance_drop_in_is_read() {
    // doctor asks a running manager first; the files on disk are what it
    // reads where none answers (inside the namespace, whose /run is
    // private). Where one does, the host's, the test after next checks
    // that path.
    let Some(user) = TestUser::new("the_system_template_with_an_instance_drop_in_is_read") else {
        return;
    };
    let rch = user.world.daemon_rch("rch", "exit 1");
    let (runtime, _daemon) = user.runtime_dir_with_daemon();
    user.hand_over();
    let folder = instance_drop_in_folder(&user);
    let drop_in = folder.join("override.conf");
    let leases = format!("%h/rch-sweep-test-{}/job-leases", user.name);
    user.host.write(
        &drop_in,
        format!(
            "[Service]\nEnvironment=XDG_RUNTIME_DIR={}\nExecStart=\nExecStart=/usr/bin/rch-sweep --lease-dir {leases} --rch {}\n",
            runtime.display(),
            rch.display()
        )
        .as_bytes(),
    );

    let output = user.doctor(&["doctor", "--as", "system-timer", "--json"]);
    let document = one_document(&output);
    assert_eq!(document["as"], "system-timer");
    let from = strings(&document["from"]);
    assert_eq!(from.len(), 2, "{document}");
    assert!(from[0].ends_with("/rch-sweep@.service"), "{document}");
    assert_eq!(from[1], drop_in.display().to_string(), "{document}");
    let root_home = "/root";
    assert!(
        finding(&document, "lease_dir").contains(&format!(
            "{root_home}/rch-sweep-test-{}/job-leases",
            user.name
        )),
        "{document}"
    );
    assert_eq!(row(&document, "daemon")["status"], "ok", "{document}");
    assert!(finding(&document, "rch").contains(utf8(&rch)), "{document}");
    // WorkingDirectory=~ is the account's home; the template's PATH.
    let first = user.first_line_as("system-timer");
    assert!(
        first.contains(" PATH=/usr/local/bin:/usr/bin:/bin ")
            && first.ends_with(&format!(
                ", working directory {} (every other variable dropped)",
                user.home().display()
            )),
        "{first}"
    );
}

/// The system manager reads a unit's `EnvironmentFile=` as root: one
/// only root may read (0600, as secrets are kept) is no sign that systemd
/// cannot start the unit. doctor, run as the unit's user, says it cannot
/// read it as that user and goes on, never that systemd will not start the
/// unit while the file is missing.
#[test]
fn a_root_only_environment_file_of_the_system_template_is_not_called_missing() {
    const TEST: &str = "a_root_only_environment_file_of_the_system_template_is_not_called_missing";
    let Some(user) = TestUser::new(TEST) else {
        return;
    };
    let rch = user.world.daemon_rch("rch", "exit 1");
    user.hand_over();
    let folder = instance_drop_in_folder(&user);
    let secret = folder.join("secret.env");
    user.host.write(&secret, b"RCH_TOKEN=not-for-users\n");
    fs::set_permissions(user.host.inside(&secret), fs::Permissions::from_mode(0o600))
        .expect("chmod 0600");
    let drop_in = folder.join("override.conf");
    user.host.write(
        &drop_in,
        format!(
            "[Service]\nEnvironmentFile={}\nExecStart=\nExecStart=/usr/bin/rch-sweep --lease-dir {} --rch {}\n",
            secret.display(),
            user.world.leases().display(),
            rch.display()
        )
        .as_bytes(),
    );

    let output = user.doctor(&["doctor", "--as", "system-timer", "--json"]);
    let document = one_document(&output);
    let warnings = strings(&document["warnings"]);
    let expected = format!(
        "EnvironmentFile={} (in {}) cannot be read by doctor (systemd reads it as root); its variables are not checked",
        secret.display(),
        drop_in.display()
    );
    assert!(warnings.contains(&expected), "{document}");
    assert!(
        !warnings.iter().any(|w| w.contains("missing")),
        "{document}"
    );
    // It went on: the drop-in's ExecStart= options were checked.
    assert!(finding(&document, "rch").contains(utf8(&rch)), "{document}");
}

/// A FIFO where a unit's `EnvironmentFile=` names a file: doctor neither
/// blocks opening it nor reads it, and names it in a warning. (A hang is
/// bounded here so the test fails rather than waits forever.)
#[test]
fn a_fifo_as_an_environment_file_is_named_and_never_waited_on() {
    const TEST: &str = "a_fifo_as_an_environment_file_is_named_and_never_waited_on";
    let Some(user) = TestUser::new(TEST) else {
        return;
    };
    user.world.daemon_rch("rch", "exit 1");
    let units = user.home().join(".config/systemd/user");
    fs::create_dir_all(&units).expect("mkdir");
    let fifo = user.home().join("env.fifo");
    mkfifo(&fifo);
    let shipped = include_str!("../systemd/rch-sweep.service");
    assert!(shipped.contains("\nExecStart=rch-sweep\n"));
    let unit = shipped.replace(
        "\nExecStart=rch-sweep\n",
        &format!(
            "\nEnvironmentFile={}\nExecStart=rch-sweep --lease-dir %h/job-leases --rch %h/rch\n",
            fifo.display()
        ),
    );
    fs::write(units.join("rch-sweep.service"), unit).expect("unit");
    user.hand_over();

    let report = user.world.path("report.json");
    let mut child = user
        .command(BIN)
        .env_clear()
        .env("HOME", user.home())
        .env("LOGNAME", &user.name)
        .env("PATH", "/usr/bin:/bin")
        .args(["doctor", "--as", "user-timer", "--json"])
        .stdout(fs::File::create(&report).expect("report file"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("doctor");
    // A bound on a hang, not a timing assertion: doctor reads no FIFO.
    let status = child
        .wait_timeout(std::time::Duration::from_secs(60))
        .expect("wait");
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "doctor --as user-timer still waits on the FIFO {} after 60 s",
            fifo.display()
        );
    }
    let text = fs::read_to_string(&report).expect("report");
    let document: Value = serde_json::from_str(&text).expect("one JSON document");
    let warnings = strings(&document["warnings"]);
    let expected = format!(
        "EnvironmentFile={} (in {}) is not read (it is a FIFO, not a regular file); its variables are not checked",
        fifo.display(),
        units.join("rch-sweep.service").display()
    );
    assert!(warnings.contains(&expected), "{document}");
}

/// Where a manager answers `systemctl show`, what it says is read, and the
/// report says so. No manager runs in CI or in this workplace's
/// containers, and none is started here: the test then says it skipped.
/// Whether the system's systemd manager answers `systemctl show` (it does
/// not where systemd is not PID 1, as here and in CI; none may be started).
fn system_manager_answers() -> bool {
    Command::new("systemctl")
        .args(["show", "-p", "Version"])
        .output()
        .is_ok_and(|output| output.status.success() && stdout(&output).starts_with("Version="))
}

#[test]
fn a_running_manager_is_asked_when_it_answers() {
    if !root_or_skip("a_running_manager_is_asked_when_it_answers") {
        return;
    }
    if !system_manager_answers() {
        eprintln!(
            "a_running_manager_is_asked_when_it_answers: skipped: no systemd manager answers here (systemctl show failed), and none may be started"
        );
        return;
    }
    let world = World::new();
    let rch = world.daemon_rch("rch", "exit 1");
    let output = World::bare_command()
        .args([
            "doctor",
            "--as",
            "system-timer",
            "--json",
            "--rch",
            utf8(&rch),
        ])
        .output()
        .expect("doctor");
    let document = one_document(&output);
    let from = strings(&document["from"]);
    let warnings = strings(&document["warnings"]);
    assert!(
        from.iter().any(|f| f.starts_with("the system manager"))
            || warnings
                .iter()
                .any(|w| w.starts_with("the system manager says")),
        "{document}"
    );
}

/// `doctor --as` runs no program but what SPEC lists (`crontab -l`,
/// `systemctl show`, itself, and `rch --version`, `rch ... daemon status`)
/// and writes, renames and creates nothing, on every route: seen by
/// `strace -f` (which runs it as the account, `-u`, so `crontab` keeps its
/// set-group-id) and by a snapshot of the home folder.
#[test]
fn doctor_as_runs_only_what_spec_lists_and_writes_nothing() {
    let Some(user) = TestUser::new("doctor_as_runs_only_what_spec_lists_and_writes_nothing") else {
        return;
    };
    if !tool_or_skip("/usr/bin/strace", "strace") {
        return;
    }
    user.world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    // Builtins only: every program it starts would show.
    let rch = user.world.script(
        "rch",
        "if [ \"$1\" = --version ]; then echo 'rch 2.1.24'; exit 0; fi\nexit 2",
    );
    let leases = user.world.leases();
    user.crontab(&format!(
        "0 0 30 2 * {BIN} --quiet --rch {} --lease-dir {}\n",
        rch.display(),
        leases.display()
    ));
    let units = user.home().join(".config/systemd/user");
    fs::create_dir_all(&units).expect("mkdir");
    fs::write(
        units.join("rch-sweep.service"),
        "[Service]\nType=oneshot\nExecStart=rch-sweep --rch %h/rch --lease-dir %h/job-leases\n",
    )
    .expect("unit");
    user.hand_over();
    let logs = tempfile::tempdir().expect("tempdir");
    let crontab = PathBuf::from("/usr/bin/crontab");
    let systemctl = ["/usr/bin/systemctl", "/bin/systemctl"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.exists());
    for route in ["cron", "user-timer", "system-timer"] {
        let before = snapshot(user.home());
        let log = logs.path().join(format!("{route}.strace"));
        let output = user
            .host
            .command_in(user.home(), "strace")
            .args(["-f", "-qq", "-e", "trace=execve", "-o"])
            .arg(&log)
            .args([
                "-u", &user.name, BIN, "doctor", "--as", route, "--json", "--rch",
            ])
            // Used where the route gives no options: the system template.
            .arg(&rch)
            .env_clear()
            .env("HOME", user.home())
            .env("LOGNAME", &user.name)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .expect("strace");
        let document = one_document(&output);
        assert_eq!(document["as"], route, "{document}");
        let traced = fs::read_to_string(&log).expect("strace log");
        let started: Vec<PathBuf> = traced
            .lines()
            .filter(|line| line.ends_with(" = 0"))
            .filter_map(|line| {
                let path = line.split("execve(\"").nth(1)?.split('"').next()?;
                Some(PathBuf::from(path))
            })
            .collect();
        let allowed: Vec<PathBuf> = [
            PathBuf::from(BIN),
            PathBuf::from("/proc/self/exe"),
            rch.clone(),
            crontab.clone(),
        ]
        .into_iter()
        .chain(systemctl.clone())
        .collect();
        for path in &started {
            assert!(
                allowed.contains(path),
                "{route}: doctor --as started {}: {traced}",
                path.display()
            );
        }
        let asked = if route == "cron" {
            Some(&crontab)
        } else {
            systemctl.as_ref()
        };
        if let Some(asked) = asked {
            assert!(started.contains(asked), "{route}: {traced}");
        }
        assert!(started.contains(&rch), "{route}: {traced}");
        assert_eq!(before, snapshot(user.home()), "{route}: something changed");
    }
}

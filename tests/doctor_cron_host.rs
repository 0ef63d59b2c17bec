//! `doctor --as cron` is right, or says it cannot tell (issue 42, the
//! cron part): each line in the environment Debian's cron gives it (the
//! passwd entry, pam_env's `/etc/environment`, the variable lines above
//! the line and never below), wrapped lines followed to the rch-sweep they
//! start, this user's lines of `/etc/cron.d` checked, a FIFO or a link to
//! `/dev/zero` there never waited on, and no followable line a `fail`.
//!
//! Every test makes its account (the real `useradd`), its crontab (the
//! real `crontab`) and its files under `/etc` inside a [`PrivateHost`], so
//! the host's accounts, crontabs and `/etc` stay as they were; doctor runs
//! there as that account. One compares doctor's prediction with a run of
//! the real cron daemon (`cron -f`, started inside with the host's system
//! crontabs emptied there, and killed at its end; it waits for cron's
//! next minute). They need root (CI runs as root) and skip without it.

mod common;

use common::account::TestAccount;
use common::*;
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use wait_timeout::ChildExt;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// The cron account, made inside a private host, whose home is a fresh
/// [`World`]; its host's pam_env files are a fresh Debian's.
struct CronUser {
    account: TestAccount,
}

impl std::ops::Deref for CronUser {
    type Target = TestAccount;

    fn deref(&self) -> &TestAccount {
        &self.account
    }
}

impl CronUser {
    /// `None` (said) where the test cannot run: not root, no private
    /// mount namespace, no `useradd` or `crontab` outside CI.
    fn new(test: &str) -> Option<CronUser> {
        let account = TestAccount::new(test, "rchsweep-cron")?;
        // pam_env's files as a fresh Debian has them: nothing set.
        account.host.write(Path::new("/etc/environment"), b"");
        account.host.write(Path::new("/etc/default/locale"), b"");
        Some(CronUser { account })
    }

    /// The binary as this account, from a login shell whose `HOME` is
    /// not the account's (as after `su`): cron's is the passwd entry's.
    fn doctor_command(&self, args: &[&str]) -> Command {
        let mut command = self.command(BIN);
        command
            .env_clear()
            .env("HOME", "/nonexistent-login-home")
            .env("LOGNAME", &self.name)
            .env("PATH", "/usr/bin:/bin")
            .args(args);
        command
    }

    fn doctor(&self, args: &[&str]) -> Output {
        self.doctor_command(args).output().expect("doctor")
    }
}

fn row<'a>(document: &'a Value, check: &str) -> &'a Value {
    common::doctor_rows::row(document, check)
}

fn finding<'a>(document: &'a Value, check: &str) -> &'a str {
    row(document, check)["finding"].as_str().unwrap_or_default()
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

/// The first finding: `flock -n … rch-sweep …` was not followed,
/// so doctor checked "the crontab's last environment", which held a
/// `RCH_SOCKET_PATH=` line written below the job, and said ok, while the
/// real cron run (which never gets that line) exited 78. Now the wrapped
/// line gets its own report in its own environment: no socket variable,
/// the daemon looked for where rch looks without it, and that fails.
#[test]
fn a_wrapped_line_is_checked_without_the_variables_below_it() {
    let Some(user) = CronUser::new("a_wrapped_line_is_checked_without_the_variables_below_it")
    else {
        return;
    };
    user.world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let rch = user.world.daemon_rch("rch", "exit 1");
    let socket = user.world.path("rchd/rch.sock");
    fs::create_dir_all(socket.parent().expect("parent")).expect("mkdir");
    let _daemon = FakeDaemon::start(&socket, Reply::Healthy);
    user.hand_over();
    let leases = user.world.leases();
    let options = format!("--lease-dir {} --rch {}", leases.display(), rch.display());
    // February 30th: a cron daemon on the host never runs the line.
    let sweep = format!(
        "0 0 30 2 * flock -n {} timeout 20m {BIN} {options} >/dev/null 2>&1",
        user.world.path("sweep.lock").display()
    );
    user.crontab(&format!("{sweep}\nRCH_SOCKET_PATH={}\n", socket.display()));
    let mut args = vec!["doctor", "--as", "cron", "--json"];
    args.extend(options.split(' '));
    let output = user.doctor(&args);
    let document = one_document(&output);
    assert_eq!(output.status.code(), Some(1), "{document}");
    let reports = document["reports"].as_array().expect("reports");
    assert_eq!(reports.len(), 1, "{document}");
    assert_eq!(reports[0]["line"], 1, "{document}");
    assert_eq!(row(&reports[0], "daemon")["status"], "fail", "{document}");
    assert!(
        !finding(&reports[0], "daemon").contains(utf8(&socket)),
        "{document}"
    );
    assert!(
        finding(&reports[0], "lease_dir").contains(utf8(&leases)),
        "{document}"
    );
    // Nothing says the line was not followed, or that doctor fell back.
    let warnings = strings(&document["warnings"]).join("\n");
    assert!(!warnings.contains("cannot follow"), "{warnings}");
    assert!(!warnings.contains("no line of the crontab"), "{warnings}");

    // The variable line moved above the job: it reaches it, and the
    // daemon answers.
    user.crontab(&format!("RCH_SOCKET_PATH={}\n{sweep}\n", socket.display()));
    let output = user.doctor(&args);
    let document = one_document(&output);
    let report = &document["reports"][0];
    assert_eq!(report["line"], 2, "{document}");
    assert_eq!(row(report, "daemon")["status"], "ok", "{document}");
}

/// pam_env gives every cron job `/etc/environment` on Debian
/// (`/etc/pam.d/cron`), so an `RCH_STATE_HOME` set there moves the lease
/// directory cron's run sweeps; and `HOME` is the passwd entry's, not the
/// one of the shell doctor runs in.
#[test]
fn etc_environment_and_the_passwd_home_reach_crons_lines() {
    let Some(user) = CronUser::new("etc_environment_and_the_passwd_home_reach_crons_lines") else {
        return;
    };
    let rch = user.world.daemon_rch("rch", "exit 1");
    let state_home = user.world.path("state-home");
    fs::create_dir_all(state_home.join("job-leases")).expect("mkdir");
    user.hand_over();
    user.crontab(&format!("0 0 30 2 * {BIN} --rch {}\n", rch.display()));
    let lease_dir = |user: &CronUser| {
        let output = user.doctor(&["doctor", "--as", "cron", "--json"]);
        let document = one_document(&output);
        finding(&document["reports"][0], "lease_dir").to_owned()
    };
    // The passwd entry's HOME, not /nonexistent-login-home.
    let default = user.home().join(".local/state/rch/job-leases");
    let said = lease_dir(&user);
    assert!(said.contains(utf8(&default)), "{said}");
    // /etc/environment, as pam_env reads it (export, quotes, a comment).
    user.host.write(
        Path::new("/etc/environment"),
        format!(
            "# set for every account\nexport RCH_STATE_HOME=\"{}\"\nPATH=/nowhere\n",
            state_home.display()
        )
        .as_bytes(),
    );
    let said = lease_dir(&user);
    assert!(
        said.contains(utf8(&state_home.join("job-leases"))),
        "{said}"
    );
    // cron's own PATH wins over /etc/environment's.
    let output = user.doctor(&["doctor", "--as", "cron"]);
    let text = stdout(&output);
    assert!(text.contains("PATH=/usr/bin:/bin"), "{text}");
    assert!(!text.contains("PATH=/nowhere"), "{text}");
}

/// `/etc/cron.d` is read by cron's own rules: a line whose user field is
/// this user is checked like the user's own (the file's own variable
/// lines above it), another user's line is not, and a file whose name has
/// a dot is skipped as cron skips it.
#[test]
fn a_cron_d_line_of_this_user_is_checked() {
    let Some(user) = CronUser::new("a_cron_d_line_of_this_user_is_checked") else {
        return;
    };
    let rch = user.world.daemon_rch("rch", "exit 1");
    let mine = user.world.path("mine/job-leases");
    let skipped = user.world.path("skipped/job-leases");
    fs::create_dir_all(&mine).expect("mkdir");
    user.hand_over();
    user.host.write(
        Path::new("/etc/cron.d/rch-sweep"),
        format!(
            "SHELL=/bin/sh\n\
             RCH_SWEEP_LEASE_DIR={}\n\
             0 0 30 2 * root {BIN} --rch {rch}\n\
             0 0 30 2 * {} nice -n 10 {BIN} --rch {rch} --quiet\n",
            mine.display(),
            user.name,
            rch = rch.display()
        )
        .as_bytes(),
    );
    user.host.write(
        Path::new("/etc/cron.d/rch-sweep.dpkg-old"),
        format!(
            "0 0 30 2 * {} {BIN} --lease-dir {}\n",
            user.name,
            skipped.display()
        )
        .as_bytes(),
    );
    let output = user.doctor(&["doctor", "--as", "cron", "--json"]);
    let document = one_document(&output);
    let reports = document["reports"].as_array().expect("reports");
    assert_eq!(reports.len(), 1, "{document}");
    assert_eq!(reports[0]["file"], "/etc/cron.d/rch-sweep", "{document}");
    assert_eq!(reports[0]["line"], 4, "{document}");
    assert!(
        finding(&reports[0], "lease_dir").contains(utf8(&mine)),
        "{document}"
    );
    assert!(!document.to_string().contains(utf8(&skipped)), "{document}");
    // For a person: which line of which file.
    let output = user.doctor(&["doctor", "--as", "cron"]);
    let text = stdout(&output);
    assert!(
        text.starts_with("as cron: line 4 of /etc/cron.d/rch-sweep runs rch-sweep\n"),
        "{text}"
    );
}

/// cron skips what is not a regular file in `/etc/cron.d`; doctor used to
/// open a FIFO there and wait forever, and read a link to `/dev/zero`
/// until memory ran out. Now both are skipped, said, and never read.
#[test]
fn a_fifo_or_a_device_in_cron_d_is_skipped_not_waited_on() {
    let Some(user) = CronUser::new("a_fifo_or_a_device_in_cron_d_is_skipped_not_waited_on") else {
        return;
    };
    user.host
        .write(Path::new("/etc/cron.d/e2scrub_all"), b"# nothing\n");
    for (program, args) in [
        ("mkfifo", vec!["/etc/cron.d/zz-fifo"]),
        ("ln", vec!["-s", "/dev/zero", "/etc/cron.d/zz-zero"]),
    ] {
        let output = user
            .host
            .command(program)
            .args(&args)
            .output()
            .expect(program);
        assert!(output.status.success(), "{program}: {}", stderr(&output));
    }
    let mut child = user
        .doctor_command(&["doctor", "--as", "cron", "--json", "--rch", "/bin/true"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("doctor");
    // A bound on a hang, not a timing: doctor reads two small files.
    let Some(_) = child
        .wait_timeout(std::time::Duration::from_secs(60))
        .expect("wait")
    else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("doctor --as cron still waits on /etc/cron.d/zz-fifo after 60 s");
    };
    let output = child.wait_with_output().expect("output");
    let document = one_document(&output);
    let notes = strings(&document["notes"]).join("\n");
    assert!(
        notes.contains("cron skips /etc/cron.d/zz-fifo: it is a FIFO"),
        "{document}"
    );
    assert!(
        notes.contains("cron skips /etc/cron.d/zz-zero: it is"),
        "{document}"
    );
}

/// When no line that runs rch-sweep can be followed, doctor cannot tell
/// what cron's runs meet: the `environment` check fails naming each line
/// and why, nothing else is checked, and it exits 1; doctor's own options
/// never stand in.
#[test]
fn no_followable_line_fails_the_environment_check() {
    let Some(user) = CronUser::new("no_followable_line_fails_the_environment_check") else {
        return;
    };
    let rch = user.world.daemon_rch("rch", "exit 1");
    user.hand_over();
    user.crontab(&format!(
        "MAILTO=\"\"\n\
         0 0 30 2 * {BIN} --quiet | logger -t rch-sweep\n\
         0 0 30 2 * sudo -u nobody {BIN}\n\
         0 0 30 2 * /usr/bin/backup\n"
    ));
    let leases = user.world.leases();
    let own = ["--lease-dir", utf8(&leases), "--rch", utf8(&rch)];
    let mut args = vec!["doctor", "--as", "cron", "--json"];
    args.extend(own);
    let output = user.doctor(&args);
    let document = one_document(&output);
    assert_eq!(output.status.code(), Some(1), "{document}");
    assert_eq!(document["exit_code"], 1, "{document}");
    let checks = document["checks"].as_array().expect("checks");
    assert_eq!(checks.len(), 1, "{document}");
    assert_eq!(checks[0]["check"], "environment", "{document}");
    assert_eq!(checks[0]["status"], "fail", "{document}");
    let said = checks[0]["finding"].as_str().unwrap_or_default();
    assert!(
        said.contains("line 2 (") && said.contains("a pipe"),
        "{said}"
    );
    assert!(
        said.contains("line 3 (") && said.contains("it runs sudo"),
        "{said}"
    );
    assert!(!said.contains("line 4"), "{said}");
    assert!(document.get("reports").is_none(), "{document}");
    assert!(!document.to_string().contains(utf8(&leases)), "{document}");

    // For a person, the one failed check as doctor prints checks.
    let mut args = vec!["doctor", "--as", "cron"];
    args.extend(own);
    let output = user.doctor(&args);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.starts_with("as cron: no run doctor can check\n"),
        "{text}"
    );
    assert!(
        text.contains("fail  environment  no line that runs rch-sweep"),
        "{text}"
    );
    assert!(
        text.contains("fix: make one line a command doctor follows"),
        "{text}"
    );
}

/// A crontab saved with Windows line ends: cron keeps the carriage return
/// in the command, so `--quiet` reaches rch-sweep as `--quiet\r` and every
/// run exits 2. doctor says so, rather than showing clap's "unexpected
/// argument '--quiet' found / a similar argument exists: '--quiet'".
#[test]
fn a_crlf_line_is_said_to_fail_for_its_carriage_return() {
    let Some(user) = CronUser::new("a_crlf_line_is_said_to_fail_for_its_carriage_return") else {
        return;
    };
    let rch = user.world.daemon_rch("rch", "exit 1");
    user.hand_over();
    user.crontab(&format!(
        "MAILTO=\"\"\r\n0 0 30 2 * {BIN} --rch {} --quiet\r\n",
        rch.display()
    ));
    let output = user.doctor(&["doctor", "--as", "cron"]);
    let text = format!("{}{}", stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(!text.contains("unexpected argument"), "{text}");
    assert!(
        text.contains("fails at every run: the line ends in a carriage return"),
        "{text}"
    );
    assert!(
        text.contains("the word --quiet\\r ends in it, so rch-sweep refuses an argument it does not know (exit 2)"),
        "{text}"
    );
}

/// The prediction compared with a run of the real cron daemon (Debian's
/// `cron -f`, inside the private host): a wrapped line with the socket
/// variable written below it. doctor says the daemon does not answer where
/// the line's rch looks (under the passwd entry's home), and cron's run of
/// that very line finds it down at that same socket and starts nothing;
/// on main doctor checked the socket below the line and said ok.
#[test]
fn the_prediction_matches_what_the_real_cron_daemon_runs() {
    let Some(user) = CronUser::new("the_prediction_matches_what_the_real_cron_daemon_runs") else {
        return;
    };
    if !tool_or_skip("/usr/sbin/cron", "cron") {
        return;
    }
    user.world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let rch = user.world.daemon_rch("rch", "exit 1");
    let socket = user.world.path("rchd/rch.sock");
    fs::create_dir_all(socket.parent().expect("parent")).expect("mkdir");
    let _daemon = FakeDaemon::start(&socket, Reply::Healthy);
    let out = user.world.path("cron-run.json");
    user.hand_over();
    let leases = user.world.leases();
    user.crontab(&format!(
        "* * * * * flock -n {} {BIN} --json --lease-dir {} --rch {} >{} 2>{}\n\
         RCH_SOCKET_PATH={}\n",
        user.world.path("sweep.lock").display(),
        leases.display(),
        rch.display(),
        out.display(),
        user.world.path("cron-run.err").display(),
        socket.display()
    ));
    let output = user.doctor(&["doctor", "--as", "cron", "--json"]);
    let predicted = one_document(&output);
    assert_eq!(output.status.code(), Some(1), "{predicted}");
    let report = &predicted["reports"][0];
    assert_eq!(row(report, "daemon")["status"], "fail", "{predicted}");

    // Only the test's line may run: the host's own system crontabs
    // (run-parts of /etc/cron.hourly, say) are emptied inside.
    user.host.write(Path::new("/etc/crontab"), b"");
    let emptied = user
        .host
        .command("/bin/sh")
        .args(["-c", "rm -f /etc/cron.d/* /etc/cron.d/.[!.]*"])
        .output()
        .expect("sh");
    assert!(emptied.status.success(), "{}", stderr(&emptied));
    // cron runs the line at the next minute or the one after.
    let mut cron = user
        .host
        .command("/usr/sbin/cron")
        .arg("-f")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cron -f");
    let mut ran = None;
    for _ in 0..150 {
        if let Ok(text) = fs::read_to_string(&out)
            && let Ok(document) = serde_json::from_str::<Value>(&text)
        {
            ran = Some(document);
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let _ = cron.kill();
    let _ = cron.wait();
    // A bound on waiting for cron, not a timing: it runs each minute.
    let ran = ran.unwrap_or_else(|| {
        panic!(
            "cron did not run the line within 150 s: {:?}",
            fs::read_to_string(&out)
        )
    });
    // Where the run looked, and that nothing answered there: what doctor
    // said.
    let looked = ran["daemon"]["socket"].as_str().unwrap_or_default();
    assert_eq!(
        looked,
        utf8(&user.home().join(".cache/rch/rch.sock")),
        "{ran}"
    );
    assert_eq!(ran["daemon"]["up"], false, "{ran}");
    assert_ne!(ran["exit_code"], 0, "{ran}");
    assert_eq!(ran["attempted"], 0, "{ran}");
    assert!(finding(report, "daemon").contains(looked), "{predicted}");
}

//! What the timer will see (issue 29) on the real binary: `doctor --as
//! cron|user-timer|system-timer` re-executes itself in that route's
//! environment; the `host` and `environment` checks; an `rch` that cannot
//! start or exits 126/127 fails; cron's `PATH` is checked besides a
//! timer's; `/usr/local/bin/rch` is a fallback, and empty and relative
//! `PATH` entries are never searched.
//!
//! Where a test needs a machine folder (`/usr/local/bin`) or a small file
//! system, it makes it in a private mount namespace (`unshare`, as root),
//! so the host is never touched; without one it says it skipped.

mod common;

use common::doctor_rows::row;
use common::private_host::PrivateHost;
use common::*;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// A fake `rch` that answers `--version` as rch does; a recovery fails.
fn version_rch(world: &World, name: &str) -> PathBuf {
    world.fake_rch(
        name,
        "if [ \"$1\" = --version ]; then echo 'rch 2.1.24'; exit 0; fi\nexit 1",
    )
}

/// The binary with only the variables given: a login shell's or a
/// crontab's, and nothing of the test's own.
fn with_env(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(BIN);
    command.env_clear().args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

fn document(output: &Output) -> Value {
    let document = one_document(output);
    assert_eq!(
        document["exit_code"],
        output.status.code().unwrap_or(-1),
        "{document}"
    );
    document
}

fn text<'a>(document: &'a Value, check: &str, field: &str) -> &'a str {
    row(document, check)[field].as_str().unwrap_or_default()
}

/// This user's home folder and login name as the password database has
/// them (what systemd hands a unit), if it has an entry.
fn account() -> Option<(PathBuf, String)> {
    // SAFETY: getpwuid returns a pointer into static storage or null; it
    // is read at once, on this thread, before any other call.
    unsafe {
        let entry = libc::getpwuid(libc::geteuid());
        if entry.is_null() || (*entry).pw_dir.is_null() || (*entry).pw_name.is_null() {
            return None;
        }
        let home = std::ffi::CStr::from_ptr((*entry).pw_dir).to_str().ok()?;
        let name = std::ffi::CStr::from_ptr((*entry).pw_name).to_str().ok()?;
        Some((PathBuf::from(home), name.to_owned()))
    }
}

/// A private host where root's passwd entry names `home` (cron takes
/// `HOME` from there, never from the process that asks), pam_env's files
/// hold nothing and root has no crontab: `None` (said) where none can be
/// made (not root).
fn cron_host(test: &str, home: &Path) -> Option<PrivateHost> {
    let host = PrivateHost::new(test)?;
    let passwd = fs::read_to_string("/etc/passwd").expect("passwd");
    let mut changed = String::new();
    for line in passwd.lines() {
        let mut fields: Vec<&str> = line.split(':').collect();
        if fields.len() == 7 && fields[2] == "0" {
            fields[5] = utf8(home);
        }
        changed.push_str(&fields.join(":"));
        changed.push('\n');
    }
    host.write(Path::new("/etc/passwd"), changed.as_bytes());
    host.write(Path::new("/etc/environment"), b"");
    host.write(Path::new("/etc/default/locale"), b"");
    Some(host)
}

/// The binary inside `host` with only the variables given.
fn in_host(host: &PrivateHost, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = host.command(BIN);
    command.env_clear().args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// Runs `command` inside `unshare ARGS`, after `setup` (an `sh` script
/// given `$1`..: `extra`) ran there; None (with a note) when this machine
/// does not let us, as an unprivileged user or a locked-down container.
fn unshared(unshare: &[&str], setup: &str, extra: &[&Path], command: &Command) -> Option<Output> {
    if !is_root() {
        eprintln!("skipped: needs root for unshare (CI runs as root)");
        return None;
    }
    let probe = Command::new("unshare").args(unshare).arg("true").output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: unshare {unshare:?} is not permitted here: {probe:?}");
        return None;
    }
    let mut wrapped = Command::new("unshare");
    wrapped
        .args(unshare)
        .args([
            "sh",
            "-euc",
            &format!("{setup}\nshift {}\nexec \"$@\"", extra.len()),
            "sh",
        ])
        .args(extra)
        .arg(command.get_program())
        .args(command.get_args());
    wrapped.env_clear();
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            wrapped.env(name, value);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    Some(wrapped.output().expect("run unshare"))
}

/// The issue's first finding: `.profile` sets `XDG_STATE_HOME=~/.state`, so
/// rch writes `~/.state/rch/job-leases`; at the terminal all is well, but
/// cron sweeps `~/.local/state/rch/job-leases`, which does not exist, and
/// exits 0 saying nothing. `doctor` names the variable; `doctor --as cron`
/// shows the missing folder cron would sweep.
#[test]
fn doctor_as_cron_warns_that_cron_sweeps_a_missing_folder() {
    let world = World::new();
    let home = world.path("home");
    let leases = home.join(".state/rch/job-leases");
    fs::create_dir_all(&leases).expect("mkdir");
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    fs::write(leases.join(journal.file_name()), journal.text()).expect("journal");
    let rch = version_rch(&world, "rch");
    let state_home = home.join(".state");
    let shell = [
        ("HOME", utf8(&home)),
        ("LOGNAME", "builder"),
        ("XDG_STATE_HOME", utf8(&state_home)),
        ("PATH", "/usr/bin:/bin"),
    ];

    // At the terminal: the leases are found, and the variable they rest
    // on is named with its value and the fix.
    let output = with_env(&["doctor", "--json", "--rch", utf8(&rch)], &shell)
        .output()
        .expect("doctor");
    let here = document(&output);
    assert_eq!(output.status.code(), Some(0), "{here}");
    assert_eq!(row(&here, "lease_dir")["status"], "ok", "{here}");
    assert_eq!(row(&here, "environment")["status"], "warn", "{here}");
    let finding = text(&here, "environment", "finding");
    assert!(
        finding.contains(&format!("XDG_STATE_HOME={}", state_home.display())),
        "{finding}"
    );
    let missing = home.join(".local/state/rch/job-leases");
    assert!(
        finding.contains(&format!("without it a run sweeps {}", missing.display())),
        "{finding}"
    );
    let fix = text(&here, "environment", "fix");
    assert!(
        fix.contains("on the crontab line") && fix.contains("doctor --as cron"),
        "{fix}"
    );

    // As cron (HOME from the passwd entry): the route first in the
    // document, and the folder cron sweeps is missing.
    let Some(host) = cron_host(
        "doctor_as_cron_warns_that_cron_sweeps_a_missing_folder",
        &home,
    ) else {
        return;
    };
    let output = in_host(
        &host,
        &["doctor", "--as", "cron", "--json", "--rch", utf8(&rch)],
        &shell,
    )
    .output()
    .expect("doctor --as cron");
    let raw = stdout(&output);
    assert!(
        raw.starts_with(r#"{"version":1,"as":"cron","checks":["#),
        "{raw}"
    );
    let cron = document(&output);
    assert_eq!(output.status.code(), Some(0), "{cron}");
    assert_eq!(row(&cron, "lease_dir")["status"], "warn", "{cron}");
    assert!(
        text(&cron, "lease_dir", "finding")
            .contains(&format!("{} does not exist", missing.display())),
        "{cron}"
    );
    // Cron has no XDG_STATE_HOME, so nothing there rests on it.
    assert_eq!(row(&cron, "environment")["status"], "ok", "{cron}");

    // The same for a person: the route and what it was given on top, then
    // where this shell and cron part ways.
    let output = in_host(
        &host,
        &["doctor", "--as", "cron", "--rch", utf8(&rch)],
        &shell,
    )
    .output()
    .expect("doctor --as cron");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report = stdout(&output);
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "as cron: SHELL=/bin/sh HOME={home} PATH=/usr/bin:/bin LOGNAME=root, working directory {home} (every other variable dropped)",
            home = home.display()
        ),
        "{report}"
    );
    // Where cron's environment came from: root has no crontab here (CI), so
    // cron's defaults.
    assert!(lines[1].starts_with("from: "), "{report}");
    assert_eq!(
        lines[2],
        format!(
            "note: at this shell the lease directory is {}; cron sweeps {}",
            leases.display(),
            missing.display()
        ),
        "{report}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("warn  lease_dir") && line.contains("does not exist")),
        "{report}"
    );
}

/// Each route's `PATH`, home folder and working directory reach the
/// re-executed doctor, options from variables are dropped and options on
/// the command line kept. An `rch` name found nowhere lists every place
/// tried, which is that route's `PATH` exactly.
#[test]
fn each_route_runs_with_its_own_path_home_and_working_directory() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let absent = "rch-absent-on-purpose";
    let tried = |dirs: &[&str]| {
        let places: Vec<String> = dirs.iter().map(|dir| format!("{dir}/{absent}")).collect();
        format!("(looked in: {})", places.join(", "))
    };
    let elsewhere = world.path("elsewhere/backoff.json");
    let shell = [
        ("HOME", utf8(world.dir.path())),
        ("LOGNAME", "builder"),
        ("PATH", "/opt/nothing:/usr/bin:/bin"),
        ("RCH_SWEEP_STATE_FILE", utf8(&elsewhere)),
        ("RCH_STATE_HOME", "/nonexistent"),
        ("XDG_RUNTIME_DIR", "/tmp/not-the-users"),
    ];

    // cron: HOME from the passwd entry, and the working directory is
    // HOME, so a relative --lease-dir (kept: it is on the command line)
    // names the world's; RCH_SWEEP_STATE_FILE is dropped, so the state
    // path is the default beside the lease directory.
    if let Some(host) = cron_host(
        "each_route_runs_with_its_own_path_home_and_working_directory",
        world.dir.path(),
    ) {
        let output = in_host(
            &host,
            &[
                "doctor",
                "--as",
                "cron",
                "--json",
                "--lease-dir",
                "job-leases",
                "--rch",
                absent,
            ],
            &shell,
        )
        .output()
        .expect("doctor --as cron");
        let cron = document(&output);
        assert_eq!(output.status.code(), Some(1), "{cron}");
        let leases = fs::canonicalize(world.leases()).expect("canonical");
        assert_eq!(row(&cron, "lease_dir")["status"], "ok", "{cron}");
        assert!(
            text(&cron, "lease_dir", "finding")
                .contains(&format!("(resolved: {})", leases.display())),
            "{cron}"
        );
        let default_state = leases.parent().expect("parent").join("rch-sweep");
        assert!(
            text(&cron, "state", "finding")
                .contains(&format!("{} does not exist yet", default_state.display())),
            "{cron}"
        );
        assert_eq!(row(&cron, "rch")["status"], "fail", "{cron}");
        assert!(
            text(&cron, "rch", "finding").contains(&tried(&["/usr/bin", "/bin"])),
            "{cron}"
        );
    }

    // The units: what systemd sets from the account, the unit's PATH.
    let Some((home, name)) = account() else {
        eprintln!("skipped the units: this user has no password database entry");
        return;
    };
    let home = home.display().to_string();
    let (leases, state) = (world.leases(), world.state_file());
    let absolute = [
        "--lease-dir",
        utf8(&leases),
        "--state-file",
        utf8(&state),
        "--rch",
        absent,
    ];
    for (route, path_dirs, runtime) in [
        (
            "user-timer",
            vec![
                format!("{home}/.local/bin"),
                format!("{home}/.cargo/bin"),
                "/usr/local/bin".to_owned(),
                "/usr/bin".to_owned(),
                "/bin".to_owned(),
            ],
            true,
        ),
        (
            "system-timer",
            vec!["/usr/local/bin".into(), "/usr/bin".into(), "/bin".into()],
            false,
        ),
    ] {
        let mut args = vec!["doctor", "--as", route, "--json"];
        args.extend(absolute);
        let output = with_env(&args, &shell).output().expect("doctor --as");
        let unit = document(&output);
        assert_eq!(output.status.code(), Some(1), "{route}: {unit}");
        assert_eq!(unit["as"], route);
        let dirs: Vec<&str> = path_dirs.iter().map(String::as_str).collect();
        assert!(
            text(&unit, "rch", "finding").contains(&tried(&dirs)),
            "{route}: {unit}"
        );
        // The text names what the route was given.
        args.retain(|arg| *arg != "--json");
        let output = with_env(&args, &shell).output().expect("doctor --as");
        let first = stdout(&output)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned();
        let path = dirs.join(":");
        let expected = format!("as {route}: HOME={home} USER={name} LOGNAME={name} SHELL=");
        assert!(first.starts_with(&expected), "{first}");
        // (The user manager's environment.d may add variables after PATH.)
        assert!(first.contains(&format!(" PATH={path}")), "{first}");
        assert!(
            first.contains(&format!(", working directory {home} ")),
            "{first}"
        );
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        assert_eq!(
            first.contains(&format!(" XDG_RUNTIME_DIR=/run/user/{uid} ")),
            runtime,
            "{first}"
        );
        assert!(
            !first.contains("not-the-users") && !first.contains("RCH_"),
            "{first}"
        );
    }
}

#[test]
fn an_unknown_route_is_a_usage_error() {
    for args in [
        &["doctor", "--as", "anacron"][..],
        &["doctor", "--as"],
        &["--as", "cron"],
        &["status", "--as", "cron"],
    ] {
        let output = World::bare_command().args(args).output().expect("run");
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), "", "{args:?}");
    }
    let output = World::bare_command()
        .args(["doctor", "--as", "anacron"])
        .output()
        .expect("run");
    assert!(
        stderr(&output).contains("[possible values: cron, user-timer, system-timer]"),
        "{}",
        stderr(&output)
    );
}

/// A shim (`exec rch-real "$@"`) whose program is missing exits 127, and a
/// file the kernel cannot execute cannot be started: every run's first
/// recovery exits 78 on either, so doctor fails it, quoting the shim's
/// last stderr line. A shim that works at the terminal but not on cron's
/// `PATH` passes doctor and fails `doctor --as cron`.
#[test]
fn an_rch_that_cannot_start_or_exits_127_fails() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let home = world.path("home");
    let shim = world.script("rch-shim", "exec rch-real \"$@\"");
    let garbage = world.path("rch-garbage");
    fs::write(&garbage, b"\x7fELF\x02\x01\x01 not really an executable\n").expect("write");
    fs::set_permissions(&garbage, fs::Permissions::from_mode(0o755)).expect("chmod");
    let shell = [("HOME", utf8(&home)), ("PATH", "/usr/bin:/bin")];
    let (leases, state) = (world.leases(), world.state_file());
    let paths = ["--lease-dir", utf8(&leases), "--state-file", utf8(&state)];
    // The file that cannot start first: its run charges nothing, so the
    // lease is still due for the shim's.
    for (rch, says) in [
        (&garbage, "could not be started: Exec format error"),
        (&shim, "exit status: 127"),
    ] {
        let mut args = vec!["doctor", "--json", "--rch", utf8(rch)];
        args.extend(paths);
        let output = with_env(&args, &shell).output().expect("doctor");
        let doctor = document(&output);
        assert_eq!(output.status.code(), Some(1), "{doctor}");
        assert_eq!(row(&doctor, "rch")["status"], "fail", "{doctor}");
        let finding = text(&doctor, "rch", "finding");
        assert!(finding.contains(says), "{finding}");
        assert!(finding.contains("a run would exit 78"), "{finding}");
        if rch == &shim {
            assert!(finding.contains("rch-real: not found"), "{finding}");
        }
        // What doctor fails, a run refuses: 78 at its first recovery (a
        // child that exits 127 is a broken install, not a failed lease).
        let mut run = vec!["--rch", utf8(rch)];
        run.extend(paths);
        let output = with_env(&run, &shell).output().expect("run");
        assert_eq!(
            output.status.code(),
            Some(78),
            "{:?}: {}",
            output.status.code(),
            stderr(&output)
        );
    }

    // rch-real on the login shell's PATH, the shim where rch's installer
    // puts rch: fine here, 127 under cron.
    let bin = world.path("bin");
    fs::create_dir(&bin).expect("mkdir");
    fs::rename(version_rch(&world, "rch-real"), bin.join("rch-real")).expect("move");
    fs::create_dir_all(home.join(".local/bin")).expect("mkdir");
    fs::copy(&shim, home.join(".local/bin/rch")).expect("copy");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let shell = [("HOME", utf8(&home)), ("PATH", path.as_str())];
    let mut args = vec!["doctor", "--json"];
    args.extend(paths);
    let output = with_env(&args, &shell).output().expect("doctor");
    let here = document(&output);
    assert_eq!(row(&here, "rch")["status"], "ok", "{here}");
    let Some(host) = cron_host("an_rch_that_cannot_start_or_exits_127_fails", &home) else {
        return;
    };
    let mut args = vec!["doctor", "--as", "cron", "--json"];
    args.extend(paths);
    let output = in_host(&host, &args, &shell)
        .output()
        .expect("doctor --as cron");
    let cron = document(&output);
    assert_eq!(output.status.code(), Some(1), "{cron}");
    assert_eq!(row(&cron, "rch")["status"], "fail", "{cron}");
    let finding = text(&cron, "rch", "finding");
    assert!(
        finding.contains("exit status: 127") && finding.contains("rch-real: not found"),
        "{finding}"
    );
}

/// A `PATH` entry that is empty or relative names the working directory
/// (or a folder below it): a sweep never finds `rch` there.
#[test]
fn rch_is_never_found_in_the_working_directory() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    version_rch(&world, "rch");
    fs::create_dir(world.path("bin")).expect("mkdir");
    version_rch(&world, "bin/rch");
    let home = world.path("home");
    for path in [
        ".:/nonexistent",
        "bin:/nonexistent",
        ":/nonexistent",
        "/nonexistent:",
    ] {
        let shell = [("HOME", utf8(&home)), ("PATH", path)];
        let (leases, state) = (world.leases(), world.state_file());
        let paths = ["--lease-dir", utf8(&leases), "--state-file", utf8(&state)];
        let mut args = vec!["doctor", "--json"];
        args.extend(paths);
        let output = with_env(&args, &shell)
            .current_dir(world.dir.path())
            .output()
            .expect("doctor");
        let doctor = document(&output);
        assert_eq!(row(&doctor, "rch")["status"], "fail", "{path}: {doctor}");
        assert!(
            text(&doctor, "rch", "finding").contains("/usr/local/bin/rch)"),
            "{path}: {doctor}"
        );
        let output = with_env(&paths, &shell)
            .current_dir(world.dir.path())
            .output()
            .expect("run");
        assert_eq!(
            output.status.code(),
            Some(78),
            "{path}: {}",
            stderr(&output)
        );
    }
}

/// `/usr/local/bin/rch` (where admins install rch by hand, on no cron
/// `PATH`) is the last fallback; and cron's `PATH` is checked besides a
/// timer's: with rch in `/usr/local/bin` on this shell's `PATH` and
/// another in `~/.local/bin`, cron runs the other one. `/usr/local/bin` is
/// the world's folder, bind-mounted in a private mount namespace.
#[test]
fn usr_local_bin_is_a_fallback_and_cron_path_is_checked() {
    let world = World::new();
    let id = world.will_complete(Journal::stale("hz4", 2 * HOUR_MS));
    // The world's folder holds `rch`: it becomes /usr/local/bin.
    world.completing_rch();
    let bind = "mount --bind \"$1\" /usr/local/bin";
    let home = world.path("home");
    let (leases, state) = (world.leases(), world.state_file());
    let paths = ["--lease-dir", utf8(&leases), "--state-file", utf8(&state)];
    let cron_shell = [("HOME", utf8(&home)), ("PATH", "/usr/bin:/bin")];
    let mut args = vec!["--json"];
    args.extend(paths);
    let Some(output) = unshared(
        &["--mount", "--propagation", "private"],
        bind,
        &[world.dir.path()],
        &with_env(&args, &cron_shell),
    ) else {
        return;
    };
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run = one_document(&output);
    assert_eq!(outcomes(&run), [(id, "recovered".to_owned())], "{run}");

    // Another rch in ~/.local/bin: this shell finds /usr/local/bin/rch on
    // PATH, as a timer does; cron's PATH then the fallbacks find the other.
    let local = home.join(".local/bin");
    fs::create_dir_all(&local).expect("mkdir");
    fs::copy(version_rch(&world, "other-rch"), local.join("rch")).expect("copy");
    let shell = [
        ("HOME", utf8(&home)),
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
    ];
    let mut args = vec!["doctor", "--json"];
    args.extend(paths);
    let output = unshared(
        &["--mount", "--propagation", "private"],
        bind,
        &[world.dir.path()],
        &with_env(&args, &shell),
    )
    .expect("permitted above");
    let doctor = document(&output);
    let rch = row(&doctor, "rch");
    assert_eq!(rch["status"], "warn", "{doctor}");
    let finding = rch["finding"].as_str().unwrap_or_default();
    assert!(finding.starts_with("/usr/local/bin/rch"), "{finding}");
    assert!(
        finding.contains(&format!(
            "cron's PATH (/usr/bin:/bin, then ~/.local/bin, ~/.cargo/bin, /usr/local/bin) would find {}",
            local.join("rch").display()
        )),
        "{finding}"
    );
    assert!(!finding.contains("a timer's PATH"), "{finding}");
}

/// The `host` row: a PID namespace of its own (owners outside look gone),
/// a state file system with under 1 MiB or no inode free, and one that
/// counts no inodes, which is not short of them.
#[test]
fn the_host_check_sees_a_pid_namespace_and_a_full_file_system() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let rch = version_rch(&world, "rch");
    let doctor = |state_file: &Path| {
        with_env(
            &[
                "doctor",
                "--json",
                "--lease-dir",
                utf8(&world.leases()),
                "--state-file",
                utf8(state_file),
                "--rch",
                utf8(&rch),
            ],
            &[
                ("HOME", utf8(&world.path("home"))),
                ("PATH", "/usr/bin:/bin"),
            ],
        )
    };
    let output = doctor(&world.state_file()).output().expect("doctor");
    let plain = document(&output);
    assert_eq!(row(&plain, "host")["status"], "ok", "{plain}");
    assert!(
        text(&plain, "host", "finding").starts_with("the initial PID namespace; "),
        "{plain}"
    );

    let Some(output) = unshared(&["--pid", "--fork"], "", &[], &doctor(&world.state_file())) else {
        return;
    };
    let namespaced = document(&output);
    assert_eq!(output.status.code(), Some(0), "{namespaced}");
    assert_eq!(row(&namespaced, "host")["status"], "warn", "{namespaced}");
    assert!(
        text(&namespaced, "host", "finding").contains("a PID namespace other than the initial one"),
        "{namespaced}"
    );

    let small = world.path("small");
    fs::create_dir(&small).expect("mkdir");
    let state_file = small.join("rch-sweep/backoff.json");
    // Under 1 MiB is a warning; no inode free at all fails (a run could
    // not even take its lock: 74).
    for (options, expected, status, code) in [
        ("size=512k", Some("524,288 bytes free"), "warn", 0),
        ("nr_inodes=1", Some("has no inode free"), "fail", 1),
        ("nr_inodes=0", None, "ok", 0),
    ] {
        let output = unshared(
            &["--mount", "--propagation", "private"],
            &format!("mount -t tmpfs -o {options} tmpfs \"$1\""),
            &[&small],
            &doctor(&state_file),
        )
        .expect("permitted above");
        let full = document(&output);
        assert_eq!(output.status.code(), Some(code), "{options}: {full}");
        let host = row(&full, "host");
        assert_eq!(host["status"], status, "{options}: {full}");
        match expected {
            Some(words) => {
                let finding = host["finding"].as_str().unwrap_or_default();
                assert!(finding.contains(words), "{options}: {finding}");
                assert!(finding.contains(&small.display().to_string()), "{finding}");
            }
            None => {
                assert!(
                    host["finding"]
                        .as_str()
                        .is_some_and(|f| f.contains("counts no inodes")),
                    "{full}"
                );
            }
        }
    }
}

/// The `environment` row names each variable a decision rests on with its
/// value: an option's variable unless the option was on the command line,
/// rch on a `PATH` entry no route reaches, the daemon socket under
/// `XDG_RUNTIME_DIR` where one listens, `RCH_SOCKET_PATH`.
#[test]
fn the_environment_check_names_what_a_timer_or_cron_lacks() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let bin = world.path("bin");
    fs::create_dir(&bin).expect("mkdir");
    version_rch(&world, "bin/rch");
    let runtime = world.path("run");
    fs::create_dir(&runtime).expect("mkdir");
    let _daemon = FakeDaemon::start(&runtime.join("rch.sock"), Reply::Healthy);
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let home = world.path("home");
    let leases = world.leases();
    let state = world.state_file();
    let environment = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["doctor", "--json"];
        all.extend(args);
        let mut shell = vec![("HOME", utf8(&home)), ("PATH", path.as_str())];
        shell.extend(env);
        let output = with_env(&all, &shell).output().expect("doctor");
        let doctor = document(&output);
        assert_eq!(output.status.code(), Some(0), "{doctor}");
        row(&doctor, "environment").clone()
    };
    let given = ["--lease-dir", utf8(&leases), "--state-file", utf8(&state)];
    let found = environment(
        &[],
        &[
            ("RCH_SWEEP_LEASE_DIR", utf8(&leases)),
            ("RCH_SWEEP_STATE_FILE", utf8(&state)),
            ("XDG_RUNTIME_DIR", utf8(&runtime)),
        ],
    );
    assert_eq!(found["status"], "warn", "{found}");
    let finding = found["finding"].as_str().unwrap_or_default();
    for expected in [
        format!(
            "the lease directory on RCH_SWEEP_LEASE_DIR={}",
            leases.display()
        ),
        format!("the state file on RCH_SWEEP_STATE_FILE={}", state.display()),
        format!("rch on the PATH entry {}", bin.display()),
        format!("the daemon socket on XDG_RUNTIME_DIR={}", runtime.display()),
    ] {
        assert!(finding.contains(&expected), "{expected} not in {finding}");
    }
    let fix = found["fix"].as_str().unwrap_or_default();
    assert!(
        fix.contains(&format!("RCH_SWEEP_RCH={}", bin.join("rch").display()))
            && fix.contains("--as user-timer"),
        "{fix}"
    );

    // The same values on the command line, rch named, the socket given:
    // nothing rests on the environment.
    let rch = bin.join("rch");
    let socket = runtime.join("rch.sock");
    let mut args = given.to_vec();
    args.extend(["--rch", utf8(&rch), "--socket", utf8(&socket)]);
    let found = environment(&args, &[("XDG_RUNTIME_DIR", utf8(&runtime))]);
    assert_eq!(found["status"], "ok", "{found}");

    // RCH_SOCKET_PATH is a variable like the others.
    let found = environment(&given, &[("RCH_SOCKET_PATH", utf8(&socket))]);
    assert!(
        found["finding"]
            .as_str()
            .is_some_and(|f| f.contains(&format!(
                "the daemon socket on RCH_SOCKET_PATH={}",
                socket.display()
            ))),
        "{found}"
    );
}

/// `doctor --as` runs its checks in this very binary again, through
/// `/proc/self/exe`; where no `/proc` is mounted it says that, rather than
/// blaming the working directory the run would start in.
#[test]
fn without_proc_doctor_as_names_proc_not_the_working_directory() {
    let world = World::new();
    let Some(host) = cron_host(
        "without_proc_doctor_as_names_proc_not_the_working_directory",
        world.dir.path(),
    ) else {
        return;
    };
    let output = host
        .command("unshare")
        .args(["--mount", "--propagation", "private", "/bin/sh", "-c"])
        .arg("mount -t tmpfs no-proc /proc && exec \"$0\" doctor --as cron --rch /bin/true")
        .arg(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("unshare");
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(78), "{said}");
    assert!(
        said.contains("through /proc/self/exe, and there is no /proc here"),
        "{said}"
    );
    assert!(!said.contains("cannot run rch-sweep in"), "{said}");
}

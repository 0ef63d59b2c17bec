//! Hosts set up a little wrong (issue 18): another user's lease directory,
//! an `rch` this user cannot run or start, a strict umask, a metrics path
//! that is a folder, an unwritable state folder, two sweeps on one
//! directory, inherited descriptors without `close_range`. Each runs the
//! real binary; where nothing may change, the whole tree is compared
//! before and after. Tests that need another user chown to `nobody` and
//! drop to it, which needs root (as CI runs).

mod common;

use common::backoff::write_due_entry;
use common::doctor_rows::row;
use common::*;
use serde_json::{Value, json};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// A state file holding one backoff entry for `id`, due now, as bytes.
fn state_with_entry(world: &World, id: &str) -> Vec<u8> {
    write_due_entry(world, id, Some(1_700_000_000_000)).1
}

#[test]
fn another_users_lease_directory_is_refused_before_anything_is_created() {
    if !root_or_skip("another_users_lease_directory") {
        return;
    }
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    let id = world.will_complete(journal);
    let rch = world.completing_rch();
    world.hand_to_nobody();
    fs::remove_dir(world.state_file().parent().expect("folder")).expect("no state folder");
    let metrics_dir = world.path("textfile");
    fs::create_dir(&metrics_dir).expect("mkdir");
    let prom = metrics_dir.join("rch.prom");
    let before = snapshot(world.dir.path());
    // Root, a monitor's own account: not the directory's owner.
    for args in [
        vec!["--json", "--rch", utf8(&rch), "--metrics-file", utf8(&prom)],
        vec!["--json", "--check"],
        vec!["forget", "--all"],
        vec!["forget", &id],
    ] {
        let output = world.sub(&args).output().expect("run");
        assert_eq!(
            output.status.code(),
            Some(78),
            "{args:?}: {}",
            stderr(&output)
        );
        let text = stderr(&output);
        assert!(
            text.contains("belongs to nobody (uid 65534), not to root (uid 0)")
                && text.contains("runuser -u nobody -- rch-sweep")
                && text.contains("rch-sweep@nobody.timer"),
            "{args:?}: {text}"
        );
        if args.contains(&"--json") {
            assert_error_document(&output, 78, "belongs to nobody");
        }
        assert_eq!(
            snapshot(world.dir.path()),
            before,
            "{args:?} changed the tree"
        );
    }
    // Reading is fine, with a warning that the journals are judged as root.
    for args in [vec!["--dry-run"], vec!["explain", &id], vec!["status"]] {
        let output = world.sub(&args).output().expect("run");
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("warning: lease directory")
                && stderr(&output).contains("judged as root (uid 0)"),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(
            snapshot(world.dir.path()),
            before,
            "{args:?} changed the tree"
        );
    }
    // Its owner may.
    fs::create_dir(world.state_file().parent().expect("folder")).expect("mkdir");
    give_to_nobody(world.state_file().parent().expect("folder"));
    let mut owner = world.sub(&["--json", "--rch", utf8(&rch)]);
    let output = as_nobody(&mut owner).output().expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        outcomes(&one_document(&output)),
        [(id, "recovered".to_owned())]
    );
}

#[test]
fn an_rch_this_user_cannot_run_is_passed_over_and_no_lease_pays_for_it() {
    if !root_or_skip("an_rch_this_user_cannot_run") {
        return;
    }
    let world = World::new();
    let journal = Journal::stale("w1", 2 * HOUR_MS);
    let id = world.will_complete(journal);
    let bin = world.path("bin");
    fs::create_dir(&bin).expect("mkdir");
    let rch = bin.join("rch");
    fs::rename(world.completing_rch(), &rch).expect("install rch");
    // Installed by root for root only, as a careless `sudo install` does.
    fs::set_permissions(&rch, fs::Permissions::from_mode(0o700)).expect("chmod");
    world.hand_to_nobody();
    let state = state_with_entry(&world, &id);
    give_to_nobody(&world.state_file());
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let home = world.path("home");
    let before = snapshot(world.dir.path());
    for explicit in [false, true] {
        let mut command = world.sub(&["--json"]);
        command.env("PATH", &path).env("HOME", &home);
        if explicit {
            command.args(["--rch", utf8(&rch)]);
        }
        let output = as_nobody(&mut command).output().expect("run");
        let why = if explicit {
            format!("{} is not executable by this user", rch.display())
        } else {
            format!("{} (not executable by this user)", rch.display())
        };
        assert_error_document(&output, 78, &why);
        assert_eq!(fs::read(world.state_file()).expect("state"), state);
        let after = snapshot(world.dir.path());
        // The lock file is the only thing a run creates before it finds rch.
        let lock = world.state_file().with_file_name("backoff.json.lock");
        let changed: Vec<&PathBuf> = after
            .keys()
            .filter(|path| before.get(*path) != after.get(*path))
            .filter(|path| **path != lock && Some(path.as_path()) != lock.parent())
            .collect();
        assert!(
            changed.is_empty(),
            "explicit {explicit}: changed {changed:?}"
        );
    }
    // Once the install is fixed, the very next run recovers it: no backoff
    // was added while rch could not run.
    fs::set_permissions(&rch, fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut command = world.sub(&["--json"]);
    command.env("PATH", &path).env("HOME", &home);
    let output = as_nobody(&mut command).output().expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        outcomes(&one_document(&output)),
        [(id, "recovered".to_owned())]
    );
}

/// A script whose interpreter does not exist: a regular, executable file
/// that `exec` refuses (ENOENT), as a broken rch install would.
fn unstartable_rch(world: &World) -> PathBuf {
    let path = world.path("rch");
    fs::write(
        &path,
        format!(
            "#!{}\nexit 0\n",
            world.path("no-such-interpreter").display()
        ),
    )
    .expect("write");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[test]
fn a_child_that_cannot_be_started_defers_its_lease_untouched_and_exits_78() {
    let world = World::new();
    let first = Journal::stale("w1", 3 * HOUR_MS);
    let second = Journal::stale("w1", 2 * HOUR_MS);
    let third = Journal::stale("w1", HOUR_MS);
    for journal in [&first, &second, &third] {
        world.add(journal);
    }
    let state = state_with_entry(&world, &first.id);
    let entry_before: Value =
        serde_json::from_slice::<Value>(&state).expect("json")["leases"][&first.id].clone();
    let rch = unstartable_rch(&world);
    fs::create_dir(world.path("textfile")).expect("mkdir");
    let prom = world.path("textfile/rch.prom");
    let output = world.run(&["--json", "--rch", utf8(&rch), "--metrics-file", utf8(&prom)]);
    assert_eq!(output.status.code(), Some(78), "{}", stderr(&output));
    let document = one_document(&output);
    assert_eq!(document["exit_code"], 78);
    let error = document["error"].as_str().expect("the summary says why");
    assert!(
        error.contains("cannot run") && error.contains(&rch.display().to_string()),
        "{error}"
    );
    let leases = document["leases"].as_array().expect("leases");
    let rows: Vec<(&str, &str, bool)> = leases
        .iter()
        .map(|lease| {
            (
                lease["wrapper_id"].as_str().expect("id"),
                lease["outcome"].as_str().expect("outcome"),
                lease.get("error").is_some(),
            )
        })
        .collect();
    // The first could not be started; the same worker's next two were never
    // tried (no further start after a child that cannot start).
    assert_eq!(
        rows,
        [
            (first.id.as_str(), "deferred", true),
            (second.id.as_str(), "deferred", false),
            (third.id.as_str(), "deferred", false),
        ]
    );
    assert!(
        leases[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("No such file or directory")),
        "{document}"
    );
    assert_eq!(
        (document["attempted"].clone(), document["deferred"].clone()),
        (json!(0), json!(3))
    );
    // The state was written, with the entry exactly as it was and no new one.
    let saved = world.state();
    assert_eq!(saved["leases"][&first.id], entry_before);
    assert_eq!(saved["leases"].as_object().expect("leases").len(), 1);
    assert_eq!(
        saved["last_success_unix_ms"], 1_700_000_000_000u64,
        "no success"
    );
    let metrics = fs::read_to_string(&prom).expect("metrics");
    for line in [
        "rch_sweep_exit_code{{L}} 78",
        "rch_sweep_last_success_timestamp_seconds{{L}} 1700000000",
    ] {
        let line = line.replace(
            "{{L}}",
            &format!("{{lease_dir=\"{}\"}}", world.leases().display()),
        );
        assert!(
            metrics.lines().any(|l| l == line),
            "no `{line}` in\n{metrics}"
        );
    }
}

/// Files `execve` refuses as no executable format (ENOEXEC): glibc's
/// `execvp` would hand each to `/bin/sh`, which then "runs" it and fails,
/// charging the lease a failure. Each must be a host fault like any other.
#[test]
fn an_rch_of_no_executable_format_is_78_and_costs_no_lease_a_failure() {
    // An ELF header of no machine this kernel runs, a text file with no
    // `#!` (sh would run it, and it would "succeed"), and random bytes.
    let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
    elf.resize(64, 0);
    elf[18] = 0xff; // e_machine: none that exists
    let bodies: [(&str, Vec<u8>); 3] = [
        ("foreign-elf", elf),
        ("no-shebang", b"exit 0\n".to_vec()),
        ("noise", (0u8..=255).rev().cycle().take(512).collect()),
    ];
    for (name, body) in bodies {
        let world = World::new();
        let journal = Journal::stale("w1", HOUR_MS);
        world.add(&journal);
        let state = state_with_entry(&world, &journal.id);
        let entry_before: Value =
            serde_json::from_slice::<Value>(&state).expect("json")["leases"][&journal.id].clone();
        let rch = world.path("rch");
        fs::write(&rch, body).expect("write");
        fs::set_permissions(&rch, fs::Permissions::from_mode(0o755)).expect("chmod");
        let output = world.run(&["--json", "--rch", utf8(&rch)]);
        assert_eq!(
            output.status.code(),
            Some(78),
            "{name}: {}",
            stderr(&output)
        );
        let document = one_document(&output);
        assert_eq!(
            outcomes(&document),
            [(journal.id.clone(), "deferred".to_owned())],
            "{name}"
        );
        let error = document["leases"][0]["error"].as_str().unwrap_or_default();
        assert!(error.contains("Exec format error"), "{name}: {error}");
        assert_eq!(world.state()["leases"][&journal.id], entry_before, "{name}");
    }
}

#[test]
fn children_already_running_finish_when_a_later_start_fails() {
    let world = World::new();
    // quick and slow start at once; unstarted and never wait for w1, so
    // unstarted starts once quick is done, and never would start after it
    // (the budget allows four) but for the failed start.
    let quick = Journal::stale("w1", 4 * HOUR_MS);
    let slow = Journal::stale("w2", 3 * HOUR_MS);
    let unstarted = Journal::stale("w1", 2 * HOUR_MS);
    let never = Journal::stale("w1", HOUR_MS);
    let quick_id = world.will_complete(quick);
    let slow_id = world.will_complete(slow);
    world.add(&unstarted);
    world.add(&never);
    // The interpreter exists while the first two start; the quick one
    // removes it (once the slow one has started), so the next start fails.
    let interpreter = world.path("interpreter");
    symlink("/bin/sh", &interpreter).expect("symlink");
    let marker = world.path("slow-started");
    fs::create_dir_all(world.path("done")).expect("mkdir");
    let body = format!(
        "{RCH_LEASE_DIR_SH}\ncase \"$3\" in\n  {quick_id})\n    i=0; while [ ! -e '{marker}' ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done\n    rm -f '{interpreter}' ;;\n  {slow_id})\n    touch '{marker}'; sleep 1.5 ;;\nesac\ncp \"{done}/$3.json\" \"$leases/$3.json\"\n",
        marker = marker.display(),
        interpreter = interpreter.display(),
        done = world.path("done").display(),
    );
    let rch = world.path("rch");
    fs::write(&rch, format!("#!{}\n{body}", interpreter.display())).expect("write");
    fs::set_permissions(&rch, fs::Permissions::from_mode(0o755)).expect("chmod");
    let output = world.run(&["--json", "--max-recoveries", "4", "--rch", utf8(&rch)]);
    assert_eq!(
        output.status.code(),
        Some(78),
        "{}\n{}",
        stderr(&output),
        stdout(&output)
    );
    let document = one_document(&output);
    assert_eq!(
        outcomes(&document),
        [
            (quick_id, "recovered".to_owned()),
            (slow_id, "recovered".to_owned()),
            (unstarted.id.clone(), "deferred".to_owned()),
            (never.id.clone(), "deferred".to_owned()),
        ]
    );
    assert!(document["leases"][2].get("error").is_some(), "{document}");
    assert!(document["leases"][3].get("error").is_none(), "{document}");
    assert!(
        world.state()["leases"]
            .as_object()
            .expect("leases")
            .is_empty()
    );
}

#[test]
fn no_inherited_descriptor_leaks_without_close_range_or_under_a_lowered_limit() {
    if !tool_or_skip("/usr/bin/strace", "strace") {
        return;
    }
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let seen = world.path("seen");
    let rch = world.fake_rch(
        "rch",
        &format!(
            "if [ -e /proc/$$/fd/3000 ]; then echo leaked; else echo clean; fi > '{seen}'\nexit 1",
            seen = seen.display()
        ),
    );
    // Opened at 3000 while the soft limit allowed it, then the limit is
    // lowered to 1024: a loop up to the soft limit cannot see it, and
    // close_range fails as on kernels before 5.11 or under seccomp.
    let script = "ulimit -Sn 4096 && exec 3000</dev/null && ulimit -Sn 1024 && \
                  exec strace -f -qq -o /dev/null -e trace=close_range \
                  -e inject=close_range:error=ENOSYS \"$@\"";
    let output = Command::new("bash")
        .args(["-c", script, "bash", BIN])
        .args(["--lease-dir", utf8(&world.leases())])
        .args(["--state-file", utf8(&world.state_file())])
        .args(["--rch", utf8(&rch)])
        .env_remove("RCH_STATE_HOME")
        .output()
        .expect("run under strace");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(
        fs::read_to_string(&seen).expect("the child ran").trim(),
        "clean"
    );
}

#[test]
fn a_state_folder_another_user_could_swap_is_refused_and_left_alone() {
    if !root_or_skip("a_state_folder_another_user_could_swap") {
        return;
    }
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let marker = world.path("started");
    let rch = world.fake_rch("rch", &format!("touch '{}'", marker.display()));
    let folder = world.state_file().parent().expect("folder").to_path_buf();
    fs::create_dir(&folder).expect("mkdir");
    let cases: [(Option<u32>, u32, &str); 2] = [
        (
            Some(NOBODY),
            0o700,
            "belongs to nobody (uid 65534) with mode 0700",
        ),
        (None, 0o777, "belongs to root (uid 0) with mode 0777"),
    ];
    for (owner, mode, words) in cases {
        std::os::unix::fs::chown(&folder, Some(owner.unwrap_or(0)), None).expect("chown");
        fs::set_permissions(&folder, fs::Permissions::from_mode(mode)).expect("chmod");
        let before = snapshot(world.dir.path());
        for args in [vec!["--json", "--rch", utf8(&rch)], vec!["forget", "--all"]] {
            let output = world.sub(&args).output().expect("run");
            assert_eq!(
                output.status.code(),
                Some(74),
                "{args:?}: {}",
                stderr(&output)
            );
            let text = stderr(&output);
            assert!(
                text.contains(&format!("state folder {}", folder.display()))
                    && text.contains(words)
                    && text.contains("chmod 0700"),
                "{args:?}: {text}"
            );
            if args[0] == "--json" {
                assert_error_document(&output, 74, words);
            }
            assert_eq!(snapshot(world.dir.path()), before, "{args:?}");
            assert!(!marker.exists());
        }
    }
    // A sticky shared folder (as /tmp is) is fine: only owners may rename.
    std::os::unix::fs::chown(&folder, Some(0), None).expect("chown");
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o1777)).expect("chmod");
    let output = world.run(&["--rch", utf8(&rch)]);
    // The fake exits 0 without completing the journal: a failed recovery,
    // but a recovery run all the same.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(marker.exists());
}

/// Runs a real sweep of `world` under strace, stopped (SIGSTOP, injected
/// at its first `flock`) right after it took the lease directory's lock:
/// after its preflight looked at the state folder, before it made or opened
/// it. `swap` runs then, the sweep is continued, and its output returned.
/// `None` when strace is missing (outside CI).
fn run_swapped_after_preflight(
    world: &World,
    state_file: &Path,
    rch: &Path,
    swap: impl FnOnce(),
) -> Option<std::process::Output> {
    if !tool_or_skip("/usr/bin/strace", "strace") {
        return None;
    }
    let strace = Path::new("/usr/bin/strace");
    let mut child = Command::new(strace)
        .args(["-qq", "-o", "/dev/null", "-e", "trace=flock"])
        .args(["-e", "inject=flock:signal=SIGSTOP:when=1", BIN, "--json"])
        .args(["--lease-dir", utf8(&world.leases())])
        .args(["--state-file", utf8(state_file)])
        .args(["--rch", utf8(rch)])
        .env_remove("RCH_STATE_HOME")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start strace");
    // The signal is delivered as the flock returns: once the lease
    // directory's lock shows in /proc/locks, the sweep cannot take another
    // step until it is continued.
    let ino = fs::metadata(world.leases()).expect("lease dir").ino();
    let held = format!(":{ino} ");
    let sweep = loop {
        let locks = fs::read_to_string("/proc/locks").expect("/proc/locks");
        let holder = locks
            .lines()
            .filter(|line| line.contains(" FLOCK ") && line.contains(&held))
            .find_map(|line| line.split_whitespace().nth(4)?.parse::<i32>().ok());
        if let Some(pid) = holder {
            break pid;
        }
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("the sweep ended ({status}) before it took the lease directory's lock");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    swap();
    // SAFETY: kill with a PID of our own child's child and a valid signal.
    assert_eq!(unsafe { libc::kill(sweep, libc::SIGCONT) }, 0);
    Some(child.wait_with_output().expect("wait for the sweep"))
}

#[test]
fn a_state_folder_swapped_in_after_the_preflight_is_refused_and_never_written_into() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let marker = world.path("started");
    let rch = world.fake_rch("rch", &format!("touch '{}'", marker.display()));
    // A shared sticky folder, as /tmp/rch is, where the state folder does
    // not exist yet: the preflight finds nothing there to refuse.
    let shared = world.path("shared");
    fs::create_dir(&shared).expect("mkdir");
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).expect("chmod");
    let folder = shared.join("rch-sweep");
    let state_file = folder.join("backoff.json");

    // Made a link to a folder elsewhere meanwhile: not followed.
    let elsewhere = world.path("elsewhere");
    fs::create_dir(&elsewhere).expect("mkdir");
    fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o700)).expect("chmod");
    let Some(output) = run_swapped_after_preflight(&world, &state_file, &rch, || {
        symlink(&elsewhere, &folder).expect("swap in a link");
    }) else {
        return;
    };
    assert_error_document(&output, 74, "is a symbolic link");
    assert!(
        stderr(&output).contains(&format!("state folder {}", folder.display())),
        "{}",
        stderr(&output)
    );
    assert_eq!(files_in(&elsewhere), Vec::<String>::new(), "written into");
    assert!(fs::symlink_metadata(&folder).expect("lstat").is_symlink());
    assert!(!marker.exists(), "a recovery was started");
    fs::remove_file(&folder).expect("unlink");

    // Made by another user, writable by all, meanwhile (needs root to be
    // that other user).
    if !root_or_skip("a_state_folder_swapped_in_by_another_user") {
        return;
    }
    let output = run_swapped_after_preflight(&world, &state_file, &rch, || {
        fs::create_dir(&folder).expect("mkdir");
        fs::set_permissions(&folder, fs::Permissions::from_mode(0o777)).expect("chmod");
        give_to_nobody(&folder);
    })
    .expect("strace ran before");
    assert_error_document(&output, 74, "belongs to nobody (uid 65534) with mode 0777");
    assert_eq!(files_in(&folder), Vec::<String>::new(), "written into");
    assert!(!marker.exists(), "a recovery was started");
}

#[test]
fn a_state_folder_swapped_during_the_recoveries_never_gets_the_state() {
    // While `rch jobs recover` runs (the state lock held), the state folder
    // is renamed away and a sticky folder open to all put in its place,
    // which the owner rule accepts (as /tmp is). The run opened its folder
    // once, before the lock: the state, with the failure charged, lands
    // beside the lock in that folder, and nothing in the newcomer.
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&journal);
    let folder = world.state_file().parent().expect("folder").to_path_buf();
    let moved = world.path("state.swapped-out");
    let rch = world.fake_rch(
        "rch",
        &format!(
            "mv '{folder}' '{moved}' && mkdir -m 1777 '{folder}'
             echo 'recovery failed on the worker' >&2
exit 1",
            folder = folder.display(),
            moved = moved.display()
        ),
    );
    let (code, document) = world.json(&["--rch", utf8(&rch)]);
    assert_eq!(code, 1, "{document}");
    assert_eq!(document["failed"], 1, "{document}");
    assert!(moved.is_dir(), "the fake rch did not swap the folder");
    assert_eq!(files_in(&folder), Vec::<String>::new(), "written into");
    assert_eq!(files_in(&moved), ["backoff.json", "backoff.json.lock"]);
    let saved: serde_json::Value =
        serde_json::from_slice(&fs::read(moved.join("backoff.json")).expect("state"))
            .expect("parses");
    assert_eq!(saved["leases"][&journal.id]["failures"], 1, "{saved}");
}

#[test]
fn a_state_folder_that_is_a_link_is_refused_by_run_forget_and_doctor_alike() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let marker = world.path("started");
    let rch = world.fake_rch("rch", &format!("touch '{}'", marker.display()));
    let real = world.path("real");
    fs::create_dir(&real).expect("mkdir");
    fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).expect("chmod");
    let link = world.path("linked");
    symlink(&real, &link).expect("symlink");
    let state_file = link.join("backoff.json");
    let command = |args: &[&str]| {
        let mut command = World::bare_command();
        command
            .args(args)
            .args(["--lease-dir", utf8(&world.leases())])
            .args(["--state-file", utf8(&state_file)]);
        command
    };
    let output = command(&["--json", "--rch", utf8(&rch)])
        .output()
        .expect("run");
    assert_error_document(&output, 74, "is a symbolic link");
    let output = command(&["forget", "--all"]).output().expect("forget");
    assert_eq!(output.status.code(), Some(74), "{}", stderr(&output));
    assert!(!marker.exists(), "a recovery was started");
    // (doctor runs `rch --version`, which touches the marker.)
    let output = command(&["doctor", "--json", "--rch", utf8(&rch)])
        .output()
        .expect("doctor");
    let document = one_document(&output);
    let state = row(&document, "state");
    assert_eq!(state["status"], "fail", "{document}");
    assert!(
        state["finding"]
            .as_str()
            .is_some_and(|finding| finding.contains("is a symbolic link")),
        "{state}"
    );
    assert_eq!(files_in(&real), Vec::<String>::new(), "written into");
}

#[test]
fn the_metrics_file_is_world_readable_under_a_strict_umask() {
    let world = World::new();
    let id = world.will_complete(Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.completing_rch();
    fs::create_dir(world.path("textfile")).expect("mkdir");
    let prom = world.path("textfile/rch.prom");
    let output = Command::new("sh")
        .args(["-c", "umask 077 && exec \"$@\"", "sh", BIN])
        .args(["--lease-dir", utf8(&world.leases())])
        .args(["--state-file", utf8(&world.state_file())])
        .args(["--rch", utf8(&rch), "--metrics-file", utf8(&prom), "--json"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        outcomes(&one_document(&output)),
        [(id, "recovered".to_owned())]
    );
    let mode = fs::metadata(&prom).expect("metrics").mode() & 0o777;
    assert_eq!(mode, 0o644, "metrics mode {mode:o}");
    // The state stays private.
    assert_eq!(
        fs::metadata(world.state_file()).expect("state").mode() & 0o777,
        0o600
    );
}

#[test]
fn a_metrics_path_that_is_a_folder_stops_the_run_and_claims_no_success() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let marker = world.path("started");
    let rch = world.fake_rch("rch", &format!("touch '{}'", marker.display()));
    let prom = world.path("textfile/rch.prom");
    fs::create_dir_all(&prom).expect("a folder at the metrics path");
    let before = snapshot(world.dir.path());
    let output = world.run(&["--json", "--rch", utf8(&rch), "--metrics-file", utf8(&prom)]);
    assert_error_document(&output, 74, "is a directory");
    assert!(!marker.exists(), "a recovery started");
    assert!(
        !world.state_file().exists(),
        "no state, so no success recorded"
    );
    let after = snapshot(world.dir.path());
    let changed: Vec<&PathBuf> = after
        .keys()
        .filter(|path| before.get(*path) != after.get(*path))
        .collect();
    // Only the state folder and its lock, made before the metrics check.
    let folder = world.state_file().parent().expect("folder").to_path_buf();
    let lock = world.state_file().with_file_name("backoff.json.lock");
    assert!(
        changed
            .iter()
            .all(|path| **path == folder || **path == lock || **path == world.dir.path()),
        "{changed:?}"
    );
    // A dry run makes the same check and warns.
    let output = world.run(&["--dry-run", "--metrics-file", utf8(&prom)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("warning: a real run would stop here (exit 74)")
            && stderr(&output).contains("is a directory"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_unwritable_state_folder_is_74_and_its_run_no_success() {
    if !root_or_skip("an_unwritable_state_folder") {
        return;
    }
    // Read-only from the start: the preflight refuses it (74) before any
    // recovery, and no metrics claim a success.
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&journal);
    let rch = world.completing_rch();
    world.hand_to_nobody();
    let folder = world.state_file().parent().expect("folder").to_path_buf();
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o500)).expect("chmod");
    let textfile = world.path("textfile");
    fs::create_dir(&textfile).expect("mkdir");
    give_to_nobody(&textfile);
    let prom = textfile.join("rch.prom");
    let journal_path = world.leases().join(journal.file_name());
    let before = fs::read(&journal_path).expect("journal");
    let mut command = world.sub(&["--json", "--rch", utf8(&rch), "--metrics-file", utf8(&prom)]);
    let output = as_nobody(&mut command).output().expect("run");
    assert_eq!(output.status.code(), Some(74), "{}", stderr(&output));
    let document = one_document(&output);
    assert_eq!(document["exit_code"], 74);
    assert!(
        document["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot write into state folder")),
        "{document}"
    );
    assert_eq!(
        fs::read(&journal_path).expect("journal"),
        before,
        "no recovery ran"
    );
    // Its metrics say so (monitoring must see a broken install), and claim
    // no success.
    let metrics = fs::read_to_string(&prom).expect("metrics of a 74 before the summary");
    let label = format!("{{lease_dir=\"{}\"}}", world.leases().display());
    for line in [
        format!("rch_sweep_exit_code{label} 74"),
        format!("rch_sweep_last_success_timestamp_seconds{label} 0"),
        format!("rch_sweep_candidates{label} 0"),
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no `{line}` in\n{metrics}"
        );
    }
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o700)).expect("chmod back");

    // Made read-only while the recovery ran (as a full disk or an admin
    // would): the recovery stands, the save fails, the run is 74 and its
    // metrics report no success.
    let world = World::new();
    let id = world.will_complete(Journal::stale("hz4", 2 * HOUR_MS));
    let folder = world.state_file().parent().expect("folder").to_path_buf();
    let rch = world.fake_rch(
        "rch",
        &format!(
            "cp \"{done}/$3.json\" \"$leases/$3.json\" && chmod 0500 '{folder}'",
            done = world.path("done").display(),
            folder = folder.display()
        ),
    );
    world.hand_to_nobody();
    let lock = world.state_file().with_file_name("backoff.json.lock");
    fs::write(&lock, "").expect("lock file");
    give_to_nobody(&lock);
    let textfile = world.path("textfile");
    fs::create_dir(&textfile).expect("mkdir");
    give_to_nobody(&textfile);
    let prom = textfile.join("rch.prom");
    let mut command = world.sub(&["--json", "--rch", utf8(&rch), "--metrics-file", utf8(&prom)]);
    let output = as_nobody(&mut command).output().expect("run");
    assert_eq!(output.status.code(), Some(74), "{}", stderr(&output));
    let document = one_document(&output);
    assert_eq!(outcomes(&document), [(id, "recovered".to_owned())]);
    assert!(
        document["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot write state file")),
        "{document}"
    );
    let metrics = fs::read_to_string(&prom).expect("metrics");
    let label = format!("{{lease_dir=\"{}\"}}", world.leases().display());
    for line in [
        format!("rch_sweep_exit_code{label} 74"),
        format!("rch_sweep_last_success_timestamp_seconds{label} 0"),
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no `{line}` in\n{metrics}"
        );
    }
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o700)).expect("chmod back");
}

#[test]
fn dot_inside_job_leases_finds_the_state_beside_it() {
    let world = World::new();
    let id = world.will_complete(Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.completing_rch();
    let output = World::bare_command()
        .current_dir(world.leases())
        .args(["--json", "--lease-dir", ".", "--rch", utf8(&rch)])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let document = one_document(&output);
    assert_eq!(outcomes(&document), [(id, "recovered".to_owned())]);
    let leases = fs::canonicalize(world.leases()).expect("canonical");
    assert_eq!(document["lease_dir"], utf8(&leases));
    let beside = leases
        .parent()
        .expect("parent")
        .join("rch-sweep/backoff.json");
    assert_eq!(document["state_file"], utf8(&beside));
    assert!(beside.is_file());
}

#[test]
fn two_sweeps_of_one_directory_never_run_at_once() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let listed = files_in(&world.leases());
    let started = world.path("started");
    let rch = world.fake_rch(
        "rch",
        &format!("touch '{}'\nsleep 3\nexit 1", started.display()),
    );
    let first = world
        .command(&["--rch", utf8(&rch)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("first sweep");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !started.exists() {
        assert!(
            Instant::now() < deadline,
            "the first sweep never started rch"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Another path to the same directory, and another state file.
    let alias = world.path("alias");
    fs::create_dir(&alias).expect("mkdir");
    symlink(world.leases(), alias.join("job-leases")).expect("symlink");
    let output = World::bare_command()
        .arg("--lease-dir")
        .arg(alias.join("job-leases"))
        .args([
            "--state-file",
            utf8(&world.path("other-state/backoff.json")),
        ])
        .args(["--json", "--rch", utf8(&rch)])
        .output()
        .expect("second sweep");
    // The holder is named by the PID /proc/locks shows for the directory.
    assert_error_document(
        &output,
        75,
        &format!(
            "another rch-sweep (pid {}) is sweeping the lease directory",
            first.id()
        ),
    );
    assert!(
        stderr(&output).contains(&format!(
            "(resolved: {})",
            fs::canonicalize(world.leases())
                .expect("canonical")
                .display()
        )),
        "{}",
        stderr(&output)
    );
    assert!(
        !world.path("other-state").exists(),
        "the second sweep created its state folder"
    );
    // The lock is on the directory's own descriptor: no file in it.
    assert_eq!(
        files_in(&world.leases()),
        listed,
        "a file was created among the journals"
    );
    let first = first.wait_with_output().expect("first");
    assert_eq!(first.status.code(), Some(1));
}

#[test]
fn every_error_exit_prints_one_json_document() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.fake_rch("rch", "exit 0");
    // 78: no rch anywhere.
    let mut command = world.command(&["--json"]);
    command
        .env("PATH", "/nonexistent")
        .env("HOME", world.path("home"));
    assert_error_document(&command.output().expect("run"), 78, "was not found");
    // 78: an unknown state version.
    fs::create_dir_all(world.state_file().parent().expect("folder")).expect("mkdir");
    fs::write(world.state_file(), r#"{"version": 9}"#).expect("write");
    for args in [
        vec!["--json", "--rch", utf8(&rch)],
        vec!["status", "--json"],
    ] {
        let output = world.sub(&args).output().expect("run");
        assert_error_document(&output, 78, "version 9");
    }
    fs::remove_file(world.state_file()).expect("rm");
    // 74: a metrics folder that does not exist.
    let output = world.run(&[
        "--json",
        "--rch",
        utf8(&rch),
        "--metrics-file",
        utf8(&world.path("none/rch.prom")),
    ]);
    assert_error_document(&output, 74, "does not exist");
    // 78: a lease directory that is a file, for a run and for explain.
    let file = world.path("a-file");
    fs::write(&file, "").expect("write");
    for args in [vec!["--json"], vec!["explain", "--json", "rchw-x"]] {
        let mut command = World::bare_command();
        let (sub, rest) = match args[0] {
            "explain" => (Some("explain"), &args[1..]),
            _ => (None, &args[..]),
        };
        if let Some(sub) = sub {
            command.arg(sub);
        }
        command.arg("--lease-dir").arg(&file).args(rest);
        assert_error_document(&command.output().expect("run"), 78, "is not a directory");
    }
}

#[test]
fn a_state_home_named_for_the_lease_directory_is_pointed_out_by_every_command() {
    let world = World::new();
    let id = world.will_complete(Journal::stale("hz4", 2 * HOUR_MS));
    let rch = world.completing_rch();
    // The operator named the folder above job-leases.
    let state_home = world.dir.path();
    for args in [
        vec!["--dry-run"],
        vec!["--check"],
        vec!["status"],
        vec!["explain", id.as_str()],
        vec!["forget", "--all"],
    ] {
        let mut command = World::bare_command();
        let rest = match args[0] {
            sub @ ("status" | "explain" | "forget") => {
                command.arg(sub);
                &args[1..]
            }
            _ => &args[..],
        };
        command
            .arg("--lease-dir")
            .arg(state_home)
            .arg("--state-file")
            .arg(world.path("elsewhere/backoff.json"))
            .args(rest);
        let output = command.output().expect("run");
        let text = stderr(&output);
        assert!(
            text.contains("holds no journal but a job-leases folder")
                && text.contains(&world.leases().display().to_string()),
            "{args:?}: {text}"
        );
    }
    // A real run refuses the name (rch would not find these journals).
    let output = World::bare_command()
        .arg("--lease-dir")
        .arg(state_home)
        .args(["--rch", utf8(&rch)])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(78), "{}", stderr(&output));
    // ... and says where the leases are.
    let text = stderr(&output);
    assert!(
        text.contains("it holds a job-leases folder")
            && text.contains(&world.leases().display().to_string()),
        "{text}"
    );
}

#[test]
fn explain_of_a_journal_path_with_a_dot_after_it_is_missing() {
    let world = World::new();
    let path = world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let dotted = format!("{}/.", path.display());
    let output = world
        .sub(&["explain", "--json", &dotted])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let document = one_document(&output);
    let journal = &document["journals"][0];
    assert_eq!(journal["verdict"], "missing");
    assert!(
        journal["error"]
            .as_str()
            .is_some_and(|e| e.contains("Not a directory")),
        "{journal}"
    );
    // The journal itself is judged.
    let output = world
        .sub(&["explain", "--json", utf8(&path)])
        .output()
        .expect("run");
    assert_eq!(one_document(&output)["journals"][0]["verdict"], "candidate");
}

#[test]
fn status_keeps_every_line_of_an_error_under_its_entry_and_the_summary_times_the_scan() {
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&journal);
    let rch = world.fake_rch("rch", "printf 'first line\\nsecond line\\n' >&2\nexit 1");
    let output = world.run(&["--rch", utf8(&rch)]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let summary = stdout(&output);
    let last = summary.lines().last().expect("summary line");
    assert!(
        last.starts_with("scanned 1 journal in ") && last.contains("; the run took "),
        "{last}"
    );
    let output = world.sub(&["status"]).output().expect("status");
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|line| line.contains("last error: "))
        .unwrap_or_else(|| panic!("no last error in:\n{text}"));
    assert!(lines[at].ends_with("first line"), "{text}");
    let indent = lines[at].find("exit status").expect("error text");
    assert_eq!(
        lines[at + 1],
        format!("{}second line", " ".repeat(indent)),
        "{text}"
    );
    // A dry run scans but runs nothing: no run time.
    let output = world.run(&["--dry-run"]);
    assert!(
        !stdout(&output).contains("the run took"),
        "{}",
        stdout(&output)
    );
}

/// A lease directory this user may not list stops the commands that scan
/// it (74), not those that only read or rewrite the state.
#[test]
fn only_the_commands_that_scan_need_to_list_the_lease_directory() {
    if !root_or_skip("only_the_commands_that_scan") {
        return;
    }
    let world = World::new();
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&journal);
    state_with_entry(&world, &journal.id);
    world.hand_to_nobody();
    give_to_nobody(&world.state_file());
    fs::set_permissions(world.leases(), fs::Permissions::from_mode(0o300)).expect("chmod");
    let run = |args: &[&str]| {
        let mut command = world.sub(args);
        let output = as_nobody(&mut command).output().expect("run");
        (output.status.code(), stderr(&output))
    };
    for args in [vec!["--dry-run"], vec!["--check"]] {
        let (code, text) = run(&args);
        assert_eq!(code, Some(74), "{args:?}: {text}");
        assert!(
            text.contains("cannot read lease directory"),
            "{args:?}: {text}"
        );
    }
    let (code, text) = run(&["status"]);
    assert_eq!(code, Some(0), "status: {text}");
    let (code, text) = run(&["forget", journal.id.as_str()]);
    assert_eq!(code, Some(0), "forget: {text}");
    assert!(
        world.state()["leases"]
            .as_object()
            .expect("leases")
            .is_empty()
    );
    fs::set_permissions(world.leases(), fs::Permissions::from_mode(0o700)).expect("chmod back");
}

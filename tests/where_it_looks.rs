//! Where a sweep looks, and that it never looks in the wrong place in
//! silence: a path value beginning with `~` (no shell expanded it) is
//! refused by name; a lease directory named explicitly that does not exist
//! is said even under `--quiet`, and the metrics show every missing one;
//! rch's folder moved to other storage behind a link named `job-leases` is
//! swept through that link, as rch itself reaches it.

mod common;

use common::*;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Output;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// The value of `name{lease_dir="<lease_dir>"}` in a metrics file.
fn gauge(prom: &Path, name: &str, lease_dir: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(prom).expect("metrics file");
    let series = format!("{name}{{lease_dir=\"{}\"}} ", lease_dir.display());
    text.lines()
        .find_map(|line| line.strip_prefix(&series))
        .map(|value| value.parse().expect("a number"))
}

/// The commands a timer, cron or an operator runs, each with `--json` where
/// it has it (`forget` has not).
fn commands(id: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["--json"],
        vec!["--dry-run", "--json"],
        vec!["--check", "--json"],
        vec!["status", "--json"],
        vec!["explain", "--json", id],
        vec!["doctor", "--json"],
        vec!["forget", "--all"],
    ]
}

/// A 78 naming `what`: the JSON error document where the command has
/// `--json`, the message on stderr either way.
fn assert_refused(output: &Output, args: &[&str], what: &str) {
    let context = format!("{args:?}: {}", stderr(output));
    assert_eq!(output.status.code(), Some(78), "{context}");
    assert!(
        stderr(output).contains(&format!("{what} is \"~")),
        "{context}"
    );
    assert!(stderr(output).contains("begins with `~`"), "{context}");
    if args.contains(&"--json") {
        assert_error_document(output, 78, what);
    }
}

#[test]
fn a_path_value_beginning_with_a_tilde_is_refused_by_name_by_every_command() {
    let world = World::new();
    let home = world.path("home");
    let cwd = world.path("cwd");
    for dir in [&home, &cwd, &world.path("textfile")] {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    // What the variables would have meant, had a shell expanded them: a
    // real lease directory with a due lease.
    let leases = home.join(".local/state/rch/job-leases");
    std::fs::create_dir_all(&leases).expect("mkdir");
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    std::fs::write(leases.join(journal.file_name()), journal.text()).expect("journal");
    let started = world.path("started");
    let rch = world.fake_rch("rch", &format!("touch '{}'\nexit 1", started.display()));
    let before = snapshot(world.dir.path());
    let run = |env: &[(&str, &str)], args: &[&str]| {
        let mut command = World::bare_command();
        command
            .current_dir(&cwd)
            .env("HOME", &home)
            .env("PATH", "/usr/bin:/bin")
            .envs(env.iter().copied());
        if let Some(sub) = args
            .first()
            .filter(|sub| matches!(**sub, "status" | "explain" | "doctor" | "forget"))
        {
            command.arg(sub).args(&args[1..]);
        } else {
            command.args(args);
        }
        if !args
            .iter()
            .any(|a| matches!(*a, "status" | "explain" | "forget" | "--rch"))
            && !env.iter().any(|(name, _)| *name == "RCH_SWEEP_RCH")
        {
            command.arg("--rch").arg(&rch);
        }
        command.output().expect("run rch-sweep")
    };

    // As a unit's Environment= or a quoted crontab value passes them.
    for variable in [
        "RCH_SWEEP_LEASE_DIR",
        "RCH_SWEEP_STATE_FILE",
        "RCH_SWEEP_RCH",
        "RCH_SOCKET_PATH",
        "RCH_SWEEP_METRICS_FILE",
        "RCH_STATE_HOME",
        "XDG_STATE_HOME",
    ] {
        let value = match variable {
            "RCH_SWEEP_LEASE_DIR" => "~/.local/state/rch/job-leases",
            "RCH_SWEEP_METRICS_FILE" => "~/textfile/rch.prom",
            "RCH_STATE_HOME" | "XDG_STATE_HOME" => "~/.local/state/rch",
            "RCH_SWEEP_RCH" => "~/bin/rch",
            _ => "~/whatever",
        };
        for args in commands(&journal.id) {
            let output = run(&[(variable, value)], &args);
            assert_refused(&output, &args, variable);
            assert!(
                stderr(&output).contains(&format!("({}/", home.display())),
                "the fix names the path meant: {}",
                stderr(&output)
            );
        }
    }

    // As an option no shell expanded (`--lease-dir=~/...`, a quoted value).
    let options: [(&str, &str, &[&str]); 5] = [
        ("--lease-dir", "~/.local/state/rch/job-leases", &[]),
        ("--state-file", "~/state/backoff.json", &[]),
        ("--rch", "~/bin/rch", &["status", "explain", "forget"]),
        ("--socket", "~/rch.sock", &["status", "explain", "forget"]),
        (
            "--metrics-file",
            "~/textfile/rch.prom",
            &["status", "explain", "forget"],
        ),
    ];
    for (flag, value, not_taken_by) in options {
        for mut args in commands(&journal.id) {
            if args.first().is_some_and(|sub| not_taken_by.contains(sub)) {
                continue;
            }
            args.push(flag);
            args.push(value);
            let output = run(&[], &args);
            assert_refused(&output, &args, flag);
        }
    }

    assert!(!started.exists(), "rch was started");
    assert_eq!(snapshot(world.dir.path()), before, "something was created");
    assert!(files_in(&cwd).is_empty(), "a folder named ~ was made");

    // The same directory named as the shell would have expanded it works.
    let output = run(&[("RCH_SWEEP_LEASE_DIR", utf8(&leases))], &["--dry-run"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // A `~` inside a value is no shell's business and is taken as it is.
    let output = run(
        &[("RCH_SWEEP_STATE_FILE", utf8(&world.path("state~/b.json")))],
        &["--dry-run"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_named_lease_directory_that_does_not_exist_is_said_even_under_quiet() {
    let world = World::new();
    let textfile = world.path("textfile");
    std::fs::create_dir(&textfile).expect("mkdir");
    let prom = textfile.join("rch.prom");
    let rch = world.fake_rch("rch", "exit 1");
    // The typo of the issue: job-lease for job-leases.
    let typo = world.path("job-lease");
    for (args, metrics) in [
        (vec!["--quiet"], true),
        (vec!["--quiet", "--dry-run"], false),
        (vec!["--quiet", "--check"], false),
    ] {
        let mut command = World::bare_command();
        command
            .args(&args)
            .arg("--lease-dir")
            .arg(&typo)
            .arg("--rch")
            .arg(&rch)
            .arg("--metrics-file")
            .arg(&prom);
        let output = command.output().expect("run");
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(stdout(&output), "", "--quiet prints no summary");
        let said = stderr(&output);
        assert!(
            said.contains("warning: lease directory")
                && said.contains(utf8(&typo))
                && said.contains("does not exist")
                && said.contains("typo"),
            "{args:?}: {said}"
        );
        // The run writes its metrics, and they show nothing was there.
        if metrics {
            assert_eq!(
                gauge(&prom, "rch_sweep_lease_dir_present", &typo),
                Some(0.0)
            );
            assert_eq!(gauge(&prom, "rch_sweep_exit_code", &typo), Some(0.0));
        }
    }
    // The same run through RCH_SWEEP_LEASE_DIR: as named as the option.
    let output = World::bare_command()
        .env("RCH_SWEEP_LEASE_DIR", &typo)
        .args(["--quiet", "--rch", utf8(&rch)])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("does not exist"),
        "{}",
        stderr(&output)
    );

    // rch's default folder not there yet (no build so far) is no news under
    // --quiet: nothing was named, nothing can be a typo. The metrics still
    // say it.
    let home = world.path("home");
    std::fs::create_dir(&home).expect("mkdir");
    let fresh = textfile.join("fresh.prom");
    let output = World::bare_command()
        .env("HOME", &home)
        .args([
            "--quiet",
            "--rch",
            utf8(&rch),
            "--metrics-file",
            utf8(&fresh),
        ])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let default = home.join(".local/state/rch/job-leases");
    assert_eq!(
        gauge(&fresh, "rch_sweep_lease_dir_present", &default),
        Some(0.0)
    );

    // Once the folder is there, the gauge is 1.
    let output = world.run(&[
        "--quiet",
        "--rch",
        utf8(&rch),
        "--metrics-file",
        utf8(&prom),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let leases = std::fs::canonicalize(world.leases()).expect("canonical");
    assert_eq!(
        gauge(&prom, "rch_sweep_lease_dir_present", &leases),
        Some(1.0)
    );
}

/// rch's folder moved to other storage: `<state home>/job-leases` is a link
/// to `srv/dev-leases`. Returns the state home and the storage, both
/// resolved.
fn moved_storage(world: &World) -> (PathBuf, PathBuf) {
    let storage = world.path("srv/dev-leases");
    let state_home = world.path("home/.local/state/rch");
    std::fs::create_dir_all(&storage).expect("mkdir storage");
    std::fs::create_dir_all(&state_home).expect("mkdir state home");
    symlink(&storage, state_home.join("job-leases")).expect("symlink");
    (
        std::fs::canonicalize(&state_home).expect("canonical"),
        std::fs::canonicalize(&storage).expect("canonical"),
    )
}

#[test]
fn storage_moved_behind_a_link_named_job_leases_is_swept_through_that_link() {
    let world = World::new();
    let (state_home, storage) = moved_storage(&world);
    // The home is reached through a link of its own: the state home handed
    // to rch is resolved.
    symlink(world.path("home"), world.path("home-link")).expect("symlink");
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    let (id, file) = (journal.id.clone(), journal.file_name());
    std::fs::write(storage.join(&file), journal.text()).expect("journal");
    let done = world.path("done");
    std::fs::create_dir(&done).expect("mkdir");
    let completed = journal.completed(0).text();
    std::fs::write(done.join(&file), &completed).expect("completed");
    // Completes the journal where rch finds it: $RCH_STATE_HOME/job-leases,
    // the link.
    let seen = world.path("seen");
    let rch = world.fake_rch(
        "rch",
        &format!(
            "echo \"$RCH_STATE_HOME\" > '{seen}'\ncp '{done}'/\"$3.json\" \"$leases/$3.json\"",
            seen = seen.display(),
            done = done.display()
        ),
    );
    let textfile = world.path("textfile");
    std::fs::create_dir(&textfile).expect("mkdir");
    let prom = textfile.join("rch.prom");
    // rch's default, as a timer has it: $HOME/.local/state/rch/job-leases.
    let output = World::bare_command()
        .env("HOME", world.path("home-link"))
        .args(["--json", "--rch", utf8(&rch), "--metrics-file", utf8(&prom)])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let document = one_document(&output);
    assert_eq!(outcomes(&document), [(id, "recovered".into())]);
    assert_eq!(
        std::fs::read_to_string(storage.join(&file)).expect("journal"),
        completed,
        "rch completed the journal in the storage, through the link"
    );
    assert_eq!(
        std::fs::read_to_string(&seen).expect("seen").trim(),
        utf8(&state_home),
        "the child's RCH_STATE_HOME is the link's folder, resolved"
    );
    // The state sits beside the link, in rch's state home, not beside the
    // storage; the label names the storage.
    let state_file = state_home.join("rch-sweep/backoff.json");
    assert_eq!(document["state_file"], utf8(&state_file));
    assert!(state_file.is_file());
    assert!(!world.path("srv/rch-sweep").exists());
    assert_eq!(document["lease_dir"], utf8(&storage));
    assert_eq!(
        gauge(&prom, "rch_sweep_lease_dir_present", &storage),
        Some(1.0)
    );

    // Named explicitly, and with a trailing slash, it is the same.
    let again = Journal::stale("w2", 2 * HOUR_MS);
    let again_id = again.id.clone();
    std::fs::write(storage.join(again.file_name()), again.text()).expect("journal");
    std::fs::write(done.join(again.file_name()), again.completed(0).text()).expect("done");
    let output = World::bare_command()
        .arg("--json")
        .arg("--lease-dir")
        .arg(format!(
            "{}/",
            world
                .path("home-link/.local/state/rch/job-leases")
                .display()
        ))
        .args(["--rch", utf8(&rch)])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let document = one_document(&output);
    assert_eq!(outcomes(&document), [(again_id, "recovered".into())]);
    assert_eq!(document["state_file"], utf8(&state_file));
}

#[test]
fn a_link_not_itself_named_job_leases_is_still_judged_by_what_it_resolves_to() {
    let world = World::new();
    let (state_home, storage) = moved_storage(&world);
    let journal = Journal::stale("hz4", 2 * HOUR_MS);
    std::fs::write(storage.join(journal.file_name()), journal.text()).expect("journal");
    let started = world.path("started");
    let rch = world.fake_rch("rch", &format!("touch '{}'", started.display()));
    // A link of another name to the storage, and one of another name to
    // the job-leases link: rch finds neither as <state home>/job-leases.
    symlink(&storage, world.path("dev-link")).expect("symlink");
    symlink(state_home.join("job-leases"), world.path("job-leases-link")).expect("symlink");
    for given in [world.path("dev-link"), world.path("job-leases-link")] {
        let output = World::bare_command()
            .arg("--lease-dir")
            .arg(&given)
            .args(["--json", "--rch", utf8(&rch)])
            .output()
            .expect("run");
        assert_error_document(&output, 78, "is not named job-leases");
        assert!(
            stderr(&output).contains("a link named job-leases"),
            "the fix can be followed: {}",
            stderr(&output)
        );
        // A dry run accepts any folder.
        let output = World::bare_command()
            .arg("--lease-dir")
            .arg(&given)
            .args(["--dry-run", "--rch", utf8(&rch)])
            .output()
            .expect("run");
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    assert!(!started.exists());
    assert!(!state_home.join("rch-sweep").exists());
}

//! `rch-sweep completions SHELL`, driven through the real binary: each
//! script is one its shell accepts (`bash -n`, `zsh -n`, `fish -n`, each
//! shown to reject a broken script), the bash one really completes when a
//! shell calls it, and a shell the tool does not know is a usage error.

mod common;

use common::*;
use std::fs;
use std::io::ErrorKind;
use std::path::Path;
use std::process::Command;

/// `rch-sweep completions <shell>`: its script, which must be printed with
/// exit 0 and nothing on stderr.
fn script(shell: &str) -> String {
    let output = World::bare_command()
        .args(["completions", shell])
        .output()
        .expect("run rch-sweep");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{shell}: {}",
        stderr(&output)
    );
    assert_eq!(stderr(&output), "", "{shell}");
    let text = stdout(&output);
    assert!(text.len() > 200, "{shell}: {text}");
    text
}

/// `<shell> -n <file>`: None when the shell is not installed, else whether
/// it accepted the file and what it said.
fn syntax_check(shell: &str, file: &Path) -> Option<(bool, String)> {
    match Command::new(shell).arg("-n").arg(file).output() {
        Ok(output) => Some((
            output.status.success(),
            format!("{}{}", stdout(&output), stderr(&output)),
        )),
        Err(error) if error.kind() == ErrorKind::NotFound => None,
        Err(error) => panic!("cannot run {shell}: {error}"),
    }
}

/// The script parses in its shell, and the same check rejects the script
/// with an unterminated construct appended, so a shell that accepts
/// anything cannot pass the test.
fn accepted_by_its_shell(shell: &str, broken_tail: &str) {
    let text = script(shell);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join(format!("rch-sweep.{shell}"));
    fs::write(&file, &text).expect("write");
    let Some((ok, said)) = syntax_check(shell, &file) else {
        eprintln!("skipped: {shell} is not installed (CI installs it)");
        return;
    };
    assert!(ok, "{shell} -n rejects the script: {said}");
    let broken = dir.path().join(format!("broken.{shell}"));
    fs::write(&broken, format!("{text}\n{broken_tail}\n")).expect("write");
    let (ok, said) = syntax_check(shell, &broken).expect("ran once already");
    assert!(!ok, "{shell} -n accepted a broken script: {said}");
}

#[test]
fn the_bash_script_is_valid_bash() {
    accepted_by_its_shell("bash", "if true; then");
}

#[test]
fn the_zsh_script_is_valid_zsh() {
    let text = script("zsh");
    assert!(text.starts_with("#compdef rch-sweep"), "{text}");
    accepted_by_its_shell("zsh", "if true; then");
}

#[test]
fn the_fish_script_is_valid_fish() {
    let text = script("fish");
    assert!(text.contains("complete -c rch-sweep"), "{text}");
    accepted_by_its_shell("fish", "if true");
}

/// What bash offers for the words of a command line, the cursor on the
/// last one: the script is sourced and its completion function called the
/// way bash's programmable completion calls it.
fn bash_completes(words: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("rch-sweep.bash");
    fs::write(&file, script("bash")).expect("write");
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let program = format!(
        "source \"$1\" || exit 3\n\
         func=$(complete -p rch-sweep | sed -n 's/.*-F \\([^ ]*\\).*/\\1/p')\n\
         [ -n \"$func\" ] || exit 4\n\
         COMP_WORDS=({words})\n\
         COMP_CWORD={cword}\n\
         COMP_LINE=\"${{COMP_WORDS[*]}}\"\n\
         COMP_POINT=${{#COMP_LINE}}\n\
         \"$func\" rch-sweep \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        words = quoted.join(" ")
    );
    let output = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program, "bash"])
        .arg(&file)
        .output()
        .expect("run bash");
    assert!(output.status.success(), "{words:?}: {}", stderr(&output));
    stdout(&output)
        .lines()
        .map(|line| line.trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect()
}

#[test]
fn bash_completes_subcommands_shells_and_flags() {
    assert_eq!(bash_completes(&["rch-sweep", "st"]), ["status"]);
    assert_eq!(bash_completes(&["rch-sweep", "comp"]), ["completions"]);
    assert_eq!(
        bash_completes(&["rch-sweep", "completions", ""]),
        ["-h", "--help", "bash", "zsh", "fish"]
    );
    assert_eq!(
        bash_completes(&["rch-sweep", "--max-rec"]),
        ["--max-recoveries"]
    );
    assert_eq!(bash_completes(&["rch-sweep", "status", "--js"]), ["--json"]);
    // The options of run may stand before a subcommand (SPEC, Synopsis):
    // the subcommand and its own flags are still completed after them.
    assert_eq!(
        bash_completes(&["rch-sweep", "--lease-dir", "/tmp/x", "st"]),
        ["status"]
    );
    assert_eq!(
        bash_completes(&["rch-sweep", "--lease-dir", "/tmp/x", "status", "--js"]),
        ["--json"]
    );
}

/// What fish offers for a command line, as `complete -C` shows it (one
/// candidate a line, a tab before its description): the script sourced
/// into a fish with an empty home, run in an empty folder so no file name
/// can be offered. None when fish is not installed.
fn fish_completes(line: &str) -> Option<Vec<String>> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("rch-sweep.fish");
    fs::write(&file, script("fish")).expect("write");
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).expect("mkdir");
    let output = match Command::new("fish")
        .args(["--no-config", "-c", "source $argv[1]; complete -C$argv[2]"])
        .arg(&file)
        .arg(line)
        .current_dir(&empty)
        .env("HOME", &empty)
        .output()
    {
        Ok(output) => output,
        Err(error) if error.kind() == ErrorKind::NotFound => return None,
        Err(error) => panic!("cannot run fish: {error}"),
    };
    assert!(output.status.success(), "{line}: {}", stderr(&output));
    Some(
        stdout(&output)
            .lines()
            .map(|line| line.split('\t').next().unwrap_or_default().to_owned())
            .collect(),
    )
}

#[test]
fn fish_completes_the_shells_of_completions_and_the_routes_of_doctor() {
    let Some(mut shells) = fish_completes("rch-sweep completions ") else {
        eprintln!("skipped: fish is not installed (CI installs it)");
        return;
    };
    // fish sorts what it offers.
    shells.sort();
    assert_eq!(shells, ["bash", "fish", "zsh"]);
    assert_eq!(
        fish_completes("rch-sweep completions f").expect("fish"),
        ["fish"]
    );
    // Once a shell is given, nothing more is offered.
    assert_eq!(
        fish_completes("rch-sweep completions bash ").expect("fish"),
        Vec::<String>::new()
    );
    let mut routes = fish_completes("rch-sweep doctor --as ").expect("fish");
    routes.sort();
    assert_eq!(routes, ["cron", "system-timer", "user-timer"]);
}

/// `--in-route` is how `doctor --as` tells the doctor it re-executes which
/// route's environment it runs in (issue 43): hidden from `--help`, and
/// offered by no completion script; doctor's other options still are.
#[test]
fn the_hidden_in_route_option_is_never_offered() {
    for shell in ["bash", "zsh", "fish"] {
        let text = script(shell);
        assert!(!text.contains("in-route"), "{shell}: {text}");
        assert!(text.contains("max-recoveries"), "{shell}: {text}");
    }
    assert_eq!(
        bash_completes(&["rch-sweep", "doctor", "--in"]),
        Vec::<String>::new()
    );
    assert_eq!(bash_completes(&["rch-sweep", "doctor", "--a"]), ["--as"]);
    if let Some(offered) = fish_completes("rch-sweep doctor --in") {
        assert_eq!(offered, Vec::<String>::new());
    }
}

#[test]
fn an_unknown_or_missing_shell_is_a_usage_error() {
    for args in [
        &["completions", "powershell"][..],
        &["completions", "Bash"],
        &["completions"],
        &["completions", "bash", "zsh"],
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
        .args(["completions", "powershell"])
        .output()
        .expect("run");
    assert!(
        stderr(&output).contains("[possible values: bash, zsh, fish]"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn run_flags_do_not_mix_with_completions_but_their_variables_do_not_matter() {
    for flag in ["--quiet", "--dry-run", "--json"] {
        let output = World::bare_command()
            .args([flag, "completions", "bash"])
            .output()
            .expect("run");
        assert_eq!(output.status.code(), Some(2), "{flag}: {}", stderr(&output));
    }
    // The run's variables, even ones a run would refuse, leave it alone.
    let output = World::bare_command()
        .args(["completions", "fish"])
        .env("RCH_SWEEP_LEASE_DIR", "/nonexistent/job-leases")
        .env("RCH_SWEEP_RCH", "/nonexistent/rch")
        .env("RCH_SWEEP_METRICS_FILE", "/nonexistent/metrics.txt")
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), script("fish"));
}

#[test]
fn a_script_that_cannot_be_written_is_an_error_not_silence() {
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("open /dev/full");
    let output = World::bare_command()
        .args(["completions", "bash"])
        .stdout(full)
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(74), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("cannot write the completion script"),
        "{}",
        stderr(&output)
    );
}

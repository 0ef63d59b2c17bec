//! What operators run rch-sweep with: the man page checked against the
//! binary's own help, the systemd units (their settings and
//! `systemd-analyze verify`), the Prometheus metrics file of real runs,
//! journald priority prefixes, `--version` and `--help`.

mod common;

use clap::CommandFactory;
use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const MAN: &str = "man/rch-sweep.1";
const USER_SERVICE: &str = "systemd/rch-sweep.service";
const USER_TIMER: &str = "systemd/rch-sweep.timer";
const SYSTEM_SERVICE: &str = "systemd/rch-sweep@.service";
const SYSTEM_TIMER: &str = "systemd/rch-sweep@.timer";

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn read(path: &str) -> String {
    fs::read_to_string(repo(path)).unwrap_or_else(|error| panic!("read {path}: {error}"))
}

/// `rch-sweep <args>` that must succeed; its stdout.
fn help(args: &[&str]) -> String {
    let output = World::bare_command()
        .args(args)
        .output()
        .expect("run rch-sweep");
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    stdout(&output)
}

/// The help texts of the command and each subcommand.
fn all_help() -> Vec<String> {
    [
        &["--help"][..],
        &["run", "--help"],
        &["status", "--help"],
        &["forget", "--help"],
        &["completions", "--help"],
        &["explain", "--help"],
        &["doctor", "--help"],
    ]
    .iter()
    .map(|args| help(args))
    .collect()
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_'
}

/// Every `--long-option` a text names (`--[a-z-]+`, not inside a word).
fn long_options(text: &str) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    let mut found = BTreeSet::new();
    let mut at = 0;
    while let Some(offset) = text[at..].find("--") {
        let start = at + offset;
        let mut end = start + 2;
        while end < bytes.len() && (bytes[end].is_ascii_lowercase() || bytes[end] == b'-') {
            end += 1;
        }
        let option = text[start..end].trim_end_matches('-');
        if option.len() > 2 && (start == 0 || !is_word(bytes[start - 1])) {
            found.insert(option.to_owned());
        }
        at = end.max(start + 2);
    }
    found
}

/// Whether `text` names `word` as a whole (`--json` is not in `--jsonl`).
fn mentions(text: &str, word: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(word).any(|(at, _)| {
        let end = at + word.len();
        (at == 0 || !is_word(bytes[at - 1])) && (end == bytes.len() || !is_word(bytes[end]))
    })
}

// ---------------------------------------------------------------------------
// The man page, read as text

/// The roff source with `\-` written as `-`, for searching option names.
fn man_source() -> String {
    read(MAN).replace("\\-", "-")
}

/// Arguments of a macro line, honouring double quotes.
fn roff_args(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return args;
        };
        let mut arg = String::new();
        if first == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        arg.push('"');
                    }
                    '"' => break,
                    c => arg.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ' ' {
                    break;
                }
                arg.push(c);
                chars.next();
            }
        }
        args.push(arg);
    }
}

/// The words a roff line prints (None for comments and layout macros).
/// Near enough to compare defaults and names, not a formatter.
fn roff_line(line: &str) -> Option<String> {
    if line.starts_with(".\\\"") {
        return None;
    }
    let text = match line.strip_prefix('.') {
        Some(rest) => {
            let (name, args) = rest.split_once(' ').unwrap_or((rest, ""));
            let args = roff_args(args);
            match name {
                "B" | "I" | "SH" | "SS" | "TH" => args.join(" "),
                "BR" | "RB" | "BI" | "IB" | "IR" | "RI" => args.concat(),
                _ => return None,
            }
        }
        None => line.to_owned(),
    };
    let mut text = text;
    for (escape, plain) in [
        ("\\-", "-"),
        ("\\(mu", "x"),
        ("\\(mi", "-"),
        ("\\(lq", "\""),
        ("\\(rq", "\""),
        ("\\(aq", "'"),
        ("\\ ", " "),
        ("\\|", ""),
        ("\\%", ""),
        ("\\&", ""),
        ("\\fB", ""),
        ("\\fI", ""),
        ("\\fR", ""),
        ("\\fP", ""),
    ] {
        text = text.replace(escape, plain);
    }
    Some(text)
}

/// One `.TP` item of the man page: its section, its tag and its body, as text.
struct Item {
    section: String,
    tag: String,
    body: String,
}

fn man_items() -> Vec<Item> {
    let source = read(MAN);
    let mut items: Vec<Item> = Vec::new();
    let mut section = String::new();
    let mut lines = source.lines();
    let mut open = false;
    while let Some(line) = lines.next() {
        if line.starts_with(".SH ") {
            section = roff_line(line).unwrap_or_default();
            open = false;
        } else if line == ".TP" || line.starts_with(".TP ") {
            let tag = lines.by_ref().find_map(roff_line).unwrap_or_default();
            items.push(Item {
                section: section.clone(),
                tag,
                body: String::new(),
            });
            open = true;
        } else if [".SS", ".PP", ".RS", ".RE", ".IP"]
            .iter()
            .any(|m| line == *m || line.starts_with(&format!("{m} ")))
        {
            open = false;
        } else if open && let (Some(text), Some(item)) = (roff_line(line), items.last_mut()) {
            item.body.push(' ');
            item.body.push_str(&text);
        }
    }
    items
}

/// One option's entry in the long `--help`: its long name, `[default: ]`
/// and `[env: ]` when clap shows them.
#[derive(Debug)]
struct HelpEntry {
    option: String,
    default: Option<String>,
    env: Option<String>,
}

fn help_entries(long_help: &str) -> Vec<HelpEntry> {
    let mut entries: Vec<HelpEntry> = Vec::new();
    for line in long_help.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('-') && line.starts_with("  ") {
            // `--lease-dir <DIR>` or `-v, --verbose`: one long option.
            if let Some(option) = long_options(trimmed).into_iter().next() {
                entries.push(HelpEntry {
                    option,
                    default: None,
                    env: None,
                });
            }
        } else if let Some(entry) = entries.last_mut() {
            if let Some(value) = trimmed
                .strip_prefix("[default: ")
                .and_then(|rest| rest.strip_suffix(']'))
            {
                entry.default = Some(value.to_owned());
            } else if let Some(name) = trimmed
                .strip_prefix("[env: ")
                .and_then(|rest| rest.split('=').next())
            {
                entry.env = Some(name.to_owned());
            }
        }
    }
    entries
}

/// The clap definition, built (help and version included).
fn definition() -> clap::Command {
    let mut command = rch_sweep::cli::Cli::command();
    command.build();
    command
}

/// The long options of a clap command (not the hidden ones, which no help
/// shows: `doctor --in-route` is how `doctor --as` talks to itself).
fn long_names(command: &clap::Command) -> BTreeSet<String> {
    command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set())
        .filter_map(|arg| arg.get_long().map(|long| format!("--{long}")))
        .collect()
}

#[test]
fn the_man_page_names_every_long_option_of_the_help() {
    let mut options = BTreeSet::new();
    for text in all_help() {
        options.extend(long_options(&text));
    }
    // The parse must see at least what clap defines, or this test proves nothing.
    let definition = definition();
    let defined: BTreeSet<String> = std::iter::once(&definition)
        .chain(definition.get_subcommands())
        .flat_map(long_names)
        .collect();
    assert!(
        defined.is_subset(&options),
        "help parsing missed {:?}",
        defined.difference(&options).collect::<Vec<_>>()
    );
    assert!(options.contains("--timeout-secs"), "{options:?}");
    let man = man_source();
    let missing: Vec<&String> = options.iter().filter(|o| !mentions(&man, o)).collect();
    assert!(
        missing.is_empty(),
        "{MAN} does not mention {missing:?} (all: {options:?})"
    );
}

#[test]
fn the_man_page_gives_the_binarys_defaults_variables_exit_codes_and_version() {
    let items = man_items();
    let option_item = |option: &str| {
        items
            .iter()
            .find(|item| item.section == "OPTIONS" && mentions(&item.tag, option))
            .unwrap_or_else(|| panic!("OPTIONS of {MAN} has no item for {option}"))
    };
    let entries = help_entries(&help(&["--help"]));
    // The parse must find every option of the top-level command, or this
    // test proves nothing.
    let top_level = long_names(&definition());
    let parsed: BTreeSet<String> = entries.iter().map(|e| e.option.clone()).collect();
    assert_eq!(parsed, top_level, "{entries:?}");
    assert!(entries.iter().any(|e| e.default.is_some()), "{entries:?}");
    let mut variables: BTreeSet<String> = BTreeSet::new();
    for entry in &entries {
        let item = option_item(&entry.option);
        if let Some(default) = &entry.default {
            let expected = format!("Default: {default}");
            assert!(
                mentions(&item.body, &expected),
                "{}: --help says [default: {default}], {MAN} says: {}",
                entry.option,
                item.body
            );
        }
        if let Some(env) = &entry.env {
            assert!(
                mentions(&item.body, env),
                "{}: --help names {env}, {MAN} does not: {}",
                entry.option,
                item.body
            );
            variables.insert(env.clone());
        }
    }
    for text in all_help() {
        for (at, _) in text.match_indices('$') {
            let name: String = text[at + 1..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect();
            if !name.is_empty() {
                variables.insert(name);
            }
        }
    }
    // Read by log.rs (journald) and config.rs (finding rch), not named in --help.
    variables.extend(["JOURNAL_STREAM".to_owned(), "PATH".to_owned()]);
    let documented: BTreeSet<String> = items
        .iter()
        .filter(|item| item.section == "ENVIRONMENT")
        .map(|item| item.tag.clone())
        .collect();
    assert!(variables.len() >= 10, "{variables:?}");
    assert!(
        variables.is_subset(&documented),
        "ENVIRONMENT of {MAN} lacks {:?}",
        variables.difference(&documented).collect::<Vec<_>>()
    );

    let help = help(&["--help"]);
    let exit_line = help
        .lines()
        .find_map(|line| line.strip_prefix("Exit status: "))
        .expect("--help lists the exit statuses");
    let codes: BTreeSet<String> = exit_line
        .split(", ")
        .filter_map(|part| part.split(' ').next())
        .map(str::to_owned)
        .collect();
    let documented: BTreeSet<String> = items
        .iter()
        .filter(|item| item.section == "EXIT STATUS")
        .map(|item| item.tag.clone())
        .collect();
    assert_eq!(
        codes,
        ["0", "1", "2", "74", "75", "78", "128+N"]
            .map(str::to_owned)
            .into(),
        "{exit_line}"
    );
    assert_eq!(documented, codes, "EXIT STATUS of {MAN}");

    let title = read(MAN)
        .lines()
        .find(|line| line.starts_with(".TH "))
        .and_then(roff_line)
        .expect(".TH");
    let version = format!("rch-sweep {}", env!("CARGO_PKG_VERSION"));
    assert!(title.contains(&version), "{title} should name {version}");
}

/// The keys of a JSON document, recursively. The keys of `skipped` (skip
/// reasons, documented as such) and of `status --json`'s top level (wrapper
/// ids) are data, not schema: only the values below them are walked.
fn json_keys(value: &serde_json::Value, out: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                out.insert(key.clone());
                if key != "skipped" {
                    json_keys(value, out);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| json_keys(item, out)),
        _ => {}
    }
}

/// Runs the binary and parses its stdout as one JSON document.
fn document(mut command: Command, expected_code: i32) -> serde_json::Value {
    let output = command.output().expect("run rch-sweep");
    assert_eq!(
        output.status.code(),
        Some(expected_code),
        "{}",
        stderr(&output)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("not one JSON document ({error}): {}", stdout(&output)))
}

#[test]
fn every_key_the_binary_emits_in_json_is_documented_in_the_man_page() {
    let world = World::new();
    let stranded = Journal::stale("hz4", 2 * HOUR_MS);
    world.add(&stranded);
    // Skipped with a canonical name (so with wrapper_id), and without one.
    world.write(&format!("{}.json", new_id()), "{}");
    world.write("notes.json", "{}");
    let rch = world.fake_rch("rch", "echo 'worker unreachable' >&2\nexit 1");
    let rch = rch.to_str().expect("utf8");

    let mut documents: Vec<(&str, serde_json::Value)> = vec![
        (
            "dry run",
            document(world.command(&["--json", "--verbose", "--dry-run"]), 0),
        ),
        (
            "run",
            document(world.command(&["--json", "--verbose", "--rch", rch]), 1),
        ),
        (
            "run, backing off",
            document(world.command(&["--json", "--verbose", "--rch", rch]), 0),
        ),
    ];
    let mut status = World::bare_command();
    status
        .args(["status", "--json", "--state-file"])
        .arg(world.state_file());
    let status = document(status, 0);
    assert!(status["leases"].get(&stranded.id).is_some(), "{status}");
    documents.push(("status --json", status));
    let mut doctor = World::bare_command();
    doctor
        .args(["doctor", "--json", "--rch", rch, "--lease-dir"])
        .arg(world.leases())
        .arg("--state-file")
        .arg(world.state_file());
    documents.push(("doctor --json", document(doctor, 0)));
    {
        use std::os::fd::AsRawFd;
        let lock = fs::OpenOptions::new()
            .write(true)
            .open(world.state_file().with_file_name("backoff.json.lock"))
            .expect("open lock");
        // SAFETY: a valid open descriptor.
        let held = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_eq!(held, 0);
        documents.push((
            "lock held",
            document(world.command(&["--json", "--rch", rch]), 75),
        ));
    }

    let documented: BTreeSet<String> = man_items()
        .into_iter()
        .filter(|item| item.section == "JSON OUTPUT")
        .flat_map(|item| {
            item.tag
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let mut all = BTreeSet::new();
    for (name, document) in &documents {
        let mut keys = BTreeSet::new();
        if *name == "status --json" {
            // The keys of `leases` are wrapper ids, not names to document.
            let object = document.as_object().expect("object");
            keys.extend(object.keys().cloned());
            for entry in object["leases"].as_object().expect("leases").values() {
                json_keys(entry, &mut keys);
            }
        } else {
            json_keys(document, &mut keys);
        }
        let missing: Vec<&String> = keys.difference(&documented).collect();
        assert!(
            missing.is_empty(),
            "{name}: JSON OUTPUT of {MAN} does not document {missing:?}\n{document}"
        );
        all.extend(keys);
    }
    // The documents did show what they were meant to, or this proves little.
    for key in [
        "checks",
        "finding",
        "fix",
        "would_recover",
        "interrupted",
        "error",
        "failures",
        "next_attempt_unix_ms",
        "file",
        "reason",
        "last_error",
        "due",
        "exit_code",
    ] {
        assert!(all.contains(key), "no document emitted {key}: {all:?}");
    }
    let page = man_source();
    assert!(
        mentions(&page, "2^53") && mentions(&page, "jq 1.7"),
        "{MAN} must warn about integers beyond 2^53"
    );
}

/// Runs groff's lint on a page: None when groff is absent.
fn groff_warnings(page: &Path) -> Option<(bool, String)> {
    match Command::new("groff")
        .args(["-t", "-man", "-ww", "-z"])
        .arg(page)
        .output()
    {
        Ok(output) => Some((output.status.success(), stderr(&output))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => panic!("cannot run groff: {error}"),
    }
}

#[test]
fn groff_has_nothing_to_warn_about_in_the_man_page() {
    let Some((ok, warnings)) = groff_warnings(&repo(MAN)) else {
        eprintln!("skipped: groff is not installed (CI installs groff-base)");
        return;
    };
    assert!(ok && warnings.is_empty(), "groff -ww:\n{warnings}");
    // The same lint does see a broken page.
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = dir.path().join("broken.1");
    fs::write(&broken, format!("{}\n.NOSUCHMACRO x\n", read(MAN))).expect("write");
    let (_, warnings) = groff_warnings(&broken).expect("groff");
    assert!(warnings.contains("NOSUCHMACRO"), "{warnings}");
}

// ---------------------------------------------------------------------------
// systemd units

/// A unit's active settings, `(section, key) -> values` in order; comments
/// and blank lines are not settings.
fn unit_settings(path: &str) -> BTreeMap<(String, String), Vec<String>> {
    let mut settings: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut section = String::new();
    for line in read(path).lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{path}: not a setting: {line}"));
        settings
            .entry((section.clone(), key.trim().to_owned()))
            .or_default()
            .push(value.trim().to_owned());
    }
    settings
}

fn comments(path: &str) -> String {
    read(path)
        .lines()
        .filter(|line| line.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Seconds of a systemd time span such as `25min`, `90s`, `1h 5min`.
fn seconds(span: &str) -> u64 {
    span.split_whitespace()
        .map(|part| {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            let number: u64 = digits.parse().unwrap_or_else(|_| panic!("span {span}"));
            number
                * match &part[digits.len()..] {
                    "" | "s" | "sec" => 1,
                    "m" | "min" => 60,
                    "h" | "hour" => 3600,
                    unit => panic!("unit {unit} in {span}"),
                }
        })
        .sum()
}

/// The `[default: N]` of an option in `--help`, as a number.
fn default_of(option: &str) -> u64 {
    help_entries(&help(&["--help"]))
        .into_iter()
        .find(|entry| entry.option == option)
        .and_then(|entry| entry.default)
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no numeric default for {option}"))
}

/// Sandboxing that would hide what a recovery needs: the wrappers' PIDs, the
/// daemon socket, the keys, the project folders, the network.
const FORBIDDEN: [&str; 8] = [
    "ProtectHome",
    "PrivateTmp",
    "PrivateNetwork",
    "PrivatePIDs",
    "ProtectProc",
    "ProcSubset",
    "PrivateUsers",
    "DynamicUser",
];

#[test]
fn the_services_are_oneshot_bounded_and_hardened_without_hiding_what_recovery_needs() {
    let worst_run = default_of("--max-recoveries")
        * (default_of("--recover-timeout") + default_of("--kill-grace"));
    assert_eq!(worst_run, 1320);
    for path in [USER_SERVICE, SYSTEM_SERVICE] {
        let settings = unit_settings(path);
        let get = |key: &str| -> Vec<String> {
            settings
                .get(&("Service".to_owned(), key.to_owned()))
                .cloned()
                .unwrap_or_default()
        };
        let one = |key: &str| -> String {
            match get(key).as_slice() {
                [value] => value.clone(),
                other => panic!("{path}: {key}= should be set once, is {other:?}"),
            }
        };
        assert_eq!(one("Type"), "oneshot", "{path}");
        assert!(
            get("SuccessExitStatus")
                .iter()
                .any(|value| value.split_whitespace().any(|code| code == "75")),
            "{path}: exit 75 (lock held) must count as success"
        );
        let timeout = seconds(&one("TimeoutStartSec"));
        assert!(
            timeout > worst_run,
            "{path}: TimeoutStartSec={timeout}s is below the worst run, {worst_run}s"
        );
        assert!(one("Nice").parse::<i32>().expect("Nice") > 0, "{path}");
        assert_eq!(one("IOSchedulingClass"), "idle", "{path}");
        for (key, value) in [
            ("NoNewPrivileges", "yes"),
            ("LockPersonality", "yes"),
            ("RestrictRealtime", "yes"),
            ("RestrictSUIDSGID", "yes"),
            ("SystemCallArchitectures", "native"),
        ] {
            assert_eq!(one(key), value, "{path}: {key}=");
        }
        let families: BTreeSet<String> = one("RestrictAddressFamilies")
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        // AF_NETLINK: OpenSSH's `Match localnetwork` and interface binding.
        assert_eq!(
            families,
            ["AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"]
                .map(str::to_owned)
                .into(),
            "{path}"
        );
        let why = comments(path);
        for key in FORBIDDEN {
            assert!(get(key).is_empty(), "{path}: {key}= must not be set");
            assert!(
                why.contains(&format!("{key}=")),
                "{path}: a comment should say why {key}= is left out"
            );
        }
        assert!(
            get("ProtectSystem").iter().all(|value| value != "strict"),
            "{path}: ProtectSystem=strict would stop outputs reaching project folders"
        );
        assert!(why.contains("ProtectSystem=strict"), "{path}");
        assert_eq!(
            settings.get(&("Unit".to_owned(), "Documentation".to_owned())),
            Some(&vec!["man:rch-sweep(1)".to_owned()]),
            "{path}"
        );
    }

    let system = unit_settings(SYSTEM_SERVICE);
    let service = |key: &str| system.get(&("Service".to_owned(), key.to_owned())).cloned();
    assert_eq!(service("User"), Some(vec!["%i".to_owned()]));
    // A bare name, found on systemd's fixed search path: the package's
    // /usr/bin or a hand install's /usr/local/bin, nothing edited.
    assert_eq!(service("ExecStart"), Some(vec!["rch-sweep".to_owned()]));
    let why = comments(SYSTEM_SERVICE);
    for needle in [
        "SSH_AUTH_SOCK",
        "No SSH agent",
        "RCH_SWEEP_RCH",
        "~/.cargo/bin/rch",
    ] {
        assert!(why.contains(needle), "{SYSTEM_SERVICE}: say {needle}");
    }
    for (key, value) in [
        ("ProtectSystem", "full"),
        ("ProtectKernelTunables", "yes"),
        ("ProtectKernelModules", "yes"),
        ("ProtectControlGroups", "yes"),
    ] {
        assert_eq!(service(key), Some(vec![value.to_owned()]), "system {key}=");
    }

    let user = unit_settings(USER_SERVICE);
    let service = |key: &str| user.get(&("Service".to_owned(), key.to_owned())).cloned();
    assert_eq!(service("ExecStart"), Some(vec!["rch-sweep".to_owned()]));
    assert_eq!(service("User"), None, "a user unit runs as its user");
    // These need a user namespace in a user manager (see the unit's comments).
    let why = comments(USER_SERVICE);
    for key in [
        "ProtectSystem",
        "ProtectKernelTunables",
        "ProtectKernelModules",
        "ProtectControlGroups",
    ] {
        assert_eq!(service(key), None, "user unit: {key}=");
        assert!(why.contains(&format!("{key}=")), "user unit: why no {key}=");
    }
}

#[test]
fn the_timers_fire_every_five_minutes_after_the_last_run_ended() {
    for (path, first) in [(USER_TIMER, "OnStartupSec"), (SYSTEM_TIMER, "OnBootSec")] {
        let settings = unit_settings(path);
        let timer = |key: &str| settings.get(&("Timer".to_owned(), key.to_owned())).cloned();
        assert_eq!(
            timer("OnUnitInactiveSec").map(|v| seconds(&v[0])),
            Some(300),
            "{path}"
        );
        assert!(timer(first).is_some(), "{path}: {first}= starts the cycle");
        assert_eq!(timer("OnCalendar"), None, "{path}");
        // Instances (and lingering users) start at the same boot moment: a
        // random delay spreads them, and an accuracy well under that delay
        // keeps systemd from merging their elapses again.
        let one = |key: &str| match timer(key).as_deref() {
            Some([value]) => seconds(value),
            other => panic!("{path}: {key}= should be set once, is {other:?}"),
        };
        let spread = one("RandomizedDelaySec");
        assert!((60..=300).contains(&spread), "{path}: spread {spread}s");
        let accuracy = one("AccuracySec");
        assert!(accuracy * 10 <= spread, "{path}: AccuracySec={accuracy}s");
        assert_eq!(
            settings.get(&("Install".to_owned(), "WantedBy".to_owned())),
            Some(&vec!["timers.target".to_owned()]),
            "{path}"
        );
    }
}

/// Copies the units into a temporary folder with `ExecStart=` pointing at
/// the built binary (verify insists the program exists), plus `extra` lines
/// appended to each service.
fn staged_units(dir: &Path, units: &[&str], extra: &str) -> Vec<PathBuf> {
    units
        .iter()
        .map(|unit| {
            let text = read(unit);
            let mut rewritten = 0;
            let mut staged: String = text
                .lines()
                .map(|line| {
                    if line.starts_with("ExecStart=") {
                        rewritten += 1;
                        format!("ExecStart={BIN}\n")
                    } else {
                        format!("{line}\n")
                    }
                })
                .collect();
            if unit.ends_with(".service") {
                assert_eq!(rewritten, 1, "{unit}: one ExecStart=");
                staged.push_str(extra);
            }
            let path = dir.join(Path::new(unit).file_name().expect("name"));
            fs::write(&path, staged).expect("stage unit");
            path
        })
        .collect()
}

/// `systemd-analyze [--user] verify` on the staged units: Ok, or the
/// complaints. None when systemd-analyze is not installed.
fn verify(user: bool, units: &[&str], extra: &str) -> Option<Result<(), String>> {
    let dir = tempfile::tempdir().expect("tempdir");
    let staged = staged_units(dir.path(), units, extra);
    let mut command = Command::new("systemd-analyze");
    if user {
        // The user manager verify starts needs a runtime folder; a private
        // one works with no systemd running.
        let runtime = dir.path().join("runtime");
        fs::create_dir(&runtime).expect("mkdir");
        fs::set_permissions(&runtime, fs::Permissions::from_mode(0o700)).expect("chmod");
        command.arg("--user").env("XDG_RUNTIME_DIR", &runtime);
    }
    command.args(["verify", "--man=no"]).args(&staged);
    let output = match command.output() {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
        Err(error) => panic!("cannot run systemd-analyze: {error}"),
    };
    let text = stderr(&output);
    // Complaints about the host's own units are not ours to judge.
    let ours: Vec<&str> = text.lines().filter(|l| l.contains("rch-sweep")).collect();
    Some(if output.status.success() && ours.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\n{text}", output.status))
    })
}

/// The drop-in a service's comments give for ssh's host-based
/// authentication: the `#   ` lines after `#   [Service]`, uncommented.
fn keysign_drop_in(path: &str) -> String {
    let text = read(path);
    let mut lines = text
        .lines()
        .skip_while(|line| *line != "#   [Service]")
        .skip(1)
        .map_while(|line| line.strip_prefix("#   "));
    let mut drop_in = String::new();
    for line in &mut lines {
        drop_in.push_str(line);
        drop_in.push('\n');
    }
    drop_in
}

/// `NoNewPrivileges=` keeps the setuid ssh-keysign from working, so
/// host-based authentication fails under the units; each says so and gives
/// the drop-in that lifts it, which systemd accepts. In a user manager each
/// seccomp option implies it too, so that drop-in resets every one the unit
/// sets.
#[test]
fn the_units_give_a_drop_in_that_lets_ssh_keysign_work() {
    for (user, service, timer) in [
        (false, SYSTEM_SERVICE, SYSTEM_TIMER),
        (true, USER_SERVICE, USER_TIMER),
    ] {
        let why = comments(service);
        assert!(
            why.contains("ssh-keysign") && why.contains("HostbasedAuthentication"),
            "{service}: say why NoNewPrivileges= stops host-based authentication"
        );
        let drop_in = keysign_drop_in(service);
        let lines: Vec<&str> = drop_in.lines().collect();
        assert!(
            lines.contains(&"NoNewPrivileges=no"),
            "{service}: {drop_in}"
        );
        if user {
            let settings = unit_settings(service);
            for key in [
                "LockPersonality",
                "RestrictRealtime",
                "RestrictSUIDSGID",
                "SystemCallArchitectures",
                "RestrictAddressFamilies",
                "SystemCallFilter",
                "MemoryDenyWriteExecute",
                "RestrictNamespaces",
            ] {
                if settings.contains_key(&("Service".to_owned(), key.to_owned())) {
                    assert!(
                        lines.contains(&format!("{key}=").as_str())
                            || lines.contains(&format!("{key}=no").as_str()),
                        "{service}: the drop-in must reset {key}=, which implies NoNewPrivileges= in a user manager"
                    );
                }
            }
        }
        // Appended to the unit (its last section is [Service]), as a
        // drop-in applies after it.
        let Some(result) = verify(user, &[service, timer], &drop_in) else {
            eprintln!(
                "skipped: systemd-analyze is not installed (CI installs the systemd package)"
            );
            return;
        };
        if let Err(complaints) = result {
            panic!("{service} with its drop-in: {complaints}");
        }
    }
}

/// cron sets no `USER`, so a metrics path with `$USER` in a crontab line
/// names `rch-sweep-.prom` for every user; the docs use `$LOGNAME`.
#[test]
fn metrics_paths_in_the_docs_name_the_user_by_logname() {
    for path in [README, MAN, SYSTEMD_README] {
        let text = read(path);
        for line in text.lines().filter(|line| line.contains(".prom")) {
            assert!(
                !line.contains("$USER") && !line.contains("${USER}"),
                "{path}: {line}"
            );
        }
    }
    assert!(read(README).contains("rch-sweep-$LOGNAME.prom"));
}

#[test]
fn systemd_analyze_verifies_the_units() {
    for (user, units) in [
        (false, [SYSTEM_SERVICE, SYSTEM_TIMER]),
        (true, [USER_SERVICE, USER_TIMER]),
    ] {
        let Some(result) = verify(user, &units, "") else {
            eprintln!(
                "skipped: systemd-analyze is not installed (CI installs the systemd package)"
            );
            return;
        };
        if let Err(complaints) = result {
            panic!("systemd-analyze verify {units:?}: {complaints}");
        }
        // The same check does refuse a unit with a setting systemd lacks.
        let broken = verify(user, &units, "NoSuchSetting=yes\n").expect("ran before");
        assert!(
            broken
                .as_ref()
                .is_err_and(|text| text.contains("NoSuchSetting")),
            "{broken:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// cron

const README: &str = "README.md";
const SYSTEMD_README: &str = "systemd/README.md";
/// What cron puts on a job's `PATH` (Debian's cron and the others alike).
const CRON_PATH: &str = "/usr/bin:/bin";
const EVERY_FIVE_MINUTES: &str = "*/5 * * * * ";

/// The crontab lines a document gives, in order.
fn cron_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| line.starts_with(EVERY_FIVE_MINUTES))
        .map(str::to_owned)
        .collect()
}

/// Where the package installs the binary: the destination folder of the
/// `target/release/rch-sweep` asset in Cargo.toml, as an absolute path.
fn package_binary_folder() -> String {
    let manifest = read("Cargo.toml");
    let line = manifest
        .lines()
        .find(|line| {
            line.trim_start()
                .starts_with("[\"target/release/rch-sweep\"")
        })
        .expect("Cargo.toml has the binary's asset");
    let dest = line.split('"').nth(3).expect("the asset's destination");
    format!("/{}", dest.trim_end_matches('/'))
}

/// Where README's by-hand install puts the binary: the destination of its
/// `install ... -m 0755 ... rch-sweep` line.
fn hand_install_binary() -> String {
    read(README)
        .lines()
        .filter(|line| line.contains("install -D -m 0755 "))
        .filter_map(|line| line.split_whitespace().last())
        .find(|dest| dest.ends_with("/rch-sweep"))
        .expect("README.md installs the binary by hand with install -D -m 0755")
        .to_owned()
}

#[test]
fn the_readme_man_page_and_systemd_readme_give_the_same_cron_line_for_each_install_route() {
    let readme = cron_lines(&read(README));
    for (name, lines) in [
        (MAN, cron_lines(&man_source())),
        (SYSTEMD_README, cron_lines(&read(SYSTEMD_README))),
    ] {
        assert_eq!(
            lines, readme,
            "{name} and {README} give different cron lines"
        );
    }
    // program -> arguments, one line per program.
    let mut routes: BTreeMap<&str, &str> = BTreeMap::new();
    for line in &readme {
        let command = &line[EVERY_FIVE_MINUTES.len()..];
        let (program, args) = command.split_once(' ').unwrap_or((command, ""));
        assert!(
            routes.insert(program, args).is_none(),
            "two cron lines run {program}"
        );
    }
    // The package's binary is on cron's PATH, so its line names it bare;
    // a hand install's line names the path its install step used; cargo
    // install leaves it in ~/.cargo/bin.
    let folder = package_binary_folder();
    assert!(
        CRON_PATH.split(':').any(|dir| dir == folder),
        "the package installs rch-sweep in {folder}, not on cron's PATH {CRON_PATH}"
    );
    let expected: BTreeSet<String> = [
        "rch-sweep".to_owned(),
        hand_install_binary(),
        "$HOME/.cargo/bin/rch-sweep".to_owned(),
    ]
    .into();
    let programs: BTreeSet<String> = routes.keys().map(|p| (*p).to_owned()).collect();
    assert_eq!(programs, expected, "cron lines: {readme:#?}");
    // Every route's line passes the same flags, and --quiet is one of them.
    let flags: BTreeSet<&str> = routes.values().copied().collect();
    assert_eq!(
        flags.len(),
        1,
        "cron lines pass different flags: {readme:#?}"
    );
    assert!(
        flags.iter().all(|args| mentions(args, "--quiet")),
        "{flags:?}"
    );
}

// ---------------------------------------------------------------------------
// Metrics

/// One metric family of a Prometheus text file.
#[derive(Debug, Default)]
struct Family {
    help: bool,
    kind: Option<String>,
    samples: BTreeMap<String, f64>,
}

/// Parses the Prometheus text format strictly enough for node_exporter:
/// `# HELP` and `# TYPE` before a family's samples, families contiguous,
/// `name{label="value",...} value`, no duplicate series.
fn parse_prometheus(text: &str) -> Result<BTreeMap<String, Family>, String> {
    fn is_name(name: &str, first_ok: fn(char) -> bool) -> bool {
        let mut chars = name.chars();
        chars.next().is_some_and(first_ok)
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }
    let metric_start = |c: char| c.is_ascii_alphabetic() || c == '_' || c == ':';
    let label_start = |c: char| c.is_ascii_alphabetic() || c == '_';
    if !text.ends_with('\n') {
        return Err("no final newline".into());
    }
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut closed: BTreeSet<String> = BTreeSet::new();
    let mut current: Option<String> = None;
    let mut enter = |name: &str, current: &mut Option<String>| -> Result<(), String> {
        if current.as_deref() != Some(name) {
            if closed.contains(name) {
                return Err(format!("{name}: lines not contiguous"));
            }
            if let Some(previous) = current.take() {
                closed.insert(previous);
            }
            *current = Some(name.to_owned());
        }
        Ok(())
    };
    for (number, line) in text.lines().enumerate() {
        let at = |why: String| format!("line {}: {why}: {line}", number + 1);
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.trim_start().splitn(3, ' ');
            let (keyword, name, rest) = (words.next(), words.next(), words.next());
            let (Some(keyword @ ("HELP" | "TYPE")), Some(name)) = (keyword, name) else {
                continue;
            };
            if !is_name(name, metric_start) {
                return Err(at("bad metric name".into()));
            }
            enter(name, &mut current).map_err(at)?;
            let family = families.entry(name.to_owned()).or_default();
            if !family.samples.is_empty() {
                return Err(at(format!("{keyword} after samples")));
            }
            if keyword == "HELP" {
                if family.help || rest.is_none_or(str::is_empty) {
                    return Err(at("duplicate or empty HELP".into()));
                }
                family.help = true;
            } else {
                let kind = rest.unwrap_or_default();
                if family.kind.is_some()
                    || !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind)
                {
                    return Err(at("duplicate or unknown TYPE".into()));
                }
                family.kind = Some(kind.to_owned());
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).ok_or_else(|| at("no value".into()))?;
        let name = &line[..name_end];
        if !is_name(name, metric_start) {
            return Err(at("bad metric name".into()));
        }
        let mut rest = &line[name_end..];
        let mut labels = String::new();
        if let Some(inner) = rest.strip_prefix('{') {
            let close = inner
                .find('}')
                .ok_or_else(|| at("unclosed labels".into()))?;
            labels = inner[..close].to_owned();
            for pair in labels.split(',').filter(|p| !p.is_empty()) {
                let (key, value) = pair
                    .split_once('=')
                    .ok_or_else(|| at(format!("label {pair}")))?;
                let quoted = value.len() >= 2 && value.starts_with('"') && value.ends_with('"');
                if !is_name(key, label_start) || !quoted || value[1..value.len() - 1].contains('"')
                {
                    return Err(at(format!("label {pair}")));
                }
            }
            rest = &inner[close + 1..];
        }
        let mut fields = rest
            .strip_prefix(' ')
            .ok_or_else(|| at("no space before the value".into()))?
            .split(' ');
        let value: f64 = fields
            .next()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| at("value is not a float".into()))?;
        if let Some(timestamp) = fields.next()
            && timestamp.parse::<i64>().is_err()
        {
            return Err(at("bad timestamp".into()));
        }
        if fields.next().is_some() {
            return Err(at("trailing fields".into()));
        }
        enter(name, &mut current).map_err(at)?;
        let family = families.entry(name.to_owned()).or_default();
        if !family.help || family.kind.is_none() {
            return Err(at("sample before its # HELP and # TYPE".into()));
        }
        if family.samples.insert(labels, value).is_some() {
            return Err(at("duplicate series".into()));
        }
    }
    Ok(families)
}

/// The metric names src/sweep/metrics.rs writes (its `"rch_sweep_..."` literals).
fn names_in_source() -> BTreeSet<String> {
    let source = include_str!("../src/sweep/metrics.rs");
    source
        .match_indices("\"rch_sweep_")
        .map(|(at, _)| {
            let rest = &source[at + 1..];
            rest[..rest.find('"').expect("closing quote")].to_owned()
        })
        .collect()
}

fn metrics(path: &Path) -> BTreeMap<String, Family> {
    let text = fs::read_to_string(path).expect("metrics file");
    parse_prometheus(&text).unwrap_or_else(|why| panic!("{why}\n{text}"))
}

/// The value of `name{lease_dir="<lease_dir>"[,extra]}`.
fn sample(families: &BTreeMap<String, Family>, lease_dir: &Path, name: &str, extra: &str) -> f64 {
    let mut labels = format!("lease_dir=\"{}\"", lease_dir.display());
    if !extra.is_empty() {
        labels.push(',');
        labels.push_str(extra);
    }
    families
        .get(name)
        .and_then(|family| family.samples.get(&labels))
        .copied()
        .unwrap_or_else(|| panic!("no sample {name}{{{labels}}} in {families:?}"))
}

/// Every sample of every family carries `lease_dir="<lease_dir>"`, first.
fn assert_all_labelled(families: &BTreeMap<String, Family>, lease_dir: &Path) {
    let label = format!("lease_dir=\"{}\"", lease_dir.display());
    for (name, family) in families {
        assert!(!family.samples.is_empty(), "{name} has no samples");
        for labels in family.samples.keys() {
            assert!(
                labels == &label || labels.starts_with(&format!("{label},")),
                "{name}{{{labels}}} lacks {label}"
            );
        }
    }
}

#[test]
fn the_prometheus_checker_refuses_what_node_exporter_would() {
    let good = "# HELP a_b A.\n# TYPE a_b gauge\na_b{x=\"1\"} 2.5\na_b{x=\"2\"} 0\n";
    assert!(parse_prometheus(good).is_ok());
    for bad in [
        "a_b 1\n",
        "# HELP a_b A.\na_b 1\n",
        "# HELP a_b A.\n# TYPE a_b gauge\na_b one\n",
        "# HELP a_b A.\n# TYPE a_b gauge\na_b{x=1} 1\n",
        "# HELP a_b A.\n# TYPE a_b gauge\na_b 1\na_b 2\n",
        "# HELP a A.\n# TYPE a gauge\na 1\n# HELP b B.\n# TYPE b gauge\nb 1\na{x=\"1\"} 1\n",
        "# HELP a_b A.\n# TYPE a_b gauge\na_b 1",
    ] {
        assert!(parse_prometheus(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_sweep_writes_prometheus_metrics_atomically_and_keeps_the_last_success() {
    let world = World::new();
    let rch = world.completing_daemon_rch();
    let rch = rch.to_str().expect("utf8");
    // A daemon that answers, so the run checks it and every series of
    // metrics.rs is written.
    let daemon = FakeDaemon::start(&world.path("rch.sock"), Reply::Healthy);
    let socket = daemon.socket.to_str().expect("utf8");
    world.will_complete(Journal::stale("hz4", 2 * HOUR_MS));
    let folder = world.path("textfile");
    fs::create_dir(&folder).expect("mkdir");
    let prom = folder.join("rch.prom");
    let prom_arg = prom.to_str().expect("utf8");

    let output = world.run(&["--rch", rch, "--socket", socket, "--metrics-file", prom_arg]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let first = metrics(&prom);
    let leases = world.leases();
    assert_all_labelled(&first, &leases);
    let written: BTreeSet<String> = first.keys().cloned().collect();
    assert_eq!(written, names_in_source());
    assert!(written.len() >= 9, "{written:?}");
    for (name, family) in &first {
        assert_eq!(family.kind.as_deref(), Some("gauge"), "{name}");
    }
    assert_eq!(sample(&first, &leases, "rch_sweep_exit_code", ""), 0.0);
    assert_eq!(sample(&first, &leases, "rch_sweep_daemon_up", ""), 1.0);
    assert_eq!(
        sample(&first, &leases, "rch_sweep_journals_scanned", ""),
        1.0
    );
    assert_eq!(sample(&first, &leases, "rch_sweep_candidates", ""), 1.0);
    assert_eq!(
        sample(
            &first,
            &leases,
            "rch_sweep_recoveries",
            "outcome=\"recovered\""
        ),
        1.0
    );
    let outcomes: BTreeSet<&str> = first["rch_sweep_recoveries"]
        .samples
        .keys()
        .filter_map(|labels| labels.split("outcome=\"").nth(1))
        .map(|rest| rest.trim_end_matches('"'))
        .collect();
    assert_eq!(
        outcomes,
        [
            "deferred",
            "failed",
            "interrupted",
            "recovered",
            "stuck",
            "vanished"
        ]
        .into(),
        "every outcome, zeros included"
    );
    assert_eq!(
        first["rch_sweep_journals_skipped"].samples.len(),
        rch_sweep::judge::SkipReason::ALL.len(),
        "every skip reason, zeros included"
    );
    let last_success = sample(
        &first,
        &leases,
        "rch_sweep_last_success_timestamp_seconds",
        "",
    );
    let state_ms = world.state()["last_success_unix_ms"]
        .as_u64()
        .expect("last success in the state");
    assert_eq!(last_success, state_ms as f64 / 1000.0);
    let last_run = sample(&first, &leases, "rch_sweep_last_run_timestamp_seconds", "");
    assert!(last_run >= last_success && last_run < (now_ms() as f64 / 1000.0) + 1.0);
    let meta = fs::metadata(&prom).expect("metadata");
    assert_eq!(meta.mode() & 0o777, 0o644, "readable by the collector");
    let first_inode = meta.ino();

    // A failing run: the completed lease is terminal now, a new one fails
    // (the fake rch has nothing to install for it). A temp file a killed run
    // left must go.
    world.add(&Journal::stale("w2", HOUR_MS));
    fs::write(folder.join(".rch.prom.left0ver.tmp"), "partial").expect("write");
    let output = world.run(&["--rch", rch, "--socket", socket, "--metrics-file", prom_arg]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let second = metrics(&prom);
    assert_all_labelled(&second, &leases);
    assert_eq!(sample(&second, &leases, "rch_sweep_exit_code", ""), 1.0);
    assert_eq!(
        sample(
            &second,
            &leases,
            "rch_sweep_recoveries",
            "outcome=\"failed\""
        ),
        1.0
    );
    assert_eq!(
        sample(
            &second,
            &leases,
            "rch_sweep_journals_skipped",
            "reason=\"terminal\""
        ),
        1.0
    );
    assert_eq!(
        sample(
            &second,
            &leases,
            "rch_sweep_last_success_timestamp_seconds",
            ""
        ),
        last_success,
        "the last success survives a failing run"
    );
    assert!(sample(&second, &leases, "rch_sweep_last_run_timestamp_seconds", "") >= last_run);
    assert_ne!(
        fs::metadata(&prom).expect("metadata").ino(),
        first_inode,
        "replaced by rename, not rewritten in place"
    );
    assert_eq!(files_in(&folder), ["rch.prom"]);
}

#[test]
fn a_dry_run_writes_no_metrics_and_a_name_without_prom_is_refused() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let folder = world.path("textfile");
    fs::create_dir(&folder).expect("mkdir");
    let prom = folder.join("rch.prom");
    let prom_arg = prom.to_str().expect("utf8");
    for (flag, code) in [("--dry-run", 0), ("--check", 1)] {
        let output = world.run(&[flag, "--metrics-file", prom_arg]);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{flag}: {}",
            stderr(&output)
        );
        assert!(
            files_in(&folder).is_empty(),
            "{flag} wrote {:?}",
            files_in(&folder)
        );
    }

    let rch = world.fake_rch("rch", "exit 1");
    let rch = rch.to_str().expect("utf8");
    let txt = folder.join("rch.txt");
    let output = world.run(&["--rch", rch, "--metrics-file", txt.to_str().expect("utf8")]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains(".prom"), "{}", stderr(&output));
    let output = world
        .command(&["--rch", rch])
        .env("RCH_SWEEP_METRICS_FILE", folder.join("rch.metrics"))
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(files_in(&folder).is_empty());
    assert!(
        !world.state_file().exists(),
        "a refused command line sweeps nothing"
    );
}

#[test]
fn a_metrics_folder_that_cannot_take_the_file_stops_the_run_before_any_recovery() {
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let marker = world.path("child-started");
    let rch = world.fake_rch("rch", &format!("touch '{}'\nexit 1", marker.display()));
    let rch = rch.to_str().expect("utf8");
    fs::write(world.path("a-file"), "").expect("write");
    for (prom, why) in [
        (world.path("no-such-folder/rch.prom"), "does not exist"),
        (world.path("a-file/rch.prom"), "is not a directory"),
    ] {
        let output = world.run(&["--rch", rch, "--metrics-file", prom.to_str().expect("utf8")]);
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(74), "{text}");
        assert!(
            text.contains(&format!("--metrics-file {}", prom.display())) && text.contains(why),
            "{text}"
        );
        assert!(!marker.exists(), "a recovery was started");
        assert!(
            !world.state_file().exists(),
            "a run refused up front writes no state"
        );
    }
    // The fake rch does start when the folder is fine: the marker can appear.
    fs::create_dir(world.path("textfile")).expect("mkdir");
    let prom = world.path("textfile/rch.prom");
    let output = world.run(&["--rch", rch, "--metrics-file", prom.to_str().expect("utf8")]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(marker.exists() && prom.exists());
}

#[test]
fn a_metrics_folder_this_user_cannot_write_is_refused_before_any_recovery() {
    use std::os::unix::process::CommandExt;
    let world = World::new();
    world.add(&Journal::stale("hz4", 2 * HOUR_MS));
    let marker = world.path("child-started");
    let rch = world.fake_rch("rch", &format!("touch '{}'\nexit 1", marker.display()));
    let folder = world.path("textfile");
    fs::create_dir(&folder).expect("mkdir");
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o555)).expect("chmod");
    let prom = folder.join("rch.prom");
    let mut command = world.command(&[
        "--rch",
        rch.to_str().expect("utf8"),
        "--metrics-file",
        prom.to_str().expect("utf8"),
    ]);
    if is_root() {
        // root writes through any mode: run the sweep as `nobody`, for whom
        // the world must be traversable, and who must own the lease
        // directory and the state folder (the sweep acts only for the
        // directory's owner).
        fs::set_permissions(world.dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
        let state = world.state_file();
        let state_dir = state.parent().expect("state folder");
        fs::create_dir(state_dir).expect("mkdir state");
        for owned in [world.leases().as_path(), state_dir] {
            std::os::unix::fs::chown(owned, Some(65534), Some(65534)).expect("chown");
        }
        command.uid(65534).gid(65534);
    }
    let output = command.output().expect("run");
    assert_eq!(output.status.code(), Some(74), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!(
            "--metrics-file {}: cannot write into",
            prom.display()
        )),
        "{}",
        stderr(&output)
    );
    assert!(!marker.exists());
}

// ---------------------------------------------------------------------------
// journald

/// Runs `command` with stderr on a fresh file, `JOURNAL_STREAM` set to the
/// device and inode of that file (`same`) or of another one; returns the
/// exit code and the stderr lines.
fn with_stderr_file(mut command: Command, same: bool) -> (i32, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("stderr.log");
    let file = fs::File::create(&log).expect("create");
    let other = dir.path().join("other.log");
    fs::write(&other, "").expect("write");
    let named = fs::metadata(if same { &log } else { &other }).expect("metadata");
    let status = command
        .env("JOURNAL_STREAM", format!("{}:{}", named.dev(), named.ino()))
        .stdout(Stdio::null())
        .stderr(Stdio::from(file))
        .status()
        .expect("run");
    let text = fs::read_to_string(&log).expect("read stderr");
    (
        status.code().unwrap_or(-1),
        text.lines().map(str::to_owned).collect(),
    )
}

#[test]
fn journald_priorities_appear_exactly_when_stderr_is_the_named_stream() {
    let world = World::new();
    // A corrupt state file warns; a default lease dir that does not exist
    // is an info note.
    fs::create_dir_all(world.state_file().parent().expect("parent")).expect("mkdir");
    fs::write(world.state_file(), "{not json").expect("write");
    let dry_run = || {
        let mut command = World::bare_command();
        command
            .arg("--lease-dir")
            .arg(world.leases())
            .arg("--state-file")
            .arg(world.state_file())
            .arg("--dry-run");
        command
    };
    let absent = || {
        let mut command = World::bare_command();
        command
            .env("RCH_STATE_HOME", world.path("absent"))
            .arg("--dry-run");
        command
    };
    // A lease dir that is a file is a configuration error.
    let error = || {
        let mut command = World::bare_command();
        command
            .arg("--lease-dir")
            .arg(world.state_file())
            .arg("--dry-run");
        command
    };

    let (code, lines) = with_stderr_file(dry_run(), true);
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("<4>rch-sweep: warning: state file "),
        "{lines:?}"
    );
    let (code, lines) = with_stderr_file(absent(), true);
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("<6>rch-sweep: lease directory "),
        "{lines:?}"
    );
    let (code, lines) = with_stderr_file(error(), true);
    assert_eq!(code, 78, "{lines:?}");
    assert!(!lines.is_empty(), "{lines:?}");
    assert!(
        lines.iter().all(|l| l.starts_with("<3>rch-sweep: error: ")),
        "{lines:?}"
    );

    for command in [dry_run(), absent(), error()] {
        let (_, lines) = with_stderr_file(command, false);
        assert!(!lines.is_empty());
        assert!(
            lines.iter().all(|l| l.starts_with("rch-sweep: ")),
            "JOURNAL_STREAM names another file: {lines:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// --version and --help

#[test]
fn version_prints_the_package_version() {
    for flag in ["--version", "-V"] {
        assert_eq!(
            help(&[flag]),
            format!("rch-sweep {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn duration_errors_teach_whole_seconds_and_base_above_max_is_refused() {
    let world = World::new();
    for flag in [
        "--recover-timeout",
        "--kill-grace",
        "--stale-after",
        "--backoff-base",
        "--backoff-max",
    ] {
        let output = world.run(&["--dry-run", flag, "10m"]);
        assert_eq!(output.status.code(), Some(2), "{flag}");
        let text = stderr(&output);
        assert!(
            text.contains(flag)
                && text.contains("whole seconds")
                && text.contains("for 10m write 600"),
            "{flag}: {text}"
        );
    }
    let output = world.run(&["--dry-run", "--backoff-base", "1.5"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("whole seconds"),
        "{}",
        stderr(&output)
    );

    let output = world.run(&[
        "--dry-run",
        "--backoff-base",
        "7200",
        "--backoff-max",
        "600",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--backoff-base 7200 is above --backoff-max 600"),
        "{}",
        stderr(&output)
    );
    // Every range is in --help.
    let help = help(&["--help"]);
    for range in [
        "1 to 64",
        "whole seconds, 1 to 86400",
        "whole seconds, 0 to 86400",
        "whole seconds, 0 to 31536000",
    ] {
        assert!(help.contains(range), "--help lacks {range:?}");
    }
}

#[test]
fn help_shows_every_variable_and_default() {
    let help = help(&["--help"]);
    for name in rch_sweep::cli::ENV_VARS {
        assert!(help.contains(&format!("[env: {name}=]")), "{name}:\n{help}");
    }
    for arg in definition().get_arguments() {
        let (Some(long), [default]) = (arg.get_long(), arg.get_default_values()) else {
            continue;
        };
        if !arg.get_action().takes_values() {
            // A flag's implicit `false`, which clap never shows.
            continue;
        }
        let entry = help_entries(&help)
            .into_iter()
            .find(|entry| entry.option == format!("--{long}"))
            .unwrap_or_else(|| panic!("--{long} missing from --help"));
        assert_eq!(
            entry.default,
            Some(default.to_string_lossy().into_owned()),
            "--{long}"
        );
    }
    for option in ["--lease-dir", "--state-file"] {
        let line = help
            .lines()
            .skip_while(|line| !line.trim_start().starts_with(option))
            .nth(1)
            .unwrap_or_default();
        assert!(line.contains("[default: "), "{option}: {line}");
    }
}

/// Runs of blanks and line ends as one blank.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Issue 48: `doctor --help`, the README and the man page give one list
/// of the programs doctor starts, word for word: the list the binary
/// holds (`cli::DOCTOR_STARTS`). On main `--help` named two programs and
/// `systemctl show`, the README three and no crontab or systemctl, the man
/// page a third list.
#[test]
fn doctor_help_readme_and_man_page_list_the_same_programs_it_starts() {
    let sentence = rch_sweep::cli::doctor_starts();
    assert!(
        sentence.contains("rch --version") && sentence.contains("crontab -l"),
        "{sentence}"
    );
    let help = one_line(&help(&["doctor", "--help"]));
    assert!(
        help.contains(&sentence),
        "doctor --help lacks {sentence:?}: {help}"
    );
    let readme = one_line(&read("README.md").replace('`', ""));
    assert!(readme.contains(&sentence), "README.md lacks {sentence:?}");
    let man = one_line(
        &read(MAN)
            .lines()
            .filter_map(roff_line)
            .collect::<Vec<_>>()
            .join(" "),
    );
    assert!(man.contains(&sentence), "{MAN} lacks {sentence:?}");
}

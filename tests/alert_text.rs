//! The words of the shipped alert rules against what the metrics really
//! show (issue 36): an alert that tells the person paged that a run "writes
//! no metrics" when it does sends them looking in the wrong place.
//! promtool's tests (tests/monitoring.rs) keep the expressions honest; this
//! keeps the annotations and the comments of
//! monitoring/rch-sweep.rules.yml to SPEC's *Metrics file*.
//!
//! SPEC's claims are written down here as data, each with the sentence of
//! SPEC it rests on; when SPEC.md is at hand (the shared folder beside the
//! checkout, as CI lays it), each sentence must still be in it, so a change
//! to SPEC fails here until the claims and the alerts are looked at again.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const RULES: &str = "monitoring/rch-sweep.rules.yml";

/// Exit codes whose runs write the metrics file, exit code included (when
/// its path passed its own check), each with SPEC's words for it.
const WRITES_METRICS: &[(u32, &str)] = &[
    (
        0,
        "Series (gauges, all written on every run, zeros included)",
    ),
    (
        1,
        "Series (gauges, all written on every run, zeros included)",
    ),
    (
        74,
        "A run that ends in 74 or 78 before its summary (no `rch`, an unknown state version, a bad path value; not another user's directory, where nothing is created) still writes the metrics file when its path passed its own check",
    ),
    (
        75,
        "the state and the metrics are written, and the run exits **75**",
    ),
    (
        78,
        "A run that ends in 74 or 78 before its summary (no `rch`, an unknown state version, a bad path value; not another user's directory, where nothing is created) still writes the metrics file when its path passed its own check",
    ),
];

/// Runs that write nothing: a bad command line (clap exits before
/// anything), and a held lock, the one 75 that writes nothing.
const WRITES_NOTHING: &[(u32, &str)] = &[(2, "| 2 | bad command line |")];
const LOCK_HELD_WRITES_NOTHING: &str = "a run that finds the lock held (75) writes nothing";

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// SPEC.md where CI and the workplace lay it: `shared/` beside the
/// checkout (or beside the folder holding the worktrees).
fn spec() -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    root.ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join("shared/SPEC.md"))
        .find_map(|path| std::fs::read_to_string(path).ok())
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The alert texts and comments of the rules file: (where, text). An
/// annotation is one `key: "..."` line; a comment block is joined.
fn texts(rules: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut alert = String::from("(file)");
    let mut comment = String::new();
    for (number, line) in rules.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(text) = trimmed.strip_prefix('#') {
            comment.push(' ');
            comment.push_str(text.trim());
            continue;
        }
        if !comment.is_empty() {
            found.push((
                format!("comment before line {}", number + 1),
                comment.clone(),
            ));
            comment.clear();
        }
        if let Some(name) = trimmed.strip_prefix("- alert:") {
            alert = name.trim().to_owned();
        }
        for key in ["summary:", "description:"] {
            if let Some(value) = trimmed.strip_prefix(key) {
                let value = value.trim().trim_matches('"');
                found.push((format!("{alert} {key}"), value.to_owned()));
            }
        }
    }
    found
}

/// The clauses of `text`: split at `;`, `.` followed by a space, and
/// parentheses, so a claim and the codes it names stay together.
fn clauses(text: &str) -> Vec<String> {
    text.replace(". ", ";")
        .split([';', '(', ')'])
        .map(str::trim)
        .filter(|clause| !clause.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The exit codes a clause names: whole numbers from 0 to 255 that stand
/// alone (not part of a duration, a label or `128+N`).
fn codes(clause: &str) -> BTreeSet<u32> {
    clause
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '+' || c == '_'))
        .filter_map(|word| word.parse::<u32>().ok())
        .filter(|code| *code <= 255)
        .collect()
}

/// Does this clause say that runs write no metrics?
fn says_no_metrics(clause: &str) -> bool {
    let clause = clause.to_lowercase();
    [
        "write no metrics",
        "writes no metrics",
        "write none",
        "writes none",
        "writes nothing",
        "write nothing",
        "before writing metrics",
        "no metrics",
    ]
    .iter()
    .any(|phrase| clause.contains(phrase))
}

/// What is wrong with one text, against the claims.
fn wrongs(text: &str) -> Vec<String> {
    let writes: BTreeSet<u32> = WRITES_METRICS.iter().map(|(code, _)| *code).collect();
    let mut wrong = Vec::new();
    for clause in clauses(text) {
        if says_no_metrics(&clause) {
            for code in codes(&clause) {
                // 75 writes nothing only when the lock is held.
                let lock_held = code == 75 && clause.contains("lock");
                if writes.contains(&code) && !lock_held {
                    wrong.push(format!(
                        "says runs ending {code} write no metrics, but SPEC says they do: {clause:?}"
                    ));
                }
            }
        }
        // "rch_sweep_exit_code says how (1 ..., 74 ...)": the codes listed
        // after it, up to the first `;` or `)`, are codes a metrics file
        // can hold.
        if clause.contains("rch_sweep_exit_code says") {
            let listed = text
                .split("rch_sweep_exit_code says")
                .nth(1)
                .and_then(|rest| rest.split_once('(').map(|(_, list)| list))
                .and_then(|list| list.split([')', ';']).next())
                .unwrap_or_default();
            for code in codes(listed) {
                if WRITES_NOTHING.iter().any(|(never, _)| *never == code) {
                    wrong.push(format!(
                        "names exit code {code} as one rch_sweep_exit_code can show, but such runs write nothing: {listed:?}"
                    ));
                }
            }
        }
    }
    wrong
}

#[test]
fn the_claims_are_spec_s() {
    let Some(spec) = spec() else {
        eprintln!("skipped: no shared/SPEC.md beside the checkout; the claims stand as written");
        return;
    };
    let spec = squeeze(&spec);
    let quotes = WRITES_METRICS
        .iter()
        .chain(WRITES_NOTHING)
        .map(|(_, quote)| *quote)
        .chain([LOCK_HELD_WRITES_NOTHING]);
    for quote in quotes {
        assert!(
            spec.contains(&squeeze(quote)),
            "SPEC.md no longer says {quote:?}: look at the claims in this test and the alert texts again"
        );
    }
}

#[test]
fn the_checks_catch_the_old_wording() {
    // The text RchSweepNeverSucceeded had before issue 36.
    let old = "rch_sweep_exit_code says why (1 recoveries failed, 74 the state file could not be written; runs ending 2, 75 or 78 write no metrics); journalctl";
    let wrong = wrongs(old);
    assert_eq!(wrong.len(), 2, "{wrong:#?}");
    assert!(wrong[0].contains("ending 75"), "{wrong:#?}");
    assert!(wrong[1].contains("ending 78"), "{wrong:#?}");
    // A held lock may be named as writing nothing; a 2 may not be listed
    // among what the exit code shows.
    assert!(wrongs("another sweep holding the lock (75) writes nothing").is_empty());
    assert!(wrongs("a sweep holding the lock, 75, writes nothing").is_empty());
    assert_eq!(
        wrongs("rch_sweep_exit_code says how (1 failed, 2 a bad command line)").len(),
        1
    );
}

#[test]
fn every_alert_text_says_what_the_metrics_show() {
    let rules = std::fs::read_to_string(repo(RULES)).expect("read the rules");
    let texts = texts(&rules);
    let annotations = texts
        .iter()
        .filter(|(place, _)| place.ends_with("description:"))
        .count();
    assert!(
        annotations >= 8,
        "read only {annotations} descriptions: {texts:#?}"
    );
    let mut wrong = Vec::new();
    for (place, text) in &texts {
        for why in wrongs(text) {
            wrong.push(format!("{place}: {why}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The two alerts about sweeps that do not succeed name the codes that
    // do reach the metrics, 75 and 78 among them.
    for alert in ["RchSweepNoRecentSuccess", "RchSweepNeverSucceeded"] {
        let (_, description) = texts
            .iter()
            .find(|(place, _)| *place == format!("{alert} description:"))
            .unwrap_or_else(|| panic!("no description of {alert}"));
        let listed = description
            .split("rch_sweep_exit_code says")
            .nth(1)
            .expect("names rch_sweep_exit_code");
        for code in ["1 ", "74 ", "75 ", "78 "] {
            assert!(
                listed.contains(&format!("({code}")) || listed.contains(&format!(", {code}")),
                "{alert} does not say what exit code {code}shows: {description}"
            );
        }
    }
}

/// Exit 75 is every temporary host fault that charges no lease (SPEC "Exit
/// status", and issue 47): the alerts that list what rch_sweep_exit_code
/// shows name each cause, not only a daemon that is down.
#[test]
fn the_alerts_name_every_cause_of_75() {
    let rules = std::fs::read_to_string(repo(RULES)).expect("read the rules");
    let texts = texts(&rules);
    for alert in ["RchSweepNoRecentSuccess", "RchSweepNeverSucceeded"] {
        let (_, description) = texts
            .iter()
            .find(|(place, _)| *place == format!("{alert} description:"))
            .unwrap_or_else(|| panic!("no description of {alert}"));
        let seventy_five = description
            .split(", 75 ")
            .nth(1)
            .and_then(|rest| rest.split(", 78 ").next())
            .unwrap_or_else(|| panic!("{alert} lists no 75: {description}"));
        for cause in ["daemon", "no room", "no process"] {
            assert!(
                seventy_five.contains(cause),
                "{alert}'s 75 does not name {cause:?}: {seventy_five}"
            );
        }
    }
}

//! rch's own verdicts, held against the real binary: 880 journals, each an
//! eligible journal with one mutation (a field missing or of another type,
//! numbers in many spellings, duplicate keys, escapes, raw bad bytes,
//! framing, nesting depth, odd recipes, sizes past 1 MiB, names, symlinks),
//! with what rch's compiled loaders said of each (`expected.jsonl`).
//!
//! The corpus is vendored from `../shared/rch-corpus/` into
//! `tests/data/rch-corpus/` (12 MB; two journals are symbolic links, kept as
//! links), since a clean checkout in CI need not have `../shared` beside it.
//! Its README says what a test over it must hold, judging as its owner:
//! - a journal the daemon loads (`rchd_loads`) is never skipped as
//!   `not_regular`, `bad_name`, `unreadable` or `malformed`: rch-sweep judges
//!   on its merits everything rch can load, at any size up to 64 MiB;
//! - a journal `rch jobs recover` cannot load (`rch_loads` false) is skipped
//!   at or before `malformed`: rch is never handed a journal it would refuse.

mod common;

use common::{REASONS, World};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/rch-corpus");

/// What rch said of one journal.
struct Expected {
    case: String,
    family: String,
    rch_loads: bool,
    rchd_loads: bool,
    rch_error: Option<String>,
}

fn expected() -> BTreeMap<String, Expected> {
    let text =
        std::fs::read_to_string(Path::new(CORPUS).join("expected.jsonl")).expect("expected.jsonl");
    text.lines()
        .map(|line| {
            let row: Value = serde_json::from_str(line).expect("expected.jsonl row");
            let text = |key: &str| row[key].as_str().map(str::to_owned);
            let flag = |key: &str| row[key].as_bool().expect("rch_loads and rchd_loads");
            (
                text("file").expect("file"),
                Expected {
                    case: text("case").expect("case"),
                    family: text("family").expect("family"),
                    rch_loads: flag("rch_loads"),
                    rchd_loads: flag("rchd_loads"),
                    rch_error: text("rch_error"),
                },
            )
        })
        .collect()
}

/// Copies `from` into `to` as the running user: files are written anew (so
/// this user owns them), each after `pad` bytes of leading whitespace, and
/// symbolic links are made again with the same target, never followed.
fn copy_tree(from: &Path, to: &Path, pad: usize) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read corpus") {
        let entry = entry.expect("entry");
        let path = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().expect("file type");
        if kind.is_symlink() {
            let link = std::fs::read_link(&path).expect("readlink");
            std::os::unix::fs::symlink(link, &target).expect("symlink");
        } else if kind.is_dir() {
            copy_tree(&path, &target, pad);
        } else {
            let mut bytes = vec![b' '; pad];
            bytes.extend(std::fs::read(&path).expect("read"));
            std::fs::write(&target, bytes).expect("write");
        }
    }
}

/// A journal's verdict from a dry run: `candidate` or its skip reason, and
/// the evidence of the deciding check.
fn verdicts(document: &Value) -> BTreeMap<String, (String, String)> {
    let mut verdicts = BTreeMap::new();
    for row in document["leases"].as_array().expect("leases") {
        let (file, verdict) = match row["outcome"].as_str() {
            Some("skipped") => (
                row["file"].as_str().expect("file").to_owned(),
                row["reason"].as_str().expect("reason").to_owned(),
            ),
            _ => (
                format!("{}.json", row["wrapper_id"].as_str().expect("wrapper_id")),
                "candidate".to_owned(),
            ),
        };
        let detail = row["detail"].as_str().unwrap_or_default().to_owned();
        assert!(
            verdicts.insert(file.clone(), (verdict, detail)).is_none(),
            "{file} reported twice"
        );
    }
    verdicts
}

#[test]
fn every_journal_rch_loads_is_judged_and_none_it_refuses_gets_past_the_shape() {
    hold_the_corpus(0);
}

/// The same journals after 80 KiB of leading whitespace (which changes no
/// verdict of rch's loader): past the 64 KiB a scan thread reads whole, so
/// every journal is parsed as a stream.
#[test]
fn the_same_holds_for_every_journal_parsed_as_a_stream() {
    hold_the_corpus(80 * 1024);
}

fn hold_the_corpus(pad: usize) {
    let world = World::new();
    let leases = world.path("corpus/job-leases");
    copy_tree(Path::new(CORPUS), &world.path("corpus"), pad);
    let expected = expected();
    assert_eq!(expected.len(), 880, "the corpus lists 880 journals");

    // The corpus's heartbeats are from 2023: any threshold makes them stale.
    let output = World::bare_command()
        .args(["--dry-run", "--json", "--verbose", "--stale-after", "900"])
        .arg("--lease-dir")
        .arg(&leases)
        .arg("--state-file")
        .arg(world.state_file())
        .output()
        .expect("run rch-sweep");
    let document: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "no JSON document ({error}); stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert_eq!(output.status.code(), Some(0), "{document}");
    assert_eq!(document["scanned"], 880, "{}", document["skipped"]);
    let verdicts = verdicts(&document);

    let unloadable = &REASONS[..=REASONS
        .iter()
        .position(|reason| *reason == "malformed")
        .expect("malformed")];
    let mut mismatches = Vec::new();
    let mut held = [0; 2];
    for (file, rch) in &expected {
        let Some((verdict, detail)) = verdicts.get(file) else {
            mismatches.push(format!(
                "{file} ({} / {}): not reported",
                rch.family, rch.case
            ));
            continue;
        };
        let refused = unloadable.contains(&verdict.as_str());
        let broken = if rch.rchd_loads && refused && verdict != "foreign_owner" {
            Some("rchd loads it")
        } else if !rch.rch_loads && !refused {
            Some("rch refuses it")
        } else {
            None
        };
        if rch.rchd_loads {
            held[0] += 1;
        }
        if !rch.rch_loads {
            held[1] += 1;
        }
        if let Some(rule) = broken {
            mismatches.push(format!(
                "{file} ({} / {}): {rule} ({}), but rch-sweep says {verdict}: {detail}",
                rch.family,
                rch.case,
                rch.rch_error.as_deref().unwrap_or("no error"),
            ));
        }
    }
    for file in verdicts.keys().filter(|file| !expected.contains_key(*file)) {
        mismatches.push(format!("{file}: judged, but not in expected.jsonl"));
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} journals break the corpus's rules:\n{}",
        mismatches.len(),
        expected.len(),
        mismatches.join("\n")
    );
    // Both rules were held over a real share of the corpus.
    assert_eq!(held, [261, 614], "journals under each rule");
}

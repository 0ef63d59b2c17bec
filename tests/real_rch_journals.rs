//! Journals written by the real rch 2.1.34 (issue 33), held in
//! `tests/data/real-rch-2.1.34/` so CI checks rch's own bytes without
//! building rch: `scripts/real-rch-e2e.sh --keep-journals` copied them from
//! a run against real `rch exec` builds, rchd and a worker over SSH (the
//! folder's README says how each was made).
//!
//! - every `before-*` journal (a lease rch left for recovery) is judged a
//!   candidate, by a dry run and by `explain`, as rch's own `jobs recover`
//!   took it;
//! - every `after-*` journal (the same lease once the real `rch jobs
//!   recover` finished it), and the one rch finished itself, is `terminal`;
//! - rch-sweep's completion check accepts each `after-*` against its
//!   `before-*`, the `daemon_record_absent` completion included, and a real
//!   run whose `rch` leaves exactly those bytes counts every one recovered.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/real-rch-2.1.34");

/// The journals of the folder by file stem (`before-killed-mid-build`, ...).
fn journals() -> BTreeMap<String, PathBuf> {
    let found: BTreeMap<String, PathBuf> = std::fs::read_dir(DATA)
        .expect("tests/data/real-rch-2.1.34")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .map(|path| {
            let stem = path
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned();
            (stem, path)
        })
        .collect();
    assert!(
        found.keys().any(|stem| stem.starts_with("after-")),
        "no after-* journal in {DATA}"
    );
    found
}

/// The pairs (before, after) of one lease: `after-X` with `before-X`.
fn pairs() -> Vec<(String, PathBuf, PathBuf)> {
    let journals = journals();
    let mut pairs = Vec::new();
    for (stem, after) in &journals {
        let Some(case) = stem.strip_prefix("after-") else {
            continue;
        };
        // The aged lease's "before" is the one whose heartbeat was moved back.
        let base = case
            .strip_suffix("-daemon-record-absent")
            .unwrap_or(case)
            .to_owned();
        let before = journals
            .get(&format!("before-{base}"))
            .unwrap_or_else(|| panic!("{stem} has no before-{base}"));
        pairs.push((case.to_owned(), before.clone(), after.clone()));
    }
    pairs
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read journal")).expect("journal is JSON")
}

fn wrapper_id(path: &Path) -> String {
    json(path)["identity"]["local_wrapper_id"]
        .as_str()
        .expect("wrapper id")
        .to_owned()
}

#[test]
fn rchs_completions_pass_the_completion_check_record_absent_included() {
    let mut record_absent = 0;
    for (case, before, after) in pairs() {
        let parsed = |path: &Path| {
            rch_sweep::lease::parse(&std::fs::read(path).expect("read"))
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        };
        assert_eq!(
            rch_sweep::judge::verify_completion(
                &parsed(&before),
                &parsed(&after),
                rch_sweep::judge::Completion::DaemonMarked,
            ),
            Ok(()),
            "{case}: rch's own completion refused"
        );
        let recipe = &json(&after)["recovery"];
        if recipe["daemon_record_absent"] == true {
            assert!(recipe.get("daemon_exit_code").is_none(), "{case}");
            record_absent += 1;
        }
    }
    assert_eq!(record_absent, 1, "one completion without a daemon record");
}

/// A lease directory holding a copy of `files`, each under its wrapper id.
fn copy_as_leases(world: &World, files: &[&PathBuf]) {
    for file in files {
        let target = world.leases().join(format!("{}.json", wrapper_id(file)));
        std::fs::copy(file, target).expect("copy journal");
    }
}

#[test]
fn a_dry_run_and_explain_judge_rchs_journals_as_rch_does() {
    for stage in ["before-", "after-"] {
        let journals = journals();
        let files: Vec<&PathBuf> = journals
            .iter()
            .filter(|(stem, _)| stem.starts_with(stage) && !stem.ends_with("-aged"))
            .map(|(_, path)| path)
            .collect();
        let world = World::new();
        copy_as_leases(&world, &files);
        let (code, document) = world.json(&[
            "--dry-run",
            "--verbose",
            "--stale-after",
            "5",
            "--max-recoveries",
            "64",
        ]);
        assert_eq!(code, 0, "{document}");
        let want = if stage == "before-" {
            "would_recover"
        } else {
            "terminal"
        };
        for file in &files {
            let id = wrapper_id(file);
            let row = document["leases"]
                .as_array()
                .expect("leases")
                .iter()
                .find(|row| row["wrapper_id"] == id.as_str() || row["file"] == format!("{id}.json"))
                .unwrap_or_else(|| panic!("{id} not reported: {document}"));
            let verdict = if row["outcome"] == "skipped" {
                &row["reason"]
            } else {
                &row["outcome"]
            };
            assert_eq!(verdict, want, "{}: {row}", file.display());

            let output = world
                .sub(&["explain", "--json", "--stale-after", "5", &id])
                .output()
                .expect("explain");
            let explained = one_document(&output);
            let journal = &explained["journals"][0];
            let (verdict, next) = (&journal["verdict"], &journal["next"]);
            if stage == "before-" {
                assert_eq!(
                    (verdict, next),
                    (&"candidate".into(), &"would_recover".into()),
                    "{explained}"
                );
            } else {
                assert_eq!(journal["reason"], "terminal", "{explained}");
            }
        }
    }
    // The lease rch finished by itself, wrapper alive to the end.
    let world = World::new();
    let finished = PathBuf::from(DATA).join("finished-by-its-wrapper.json");
    copy_as_leases(&world, &[&finished]);
    let (code, document) = world.json(&["--dry-run", "--verbose", "--stale-after", "5"]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["leases"][0]["reason"], "terminal", "{document}");
}

#[test]
fn a_run_whose_rch_leaves_rchs_own_completions_counts_each_recovered() {
    let world = World::new();
    let pairs = pairs();
    let mut cases = String::new();
    for (_, before, after) in &pairs {
        copy_as_leases(&world, &[before]);
        cases.push_str(&format!(
            "{id}) cp '{after}' \"$leases/$3.json\" ;;\n",
            id = wrapper_id(before),
            after = after.display()
        ));
    }
    let rch = world.fake_rch("rch", &format!("case \"$3\" in\n{cases}*) exit 1 ;;\nesac"));
    let (code, document) = world.json(&[
        "--rch",
        rch.to_str().expect("utf8"),
        "--stale-after",
        "5",
        "--max-recoveries",
        "64",
    ]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["recovered"], pairs.len(), "{document}");
    assert_eq!(document["failed"], 0, "{document}");
}

//! Journals written by the real rch, of two releases whose completions
//! differ, held in `tests/data/real-rch-<version>/` so CI checks rch's own
//! bytes without building rch: `scripts/real-rch-e2e.sh --rch-version V
//! --keep-journals` copied them from a run against real `rch exec` builds,
//! rchd and a worker over SSH (each folder's README says how each was
//! made). rch 2.1.34 (issue 33) marks each completion with the daemon's
//! exit code or `daemon_record_absent`; rch 2.1.16 (issue 40), older than
//! 2.1.17, hands nothing to its daemon and marks nothing, and a run whose
//! `rch --capabilities` names it (its stand-in prints what the real one
//! printed, `stdout-capabilities.txt`) counts the delivery alone.
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

use rch_sweep::judge::Completion;

/// A release whose real journals are kept: its folder, what `rch
/// --version` printed, what its completion carries, and how many of its
/// completions are `daemon_record_absent` ones.
struct Release {
    data: &'static str,
    version_line: &'static str,
    completion: Completion,
    record_absent: usize,
}

const RELEASES: [Release; 2] = [
    Release {
        data: concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/real-rch-2.1.34"),
        version_line: "rch 2.1.34",
        completion: Completion::DaemonMarked,
        record_absent: 1,
    },
    Release {
        data: concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/real-rch-2.1.16"),
        version_line: "rch 2.1.16",
        completion: Completion::DeliveryOnly,
        record_absent: 0,
    },
];

/// The journals of a release's folder by file stem
/// (`before-killed-mid-build`, ...).
fn journals(release: &Release) -> BTreeMap<String, PathBuf> {
    let data = release.data;
    let found: BTreeMap<String, PathBuf> = std::fs::read_dir(data)
        .unwrap_or_else(|error| panic!("{data}: {error}"))
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
        "no after-* journal in {data}"
    );
    found
}

/// The pairs (before, after) of one lease: `after-X` with `before-X`.
fn pairs(release: &Release) -> Vec<(String, PathBuf, PathBuf)> {
    let journals = journals(release);
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
fn rchs_completions_pass_the_completion_check_of_their_release() {
    for release in &RELEASES {
        let mut record_absent = 0;
        let mut unmarked = 0;
        for (case, before, after) in pairs(release) {
            let parsed = |path: &Path| {
                rch_sweep::lease::parse(&std::fs::read(path).expect("read"))
                    .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
            };
            let (before, after_lease) = (parsed(&before), parsed(&after));
            let check =
                |completion| rch_sweep::judge::verify_completion(&before, &after_lease, completion);
            assert_eq!(
                check(release.completion),
                Ok(()),
                "{}, {case}: rch's own completion refused",
                release.version_line
            );
            let recipe = &json(&after)["recovery"];
            if recipe["daemon_record_absent"] == true {
                assert!(recipe.get("daemon_exit_code").is_none(), "{case}");
                record_absent += 1;
            }
            if recipe.get("daemon_exit_code").is_none() && recipe["daemon_record_absent"] != true {
                // No daemon mark: only a check that knows the release takes it.
                assert_eq!(
                    check(Completion::DaemonMarked),
                    Err(rch_sweep::judge::NOT_ACKNOWLEDGED),
                    "{case}"
                );
                unmarked += 1;
            }
        }
        assert_eq!(
            record_absent, release.record_absent,
            "{}: completions without a daemon record",
            release.version_line
        );
        if release.completion == Completion::DeliveryOnly {
            assert_eq!(
                unmarked,
                pairs(release).len(),
                "{}: every completion unmarked",
                release.version_line
            );
        }
    }
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
    for release in &RELEASES {
        judged_as_rch_does(release);
    }
}

fn judged_as_rch_does(release: &Release) {
    for stage in ["before-", "after-"] {
        let journals = journals(release);
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
    let finished = PathBuf::from(release.data).join("finished-by-its-wrapper.json");
    copy_as_leases(&world, &[&finished]);
    let (code, document) = world.json(&["--dry-run", "--verbose", "--stale-after", "5"]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["leases"][0]["reason"], "terminal", "{document}");
}

#[test]
fn a_run_whose_rch_leaves_rchs_own_completions_counts_each_recovered() {
    for release in &RELEASES {
        recovered_as_rch_left_them(release);
    }
}

fn recovered_as_rch_left_them(release: &Release) {
    let world = World::new();
    let pairs = pairs(release);
    let mut cases = String::new();
    for (_, before, after) in &pairs {
        copy_as_leases(&world, &[before]);
        cases.push_str(&format!(
            "{id}) cp '{after}' \"$leases/$3.json\" ;;\n",
            id = wrapper_id(before),
            after = after.display()
        ));
    }
    let recover = format!("case \"$3\" in\n{cases}*) exit 1 ;;\nesac");
    let version = format!("echo '{}'", release.version_line);
    // What the real rch printed for --capabilities, kept beside its
    // journals.
    let kept = Path::new(release.data).join("stdout-capabilities.txt");
    assert!(kept.is_file(), "{}", kept.display());
    let capabilities = format!("cat '{}'", kept.display());
    let rch = world.fake_rch_with(
        "rch",
        &FakeRch {
            version: Some(&version),
            capabilities: Some(&capabilities),
            recover: &recover,
            ..FakeRch::default()
        },
    );
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
    assert_eq!(
        document["rch"]["version"], release.version_line,
        "{document}"
    );
    assert_eq!(document["failed"], 0, "{document}");
}

//! The table of rch's answers (src/rch/rch_says.rs) against rch's own sources
//! (issue 46): every phrase of a row stands in the sources of every
//! release the row names, and no row claims a release whose sources lack
//! it. The evidence is tests/data/rch-sources/ (its README says where it
//! came from), made by scripts/rch-source-evidence.py from the published
//! crates rch 2.1.0–2.1.34 and the rch-common each pins; no network here.

use rch_sweep::rch::rch_says::{self, Row, TABLE, Wording};
use rch_sweep::rch::release::Version;
use std::collections::{BTreeMap, BTreeSet};

const PHRASES: &str = include_str!("data/rch-sources/phrases.tsv");
const STD: &str = include_str!("data/rch-sources/std.tsv");

/// The evidence: for each phrase, the releases whose sources hold it
/// (with where), and every release looked at.
struct Evidence {
    found: BTreeMap<(String, Version), String>,
    phrases: BTreeSet<String>,
    releases: BTreeSet<Version>,
}

fn version(text: &str) -> Version {
    let parts: Vec<u64> = text
        .split('.')
        .map(|part| part.parse().expect("a release number"))
        .collect();
    assert_eq!(parts.len(), 3, "{text}");
    Version::new(parts[0], parts[1], parts[2])
}

fn evidence() -> Evidence {
    let mut evidence = Evidence {
        found: BTreeMap::new(),
        phrases: BTreeSet::new(),
        releases: BTreeSet::new(),
    };
    for line in PHRASES.lines().filter(|line| !line.starts_with('#')) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [phrase, release, file, number] = fields[..] else {
            panic!("not four fields: {line:?}");
        };
        let release = version(release);
        evidence.phrases.insert(phrase.to_owned());
        evidence.releases.insert(release);
        if file != "-" {
            evidence
                .found
                .insert((phrase.to_owned(), release), format!("{file}:{number}"));
        }
    }
    evidence
}

/// The releases looked at that `row` names.
fn named<'a>(row: &Row, evidence: &'a Evidence) -> Vec<&'a Version> {
    evidence
        .releases
        .iter()
        .filter(|release| **release >= row.first && row.last.is_none_or(|last| **release <= last))
        .collect()
}

#[test]
fn every_phrase_of_the_table_stands_in_the_sources_of_every_release_its_row_names() {
    let evidence = evidence();
    assert_eq!(
        evidence.releases.len(),
        31,
        "rch 2.1.0-2.1.34 (2.1.1, 2.1.5, 2.1.6, 2.1.14 were never published)"
    );
    let mut missing = Vec::new();
    for row in TABLE {
        let releases = named(row, &evidence);
        assert!(!releases.is_empty(), "{row:?} names no published release");
        // An OS error's words are std's; rch prints them in its `Error:`
        // line, with its whole error chain, in every release.
        let own: Vec<&str> = row
            .words
            .iter()
            .filter_map(|words| match words {
                Wording::Rch(phrase) => Some(*phrase),
                _ => None,
            })
            .collect();
        let phrases = if own.is_empty() {
            vec![rch_says::PRINTED]
        } else {
            own
        };
        for phrase in phrases {
            assert!(
                evidence.phrases.contains(phrase),
                "{phrase:?} is not in the evidence: rerun scripts/rch-source-evidence.py"
            );
            for release in &releases {
                if !evidence.found.contains_key(&(phrase.to_owned(), **release)) {
                    missing.push(format!("{phrase:?} in rch {release} ({:?})", row.meaning));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "rows claim releases whose sources lack their words:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_words_rch_takes_from_std_are_stds() {
    let std: BTreeMap<&str, &str> = STD
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once('\t'))
        .collect();
    assert_eq!(std.get("WOULD_BLOCK"), Some(&rch_says::WOULD_BLOCK));
    assert_eq!(std.get("LOCK_IO_ERROR"), Some(&rch_says::LOCK_IO_ERROR));
    for row in TABLE {
        for words in row.words {
            match words {
                Wording::Std(text) => assert!(
                    std.values().any(|known| known == text),
                    "{text:?} is not std's"
                ),
                Wording::Os(errno) => {
                    let shown = std::io::Error::from_raw_os_error(*errno).to_string();
                    assert!(shown.ends_with(&format!("(os error {errno})")), "{shown}");
                }
                Wording::Rch(_) => {}
            }
        }
    }
}

/// The evidence is the table's: no phrase is recorded that no row uses
/// (an old row left behind), and the script found each phrase somewhere.
#[test]
fn the_evidence_is_of_the_table_as_it_stands() {
    let evidence = evidence();
    let used: BTreeSet<&str> = TABLE
        .iter()
        .flat_map(|row| row.words.iter())
        .filter_map(|words| match words {
            Wording::Rch(phrase) => Some(*phrase),
            _ => None,
        })
        .chain([rch_says::PRINTED])
        .collect();
    let recorded: BTreeSet<&str> = evidence.phrases.iter().map(String::as_str).collect();
    assert_eq!(recorded, used, "rerun scripts/rch-source-evidence.py");
    for phrase in &evidence.phrases {
        assert!(
            evidence.found.keys().any(|(found, _)| found == phrase),
            "{phrase:?} stands in no release"
        );
    }
}

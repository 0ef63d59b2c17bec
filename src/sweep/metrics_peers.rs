//! Other metrics files that serve the same lease directory's series.
//!
//! node_exporter's textfile collector serves every `.prom` file of its
//! folder; two that hold `rch_sweep_` series for one lease directory (a
//! `--metrics-file` renamed, the old file left behind) make it serve one
//! file's series or the other's, a stale `exit_code 78` included, with no
//! scrape error. doctor's `metrics` check looks for such a file:
//! [`holds_series_for`] reads a text (pure), [`other_files_for`] reads the
//! folder, each file bounded and only when it is a regular file.

use crate::fsio;
use crate::sweep::metrics::lease_dir_label_value;
use std::path::{Path, PathBuf};

/// Whether a metrics text holds an `rch_sweep_` series whose `lease_dir`
/// label is `label_value` (escaped, as [`lease_dir_label_value`] gives
/// it): another file serving the same lease directory's series.
pub fn holds_series_for(text: &str, label_value: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start();
        let Some(rest) = line.strip_prefix("rch_sweep_") else {
            return false;
        };
        let Some((_, labels)) = rest.split_once('{') else {
            return false;
        };
        label_values(labels)
            .iter()
            .any(|(name, value)| name == "lease_dir" && value == label_value)
    })
}

/// The `name="value"` pairs after a series' `{`, values as written
/// (escapes kept), up to the closing `}`; what cannot be read ends it.
fn label_values(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches([' ', ',']);
        let Some((name, after)) = rest.split_once('=') else {
            return out;
        };
        if name.contains('}') {
            return out;
        }
        let Some(after) = after.trim_start().strip_prefix('"') else {
            return out;
        };
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = None;
        while let Some((index, c)) = chars.next() {
            match c {
                '\\' => {
                    value.push(c);
                    if let Some((_, next)) = chars.next() {
                        value.push(next);
                    }
                }
                '"' => {
                    end = Some(index + 1);
                    break;
                }
                c => value.push(c),
            }
        }
        let Some(end) = end else { return out };
        out.push((name.trim().to_owned(), value));
        rest = &after[end..];
    }
}

/// The most doctor reads of another `.prom` file, and how many it looks
/// at: a textfile folder holds a few small files.
const MAX_PEER_TEXT: u64 = 1024 * 1024;
const MAX_PEERS: usize = 1000;

/// The other `.prom` files in the folder of `path` that hold
/// `rch_sweep_` series for `lease_dir`, each read bounded, regular files
/// only (a FIFO or a device there is never waited on or read without end).
pub fn other_files_for(path: &Path, lease_dir: &Path) -> Vec<PathBuf> {
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let ours = path.file_name();
    let label = lease_dir_label_value(lease_dir);
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .take(MAX_PEERS)
        .map(|entry| entry.path())
        .filter(|other| {
            other.extension().is_some_and(|ext| ext == "prom") && other.file_name() != ours
        })
        .filter(|other| {
            fsio::read_regular_text(other, MAX_PEER_TEXT)
                .is_ok_and(|text| holds_series_for(&text, &label))
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_file_with_series_for_the_same_lease_directory_is_seen() {
        let label = lease_dir_label_value(Path::new("/home/a \"q\"/job-leases"));
        assert_eq!(label, "/home/a \\\"q\\\"/job-leases");
        let text = format!(
            "# HELP rch_sweep_last_run_timestamp_seconds x\n\
             node_load1 1\n\
             rch_sweep_exit_code{{instance=\"a,b}}\",lease_dir=\"{label}\"}} 78\n"
        );
        assert!(holds_series_for(&text, &label));
        assert!(!holds_series_for(&text, "/home/a/job-leases"));
        // Not an rch_sweep_ series, or in a comment: not ours.
        let other = format!(
            "node_x{{lease_dir=\"{label}\"}} 1\n# rch_sweep_x{{lease_dir=\"{label}\"}} 1\n"
        );
        assert!(!holds_series_for(&other, &label));
        assert!(!holds_series_for(
            "rch_sweep_x 1\nrch_sweep_y{lease_dir=\"/l",
            "/l"
        ));
    }

    #[test]
    fn other_prom_files_are_read_bounded_and_regular_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lease_dir = dir.path().join("job-leases");
        let line = format!(
            "rch_sweep_exit_code{{lease_dir=\"{}\"}} 78\n",
            lease_dir_label_value(&lease_dir)
        );
        let ours = dir.path().join("rch-sweep.prom");
        std::fs::write(&ours, &line).expect("write");
        std::fs::write(dir.path().join("old.prom"), &line).expect("write");
        std::fs::write(dir.path().join("old.prom.bak"), &line).expect("write");
        std::fs::write(
            dir.path().join("bob.prom"),
            "rch_sweep_exit_code{lease_dir=\"/b\"} 0\n",
        )
        .expect("write");
        crate::sys::fs::mkfifo(&dir.path().join("fifo.prom"), 0o600).expect("mkfifo");
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.prom")).expect("symlink");
        assert_eq!(
            other_files_for(&ours, &lease_dir),
            [dir.path().join("old.prom")]
        );
    }
}

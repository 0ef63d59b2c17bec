//! Defaults that come from the environment, read in one place: rch's lease
//! directory, the state file beside it, and the `rch` executable.
//!
//! The functions take the environment as a lookup function so the rules of
//! SPEC.md ("an empty variable counts as unset") are tested without touching
//! the process environment.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Reads the process environment; empty values count as unset.
pub fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|value| !value.is_empty())
}

/// rch's own lease directory: `$RCH_STATE_HOME/job-leases`, else
/// `$XDG_STATE_HOME/rch/job-leases`, else `$HOME/.local/state/rch/job-leases`,
/// else `/tmp/rch/job-leases`.
pub fn default_lease_dir(env: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    let var = |name: &str| env(name).filter(|value| !value.is_empty());
    let state_home = if let Some(home) = var("RCH_STATE_HOME") {
        PathBuf::from(home)
    } else if let Some(xdg) = var("XDG_STATE_HOME") {
        PathBuf::from(xdg).join("rch")
    } else if let Some(home) = var("HOME") {
        PathBuf::from(home).join(".local/state/rch")
    } else {
        PathBuf::from("/tmp/rch")
    };
    state_home.join("job-leases")
}

/// `<parent of the lease dir>/rch-sweep/backoff.json`: beside rch's own
/// state, so one user's sweep keeps one state however the lease dir was named.
pub fn default_state_file(lease_dir: &Path) -> PathBuf {
    let parent = match lease_dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        Some(_) => Path::new("."),
        None => lease_dir,
    };
    parent.join("rch-sweep").join("backoff.json")
}

/// Finds the `rch` to run: a value with a `/` is a path, a bare name is looked
/// up on `path_var` as a shell would. The error says what was looked for.
pub fn resolve_rch(value: &Path, path_var: Option<&OsStr>) -> Result<PathBuf, String> {
    if value.as_os_str().is_empty() {
        return Err("--rch is empty; pass the path of the rch client".to_owned());
    }
    if value.components().count() > 1 || value.is_absolute() {
        return if is_executable(value) {
            Ok(value.to_path_buf())
        } else if value.exists() {
            Err(format!(
                "{} is not an executable file; fix --rch / RCH_SWEEP_RCH",
                value.display()
            ))
        } else {
            Err(format!(
                "{} does not exist; install rch or point --rch / RCH_SWEEP_RCH at it",
                value.display()
            ))
        };
    }
    let searched = path_var.unwrap_or_default();
    std::env::split_paths(searched)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(value))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| {
            format!(
                "`{}` was not found on PATH ({}); install rch or pass --rch PATH / RCH_SWEEP_RCH",
                value.display(),
                searched.to_string_lossy()
            )
        })
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Most scan threads started without `RCH_SWEEP_SCAN_THREADS`: a scan reads
/// from one page cache or disk, and each thread holds a read buffer of up to
/// 1 MiB, so cores past this many would add memory sooner than speed.
pub const MAX_SCAN_THREADS: usize = 16;

/// Threads for the scan: `RCH_SWEEP_SCAN_THREADS` when it is a whole number
/// from 1 to 256 (a tuning and testing knob: 1 gives the serial scan), else
/// one per core this process may use as `available_parallelism` counts them
/// (CPU affinity and a cgroup CPU quota included), at most
/// [`MAX_SCAN_THREADS`]. Other values of the variable are ignored.
pub fn scan_threads(env: impl Fn(&str) -> Option<OsString>) -> usize {
    let chosen = env("RCH_SWEEP_SCAN_THREADS")
        .and_then(|value| value.to_str()?.trim().parse::<usize>().ok())
        .filter(|threads| (1..=256).contains(threads));
    chosen.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(MAX_SCAN_THREADS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), OsString::from(value)))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn lease_dir_follows_rchs_precedence_and_skips_empty_variables() {
        let all = [
            ("RCH_STATE_HOME", "/r"),
            ("XDG_STATE_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(default_lease_dir(env(&all)), Path::new("/r/job-leases"));
        assert_eq!(
            default_lease_dir(env(&[("RCH_STATE_HOME", ""), ("XDG_STATE_HOME", "/x")])),
            Path::new("/x/rch/job-leases")
        );
        assert_eq!(
            default_lease_dir(env(&[("XDG_STATE_HOME", ""), ("HOME", "/h")])),
            Path::new("/h/.local/state/rch/job-leases")
        );
        assert_eq!(
            default_lease_dir(env(&[("HOME", "")])),
            Path::new("/tmp/rch/job-leases")
        );
    }

    #[test]
    fn state_file_sits_beside_the_lease_dir() {
        assert_eq!(
            default_state_file(Path::new("/h/.local/state/rch/job-leases")),
            Path::new("/h/.local/state/rch/rch-sweep/backoff.json")
        );
        assert_eq!(
            default_state_file(Path::new("leases")),
            Path::new("./rch-sweep/backoff.json")
        );
        assert_eq!(
            default_state_file(Path::new("/")),
            Path::new("/rch-sweep/backoff.json")
        );
    }

    #[test]
    fn rch_is_found_on_path_or_refused_with_what_was_searched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rch = dir.path().join("rch");
        std::fs::write(&rch, "#!/bin/sh\n").expect("write");
        let not_exec = dir.path().join("plain");
        std::fs::write(&not_exec, "").expect("write");
        std::fs::set_permissions(&rch, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path_var = std::env::join_paths(["/nonexistent", dir.path().to_str().expect("utf8")])
            .expect("join");
        assert_eq!(
            resolve_rch(Path::new("rch"), Some(&path_var)),
            Ok(rch.clone())
        );
        assert_eq!(resolve_rch(&rch, None), Ok(rch));
        let missing = resolve_rch(Path::new("rch"), Some(OsStr::new("/nonexistent")))
            .expect_err("not on PATH");
        assert!(missing.contains("/nonexistent"), "{missing}");
        assert!(
            resolve_rch(&not_exec, None)
                .expect_err("not executable")
                .contains("not an executable")
        );
        assert!(
            resolve_rch(&dir.path().join("absent"), None)
                .expect_err("absent")
                .contains("does not exist")
        );
    }

    #[test]
    fn scan_threads_take_the_knob_or_the_cores() {
        let cores = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(MAX_SCAN_THREADS);
        assert_eq!(scan_threads(env(&[])), cores);
        assert_eq!(scan_threads(env(&[("RCH_SWEEP_SCAN_THREADS", "1")])), 1);
        assert_eq!(scan_threads(env(&[("RCH_SWEEP_SCAN_THREADS", " 7 ")])), 7);
        assert_eq!(scan_threads(env(&[("RCH_SWEEP_SCAN_THREADS", "256")])), 256);
        for ignored in ["0", "257", "-1", "two", ""] {
            assert_eq!(
                scan_threads(env(&[("RCH_SWEEP_SCAN_THREADS", ignored)])),
                cores,
                "{ignored:?}"
            );
        }
    }
}

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

/// Whether the variable `name` is set, to the empty string: unset to
/// [`process_env`], but not to every program (rch 2.1 joins an empty
/// `XDG_STATE_HOME` into a relative path), so doctor says so.
pub fn set_but_empty(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|value| value.is_empty())
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

/// The variables that name a path, each read by some command or by `rch`
/// under it: the flags' stand-ins and rch's own state homes.
pub const PATH_VARS: [&str; 8] = [
    "RCH_SWEEP_LEASE_DIR",
    "RCH_SWEEP_STATE_FILE",
    "RCH_SWEEP_RCH",
    "RCH_SWEEP_METRICS_FILE",
    "RCH_SOCKET_PATH",
    "RCH_DAEMON_SOCKET",
    "RCH_STATE_HOME",
    "XDG_STATE_HOME",
];

/// Refuses a path value that begins with `~`. Only a shell expands it, and
/// a unit's `Environment=` or a quoted crontab value reaches us unexpanded,
/// so `~/x` would name a folder called `~` in the working directory: a sweep
/// of a folder that does not exist, exiting 0 forever. Every variable of
/// [`PATH_VARS`] is looked at (the environment is the timer's, whatever this
/// command reads of it), then each option as given (`(flag, value)`; a
/// value that came from its variable was caught by the variable's name).
/// The error names the first offender and what to write instead.
pub fn refuse_tilde(
    env: impl Fn(&str) -> Option<OsString>,
    options: &[(&str, Option<&Path>)],
) -> Result<(), String> {
    let tilde = |value: &OsStr| value.as_encoded_bytes().first() == Some(&b'~');
    let offender = PATH_VARS
        .iter()
        .find_map(|name| env(name).filter(|value| tilde(value)).map(|v| (*name, v)))
        .or_else(|| {
            options.iter().find_map(|(flag, value)| {
                value
                    .filter(|value| tilde(value.as_os_str()))
                    .map(|value| (*flag, value.as_os_str().to_owned()))
            })
        });
    let Some((name, value)) = offender else {
        return Ok(());
    };
    let value = value.to_string_lossy();
    // Neither cron's variable lines nor a unit's Environment= expand
    // `$HOME` either: the full path always works.
    let instead = match (value.strip_prefix('~'), env("HOME")) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => format!(
            "write the full path ({}{rest}), or $HOME{rest} where a shell reads it, %h{rest} in a unit",
            Path::new(&home).display()
        ),
        _ => {
            "write the full path, or $HOME/... where a shell reads it, %h/... in a unit".to_owned()
        }
    };
    Err(format!(
        "{name} is {value:?}, which begins with `~`: no shell expanded it (a unit's Environment= or a quoted crontab value), so it would name a folder called `~`; {instead}"
    ))
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

/// Why no `rch` could be chosen: what was found (every place tried) and
/// what to do about it.
#[derive(Debug, PartialEq, Eq)]
pub struct RchNotFound {
    pub finding: String,
    pub fix: String,
}

impl std::fmt::Display for RchNotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; {}", self.finding, self.fix)
    }
}

/// Finds the `rch` to run, as `execvp` finds a program: the first candidate
/// that is a regular file this user may execute, so an entry this user
/// cannot run is passed over rather than chosen (and every recovery then
/// failing with "Permission denied"). An explicit value (`--rch` /
/// `RCH_SWEEP_RCH`) with a `/` is a path; a bare name is looked up on
/// `PATH`. Without one, `rch` is looked up on `PATH`, then where rch's
/// installers and admins put it (`$HOME/.local/bin`, `$HOME/.cargo/bin`,
/// `/usr/local/bin`), since a timer's or cron's `PATH` rarely holds them.
/// The error lists every place tried.
pub fn resolve_rch(
    explicit: Option<&Path>,
    path_var: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Result<PathBuf, RchNotFound> {
    let name = match explicit {
        Some(value) if value.as_os_str().is_empty() => {
            return Err(RchNotFound {
                finding: "--rch is empty".to_owned(),
                fix: "pass the path of the rch client".to_owned(),
            });
        }
        Some(value) if value.components().count() > 1 || value.is_absolute() => {
            return resolve_path(value);
        }
        Some(value) => value,
        None => Path::new("rch"),
    };
    let tried = rch_candidates(name, explicit.is_none(), path_var, home);
    if let Some(found) = tried.iter().find(|candidate| is_executable(candidate)) {
        return Ok(found.clone());
    }
    let mut places: Vec<String> = Vec::with_capacity(tried.len());
    let mut seen = std::collections::HashSet::new();
    for path in tried.iter().filter(|path| seen.insert(path.as_path())) {
        places.push(match std::fs::metadata(path) {
            Ok(_) => format!("{} (not executable by this user)", path.display()),
            Err(_) => path.display().to_string(),
        });
    }
    Err(RchNotFound {
        finding: format!(
            "`{}` was not found as a program this user may run (looked in: {})",
            name.display(),
            if places.is_empty() {
                "nowhere: PATH holds no absolute folder".to_owned()
            } else {
                places.join(", ")
            }
        ),
        fix: "install rch (or make it executable for this user) or pass --rch PATH / set RCH_SWEEP_RCH"
            .to_owned(),
    })
}

/// Where an admin installs `rch` by hand: the last fallback, for every user.
pub const LOCAL_RCH: &str = "/usr/local/bin/rch";

/// Every place a bare `name` is looked for, in order: each absolute `PATH`
/// entry (an empty or relative one would make the sweep's working
/// directory a place to find `rch` in), then (when no name was given) the
/// installers' folders under `home` and [`LOCAL_RCH`].
pub fn rch_candidates(
    name: &Path,
    with_fallbacks: bool,
    path_var: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Vec<PathBuf> {
    let mut tried: Vec<PathBuf> = std::env::split_paths(path_var.unwrap_or_default())
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .collect();
    if with_fallbacks {
        tried.extend(rch_fallbacks(home));
    }
    tried
}

/// The places `rch` is looked for after `PATH`, in order.
pub fn rch_fallbacks(home: Option<&OsStr>) -> Vec<PathBuf> {
    let mut places = Vec::with_capacity(3);
    if let Some(home) = home.filter(|home| !home.is_empty()) {
        let home = Path::new(home);
        places.push(home.join(".local/bin/rch"));
        places.push(home.join(".cargo/bin/rch"));
    }
    places.push(PathBuf::from(LOCAL_RCH));
    places
}

fn resolve_path(value: &Path) -> Result<PathBuf, RchNotFound> {
    if is_executable(value) {
        return Ok(value.to_path_buf());
    }
    let fix = "point --rch / RCH_SWEEP_RCH at an rch this user may run".to_owned();
    Err(match std::fs::metadata(value) {
        Ok(meta) if meta.is_file() => RchNotFound {
            finding: format!(
                "{} is not executable by this user (mode {:04o}, owner uid {})",
                value.display(),
                meta.permissions().mode() & 0o7777,
                std::os::unix::fs::MetadataExt::uid(&meta)
            ),
            fix,
        },
        Ok(_) => RchNotFound {
            finding: format!("{} is not an executable file", value.display()),
            fix,
        },
        Err(_) => RchNotFound {
            finding: format!("{} does not exist", value.display()),
            fix: "install rch or point --rch / RCH_SWEEP_RCH at it".to_owned(),
        },
    })
}

/// A regular file (after following links) that this user may execute, as
/// the kernel judges it (`faccessat(X_OK, AT_EACCESS)`: modes, ACLs, a
/// `noexec` mount). Root passes `X_OK` only where some execute bit is set.
pub fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file())
        && crate::fsio::may_access(path, libc::X_OK).is_ok()
}

/// Most scan threads started without `RCH_SWEEP_SCAN_THREADS`: a scan reads
/// from one page cache or disk, and each thread holds a read buffer and the
/// longest string of the journal it parses, so cores past this many would
/// add memory sooner than speed.
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
    fn a_path_beginning_with_a_tilde_is_refused_by_name() {
        let home = [("HOME", "/home/al")];
        assert_eq!(refuse_tilde(env(&home), &[("--lease-dir", None)]), Ok(()));
        let fine = Path::new("/srv/job-leases");
        let also_fine = Path::new("a~b");
        assert_eq!(
            refuse_tilde(
                env(&[("XDG_STATE_HOME", "/x~"), ("HOME", "/h")]),
                &[("--lease-dir", Some(fine)), ("--rch", Some(also_fine))]
            ),
            Ok(())
        );
        for name in PATH_VARS {
            let why = refuse_tilde(
                env(&[(name, "~/.local/state/rch/job-leases"), home[0]]),
                &[("--lease-dir", Some(fine))],
            )
            .expect_err(name);
            assert!(why.starts_with(&format!("{name} is \"~/")), "{why}");
            assert!(
                why.contains("(/home/al/.local/state/rch/job-leases)"),
                "{why}"
            );
        }
        let why = refuse_tilde(
            env(&[]),
            &[
                ("--lease-dir", Some(fine)),
                ("--metrics-file", Some(Path::new("~alice/m.prom"))),
            ],
        )
        .expect_err("flag");
        assert!(
            why.starts_with("--metrics-file is \"~alice/m.prom\""),
            "{why}"
        );
        assert!(why.ends_with("%h/... in a unit"), "{why}");
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
        assert_eq!(resolve_rch(None, Some(&path_var), None), Ok(rch.clone()));
        assert_eq!(
            resolve_rch(Some(Path::new("rch")), Some(&path_var), None),
            Ok(rch.clone())
        );
        assert_eq!(resolve_rch(Some(&rch), None, None), Ok(rch));
        let missing = resolve_rch(
            None,
            Some(OsStr::new("/nonexistent")),
            Some(OsStr::new("/h")),
        )
        .expect_err("not found")
        .to_string();
        for place in ["/nonexistent/rch", "/h/.local/bin/rch", "/h/.cargo/bin/rch"] {
            assert!(missing.contains(place), "{missing}");
        }
        assert!(
            resolve_rch(Some(&not_exec), None, None)
                .expect_err("not executable")
                .finding
                .contains("is not executable by this user")
        );
        assert!(
            resolve_rch(Some(&dir.path().join("absent")), None, None)
                .expect_err("absent")
                .finding
                .contains("does not exist")
        );
    }

    #[test]
    fn an_rch_this_user_may_not_run_is_passed_over_as_execvp_does() {
        let first = tempfile::tempdir().expect("tempdir");
        let second = tempfile::tempdir().expect("tempdir");
        let put = |dir: &Path, mode: u32| {
            let path = dir.join("rch");
            std::fs::write(&path, "#!/bin/sh\n").expect("write");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
            path
        };
        // No execute bit at all: not even root may run it.
        let unusable = put(first.path(), 0o600);
        let usable = put(second.path(), 0o755);
        let path_var = std::env::join_paths([first.path(), second.path()]).expect("join");
        assert_eq!(resolve_rch(None, Some(&path_var), None), Ok(usable.clone()));
        std::fs::remove_file(&usable).expect("rm");
        let refused = resolve_rch(None, Some(&path_var), None).expect_err("none usable");
        assert!(
            refused.finding.contains(&format!(
                "{} (not executable by this user)",
                unusable.display()
            )),
            "{refused}"
        );
        // A directory named rch is no program either.
        std::fs::create_dir(&usable).expect("mkdir");
        assert!(resolve_rch(None, Some(&path_var), None).is_err());
    }

    #[test]
    fn without_an_explicit_rch_the_installers_folders_are_tried_in_order() {
        let home = tempfile::tempdir().expect("tempdir");
        let install = |sub: &str| {
            let path = home.path().join(sub).join("rch");
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, "#!/bin/sh\n").expect("write");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            path
        };
        let path_var = OsStr::new("/usr/bin:/bin");
        let cargo = install(".cargo/bin");
        assert_eq!(
            resolve_rch(None, Some(path_var), Some(home.path().as_os_str())),
            Ok(cargo)
        );
        let local = install(".local/bin");
        assert_eq!(
            resolve_rch(None, Some(path_var), Some(home.path().as_os_str())),
            Ok(local)
        );
        // An explicit bare name is looked up on PATH only.
        assert!(
            resolve_rch(
                Some(Path::new("rch")),
                Some(path_var),
                Some(home.path().as_os_str())
            )
            .is_err()
        );
    }

    #[test]
    fn empty_and_relative_path_entries_are_skipped_and_usr_local_bin_comes_last() {
        let tried = rch_candidates(
            Path::new("rch"),
            true,
            Some(OsStr::new(":bin:/opt/rch/bin::./tools:/usr/bin")),
            Some(OsStr::new("/h")),
        );
        assert_eq!(
            tried,
            [
                "/opt/rch/bin/rch",
                "/usr/bin/rch",
                "/h/.local/bin/rch",
                "/h/.cargo/bin/rch",
                "/usr/local/bin/rch"
            ]
            .map(PathBuf::from)
        );
        // Without HOME the admin's folder is still tried; an explicit bare
        // name is looked up on PATH only.
        assert_eq!(
            rch_candidates(Path::new("rch"), true, None, None),
            [PathBuf::from(LOCAL_RCH)]
        );
        assert!(rch_candidates(Path::new("rch"), false, Some(OsStr::new("bin:")), None).is_empty());
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

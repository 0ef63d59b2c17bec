//! rch 2.1's config cache, as far as it explains the socket rch names.
//!
//! rch keeps its merged configuration, the built-in default socket
//! included, in `${XDG_CACHE_HOME:-$HOME/.cache}/rch/config.cache.json`,
//! keyed only by the fingerprints of its config files (rch's
//! `src/config.rs`, `try_read_cache`). The default socket is
//! `$XDG_RUNTIME_DIR/rch.sock` when that variable is set, else
//! `~/.cache/rch/rch.sock`; once a run without `XDG_RUNTIME_DIR` (a cron
//! job, a login without a user manager) wrote the cache, rch names
//! `~/.cache/rch/rch.sock` even where `XDG_RUNTIME_DIR` is set, so setting
//! that variable, the obvious fix, changes nothing. A message that only
//! said "set `XDG_RUNTIME_DIR`" would send an operator in circles; this
//! says when the cache is the likely reason and what to do about it.
//!
//! Plain functions over an environment lookup; nothing here reads a file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The variable that makes rch skip its cache (any value but empty or `0`).
pub const DISABLE_VAR: &str = "RCH_DISABLE_CONFIG_CACHE";

/// Where rch keeps the cache: `$XDG_CACHE_HOME/rch/config.cache.json` when
/// that variable is an absolute path (as the `directories` crate rch uses
/// reads it), else `$HOME/.cache/rch/config.cache.json`.
pub fn cache_file(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let var = |name: &str| env(name).filter(|value| !value.is_empty());
    let base = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("rch/config.cache.json"))
}

/// rch's `XDG_RUNTIME_DIR` as rch reads it for its default socket: set and
/// not blank.
pub fn runtime_dir(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    env("XDG_RUNTIME_DIR")
        .filter(|value| !value.to_string_lossy().trim().is_empty())
        .map(PathBuf::from)
}

/// When rch was asked in `env` with `XDG_RUNTIME_DIR` set and still named
/// `socket`, another socket than its default there: what that means and the
/// fix (the cache file named). None when `XDG_RUNTIME_DIR` is unset or rch
/// named the default under it.
pub fn stale_default_note(socket: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Option<String> {
    let runtime = runtime_dir(env)?;
    let default = runtime.join("rch.sock");
    if socket == default {
        return None;
    }
    let cache = cache_file(env)
        .map(|path| path.display().to_string())
        .unwrap_or_else(|| "~/.cache/rch/config.cache.json".to_owned());
    Some(format!(
        "rch was asked with XDG_RUNTIME_DIR={} set and still named {}, not {}: rch 2.1 keeps its merged configuration, the default socket included, in {cache}, keyed only by its config files, so a default resolved once without XDG_RUNTIME_DIR stays (unless a socket_path in rch's config.toml names it); remove {cache}, or set {DISABLE_VAR}=1",
        runtime.display(),
        socket.display(),
        default.display(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |name: &str| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        }
    }

    #[test]
    fn the_cache_lies_where_rch_keeps_it() {
        let home = env(&[("HOME", "/home/a")]);
        assert_eq!(
            cache_file(&home),
            Some(PathBuf::from("/home/a/.cache/rch/config.cache.json"))
        );
        let xdg = env(&[("HOME", "/home/a"), ("XDG_CACHE_HOME", "/c")]);
        assert_eq!(
            cache_file(&xdg),
            Some(PathBuf::from("/c/rch/config.cache.json"))
        );
        // A relative XDG_CACHE_HOME is ignored, as `directories` ignores it.
        let relative = env(&[("HOME", "/home/a"), ("XDG_CACHE_HOME", "c")]);
        assert_eq!(
            cache_file(&relative),
            Some(PathBuf::from("/home/a/.cache/rch/config.cache.json"))
        );
        assert_eq!(cache_file(&env(&[])), None);
    }

    #[test]
    fn the_note_is_given_only_when_rch_ignored_xdg_runtime_dir() {
        let set = env(&[("HOME", "/home/a"), ("XDG_RUNTIME_DIR", "/run/user/1000")]);
        let note =
            stale_default_note(Path::new("/home/a/.cache/rch/rch.sock"), &set).expect("a note");
        for words in [
            "XDG_RUNTIME_DIR=/run/user/1000 set and still named /home/a/.cache/rch/rch.sock",
            "remove /home/a/.cache/rch/config.cache.json",
            "RCH_DISABLE_CONFIG_CACHE=1",
        ] {
            assert!(note.contains(words), "{note} lacks {words}");
        }
        // rch named its default under XDG_RUNTIME_DIR: the cache is no reason.
        assert_eq!(
            stale_default_note(Path::new("/run/user/1000/rch.sock"), &set),
            None
        );
        // No XDG_RUNTIME_DIR (cron): rch's ~/.cache default is no mystery.
        for unset in [
            env(&[("HOME", "/home/a")]),
            env(&[("XDG_RUNTIME_DIR", " ")]),
        ] {
            assert_eq!(
                stale_default_note(Path::new("/home/a/.cache/rch/rch.sock"), &unset),
                None
            );
        }
    }
}

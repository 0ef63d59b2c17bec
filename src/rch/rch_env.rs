//! What every `rch` rch-sweep starts is told on top of rch-sweep's own
//! environment, and what is taken out of it: `--version`, `daemon status`,
//! `jobs recover`, and doctor's asks alike. [`for_rch`] and [`REMOVED`]
//! are the one place such an environment is made, so an `rch` started
//! anywhere gets the same settings (SPEC "What changed since the fifth
//! wave", "What rch is run with", and since the sixth, "rch's answer is
//! its `Error:` line").
//!
//! - With `RCH_JSON` (not empty, not `0`), `RCH_OUTPUT_FORMAT` or
//!   `TOON_DEFAULT_FORMAT` set, every rch 2.1.x prints an error as a JSON
//!   envelope on stdout and nothing on stderr (main.rs,
//!   `top_level_machine_output_requested`): the `Error:` line a lease is
//!   judged by would be gone, and every answer charged. They are removed.
//! - rch 2.1.34 otherwise runs an update check on every invocation whose
//!   cache is stale: colour-coded warnings in front of the error a lease
//!   is judged by, and the network tried from a timer.
//! - rch 2.1 otherwise caches its merged configuration, the socket
//!   included, in one entry of `~/.cache/rch/config.cache.json` keyed by
//!   the working directory's project configuration: the socket a cached
//!   rch names depends on where rch ran last, so doctor and the run could
//!   see different sockets, and a sweep would rewrite the user's cache.
//!   Without it rch resolves the socket from the route's own environment
//!   every time.

use std::ffi::OsString;

/// Set to `1`: no update-check thread (rch 2.1.34).
pub const NO_UPDATE_CHECK: &str = "RCH_NO_UPDATE_CHECK";

/// Set to `1`: rch neither reads nor writes its config cache.
pub const DISABLE_CONFIG_CACHE: &str = "RCH_DISABLE_CONFIG_CACHE";

/// Taken out of every `rch`'s environment: each turns rch's errors into
/// JSON on stdout. (`daemon status` asks for JSON with its own options.)
pub const REMOVED: &[&str] = &["RCH_JSON", "RCH_OUTPUT_FORMAT", "TOON_DEFAULT_FORMAT"];

/// The additions for one `rch` run: the two settings above, then `own`
/// (what this run adds, such as `RCH_STATE_HOME`). Every `rch` child is
/// given an environment made here.
pub fn for_rch(own: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = [NO_UPDATE_CHECK, DISABLE_CONFIG_CACHE]
        .into_iter()
        .map(|name| (name.into(), "1".into()))
        .collect();
    env.extend(own.into_iter().filter(|(name, _)| {
        name.as_os_str() != NO_UPDATE_CHECK && name.as_os_str() != DISABLE_CONFIG_CACHE
    }));
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rch_is_told_both_settings_before_its_own() {
        let own = vec![("RCH_STATE_HOME".into(), "/s".into())];
        let env = for_rch(own);
        let pairs: Vec<(&str, &str)> = env
            .iter()
            .map(|(name, value)| (name.to_str().unwrap(), value.to_str().unwrap()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("RCH_NO_UPDATE_CHECK", "1"),
                ("RCH_DISABLE_CONFIG_CACHE", "1"),
                ("RCH_STATE_HOME", "/s"),
            ]
        );
        assert_eq!(for_rch(Vec::new()).len(), 2);
        // No caller can turn them off by adding its own.
        let again = for_rch(vec![(DISABLE_CONFIG_CACHE.into(), "0".into())]);
        assert_eq!(again, for_rch(Vec::new()));
        // What is removed is never added back.
        assert!(
            env.iter()
                .all(|(name, _)| !REMOVED.iter().any(|removed| name == removed))
        );
    }
}

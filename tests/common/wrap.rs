//! The binary run under another program (`prlimit`, `strace`, `unshare`)
//! that acts on it from outside.

use std::process::Command;

/// `inner` (the binary with its arguments, environment and working
/// folder) run by `prefix` (e.g. `prlimit --nproc=1 --`, `strace ...`).
pub fn wrapped(prefix: &[&str], inner: &Command) -> Command {
    let mut outer = Command::new(prefix[0]);
    outer
        .args(&prefix[1..])
        .arg(inner.get_program())
        .args(inner.get_args());
    if let Some(dir) = inner.get_current_dir() {
        outer.current_dir(dir);
    }
    for (key, value) in inner.get_envs() {
        match value {
            Some(value) => outer.env(key, value),
            None => outer.env_remove(key),
        };
    }
    outer
}

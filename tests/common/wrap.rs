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

/// `inner` run by strace (`flags` first, e.g. `-f`), which traces
/// `syscalls` only, writes its trace nowhere, and injects `action` (e.g.
/// `error=EMFILE`, `error=EAGAIN:when=1`) into them.
pub fn under_strace(flags: &[&str], syscalls: &str, action: &str, inner: &Command) -> Command {
    let trace = format!("trace={syscalls}");
    let inject = format!("inject={syscalls}:{action}");
    let mut prefix = vec!["strace"];
    prefix.extend_from_slice(flags);
    prefix.extend_from_slice(&["-qq", "-o", "/dev/null", "-e", &trace, "-e", &inject]);
    wrapped(&prefix, inner)
}

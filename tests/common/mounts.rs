//! Mounts a test makes where only it sees them.

use std::process::Command;

/// `sh -c script` (its arguments added by the caller, `$1` on) in a new
/// mount namespace whose mounts propagate nowhere (`unshare --mount
/// --propagation private`): what it mounts leaks to no other process and
/// goes with it.
pub fn private_mount_namespace(script: &str) -> Command {
    let mut command = Command::new("unshare");
    command.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
    ]);
    command
}

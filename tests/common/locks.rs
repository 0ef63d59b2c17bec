//! A lock held by another process, as rchd's recovery task, an operator's
//! `rch jobs recover` or another sweep would hold it: util-linux's `flock`
//! keeping a `sleep` under an exclusive lock until released.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A process that holds an exclusive `flock` on `path`, returned once it
/// holds it. `flock` is the command that runs util-linux's `flock` (plain,
/// or entered into a namespace); `then` runs under the lock first, as `sh`
/// with `$0` the path. The holder is the leader of a process group of its
/// own, so that [`release`] ends the sleep that shares its lock too. The
/// file is made 0600, as rch makes a recovery lock (rch refuses, and a
/// sweep defers, one open to group or others).
pub fn hold_flock(mut flock: Command, path: &Path, then: &str) -> Child {
    let mut holder = flock
        .arg(path)
        .args([
            "sh",
            "-c",
            &format!("chmod 600 \"$0\"\n{then}\necho held; exec sleep 60"),
        ])
        .arg(path)
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("flock");
    let mut line = String::new();
    BufReader::new(holder.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    assert_eq!(line.trim(), "held");
    holder
}

/// Ends a holder and the command it runs (which shares its lock).
pub fn release(mut holder: Child) {
    let group = libc::pid_t::try_from(holder.id()).expect("pid");
    // SAFETY: signals the holder's own process group, made for it in
    // `hold_flock`.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let _ = holder.wait();
}

/// What `rch jobs recover` does first, as a fake's `sh` (with `$leases`
/// its lease directory and `$3` the lease): takes the lease's recovery
/// lock without waiting, and fails at once, saying so, when another
/// process holds it. Made 0600, as rch makes it.
pub const TAKE_RECOVERY_LOCK_SH: &str = "umask 077\nexec 9>\"$leases/$3.recovery.lock\"\n\
     flock -n 9 || { echo \"error: lease $3 is being recovered by another process\" >&2; exit 1; }";

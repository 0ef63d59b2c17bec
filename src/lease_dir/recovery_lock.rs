//! rch's recovery lock: `<lease dir>/<id>.recovery.lock`, one per lease,
//! which `rch jobs recover` holds (an exclusive `flock`) for the whole
//! recovery of that lease, whoever started it: rchd's own recovery task,
//! an operator at a terminal, or a sweep's child.
//!
//! It guards a lease's recovery, and lives in the lease directory, so it is
//! looked at here. This tool never opens, locks or creates it: opened,
//! locked or created by us, it could make rch's own `try_lock` fail. It is
//! only `stat`ed, and its holder found in `/proc/locks`
//! ([`crate::judge::proc_locks`]) by the file's inode and its mount's device (as
//! `/proc/locks` names it, on btrfs and overlayfs too).

use crate::judge::proc_locks;
use std::ffi::CString;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};

/// The process other than this one (and its `child`) that holds the
/// recovery lock of lease `id` in `lease_dir`. None when nobody holds it,
/// there is no such file, or it cannot be told (then `rch` is the judge).
pub fn holder(lease_dir: &Path, id: &str, child: Option<u32>) -> Option<u32> {
    let lock = lease_dir.join(format!("{id}.recovery.lock"));
    let own = std::process::id();
    proc_locks::holders(&lock, true)
        .ok()?
        .into_iter()
        .find(|pid| *pid != own && Some(*pid) != child)
}

/// The error of a lease someone else is recovering (`pid` holds its
/// recovery lock).
pub fn busy(pid: u32) -> String {
    format!("another process (pid {pid}) is recovering this lease")
}

/// Why rch will not use a recovery lock file (rch's `acquire_gate`,
/// 2.1.17–2.1.34: a regular file owned by the effective user, one link,
/// `mode & 0o077 == 0`, else `unsafe recovery lock file`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unsafe {
    /// Not a regular file: what it is instead.
    NotRegular(&'static str),
    /// Owned by another user than the one rch runs as.
    OtherOwner { owner: u32, user: u32 },
    /// More than one name for the file.
    Links(u64),
    /// Open to group or others: its permission bits.
    OpenToOthers(u32),
}

/// What `fstatat` says of a lock file, as plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockStat {
    /// `st_mode`: type and permission bits.
    pub mode: u32,
    pub uid: u32,
    pub nlink: u64,
}

/// Why rch, run as `user`, refuses a lock file that looks like `stat`:
/// empty when it does not. A file that is not regular is only that (its
/// mode and links say nothing then).
pub fn judge(stat: LockStat, user: u32) -> Vec<Unsafe> {
    let kind = match stat.mode & libc::S_IFMT {
        libc::S_IFREG => None,
        libc::S_IFLNK => Some("a symbolic link"),
        libc::S_IFDIR => Some("a folder"),
        libc::S_IFIFO => Some("a FIFO"),
        libc::S_IFSOCK => Some("a socket"),
        _ => Some("a device"),
    };
    if let Some(kind) = kind {
        return vec![Unsafe::NotRegular(kind)];
    }
    let mut found = Vec::new();
    if stat.uid != user {
        found.push(Unsafe::OtherOwner {
            owner: stat.uid,
            user,
        });
    }
    if stat.nlink > 1 {
        found.push(Unsafe::Links(stat.nlink));
    }
    if stat.mode & 0o077 != 0 {
        found.push(Unsafe::OpenToOthers(stat.mode & 0o7777));
    }
    found
}

/// A recovery lock rch refuses: where it is, why, and (for a file with
/// more than one name) the mount point its other names lie under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockRefusal {
    pub path: PathBuf,
    pub found: Vec<Unsafe>,
    pub mount: Option<PathBuf>,
}

/// Whether rch would refuse lease `id`'s recovery lock in the open lease
/// directory `dir` (at `lease_dir`), seen by `fstatat` without following a
/// link, for this process's effective user. None when there is no such
/// file, it cannot be looked at (rch is then the judge), or it is safe. A
/// sweep looks before it starts a child that would only be refused.
pub fn refusal_at(dir: BorrowedFd<'_>, lease_dir: &Path, id: &str) -> Option<LockRefusal> {
    let name = CString::new(format!("{id}.recovery.lock")).ok()?;
    let stat = crate::fsio::stat_at_nofollow(dir, &name).ok()?;
    #[allow(clippy::useless_conversion)] // st_nlink is u32 on some targets
    let stat = LockStat {
        mode: stat.st_mode,
        uid: stat.st_uid,
        nlink: u64::from(stat.st_nlink),
    };
    let found = judge(stat, crate::account::euid());
    if found.is_empty() {
        return None;
    }
    let mount = found
        .iter()
        .any(|why| matches!(why, Unsafe::Links(_)))
        .then(|| crate::judge::mounts::file_system_of(lease_dir).map(|(_, point)| point))
        .flatten();
    Some(LockRefusal {
        path: lease_dir.join(format!("{id}.recovery.lock")),
        found,
        mount,
    })
}

impl Unsafe {
    /// What is wrong, in words.
    fn what(&self) -> String {
        match self {
            Unsafe::NotRegular(kind) => format!("it is {kind}, not a regular file"),
            Unsafe::OtherOwner { owner, user } => format!(
                "it is owned by {}, not by {}",
                crate::account::describe(*owner),
                crate::account::describe(*user)
            ),
            Unsafe::Links(links) => {
                format!("it has {links} links (another name points at the same file)")
            }
            Unsafe::OpenToOthers(mode) => {
                format!("its mode {mode:04o} is open to group or others")
            }
        }
    }
}

impl LockRefusal {
    /// The error of its lease: the lock, what rch refuses in it, the fix.
    pub fn error(&self) -> String {
        let what: Vec<String> = self.found.iter().map(Unsafe::what).collect();
        format!(
            "rch refuses the recovery lock {} ({UNSAFE_LOCK}): {}; fix: {}",
            self.path.display(),
            what.join(", "),
            self.fix()
        )
    }

    /// The fix for what was found: a file that is not regular, or is
    /// another user's, is removed (rch makes a new one, 0600, on its next
    /// recovery); an extra link is removed; a mode open to others is
    /// closed. `chmod 600` only for the mode: it mends nothing else.
    pub fn fix(&self) -> String {
        let path = self.path.display();
        let mut fixes = Vec::new();
        for why in &self.found {
            match why {
                Unsafe::NotRegular(kind) => {
                    let rm = if *kind == "a folder" { "rm -r" } else { "rm" };
                    return format!("remove it ({rm} {path}); rch makes a new one");
                }
                Unsafe::OtherOwner { .. } => {
                    return format!("remove it as root (sudo rm {path}); rch makes a new one");
                }
                Unsafe::Links(_) => {
                    let under = self
                        .mount
                        .as_deref()
                        .unwrap_or(Path::new("/"))
                        .display()
                        .to_string();
                    fixes.push(format!(
                        "remove the extra link (find {under} -xdev -samefile {path} lists every name of it; keep {path})"
                    ));
                }
                Unsafe::OpenToOthers(_) => fixes.push(format!("chmod 600 {path}")),
            }
        }
        fixes.join(", then ")
    }
}

/// rch's words for a recovery lock it will not use (rch's phrase table,
/// [`crate::rch::rch_says`], takes it from here: the lock is judged in this
/// room, below that one).
pub const UNSAFE_LOCK: &str = "unsafe recovery lock file";

/// The error of a lease whose recovery lock at `path` rch refused, when a
/// look at it afterwards finds nothing wrong (it changed since).
pub fn refused_unseen(path: &Path) -> String {
    format!(
        "rch refused the recovery lock {} ({UNSAFE_LOCK}), which looks safe now (changed since?); the next run tries again",
        path.display()
    )
}

/// The most entries of `output-locks/` looked at: rch makes one per output
/// folder it ever published into.
const OUTPUT_LOCKS_LOOKED_AT: usize = 4096;

/// Another process holding one of rch's output-folder locks
/// (`<lease dir>/output-locks/<hash of the folder>`): rch's recovery of a
/// build waits up to 600 s for that lock before it publishes, printing
/// nothing meanwhile, so a child ended at the deadline (or by rch's own
/// `--timeout-secs`) may have been waiting for it. The lock, and its
/// holder's PID; None when none is held (or it cannot be told). Call it
/// once the child is gone: its own locks are then released.
pub fn output_lock_holder(lease_dir: &Path) -> Option<(PathBuf, u32)> {
    let folder = lease_dir.join("output-locks");
    let files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .ok()?
        .take(OUTPUT_LOCKS_LOOKED_AT)
        .filter_map(|entry| {
            let entry = entry.ok()?;
            entry.file_type().ok()?.is_file().then(|| entry.path())
        })
        .collect();
    let own = std::process::id();
    proc_locks::holders_of_any(&files)
        .ok()?
        .into_iter()
        .find(|(_, pid)| *pid != own)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::fs::PermissionsExt;

    fn regular(mode: u32, uid: u32, nlink: u64) -> LockStat {
        LockStat {
            mode: libc::S_IFREG | mode,
            uid,
            nlink,
        }
    }

    fn refusal(found: Vec<Unsafe>) -> LockRefusal {
        LockRefusal {
            path: "/l/rchw-x.recovery.lock".into(),
            found,
            mount: Some("/l".into()),
        }
    }

    #[test]
    fn rch_refuses_a_lock_on_four_counts_each_with_its_own_fix() {
        assert!(judge(regular(0o600, 7, 1), 7).is_empty());
        assert!(judge(regular(0o400, 7, 1), 7).is_empty());
        assert_eq!(
            judge(regular(0o644, 7, 1), 7),
            [Unsafe::OpenToOthers(0o644)]
        );
        assert_eq!(
            judge(regular(0o602, 7, 1), 7),
            [Unsafe::OpenToOthers(0o602)]
        );
        assert_eq!(judge(regular(0o600, 7, 2), 7), [Unsafe::Links(2)]);
        assert_eq!(
            judge(regular(0o600, 0, 1), 7),
            [Unsafe::OtherOwner { owner: 0, user: 7 }]
        );
        let link = LockStat {
            mode: libc::S_IFLNK | 0o777,
            uid: 7,
            nlink: 1,
        };
        assert_eq!(judge(link, 7), [Unsafe::NotRegular("a symbolic link")]);

        let mode = refusal(vec![Unsafe::OpenToOthers(0o644)]).error();
        assert!(
            mode.contains("mode 0644 is open to group or others"),
            "{mode}"
        );
        assert!(
            mode.ends_with("fix: chmod 600 /l/rchw-x.recovery.lock"),
            "{mode}"
        );
        // chmod 600 only for the mode.
        for found in [
            vec![Unsafe::Links(2)],
            vec![Unsafe::OtherOwner { owner: 0, user: 7 }],
            vec![Unsafe::NotRegular("a FIFO")],
        ] {
            let error = refusal(found).error();
            assert!(!error.contains("chmod"), "{error}");
            assert!(error.contains(UNSAFE_LOCK), "{error}");
        }
        assert!(
            refusal(vec![Unsafe::Links(2)]).fix().starts_with(
                "remove the extra link (find /l -xdev -samefile /l/rchw-x.recovery.lock"
            )
        );
        assert_eq!(
            refusal(vec![
                Unsafe::OtherOwner { owner: 0, user: 7 },
                Unsafe::OpenToOthers(0o644)
            ])
            .fix(),
            "remove it as root (sudo rm /l/rchw-x.recovery.lock); rch makes a new one"
        );
        assert_eq!(
            refusal(vec![Unsafe::NotRegular("a folder")]).fix(),
            "remove it (rm -r /l/rchw-x.recovery.lock); rch makes a new one"
        );
        assert_eq!(
            refusal(vec![Unsafe::Links(3), Unsafe::OpenToOthers(0o640)]).fix(),
            "remove the extra link (find /l -xdev -samefile /l/rchw-x.recovery.lock lists every name of it; keep /l/rchw-x.recovery.lock), then chmod 600 /l/rchw-x.recovery.lock"
        );
    }

    #[test]
    fn the_lock_is_looked_at_without_following_a_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = std::fs::File::open(dir.path()).expect("open");
        assert_eq!(refusal_at(open.as_fd(), dir.path(), "rchw-a"), None);
        let lock = dir.path().join("rchw-a.recovery.lock");
        std::fs::write(&lock, "").expect("write");
        std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(refusal_at(open.as_fd(), dir.path(), "rchw-a"), None);
        std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let found = refusal_at(open.as_fd(), dir.path(), "rchw-a").expect("open to others");
        assert_eq!(found.found, [Unsafe::OpenToOthers(0o644)]);
        assert_eq!(found.path, lock);
        std::os::unix::fs::symlink(&lock, dir.path().join("rchw-b.recovery.lock")).expect("ln");
        let found = refusal_at(open.as_fd(), dir.path(), "rchw-b").expect("a link");
        assert_eq!(found.found, [Unsafe::NotRegular("a symbolic link")]);
        std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::fs::hard_link(&lock, dir.path().join("second-name")).expect("link");
        let found = refusal_at(open.as_fd(), dir.path(), "rchw-a").expect("two links");
        assert_eq!(found.found, [Unsafe::Links(2)]);
        assert!(found.mount.is_some());
    }

    #[test]
    fn nobody_holds_an_output_lock_in_a_folder_without_any() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(output_lock_holder(dir.path()), None);
        std::fs::create_dir(dir.path().join("output-locks")).expect("mkdir");
        std::fs::write(dir.path().join("output-locks/abc"), "").expect("write");
        assert_eq!(output_lock_holder(dir.path()), None);
    }
}

//! The state lock: `flock` on `<state file>.lock`, held for the whole run
//! (and by `forget`), so two sweeps never recover the same lease or
//! overwrite each other's state. It guards the state file, so it sits
//! beside it: a separate file, because the state file's inode is replaced
//! on every save; never unlinked, because a waiter could then lock a dead
//! inode. (Two sweeps with different state files still meet on the lease
//! directory's own lock, [`crate::lease_dir::sweep_lock`].)

use super::folder::is_untrusted;
use crate::exit::{ExitCode, Fatal};
use crate::fsio::{self, Folder};
use crate::stat::FileKind;
use crate::sys;
use crate::sys::fs::TryLock;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Held until dropped; the kernel releases it if the process dies.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

#[derive(Debug)]
pub enum StateLockError {
    /// Another process holds it; the PID it wrote, when readable.
    Busy {
        holder: Option<u32>,
    },
    Io(io::Error),
}

/// `<state file>.lock`.
pub fn lock_path(state_file: &Path) -> PathBuf {
    let mut name = state_file.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the lock of `state_file` in its opened state folder `folder` for
/// a command; busy is exit 75 and any other failure exit 74, each with a
/// message naming the lock file.
pub fn acquire_for(folder: &Folder, state_file: &Path) -> anyhow::Result<StateLock> {
    let path = lock_path(state_file);
    let name = fsio::file_name(&path).map_err(StateLockError::Io);
    name.and_then(|name| acquire_in(folder, name))
        .map_err(|error| match error {
            StateLockError::Busy { holder } => Fatal::error(
                ExitCode::TempFail,
                format!(
                    "another rch-sweep{} holds {}; try again when it is done",
                    holder
                        .map(|pid| format!(" (pid {pid})"))
                        .unwrap_or_default(),
                    path.display()
                ),
            ),
            StateLockError::Io(error) if is_untrusted(&error) => {
                Fatal::error(ExitCode::Io, error.to_string())
            }
            StateLockError::Io(error) => Fatal::error(
                ExitCode::Io,
                format!("cannot lock {}: {error}", path.display()),
            ),
        })
}

/// Who holds the lock `file` (opened, not taken) as `/proc/locks` shows
/// it, for a lock file that names no PID (its holder wrote none): looked
/// up through the descriptor, by the device `/proc/locks` uses.
fn holder_in_proc_locks(file: &File) -> Option<u32> {
    let opened = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    let own = std::process::id();
    crate::judge::proc_locks::holders(&opened, true)
        .ok()?
        .into_iter()
        .find(|pid| *pid != own)
}

fn not_ours(what: &str) -> StateLockError {
    StateLockError::Io(io::Error::other(format!(
        "it is {what}; rch-sweep locks only a regular file of its own and left it as it is"
    )))
}

/// Takes the lock `name` in `folder` without waiting and writes our PID
/// into it. The folder is the private state folder, opened once by the
/// command and checked on its descriptor
/// ([`super::folder::open_private`]), and the lock is opened relative to
/// that descriptor, so it is never created in a folder someone else made
/// or swapped in.
pub fn acquire_in(folder: &Folder, name: &std::ffi::OsStr) -> Result<StateLock, StateLockError> {
    // O_NOFOLLOW: a link is refused, never followed; O_NONBLOCK: a FIFO
    // cannot hang the open. What was opened is checked before a byte is
    // written: only a regular file of this user's is ever our lock.
    let mut file = folder
        .open_at(
            name,
            libc::O_RDWR | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK,
            0o600,
        )
        .map_err(
            |error| match error.raw_os_error().and_then(FileKind::refused_open) {
                Some(kind) => not_ours(kind.described()),
                None => StateLockError::Io(error),
            },
        )?;
    let meta = file.metadata().map_err(StateLockError::Io)?;
    if !meta.is_file() {
        return Err(not_ours(FileKind::of(&meta).described()));
    }
    if meta.uid() != crate::account::euid() {
        return Err(not_ours("owned by another user"));
    }
    match sys::fs::try_lock_exclusive(file.as_fd()).map_err(StateLockError::Io)? {
        TryLock::Taken => {}
        TryLock::Busy => {
            let mut text = String::new();
            let holder = file
                .read_to_string(&mut text)
                .ok()
                .and_then(|_| text.trim().parse().ok())
                .or_else(|| holder_in_proc_locks(&file));
            return Err(StateLockError::Busy { holder });
        }
    }
    file.set_len(0).map_err(StateLockError::Io)?;
    file.rewind().map_err(StateLockError::Io)?;
    writeln!(file, "{}", std::process::id()).map_err(StateLockError::Io)?;
    Ok(StateLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lock at `path`, its folder opened as a command opens it.
    fn acquire(path: &Path) -> Result<StateLock, StateLockError> {
        let folder = super::super::folder::open_private(fsio::parent_dir(path))
            .map_err(StateLockError::Io)?;
        acquire_in(&folder, fsio::file_name(path).map_err(StateLockError::Io)?)
    }

    #[test]
    fn a_held_lock_is_seen_without_taking_it() {
        use crate::judge::proc_locks;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("backoff.json.lock");
        let held = acquire(&path).expect("lock");
        assert_eq!(
            proc_locks::holders(&path, false).expect("/proc/locks"),
            [std::process::id()]
        );
        drop(held);
        assert!(
            proc_locks::holders(&path, false)
                .expect("/proc/locks")
                .is_empty()
        );
    }

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = lock_path(&dir.path().join("backoff.json"));
        assert_eq!(path, dir.path().join("backoff.json.lock"));
        let held = acquire(&path).expect("first");
        match acquire(&path) {
            Err(StateLockError::Busy { holder }) => assert_eq!(holder, Some(std::process::id())),
            other => panic!("expected busy, got {other:?}"),
        }
        drop(held);
        assert!(acquire(&path).is_ok(), "released on drop");
    }

    #[test]
    fn a_link_or_a_folder_at_the_lock_path_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("target");
        std::fs::write(&target, "theirs").expect("write");
        let link = dir.path().join("link.lock");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let folder = dir.path().join("folder.lock");
        std::fs::create_dir(&folder).expect("mkdir");
        for path in [&link, &folder] {
            match acquire(path) {
                Err(StateLockError::Io(error)) => {
                    assert!(error.to_string().contains("left it as it is"), "{error}")
                }
                other => panic!("expected a refusal, got {other:?}"),
            }
        }
        assert_eq!(std::fs::read(&target).expect("read"), b"theirs");
    }
}

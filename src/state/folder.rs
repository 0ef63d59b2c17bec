//! The private state folder: where the state file and its lock live, and
//! the rule it must pass before anything is written into it.
//!
//! The state and the lock decide which leases a sweep recovers, and when;
//! a folder another user owns or can write to would let them swap either
//! under a sweep. So the folder is opened without following a link, judged
//! on that descriptor ([`trusted`]), and every later step (the lock's
//! open, a save's temporary file and rename, a quarantine) goes through
//! that same descriptor, an [`fsio::Folder`]: a folder someone made or
//! swapped in after any earlier look at the path is refused, never written
//! into. A refusal is a whole sentence naming the folder and the fix
//! ([`is_untrusted`]).

use crate::fsio::{self, Folder};
use std::fs::DirBuilder;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

/// A folder another user could write to lets them replace what is in it
/// (the lock, the state): it must be this user's or root's, and not
/// writable by group or others unless sticky (as `/tmp` is, where only
/// owners may rename).
pub fn trusted(uid: u32, mode: u32) -> bool {
    let owner_ok = uid == crate::account::euid() || uid == 0;
    let shared_write = mode & 0o022 != 0;
    let sticky = mode & libc::S_ISVTX != 0;
    owner_ok && (!shared_write || sticky)
}

/// Opens the private folder `path` (the state folder) to write into:
/// its last component is never followed (`O_DIRECTORY|O_NOFOLLOW`: a
/// link or anything but a folder is refused), and the opened folder must
/// pass [`trusted`], checked on the descriptor that every later
/// step uses. A folder swapped in by someone else after any earlier
/// look at the path is refused, never written into.
pub fn open_private(path: &Path) -> io::Result<Folder> {
    let folder = match Folder::open_nofollow(path) {
        Ok(folder) => folder,
        Err(error) => {
            // O_DIRECTORY meets a link first: ENOTDIR, as for a file.
            let link = std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_symlink());
            return Err(match error.raw_os_error() {
                Some(libc::ELOOP | libc::ENOTDIR) if link => untrusted(format!(
                    "state folder {} is a symbolic link; rch-sweep does not follow one to its lock and state, and wrote nothing there. Point --state-file / RCH_SWEEP_STATE_FILE into the real folder",
                    path.display()
                )),
                Some(libc::ENOTDIR) => untrusted(format!(
                    "state folder {} is not a directory. Point --state-file / RCH_SWEEP_STATE_FILE into a folder",
                    path.display()
                )),
                _ => error,
            });
        }
    };
    let meta = folder.metadata()?;
    if !trusted(meta.uid(), meta.mode()) {
        let euid = crate::account::euid();
        return Err(untrusted(format!(
            "state folder {shown} belongs to {owner} with mode {mode:04o}; it holds the lock and the state, so a folder another user owns or can write to could swap them under a sweep, and rch-sweep wrote nothing there. Make it yours and private (as its owner or root: chown {login} {shown} && chmod 0700 {shown}), or point --state-file / RCH_SWEEP_STATE_FILE into a folder of your own",
            shown = path.display(),
            owner = crate::account::describe(meta.uid()),
            mode = meta.mode() & 0o7777,
            login = crate::account::login(euid),
        )));
    }
    Ok(folder)
}

/// Creates the private folder `path` (`mkdir`, mode 0700, and any
/// missing folder above it the same way) unless it exists, then opens
/// and checks it as [`open_private`] does: one that someone else
/// made first, or swapped in since, is refused.
pub fn create_private(path: &Path) -> io::Result<Folder> {
    match DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            // Only the folders above are missing: made as `mkdir -p` would.
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(fsio::parent_dir(path))?;
            match DirBuilder::new().mode(0o700).create(path) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
        Err(error) => return Err(error),
    }
    open_private(path)
}

/// Why [`open_private`] refused a folder: a whole sentence naming it,
/// what it is and the fix, to be shown as it is.
#[derive(Debug)]
struct Untrusted(String);

impl std::fmt::Display for Untrusted {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for Untrusted {}

fn untrusted(sentence: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, Untrusted(sentence))
}

/// Whether `error` is [`open_private`]'s refusal of a folder, whose
/// message names the folder and the fix and needs no more context.
pub fn is_untrusted(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<Untrusted>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::fs::Permissions;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_folder_is_refused_unless_trusted_on_its_descriptor() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mine = dir.path().join("mine");
        create_private(&mine).expect("created");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&mine, &link).expect("symlink");
        let file = dir.path().join("file");
        std::fs::write(&file, "").expect("write");
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).expect("mkdir");
        std::fs::set_permissions(&shared, Permissions::from_mode(0o777)).expect("chmod");
        for (path, words) in [
            (&link, "is a symbolic link"),
            (&file, "is not a directory"),
            (&shared, "with mode 0777"),
        ] {
            for opened in [open_private(path), create_private(path)] {
                let error = opened.expect_err("refused");
                assert!(is_untrusted(&error), "{error}");
                assert!(error.to_string().contains(words), "{error}");
            }
        }
        assert!(!is_untrusted(
            &open_private(&dir.path().join("none")).expect_err("missing")
        ));
        // Sticky, as /tmp is: only owners may rename in it.
        std::fs::set_permissions(&shared, Permissions::from_mode(0o1777)).expect("chmod");
        assert!(open_private(&shared).is_ok());
        assert!(std::fs::read_dir(&mine).expect("list").next().is_none());
    }

    #[test]
    fn a_folder_swapped_after_it_was_opened_is_not_written_into() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state");
        let folder = create_private(&path).expect("created");
        let moved = dir.path().join("moved");
        std::fs::rename(&path, &moved).expect("rename");
        std::fs::create_dir(&path).expect("another folder at the path");
        let name = OsStr::new("backoff.json");
        folder.write_atomic(name, b"{}", 0o600).expect("write");
        assert_eq!(std::fs::read(moved.join(name)).expect("read"), b"{}");
        assert!(std::fs::read_dir(&path).expect("list").next().is_none());
        // Renames and leftovers stay in the opened folder too.
        folder
            .rename(name, OsStr::new("aside.json"))
            .expect("rename");
        std::fs::write(moved.join(".backoff.json.1.tmp"), "").expect("write");
        std::fs::write(path.join(".backoff.json.2.tmp"), "").expect("write");
        assert_eq!(
            folder.remove_stale_temps(name).expect("clean"),
            [path.join(".backoff.json.1.tmp")]
        );
        let mut left: Vec<_> = std::fs::read_dir(&moved)
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        left.sort();
        assert_eq!(left, ["aside.json"]);
        assert!(path.join(".backoff.json.2.tmp").exists());
    }

    #[test]
    fn private_dirs_are_created_0700() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nested = dir.path().join("a/b");
        create_private(&nested).expect("create");
        assert_eq!(
            std::fs::metadata(&nested).expect("meta").mode() & 0o777,
            0o700
        );
    }
}

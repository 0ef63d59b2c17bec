//! File primitives for what this tool writes: atomic replacement (temporary
//! file in the same folder, flushed, renamed, folder flushed) and cleanup of
//! temporary files a killed run left behind.
//!
//! Nothing here writes through or replaces a path this tool did not create:
//! [`existing`] classifies what is at a path without following a link, and
//! [`write_atomic`] refuses to rename over anything but a regular file owned
//! by this user.
//!
//! Temporary files are named `.<name>.<random>.tmp` so that a later run, holding
//! the lock, can recognise and remove the ones a SIGKILLed run could not.

use crate::stat::FileKind;
use std::ffi::OsString;
use std::fs::{DirBuilder, File, Permissions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The folder holding `path` ("." for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// What stands at a path, seen without following a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Existing {
    Missing,
    /// A regular file owned by this user: ours to read and replace.
    Ours(FileId),
    /// A regular file of another user.
    Foreign(FileId),
    /// Anything else: a symlink, directory, FIFO, socket or device.
    Other(FileKind),
}

/// Identifies one file, so a rename can check the path still names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    pub fn of(meta: &std::fs::Metadata) -> FileId {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

/// Classifies `path` with `lstat`, never following a final symlink.
pub fn existing(path: &Path) -> io::Result<Existing> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Existing::Missing),
        Err(error) => return Err(error),
    };
    Ok(match FileKind::of(&meta) {
        FileKind::Regular if meta.uid() == crate::account::euid() => {
            Existing::Ours(FileId::of(&meta))
        }
        FileKind::Regular => Existing::Foreign(FileId::of(&meta)),
        kind => Existing::Other(kind),
    })
}

/// `path` made absolute with every existing ancestor's symlinks resolved;
/// the part that does not exist yet is appended as written (`..` popped).
/// With `follow_final`, an existing final component is resolved too.
pub fn resolve(path: &Path, follow_final: bool) -> io::Result<PathBuf> {
    use std::path::Component;
    let absolute = std::path::absolute(path)?;
    let components: Vec<Component<'_>> = absolute.components().collect();
    let mut resolved = PathBuf::from("/");
    let mut exists = true;
    for (index, component) in components.iter().enumerate() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                resolved.push(name);
                let last = index + 1 == components.len();
                if exists && (follow_final || !last) {
                    match std::fs::canonicalize(&resolved) {
                        Ok(real) => resolved = real,
                        Err(_) => exists = false,
                    }
                }
            }
        }
    }
    Ok(resolved)
}

/// Whether this process may access `path` with `mode` (`R_OK`, `W_OK`,
/// `X_OK`), as the kernel judges it for the effective ids (modes, ACLs, a
/// read-only or `noexec` mount), without opening or running anything.
pub fn may_access(path: &Path, mode: libc::c_int) -> io::Result<()> {
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: `c_path` is a valid NUL-terminated string for the duration of
    // the call, which only reads it.
    let rc = unsafe { libc::faccessat(libc::AT_FDCWD, c_path.as_ptr(), mode, libc::AT_EACCESS) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether this process may create and rename files in `folder`.
pub fn may_write_into(folder: &Path) -> io::Result<()> {
    may_access(folder, libc::W_OK | libc::X_OK)
}

/// Creates `dir` (and missing parents) with mode 0700 if it does not exist.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

fn temp_prefix(path: &Path) -> io::Result<OsString> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    Ok(prefix)
}

const TEMP_SUFFIX: &str = ".tmp";

/// Replaces `path` with `bytes` so that a crash at any moment leaves either
/// the old file or the new one, never a torn one. tempfile does not fsync,
/// by design, so the data and the folder are flushed here. The file gets
/// exactly `mode` whatever the umask (the temporary file is `fchmod`ed):
/// under `umask 077` a metrics file must still be readable by
/// node_exporter, which runs as another user.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = parent_dir(path);
    let mut temp = tempfile::Builder::new()
        .prefix(&temp_prefix(path)?)
        .suffix(TEMP_SUFFIX)
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    temp.as_file()
        .set_permissions(Permissions::from_mode(mode))?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    match existing(path)? {
        Existing::Missing | Existing::Ours(_) => {}
        Existing::Foreign(_) => return Err(not_ours(path, "another user's file")),
        Existing::Other(kind) => return Err(not_ours(path, kind.described())),
    }
    temp.persist(path).map_err(|error| error.error)?;
    File::open(dir)?.sync_all()
}

fn not_ours(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{} is {what}; rch-sweep replaces only a regular file of its own and left it as it is",
            path.display()
        ),
    )
}

/// Removes temporary files of `path` left by a run that was killed while
/// writing it. Call only while holding the lock, so no live writer owns them.
pub fn remove_stale_temps(path: &Path) -> io::Result<Vec<PathBuf>> {
    let dir = parent_dir(path);
    let prefix = temp_prefix(path)?;
    let mut removed = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(removed),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let bytes = name.as_bytes();
        if bytes.starts_with(prefix.as_bytes()) && bytes.ends_with(TEMP_SUFFIX.as_bytes()) {
            let stale = entry.path();
            // Only what a killed run of ours can have left: our own regular
            // file. A link or another user's file of that name is not ours.
            if !matches!(existing(&stale)?, Existing::Ours(_)) {
                continue;
            }
            match std::fs::remove_file(&stale) {
                Ok(()) => removed.push(stale),
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn atomic_write_replaces_with_the_given_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.json");
        std::fs::write(&path, "old").expect("write");
        write_atomic(&path, b"new", 0o600).expect("atomic write");
        assert_eq!(std::fs::read(&path).expect("read"), b"new");
        assert_eq!(
            std::fs::metadata(&path).expect("meta").mode() & 0o777,
            0o600
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["state.json"]);
    }

    #[test]
    fn only_our_stale_temps_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("backoff.json");
        for name in [
            ".backoff.json.abc123.tmp",
            ".other.json.abc.tmp",
            "backoff.json.tmp",
        ] {
            std::fs::write(dir.path().join(name), "").expect("write");
        }
        std::os::unix::fs::symlink(
            dir.path().join("backoff.json.tmp"),
            dir.path().join(".backoff.json.link.tmp"),
        )
        .expect("symlink");
        let removed = remove_stale_temps(&path).expect("clean");
        assert_eq!(removed, [dir.path().join(".backoff.json.abc123.tmp")]);
        assert!(
            std::fs::symlink_metadata(dir.path().join(".backoff.json.link.tmp")).is_ok(),
            "a link is not ours to remove"
        );
        assert!(dir.path().join(".other.json.abc.tmp").exists());
        assert!(
            remove_stale_temps(&dir.path().join("absent/x.json"))
                .expect("ok")
                .is_empty()
        );
    }

    #[test]
    fn atomic_write_never_replaces_a_link_a_folder_or_a_fifo() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("target");
        std::fs::write(&target, "theirs").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let folder = dir.path().join("folder");
        std::fs::create_dir(&folder).expect("mkdir");
        for path in [&link, &folder] {
            let error = write_atomic(path, b"new", 0o600).expect_err("refused");
            assert!(error.to_string().contains("left it as it is"), "{error}");
        }
        assert_eq!(std::fs::read(&target).expect("read"), b"theirs");
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("lstat")
                .is_symlink()
        );
        assert!(folder.is_dir());
        assert_eq!(
            existing(&link).expect("lstat"),
            Existing::Other(FileKind::Symlink)
        );
        assert!(matches!(
            existing(&target).expect("lstat"),
            Existing::Ours(_)
        ));
        assert_eq!(
            existing(&dir.path().join("none")).expect("lstat"),
            Existing::Missing
        );
    }

    #[test]
    fn resolve_follows_existing_ancestors_and_keeps_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real");
        std::fs::create_dir(&real).expect("mkdir");
        std::os::unix::fs::symlink(&real, dir.path().join("alias")).expect("symlink");
        let real = std::fs::canonicalize(&real).expect("canonical");
        assert_eq!(
            resolve(&dir.path().join("alias/a/../b/c"), true).expect("resolve"),
            real.join("b/c")
        );
        assert_eq!(
            resolve(&dir.path().join("alias"), false).expect("resolve"),
            std::fs::canonicalize(dir.path())
                .expect("canonical")
                .join("alias")
        );
        assert_eq!(
            resolve(&dir.path().join("alias"), true).expect("resolve"),
            real
        );
    }

    #[test]
    fn private_dirs_are_created_0700() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nested = dir.path().join("a/b");
        ensure_private_dir(&nested).expect("create");
        assert_eq!(
            std::fs::metadata(&nested).expect("meta").mode() & 0o777,
            0o700
        );
    }
}

//! File primitives for what this tool writes: atomic replacement (temporary
//! file in the same folder, flushed, renamed, folder flushed) and cleanup of
//! temporary files a killed run left behind.
//!
//! Temporary files are named `.<name>.<random>.tmp` so that a later run, holding
//! the lock, can recognise and remove the ones a SIGKILLed run could not.

use std::ffi::OsString;
use std::fs::{DirBuilder, File, Permissions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The folder holding `path` ("." for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
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
/// by design, so the data and the folder are flushed here.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = parent_dir(path);
    let mut temp = tempfile::Builder::new()
        .prefix(&temp_prefix(path)?)
        .suffix(TEMP_SUFFIX)
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|error| error.error)?;
    File::open(dir)?.sync_all()
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
        let removed = remove_stale_temps(&path).expect("clean");
        assert_eq!(removed, [dir.path().join(".backoff.json.abc123.tmp")]);
        assert!(dir.path().join(".other.json.abc.tmp").exists());
        assert!(
            remove_stale_temps(&dir.path().join("absent/x.json"))
                .expect("ok")
                .is_empty()
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

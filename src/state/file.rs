//! Where the backoff state is loaded and saved. A missing file is an empty
//! state; a corrupt one is moved aside, never overwritten; a version this
//! build does not know is refused, never reinterpreted; a save replaces the
//! file atomically.

use super::backoff::{Backoff, VERSION};
use super::folder::open_private;
use crate::exit::{ExitCode, Fatal};
use crate::fsio::{self, Existing, FileId};
use crate::log;
use serde::Deserialize;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A state file larger than this is treated as corrupt (moved aside): even
/// 100,000 failing leases fit in a fraction of it.
pub const MAX_STATE_BYTES: u64 = 64 * 1024 * 1024;

/// Why bytes are not a usable state.
#[derive(Debug, PartialEq, Eq)]
pub enum Decode {
    /// Valid JSON with a `version` this build does not know.
    UnknownVersion(u64),
    /// Anything else that is not a version-1 state.
    Corrupt(String),
}

/// Parses a state file. Pure, so it can be fuzzed and tested on bytes.
pub fn decode(bytes: &[u8]) -> Result<Backoff, Decode> {
    #[derive(Deserialize)]
    struct VersionOnly {
        version: u64,
    }
    let probe: VersionOnly =
        serde_json::from_slice(bytes).map_err(|error| Decode::Corrupt(error.to_string()))?;
    if probe.version != VERSION {
        return Err(Decode::UnknownVersion(probe.version));
    }
    serde_json::from_slice(bytes).map_err(|error| Decode::Corrupt(error.to_string()))
}

/// What was found at the state file's path.
#[derive(Debug)]
pub enum StateFound {
    Missing,
    Valid(Backoff),
    Corrupt(String),
    UnknownVersion(u64),
}

/// What a command means to do with the state file. Only a run and `forget`
/// write it, so only they refuse a file they could not replace as their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// Refuses, before anything is created beside it, a state path this command
/// must not touch: anything but a regular file (a symlink is never
/// followed), and for writers another user's file. Exit 74, naming the path
/// and what stands there; nothing is renamed, created or written.
pub fn check_path(path: &Path, access: Access) -> anyhow::Result<Option<FileId>> {
    let refuse = |what: &str| {
        Fatal::error(
            ExitCode::Io,
            format!(
                "state file {} is {what}; rch-sweep reads and replaces only a regular file of its own, so it left it as it is. Move it away, or point --state-file / RCH_SWEEP_STATE_FILE elsewhere",
                path.display()
            ),
        )
    };
    match fsio::existing(path) {
        Ok(Existing::Missing) => Ok(None),
        Ok(Existing::Ours(id)) => Ok(Some(id)),
        Ok(Existing::Foreign(id)) if access == Access::Read => Ok(Some(id)),
        Ok(Existing::Foreign(_)) => Err(refuse("owned by another user")),
        Ok(Existing::Other(kind)) => Err(refuse(kind.described())),
        Err(error) => Err(Fatal::error(
            ExitCode::Io,
            format!("cannot read state file {}: {error}", path.display()),
        )),
    }
}

/// Reads the state file without changing anything. Never follows a link
/// and never blocks on a FIFO; what it read is identified by (dev, ino) so a
/// later move aside can check the path still names that very file.
pub fn read(path: &Path, access: Access) -> anyhow::Result<(StateFound, Option<FileId>)> {
    let io_error = |error: io::Error| {
        Fatal::error(
            ExitCode::Io,
            format!("cannot read state file {}: {error}", path.display()),
        )
    };
    if check_path(path, access)?.is_none() {
        return Ok((StateFound::Missing, None));
    }
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Ok((StateFound::Missing, None));
        }
        Err(error) => return Err(io_error(error)),
    };
    // Swapped since the check: judge what was opened.
    let meta = file.metadata().map_err(io_error)?;
    if !meta.is_file() || (access == Access::Write && meta.uid() != crate::account::euid()) {
        check_path(path, access)?;
        return Err(io_error(io::Error::other("it changed while being opened")));
    }
    let mut bytes = Vec::new();
    file.take(MAX_STATE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    let found = if bytes.len() as u64 > MAX_STATE_BYTES {
        StateFound::Corrupt(format!("larger than {MAX_STATE_BYTES} bytes"))
    } else {
        match decode(&bytes) {
            Ok(backoff) => StateFound::Valid(backoff),
            Err(Decode::UnknownVersion(version)) => StateFound::UnknownVersion(version),
            Err(Decode::Corrupt(why)) => StateFound::Corrupt(why),
        }
    };
    Ok((found, Some(FileId::of(&meta))))
}

/// A state file as a command sees it: an unknown version (78) or an I/O
/// error (74) ends the command with a message naming the file; a corrupt one
/// is the caller's to handle (a run moves it aside, a dry run warns).
#[derive(Debug)]
pub enum Loaded {
    Missing,
    Valid(Backoff),
    /// Why it does not parse, and which file that was.
    Corrupt(String, FileId),
}

pub fn load(path: &Path, access: Access) -> anyhow::Result<Loaded> {
    match read(path, access)? {
        (StateFound::Missing, _) | (_, None) => Ok(Loaded::Missing),
        (StateFound::Valid(backoff), _) => Ok(Loaded::Valid(backoff)),
        (StateFound::Corrupt(why), Some(id)) => Ok(Loaded::Corrupt(why, id)),
        (StateFound::UnknownVersion(version), _) => Err(Fatal::error(
            ExitCode::Config,
            format!(
                "state file {} has version {version}, which this rch-sweep does not know; left it untouched (upgrade rch-sweep, or move the file away)",
                path.display()
            ),
        )),
    }
}

/// The state for `status` and `forget`, which read it as it is: `None` when
/// there is none; a corrupt file is an error (only a run moves it aside).
pub fn load_existing(path: &Path, access: Access) -> anyhow::Result<Option<Backoff>> {
    match load(path, access)? {
        Loaded::Missing => Ok(None),
        Loaded::Valid(backoff) => Ok(Some(backoff)),
        Loaded::Corrupt(why, _) => Err(Fatal::error(
            ExitCode::Io,
            format!(
                "state file {} does not parse ({why}); the next run moves it aside",
                path.display()
            ),
        )),
    }
}

/// The state a real run starts from. A corrupt file is moved aside (kept
/// for a person to read, never overwritten) and the run starts with empty
/// backoff; should it not move, the run stops (74) rather than lose it.
pub fn load_for_run(path: &Path, now_ms: u64) -> anyhow::Result<Backoff> {
    match load(path, Access::Write)? {
        Loaded::Missing => Ok(Backoff::empty()),
        Loaded::Valid(backoff) => Ok(backoff),
        Loaded::Corrupt(why, read) => {
            let aside = quarantine(path, read, now_ms).map_err(|error| {
                Fatal::error(
                    ExitCode::Io,
                    format!(
                        "state file {} does not parse ({why}) and cannot be moved aside: {error}",
                        path.display()
                    ),
                )
            })?;
            log::warn(format!(
                "state file {} does not parse ({why}); moved it to {} and starting with empty backoff",
                path.display(),
                aside.display()
            ));
            Ok(Backoff::empty())
        }
    }
}

/// The state a dry run plans with, read only: a corrupt file is planned
/// around with a warning and left where it is.
pub fn load_for_plan(path: &Path) -> anyhow::Result<Backoff> {
    match load(path, Access::Read)? {
        Loaded::Missing => Ok(Backoff::empty()),
        Loaded::Valid(backoff) => Ok(backoff),
        Loaded::Corrupt(why, _) => {
            log::warn(format!(
                "state file {} does not parse ({why}); planning without backoff (a real run moves it aside)",
                path.display()
            ));
            Ok(Backoff::empty())
        }
    }
}

/// Moves the corrupt state file `read` to `<name>.corrupt-<unix_ms>` beside
/// it, only if the path still names that very file (same dev and inode),
/// within the state folder as checked on its descriptor ([`open_private`]).
pub fn quarantine(path: &Path, read: FileId, now_ms: u64) -> io::Result<PathBuf> {
    let folder = open_private(fsio::parent_dir(path))?;
    let name = fsio::file_name(path)?;
    match folder.existing(name)? {
        Existing::Ours(now) if now == read => {}
        _ => {
            return Err(io::Error::other(
                "it changed after it was read; left it as it is",
            ));
        }
    }
    let mut aside = name.to_os_string();
    aside.push(format!(".corrupt-{now_ms}"));
    folder.rename(name, &aside)?;
    Ok(path.with_file_name(aside))
}

/// Writes the state atomically, mode 0600, into the state folder as
/// checked on the descriptor the write goes through ([`open_private`]):
/// a folder someone swapped in since the run's checks, or a link, is an
/// error and nothing is written into it.
pub fn save(path: &Path, backoff: &Backoff) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(backoff).map_err(io::Error::other)?;
    bytes.push(b'\n');
    open_private(fsio::parent_dir(path))?.write_atomic(fsio::file_name(path)?, &bytes, 0o600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_example_decodes_and_unknown_keys_are_ignored() {
        let text = r#"{"version": 1, "last_success_unix_ms": 1791280003512, "future": true,
            "leases": {"rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10":
              {"failures": 2, "next_attempt_unix_ms": 1791281203512,
               "last_attempt_unix_ms": 1791280003512, "last_error": "exit status: 1: ...",
               "worker_id": "hz4", "build_id": 30052631078502447, "note": "x"}}}"#;
        let backoff = decode(text.as_bytes()).expect("decodes");
        assert_eq!(backoff.last_success_unix_ms, Some(1791280003512));
        let entry = &backoff.leases["rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10"];
        assert_eq!(entry.failures, 2);
        assert_eq!(entry.build_id, 30052631078502447);
    }

    #[test]
    fn versions_and_corruption_are_told_apart() {
        assert_eq!(decode(br#"{"version": 2}"#), Err(Decode::UnknownVersion(2)));
        for corrupt in [
            &b"{"[..],
            b"",
            b"[]",
            br#"{"leases": {}}"#,
            br#"{"version": "1"}"#,
            br#"{"version": 1, "leases": {"x": {"failures": -1}}}"#,
            br#"{"version": 1, "leases": []}"#,
        ] {
            assert!(
                matches!(decode(corrupt), Err(Decode::Corrupt(_))),
                "{}",
                String::from_utf8_lossy(corrupt)
            );
        }
        assert_eq!(decode(br#"{"version": 1}"#), Ok(Backoff::empty()));
    }

    #[test]
    fn a_fifo_a_folder_or_a_link_at_the_path_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo.json");
        crate::sys::fs::mkfifo(&fifo, 0o600).expect("mkfifo");
        let target = dir.path().join("target.json");
        std::fs::write(&target, "garbage").expect("write");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        for (path, kind) in [
            (&fifo, "a FIFO"),
            (&link, "a symbolic link"),
            (&dir.path().to_path_buf(), "a directory"),
        ] {
            for access in [Access::Read, Access::Write] {
                let error = read(path, access).expect_err("refused");
                assert_eq!(crate::exit::code_of(&error), ExitCode::Io);
                assert!(format!("{error:#}").contains(kind), "{error:#}");
            }
        }
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("lstat")
                .is_symlink()
        );
    }

    #[test]
    fn save_then_read_round_trips_and_quarantine_moves_aside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("backoff.json");
        assert!(matches!(
            read(&path, Access::Write).expect("read").0,
            StateFound::Missing
        ));
        let mut backoff = Backoff::empty();
        backoff.last_success_unix_ms = Some(5);
        save(&path, &backoff).expect("save");
        assert!(
            matches!(read(&path, Access::Write).expect("read").0, StateFound::Valid(b) if b == backoff)
        );
        std::fs::write(&path, "garbage").expect("write");
        let (found, id) = read(&path, Access::Write).expect("read");
        assert!(matches!(found, StateFound::Corrupt(_)));
        let id = id.expect("identified");
        let aside = quarantine(&path, id, 42).expect("quarantine");
        assert_eq!(aside, dir.path().join("backoff.json.corrupt-42"));
        assert_eq!(std::fs::read(&aside).expect("read"), b"garbage");
        assert!(!path.exists());
    }

    #[test]
    fn quarantine_leaves_a_file_that_changed_since_it_was_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("backoff.json");
        std::fs::write(&path, "garbage").expect("write");
        let (_, id) = read(&path, Access::Write).expect("read");
        // Replaced by another file since (a new inode at the same path).
        let other = dir.path().join("other");
        std::fs::write(&other, "new").expect("write");
        std::fs::rename(&other, &path).expect("rename");
        assert!(quarantine(&path, id.expect("identified"), 42).is_err());
        assert_eq!(std::fs::read(&path).expect("read"), b"new");
    }
}

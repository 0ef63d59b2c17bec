//! Where the backoff state is loaded and saved. A missing file is an empty
//! state; a corrupt one is moved aside, never overwritten; a version this
//! build does not know is refused, never reinterpreted; a save replaces the
//! file atomically.

use super::backoff::{Backoff, VERSION};
use crate::exit::{ExitCode, Fatal};
use crate::fsio::{self, Existing, FileId};
use crate::log;
use serde::Deserialize;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

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
    judge_existing(fsio::existing(path), path, access)
}

/// What stands at the state path (`existing`, however it was looked at),
/// judged for a command with `access`: its id when there is a file to
/// read, `None` when there is none; refused (74) as [`check_path`] says.
pub(super) fn judge_existing(
    existing: io::Result<Existing>,
    path: &Path,
    access: Access,
) -> anyhow::Result<Option<FileId>> {
    let refuse = |what: &str| {
        Fatal::error(
            ExitCode::Io,
            format!(
                "state file {} is {what}; rch-sweep reads and replaces only a regular file of its own, so it left it as it is. Move it away, or point --state-file / RCH_SWEEP_STATE_FILE elsewhere",
                path.display()
            ),
        )
    };
    match existing {
        Ok(Existing::Missing) => Ok(None),
        Ok(Existing::Ours(id)) => Ok(Some(id)),
        Ok(Existing::Foreign(id)) if access == Access::Read => Ok(Some(id)),
        Ok(Existing::Foreign(_)) => Err(refuse("owned by another user")),
        Ok(Existing::Other(kind)) => Err(refuse(kind.described())),
        Err(error) => Err(read_error(path, error)),
    }
}

/// An error reading the state file at `path` (74).
pub(super) fn read_error(path: &Path, error: io::Error) -> anyhow::Error {
    Fatal::error(
        ExitCode::Io,
        format!("cannot read state file {}: {error}", path.display()),
    )
}

/// Reads the state file without changing anything. Never follows a link
/// and never blocks on a FIFO; what it read is identified by (dev, ino) so a
/// later move aside can check the path still names that very file.
pub fn read(path: &Path, access: Access) -> anyhow::Result<(StateFound, Option<FileId>)> {
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
        Err(error) => return Err(read_error(path, error)),
    };
    // Swapped since the check: what stands there now is named.
    read_opened(file, path, access).map_err(|error| match check_path(path, access) {
        Err(refused) => refused,
        Ok(_) => error,
    })
}

/// Reads the state file opened (without following a link or blocking) as
/// `path`: what was opened is judged again (a file swapped since the
/// check is refused), then read whole up to the cap and decoded.
pub(super) fn read_opened(
    file: std::fs::File,
    path: &Path,
    access: Access,
) -> anyhow::Result<(StateFound, Option<FileId>)> {
    let io_error = |error: io::Error| read_error(path, error);
    let meta = file.metadata().map_err(io_error)?;
    if !meta.is_file() || (access == Access::Write && meta.uid() != crate::account::euid()) {
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
    loaded(path, read(path, access)?)
}

/// What was read of the state file at `path`, as a command sees it.
pub(super) fn loaded(path: &Path, read: (StateFound, Option<FileId>)) -> anyhow::Result<Loaded> {
    match read {
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
    existing(path, load(path, access)?)
}

/// The state of `loaded`, as `status` and `forget` take it.
pub(super) fn existing(path: &Path, loaded: Loaded) -> anyhow::Result<Option<Backoff>> {
    match loaded {
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
}

//! Where the backoff state is loaded and saved. A missing file is an empty
//! state; a corrupt one is moved aside, never overwritten; a version this
//! build does not know is refused, never reinterpreted; a save replaces the
//! file atomically.

use crate::backoff::{Backoff, VERSION};
use crate::exit::{ExitCode, Fatal};
use crate::fsio;
use serde::Deserialize;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
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
pub enum Found {
    Missing,
    Valid(Backoff),
    Corrupt(String),
    UnknownVersion(u64),
}

/// Reads the state file without changing anything.
pub fn read(path: &Path) -> io::Result<Found> {
    // O_NONBLOCK: a FIFO put at the path must not hang the run (and with
    // it the lock); the type is checked on the opened descriptor.
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Found::Missing),
        Err(error) => return Err(error),
    };
    if !file.metadata()?.is_file() {
        return Ok(Found::Corrupt("not a regular file".into()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_STATE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_STATE_BYTES {
        return Ok(Found::Corrupt(format!(
            "larger than {MAX_STATE_BYTES} bytes"
        )));
    }
    Ok(match decode(&bytes) {
        Ok(backoff) => Found::Valid(backoff),
        Err(Decode::UnknownVersion(version)) => Found::UnknownVersion(version),
        Err(Decode::Corrupt(why)) => Found::Corrupt(why),
    })
}

/// A state file as a command sees it: an unknown version (78) or an I/O
/// error (74) ends the command with a message naming the file; a corrupt one
/// is the caller's to handle (a run moves it aside, a dry run warns).
#[derive(Debug)]
pub enum Loaded {
    Missing,
    Valid(Backoff),
    Corrupt(String),
}

pub fn load(path: &Path) -> anyhow::Result<Loaded> {
    match read(path) {
        Ok(Found::Missing) => Ok(Loaded::Missing),
        Ok(Found::Valid(backoff)) => Ok(Loaded::Valid(backoff)),
        Ok(Found::Corrupt(why)) => Ok(Loaded::Corrupt(why)),
        Ok(Found::UnknownVersion(version)) => Err(Fatal::error(
            ExitCode::Config,
            format!(
                "state file {} has version {version}, which this rch-sweep does not know; left it untouched (upgrade rch-sweep, or move the file away)",
                path.display()
            ),
        )),
        Err(error) => Err(Fatal::error(
            ExitCode::Io,
            format!("cannot read state file {}: {error}", path.display()),
        )),
    }
}

/// The state for `status` and `forget`, which read it as it is: `None` when
/// there is none; a corrupt file is an error (only a run moves it aside).
pub fn load_existing(path: &Path) -> anyhow::Result<Option<Backoff>> {
    match load(path)? {
        Loaded::Missing => Ok(None),
        Loaded::Valid(backoff) => Ok(Some(backoff)),
        Loaded::Corrupt(why) => Err(Fatal::error(
            ExitCode::Io,
            format!(
                "state file {} does not parse ({why}); the next run moves it aside",
                path.display()
            ),
        )),
    }
}

/// Moves a corrupt state file to `<name>.corrupt-<unix_ms>` beside it.
pub fn quarantine(path: &Path, now_ms: u64) -> io::Result<PathBuf> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".corrupt-{now_ms}"));
    let aside = path.with_file_name(name);
    std::fs::rename(path, &aside)?;
    Ok(aside)
}

/// Writes the state atomically, mode 0600.
pub fn save(path: &Path, backoff: &Backoff) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(backoff).map_err(io::Error::other)?;
    bytes.push(b'\n');
    fsio::write_atomic(path, &bytes, 0o600)
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
    fn a_fifo_at_the_path_is_corrupt_not_a_hang() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("backoff.json");
        let c_path = std::ffi::CString::new(path.to_str().expect("utf8")).expect("cstring");
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        assert!(matches!(read(&path).expect("read"), Found::Corrupt(_)));
    }

    #[test]
    fn save_then_read_round_trips_and_quarantine_moves_aside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("backoff.json");
        assert!(matches!(read(&path).expect("read"), Found::Missing));
        let mut backoff = Backoff::empty();
        backoff.last_success_unix_ms = Some(5);
        save(&path, &backoff).expect("save");
        assert!(matches!(read(&path).expect("read"), Found::Valid(b) if b == backoff));
        std::fs::write(&path, "garbage").expect("write");
        assert!(matches!(read(&path).expect("read"), Found::Corrupt(_)));
        let aside = quarantine(&path, 42).expect("quarantine");
        assert_eq!(aside, dir.path().join("backoff.json.corrupt-42"));
        assert_eq!(std::fs::read(&aside).expect("read"), b"garbage");
        assert!(!path.exists());
    }
}

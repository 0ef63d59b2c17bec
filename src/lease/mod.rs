//! rch's durable lease journal (`DurableJobLease`, schema 1): what a lease
//! is, in rch's own shape, and the names that select a journal.
//!
//! rch loads a journal with `serde_json::from_slice::<DurableJobLease>`.
//! Here it is parsed into a struct with rch's field names, order and serde
//! attributes (so serde itself decides missing fields, duplicates, types
//! and the positional-array form, exactly as for rch: a journal rch would
//! refuse to load is `malformed`, never a recovery that fails forever),
//! whose fields keep only what the rules read. Unknown fields are allowed,
//! so journals of newer rch versions still parse. The rooms of this folder:
//!
//! - this file: the lease and its parts, and the wrapper ids that name
//!   journals;
//! - [`start`]: `process_birth.start` ([`ProcessStart`]), read by hand as
//!   serde's derive reads it, without holding its fields meanwhile;
//! - [`recipe`]: the recovery recipe ([`RecipeKeys`]), checked as rch's
//!   untyped `Value` checks it and kept only as far as the rules look into
//!   it;
//! - [`read`]: the bounded reader of an opened journal ([`read_lease`]):
//!   at most [`MAX_JOURNAL_BYTES`], from memory or as a stream;
//! - [`parse`](mod@parse): the parse itself, from memory or from a
//!   stream, as rch's loader parses (its tests hold it to rch's verdicts
//!   over rch's corpus);
//! - [`parse_gate`]: at most two journals over 1 MiB parsed at once.
//!
//! Where the journals are, and how one is opened, is [`crate::lease_dir`]'s.
//!
//! May use: the files at the top of `src/`; every folder above uses it.

pub mod parse;
pub mod parse_gate;
pub mod read;
pub mod recipe;
pub mod start;

pub use parse::{parse, parse_from};
pub use read::{MAX_JOURNAL_BYTES, ReadFailure, read_lease};
pub use recipe::{Kept, RecipeKeys};
pub use start::ProcessStart;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct JobIdentity {
    pub local_wrapper_id: String,
    #[serde(default)]
    pub remote_build_id: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseState {
    FailedBeforeAdmission,
    Queued,
    Running,
    Finished,
    Abandoned,
}

/// rch's native owner identity (`process_identity.rs`): the boot it ran in
/// and when it started. Its validity (canonical boot id, a platform this
/// machine can observe) is judged by `owner`, not here: only the shape is
/// rch's to demand.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ProcessIdentity {
    pub boot_id: String,
    pub start: ProcessStart,
}

/// rch's journal, field for field: the same names, order and serde
/// attributes as rch's `DurableJobLease`, so a journal rch would refuse to
/// load is `malformed` here rather than a recovery that fails forever, and
/// one it loads is judged on its merits. Where no rule reads a field, its
/// type checks what rch's type checks and keeps nothing ([`Unread`]); the
/// recipe keeps only the keys the rules read ([`RecipeKeys`]).
#[derive(Debug, Clone, Deserialize)]
pub struct DurableJobLease {
    pub schema_version: u32,
    pub identity: JobIdentity,
    pub wrapper_pid: u32,
    #[serde(default)]
    pub process_start_ticks: Option<u64>,
    #[serde(default)]
    pub boot_id: Option<String>,
    /// Typed as rch types it: a shape rch cannot deserialize makes the whole
    /// journal `malformed`, since `rch jobs recover` could not even load it.
    #[serde(default)]
    pub process_birth: Option<ProcessIdentity>,
    pub state: LeaseState,
    /// rch's `String`; no rule reads it.
    pub phase: Unread,
    #[serde(default)]
    pub worker_id: Option<String>,
    pub heartbeat_unix_ms: u64,
    pub strict_remote: bool,
    pub self_healing_enabled: bool,
    pub command_fingerprint: String,
    pub terminal_acknowledged: bool,
    /// rch's untyped `Option<serde_json::Value>`, checked as `Value` checks
    /// it and reduced to what the rules read.
    #[serde(default)]
    pub recovery: Option<RecipeKeys>,
    #[serde(default)]
    pub exit_code: Option<i32>,
}

/// A field rch types as `String` that no rule reads: accepted exactly when
/// a `String` would be (the same deserializer call and visitor methods),
/// and not kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unread;

impl<'de> Deserialize<'de> for Unread {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Unread, D::Error> {
        deserializer.deserialize_string(UnreadVisitor)
    }
}

/// serde's own `String` visitor, minus the string.
struct UnreadVisitor;

impl Visitor<'_> for UnreadVisitor {
    type Value = Unread;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a string")
    }

    fn visit_str<E>(self, _: &str) -> Result<Unread, E> {
        Ok(Unread)
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Unread, E> {
        match std::str::from_utf8(bytes) {
            Ok(_) => Ok(Unread),
            Err(_) => Err(E::invalid_value(de::Unexpected::Bytes(bytes), &self)),
        }
    }
}

/// `rchw-<uuid>` with the UUID in canonical lowercase hyphenated form: the
/// only names rch writes, and the only ones that may select a file.
pub fn is_wrapper_id(id: &str) -> bool {
    let Some(suffix) = id.strip_prefix("rchw-") else {
        return false;
    };
    is_canonical_uuid(suffix)
}

/// A UUID in canonical lowercase hyphenated form (what rch's `is_valid`
/// requires of a boot id, and of a wrapper id's suffix).
pub fn is_canonical_uuid(text: &str) -> bool {
    let Ok(uuid) = uuid::Uuid::try_parse(text) else {
        return false;
    };
    let mut buffer = uuid::Uuid::encode_buffer();
    uuid.hyphenated().encode_lower(&mut buffer) == text
}

/// The wrapper id a journal file name stands for, if the name is canonical.
pub fn wrapper_id_of(file_name: &[u8]) -> Option<&str> {
    let id = std::str::from_utf8(file_name.strip_suffix(b".json")?).ok()?;
    is_wrapper_id(id).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_wrapper_ids_are_accepted() {
        let id = "rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10";
        assert!(is_wrapper_id(id));
        for bad in [
            "rchw-6F1C3B7E-2A4D-4C8E-9B1F-3E5A7D9C2B10",
            "rchw-6f1c3b7e2a4d4c8e9b1f3e5a7d9c2b10",
            "rchw-{6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10}",
            "rchw-urn:uuid:6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10",
            "6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10",
            "rchw-",
            "rchw-../../etc/passwd",
        ] {
            assert!(!is_wrapper_id(bad), "{bad}");
        }
        assert_eq!(wrapper_id_of(format!("{id}.json").as_bytes()), Some(id));
        assert_eq!(wrapper_id_of(id.as_bytes()), None);
        assert_eq!(wrapper_id_of(b"rchw-\xff.json"), None);
    }
}

/// Journals in rch's shape, for the unit tests of this folder.
#[cfg(test)]
mod samples {
    /// A lease around `recovery` (raw JSON text).
    pub(super) fn with_recovery(recovery: &str) -> String {
        format!(
            r#"{{"schema_version": 1, "identity": {{"local_wrapper_id": "rchw-x"}},
               "wrapper_pid": 5, "state": "running", "phase": "execute",
               "heartbeat_unix_ms": 0, "strict_remote": false,
               "self_healing_enabled": true, "command_fingerprint": "blake3:x",
               "terminal_acknowledged": false, "recovery": {recovery}}}"#
        )
    }

    /// A lease whose `process_birth` is `birth` (raw JSON text).
    pub(super) fn with_birth(birth: &str) -> String {
        format!(
            r#"{{"schema_version": 1, "identity": {{"local_wrapper_id": "rchw-x"}},
               "wrapper_pid": 5, "process_birth": {birth}, "state": "running",
               "phase": "execute", "heartbeat_unix_ms": 0, "strict_remote": false,
               "self_healing_enabled": true, "command_fingerprint": "blake3:x",
               "terminal_acknowledged": false}}"#
        )
    }
}

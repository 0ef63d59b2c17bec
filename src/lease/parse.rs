//! Where a journal is parsed: its bytes, from memory or as a stream, into
//! a [`DurableJobLease`], exactly as rch's loader parses them.
//!
//! Both ways give the same verdicts as rch's own `from_slice` into its own
//! struct: the tests here hold them to it over rch's corpus of real and
//! mutated journals, and over hand-made recipes at the edges of what
//! `serde_json::Value` accepts. Reading a journal from its file (the size
//! cap, and which of the two ways) is [`super::read`]'s.

use super::DurableJobLease;
use serde::Deserialize;
use std::io::Read;

/// Parses one journal from `reader` as rch's loader parses it: the whole
/// input must be one lease, with nothing but whitespace after it.
/// serde_json's recursion limit keeps deeply nested input from exhausting
/// the stack.
pub fn parse_from(reader: impl Read) -> Result<DurableJobLease, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_reader(reader);
    let lease = DurableJobLease::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(lease)
}

/// Parses journal bytes, as [`super::read_lease`] parses a file that fits its
/// buffer, and as rch does (`from_slice`).
pub fn parse(bytes: &[u8]) -> Result<DurableJobLease, serde_json::Error> {
    serde_json::from_slice(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::samples::{with_birth, with_recovery};
    use crate::lease::{JobIdentity, Kept, LeaseState, ProcessIdentity, RecipeKeys};
    use std::path::Path;

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        assert!(parse(deep.as_bytes()).is_err());
        let deep_recipe = format!(r#"{{"recovery": {}}}"#, "[".repeat(100_000));
        assert!(parse(deep_recipe.as_bytes()).is_err());
    }

    /// rch's own `DurableJobLease`, as rch-lease-format.md §1 gives it: the
    /// reference that [`DurableJobLease`] must accept and refuse exactly as,
    /// and read the same facts from, while keeping far less.
    #[derive(Deserialize)]
    struct RchLease {
        schema_version: u32,
        identity: JobIdentity,
        wrapper_pid: u32,
        #[serde(default)]
        process_start_ticks: Option<u64>,
        #[serde(default)]
        boot_id: Option<String>,
        #[serde(default)]
        process_birth: Option<ProcessIdentity>,
        state: LeaseState,
        #[allow(dead_code)]
        phase: String,
        #[serde(default)]
        worker_id: Option<String>,
        heartbeat_unix_ms: u64,
        strict_remote: bool,
        self_healing_enabled: bool,
        command_fingerprint: String,
        terminal_acknowledged: bool,
        #[serde(default)]
        recovery: Option<serde_json::Value>,
        #[serde(default)]
        exit_code: Option<i32>,
    }

    /// What a rule reading `value` (a recipe key's value) would see.
    fn kept_of(value: Option<&serde_json::Value>, keep_text: bool) -> Kept {
        use serde_json::Value;
        match value {
            None => Kept::Absent,
            Some(Value::Null) => Kept::Null,
            Some(Value::Bool(value)) => Kept::Bool(*value),
            Some(Value::Number(number)) => Kept::Number(number.clone()),
            Some(Value::String(text)) => Kept::String(keep_text.then(|| text.clone())),
            Some(Value::Array(items)) => Kept::Array(items.len()),
            Some(Value::Object(_)) => Kept::Object,
        }
    }

    /// The recipe `recovery` should be read as, from rch's `Value`.
    fn recipe_of(recovery: &serde_json::Value) -> RecipeKeys {
        let key = |key: &str| kept_of(recovery.get(key), false);
        RecipeKeys {
            object: recovery.is_object(),
            version: key("version"),
            wrapper_id: kept_of(recovery.get("wrapper_id"), true),
            build_id: key("build_id"),
            worker_id: match recovery.get("worker") {
                Some(serde_json::Value::Object(worker)) => kept_of(worker.get("id"), true),
                _ => Kept::Absent,
            },
            source_roots: key("source_roots"),
            pair: key("pair"),
            retire_root: key("retire_root"),
            retired: key("retired"),
            sources_released: key("sources_released"),
            pair_released: key("pair_released"),
            tree_retired: key("tree_retired"),
            returned: key("returned"),
            daemon_exit_code: key("daemon_exit_code"),
            daemon_record_absent: key("daemon_record_absent"),
        }
    }

    /// Whether `bytes` is read by both of our parsers, [`parse`] (from
    /// memory) and [`parse_from`] (a stream, for journals past the buffer),
    /// as rch's loader (`from_slice` into rch's struct) reads it: all refuse
    /// it (false), or all accept it and see the same facts (true); else what
    /// differs.
    fn agrees_with_rch(bytes: &[u8]) -> Result<bool, String> {
        let from_memory =
            agrees_with_rch_by(bytes, parse(bytes)).map_err(|why| format!("from memory: {why}"))?;
        let streamed = agrees_with_rch_by(bytes, parse_from(bytes))
            .map_err(|why| format!("streamed: {why}"))?;
        Ok(from_memory && streamed)
    }

    fn agrees_with_rch_by(
        bytes: &[u8],
        ours: Result<DurableJobLease, serde_json::Error>,
    ) -> Result<bool, String> {
        let rch = serde_json::from_slice::<RchLease>(bytes);
        let (rch, ours) = match (rch, ours) {
            (Err(_), Err(_)) => return Ok(false),
            (Ok(_), Err(error)) => return Err(format!("rch loads it, ours: {error}")),
            (Err(error), Ok(_)) => return Err(format!("rch refuses it ({error}), ours loads it")),
            (Ok(rch), Ok(ours)) => (rch, ours),
        };
        let same = rch.schema_version == ours.schema_version
            && rch.identity == ours.identity
            && rch.wrapper_pid == ours.wrapper_pid
            && rch.process_start_ticks == ours.process_start_ticks
            && rch.boot_id == ours.boot_id
            && rch.process_birth == ours.process_birth
            && rch.state == ours.state
            && rch.worker_id == ours.worker_id
            && rch.heartbeat_unix_ms == ours.heartbeat_unix_ms
            && rch.strict_remote == ours.strict_remote
            && rch.self_healing_enabled == ours.self_healing_enabled
            && rch.command_fingerprint == ours.command_fingerprint
            && rch.terminal_acknowledged == ours.terminal_acknowledged
            && rch.exit_code == ours.exit_code;
        if !same {
            return Err("a top-level field reads differently".into());
        }
        let expected = rch.recovery.as_ref().map(recipe_of);
        if expected != ours.recovery {
            return Err(format!(
                "the recipe reads differently: rch {expected:?}, ours {:?}",
                ours.recovery
            ));
        }
        Ok(true)
    }

    const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/rch-corpus");

    #[test]
    fn every_corpus_journal_reads_as_rchs_loader_reads_it() {
        let mut loaded = 0;
        let mut seen = 0;
        let mut mismatches = Vec::new();
        for folder in ["job-leases", "targets"] {
            let dir = Path::new(CORPUS).join(folder);
            for entry in std::fs::read_dir(&dir).expect("the vendored corpus") {
                let path = entry.expect("entry").path();
                if path.is_symlink() {
                    continue;
                }
                let bytes = std::fs::read(&path).expect("journal");
                seen += 1;
                match agrees_with_rch(&bytes) {
                    Ok(true) => loaded += 1,
                    Ok(false) => {}
                    Err(why) => mismatches.push(format!("{}: {why}", path.display())),
                }
            }
        }
        assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
        // 878 regular journals and the one target of a link.
        assert_eq!(seen, 879);
        assert!(loaded > 250, "only {loaded} loaded");
    }

    /// `text` with `placeholder` replaced by `bytes`, and `extra` put just
    /// before its last byte (the lease's closing brace).
    fn spliced(text: &str, placeholder: &[u8], bytes: &[u8], extra: &[u8]) -> Vec<u8> {
        let mut text = text.as_bytes().to_vec();
        let spot = text
            .windows(placeholder.len())
            .position(|window| window == placeholder)
            .expect("placeholder");
        text.splice(spot..spot + placeholder.len(), bytes.iter().copied());
        let end = text.len() - 1;
        text.splice(end..end, extra.iter().copied());
        text
    }

    #[test]
    fn the_recipe_is_read_as_rchs_value_reads_it() {
        let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let cases = [
            r#"{"retired": false, "retired": true}"#.to_owned(),
            r#"{"source_roots": ["/a"], "source_roots": []}"#.to_owned(),
            r#"{"worker": {"id": "a", "id": "b"}}"#.to_owned(),
            r#"{"worker": {"id": "a"}, "worker": {"host": "h"}}"#.to_owned(),
            r#"{"worker": {"id": 5}, "wrapper_id": ["rchw-x"]}"#.to_owned(),
            r#"{"worker": "hz4", "build_id": 7.0, "version": -2}"#.to_owned(),
            r#"{"returned": 18446744073709551615, "daemon_exit_code": -9223372036854775808}"#
                .to_owned(),
            r#"{"returned": 18446744073709551616, "build_id": 1e308, "version": -0}"#.to_owned(),
            r#"{"returned": 1e309}"#.to_owned(),
            r#"{"returned": -9223372036854775809}"#.to_owned(),
            r#"{"pair": null, "retire_root": {}, "tree_retired": "yes"}"#.to_owned(),
            r#"{"daemon_record_absent": true, "daemon_record_absent": "true"}"#.to_owned(),
            r#"{"daemon_record_absent": false, "daemon_record_absent": true}"#.to_owned(),
            r#"{"\u0072etired": true, "retired\u0000": false}"#.to_owned(),
            r#"{"wrapper_id": "rchw-\u0078", "worker": {"\u0069d": "w\"1"}}"#.to_owned(),
            r#"{"phases": [{"baseline": {"a\ud800": "x"}}]}"#.to_owned(),
            r#"{"phases": [{"baseline": {"a": "\udc00"}}]}"#.to_owned(),
            r#"{"phases": [{"baseline": {"a": "\ud83d\ude00"}}]}"#.to_owned(),
            r#"{"phases": [{"baseline": {"a": "\x"}}]}"#.to_owned(),
            "{\"phases\": [{\"baseline\": {\"a\": \"tab\tinside\"}}]}".to_owned(),
            r#"{"phases": [01]}"#.to_owned(),
            r#"{"phases": [1,]}"#.to_owned(),
            r#"{"phases": {"a": 1,}}"#.to_owned(),
            r#"{"phases": [1.]}"#.to_owned(),
            r#"{1: 2}"#.to_owned(),
            r#"[1, {"retired": true}]"#.to_owned(),
            r#""recipe""#.to_owned(),
            "true".to_owned(),
            "-1.5e3".to_owned(),
            "null".to_owned(),
            format!(r#"{{"phases": {}}}"#, deep(124)),
            format!(r#"{{"phases": {}}}"#, deep(125)),
            format!(r#"{{"phases": {}}}"#, deep(126)),
            deep(125),
            deep(126),
            deep(127),
        ];
        let mut loaded = 0;
        for recovery in &cases {
            match agrees_with_rch(with_recovery(recovery).as_bytes()) {
                Ok(true) => loaded += 1,
                Ok(false) => {}
                Err(why) => panic!("recovery {recovery}: {why}"),
            }
        }
        // Raw bytes that are not UTF-8: in a kept key, in a dropped one, and
        // in an unknown top-level field (which rch skips unchecked).
        for (recovery, extra) in [
            (&b"{\"wrapper_id\": \"\xff\"}"[..], &b""[..]),
            (&b"{\"identity\": \"\xc0\x80\"}"[..], &b""[..]),
            (&b"{\"\xed\xa0\x80\": 1}"[..], &b""[..]),
            (&b"{}"[..], &b", \"unknown\": \"\xff\""[..]),
        ] {
            let text = spliced(&with_recovery("RECIPE"), b"RECIPE", recovery, extra);
            match agrees_with_rch(&text) {
                Ok(true) => loaded += 1,
                Ok(false) => {}
                Err(why) => panic!("{}: {why}", String::from_utf8_lossy(&text)),
            }
        }
        // Some of each kind, so the comparison is not all refusals.
        assert!((10..cases.len()).contains(&loaded), "{loaded} loaded");
    }

    #[test]
    fn phase_is_checked_as_the_string_rch_reads_and_an_unknown_field_is_not() {
        let lease = |phase: &[u8], unknown: &[u8]| {
            spliced(&with_birth("null"), b"\"execute\"", phase, unknown)
        };
        assert!(parse(&lease(b"\"sync_up\"", b"")).is_ok());
        for bad in [&b"\"\xff\""[..], b"null", b"5", b"[]", b"\"\\ud800\""] {
            assert!(
                parse(&lease(bad, b"")).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        // rch skips an unknown field without checking its bytes: so do we.
        assert!(parse(&lease(b"\"x\"", b", \"note\": \"\xff\"")).is_ok());
    }
}

//! The recovery recipe (`recovery` in a journal), read as rch reads it but
//! kept only as far as the rules of SPEC.md look into it.
//!
//! rch stores the recipe as an untyped `serde_json::Value`, so its loader
//! accepts any JSON there and rejects only what `Value` rejects: bad syntax,
//! a string that is not UTF-8 or holds a lone surrogate, a number out of
//! `f64`'s range, nesting past serde_json's depth limit. The recipe of a
//! large build is most of its journal (a fingerprint for every output file
//! in `phases[].baseline` and `published`), so building a `Value` would make
//! memory grow with the journal. [`RecipeKeys`] instead makes exactly the
//! deserializer calls `Value`'s own visitor makes (`deserialize_any` at every
//! level, string map keys, last duplicate key wins) and keeps only the keys
//! the rules read, each reduced to a [`Kept`]; everything else is checked on
//! the way past and dropped.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;
use std::fmt;

/// One recipe value as far as a rule can tell it apart: what
/// `serde_json::Value`'s `is_null`, `as_bool`, `as_u64`, `as_i64`,
/// `as_str` and `as_array().len()` would say of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Kept {
    /// The key is not in the recipe (`Value::get` gives None).
    #[default]
    Absent,
    Null,
    Bool(bool),
    /// Built as `Value` builds it, so `as_u64` and `as_i64` agree with it.
    Number(Number),
    /// A string; its text is kept only for the keys a rule compares
    /// (`wrapper_id`, `worker.id`).
    String(Option<String>),
    /// An array of this many elements.
    Array(usize),
    Object,
}

impl Kept {
    /// `recipe[key].is_null()`: absent or null.
    pub fn is_null(&self) -> bool {
        matches!(self, Kept::Absent | Kept::Null)
    }

    /// `recipe.get(key).is_some_and(|v| !v.is_null())`.
    pub fn is_set(&self) -> bool {
        !self.is_null()
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Kept::Bool(value) => Some(*value),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Kept::Number(number) => number.as_u64(),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Kept::Number(number) => number.as_i64(),
            _ => None,
        }
    }

    /// The text of a string whose text was kept.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Kept::String(text) => text.as_deref(),
            _ => None,
        }
    }

    /// `as_array().map(Vec::len)`.
    pub fn array_len(&self) -> Option<usize> {
        match self {
            Kept::Array(len) => Some(*len),
            _ => None,
        }
    }
}

/// The recipe keys SPEC's rules read (ownership, the settled handoff, the
/// completion check). A recipe that is not an object has none of them, as
/// `Value::get` finds nothing in an array or a string.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecipeKeys {
    /// Whether the recipe is a JSON object.
    pub object: bool,
    pub version: Kept,
    pub wrapper_id: Kept,
    pub build_id: Kept,
    /// `worker.id` (absent when `worker` is no object or has no `id`).
    pub worker_id: Kept,
    pub source_roots: Kept,
    pub pair: Kept,
    pub retire_root: Kept,
    pub retired: Kept,
    pub sources_released: Kept,
    pub pair_released: Kept,
    pub tree_retired: Kept,
    pub returned: Kept,
    pub daemon_exit_code: Kept,
    /// rch 2.1.34's mark of a completion whose build its daemon no longer
    /// knew (after rch's 24-hour cap): it stands in for `daemon_exit_code`.
    pub daemon_record_absent: Kept,
}

impl<'de> Deserialize<'de> for RecipeKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RecipeKeys, D::Error> {
        deserializer.deserialize_any(RecipeKeysVisitor)
    }
}

/// The recipe keys that are kept; any other key's value is only checked.
enum KeptKey {
    Version,
    WrapperId,
    BuildId,
    Worker,
    SourceRoots,
    Pair,
    RetireRoot,
    Retired,
    SourcesReleased,
    PairReleased,
    TreeRetired,
    Returned,
    DaemonExitCode,
    DaemonRecordAbsent,
    Other,
}

impl KeptKey {
    fn of(key: &str) -> KeptKey {
        match key {
            "version" => KeptKey::Version,
            "wrapper_id" => KeptKey::WrapperId,
            "build_id" => KeptKey::BuildId,
            "worker" => KeptKey::Worker,
            "source_roots" => KeptKey::SourceRoots,
            "pair" => KeptKey::Pair,
            "retire_root" => KeptKey::RetireRoot,
            "retired" => KeptKey::Retired,
            "sources_released" => KeptKey::SourcesReleased,
            "pair_released" => KeptKey::PairReleased,
            "tree_retired" => KeptKey::TreeRetired,
            "returned" => KeptKey::Returned,
            "daemon_exit_code" => KeptKey::DaemonExitCode,
            "daemon_record_absent" => KeptKey::DaemonRecordAbsent,
            _ => KeptKey::Other,
        }
    }
}

/// A map key, read as `Value` reads one: a string (`deserialize_str`, as
/// its `KeyClassifier` asks), classified by `classify` without being kept.
pub struct KeySeed<F>(pub F);

impl<'de, F: FnOnce(&str) -> T, T> DeserializeSeed<'de> for KeySeed<F> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de, F: FnOnce(&str) -> T, T> Visitor<'de> for KeySeed<F> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<T, E> {
        Ok((self.0)(key))
    }
}

struct RecipeKeysVisitor;

impl<'de> Visitor<'de> for RecipeKeysVisitor {
    type Value = RecipeKeys;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<RecipeKeys, E> {
        Ok(RecipeKeys::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<RecipeKeys, E> {
        Ok(RecipeKeys::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<RecipeKeys, E> {
        Ok(RecipeKeys::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<RecipeKeys, E> {
        Ok(RecipeKeys::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<RecipeKeys, E> {
        Ok(RecipeKeys::default())
    }

    fn visit_none<E>(self) -> Result<RecipeKeys, E> {
        Ok(RecipeKeys::default())
    }

    fn visit_unit<E>(self) -> Result<RecipeKeys, E> {
        Ok(RecipeKeys::default())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<RecipeKeys, D::Error> {
        RecipeKeys::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RecipeKeys, A::Error> {
        skip_seq(seq)?;
        Ok(RecipeKeys::default())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RecipeKeys, A::Error> {
        let mut recipe = RecipeKeys {
            object: true,
            ..RecipeKeys::default()
        };
        // A later duplicate replaces an earlier value, as `Map::insert` does.
        while let Some(key) = map.next_key_seed(KeySeed(KeptKey::of))? {
            let text = KeptSeed { keep_text: true };
            let plain = KeptSeed { keep_text: false };
            match key {
                KeptKey::Version => recipe.version = map.next_value_seed(plain)?,
                KeptKey::WrapperId => recipe.wrapper_id = map.next_value_seed(text)?,
                KeptKey::BuildId => recipe.build_id = map.next_value_seed(plain)?,
                KeptKey::Worker => recipe.worker_id = map.next_value::<WorkerId>()?.0,
                KeptKey::SourceRoots => recipe.source_roots = map.next_value_seed(plain)?,
                KeptKey::Pair => recipe.pair = map.next_value_seed(plain)?,
                KeptKey::RetireRoot => recipe.retire_root = map.next_value_seed(plain)?,
                KeptKey::Retired => recipe.retired = map.next_value_seed(plain)?,
                KeptKey::SourcesReleased => recipe.sources_released = map.next_value_seed(plain)?,
                KeptKey::PairReleased => recipe.pair_released = map.next_value_seed(plain)?,
                KeptKey::TreeRetired => recipe.tree_retired = map.next_value_seed(plain)?,
                KeptKey::Returned => recipe.returned = map.next_value_seed(plain)?,
                KeptKey::DaemonExitCode => recipe.daemon_exit_code = map.next_value_seed(plain)?,
                KeptKey::DaemonRecordAbsent => {
                    recipe.daemon_record_absent = map.next_value_seed(plain)?
                }
                KeptKey::Other => map.next_value::<Checked>().map(drop)?,
            }
        }
        Ok(recipe)
    }
}

/// Reads one value into a [`Kept`], with `Value`'s calls.
#[derive(Clone, Copy)]
pub struct KeptSeed {
    keep_text: bool,
}

impl KeptSeed {
    /// A seed that keeps no text: enough to tell a number's type and range
    /// (`Kept::as_u64` accepts exactly what serde's `u64` accepts).
    pub fn numbers() -> KeptSeed {
        KeptSeed { keep_text: false }
    }
}

impl<'de> DeserializeSeed<'de> for KeptSeed {
    type Value = Kept;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Kept, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeptSeed {
    type Value = Kept;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Kept, E> {
        Ok(Kept::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Kept, E> {
        Ok(Kept::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Kept, E> {
        Ok(Kept::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Kept, E> {
        // `Value` turns a non-finite float into null.
        Ok(Number::from_f64(value).map_or(Kept::Null, Kept::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Kept, E> {
        Ok(Kept::String(self.keep_text.then(|| value.to_owned())))
    }

    fn visit_string<E>(self, value: String) -> Result<Kept, E> {
        Ok(Kept::String(self.keep_text.then_some(value)))
    }

    fn visit_none<E>(self) -> Result<Kept, E> {
        Ok(Kept::Null)
    }

    fn visit_unit<E>(self) -> Result<Kept, E> {
        Ok(Kept::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Kept, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Kept, A::Error> {
        skip_seq(seq).map(Kept::Array)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Kept, A::Error> {
        skip_map(map)?;
        Ok(Kept::Object)
    }
}

/// `recovery.worker`, of which only `id` is kept (absent unless `worker` is
/// an object with an `id`, as `recipe["worker"]["id"]` finds nothing else).
struct WorkerId(Kept);

impl<'de> Deserialize<'de> for WorkerId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<WorkerId, D::Error> {
        deserializer.deserialize_any(WorkerVisitor)
    }
}

struct WorkerVisitor;

impl<'de> Visitor<'de> for WorkerVisitor {
    type Value = WorkerId;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<WorkerId, E> {
        Ok(WorkerId(Kept::Absent))
    }

    fn visit_i64<E>(self, _: i64) -> Result<WorkerId, E> {
        Ok(WorkerId(Kept::Absent))
    }

    fn visit_u64<E>(self, _: u64) -> Result<WorkerId, E> {
        Ok(WorkerId(Kept::Absent))
    }

    fn visit_f64<E>(self, _: f64) -> Result<WorkerId, E> {
        Ok(WorkerId(Kept::Absent))
    }

    fn visit_str<E>(self, _: &str) -> Result<WorkerId, E> {
        Ok(WorkerId(Kept::Absent))
    }

    fn visit_none<E>(self) -> Result<WorkerId, E> {
        Ok(WorkerId(Kept::Absent))
    }

    fn visit_unit<E>(self) -> Result<WorkerId, E> {
        Ok(WorkerId(Kept::Absent))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<WorkerId, D::Error> {
        WorkerId::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<WorkerId, A::Error> {
        skip_seq(seq)?;
        Ok(WorkerId(Kept::Absent))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WorkerId, A::Error> {
        let mut id = Kept::Absent;
        while let Some(is_id) = map.next_key_seed(KeySeed(|key: &str| key == "id"))? {
            if is_id {
                id = map.next_value_seed(KeptSeed { keep_text: true })?;
            } else {
                map.next_value::<Checked>()?;
            }
        }
        Ok(WorkerId(id))
    }
}

/// Any JSON value, checked with exactly the calls `Value` would make for it
/// and then dropped: `deserialize_any` at every level, so serde_json applies
/// its depth limit, number ranges and string checks (escapes, UTF-8) as it
/// does for rch. (`deserialize_ignored_any` would skip strings without
/// checking their UTF-8, accepting journals rch refuses.)
pub struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Checked, D::Error> {
        deserializer.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_none<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Checked, D::Error> {
        Checked::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Checked, A::Error> {
        skip_seq(seq).map(|_| Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Checked, A::Error> {
        skip_map(map).map(|_| Checked)
    }
}

/// Checks every element of an array; returns how many there were.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<usize, A::Error> {
    let mut len = 0;
    while seq.next_element::<Checked>()?.is_some() {
        len += 1;
    }
    Ok(len)
}

/// Checks every key (a string) and value of an object.
fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_key_seed(KeySeed(|_: &str| ()))?.is_some() {
        map.next_value::<Checked>()?;
    }
    Ok(())
}

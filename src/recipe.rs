//! The recovery recipe (`recovery` in a journal), read as rch reads it but
//! kept only as far as the rules of SPEC.md look into it.
//!
//! rch stores the recipe as an untyped `serde_json::Value`, so its loader
//! accepts any JSON there and rejects only what `Value` rejects: bad syntax,
//! a string that is not UTF-8 or holds a lone surrogate, a number out of
//! `f64`'s range, nesting past serde_json's depth limit. The recipe of a
//! large build is most of its journal (a fingerprint for every output file
//! in `phases[].baseline` and `published`), so building a `Value` would make
//! memory grow with the journal. [`Recipe`] instead makes exactly the
//! deserializer calls `Value`'s own visitor makes (`deserialize_any` at every
//! level, string map keys, last duplicate key wins) and keeps only the keys
//! the rules read, each reduced to a [`Slot`]; everything else is checked on
//! the way past and dropped.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;
use std::fmt;

/// One recipe value as far as a rule can tell it apart: what
/// `serde_json::Value`'s `is_null`, `as_bool`, `as_u64`, `as_i64`,
/// `as_str` and `as_array().len()` would say of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Slot {
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

impl Slot {
    /// `recipe[key].is_null()`: absent or null.
    pub fn is_null(&self) -> bool {
        matches!(self, Slot::Absent | Slot::Null)
    }

    /// `recipe.get(key).is_some_and(|v| !v.is_null())`.
    pub fn is_set(&self) -> bool {
        !self.is_null()
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Slot::Bool(value) => Some(*value),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Slot::Number(number) => number.as_u64(),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Slot::Number(number) => number.as_i64(),
            _ => None,
        }
    }

    /// The text of a string whose text was kept.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Slot::String(text) => text.as_deref(),
            _ => None,
        }
    }

    /// `as_array().map(Vec::len)`.
    pub fn array_len(&self) -> Option<usize> {
        match self {
            Slot::Array(len) => Some(*len),
            _ => None,
        }
    }
}

/// The recipe keys SPEC's rules read (ownership, the settled handoff, the
/// completion check). A recipe that is not an object has none of them, as
/// `Value::get` finds nothing in an array or a string.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recipe {
    /// Whether the recipe is a JSON object.
    pub object: bool,
    pub version: Slot,
    pub wrapper_id: Slot,
    pub build_id: Slot,
    /// `worker.id` (absent when `worker` is no object or has no `id`).
    pub worker_id: Slot,
    pub source_roots: Slot,
    pub pair: Slot,
    pub retire_root: Slot,
    pub retired: Slot,
    pub sources_released: Slot,
    pub pair_released: Slot,
    pub tree_retired: Slot,
    pub returned: Slot,
    pub daemon_exit_code: Slot,
}

impl<'de> Deserialize<'de> for Recipe {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Recipe, D::Error> {
        deserializer.deserialize_any(RecipeVisitor)
    }
}

/// The recipe keys that are kept; any other key's value is only checked.
enum Key {
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
    Other,
}

impl Key {
    fn of(key: &str) -> Key {
        match key {
            "version" => Key::Version,
            "wrapper_id" => Key::WrapperId,
            "build_id" => Key::BuildId,
            "worker" => Key::Worker,
            "source_roots" => Key::SourceRoots,
            "pair" => Key::Pair,
            "retire_root" => Key::RetireRoot,
            "retired" => Key::Retired,
            "sources_released" => Key::SourcesReleased,
            "pair_released" => Key::PairReleased,
            "tree_retired" => Key::TreeRetired,
            "returned" => Key::Returned,
            "daemon_exit_code" => Key::DaemonExitCode,
            _ => Key::Other,
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

struct RecipeVisitor;

impl<'de> Visitor<'de> for RecipeVisitor {
    type Value = Recipe;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Recipe, E> {
        Ok(Recipe::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Recipe, E> {
        Ok(Recipe::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Recipe, E> {
        Ok(Recipe::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Recipe, E> {
        Ok(Recipe::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<Recipe, E> {
        Ok(Recipe::default())
    }

    fn visit_none<E>(self) -> Result<Recipe, E> {
        Ok(Recipe::default())
    }

    fn visit_unit<E>(self) -> Result<Recipe, E> {
        Ok(Recipe::default())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Recipe, D::Error> {
        Recipe::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Recipe, A::Error> {
        skip_seq(seq)?;
        Ok(Recipe::default())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Recipe, A::Error> {
        let mut recipe = Recipe {
            object: true,
            ..Recipe::default()
        };
        // A later duplicate replaces an earlier value, as `Map::insert` does.
        while let Some(key) = map.next_key_seed(KeySeed(Key::of))? {
            let text = SlotSeed { keep_text: true };
            let plain = SlotSeed { keep_text: false };
            match key {
                Key::Version => recipe.version = map.next_value_seed(plain)?,
                Key::WrapperId => recipe.wrapper_id = map.next_value_seed(text)?,
                Key::BuildId => recipe.build_id = map.next_value_seed(plain)?,
                Key::Worker => recipe.worker_id = map.next_value::<WorkerId>()?.0,
                Key::SourceRoots => recipe.source_roots = map.next_value_seed(plain)?,
                Key::Pair => recipe.pair = map.next_value_seed(plain)?,
                Key::RetireRoot => recipe.retire_root = map.next_value_seed(plain)?,
                Key::Retired => recipe.retired = map.next_value_seed(plain)?,
                Key::SourcesReleased => recipe.sources_released = map.next_value_seed(plain)?,
                Key::PairReleased => recipe.pair_released = map.next_value_seed(plain)?,
                Key::TreeRetired => recipe.tree_retired = map.next_value_seed(plain)?,
                Key::Returned => recipe.returned = map.next_value_seed(plain)?,
                Key::DaemonExitCode => recipe.daemon_exit_code = map.next_value_seed(plain)?,
                Key::Other => map.next_value::<Checked>().map(drop)?,
            }
        }
        Ok(recipe)
    }
}

/// Reads one value into a [`Slot`], with `Value`'s calls.
#[derive(Clone, Copy)]
pub struct SlotSeed {
    keep_text: bool,
}

impl SlotSeed {
    /// A seed that keeps no text: enough to tell a number's type and range
    /// (`Slot::as_u64` accepts exactly what serde's `u64` accepts).
    pub fn numbers() -> SlotSeed {
        SlotSeed { keep_text: false }
    }
}

impl<'de> DeserializeSeed<'de> for SlotSeed {
    type Value = Slot;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Slot, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for SlotSeed {
    type Value = Slot;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Slot, E> {
        Ok(Slot::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Slot, E> {
        Ok(Slot::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Slot, E> {
        Ok(Slot::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Slot, E> {
        // `Value` turns a non-finite float into null.
        Ok(Number::from_f64(value).map_or(Slot::Null, Slot::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Slot, E> {
        Ok(Slot::String(self.keep_text.then(|| value.to_owned())))
    }

    fn visit_string<E>(self, value: String) -> Result<Slot, E> {
        Ok(Slot::String(self.keep_text.then_some(value)))
    }

    fn visit_none<E>(self) -> Result<Slot, E> {
        Ok(Slot::Null)
    }

    fn visit_unit<E>(self) -> Result<Slot, E> {
        Ok(Slot::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Slot, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Slot, A::Error> {
        skip_seq(seq).map(Slot::Array)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Slot, A::Error> {
        skip_map(map)?;
        Ok(Slot::Object)
    }
}

/// `recovery.worker`, of which only `id` is kept (absent unless `worker` is
/// an object with an `id`, as `recipe["worker"]["id"]` finds nothing else).
struct WorkerId(Slot);

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
        Ok(WorkerId(Slot::Absent))
    }

    fn visit_i64<E>(self, _: i64) -> Result<WorkerId, E> {
        Ok(WorkerId(Slot::Absent))
    }

    fn visit_u64<E>(self, _: u64) -> Result<WorkerId, E> {
        Ok(WorkerId(Slot::Absent))
    }

    fn visit_f64<E>(self, _: f64) -> Result<WorkerId, E> {
        Ok(WorkerId(Slot::Absent))
    }

    fn visit_str<E>(self, _: &str) -> Result<WorkerId, E> {
        Ok(WorkerId(Slot::Absent))
    }

    fn visit_none<E>(self) -> Result<WorkerId, E> {
        Ok(WorkerId(Slot::Absent))
    }

    fn visit_unit<E>(self) -> Result<WorkerId, E> {
        Ok(WorkerId(Slot::Absent))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<WorkerId, D::Error> {
        WorkerId::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<WorkerId, A::Error> {
        skip_seq(seq)?;
        Ok(WorkerId(Slot::Absent))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WorkerId, A::Error> {
        let mut id = Slot::Absent;
        while let Some(is_id) = map.next_key_seed(KeySeed(|key: &str| key == "id"))? {
            if is_id {
                id = map.next_value_seed(SlotSeed { keep_text: true })?;
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

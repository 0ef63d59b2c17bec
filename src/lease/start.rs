//! `process_birth.start`: how rch records when a lease's owner started,
//! read by hand as serde's derive reads it.
//!
//! rch types it as an internally tagged enum. serde's derive for that
//! holds every value of a map as `Content` before it knows the variant, so
//! a `start` with a huge unknown field would take memory many times its
//! size; the visitor here checks each value as it passes and keeps only
//! the numbers the variants read. Its tests hold it to serde's derive,
//! shape for shape.

use super::recipe::{Checked, Kept, KeptSeed, KeySeed};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// How rch records a process start, tagged by `platform` (rch's
/// `#[serde(tag = "platform", rename_all = "snake_case")]`).
///
/// Deserialized by hand, accepting exactly what serde's derive for that
/// attribute accepts (a map with the tag anywhere among the fields, or a
/// sequence with the tag first; the tag a JSON string, never the object
/// form `{"linux": null}`; unknown fields ignored; duplicates, a
/// missing field or a value out of range refused), but without buffering:
/// serde's derive holds every value of the map as `Content` before it
/// knows the variant, so a `start` with a huge unknown field took memory
/// many times its size. Here a value is checked as it passes and only the
/// numbers the variants read are kept. The unit tests hold the two to the
/// same verdicts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessStart {
    /// `/proc/<pid>/stat` field 22.
    Linux { ticks: u64 },
    /// macOS process start time; never observable on Linux.
    Darwin { seconds: u64, microseconds: u32 },
}

/// The variants' names, as the tag spells them, read as serde's derive
/// reads an internally tagged enum's tag: as a variant identifier
/// (`deserialize_identifier`), which serde_json takes only from a JSON
/// string. A plain derive would read it through `deserialize_enum`, which
/// also takes the externally tagged form `{"linux": null}` that rch
/// refuses ("invalid type: map, expected variant identifier").
#[derive(Clone, Copy, Deserialize)]
#[serde(variant_identifier, rename_all = "snake_case")]
enum Platform {
    Linux,
    Darwin,
}

impl<'de> Deserialize<'de> for ProcessStart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ProcessStart, D::Error> {
        deserializer.deserialize_any(StartVisitor)
    }
}

struct StartVisitor;

/// A variant field seen in a map before it is known which variant the map
/// is: how often, and its last value as far as a number type can tell.
#[derive(Default)]
struct Seen {
    count: usize,
    value: Kept,
}

impl Seen {
    /// The field as serde's `u64` would take it, once and only once.
    fn take<E: de::Error>(&self, name: &'static str) -> Result<u64, E> {
        match self.count {
            0 => Err(E::missing_field(name)),
            1 => self
                .value
                .as_u64()
                .ok_or_else(|| E::custom(format_args!("invalid type for `{name}`: expected u64"))),
            _ => Err(E::duplicate_field(name)),
        }
    }
}

impl<'de> Visitor<'de> for StartVisitor {
    type Value = ProcessStart;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("internally tagged enum ProcessStart")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ProcessStart, A::Error> {
        let platform: Platform = seq
            .next_element()?
            .ok_or_else(|| de::Error::missing_field("platform"))?;
        let mut field = |index: usize, expected: &'static str| -> Result<u64, A::Error> {
            seq.next_element::<u64>()?
                .ok_or_else(|| de::Error::invalid_length(index, &expected))
        };
        let (start, fields) = match platform {
            Platform::Linux => {
                let ticks = field(0, "struct variant ProcessStart::Linux with 1 element")?;
                (ProcessStart::Linux { ticks }, 1)
            }
            Platform::Darwin => {
                let expected = "struct variant ProcessStart::Darwin with 2 elements";
                let seconds = field(0, expected)?;
                let microseconds = u32::try_from(field(1, expected)?)
                    .map_err(|_| de::Error::custom("microseconds: out of range for u32"))?;
                (
                    ProcessStart::Darwin {
                        seconds,
                        microseconds,
                    },
                    2,
                )
            }
        };
        // serde reads the rest into `Content` and then refuses what is left.
        let mut extra = 0;
        while seq.next_element::<Checked>()?.is_some() {
            extra += 1;
        }
        if extra > 0 {
            return Err(de::Error::invalid_length(
                fields + extra,
                &"fewer elements in array",
            ));
        }
        Ok(start)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ProcessStart, A::Error> {
        #[derive(Clone, Copy)]
        enum StartField {
            Platform,
            Ticks,
            Seconds,
            Microseconds,
            Other,
        }
        let mut platform = None;
        let (mut ticks, mut seconds, mut microseconds) =
            (Seen::default(), Seen::default(), Seen::default());
        let classify = |key: &str| match key {
            "platform" => StartField::Platform,
            "ticks" => StartField::Ticks,
            "seconds" => StartField::Seconds,
            "microseconds" => StartField::Microseconds,
            _ => StartField::Other,
        };
        while let Some(key) = map.next_key_seed(KeySeed(classify))? {
            let seen = match key {
                StartField::Platform => {
                    if platform.is_some() {
                        return Err(de::Error::duplicate_field("platform"));
                    }
                    platform = Some(map.next_value::<Platform>()?);
                    continue;
                }
                StartField::Other => {
                    map.next_value::<Checked>()?;
                    continue;
                }
                StartField::Ticks => &mut ticks,
                StartField::Seconds => &mut seconds,
                StartField::Microseconds => &mut microseconds,
            };
            seen.count += 1;
            seen.value = map.next_value_seed(KeptSeed::numbers())?;
        }
        match platform.ok_or_else(|| de::Error::missing_field("platform"))? {
            Platform::Linux => Ok(ProcessStart::Linux {
                ticks: ticks.take("ticks")?,
            }),
            Platform::Darwin => Ok(ProcessStart::Darwin {
                seconds: seconds.take("seconds")?,
                microseconds: u32::try_from(microseconds.take("microseconds")?)
                    .map_err(|_| de::Error::custom("microseconds: out of range for u32"))?,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::parse;
    use crate::lease::samples::with_birth;

    /// serde's derive for rch's `ProcessStart`, to hold the hand-written
    /// one to: the same verdict and value for every shape below.
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "platform", rename_all = "snake_case")]
    enum DerivedStart {
        Linux { ticks: u64 },
        Darwin { seconds: u64, microseconds: u32 },
    }

    #[test]
    fn process_start_accepts_exactly_what_serdes_derive_accepts() {
        let atoms = [
            "7",
            "0",
            "-0",
            "-1",
            "1.5",
            "1e3",
            "4294967295",
            "4294967296",
            "18446744073709551615",
            "18446744073709551616",
            "\"7\"",
            "null",
            "true",
            "[]",
            "{}",
            "[1, [2]]",
            "{\"a\": 1}",
            "\"linux\"",
            "\"darwin\"",
            "\"windows\"",
            "\"\\u006cinux\"",
            "1e400",
            // The tag's value in every form but a string, as deserialize_enum
            // would take it (a map or an externally tagged unit variant)
            // and as a variant index might (a number): serde's derive reads
            // the tag as a variant identifier, a JSON string only.
            "{\"linux\": null}",
            "{\"darwin\": null}",
            "{\"linux\": 7}",
            "{\"linux\": null, \"ticks\": 7}",
            "[\"linux\"]",
            "[\"darwin\", 1, 2]",
            "1",
            "false",
        ];
        let keys = [
            "platform",
            "ticks",
            "seconds",
            "microseconds",
            "x",
            "plat\\u0066orm",
            "Ticks",
        ];
        // A small fixed generator: the same cases every run.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        let mut cases = Vec::new();
        for _ in 0..6000 {
            let entries = next(5);
            let mut map = Vec::new();
            let mut seq = Vec::new();
            for i in 0..entries {
                let key = keys[next(keys.len())];
                // Tags most of the time where a tag goes, so variants are met.
                let value = if key.starts_with("plat") && next(4) > 0 {
                    ["\"linux\"", "\"darwin\""][next(2)]
                } else {
                    atoms[next(atoms.len())]
                };
                map.push(format!("\"{key}\": {value}"));
                seq.push(if i == 0 && next(4) > 0 {
                    ["\"linux\"", "\"darwin\""][next(2)]
                } else {
                    atoms[next(atoms.len())]
                });
            }
            cases.push(format!("{{{}}}", map.join(", ")));
            cases.push(format!("[{}]", seq.join(", ")));
        }
        // Near misses of valid shapes: each variant's fields among numbers
        // at their types' edges, in any order, with extra or doubled keys.
        let numbers = [
            "7",
            "0",
            "-0",
            "4294967295",
            "4294967296",
            "18446744073709551615",
        ];
        for _ in 0..3000 {
            let (tag, fields): (&str, &[&str]) = if next(2) == 0 {
                ("linux", &["ticks"])
            } else {
                ("darwin", &["seconds", "microseconds"])
            };
            let mut entries = vec![format!("\"platform\": \"{tag}\"")];
            for field in fields {
                entries.push(format!("\"{field}\": {}", numbers[next(numbers.len())]));
            }
            if next(3) == 0 {
                let key = keys[next(keys.len())];
                entries.push(format!("\"{key}\": {}", atoms[next(atoms.len())]));
            }
            for i in (1..entries.len()).rev() {
                entries.swap(i, next(i + 1));
            }
            cases.push(format!("{{{}}}", entries.join(", ")));
            let values: Vec<&str> = fields
                .iter()
                .map(|_| numbers[next(numbers.len())])
                .collect();
            cases.push(format!("[\"{tag}\", {}]", values.join(", ")));
        }
        for atom in atoms {
            cases.push(atom.to_owned());
            // Every atom as the tag of shapes that are otherwise valid for
            // either variant, in the map and the sequence form.
            for rest in ["\"ticks\": 7", "\"seconds\": 1, \"microseconds\": 2"] {
                cases.push(format!("{{\"platform\": {atom}, {rest}}}"));
                cases.push(format!("{{{rest}, \"platform\": {atom}}}"));
            }
            cases.push(format!("[{atom}, 7]"));
            cases.push(format!("[{atom}, 1, 2]"));
        }
        let mut accepted = 0;
        for case in &cases {
            let ours = serde_json::from_str::<ProcessStart>(case);
            let derived = serde_json::from_str::<DerivedStart>(case);
            let ours = ours.ok().map(|start| match start {
                ProcessStart::Linux { ticks } => DerivedStart::Linux { ticks },
                ProcessStart::Darwin {
                    seconds,
                    microseconds,
                } => DerivedStart::Darwin {
                    seconds,
                    microseconds,
                },
            });
            assert_eq!(ours, derived.ok(), "{case}");
            accepted += usize::from(ours.is_some());
        }
        // Both verdicts were met often enough to mean something.
        assert!(
            accepted > 300 && accepted < cases.len() - 300,
            "{accepted} of {}",
            cases.len()
        );
    }

    #[test]
    fn a_huge_unknown_field_in_process_start_is_not_held() {
        // Checked on the way past, never buffered (serde's derive held it
        // as Content: about 16 times the bytes).
        let big = format!("[{}0]", "0,".repeat(2_000_000));
        let start = format!(r#"{{"platform": "linux", "x": {big}, "ticks": 9}}"#);
        assert_eq!(
            serde_json::from_str::<ProcessStart>(&start).ok(),
            Some(ProcessStart::Linux { ticks: 9 })
        );
    }

    #[test]
    fn process_birth_must_have_rchs_shape() {
        let boot = "3f1c2a9e-5b7d-4e2a-9c1f-0a1b2c3d4e5f";
        for (birth, expected) in [
            ("null".to_owned(), None),
            (
                format!(r#"{{"boot_id": "{boot}", "start": {{"platform": "linux", "ticks": 7}}}}"#),
                Some(ProcessStart::Linux { ticks: 7 }),
            ),
            (
                format!(
                    r#"{{"boot_id": "{boot}", "start": {{"platform": "darwin", "seconds": 1, "microseconds": 2}}}}"#
                ),
                Some(ProcessStart::Darwin {
                    seconds: 1,
                    microseconds: 2,
                }),
            ),
        ] {
            let lease = parse(with_birth(&birth).as_bytes()).expect(&birth);
            assert_eq!(lease.process_birth.map(|b| b.start), expected, "{birth}");
        }
        for bad in [
            format!(r#""{boot}:123""#),
            format!(r#"{{"boot_id": "{boot}", "start": {{"platform": "linux", "ticks": -1}}}}"#),
            format!(r#"{{"boot_id": "{boot}", "start": {{"platform": "windows", "ticks": 1}}}}"#),
            format!(r#"{{"boot_id": "{boot}", "start": {{"ticks": 1}}}}"#),
            format!(r#"{{"boot_id": "{boot}", "start": {{"platform": "linux"}}}}"#),
            format!(
                r#"{{"boot_id": "{boot}", "start": {{"platform": "darwin", "seconds": 1, "microseconds": 4294967296}}}}"#
            ),
            r#"{"start": {"platform": "linux", "ticks": 1}}"#.to_owned(),
            r#"{"boot_id": 5, "start": {"platform": "linux", "ticks": 1}}"#.to_owned(),
            "[]".to_owned(),
            "7".to_owned(),
            // rch: "invalid type: map, expected variant identifier".
            format!(
                r#"{{"boot_id": "{boot}", "start": {{"platform": {{"linux": null}}, "ticks": 7}}}}"#
            ),
            format!(
                r#"{{"boot_id": "{boot}", "start": {{"platform": {{"darwin": null}}, "seconds": 1, "microseconds": 2}}}}"#
            ),
            format!(r#"{{"boot_id": "{boot}", "start": [{{"linux": null}}, 7]}}"#),
        ] {
            assert!(parse(with_birth(&bad).as_bytes()).is_err(), "{bad}");
        }
    }
}

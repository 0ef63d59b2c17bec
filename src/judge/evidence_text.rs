//! The evidence in words: what `explain` prints for each check, and what a
//! `--verbose` row says of a skipped journal. Only the commands that print
//! come here; the scan and the judge gather plain facts ([`Evidence`],
//! [`Observation`]) and never format what nobody reads.

use crate::human::{mebibytes, span, thousands};
use crate::judge::evidence::{Evidence, Recipe};
use crate::judge::observation::{
    Invalid, Kill, Namespace, NsPidSeen, Observation, Presence, Process, Recorded, StatSeen,
    process,
};
use crate::stat::FileKind;
use std::fmt;

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Evidence::Regular(stat) => write!(
                f,
                "regular file, {} bytes, owner uid {}{}",
                thousands(stat.size),
                stat.uid,
                if stat.uid == stat.euid { " (you)" } else { "" }
            ),
            Evidence::Listed(kind) => f.write_str(listed_text(*kind)),
            Evidence::NotRegular(kind) => f.write_str(kind_text(*kind)),
            Evidence::Name { canonical } => f.write_str(name_text(*canonical)),
            Evidence::Owner { uid, euid } => write_owner(f, *uid, *euid),
            Evidence::Size { size, limit } => write!(
                f,
                "{} bytes, within the {} limit",
                thousands(*size),
                mebibytes(*limit)
            ),
            Evidence::TooLarge { size, limit } => write!(
                f,
                "{} bytes, over the {} limit: not read",
                thousands(*size),
                mebibytes(*limit)
            ),
            Evidence::GrewTooLarge { seen, limit } => write!(
                f,
                "grew past the {} limit while it was read ({} bytes seen): not judged",
                mebibytes(*limit),
                thousands(*seen)
            ),
            Evidence::ReadError(error) => write!(f, "read error: {error}"),
            Evidence::Shortage(error) => {
                write!(f, "not judged: a host shortage ({error})")
            }
            Evidence::Vanished => f.write_str("vanished between listing and reading"),
            Evidence::Loadable => f.write_str(
                "rch's lease shape, schema_version 1, identity.local_wrapper_id = the file name",
            ),
            Evidence::Shape(error) => write!(f, "not rch's lease shape: {error}"),
            Evidence::Schema(version) => write!(f, "schema_version {version}, not 1"),
            Evidence::IdMismatch { inside, file } => write!(
                f,
                "identity.local_wrapper_id is {inside}, not the file name's {file}"
            ),
            Evidence::Terminal {
                acknowledged,
                state,
            } => write!(f, "terminal_acknowledged {acknowledged}, state {state}"),
            Evidence::Owns {
                roots,
                pair,
                retire_root,
            } => write!(
                f,
                "the recipe owns unretired source on the worker ({}; retired is not true)",
                owned_text(*roots, *pair, *retire_root)
            ),
            Evidence::Handoff { returned } => write!(
                f,
                "settled handoff: result delivered (returned {returned}) and source retired, awaiting the daemon"
            ),
            Evidence::NotOwning { recipe, gap } => write_not_owning(f, *recipe, gap),
            Evidence::Admission {
                build_id,
                worker_id,
            } => write_admission(f, *build_id, worker_id.as_deref()),
            Evidence::Heartbeat {
                heartbeat_unix_ms,
                now_unix_ms,
                stale_after_ms,
            } => write_heartbeat(f, *heartbeat_unix_ms, *now_unix_ms, *stale_after_ms),
            Evidence::Pid(pid) if *pid <= 1 => {
                write!(f, "wrapper_pid {pid}: the owner's death cannot be proven")
            }
            Evidence::Pid(pid) => write!(f, "wrapper_pid {pid}"),
            Evidence::Process(observation) => f.write_str(&observation.process_text()),
            Evidence::Judgeable(observation) => f.write_str(&observation.judgeable_text()),
        }
    }
}

/// The `foreign_owner` check: the file's owner, and whether it is who runs
/// the sweep.
fn write_owner(f: &mut fmt::Formatter<'_>, uid: Option<u32>, euid: u32) -> fmt::Result {
    match uid {
        Some(uid) if uid == euid => write!(f, "owner uid {uid} (you)"),
        _ => write!(
            f,
            "owner uid {}, but rch-sweep runs as uid {euid}: no authority to recover with this user's keys",
            uid.map_or_else(|| "unknown".to_owned(), |uid| uid.to_string())
        ),
    }
}

/// What the listing said a file is, for the `not_regular` check.
fn listed_text(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Regular => "listed as a regular file",
        FileKind::Unknown => "type not told by the listing; checked on the opened file",
        kind => kind_text(kind),
    }
}

/// The `bad_name` check.
fn name_text(canonical: bool) -> &'static str {
    if canonical {
        "rchw-<uuid>.json with a canonical lowercase UUID"
    } else {
        "not rchw-<uuid>.json with a canonical lowercase UUID"
    }
}

/// What a file is, as the `not_regular` check says it.
fn kind_text(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Regular => "a regular file",
        FileKind::Symlink => "a symbolic link, never followed",
        FileKind::Directory => "a directory",
        FileKind::Fifo => "a FIFO, never opened in a way that could block",
        FileKind::Socket => "a socket",
        FileKind::Device => "a device",
        FileKind::Unknown => "not a regular file",
    }
}

/// What an owning recipe owns: `2 source roots, a pair`.
fn owned_text(roots: usize, pair: bool, retire_root: bool) -> String {
    let mut owned = Vec::new();
    if roots > 0 {
        owned.push(format!(
            "{roots} source root{}",
            if roots == 1 { "" } else { "s" }
        ));
    }
    if pair {
        owned.push("a pair".to_owned());
    }
    if retire_root {
        owned.push("a retire root".to_owned());
    }
    owned.join(", ")
}

/// The `not_owning` check, failed: what the recipe is, and the settled
/// handoff condition it misses.
fn write_not_owning(f: &mut fmt::Formatter<'_>, recipe: Recipe, gap: &str) -> fmt::Result {
    match recipe {
        Recipe::Missing => f.write_str("no recovery recipe: nothing on a worker to release"),
        Recipe::NotObject => f.write_str("the recovery recipe is not an object"),
        Recipe::Retired => write!(f, "the recipe is retired, and is no settled handoff: {gap}"),
        Recipe::OwnsNothing => write!(
            f,
            "the recipe owns no source roots, pair or retire root, and is no settled handoff: {gap}"
        ),
    }
}

/// The `not_admitted` check: the build and worker, or what of them is
/// missing.
fn write_admission(
    f: &mut fmt::Formatter<'_>,
    build_id: Option<u64>,
    worker_id: Option<&str>,
) -> fmt::Result {
    if let (Some(build_id), Some(worker_id)) = (build_id, worker_id)
        && build_id > 0
        && !worker_id.is_empty()
    {
        return write!(f, "build {build_id} on worker {worker_id}");
    }
    let build = match build_id {
        None => "no remote_build_id".to_owned(),
        Some(0) => "remote_build_id 0".to_owned(),
        Some(id) => format!("build {id}"),
    };
    let worker = match worker_id {
        None => "no worker_id".to_owned(),
        Some("") => "an empty worker_id".to_owned(),
        Some(worker) => format!("worker {worker}"),
    };
    write!(f, "{build}, {worker}: never admitted to a worker")
}

/// The `heartbeat_fresh` check: the heartbeat's age (or how far ahead of
/// this clock it lies) and the staleness threshold.
fn write_heartbeat(
    f: &mut fmt::Formatter<'_>,
    heartbeat_unix_ms: u64,
    now_unix_ms: u64,
    stale_after_ms: u64,
) -> fmt::Result {
    let stale = span(stale_after_ms);
    if heartbeat_unix_ms > now_unix_ms {
        write!(
            f,
            "heartbeat {} in the future (a clock ahead): counts as fresh, stale after {stale}",
            span(heartbeat_unix_ms - now_unix_ms)
        )
    } else {
        write!(
            f,
            "heartbeat {} old, stale after {stale}",
            span(now_unix_ms - heartbeat_unix_ms)
        )
    }
}

impl Invalid {
    fn as_text(self) -> &'static str {
        match self {
            Invalid::BootId => "its boot id is not a canonical lowercase UUID",
            Invalid::NotLinux => "its process_birth is not Linux's",
            Invalid::HalfLegacy => "only one of boot_id and process_start_ticks is recorded",
        }
    }
}

impl Observation {
    /// What `/proc/<pid>/stat` shows against the recorded identity: the
    /// evidence of the `owner_alive` check.
    pub fn process_text(&self) -> String {
        let pid = self.pid;
        if let Some(error) = &self.shortage {
            return format!("not judged: a host shortage ({error})");
        }
        let file = format!("/proc/{pid}/stat");
        let (state, threads, ticks) = match &self.stat {
            StatSeen::NotRead => {
                return format!("pid {pid} not looked up: {}", self.judgeable_text());
            }
            StatSeen::Absent(Kill::NoSuchProcess) => {
                return format!(
                    "pid {pid} absent from /proc, and kill({pid}, 0) says no such process (ESRCH): owner gone"
                );
            }
            StatSeen::Absent(Kill::Exists) => {
                return format!(
                    "pid {pid} absent from /proc, yet kill({pid}, 0) finds it: /proc hides it (hidepid?), so only ESRCH would prove the owner gone: unverified"
                );
            }
            StatSeen::Absent(Kill::Failed(error)) => {
                return format!(
                    "pid {pid} absent from /proc, and kill({pid}, 0) says {error}, not ESRCH: it may be another user's process /proc hides (hidepid), so the owner is unverified"
                );
            }
            StatSeen::Unreadable(error) => return format!("{file} unreadable: {error}"),
            StatSeen::Garbled => return format!("{file} does not parse"),
            StatSeen::Seen { pid: seen, .. } if *seen != pid => {
                return format!("{file} names pid {seen}, not {pid}");
            }
            StatSeen::Seen {
                state,
                threads,
                start_ticks,
                ..
            } => (*state, *threads, *start_ticks),
        };
        let shown = format!(
            "pid {pid}: {file} state {}, start ticks {ticks}",
            printable_state(state)
        );
        match process(state, ticks) {
            Process::Zombie if threads == 1 => {
                return format!("{shown}: a zombie, its only thread, owner gone");
            }
            Process::Zombie => {
                return format!(
                    "{shown}: a zombie leader with {threads} threads, whose others may still run: unverified"
                );
            }
            Process::OddState => return format!("{shown}: not a state Linux uses"),
            Process::Running(_) => {}
        }
        let current = self.boot_id.as_deref().unwrap_or("?");
        match &self.recorded {
            Recorded::None => format!(
                "{shown}; no identity recorded to tell the owner from a process that reused the PID: unverified"
            ),
            Recorded::Invalid(why) => {
                format!(
                    "{shown}; the recorded identity is invalid: {}",
                    why.as_text()
                )
            }
            Recorded::Linux { boot_id, .. } if boot_id != current => format!(
                "pid {pid} was recorded in boot {}, this machine's boot id is {}: owner gone",
                short(boot_id),
                short(current)
            ),
            Recorded::Linux {
                ticks: recorded, ..
            } if *recorded != ticks => format!(
                "pid {pid} now belongs to another process: start ticks {ticks} \u{2260} recorded {recorded}"
            ),
            Recorded::Linux { .. } => format!(
                "{shown} = recorded; boot id {} = this machine's",
                short(current)
            ),
        }
    }

    /// Whether presence could be judged at all, and on what: the evidence
    /// of the `owner_unverified` check.
    pub fn judgeable_text(&self) -> String {
        let pid = self.pid;
        if let Some(error) = &self.shortage {
            return format!("not judged: a host shortage ({error})");
        }
        match &self.namespace {
            None => return format!("pid {pid} is above 2147483647: no Linux process has it"),
            Some(Namespace::Foreign { seen: None, .. }) => {
                return "/proc/self/stat is unreadable: this /proc cannot be trusted".into();
            }
            Some(Namespace::Foreign {
                seen: Some(seen),
                own,
            }) => {
                return format!(
                    "/proc/self/stat shows pid {seen}, not this process's {own}: /proc belongs to another PID namespace"
                );
            }
            Some(Namespace::NsPid { seen, own }) => {
                let shown = match seen {
                    NsPidSeen::Unreadable(error) => {
                        format!("/proc/self/status is unreadable ({error})")
                    }
                    NsPidSeen::Missing => {
                        "/proc/self/status has no NSpid line (a kernel before 4.1)".to_owned()
                    }
                    NsPidSeen::Repeated => "/proc/self/status has more than one NSpid line".into(),
                    NsPidSeen::Entries(entries) => {
                        format!("/proc/self/status shows NSpid \"{entries}\"")
                    }
                };
                return format!(
                    "{shown}, not one entry equal to this process's {own}: its identity is unproven (an old kernel or a nested PID namespace), so every owner is unverified, as rch 2.1.22 and later say"
                );
            }
            Some(Namespace::Own) => {}
        }
        let Some(boot) = self.boot_id.as_deref() else {
            return "this machine's boot id (/proc/sys/kernel/random/boot_id) is unreadable or not a UUID, so even a missing PID proves nothing".into();
        };
        let recorded = match &self.recorded {
            Recorded::None => "no identity recorded".to_owned(),
            Recorded::Invalid(why) => format!("recorded identity invalid: {}", why.as_text()),
            Recorded::Linux { boot_id, ticks } => {
                format!("recorded boot id {}, start ticks {ticks}", short(boot_id))
            }
        };
        match self.presence() {
            Presence::Unverified => self.process_text(),
            _ => format!(
                "judged from this process's own /proc; this machine's boot id is {}; {recorded}",
                short(boot)
            ),
        }
    }
}

/// `3f1c2a9e…`: enough of a boot id to tell two apart in a report.
fn short(boot_id: &str) -> String {
    match boot_id.get(..8) {
        Some(head) if boot_id.len() > 8 => format!("{head}\u{2026}"),
        _ => boot_id.to_owned(),
    }
}

fn printable_state(state: u8) -> String {
    if state.is_ascii_graphic() {
        char::from(state).to_string()
    } else {
        format!("0x{state:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::FileStat;

    #[test]
    fn file_facts_read_as_the_issue_shows_them() {
        let stat = FileStat {
            size: 2481,
            uid: 1000,
            euid: 1000,
        };
        assert_eq!(
            Evidence::Regular(stat).to_string(),
            "regular file, 2,481 bytes, owner uid 1000 (you)"
        );
        let foreign = Evidence::Owner {
            uid: Some(0),
            euid: 1000,
        };
        assert!(
            foreign
                .to_string()
                .starts_with("owner uid 0, but rch-sweep runs as uid 1000")
        );
        let limit = 64 * 1024 * 1024;
        assert_eq!(
            Evidence::Size {
                size: 3_145_728,
                limit
            }
            .to_string(),
            "3,145,728 bytes, within the 64 MiB limit"
        );
        assert_eq!(
            Evidence::TooLarge {
                size: limit + 1,
                limit
            }
            .to_string(),
            "67,108,865 bytes, over the 64 MiB limit: not read"
        );
        assert_eq!(
            Evidence::GrewTooLarge {
                seen: limit + 1,
                limit
            }
            .to_string(),
            "grew past the 64 MiB limit while it was read (67,108,865 bytes seen): not judged"
        );
    }

    #[test]
    fn heartbeats_say_their_age_against_the_threshold() {
        let heartbeat = |age: i64| Evidence::Heartbeat {
            heartbeat_unix_ms: (10_000_000 - age) as u64,
            now_unix_ms: 10_000_000,
            stale_after_ms: 900_000,
        };
        assert_eq!(
            heartbeat(192_000).to_string(),
            "heartbeat 3m 12s old, stale after 15m 0s"
        );
        assert!(
            heartbeat(-300_000)
                .to_string()
                .starts_with("heartbeat 5m 0s in the future")
        );
    }
}

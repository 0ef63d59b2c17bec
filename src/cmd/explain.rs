//! `rch-sweep explain`: answers an operator's "why is this lease (not) being
//! recovered?" for the journals named, with every check of SPEC's table, the
//! evidence it rests on, the verdict, the backoff entry and what a run now
//! would do.
//!
//! The verdict comes from the very function the scan uses
//! ([`scan::judge_file`]), so the two cannot disagree. Like a dry run it
//! starts nothing, writes nothing, takes no lock and needs no `rch`: the
//! state file is only read.

use crate::cli::ExplainArgs;
use crate::exit::ExitCode;
use crate::human::span;
use crate::judge::evidence::Judgement;
use crate::judge::owner::ProcFs;
use crate::lease;
use crate::lease_dir::recovery_lock;
use crate::lease_dir::{Identity, LeaseDir, LeaseDirFound};
use crate::log;
use crate::state::backoff::{self, Backoff, Entry, HeldLease, Hold, now_unix_ms};
use crate::state::{self, Loaded};
use crate::sweep::preflight::Intent;
use crate::sweep::scan::{self, ScanOptions};
use anyhow::Result;
use serde::Serialize;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// One named journal, explained.
struct Explained {
    /// The entry name in the lease directory (lossily decoded).
    file: String,
    path: PathBuf,
    wrapper_id: Option<String>,
    /// The judgement, or why the argument names no journal.
    judged: Result<Judgement, String>,
    backoff: Option<Entry>,
    /// Since when and why runs have held it without a start that reached
    /// rch's verdict, when they have.
    held: Option<HeldLease>,
    /// Set when its `.recovery.lock` is one rch refuses (not a regular
    /// file, another user's, more than one link, open to group or others):
    /// the error a run would give, with the fix.
    open_lock: Option<String>,
}

/// What a run started now would do with a journal (SPEC's `next`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    WouldRecover,
    BackingOff(u64),
    Skipped,
}

impl Next {
    fn as_str(self) -> &'static str {
        match self {
            Next::WouldRecover => "would_recover",
            Next::BackingOff(_) => "backing_off",
            Next::Skipped => "skipped",
        }
    }
}

impl Explained {
    /// None for a missing journal. A candidate whose backoff entry lies in
    /// the future is backing off; the run's start budget is not applied.
    fn next(&self, now_unix_ms: u64) -> Option<Next> {
        match &self.judged {
            Err(_) => None,
            Ok(Judgement {
                verdict: Err(_), ..
            }) => Some(Next::Skipped),
            Ok(Judgement { verdict: Ok(_), .. }) => Some(match &self.backoff {
                Some(entry) if entry.next_attempt_unix_ms > now_unix_ms => {
                    Next::BackingOff(shown_next(entry, now_unix_ms))
                }
                _ => Next::WouldRecover,
            }),
        }
    }
}

pub fn run(args: ExplainArgs) -> Result<ExitCode> {
    super::refuse_tilde(&args.paths, &[])?;
    let target = super::Target::resolve(&args.paths);
    target.check(Intent::Read)?;
    let lease_dir = &target.lease_dir;
    let now = now_unix_ms();
    let backoff = target.readable_backoff(|state_file| {
        Ok(match state::load(state_file, state::Access::Read)? {
            Loaded::Missing => Backoff::empty(),
            Loaded::Valid(backoff) => backoff,
            Loaded::Corrupt(why, _) => {
                log::warn(format!(
                    "state file {} does not parse ({why}); explaining without backoff",
                    state_file.display()
                ));
                Backoff::empty()
            }
        })
    })?;
    let dir = open_lease_dir(lease_dir)?;
    let options = ScanOptions {
        now_unix_ms: now,
        stale_after_ms: args.stale_after.saturating_mul(1000),
        keep_skipped: false,
    };
    let proc = ProcFs::system();
    let explained: Vec<Explained> = args
        .journals
        .iter()
        .map(|arg| {
            let name = entry_name(arg, &lease_dir.resolved);
            explain(
                dir.as_ref(),
                &lease_dir.resolved,
                arg,
                name,
                &backoff,
                &options,
                &proc,
            )
        })
        .collect();
    let text = if args.json {
        json(&explained, now)
    } else {
        log::printable(&human(&explained, now)).into_owned()
    };
    // A closed stdout (`| head`) is not worth an error.
    let _ = io::stdout().lock().write_all(text.as_bytes());
    Ok(if explained.iter().any(|e| e.judged.is_err()) {
        ExitCode::Failed
    } else {
        ExitCode::Success
    })
}

/// The lease directory, or None when it does not exist (then every journal
/// named is missing). One that is no directory was refused by the
/// preflight (78), as for a run.
fn open_lease_dir(lease_dir: &Identity) -> Result<Option<LeaseDir>> {
    if matches!(lease_dir.found, LeaseDirFound::Missing) {
        return Ok(None);
    }
    match lease_dir.open() {
        Ok(dir) => Ok(Some(dir)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(super::unreadable_lease_dir(lease_dir, &error)),
    }
}

/// The entry of the lease directory an argument names. Without a `/` it is
/// `<arg>.json` (or the argument itself when it already ends in `.json`);
/// with one it is a path whose folder must resolve to the lease directory
/// itself. The entry's own name is never resolved, so a symbolic link is
/// explained as the link the scan sees. A path that ends in `/` or `/.`
/// asks for a directory, which a journal is not: the operating system
/// would answer ENOTDIR, and so does this.
pub(super) fn entry_name(arg: &Path, lease_dir: &Path) -> Result<OsString, String> {
    let bytes = arg.as_os_str().as_bytes();
    if bytes.ends_with(b"/") || bytes.ends_with(b"/.") {
        return Err(format!(
            "{}: {}",
            arg.display(),
            io::Error::from_raw_os_error(libc::ENOTDIR)
        ));
    }
    if !bytes.contains(&b'/') {
        if bytes.ends_with(b".json") {
            return Ok(arg.as_os_str().to_owned());
        }
        let mut name = arg.as_os_str().to_owned();
        name.push(".json");
        return Ok(name);
    }
    let outside = || {
        format!(
            "{} is not a journal inside the lease directory {}",
            arg.display(),
            lease_dir.display()
        )
    };
    let name = arg.file_name().ok_or_else(outside)?;
    let folder = match arg.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    let (Ok(folder), Ok(leases)) = (folder.canonicalize(), lease_dir.canonicalize()) else {
        return Err(outside());
    };
    if folder != leases {
        return Err(outside());
    }
    Ok(name.to_owned())
}

#[allow(clippy::too_many_arguments)]
fn explain(
    dir: Option<&LeaseDir>,
    lease_dir: &Path,
    arg: &Path,
    name: Result<OsString, String>,
    backoff: &Backoff,
    options: &ScanOptions,
    proc: &ProcFs,
) -> Explained {
    let (file, path) = match &name {
        Ok(name) => (
            String::from_utf8_lossy(name.as_bytes()).into_owned(),
            lease_dir.join(name),
        ),
        Err(_) => (
            arg.file_name()
                .map(|name| String::from_utf8_lossy(name.as_bytes()).into_owned())
                .unwrap_or_else(|| arg.display().to_string()),
            arg.to_path_buf(),
        ),
    };
    let name = name.map(OsString::into_vec);
    let wrapper_id = name
        .as_ref()
        .ok()
        .and_then(|name| lease::wrapper_id_of(name))
        .map(str::to_owned);
    let judged = name.and_then(|name| {
        let Some(dir) = dir else {
            return Err(format!(
                "the lease directory {} does not exist",
                lease_dir.display()
            ));
        };
        if !name.ends_with(b".json") {
            return Err(format!(
                "{} is not a journal: only *.json entries are judged",
                path.display()
            ));
        }
        match dir.kind(&name) {
            Ok(Some(kind)) => Ok(scan::judge_file(dir, kind, &name, options, proc)),
            Ok(None) => Err(format!("no such journal: {}", path.display())),
            Err(error) => Err(format!("cannot look at {}: {error}", path.display())),
        }
    });
    let held = wrapper_id
        .as_ref()
        .and_then(|id| backoff.held.get(id))
        .cloned();
    let backoff = wrapper_id
        .as_ref()
        .and_then(|id| backoff.leases.get(id))
        .cloned();
    let open_lock = dir
        .zip(wrapper_id.as_deref())
        .and_then(|(dir, id)| open_lock(dir, lease_dir, id));
    Explained {
        file,
        path,
        wrapper_id,
        judged,
        backoff,
        held,
        open_lock,
    }
}

/// What a run would say of lease `id`'s recovery lock in `dir` (at
/// `lease_dir`): its error, with the fix, when rch would refuse it (not a
/// regular file, another user's, more than one link, open to group or
/// others), else None.
fn open_lock(dir: &LeaseDir, lease_dir: &Path, id: &str) -> Option<String> {
    use std::os::fd::AsFd;
    recovery_lock::refusal_at(dir.as_fd(), lease_dir, id).map(|refusal| refusal.error())
}

#[derive(Serialize)]
struct JsonDocument<'a> {
    version: u32,
    journals: Vec<JsonJournal<'a>>,
}

#[derive(Serialize)]
struct JsonJournal<'a> {
    file: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    wrapper_id: Option<&'a str>,
    verdict: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    checks: Vec<JsonCheck>,
    backoff: Option<&'a Entry>,
    next: Option<&'static str>,
    /// Added: the lease's recovery lock is one rch refuses, and the fix.
    #[serde(skip_serializing_if = "Option::is_none")]
    recovery_lock: Option<&'a str>,
    /// Added: held without a start that reached rch's verdict, as the
    /// state holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    held: Option<&'a HeldLease>,
}

#[derive(Serialize)]
struct JsonCheck {
    check: &'static str,
    passed: bool,
    evidence: String,
}

/// SPEC's document: `{"version": 1, "journals": [...]}`, one line.
fn json(explained: &[Explained], now: u64) -> String {
    let journals = explained
        .iter()
        .map(|one| {
            let (verdict, reason, error, checks) = match &one.judged {
                Err(error) => ("missing", None, Some(error.as_str()), Vec::new()),
                Ok(judgement) => {
                    let checks = judgement
                        .checks
                        .iter()
                        .map(|check| JsonCheck {
                            check: check.check.as_str(),
                            passed: check.passed,
                            evidence: check.evidence.to_string(),
                        })
                        .collect();
                    match judgement.verdict {
                        Ok(_) => ("candidate", None, None, checks),
                        Err(reason) => ("skipped", Some(reason.as_str()), None, checks),
                    }
                }
            };
            JsonJournal {
                file: &one.file,
                wrapper_id: one.wrapper_id.as_deref(),
                verdict,
                reason,
                error,
                checks,
                backoff: one.backoff.as_ref(),
                next: one.next(now).map(Next::as_str),
                recovery_lock: one.open_lock.as_deref(),
                held: one.held.as_ref(),
            }
        })
        .collect();
    let document = JsonDocument {
        version: 1,
        journals,
    };
    // Plain structs of strings and numbers always serialize.
    format!("{}\n", serde_json::to_string(&document).unwrap_or_default())
}

/// A short report per journal, to paste into a ticket.
fn human(explained: &[Explained], now: u64) -> String {
    let mut out = String::new();
    for (index, one) in explained.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "{}", one.file);
        let _ = writeln!(out, "  path     {}", one.path.display());
        match &one.judged {
            Err(error) => {
                let _ = writeln!(out, "  verdict  missing: {error}");
            }
            Ok(judgement) => {
                let _ = writeln!(out, "  checks   (in order; the first that fails decides)");
                let width = judgement
                    .checks
                    .iter()
                    .map(|check| check.check.as_str().len())
                    .max()
                    .unwrap_or(0);
                for check in &judgement.checks {
                    let _ = writeln!(
                        out,
                        "    {}  {:width$}  {}",
                        if check.passed { "pass" } else { "FAIL" },
                        check.check.as_str(),
                        check.evidence
                    );
                }
                let _ = match judgement.verdict {
                    Ok(_) => writeln!(
                        out,
                        "  verdict  candidate: the owner is gone and the lease still holds work only a recovery can finish"
                    ),
                    Err(reason) => writeln!(out, "  verdict  skipped: {}", reason.as_str()),
                };
            }
        }
        match &one.backoff {
            None => out.push_str("  backoff  none\n"),
            Some(entry) => {
                let _ = writeln!(
                    out,
                    "  backoff  {} failure{} (worker {}, build {}); next attempt {}",
                    entry.failures,
                    if entry.failures == 1 { "" } else { "s" },
                    entry.worker_id,
                    entry.build_id,
                    when(shown_next(entry, now), now)
                );
                if let Some(hold) = entry.hold {
                    let _ = writeln!(out, "           {}", held(hold, entry));
                }
                if let Some(error) = &entry.last_error {
                    let _ = writeln!(out, "           last error: {error}");
                }
            }
        }
        if let Some(held) = &one.held {
            let _ = writeln!(out, "  waiting  {}", crate::sweep::held::told(held, now));
        }
        let next = match one.next(now) {
            None => "nothing: there is no such journal".to_owned(),
            Some(Next::Skipped) => "skipped: not a candidate".to_owned(),
            Some(Next::WouldRecover) => match &one.wrapper_id {
                Some(id) => format!(
                    "would_recover: run `rch jobs recover {id}` (within the run's --max-recoveries)"
                ),
                None => "would_recover".to_owned(),
            },
            Some(Next::BackingOff(until)) => format!("backing_off until {}", when(until, now)),
        };
        let _ = writeln!(out, "  next run {next}");
        if let Some(error) = &one.open_lock {
            let _ = writeln!(
                out,
                "           deferred, not started, until the lock is fixed: {error}"
            );
        }
    }
    out
}

/// What an entry waiting on rch waits for.
fn held(hold: Hold, entry: &Entry) -> String {
    match hold {
        Hold::Stuck => "stuck: this rch (2.1.17-2.1.33) never completes a build its daemon forgot; it is retried after --backoff-max with no failure counted; upgrade rch to 2.1.34".to_owned(),
        Hold::DaemonRecordWait => format!(
            "waiting until {}: rch's daemon has no record of the build, and rch finishes the lease once it is 24h old",
            crate::human::utc(entry.next_attempt_unix_ms)
        ),
    }
}

/// An entry's next attempt as the next run will save it: no later than
/// `now` + the default `--backoff-max` (explain does not take the flag),
/// as a dry run shows it; the JSON's `backoff` keeps the entry as stored.
fn shown_next(entry: &Entry, now: u64) -> u64 {
    backoff::capped(
        entry.next_attempt_unix_ms,
        now,
        backoff::cap_ms(entry, crate::cli::DEFAULT_BACKOFF_MAX_SECS * 1000),
    )
}

/// `2026-11-30 07:12:03 UTC (in 19m 59s)`, or `(due)` once passed.
fn when(unix_ms: u64, now: u64) -> String {
    let relative = if unix_ms > now {
        format!("in {}", span(unix_ms - now))
    } else {
        "due".to_owned()
    };
    format!("{} ({relative})", crate::human::utc(unix_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_without_a_slash_are_journals_of_the_lease_directory() {
        let dir = Path::new("/nonexistent/job-leases");
        let id = "rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10";
        assert_eq!(
            entry_name(Path::new(id), dir),
            Ok(OsString::from(format!("{id}.json")))
        );
        assert_eq!(
            entry_name(Path::new("notes.json"), dir),
            Ok(OsString::from("notes.json"))
        );
        assert!(entry_name(Path::new("/etc/passwd"), dir).is_err());
    }

    #[test]
    fn a_path_must_lead_into_the_lease_directory() {
        let world = tempfile::tempdir().expect("tempdir");
        let leases = world.path().join("job-leases");
        std::fs::create_dir(&leases).expect("mkdir");
        let inside = leases.join("x.json");
        assert_eq!(entry_name(&inside, &leases), Ok(OsString::from("x.json")));
        let around = world.path().join("job-leases/../job-leases/x.json");
        assert_eq!(entry_name(&around, &leases), Ok(OsString::from("x.json")));
        for outside in [
            world.path().join("x.json"),
            leases.join("sub/x.json"),
            leases.join(".."),
            leases.clone(),
        ] {
            assert!(entry_name(&outside, &leases).is_err(), "{outside:?}");
        }
        // A journal's path with `/.` or `/` after it names a directory.
        for dir_form in ["x.json/.", "x.json/"] {
            let error = entry_name(&leases.join(dir_form), &leases).expect_err(dir_form);
            assert!(error.contains("Not a directory"), "{error}");
        }
    }
}

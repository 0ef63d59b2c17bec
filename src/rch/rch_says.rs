//! rch's own words, read. `rch jobs recover` exits 1 for a lease that
//! really failed and for many answers that are no failure of the lease (a
//! lock another recovery holds, a daemon that forgot the build, a broken
//! configuration file). Its exit code cannot tell them apart; its answer
//! can. This is the one table of those answers (SPEC "rch's answer is its
//! `Error:` line, and the whole catalogue is read"): each row holds rch's
//! words as its sources write them, the releases that print them, and what
//! they are about. Matching is a pure function over text whose escape
//! sequences were already taken out ([`crate::rch::child::strip_escapes`]);
//! what each meaning does to a lease is [`crate::rch::recover`]'s.
//!
//! **Only the `Error:` line.** Every rch 2.1 prints a failure as one line
//! `Error: {error:#}` (main.rs: anyhow's alternate form, the causes joined
//! by `: `), after whatever it logged. So the answer is the last line that
//! begins `Error: `, and only that line is matched: a phrase in a log line,
//! a progress line or any other line of the tail is not rch's answer.
//!
//! **rch's words as its sources write them.** A row's [`Wording::Rch`] is a
//! format string copied from rch's (or its pinned rch-common's) source,
//! `{…}` where rch fills something in (a `{:?}` is a Debug-quoted path, so
//! it must begin with `"`). `tests/rch_sources.rs` checks every row against
//! `tests/data/rch-sources/phrases.tsv` (made by
//! `scripts/rch-source-evidence.py` from the published sources): each
//! phrase is in the sources of every release its row names. Words that
//! are not rch's own come from Rust's std as rch prints them: a lock
//! error's text ([`Wording::Std`]) and an OS error's `(os error N)`
//! ([`Wording::Os`]).
//!
//! The release is a [`Version`]: the one the run read (`None` when it did
//! not, or could not). Rows whose words changed meaning between releases
//! name their releases; an rch whose release is not known is read by every
//! row that does not say otherwise.

use crate::rch::release::Version;

/// What rch's answer is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meaning {
    /// Another process (rchd's own recovery task, an operator) holds the
    /// lease's recovery lock.
    BusyLock,
    /// Another wrapper holds the lock of the output folder rch publishes
    /// the recovered build into.
    BusyOutput,
    /// The lease directory's file system gave rch no usable lock (ENOLCK
    /// and kin: a `flock` that is neither taken nor refused as busy).
    NoLocks,
    /// rch's own owner check could not prove the wrapper gone, though ours
    /// did: it refuses, and will recover the lease once it agrees.
    OwnerRefused,
    /// Another writer changed the journal or its lock while rch read it:
    /// the next run reads it afresh.
    Raced,
    /// rch 2.1.34: its daemon has no record of the build, and rch accepts
    /// that only once the lease is 24 hours old.
    DaemonRecordWait,
    /// rch 2.1.17–2.1.33: its daemon has no record of the build, which
    /// those releases never complete: only an upgrade ends it.
    NoTerminalReceipt,
    /// The lease's `.recovery.lock` is one rch will not use.
    UnsafeLock,
    /// rch could not reach its daemon or got no usable answer from it.
    Daemon,
    /// rch could not read or parse one of its configuration files.
    Config,
    /// rch's own `--timeout-secs` ran out during the artifact recovery:
    /// the lease's unless another wrapper held the output folder then.
    RecoveryDeadline,
    /// ENOSPC or EDQUOT: the lease directory's only if its file system is
    /// short now.
    NoSpace,
    /// EROFS or EACCES: the lease directory's only if the journal, its lock
    /// or the directory is not writable now.
    NotWritable,
}

/// One piece of an answer; every piece of a row must be in the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wording {
    /// A format string from rch's source, `{…}` for what rch fills in.
    Rch(&'static str),
    /// Text of Rust's std that rch prints inside its own words.
    Std(&'static str),
    /// An OS error as Rust's std prints it: `(os error N)`.
    Os(i32),
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// rch's words; all of them must be in the line.
    pub words: &'static [Wording],
    /// The first release that prints them with this meaning.
    pub first: Version,
    /// The last one; None: every later release too.
    pub last: Option<Version>,
    /// Whether the row applies when the release is not known. False only
    /// where the same words mean an ordinary failure in another release.
    pub unknown_release: bool,
    pub meaning: Meaning,
}

impl Row {
    /// Whether the row speaks for `release`.
    fn covers(&self, release: Option<Version>) -> bool {
        match release {
            None => self.unknown_release,
            Some(release) => release >= self.first && self.last.is_none_or(|last| release <= last),
        }
    }

    /// Whether every piece of the row is in `line`.
    fn holds(&self, line: &str) -> bool {
        self.words.iter().all(|words| words.found_in(line))
    }
}

impl Wording {
    fn found_in(&self, line: &str) -> bool {
        match self {
            Wording::Rch(format) => format_found(&pieces(format), line),
            Wording::Std(text) => line.contains(text),
            Wording::Os(errno) => line.contains(&format!("(os error {errno})")),
        }
    }
}

/// How rch prints every error (main.rs, every 2.1.x): the line an answer
/// is read from, and the evidence that an OS error's text reaches it.
pub const PRINTED: &str = "Error: {error:#}";

/// What begins the line [`PRINTED`] writes.
pub const ERROR_PREFIX: &str = "Error: ";

/// std's text for a `try_lock` another holder refused
/// (`TryLockError::WouldBlock`).
pub const WOULD_BLOCK: &str = "lock acquisition failed because the operation would block";

/// std's text for a `try_lock` that failed otherwise
/// (`TryLockError::Error`: ENOLCK, EIO).
pub const LOCK_IO_ERROR: &str = "lock acquisition failed due to I/O error";

/// rch's words for a recovery lock it will not use (kept where the lock is
/// judged, [`crate::lease_dir::recovery_lock`], below this room).
pub use crate::lease_dir::recovery_lock::UNSAFE_LOCK;

/// rch's per-lease lock before 2.1.21: `{error}` is std's `try_lock` text.
const ACQUIRE: &str = "cannot acquire exclusive job recovery: {error}; another recovery may be active; retry the same wrapper";

/// rch's output-folder lock from 2.1.2 (waiting up to 600 s, silently).
const PUBLICATION: &str = "output publication into {} is held by another wrapper: {error}";

/// rch 2.1.0's output-folder lock (no wait).
const OWNERSHIP_2_1_0: &str = "output ownership is held by another live wrapper for {}: {error}; the original wrapper must finish collection";

const fn v(patch: u64) -> Version {
    Version::new(2, 1, patch)
}

/// A row of `words` for releases `first..=last` (None: to the newest),
/// also for an rch whose release is not known.
const fn row(words: &'static [Wording], first: u64, last: Option<u64>, meaning: Meaning) -> Row {
    Row {
        words,
        first: v(first),
        last: match last {
            Some(last) => Some(v(last)),
            None => None,
        },
        unknown_release: true,
        meaning,
    }
}

use Meaning::*;
use Wording::{Os, Rch, Std};

/// rch's answers in `jobs recover` that are not the lease's own failure,
/// first match wins (rch-lease-format.md §8–§10, and the sources).
pub const TABLE: &[Row] = &[
    // Another holder. From 2.1.21 the per-lease lock's refusal has words
    // of its own; before, std's text says whether it was busy.
    row(
        &[Rch(
            "cannot acquire exclusive job recovery: journal is held by another handle; retry the same wrapper",
        )],
        21,
        None,
        BusyLock,
    ),
    row(&[Rch(ACQUIRE), Std(WOULD_BLOCK)], 17, Some(20), BusyLock),
    row(&[Rch(ACQUIRE)], 17, Some(20), NoLocks),
    row(
        &[Rch("cannot inspect exclusive job journal ownership")],
        21,
        None,
        NoLocks,
    ),
    row(&[Rch(PUBLICATION), Std(WOULD_BLOCK)], 2, None, BusyOutput),
    row(&[Rch(PUBLICATION)], 2, None, NoLocks),
    row(
        &[Rch(OWNERSHIP_2_1_0), Std(WOULD_BLOCK)],
        0,
        Some(0),
        BusyOutput,
    ),
    row(&[Rch(OWNERSHIP_2_1_0)], 0, Some(0), NoLocks),
    // The lock file itself, and rch's owner check.
    row(&[Rch(UNSAFE_LOCK)], 17, None, UnsafeLock),
    row(
        &[Rch(
            "original wrapper is still present or unverified; use jobs attach or retry after it exits; no recovery started",
        )],
        17,
        None,
        OwnerRefused,
    ),
    // Races with another writer.
    row(
        &[Rch("recovery lock path changed during acquisition")],
        17,
        None,
        Raced,
    ),
    row(
        &[Rch(
            "durable job identity changed before recovery; reload the same wrapper, never replay",
        )],
        17,
        None,
        Raced,
    ),
    row(
        &[Rch(
            "job journal changed during owner inspection; retry with its latest evidence",
        )],
        17,
        None,
        Raced,
    ),
    row(
        &[Rch(
            "recovery journal changed during daemon reconciliation; acknowledgement refused",
        )],
        17,
        None,
        Raced,
    ),
    // A build the daemon forgot.
    row(
        &[Rch(
            "daemon has no record of recovered build {build_id}; acknowledgement waits until the lease is 24h old",
        )],
        34,
        None,
        DaemonRecordWait,
    ),
    Row {
        words: &[Rch(
            "daemon has no exact terminal receipt for recovered wrapper/build/worker",
        )],
        first: v(17),
        last: Some(v(33)),
        // From 2.1.34 the same words are a reply that does not match: an
        // rch whose release is not known is taken for the newest, as the
        // completion check takes it.
        unknown_release: false,
        meaning: NoTerminalReceipt,
    },
    // The daemon: a fault like one that is down.
    row(
        &[Rch("Daemon socket not found at {socket_path}")],
        0,
        None,
        Daemon,
    ),
    row(
        &[Rch("Timed out connecting to daemon socket")],
        0,
        None,
        Daemon,
    ),
    row(&[Rch("Timed out sending daemon command")], 0, None, Daemon),
    row(
        &[Rch("Timed out waiting for daemon response")],
        0,
        None,
        Daemon,
    ),
    row(&[Rch("daemon response has no body")], 0, None, Daemon),
    row(
        &[Rch(
            "daemon refused job status; ownership remains unresolved",
        )],
        21,
        None,
        Daemon,
    ),
    row(
        &[Rch("incomplete recovery daemon response")],
        17,
        None,
        Daemon,
    ),
    row(
        &[Rch("recovery daemon refused the request")],
        17,
        None,
        Daemon,
    ),
    row(&[Rch("invalid recovery daemon JSON")], 17, None, Daemon),
    row(&[Rch("oversized recovery daemon reply")], 17, None, Daemon),
    row(&[Rch("non-UTF-8 recovery daemon reply")], 17, None, Daemon),
    row(
        &[Rch(
            "recovery daemon request timed out; completion remains pending",
        )],
        17,
        None,
        Daemon,
    ),
    // rch's configuration (`jobs recover` reads it for the daemon's socket).
    row(&[Rch("Failed to read {:?}")], 0, None, Config),
    row(&[Rch("Failed to parse {:?}")], 0, None, Config),
    row(
        &[Rch("Failed to decode merged config for {:?}")],
        0,
        None,
        Config,
    ),
    // rch's own deadline, met while waiting for an output folder or not.
    row(
        &[
            Rch(
                "same-id job deadline elapsed during {operation}; journal retained; no command replayed",
            ),
            Rch("artifact recovery (use the retained journal for same-id retry)"),
        ],
        0,
        None,
        RecoveryDeadline,
    ),
    // The OS's words, judged by a look at the lease directory.
    row(&[Os(libc::ENOSPC)], 0, None, NoSpace),
    row(&[Os(libc::EDQUOT)], 0, None, NoSpace),
    row(&[Os(libc::EROFS)], 0, None, NotWritable),
    row(&[Os(libc::EACCES)], 0, None, NotWritable),
];

/// What rch said, and the line that said it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said {
    pub meaning: Meaning,
    pub line: String,
}

/// rch's answer in `stderr` (escape sequences already removed): its last
/// line that begins `Error: `, trimmed of trailing blanks.
pub fn error_line(stderr: &str) -> Option<&str> {
    stderr
        .lines()
        .rev()
        .map(str::trim_end)
        .find(|line| line.starts_with(ERROR_PREFIX))
}

/// What rch (of `release`, when known) meant by `stderr` (escape sequences
/// already removed): the first row, in table order, that covers the
/// release and whose words are all in rch's `Error:` line, if any.
pub fn read(stderr: &str, release: Option<Version>) -> Option<Said> {
    let line = error_line(stderr)?;
    TABLE
        .iter()
        .find(|row| row.covers(release) && row.holds(line))
        .map(|row| Said {
            meaning: row.meaning,
            line: line.to_owned(),
        })
}

/// The first Debug-quoted string of `line` (`"…"`, with `\"` and `\\`
/// unescaped): the file a configuration answer names.
pub fn quoted(line: &str) -> Option<String> {
    let (_, rest) = line.split_once('"')?;
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => out.push(chars.next()?),
            c => out.push(c),
        }
    }
    None
}

/// The literal pieces of an rch format string, each with whether the
/// placeholder that follows it is a `{:?}` (Debug: a quoted string).
/// `{{` and `}}` stand for themselves.
pub fn pieces(format: &str) -> Vec<(String, bool)> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                literal.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                literal.push('}');
            }
            '{' => {
                let inner: String = chars.by_ref().take_while(|c| *c != '}').collect();
                pieces.push((std::mem::take(&mut literal), inner.ends_with(":?")));
            }
            c => literal.push(c),
        }
    }
    if !literal.is_empty() {
        pieces.push((literal, false));
    }
    pieces
}

/// Whether `line` holds the `pieces` in order, each Debug placeholder
/// followed by a quote.
fn format_found(pieces: &[(String, bool)], line: &str) -> bool {
    let Some(((first, debug), rest)) = pieces.split_first() else {
        return true;
    };
    line.match_indices(first.as_str()).any(|(at, _)| {
        let after = &line[at + first.len()..];
        (!debug || after.starts_with('"')) && format_found(rest, after)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEW: Option<Version> = Some(Version::new(2, 1, 34));
    const OLD: Option<Version> = Some(Version::new(2, 1, 30));

    /// rch 2.1.34's stderr opens with colour-coded update-check warnings
    /// and log lines; the answer is its `Error:` line.
    fn with_warnings(answer: &str) -> String {
        format!(
            "warning: update check failed: error sending request\n  INFO rch::hook: recovering\nError: {answer}\n"
        )
    }

    /// Stderr the real rch printed, as scripts/real-rch-e2e.sh kept it
    /// (`--keep-journals`): (what it is, the release, its stderr, what it
    /// means). A new recording is one more line here (`include_str!` of a
    /// file in tests/data/real-rch-<release>/).
    const RECORDED: &[(&str, Version, &str, Option<Meaning>)] = &[
        (
            "busy lock, real rch 2.1.34 (a manual jobs recover held the lock)",
            Version::new(2, 1, 34),
            include_str!("../../tests/data/real-rch-2.1.34/stderr-busy-lock.txt"),
            Some(Meaning::BusyLock),
        ),
        (
            "the 24 h wait, real rch 2.1.34 (rchd restarted without its history)",
            Version::new(2, 1, 34),
            include_str!("../../tests/data/real-rch-2.1.34/stderr-24h-wait.txt"),
            Some(Meaning::DaemonRecordWait),
        ),
    ];

    #[test]
    fn recorded_stderr_of_the_real_rch_reads_as_it_meant() {
        for (what, release, stderr, meaning) in RECORDED {
            let text = crate::rch::child::strip_escapes(stderr);
            assert_eq!(
                read(&text, Some(*release)).map(|said| said.meaning),
                *meaning,
                "{what}"
            );
        }
    }

    #[test]
    fn format_strings_match_what_rch_fills_in() {
        let config = pieces("Failed to parse {:?}");
        assert_eq!(config, [("Failed to parse ".to_owned(), true)]);
        assert!(format_found(
            &config,
            "Error: Failed to parse \"/home/u/.config/rch/config.toml\": TOML parse error at line 1, column 9"
        ));
        // Not a Debug-quoted path: another file's words.
        assert!(!format_found(
            &pieces("Failed to read {:?}"),
            "Error: Failed to read lock file: \"/x\""
        ));
        let publication = pieces(PUBLICATION);
        assert!(format_found(
            &publication,
            &format!(
                "Error: output publication into /p/target is held by another wrapper: {WOULD_BLOCK}"
            )
        ));
        assert!(!format_found(
            &publication,
            "Error: output publication into /p"
        ));
        assert_eq!(pieces("{{a}} {b}"), [("{a} ".to_owned(), false)]);
        assert_eq!(
            quoted(r#"Error: Failed to parse "/h/a \"b\".toml": TOML"#).as_deref(),
            Some(r#"/h/a "b".toml"#)
        );
        assert_eq!(quoted("Error: none"), None);
    }

    #[test]
    fn only_the_last_error_line_is_rchs_answer() {
        // The phrase in a log line, a warning or a `Caused by` line is not
        // rch's answer.
        for stderr in [
            "  INFO rch: cannot acquire exclusive job recovery: journal is held by another handle; retry the same wrapper\nError: ssh: connection refused\n",
            "Error: failed to publish recovered outputs into /p/target\n\nCaused by:\n    No space left on device (os error 28)\n",
            "warning: Timed out waiting for daemon response\n",
        ] {
            assert_eq!(read(stderr, NEW), None, "{stderr}");
        }
        // The last Error: line wins, whatever follows it.
        let stderr = "Error: daemon response has no body\nError: ssh failed\n  trailing log\n";
        assert_eq!(read(stderr, NEW), None);
        let stderr = "Error: ssh failed\nError: daemon response has no body\n  DEBUG exit\n";
        assert_eq!(read(stderr, NEW).map(|s| s.meaning), Some(Meaning::Daemon));
        // Indented is not rch's line.
        assert_eq!(read("  Error: daemon response has no body\n", NEW), None);
        assert_eq!(read("", NEW), None);
    }

    #[test]
    fn the_lock_answers_of_2_1_17_to_2_1_20_say_busy_or_no_locks_by_stds_text() {
        let release = Some(Version::new(2, 1, 18));
        let said = |error: &str| {
            let line = ACQUIRE.replace("{error}", error);
            read(&with_warnings(&line), release).map(|s| s.meaning)
        };
        assert_eq!(said(WOULD_BLOCK), Some(Meaning::BusyLock));
        assert_eq!(said(LOCK_IO_ERROR), Some(Meaning::NoLocks));
        // 2.1.21's words: busy, whatever the release is taken for.
        let busy = "cannot acquire exclusive job recovery: journal is held by another handle; retry the same wrapper";
        assert_eq!(
            read(&with_warnings(busy), None).map(|s| s.meaning),
            Some(Meaning::BusyLock)
        );
        assert_eq!(
            read(&with_warnings(busy), NEW).map(|s| s.meaning),
            Some(Meaning::BusyLock)
        );
        // Not printed before 2.1.17.
        assert_eq!(
            read(&with_warnings(busy), Some(Version::new(2, 1, 16))),
            None
        );
    }

    #[test]
    fn no_exact_terminal_receipt_is_stuck_only_before_2_1_34() {
        let stderr = with_warnings(
            "daemon has no exact terminal receipt for recovered wrapper/build/worker",
        );
        for release in [
            OLD,
            Some(Version::new(2, 1, 17)),
            Some(Version::new(2, 1, 33)),
        ] {
            assert_eq!(
                read(&stderr, release).map(|s| s.meaning),
                Some(Meaning::NoTerminalReceipt)
            );
        }
        // From 2.1.34 an ordinary failure; so for a release not known, and
        // before 2.1.17 (no daemon handoff at all).
        assert_eq!(read(&stderr, NEW), None);
        assert_eq!(read(&stderr, None), None);
        assert_eq!(read(&stderr, Some(Version::new(2, 1, 16))), None);
    }

    #[test]
    fn os_errors_are_read_by_their_number() {
        let said = |answer: &str| read(&with_warnings(answer), NEW).map(|s| s.meaning);
        assert_eq!(
            said("failed to persist recovery journal: No space left on device (os error 28)"),
            Some(Meaning::NoSpace)
        );
        assert_eq!(
            said("Disk quota exceeded (os error 122)"),
            Some(Meaning::NoSpace)
        );
        assert_eq!(
            said("Read-only file system (os error 30)"),
            Some(Meaning::NotWritable)
        );
        assert_eq!(
            said("Permission denied (os error 13)"),
            Some(Meaning::NotWritable)
        );
        // A configuration file rch cannot read is about the configuration.
        assert_eq!(
            said("Failed to read \"/h/.config/rch/config.toml\": Permission denied (os error 13)"),
            Some(Meaning::Config)
        );
        // Wording without the number are another program's.
        assert_eq!(said("rsync: write failed: No space left on device"), None);
    }
}

//! One pass over the lease directory: every `*.json` entry is read once with
//! the safe reader, judged, and either kept as a small candidate record or
//! counted as skipped. Other entries (`*.recovery.lock`, `*.recover`, rch's
//! temporary files, folders) are not journals and are not counted.

use crate::config;
use crate::judge;
use crate::judge::evidence::{Check, Evidence, Judgement};
use crate::judge::owner::ProcFs;
use crate::judge::verdict::{Candidate, SkipReason, Skipped};
use crate::lease::{self, MAX_JOURNAL_BYTES, ReadFailure};
use crate::lease_dir::{LeaseDir, ListedType, Listing};
use crate::shortage;
use crate::stat::FileKind;
use crate::sweep::plan;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

pub struct ScanOptions {
    pub now_unix_ms: u64,
    pub stale_after_ms: u64,
    /// Keep a record of every skipped journal (for `--verbose`).
    pub keep_skipped: bool,
}

#[derive(Debug, Default)]
pub struct Scan {
    /// `*.json` entries seen.
    pub scanned: usize,
    /// Skipped journals by reason, indexed by [`SkipReason::index`].
    pub skipped: [usize; SkipReason::ALL.len()],
    /// Candidates, oldest heartbeat first.
    pub candidates: Vec<Candidate>,
    /// With `keep_skipped`, every skipped journal in file-name order.
    pub skipped_list: Vec<Skipped>,
    /// Journals whose heartbeat lies more than [`CLOCK_AHEAD_MS`] in the
    /// future (among those judged as far as their heartbeat): this
    /// machine's clock is behind the writer's, and every such lease looks
    /// fresh for as long.
    pub heartbeats_ahead: usize,
    /// Journals a host shortage kept from being judged
    /// ([`Judgement::shortage`]): each is counted under its SPEC reason in
    /// `skipped` too, but is no verdict on its lease.
    pub cut_short: usize,
    /// The first such shortage, naming the file that could not be read.
    pub shortage: Option<String>,
}

impl Scan {
    /// The run's error when a host shortage cut any journal's judgement
    /// short: the scan judged less than it lists, so no lease's backoff
    /// may be pruned, charged or recovered on it (SPEC, issue 34: 75).
    pub fn shortage_error(&self) -> Option<String> {
        let first = self.shortage.as_deref()?;
        let count = self.cut_short;
        let journals = if count == 1 { "journal" } else { "journals" };
        Some(format!(
            "a host shortage kept {count} {journals} from being judged ({first}); nothing was recovered and every lease keeps its backoff: raise the open-file limit or free memory, then run again"
        ))
    }
}

/// How far in the future a heartbeat may lie before it tells of a clock
/// that is behind, not of ordinary skew between a write and a read.
pub const CLOCK_AHEAD_MS: u64 = 60_000;

/// Journal names listed into one batch, a thread: what the listing thread
/// lists while the others judge the batch before. Handing a batch over
/// costs a lock and a wake-up, nothing next to judging it; and the two or
/// three batches in memory at once (under 20 KiB each a thread) stay far
/// below the memory targets.
const BATCH: usize = 256;

/// Scans the open lease directory with one thread a core this process may
/// use ([`config::scan_threads`]). An error means the directory could not be
/// listed to its end; a partial scan would drop the backoff of the journals
/// it did not see, so there is none.
pub fn scan(dir: &LeaseDir, options: &ScanOptions, proc: &ProcFs) -> io::Result<Scan> {
    scan_with_threads(
        dir,
        options,
        proc,
        config::scan_threads(config::process_env),
    )
}

/// Scans `dir` with at most `threads` threads (the calling one included).
///
/// The directory is listed once, by its open descriptor, a batch at a time:
/// while every other thread judges the batch at hand, taking its journals
/// one by one through an atomic cursor, this one lists the next batch and
/// then joins them. Each thread parses one journal at a time as a stream
/// ([`lease::read_lease`]) and keeps only what the result needs (counts;
/// candidates; skipped rows only for `--verbose`), so memory grows with the
/// candidates, never with the skipped journals or their sizes. The
/// result is exactly the serial one: candidates in [`plan::order`], skipped
/// rows in file-name order with ties in listing order, the same counts.
pub fn scan_with_threads(
    dir: &LeaseDir,
    options: &ScanOptions,
    proc: &ProcFs,
    threads: usize,
) -> io::Result<Scan> {
    scan_in_batches(
        dir,
        options,
        proc,
        threads,
        BATCH.saturating_mul(threads.max(1)),
    )
}

/// [`scan_with_threads`] with batches of `batch_len` names (tests use small
/// ones to spread a small directory over several batches).
///
/// This pool (`thread::scope`, a published batch, an atomic cursor) took
/// the place of a hand-written one: this thread listed batches of 128 into
/// a bounded queue that workers drained, judged a batch itself whenever the
/// queue was full, and spread a directory that fit one batch journal by
/// journal. Interleaved with it on the same files (`scripts/bench.sh`'s
/// round-robin, issue 30, 1–3 % CPU pressure), neither measurably won:
/// 10k journals took 0.99 times as long on 2 threads and 0.98 on one (41
/// rounds), 100k 1.00–1.03 and 0.98–1.04 (runs of 11 and 21 rounds), 16
/// journals of 8 MiB 0.91–0.94 on 2 threads; peak RSS within the noise
/// (+0.1–0.3 MiB). This one is kept because it has no special case: every
/// journal is handed out alone, whatever the directory's size.
fn scan_in_batches(
    lease_dir: &LeaseDir,
    options: &ScanOptions,
    proc: &ProcFs,
    threads: usize,
    batch_len: usize,
) -> io::Result<Scan> {
    // A listing error aborts the scan: a partial scan would drop the backoff
    // of the journals it did not see.
    let mut listing = lease_dir.list()?;
    let batch_len = batch_len.max(1);
    let shared = Shared {
        lease_dir,
        options,
        proc,
        kept: Mutex::default(),
        board: Board::default(),
    };
    let mut first = Batch::default();
    let ended = first.fill(&mut listing, 0, batch_len)?;
    let (counts, scanned) = std::thread::scope(|scope| {
        judge_batches(
            scope,
            &shared,
            first,
            ended,
            &mut listing,
            threads,
            batch_len,
        )
    })?;
    let Records {
        mut candidates,
        mut skipped_list,
    } = shared
        .kept
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    plan::order(&mut candidates);
    // Names are unique, but their lossy decodings need not be: ties keep the
    // listing order, as the serial scan's stable sort did. Positions are
    // unique, so an unstable sort gives that same order without a scratch
    // buffer as large as the rows.
    skipped_list
        .sort_unstable_by(|(a_seq, a), (b_seq, b)| a.file.cmp(&b.file).then(a_seq.cmp(b_seq)));
    Ok(Scan {
        scanned,
        heartbeats_ahead: counts.heartbeats_ahead,
        cut_short: counts.cut_short,
        shortage: counts.shortage,
        skipped: counts.skipped,
        candidates,
        skipped_list: skipped_list.into_iter().map(|(_, row)| row).collect(),
    })
}

/// Judges `first` and every batch listed after it on up to `threads`
/// threads, the calling one included. This thread lists (only it may: a
/// listing is its directory stream) and publishes each batch on `board`;
/// every thread takes the next journal of the published batch through its
/// atomic cursor, and once none is left, waits for the next batch. This
/// thread lists the next batch while the others judge, and publishes it
/// once the batch before has no journal left to take. The counts, and how
/// many journals were listed.
fn judge_batches<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    shared: &'scope Shared<'scope>,
    first: Batch,
    mut ended: bool,
    listing: &mut Listing,
    threads: usize,
    batch_len: usize,
) -> io::Result<(Tally, usize)> {
    let board: &'scope Board = &shared.board;
    // Should this thread panic, the helpers must not wait for a batch
    // forever: the scope would join them.
    let _closing = Closing(board);
    let mut batch = Arc::new(first);
    board.publish(Some(Arc::clone(&batch)));
    let wanted = if ended {
        threads.min(batch.len())
    } else {
        threads
    };
    // A thread that cannot be started leaves its share to the others.
    let helpers: Vec<_> = (1..wanted)
        .map_while(|_| {
            std::thread::Builder::new()
                .name("rch-sweep-scan".into())
                .spawn_scoped(scope, || help(shared, board))
                .ok()
        })
        .collect();
    let mut counts = Tally::default();
    let listed = loop {
        let next = if ended {
            None
        } else {
            let mut next = Batch::default();
            match next.fill(listing, batch.end(), batch_len) {
                Ok(end) => ended = end,
                Err(error) => break Err(error),
            }
            Some(next)
        };
        counts.add(judge_from(shared, &batch));
        let Some(next) = next else {
            break Ok(batch.end());
        };
        batch = Arc::new(next);
        board.publish(Some(Arc::clone(&batch)));
    };
    board.publish(None);
    for helper in helpers {
        match helper.join() {
            Ok(theirs) => counts.add(theirs),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
    Ok((counts, listed?))
}

/// Tells the helpers that no batch will follow, when dropped.
struct Closing<'a>(&'a Board);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.publish(None);
    }
}

/// A helper thread: judges each published batch until the last.
fn help(shared: &Shared, board: &Board) -> Tally {
    let mut counts = Tally::default();
    let mut judged = 0;
    while let Some((number, batch)) = board.after(judged) {
        counts.add(judge_from(shared, &batch));
        judged = number;
    }
    counts
}

/// Where the listing thread publishes the batch every thread judges now.
#[derive(Default)]
struct Board {
    /// The batch, its number (1 for the first), and None once the scan
    /// ends.
    now: Mutex<(usize, Option<Arc<Batch>>)>,
    changed: Condvar,
}

impl Board {
    /// Publishes `batch` (None: there is no more).
    fn publish(&self, batch: Option<Arc<Batch>>) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        now.0 += 1;
        now.1 = batch;
        self.changed.notify_all();
    }

    /// The first batch published after batch `number`, waiting for it;
    /// None once there is no more.
    fn after(&self, number: usize) -> Option<(usize, Arc<Batch>)> {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        while now.0 <= number {
            now = self
                .changed
                .wait(now)
                .unwrap_or_else(PoisonError::into_inner);
        }
        Some((now.0, Arc::clone(now.1.as_ref()?)))
    }
}

/// One thread's share of `batch`: the journals it takes from the batch's
/// cursor until none is left. What it found goes to [`Shared::kept`] at
/// the end.
fn judge_from(shared: &Shared, batch: &Batch) -> Tally {
    let mut counts = Tally::default();
    let mut kept = Records::default();
    while let Some((position, name, listed)) = batch.next() {
        let (verdict, ahead, short) =
            judge_entry(shared.lease_dir, listed, name, shared.options, shared.proc);
        counts.heartbeats_ahead += usize::from(ahead);
        if let Some(short) = short {
            counts.cut_short += 1;
            counts
                .shortage
                .get_or_insert_with(|| format!("{}: {short}", String::from_utf8_lossy(name)));
        }
        match verdict {
            Ok(candidate) => kept.candidates.push(candidate),
            Err((reason, detail)) => {
                counts.skipped[reason.index()] += 1;
                if shared.options.keep_skipped {
                    kept.skipped_list.push((
                        position,
                        Skipped {
                            file: String::from_utf8_lossy(name).into_owned(),
                            wrapper_id: lease::wrapper_id_of(name).map(str::to_owned),
                            reason,
                            detail,
                        },
                    ));
                }
            }
        }
    }
    if !kept.candidates.is_empty() || !kept.skipped_list.is_empty() {
        let mut all = shared.kept.lock().unwrap_or_else(PoisonError::into_inner);
        all.candidates.append(&mut kept.candidates);
        all.skipped_list.append(&mut kept.skipped_list);
    }
    counts
}

/// What every scan thread shares: the open directory, the judge's inputs and
/// what was found.
struct Shared<'a> {
    lease_dir: &'a LeaseDir,
    options: &'a ScanOptions,
    proc: &'a ProcFs,
    /// Every thread appends here once a batch. One vector that only grows is
    /// never copied into another and freed, which would leave glibc's malloc
    /// holding the memory of a vector that size until the run ends.
    kept: Mutex<Records>,
    /// The batch being judged now.
    board: Board,
}

/// The records the result keeps, in no particular order until sorted.
#[derive(Default)]
struct Records {
    candidates: Vec<Candidate>,
    /// With `keep_skipped`: each skipped row with its listing position.
    skipped_list: Vec<(usize, Skipped)>,
}

/// A thread's counts, added up once it is done.
#[derive(Default)]
struct Tally {
    skipped: [usize; SkipReason::ALL.len()],
    heartbeats_ahead: usize,
    cut_short: usize,
    shortage: Option<String>,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        for (total, count) in self.skipped.iter_mut().zip(other.skipped) {
            *total += count;
        }
        self.heartbeats_ahead += other.heartbeats_ahead;
        self.cut_short += other.cut_short;
        if self.shortage.is_none() {
            self.shortage = other.shortage;
        }
    }
}

/// A few `*.json` names, in listing order, stored back to back, and the
/// cursor the scan threads take them by.
#[derive(Default)]
struct Batch {
    /// Position in the listing of the first name (among `*.json` entries).
    first: usize,
    /// The index of the next name to judge.
    cursor: AtomicUsize,
    names: Vec<u8>,
    /// Where each name ends in `names`, and its listed type.
    ends: Vec<(usize, ListedType)>,
}

impl Batch {
    /// Lists up to `len` more journals; true when the listing ended.
    fn fill(&mut self, listing: &mut Listing, first: usize, len: usize) -> io::Result<bool> {
        self.first = first;
        while self.ends.len() < len {
            match listing.next_entry() {
                None => return Ok(true),
                Some(Err(error)) => return Err(error),
                Some(Ok((name, listed))) => {
                    if name.ends_with(b".json") {
                        self.names.extend_from_slice(name);
                        self.ends.push((self.names.len(), listed));
                    }
                }
            }
        }
        Ok(false)
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// The listing position just past this batch's last name.
    fn end(&self) -> usize {
        self.first + self.len()
    }

    /// The next name no thread has taken yet: its listing position, the
    /// name, its listed type.
    fn next(&self) -> Option<(usize, &[u8], ListedType)> {
        let index = self.cursor.fetch_add(1, Ordering::Relaxed);
        let (end, listed) = *self.ends.get(index)?;
        let start = index.checked_sub(1).map_or(0, |before| self.ends[before].0);
        Some((self.first + index, &self.names[start..end], listed))
    }
}

/// The verdict of one listed entry, whether its heartbeat lies ahead of
/// this machine's clock by more than [`CLOCK_AHEAD_MS`], and the host
/// shortage that cut its judgement short, if one did.
type EntryVerdict = (
    Result<Candidate, (SkipReason, Option<String>)>,
    bool,
    Option<String>,
);

fn judge_entry(
    lease_dir: &LeaseDir,
    listed: ListedType,
    name: &[u8],
    options: &ScanOptions,
    proc: &ProcFs,
) -> EntryVerdict {
    // The type from the listing costs no syscall; the reader checks the
    // opened descriptor again, so a swap after listing is still caught. A
    // listing that cannot tell (DT_UNKNOWN) is asked of fstatat, so a device
    // is never opened; should that fail too, the reader decides.
    let listed = match listed.kind() {
        FileKind::Unknown => lease_dir
            .kind(name)
            .ok()
            .flatten()
            .unwrap_or(FileKind::Unknown),
        kind => kind,
    };
    let judgement = judge_file(lease_dir, listed, name, options, proc);
    // Text only for the rows that are printed: a plain scan formats
    // nothing for the journals it skips.
    let detail = if options.keep_skipped {
        judgement.deciding().map(|check| check.evidence.to_string())
    } else {
        None
    };
    let ahead = judgement.checks.iter().any(|check| {
        matches!(
            check.evidence,
            Evidence::Heartbeat { heartbeat_unix_ms, now_unix_ms, .. }
                if heartbeat_unix_ms > now_unix_ms.saturating_add(CLOCK_AHEAD_MS)
        )
    });
    let short = judgement.shortage().map(str::to_owned);
    (
        judgement.verdict.map_err(|reason| (reason, detail)),
        ahead,
        short,
    )
}

/// Judges the journal `name` of the lease directory: the file checks of
/// SPEC's table (on what the listing said it is, then on the opened
/// descriptor), then the parsed lease with [`judge::judge`]. The scan and
/// `explain` both come here, so their verdicts and evidence cannot drift.
pub fn judge_file(
    lease_dir: &LeaseDir,
    listed: FileKind,
    name: &[u8],
    options: &ScanOptions,
    proc: &ProcFs,
) -> Judgement {
    let mut checks = Vec::with_capacity(SkipReason::ALL.len());
    let skipped = |mut checks: Vec<Check>, check: SkipReason, evidence: Evidence| {
        checks.push(Check::fail(check, evidence));
        Judgement {
            verdict: Err(check),
            checks,
        }
    };
    if !matches!(listed, FileKind::Regular | FileKind::Unknown) {
        return skipped(checks, SkipReason::NotRegular, Evidence::Listed(listed));
    }
    let Some(wrapper_id) = lease::wrapper_id_of(name) else {
        checks.push(Check::pass(
            SkipReason::NotRegular,
            Evidence::Listed(listed),
        ));
        return skipped(
            checks,
            SkipReason::BadName,
            Evidence::Name { canonical: false },
        );
    };
    let opened = lease_dir.open_journal(name);
    let failure = match opened {
        Ok((file, stat)) => {
            checks.push(Check::pass(SkipReason::NotRegular, Evidence::Regular(stat)));
            checks.push(Check::pass(
                SkipReason::BadName,
                Evidence::Name { canonical: true },
            ));
            checks.push(Check::pass(
                SkipReason::ForeignOwner,
                Evidence::Owner {
                    uid: Some(stat.uid),
                    euid: stat.euid,
                },
            ));
            // Size comes before shape in SPEC's table: a file that grew past
            // the limit while it was parsed is `unreadable`, never
            // `malformed`, so the size check is passed only once the parse
            // has ended.
            match lease::read_lease(&file) {
                Ok((lease, read)) => {
                    checks.push(Check::pass(
                        SkipReason::Unreadable,
                        Evidence::Size {
                            size: read.max(stat.size),
                            limit: MAX_JOURNAL_BYTES,
                        },
                    ));
                    return judge::judge(
                        wrapper_id,
                        lease,
                        options.now_unix_ms,
                        options.stale_after_ms,
                        |pid, recorded| proc.observe(pid, recorded),
                        checks,
                    );
                }
                Err(ReadFailure::Malformed(error)) => {
                    checks.push(Check::pass(
                        SkipReason::Unreadable,
                        Evidence::Size {
                            size: stat.size,
                            limit: MAX_JOURNAL_BYTES,
                        },
                    ));
                    return skipped(checks, SkipReason::Malformed, Evidence::Shape(error));
                }
                Err(failure) => {
                    return skipped(checks, SkipReason::Unreadable, read_evidence(failure));
                }
            }
        }
        Err(ReadFailure::NotRegular(kind)) => {
            return skipped(checks, SkipReason::NotRegular, Evidence::NotRegular(kind));
        }
        Err(failure) => failure,
    };
    checks.push(Check::pass(
        SkipReason::NotRegular,
        Evidence::Listed(listed),
    ));
    checks.push(Check::pass(
        SkipReason::BadName,
        Evidence::Name { canonical: true },
    ));
    if let ReadFailure::ForeignOwner { uid, euid } = failure {
        return skipped(
            checks,
            SkipReason::ForeignOwner,
            Evidence::Owner { uid, euid },
        );
    }
    checks.push(Check::pass(
        SkipReason::ForeignOwner,
        Evidence::Owner {
            uid: Some(lease_dir.euid()),
            euid: lease_dir.euid(),
        },
    ));
    skipped(checks, SkipReason::Unreadable, read_evidence(failure))
}

/// The evidence of an `unreadable` journal.
fn read_evidence(failure: ReadFailure) -> Evidence {
    match failure {
        ReadFailure::Missing => Evidence::Vanished,
        ReadFailure::TooLarge(size) => Evidence::TooLarge {
            size,
            limit: MAX_JOURNAL_BYTES,
        },
        ReadFailure::GrewTooLarge(seen) => Evidence::GrewTooLarge {
            seen,
            limit: MAX_JOURNAL_BYTES,
        },
        ReadFailure::Unreadable(error) if shortage::of(&error) => {
            Evidence::Shortage(error.to_string())
        }
        ReadFailure::Unreadable(error) => Evidence::ReadError(error.to_string()),
        ReadFailure::Malformed(why) => Evidence::ReadError(why),
        ReadFailure::NotRegular(_) | ReadFailure::ForeignOwner { .. } => {
            Evidence::ReadError("changed while reading".into())
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_cut_short_by_a_shortage_is_an_error_naming_it() {
        let mut scan = Scan::default();
        assert_eq!(scan.shortage_error(), None, "nothing cut short");
        scan.cut_short = 1;
        scan.shortage = Some("rchw-a.json: Too many open files (os error 24)".into());
        let one = scan.shortage_error().expect("error");
        assert!(one.contains("kept 1 journal from being judged"), "{one}");
        assert!(one.contains("rchw-a.json: Too many open files"), "{one}");
        scan.cut_short = 3;
        let three = scan.shortage_error().expect("error");
        assert!(three.contains("kept 3 journals"), "{three}");
        assert!(three.contains("every lease keeps its backoff"), "{three}");
    }

    #[test]
    fn the_tallies_of_threads_add_their_shortages_and_keep_the_first() {
        let mut total = Tally::default();
        total.add(Tally::default());
        assert_eq!((total.cut_short, total.shortage.as_deref()), (0, None));
        let short = |n: usize, text: &str| Tally {
            cut_short: n,
            shortage: Some(text.into()),
            ..Tally::default()
        };
        total.add(short(2, "first"));
        total.add(short(1, "second"));
        assert_eq!(
            (total.cut_short, total.shortage.as_deref()),
            (3, Some("first"))
        );
    }
    use std::os::unix::ffi::OsStrExt;

    const NOW: u64 = 1_800_000_000_000;
    const HOUR: u64 = 3_600_000;

    /// A minimal journal of rch's shape: a candidate with a dead owner (a PID
    /// above Linux's limit) unless `tweak` changes it.
    fn journal(id: &str, heartbeat: u64, tweak: &str) -> String {
        let base = format!(
            r#""schema_version": 1, "identity": {{"local_wrapper_id": "{id}", "remote_build_id": 7}},
               "wrapper_pid": 4194400, "state": "running", "phase": "execute",
               "worker_id": "w1", "heartbeat_unix_ms": {heartbeat}, "strict_remote": false,
               "self_healing_enabled": true, "command_fingerprint": "blake3:x",
               "terminal_acknowledged": false,
               "recovery": {{"source_roots": ["/data/p"], "retired": false}}"#
        );
        // A duplicate key is an error to serde, so a tweak edits the text.
        match tweak {
            "" => format!("{{{base}}}"),
            "terminal" => format!(
                "{{{}}}",
                base.replace(
                    r#""terminal_acknowledged": false"#,
                    r#""terminal_acknowledged": true"#
                )
            ),
            "fresh" => format!(
                "{{{}}}",
                base.replace(&format!("{heartbeat}"), &format!("{}", NOW - 1000))
            ),
            "no_pid" => format!("{{{}}}", base.replace("4194400", "1")),
            "unverified" => format!("{{{}}}", base.replace("4194400", "3000000000")),
            _ => unreachable!("unknown tweak {tweak}"),
        }
    }

    fn id(n: usize) -> String {
        format!(
            "rchw-{:08x}-2a4d-4c8e-9b1f-3e5a7d9c2b10",
            n * 2_654_435_761 % (1 << 32)
        )
    }

    /// A directory with every skip reason a test can make and candidates with
    /// equal heartbeats, so order and ties are decided by the merge.
    fn mixed_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let put = |name: &[u8], text: &str| {
            std::fs::write(dir.path().join(std::ffi::OsStr::from_bytes(name)), text).expect("write")
        };
        for n in 0..60 {
            let id = id(n);
            let heartbeat = NOW - HOUR * (1 + (n as u64 % 3));
            let kind = ["", "terminal", "fresh", "no_pid", "unverified", ""][n % 6];
            put(
                format!("{id}.json").as_bytes(),
                &journal(&id, heartbeat, kind),
            );
        }
        put(
            format!("{}.json", id(100)).as_bytes(),
            &journal(&id(101), NOW - HOUR, ""),
        );
        put(b"not-a-wrapper.json", &journal(&id(102), NOW - HOUR, ""));
        put(
            format!("{}.json", id(103)).as_bytes(),
            "{\"schema_version\": 1",
        );
        // Two names whose lossy decodings are equal, with different reasons:
        // their rows keep the listing order, as the serial scan's stable
        // sort kept it.
        put(b"rchw-\xff.json", "{}");
        std::fs::create_dir(
            dir.path()
                .join(std::ffi::OsStr::from_bytes(b"rchw-\xfe.json")),
        )
        .expect("mkdir");
        std::fs::create_dir(dir.path().join("folder.json")).expect("mkdir");
        std::os::unix::fs::symlink(
            dir.path().join(format!("{}.json", id(0))),
            dir.path().join(format!("{}.json", id(104))),
        )
        .expect("symlink");
        put(format!("{}.recovery.lock", id(0)).as_bytes(), "");
        put(b"notes.txt", "not a journal");
        dir
    }

    fn options(keep_skipped: bool) -> ScanOptions {
        ScanOptions {
            now_unix_ms: NOW,
            stale_after_ms: 900_000,
            keep_skipped,
        }
    }

    fn summary(scan: &Scan) -> String {
        format!(
            "{} {:?} {:?} {:?}",
            scan.scanned, scan.skipped, scan.candidates, scan.skipped_list
        )
    }

    #[test]
    fn threads_and_batches_give_the_serial_result() {
        let dir = mixed_dir();
        let proc = ProcFs::system();
        for keep_skipped in [true, false] {
            let options = options(keep_skipped);
            let lease_dir = LeaseDir::open(dir.path()).expect("open");
            let serial = scan_in_batches(&lease_dir, &options, &proc, 1, BATCH).expect("serial");
            assert_eq!(serial.scanned, 67);
            assert_eq!(serial.candidates.len(), 20);
            assert_eq!(serial.skipped_list.len(), if keep_skipped { 47 } else { 0 });
            // (2, BATCH): the whole directory in one batch, spread one by one.
            for (threads, batch_len) in [(1, 1), (2, 1), (4, 3), (3, 64), (2, BATCH)] {
                let parallel = scan_in_batches(&lease_dir, &options, &proc, threads, batch_len)
                    .expect("parallel");
                assert_eq!(
                    summary(&parallel),
                    summary(&serial),
                    "{threads} threads, batches of {batch_len}"
                );
            }
        }
    }

    #[test]
    fn every_reason_is_counted_and_ties_go_by_wrapper_id() {
        let dir = mixed_dir();
        let lease_dir = LeaseDir::open(dir.path()).expect("open");
        let scan =
            scan_in_batches(&lease_dir, &options(true), &ProcFs::system(), 4, 2).expect("scan");
        let count = |reason: SkipReason| scan.skipped[reason.index()];
        assert_eq!(count(SkipReason::Terminal), 10);
        assert_eq!(count(SkipReason::HeartbeatFresh), 10);
        assert_eq!(count(SkipReason::NoPid), 10);
        assert_eq!(count(SkipReason::OwnerUnverified), 10);
        assert_eq!(count(SkipReason::Malformed), 2);
        assert_eq!(count(SkipReason::BadName), 2);
        assert_eq!(count(SkipReason::NotRegular), 3);
        let mut expected = scan.candidates.clone();
        expected.sort_by_key(|c| (c.heartbeat_unix_ms, c.wrapper_id.clone()));
        assert_eq!(scan.candidates, expected);
        assert!(
            scan.candidates
                .windows(2)
                .any(|pair| pair[0].heartbeat_unix_ms == pair[1].heartbeat_unix_ms),
            "the fixture must hold ties"
        );
        let files: Vec<&str> = scan
            .skipped_list
            .iter()
            .map(|row| row.file.as_str())
            .collect();
        let mut sorted = files.clone();
        sorted.sort();
        assert_eq!(files, sorted);
        // The two names that decode alike appear in listing order.
        let listed: Vec<SkipReason> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .filter(|name| matches!(name.as_bytes(), b"rchw-\xff.json" | b"rchw-\xfe.json"))
            .map(|name| match name.as_bytes() {
                b"rchw-\xff.json" => SkipReason::BadName,
                _ => SkipReason::NotRegular,
            })
            .collect();
        let rows: Vec<SkipReason> = scan
            .skipped_list
            .iter()
            .filter(|row| row.file == "rchw-\u{fffd}.json")
            .map(|row| row.reason)
            .collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows, listed);
    }

    #[test]
    fn a_directory_of_no_journals_is_scanned_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("file"), "").expect("write");
        let lease_dir = LeaseDir::open(dir.path()).expect("open");
        // Only the file, which is no journal.
        let empty =
            scan_with_threads(&lease_dir, &options(true), &ProcFs::system(), 2).expect("empty");
        assert_eq!(empty.scanned, 0);
    }
}

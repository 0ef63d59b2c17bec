//! The bounded reader of an opened journal: the one way this tool turns a
//! journal's bytes into a lease.
//!
//! A journal is input from disk, possibly hostile: at most
//! [`MAX_JOURNAL_BYTES`] of it are read, and a file that grows while it is
//! read can neither make the read unbounded nor pass for a shorter, valid
//! one. (It was opened without following a link or blocking on a FIFO, and
//! checked to be a regular file of this user's, by
//! [`crate::lease_dir::LeaseDir::open_journal`].)
//!
//! rch loads a journal with no size limit, and the journal of a large build
//! reaches megabytes (its recipe fingerprints every output file). So a
//! journal is parsed here as a stream from its open descriptor (one that
//! fits 64 KiB, from memory; see [`read_lease`]). serde_json's stream
//! reader and rch's slice reader share their checks (escapes, UTF-8,
//! numbers, depth); the tests of [`super::parse`](mod@super::parse) hold
//! the two to the same verdicts over rch's corpus.
//!
//! What judging takes in memory, exactly: each thread that reads journals
//! holds a 64 KiB buffer for a journal's head, and while it parses a longer
//! one, a 64 KiB read buffer and serde_json's scratch buffer, into which
//! the stream reader copies each string it parses: that grows to the
//! longest string of the journal and is dropped with it. Ordinary journals
//! (paths and fingerprints, however many) keep this flat, a few hundred
//! KiB a thread. A journal larger than 1 MiB is parsed only with one of
//! two places at one gate that every thread shares (`BIG_PARSES`), so
//! whatever the thread count at most two strings longer than 1 MiB are
//! held at once: judging takes at most about twice the largest journal,
//! plus up to 1 MiB a thread for smaller journals that are one string. (A
//! string the checks keep, such as the worker id or the command
//! fingerprint, is copied out of the scratch buffer, so a journal that is
//! one such string takes twice its size while it is judged.)

use super::DurableJobLease;
use super::parse::{parse, parse_from};
use super::parse_gate::{BIG_PARSES, GATED_BYTES, Gate, Place};
use crate::stat::FileKind;
use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufReader, Read};

/// Larger journals are refused. rch itself sets no limit; the largest it
/// writes (a recipe with a fingerprint per output file of a big workspace)
/// are a few MiB, so this only stops a runaway or hostile file.
pub const MAX_JOURNAL_BYTES: u64 = 64 * 1024 * 1024;

/// How much of a journal is read from the file at once.
const READ_CHUNK: usize = 64 * 1024;

/// Why a journal file could not be turned into a lease. Each carries the
/// fact that decided it, for `explain` and `--verbose`.
#[derive(Debug)]
pub enum ReadFailure {
    /// Gone between listing and opening (or before a re-read).
    Missing,
    /// A symlink, FIFO, socket, directory or other non-regular file.
    NotRegular(FileKind),
    /// Owned by another user (uid None: could not be read).
    ForeignOwner { uid: Option<u32>, euid: u32 },
    /// Larger than [`MAX_JOURNAL_BYTES`] when opened: not read.
    TooLarge(u64),
    /// Grew past [`MAX_JOURNAL_BYTES`] while it was read (the most bytes it
    /// was seen to hold).
    GrewTooLarge(u64),
    /// An I/O error, kept whole: its errno tells a host that is out of
    /// descriptors or memory (not the journal's fault) from a bad file.
    Unreadable(io::Error),
    /// Not the lease JSON shape.
    Malformed(String),
}

/// Reads an opened journal (from its current offset, the start for one
/// just opened) and parses it: the lease and the bytes read. The file may
/// have changed since `fstat` was asked.
///
/// At most [`MAX_JOURNAL_BYTES`] are read: a file that grew past it since
/// it was opened is [`ReadFailure::GrewTooLarge`], whatever its bytes say.
/// An I/O error is `Unreadable`; anything rch's loader would refuse is
/// `Malformed`.
pub fn read_lease(file: &File) -> Result<(DurableJobLease, u64), ReadFailure> {
    read_lease_within(file, MAX_JOURNAL_BYTES)
}

/// Journals that fit this thread's own buffer are parsed from memory; any
/// larger one is parsed as a stream.
const SMALL: usize = 64 * 1024;

thread_local! {
    /// The head of each journal this thread reads, one after another.
    static SMALL_BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// How a journal is read: one that fits [`SMALL`] (nearly all of them) is
/// read whole into the thread's buffer and parsed from memory, as rch
/// parses it; a larger one, or one that grew past its size when opened, is
/// parsed as a stream of what was read and the rest of the file, through
/// a [`READ_CHUNK`] buffer. Memory then never depends on a journal's size:
/// each scan thread holds its 64 KiB head and one read buffer, whatever it
/// reads. (serde_json parses a stream byte by byte, at about a seventh of
/// its speed from memory: 0.43 against 2.8 GB/s on the bench machine. The
/// stream is handed over as a `BufReader`, whose bytes serde_json takes
/// from its buffer without a call per byte; any other reader, even one
/// wrapping a `BufReader`, costs a `read` call a byte and halves that.)
///
/// `limit` is [`MAX_JOURNAL_BYTES`] but in tests.
fn read_lease_within(file: &File, limit: u64) -> Result<(DurableJobLease, u64), ReadFailure> {
    SMALL_BUFFER.with_borrow_mut(|buffer| read_head(file, limit, buffer, SMALL + 1, &BIG_PARSES))
}

/// Reads up to `head` bytes of the journal into `buffer` (cleared first):
/// a journal that ends within them is parsed from memory, a longer one as a
/// stream of them and the rest of the file, one larger than
/// [`GATED_BYTES`] only with a place at `gate`.
fn read_head(
    file: &File,
    limit: u64,
    buffer: &mut Vec<u8>,
    head: usize,
    gate: &'static Gate,
) -> Result<(DurableJobLease, u64), ReadFailure> {
    buffer.clear();
    let mut counted = Counted {
        file,
        limit,
        read: 0,
        over: false,
        gate,
        place: None,
    };
    let read = (&mut counted).take(head as u64).read_to_end(buffer);
    if counted.over {
        return Err(ReadFailure::GrewTooLarge(counted.read));
    }
    if let Err(error) = read {
        return Err(ReadFailure::Unreadable(error));
    }
    let parsed = if buffer.len() < head {
        parse(buffer)
    } else {
        // A journal known to be large waits for its place before its parse
        // starts; one that only grows past the gate's size meanwhile waits
        // when its read gets there ([`Counted`]).
        if file.metadata().is_ok_and(|meta| meta.len() > GATED_BYTES) {
            counted.enter_gate();
        }
        parse_from(BufReader::with_capacity(
            READ_CHUNK,
            buffer.as_slice().chain(&mut counted),
        ))
    };
    if counted.over {
        return Err(ReadFailure::GrewTooLarge(counted.read));
    }
    match parsed {
        Ok(lease) => Ok((lease, counted.read)),
        Err(error) if error.is_io() => Err(ReadFailure::Unreadable(error.into())),
        Err(error) => {
            // A parse that stopped early read only part of the file: should
            // it have grown past the limit meanwhile, it is too large (which
            // SPEC checks before the shape), not malformed.
            match file.metadata() {
                Ok(meta) if meta.len() > limit => Err(ReadFailure::GrewTooLarge(meta.len())),
                _ => Err(ReadFailure::Malformed(error.to_string())),
            }
        }
    }
}

/// A journal file that counts what is read from it and refuses to deliver
/// more than [`MAX_JOURNAL_BYTES`], so a file growing while it is parsed can
/// neither make the read unbounded nor pass for a shorter, valid one.
///
/// It also holds the journal's place at the [`BIG_PARSES`] gate once more
/// than [`GATED_BYTES`] have been read (a journal that grew past its size
/// when opened, or one whose size was not asked), and until it is dropped:
/// after the parse, and with it the parser's scratch buffer, is done.
struct Counted<'f> {
    file: &'f File,
    limit: u64,
    read: u64,
    /// A byte past the limit was read.
    over: bool,
    /// The gate ([`BIG_PARSES`] but in tests) and the place taken at it.
    gate: &'static Gate,
    place: Option<Place<'static>>,
}

impl Counted<'_> {
    /// Waits for a place at the gate, unless this journal holds one.
    fn enter_gate(&mut self) {
        if self.place.is_none() {
            self.place = Some(self.gate.enter());
        }
    }
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.over {
            return Err(io::Error::other("journal larger than the limit"));
        }
        if self.read > GATED_BYTES {
            self.enter_gate();
        }
        // One byte past the limit is enough to know it was passed.
        let room = (self.limit + 1 - self.read).min(buf.len() as u64) as usize;
        let n = self.file.read(&mut buf[..room])?;
        self.read += n as u64;
        if self.read > self.limit {
            self.over = true;
            return Err(io::Error::other("journal larger than the limit"));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::lease::Kept;
    use crate::lease::samples::{with_birth, with_recovery};
    use std::path::Path;

    #[test]
    fn whole_and_streamed_read_alike() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("journal.json");
        let entries: Vec<String> = (0..12_000)
            .map(|n| format!(r#""target/debug/deps/lib{n}.rlib": "{n:064x}""#))
            .collect();
        let text = with_recovery(&format!(
            r#"{{"source_roots": ["/w"], "phases": [{{"baseline": {{{}}}}}]}}"#,
            entries.join(",\n")
        ));
        assert!(text.len() > 2 * SMALL, "{} bytes", text.len());
        std::fs::write(&path, &text).expect("write");
        let size = text.len() as u64;
        let file = File::open(&path).expect("open");
        let (streamed, read) = read_lease_within(&file, MAX_JOURNAL_BYTES).expect("loads");
        assert_eq!(read, size);
        // The stream keeps what parsing it from memory (as rch does) keeps.
        assert_eq!(
            Some(streamed.recovery.clone()),
            parse(text.as_bytes()).ok().map(|l| l.recovery)
        );
        assert!(
            streamed
                .recovery
                .as_ref()
                .is_some_and(|recipe| recipe.source_roots == Kept::Array(1))
        );
        // Broken past the small buffer: malformed on both paths.
        let broken = text.replacen("lib11999.rlib\"", "lib11999.rlib", 1);
        assert!(parse(broken.as_bytes()).is_err());
        std::fs::write(&path, broken).expect("write");
        let file = File::open(&path).expect("open");
        assert!(matches!(
            read_lease_within(&file, MAX_JOURNAL_BYTES),
            Err(ReadFailure::Malformed(_))
        ));
    }

    #[test]
    fn journals_past_the_gate_size_wait_for_a_place_and_give_it_back() {
        static GATE: Gate = Gate::new(2);
        let dir = tempfile::tempdir().expect("tempdir");
        let giant = GATED_BYTES as usize + 4096;
        let write = |name: &str, text: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).expect("write");
            path
        };
        // One giant string, valid; the same broken at its end; and one
        // that is valid but past the (test) limit: every way a parse ends.
        let valid = with_recovery(&format!(r#"{{"note": "{}"}}"#, "x".repeat(giant)));
        let files = [
            (write("valid.json", valid.clone()), "loads"),
            (
                write("broken.json", valid.replacen("\"}", "}", 1)),
                "malformed",
            ),
            (write("small.json", with_recovery("{}")), "loads"),
        ];
        let outcome = |path: &Path, limit: u64| {
            let file = File::open(path).expect("open");
            match read_head(&file, limit, &mut Vec::new(), SMALL + 1, &GATE) {
                Ok(_) => "loads",
                Err(ReadFailure::Malformed(_)) => "malformed",
                Err(ReadFailure::GrewTooLarge(_)) => "too large",
                Err(_) => "other",
            }
        };
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for (path, expected) in &files {
                        assert_eq!(outcome(path, MAX_JOURNAL_BYTES), *expected);
                    }
                    assert_eq!(outcome(&files[0].0, GATED_BYTES + 100), "too large");
                });
            }
        });
        let count = *GATE.count.lock().expect("count");
        assert_eq!(count.taken, 0, "every place was given back");
        assert!((1..=2).contains(&count.most), "{count:?}");
    }

    #[test]
    fn a_journal_that_grows_past_the_gate_size_while_read_waits_there() {
        static GATE: Gate = Gate::new(2);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("journal.json");
        let read_all = |size: u64| {
            std::fs::write(&path, vec![b' '; size as usize]).expect("write");
            let file = File::open(&path).expect("open");
            let mut counted = Counted {
                file: &file,
                limit: MAX_JOURNAL_BYTES,
                read: 0,
                over: false,
                gate: &GATE,
                place: None,
            };
            io::copy(&mut counted, &mut io::sink()).expect("read");
            counted.place.is_some()
        };
        // Read without asking its size (as one that grew since it was
        // opened): a place is taken once more than the gate's size is read.
        assert!(!read_all(GATED_BYTES));
        assert!(read_all(GATED_BYTES + 1));
        assert_eq!(GATE.count.lock().expect("count").taken, 0);
    }

    #[test]
    fn a_journal_past_the_limit_is_too_large_never_malformed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("journal.json");
        let text = with_birth("null");
        std::fs::write(&path, &text).expect("write");
        let open = || File::open(&path).expect("open");
        let size = text.len() as u64;
        let (lease, read) = read_lease_within(&open(), size).expect("at the limit");
        assert_eq!((lease.wrapper_pid, read), (5, size));
        // One byte over: reading stops at the limit, and what was read (a
        // valid prefix, short of its end) is not taken for a malformed one.
        assert!(matches!(
            read_lease_within(&open(), size - 1),
            Err(ReadFailure::GrewTooLarge(seen)) if seen == size
        ));
        // Trailing whitespace past the limit counts too.
        std::fs::write(&path, format!("{text}{}", " ".repeat(100))).expect("write");
        assert!(matches!(
            read_lease_within(&open(), size + 50),
            Err(ReadFailure::GrewTooLarge(_))
        ));
        // A file over the limit that is broken early: too large, not
        // malformed, whether the read got past the limit (the first chunk
        // read does) or stopped at the error before it (and the size seen
        // afterwards is over it).
        // (Larger than the small buffer, so it is streamed.)
        std::fs::write(&path, format!("{{oops{}", " ".repeat(400_000))).expect("write");
        assert!(matches!(
            read_lease_within(&open(), 100),
            Err(ReadFailure::GrewTooLarge(101))
        ));
        assert!(matches!(
            read_lease_within(&open(), 300_000),
            Err(ReadFailure::GrewTooLarge(400_005))
        ));
        assert!(matches!(
            read_lease_within(&open(), 400_005),
            Err(ReadFailure::Malformed(_))
        ));
    }
}

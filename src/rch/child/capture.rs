//! The child's output: each captured pipe drained on a thread of its own,
//! continuously (so the child never blocks on a full pipe), into a bounded
//! ring ([`TAIL_BYTES`], or [`ANSWER_BYTES`] for a probe's answer on
//! stdout), with each pipe's EOF sent to the waiting side.
//! A drain thread can be told to give up, so a pipe held open by a process
//! that escaped the group kill never keeps it from being joined.

use super::{ANSWER_BYTES, Capture, TAIL_BYTES};
use crate::sys;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::{self, Scope, ScopedJoinHandle};
use std::time::Duration;

/// How long the drain thread blocks in `poll` before re-checking its abandon
/// flag; bounds how long joining an abandoned drain thread can take.
const DRAIN_POLL: Duration = Duration::from_millis(100);

/// Size of the stack buffer stderr is read into.
const CHUNK_BYTES: usize = 64 * 1024;

/// How much of the first pipe the report keeps: all of a probe's answer up
/// to [`ANSWER_BYTES`], the last [`TAIL_BYTES`] of diagnostics.
pub(super) fn first_capacity(capture: Capture) -> usize {
    match capture {
        Capture::Stdout => ANSWER_BYTES,
        Capture::Stderr | Capture::StdoutAndStderr => TAIL_BYTES,
    }
}

/// The pipes `capture` names, taken from the child: the one drained into
/// the report's tail, and stderr as the second with
/// [`Capture::StdoutAndStderr`].
pub(super) fn take_pipes(child: &mut Child, capture: Capture) -> (Option<File>, Option<File>) {
    let file = |fd: Option<OwnedFd>| fd.map(File::from);
    match capture {
        Capture::Stderr => (file(child.stderr.take().map(OwnedFd::from)), None),
        Capture::Stdout => (file(child.stdout.take().map(OwnedFd::from)), None),
        Capture::StdoutAndStderr => (
            file(child.stdout.take().map(OwnedFd::from)),
            file(child.stderr.take().map(OwnedFd::from)),
        ),
    }
}

/// The drain threads of one run, and the news of their EOFs.
pub(super) struct Drains<'scope> {
    first: ScopedJoinHandle<'scope, Tail>,
    second: Option<ScopedJoinHandle<'scope, Tail>>,
    /// One message a pipe at its EOF; disconnected once every drain thread
    /// is gone.
    done: Receiver<()>,
    /// Pipes not yet known to be at EOF.
    open: usize,
    abandon: &'scope AtomicBool,
}

impl<'scope> Drains<'scope> {
    /// Starts a drain thread on `first` and on `second`, if any, each
    /// ending at EOF, a read error or `abandon`. When a thread cannot be
    /// started, its pipe is closed and the error returned; a thread already
    /// started ends at `abandon`.
    pub(super) fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        (first, first_capacity): (File, usize),
        second: Option<File>,
        abandon: &'scope AtomicBool,
    ) -> io::Result<Drains<'scope>> {
        let (done_tx, done) = mpsc::channel::<()>();
        let open = 1 + usize::from(second.is_some());
        let spawn = |source: File, capacity: usize| {
            let done = done_tx.clone();
            thread::Builder::new()
                .name("child-stderr".to_owned())
                .spawn_scoped(scope, move || {
                    let tail = drain(source, abandon, capacity);
                    // The receiver may be gone only if the waiting side panicked.
                    let _ = done.send(());
                    tail
                })
        };
        let first = spawn(first, first_capacity)?;
        let second = second.map(|second| spawn(second, TAIL_BYTES)).transpose()?;
        // Only the drain threads keep the channel open once `done_tx` is
        // dropped here: once both are gone, a disconnect means every pipe
        // is done.
        Ok(Drains {
            first,
            second,
            done,
            open,
            abandon,
        })
    }

    /// Whether every pipe has reached EOF (or no drain thread is left to
    /// say otherwise).
    pub(super) fn all_eof(&self) -> bool {
        self.open == 0
    }

    /// Waits at most `timeout` for a drain thread's news; false when none
    /// came.
    pub(super) fn wait_eof(&mut self, timeout: Duration) -> bool {
        match self.done.recv_timeout(timeout) {
            Ok(()) => {
                self.open = self.open.saturating_sub(1);
                true
            }
            Err(RecvTimeoutError::Disconnected) => {
                self.open = 0;
                true
            }
            Err(RecvTimeoutError::Timeout) => false,
        }
    }

    /// Tells every drain thread to give up and joins them: the tail of the
    /// first pipe and whether it carried more than the tail kept, and the
    /// tail of the second (empty when there is none). A panic in a drain
    /// thread would be a bug of ours; losing the tail is better than taking
    /// the sweeper down with it.
    pub(super) fn finish(self) -> (Vec<u8>, bool, Vec<u8>) {
        self.abandon.store(true, Ordering::Release);
        let (tail, overflowed) = self
            .first
            .join()
            .map(|tail| {
                let overflowed = tail.overflowed;
                (tail.into_vec(), overflowed)
            })
            .unwrap_or_default();
        let second = self
            .second
            .and_then(|handle| handle.join().ok())
            .map(Tail::into_vec)
            .unwrap_or_default();
        (tail, overflowed, second)
    }
}

/// Reads `source` until EOF, a read error, or `abandon`, keeping only the tail.
///
/// It polls rather than blocks on `read` so that it can be told to give up: a
/// process that escaped the group kill (e.g. via `setsid`) may hold the pipe's
/// write end forever, and the thread must still be joinable.
fn drain<R: Read + AsFd>(mut source: R, abandon: &AtomicBool, capacity: usize) -> Tail {
    let mut tail = Tail::with_capacity(capacity);
    let mut chunk = [0u8; CHUNK_BYTES];
    while !abandon.load(Ordering::Acquire) {
        // `source` owns the descriptor and outlives this loop.
        match sys::fd::poll_readable(source.as_fd(), DRAIN_POLL) {
            Ok(false) => continue,
            Ok(true) => {}
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
        // Readable, hung up or in error: `read` tells which.
        match source.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => tail.push(&chunk[..n]),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) => {}
            // Nothing more can be read; dropping the pipe makes any further
            // write by the child fail rather than block.
            Err(_) => break,
        }
    }
    tail
}

/// A ring holding the last `capacity` bytes pushed ([`TAIL_BYTES`] for
/// diagnostics). Its buffer is allocated once and never grows, however
/// much is pushed.
struct Tail {
    buf: Vec<u8>,
    /// Index of the oldest byte once `buf` is full; 0 until then.
    start: usize,
    capacity: usize,
    /// More was pushed than the ring keeps: its start is lost.
    overflowed: bool,
}

impl Tail {
    #[cfg(test)]
    fn new() -> Self {
        Tail::with_capacity(TAIL_BYTES)
    }

    fn with_capacity(capacity: usize) -> Self {
        Tail {
            buf: Vec::with_capacity(capacity),
            start: 0,
            capacity,
            overflowed: false,
        }
    }

    fn push(&mut self, mut data: &[u8]) {
        let capacity = self.capacity;
        if self.buf.len() + data.len() > capacity {
            self.overflowed = true;
        }
        if data.len() >= capacity {
            // Only the last `capacity` bytes of `data` survive anyway.
            self.buf.clear();
            self.buf.extend_from_slice(&data[data.len() - capacity..]);
            self.start = 0;
            return;
        }
        let fill = (capacity - self.buf.len()).min(data.len());
        self.buf.extend_from_slice(&data[..fill]);
        data = &data[fill..];
        while !data.is_empty() {
            let n = (capacity - self.start).min(data.len());
            self.buf[self.start..self.start + n].copy_from_slice(&data[..n]);
            self.start = (self.start + n) % capacity;
            data = &data[n..];
        }
    }

    /// The bytes in order, reusing the ring's own buffer.
    fn into_vec(self) -> Vec<u8> {
        let mut buf = self.buf;
        buf.rotate_left(self.start);
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_last_bytes_in_order_without_growing() {
        let mut tail = Tail::new();
        let mut all = Vec::new();
        let mut next = 0u8;
        for size in [1usize, 7, 5000, 16383, 2, 40000, 3, 16384, 9999, 1, 12345] {
            let chunk: Vec<u8> = (0..size)
                .map(|_| {
                    next = next.wrapping_add(1);
                    next
                })
                .collect();
            tail.push(&chunk);
            all.extend_from_slice(&chunk);
            assert_eq!(tail.buf.capacity(), TAIL_BYTES);
            let expected = &all[all.len().saturating_sub(TAIL_BYTES)..];
            let copy = Tail {
                buf: tail.buf.clone(),
                start: tail.start,
                capacity: TAIL_BYTES,
                overflowed: tail.overflowed,
            };
            assert_eq!(copy.into_vec(), expected, "after a push of {size}");
            assert_eq!(tail.overflowed, all.len() > TAIL_BYTES, "after {size}");
        }
        assert_eq!(tail.into_vec().capacity(), TAIL_BYTES);
        let mut short = Tail::new();
        short.push(b"abc");
        short.push(b"def");
        assert_eq!(short.into_vec(), b"abcdef");
    }
}

//! Human lines on stderr: errors, warnings and notes. When stderr is the
//! systemd journal, each line carries its syslog priority (`<3>`, `<4>`,
//! `<6>`) so `journalctl -p warning` finds the ones that matter.
//!
//! The journal is recognised as sd-daemon(3) says: `$JOURNAL_STREAM` names
//! the device and inode of the journal's stream, and stderr must be that very
//! file; the variable alone is inherited by children and proves nothing.

use std::borrow::Cow;
use std::fmt::Display;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    Info,
}

impl Level {
    fn priority(self) -> u8 {
        match self {
            Level::Error => 3,
            Level::Warning => 4,
            Level::Info => 6,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Level::Error => "error: ",
            Level::Warning => "warning: ",
            Level::Info => "",
        }
    }
}

struct Mode {
    quiet: bool,
    journald: bool,
}

static MODE: OnceLock<Mode> = OnceLock::new();

/// Under `--quiet`, the errors of a run, held until its exit code is
/// known: a run that exits 75 (a temporary host fault: the lock held, rch's
/// daemon down, no process to be had) prints nothing, so cron mails nothing
/// every five minutes for what fixes itself (SPEC, `--quiet`); any other
/// run prints them at its end ([`release`]).
static HELD: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Sets how lines are written; call once, early. Without it, lines are
/// written plainly and nothing is suppressed.
pub fn init(quiet: bool) {
    let journald = std::env::var("JOURNAL_STREAM")
        .ok()
        .is_some_and(|value| stderr_is_stream(&value));
    let _ = MODE.set(Mode { quiet, journald });
}

pub fn error(message: impl Display) {
    emit(Level::Error, &message);
}

pub fn warn(message: impl Display) {
    emit(Level::Warning, &message);
}

/// A warning `--quiet` does not hide: one whose silence would let a cron
/// line or a timer do nothing forever without anyone hearing of it (a
/// lease directory named explicitly that does not exist).
pub fn warn_always(message: impl Display) {
    write(Level::Warning, &message);
}

pub fn info(message: impl Display) {
    emit(Level::Info, &message);
}

/// Text from outside (a child's stderr, a file name, a stored error) made
/// safe for a terminal: control characters other than newline and tab are
/// replaced, so no escape sequence can retitle, clear or rewrite the screen.
pub fn printable(text: &str) -> Cow<'_, str> {
    let control = |c: char| c.is_control() && c != '\n' && c != '\t';
    if text.chars().any(control) {
        Cow::Owned(
            text.chars()
                .map(|c| if control(c) { '\u{fffd}' } else { c })
                .collect(),
        )
    } else {
        Cow::Borrowed(text)
    }
}

fn emit(level: Level, message: &dyn Display) {
    let quiet = MODE.get().is_some_and(|m| m.quiet);
    if quiet && level != Level::Error {
        return;
    }
    if quiet {
        let text = lines(level, message);
        // A poisoned lock only means a panic elsewhere; the lines stand.
        HELD.lock().unwrap_or_else(|e| e.into_inner()).push(text);
        return;
    }
    write(level, message);
}

/// Ends what `--quiet` held back: the errors are written, unless the run
/// ends in a temporary host fault (`temporary`: exit 75), where `--quiet`
/// prints nothing. Call once, as the process exits.
pub fn release(temporary: bool) {
    let held = std::mem::take(&mut *HELD.lock().unwrap_or_else(|e| e.into_inner()));
    if temporary {
        return;
    }
    let mut stderr = std::io::stderr().lock();
    for text in held {
        let _ = stderr.write_all(text.as_bytes());
    }
}

fn write(level: Level, message: &dyn Display) {
    // Nothing sensible is left to do when stderr itself fails.
    let _ = std::io::stderr()
        .lock()
        .write_all(lines(level, message).as_bytes());
}

/// The message as it is written: printable, each line prefixed.
fn lines(level: Level, message: &dyn Display) -> String {
    let journald = MODE.get().is_some_and(|m| m.journald);
    format_lines(level, journald, &printable(&message.to_string()))
}

/// Every line of a message gets the prefix, so a multi-line diagnostic keeps
/// its priority in the journal.
fn format_lines(level: Level, journald: bool, message: &str) -> String {
    let mut out = String::with_capacity(message.len() + 32);
    for line in message.lines() {
        if journald {
            out.push_str(&format!("<{}>", level.priority()));
        }
        out.push_str("rch-sweep: ");
        out.push_str(level.label());
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Whether stderr is the file `JOURNAL_STREAM` (`<device>:<inode>`) names.
fn stderr_is_stream(value: &str) -> bool {
    let Some((device, inode)) = value.split_once(':') else {
        return false;
    };
    let (Ok(device), Ok(inode)) = (device.parse::<u64>(), inode.parse::<u64>()) else {
        return false;
    };
    use std::os::fd::AsFd;
    // fd 2 may be closed: then fstat fails, and stderr is no stream.
    let Ok(stat) = crate::sys::fs::fstat(std::io::stderr().as_fd()) else {
        return false;
    };
    stat.st_dev == device && stat.st_ino == inode
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_carry_their_priority_only_for_the_journal() {
        assert_eq!(
            format_lines(Level::Error, true, "a\nb"),
            "<3>rch-sweep: error: a\n<3>rch-sweep: error: b\n"
        );
        assert_eq!(
            format_lines(Level::Warning, false, "w"),
            "rch-sweep: warning: w\n"
        );
        assert_eq!(format_lines(Level::Info, true, "i"), "<6>rch-sweep: i\n");
    }

    #[test]
    fn control_characters_cannot_reach_the_terminal() {
        assert_eq!(printable("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            printable("boom\u{1b}]0;owned\u{7}\u{1b}[2J\0x\r"),
            "boom\u{fffd}]0;owned\u{fffd}\u{fffd}[2J\u{fffd}x\u{fffd}"
        );
        assert!(matches!(printable("é ok"), Cow::Borrowed(_)));
    }

    #[test]
    fn malformed_stream_values_are_not_the_journal() {
        for value in ["", "1", "a:b", "1:", ":1"] {
            assert!(!stderr_is_stream(value), "{value}");
        }
    }
}

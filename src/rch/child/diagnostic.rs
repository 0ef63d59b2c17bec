//! A child's captured stderr made into the text of an error: what a
//! failure's `last_error` holds (SPEC "One recovery", step 5) and the line
//! a broken install is quoted by.
//!
//! The text reaches terminals, the state file and `status`, so it must be
//! text: rch colours its warnings (the real rch 2.1.34 opens its stderr
//! with colour-coded update-check warnings), and escape sequences turned
//! into replacement characters would fill the 400 characters kept while
//! the real error, rch's last line, is cut. So escape sequences are taken
//! out first, then the end is taken, begun at a line start.

use std::borrow::Cow;

/// How many characters of the stderr tail go into an error message: enough
/// for the final error line and some context, short enough for a report line.
pub const DIAGNOSTIC_CHARS: usize = 400;

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';

/// The end of stderr as one short printable string: escape sequences
/// removed ([`strip_escapes`]), then the last [`DIAGNOSTIC_CHARS`]
/// characters, begun at the first line start within them when there is one
/// (so it never starts mid-line). The tail was cut at an arbitrary byte,
/// so it may start inside a UTF-8 sequence; those leading continuation
/// bytes are dropped and anything else that is not UTF-8 is replaced, so a
/// binary or truncated tail still prints. Control characters left are
/// replaced too.
pub fn diagnostic(tail: &[u8]) -> String {
    // A UTF-8 sequence has at most three continuation bytes after its lead.
    let cut = tail
        .iter()
        .take(3)
        .take_while(|&&b| (0x80..=0xBF).contains(&b))
        .count();
    let text = String::from_utf8_lossy(&tail[cut..]);
    let text = strip_escapes(&text);
    let text = text.trim();
    let start = text
        .char_indices()
        .rev()
        .nth(DIAGNOSTIC_CHARS - 1)
        .map_or(0, |(index, _)| index);
    let mut end = &text[start..];
    let at_line_start = start == 0 || text[..start].ends_with('\n');
    if !at_line_start && let Some(newline) = end.find('\n') {
        end = &end[newline + 1..];
    }
    crate::log::printable(end.trim_start()).into_owned()
}

/// `text` without terminal escape sequences: CSI (`ESC [`, parameter and
/// intermediate bytes, one final byte `@`..`~`) and OSC (`ESC ]` up to BEL
/// or `ESC \`). A sequence cut off by the end of the text is dropped to
/// its end. Any other escape is left for [`crate::log::printable`].
pub fn strip_escapes(text: &str) -> Cow<'_, str> {
    if !text.contains(ESC) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != ESC {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                // Parameters and intermediates run up to the final byte.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                chars.next();
                while let Some(c) = chars.next() {
                    if c == BEL {
                        break;
                    }
                    if c == ESC && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The last line of stderr, printable: what a shell or `env` says when the
/// program a wrapper execs cannot be run (`exec: rch-bin: not found`).
pub fn last_line(tail: &[u8]) -> String {
    lines_of(tail).last().cloned().unwrap_or_default()
}

/// What says why a command was refused as a usage error: its last stderr
/// line, as SPEC asks, led by clap's `error: ...` line when that came
/// earlier (clap follows it with the usage and `For more information, try
/// '--help'.`, which names nothing on its own).
pub fn usage_line(tail: &[u8]) -> String {
    let lines = lines_of(tail);
    let last = lines.last().cloned().unwrap_or_default();
    match lines.iter().rfind(|line| line.starts_with("error:")) {
        Some(error) if *error != last => format!("{error} ... {last}"),
        _ => last,
    }
}

/// The non-empty lines of the end of stderr, trimmed.
fn lines_of(tail: &[u8]) -> Vec<String> {
    diagnostic(tail)
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostic_prints_cut_tails_and_is_bounded() {
        let e_acute = "é".as_bytes();
        let mut cut = vec![e_acute[1]];
        cut.extend_from_slice(b"tail text");
        let text = diagnostic(&cut);
        assert!(text.ends_with("tail text"), "{text:?}");

        let mut invalid = vec![0xFFu8];
        invalid.extend_from_slice(b"after");
        assert_eq!(diagnostic(&invalid), "\u{FFFD}after");

        let text = diagnostic(&[b'x'; 1000]);
        assert_eq!(text.chars().count(), DIAGNOSTIC_CHARS);

        let wide = "é".repeat(1000);
        assert_eq!(
            diagnostic(wide.as_bytes()).chars().count(),
            DIAGNOSTIC_CHARS
        );

        assert_eq!(diagnostic(b"last line\n\n"), "last line");
        assert_eq!(diagnostic(b" \n"), "");
    }

    #[test]
    fn colour_and_title_sequences_are_taken_out() {
        assert_eq!(
            strip_escapes("\u{1b}[1;33mwarning\u{1b}[0m: update check failed"),
            "warning: update check failed"
        );
        assert_eq!(
            strip_escapes("a\u{1b}]0;title\u{7}b\u{1b}]8;;http://x\u{1b}\\c"),
            "abc"
        );
        assert_eq!(strip_escapes("\u{1b}[?25l\u{1b}[2Kdone"), "done");
        // Cut off by the end of the text: dropped to its end.
        assert_eq!(strip_escapes("tail\u{1b}[38;5"), "tail");
        assert_eq!(strip_escapes("tail\u{1b}]0;ti"), "tail");
        // Any other escape is left for printable() to replace.
        assert_eq!(strip_escapes("a\u{1b}(Bb"), "a\u{1b}(Bb");
        assert!(matches!(strip_escapes("plain"), Cow::Borrowed("plain")));
    }

    #[test]
    fn the_end_begins_at_a_line_start_within_the_last_400_characters() {
        let long = "E".repeat(300);
        let stderr = format!(
            "{}\n{}\n{long}\n",
            "w".repeat(120),
            "\u{1b}[33mwarning\u{1b}[0m: x".repeat(15)
        );
        // The window starts inside the warnings line: cut to the next line.
        assert_eq!(diagnostic(stderr.as_bytes()), long);
        // A window that starts just after a newline keeps its first line.
        let exact = format!(
            "{}\n{}\n{}",
            "a".repeat(50),
            "b".repeat(99),
            "c".repeat(300)
        );
        assert_eq!(
            diagnostic(exact.as_bytes()),
            format!("{}\n{}", "b".repeat(99), "c".repeat(300))
        );
        // Short: all of it.
        assert_eq!(diagnostic(b"one\ntwo\n"), "one\ntwo");
        // One line longer than the window: its last 400 characters.
        let line = "z".repeat(1000);
        assert_eq!(diagnostic(line.as_bytes()), "z".repeat(DIAGNOSTIC_CHARS));
    }

    #[test]
    fn a_usage_error_is_quoted_by_claps_error_line() {
        let clap = b"error: unrecognized subcommand 'jobs'\n\nUsage: rch [OPTIONS] <COMMAND>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            usage_line(clap),
            "error: unrecognized subcommand 'jobs' ... For more information, try '--help'."
        );
        assert_eq!(usage_line(b"error: bad\n"), "error: bad");
        assert_eq!(usage_line(b"just this\n"), "just this");
        assert_eq!(last_line(clap), "For more information, try '--help'.");
        assert_eq!(
            usage_line(b"sh: 1: rch-bin: not found\n"),
            "sh: 1: rch-bin: not found"
        );
        assert_eq!(usage_line(b""), "");
    }
}

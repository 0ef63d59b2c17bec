//! The words of a unit setting as systemd 252 splits them:
//! `extract_first_word` with `EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE`, and for
//! `ExecStart=`'s words also `EXTRACT_UNESCAPE_RELAX`.
//!
//! Blanks separate words; single and double quotes group (also inside a
//! word); a backslash, inside quotes too, begins a C escape as
//! `cunescape_one` reads it (`\a \b \f \n \r \t \v \\ \" \' \s`, `\xHH`,
//! `\uHHHH`, `\UHHHHHHHH`, three octal digits; never a NUL byte). What an
//! escape it does not know (`\d`, `\ `, `\$`, `\x` without two hex digits)
//! does depends on the setting: in `Environment=` and `UnsetEnvironment=`
//! it ends the parse (`config_parse_environ` logs "Invalid syntax,
//! ignoring" and sets nothing more of the line, keeping the words it took
//! before); in `ExecStart=` it is kept, backslash and all. An unterminated
//! quote ends the parse either way. Words are bytes: `\xHH` and octal
//! escapes give bytes that need not be UTF-8 (systemd then refuses such an
//! environment assignment as invalid).

/// What an escape `cunescape_one` does not know does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownEscape {
    /// It ends the parse (`Environment=`, `UnsetEnvironment=`).
    Ends,
    /// It stays as written, backslash and all (`ExecStart=`).
    Kept,
}

/// The words of a setting up to where the parse ended.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Words {
    pub words: Vec<Vec<u8>>,
    /// Why the parse ended before the end of the text, if it did.
    pub stopped: Option<String>,
    /// The indices of the words that keep an unknown escape (`Kept`).
    pub kept_escapes: Vec<usize>,
}

/// The blanks that separate words (systemd's `WHITESPACE`).
fn is_blank(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// Splits `text` into words as systemd does, `unknown` saying what an
/// escape it does not know does.
pub fn split(text: &str, unknown: UnknownEscape) -> Words {
    let bytes = text.as_bytes();
    let mut out = Words::default();
    let mut at = 0;
    loop {
        while bytes.get(at).copied().is_some_and(is_blank) {
            at += 1;
        }
        if at >= bytes.len() {
            return out;
        }
        let mut word = Vec::new();
        let mut quote: Option<u8> = None;
        let mut kept = false;
        while let Some(&byte) = bytes.get(at) {
            at += 1;
            if byte == b'\\' {
                let Some(&next) = bytes.get(at) else {
                    if unknown == UnknownEscape::Kept && quote.is_none() {
                        word.push(b'\\');
                        kept = true;
                        break;
                    }
                    out.stopped = Some("a backslash at its end".to_owned());
                    return out;
                };
                match unescape_one(&bytes[at..]) {
                    Some((unescaped, used)) => {
                        word.extend(unescaped);
                        at += used;
                    }
                    None if unknown == UnknownEscape::Kept => {
                        word.extend([b'\\', next]);
                        at += 1;
                        kept = true;
                    }
                    None => {
                        let shown: String = text[at - 1..].chars().take(2).collect();
                        out.stopped = Some(format!("an escape systemd does not know ({shown})"));
                        return out;
                    }
                }
                continue;
            }
            match quote {
                Some(open) if byte == open => quote = None,
                Some(_) => word.push(byte),
                None if byte == b'\'' || byte == b'"' => quote = Some(byte),
                None if is_blank(byte) => break,
                None => word.push(byte),
            }
        }
        if quote.is_some() {
            out.stopped = Some("an unterminated quote".to_owned());
            return out;
        }
        if kept {
            out.kept_escapes.push(out.words.len());
        }
        out.words.push(word);
    }
}

/// The words of a setting, escapes it does not know kept, as text (bytes
/// that are not UTF-8 shown as U+FFFD); `Err` when the parse ended early
/// (an unterminated quote).
pub fn kept(text: &str) -> Result<Vec<String>, String> {
    let words = split(text, UnknownEscape::Kept);
    if let Some(why) = words.stopped {
        return Err(format!("{why} in {text:?}"));
    }
    Ok(words
        .words
        .iter()
        .map(|word| String::from_utf8_lossy(word).into_owned())
        .collect())
}

fn hex(byte: u8) -> Option<u32> {
    char::from(byte).to_digit(16)
}

/// One C escape after a backslash, as systemd 252's `cunescape_one` reads
/// it: the bytes it stands for and how many bytes of `rest` it used;
/// `None` for one it does not know (or a NUL byte, which it refuses).
fn unescape_one(rest: &[u8]) -> Option<(Vec<u8>, usize)> {
    let digits = |count: usize, radix: fn(u8) -> Option<u32>, shift: u32| -> Option<u32> {
        (1..=count).try_fold(0u32, |value, index| {
            Some((value << shift) | radix(*rest.get(index)?)?)
        })
    };
    let byte = match *rest.first()? {
        b'a' => 0x07,
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'v' => 0x0b,
        b'\\' => b'\\',
        b'"' => b'"',
        b'\'' => b'\'',
        b's' => b' ',
        b'x' => {
            let value = digits(2, hex, 4).filter(|v| *v != 0)?;
            return Some((vec![u8::try_from(value).ok()?], 3));
        }
        b'u' => {
            let value = digits(4, hex, 4).filter(|v| *v != 0)?;
            return Some((utf8(value), 5));
        }
        b'U' => {
            let value = digits(8, hex, 4).filter(|v| *v != 0 && valid_char(*v))?;
            return Some((utf8(value), 9));
        }
        b'0'..=b'7' => {
            let octal = |b: u8| char::from(b).to_digit(8);
            let value = octal(rest[0])
                .and_then(|first| Some((first << 6) | (digits(2, octal, 3)?)))
                .filter(|v| *v != 0 && *v <= 0xff)?;
            return Some((vec![u8::try_from(value).ok()?], 3));
        }
        _ => return None,
    };
    Some((vec![byte], 1))
}

/// systemd's `unichar_is_valid`.
fn valid_char(value: u32) -> bool {
    value < 0x11_0000
        && (value & 0xFFFF_F800) != 0xD800
        && !(0xFDD0..=0xFDEF).contains(&value)
        && (value & 0xFFFE) != 0xFFFE
}

/// A code point encoded as systemd's `utf8_encode_unichar` encodes it
/// (a surrogate too, which is then no valid UTF-8).
fn utf8(value: u32) -> Vec<u8> {
    // Each `as u8` keeps the low bits only, which is the encoding.
    #[allow(clippy::cast_possible_truncation)]
    let byte = |bits: u32| bits as u8;
    match value {
        0..=0x7f => vec![byte(value)],
        0x80..=0x7ff => vec![byte(0xc0 | (value >> 6)), byte(0x80 | (value & 0x3f))],
        0x800..=0xffff => vec![
            byte(0xe0 | (value >> 12)),
            byte(0x80 | ((value >> 6) & 0x3f)),
            byte(0x80 | (value & 0x3f)),
        ],
        _ => vec![
            byte(0xf0 | (value >> 18)),
            byte(0x80 | ((value >> 12) & 0x3f)),
            byte(0x80 | ((value >> 6) & 0x3f)),
            byte(0x80 | (value & 0x3f)),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(words: &Words) -> Vec<String> {
        words
            .words
            .iter()
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect()
    }

    #[test]
    fn quotes_and_known_escapes_as_systemd_reads_them() {
        let words = split(
            r#"A=1 "B=x y" 'C=$HOME' D="e"f \x41\t\s \101 \u00e9 "q\"x" 'a\'b' E=\\"#,
            UnknownEscape::Ends,
        );
        assert_eq!(words.stopped, None);
        assert_eq!(
            text(&words),
            [
                "A=1", "B=x y", "C=$HOME", "D=ef", "A\t ", "A", "é", "q\"x", "a'b", "E=\\"
            ]
        );
        assert_eq!(split("  ", UnknownEscape::Ends), Words::default());
        assert_eq!(text(&split("\"\"", UnknownEscape::Ends)), [""]);
        // Bytes that are no UTF-8 are words all the same.
        assert_eq!(split(r"\xff", UnknownEscape::Ends).words, [vec![0xff]]);
    }

    #[test]
    fn an_unknown_escape_ends_environment_and_stays_in_exec_start() {
        for (line, kept_words) in [
            (r"A=1 NOTE=C:\data B=2", 1),
            (r#"C=1 "D=a\ b" E=3"#, 1),
            (r"F=\$HOME G=4", 0),
            (r"H=\x4 I=5", 0),
            (r"J=\x41 K=\x00 L=6", 1),
            (r"Q='x\dy'", 0),
            (r"S=\101 T=\400 U=8", 1),
            (r"V=\u0000", 0),
            (r"W=\UDFFFFFFF", 0),
        ] {
            let words = split(line, UnknownEscape::Ends);
            assert!(words.stopped.is_some(), "{line}");
            assert_eq!(words.words.len(), kept_words, "{line}: {words:?}");
        }
        let said = split(r"NOTE=C:\data", UnknownEscape::Ends)
            .stopped
            .expect("stopped");
        assert!(said.contains(r"(\d)"), "{said}");
        // ExecStart=: kept as written, backslash and all.
        let words = split(
            r#"/x\dy/prog --a=\d "b\ c" \$X \x4 end\"#,
            UnknownEscape::Kept,
        );
        assert_eq!(words.stopped, None);
        assert_eq!(
            text(&words),
            [r"/x\dy/prog", r"--a=\d", r"b\ c", r"\$X", r"\x4", r"end\"]
        );
        assert_eq!(words.kept_escapes, [0, 1, 2, 3, 4, 5]);
        // A backslash at the end inside quotes, or an open quote: the end.
        assert!(split(r#""a\"#, UnknownEscape::Kept).stopped.is_some());
        assert!(kept("\"open").is_err());
    }
}

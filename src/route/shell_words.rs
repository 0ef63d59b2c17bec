//! A crontab line's command read as `/bin/sh` reads a simple command, and
//! nothing more.
//!
//! `doctor --as cron` checks a line with the options the line really gives,
//! in the environment the line really has. cron hands the command to
//! `/bin/sh -c`, so the words rch-sweep receives are the shell's: quotes
//! removed, backslashes taken, `$NAME` and `${NAME}` expanded (and, outside
//! double quotes, split at blanks), a leading `~` made the home folder,
//! `NAME=value` words before the command set for it alone, and the
//! redirections crontabs use to keep cron's mail quiet (`>F`, `>>F`, `2>F`,
//! `2>>F`, `2>&1`, `>&2`, `</dev/null`): they change where output goes,
//! never the words. Anything more (a pipe, a list, another redirection, a
//! command substitution, a glob, a parameter expansion with an operator)
//! would make the words depend on what the shell does at run time, so
//! [`split`] refuses it, naming it, rather than guess: doctor lists such a
//! line and says it cannot follow it. A function over plain text and an
//! environment: no shell runs.

/// A simple command: its variable assignments and its words, as the shell
/// would hand them to `execve`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// `NAME=value` words before the command, in order, values expanded.
    pub assignments: Vec<(String, String)>,
    /// The program and its arguments.
    pub words: Vec<String>,
    /// Where output goes, in order (the words do not depend on it).
    pub redirections: Vec<Redirection>,
}

/// One redirection of the few [`split`] follows.
#[derive(Debug, PartialEq, Eq)]
pub enum Redirection {
    /// `N>FILE` (`append`: `N>>FILE`), N 1 or 2, the file expanded.
    ToFile { fd: u8, file: String, append: bool },
    /// `N>&M`: descriptor N made a copy of M (1 or 2 each).
    Copy { fd: u8, to: u8 },
    /// `</dev/null`.
    NullInput,
}

/// Splits `command` as `/bin/sh` would, `$NAME` expanded from `env` (an
/// unset variable is empty). `Err` names what doctor cannot follow.
pub fn split(command: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<SimpleCommand, String> {
    match split_first(command, env)? {
        (simple, None) => Ok(simple),
        (_, Some(_)) => Err("a command list (&&)".to_owned()),
    }
}

/// The first simple command of `command`, split as [`split`] does, and,
/// when `&&` follows it, the text after the `&&` (the shell runs it only
/// when the first succeeds; it is split in turn, in the environment of
/// its own moment).
pub fn split_first<'t>(
    command: &'t str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(SimpleCommand, Option<&'t str>), String> {
    let mut reader = Reader {
        chars: command.chars().collect(),
        at: 0,
        env,
    };
    let mut out = SimpleCommand::default();
    loop {
        reader.skip_blanks();
        match reader.peek() {
            None => break,
            // A word that begins with `#` begins a comment.
            Some('#') => break,
            Some(_) => {}
        }
        if reader.at_and() {
            reader.at += 2;
            if out.words.is_empty() && out.assignments.is_empty() && out.redirections.is_empty() {
                return Err("nothing before && (sh refuses the line)".to_owned());
            }
            let rest = &command[command
                .char_indices()
                .nth(reader.at)
                .map_or(command.len(), |(byte, _)| byte)..];
            let after = rest.trim_start_matches([' ', '\t']);
            if after.is_empty() || after.starts_with('#') {
                return Err("nothing after && (sh refuses the line)".to_owned());
            }
            return Ok((out, Some(rest)));
        }
        if let Some(redirection) = reader.redirection()? {
            out.redirections.push(redirection);
            continue;
        }
        if out.words.is_empty()
            && let Some(name) = reader.assignment_name()
        {
            let value = reader.word(WordKind::Assignment)?;
            out.assignments.push((name, value.into_iter().collect()));
            continue;
        }
        out.words.extend(reader.word(WordKind::Command)?);
    }
    Ok((out, None))
}

/// Whether a word is an assignment's value or a redirection's file
/// (expanded, never split, `~` after `=` and `:`) or a command word (split
/// where unquoted).
#[derive(Clone, Copy, PartialEq, Eq)]
enum WordKind {
    Assignment,
    Command,
}

struct Reader<'a> {
    chars: Vec<char>,
    at: usize,
    env: &'a dyn Fn(&str) -> Option<String>,
}

/// Fields being built from one shell word: unquoted expansions may split it.
#[derive(Default)]
struct Fields {
    done: Vec<String>,
    current: String,
    /// Whether `current` is a field even if empty (`""` is one).
    started: bool,
}

impl Fields {
    fn push(&mut self, c: char) {
        self.current.push(c);
        self.started = true;
    }

    fn push_str(&mut self, text: &str) {
        self.current.push_str(text);
        self.started = true;
    }

    /// An unquoted expansion: split at the default IFS's blanks.
    fn push_split(&mut self, text: &str) {
        for c in text.chars() {
            if matches!(c, ' ' | '\t' | '\n') {
                self.end_field();
            } else {
                self.push(c);
            }
        }
    }

    fn end_field(&mut self) {
        if self.started {
            self.done.push(std::mem::take(&mut self.current));
        }
        self.started = false;
    }

    fn finish(mut self) -> Vec<String> {
        self.end_field();
        self.done
    }
}

fn is_name_start(c: char) -> bool {
    c == '_' || c.is_ascii_alphabetic()
}

fn is_name(c: char) -> bool {
    c == '_' || c.is_ascii_alphanumeric()
}

/// What a character outside quotes means to the shell, when it is more
/// than a character of the word.
fn operator(c: char) -> Option<&'static str> {
    Some(match c {
        '|' => "a pipe (|)",
        ';' => "a command list (;)",
        '&' => "a background job or && (&)",
        '(' | ')' => "a subshell or function (parentheses)",
        '`' => "a command substitution (a backquote)",
        '*' | '?' | '[' => "a file name pattern (*, ? or [)",
        '\n' => "a second line",
        _ => return None,
    })
}

impl Reader<'_> {
    /// At an unquoted redirection (`[N]>`, `[N]>>`, `[N]>&M`, `[N]<`): the
    /// one it is, the reader moved past its file; `None` (reader unmoved)
    /// at anything else; `Err` for a redirection doctor does not follow.
    fn redirection(&mut self) -> Result<Option<Redirection>, String> {
        let mut at = self.at;
        while self.chars.get(at).is_some_and(char::is_ascii_digit) {
            at += 1;
        }
        let Some(&op @ ('<' | '>')) = self.chars.get(at) else {
            return Ok(None);
        };
        let digits: String = self.chars[self.at..at].iter().collect();
        let fd = match (digits.as_str(), op) {
            ("", '>') | ("1", _) => 1,
            ("", '<') | ("0", _) => 0,
            ("2", _) => 2,
            _ => {
                return Err(format!(
                    "a redirection of descriptor {digits} (doctor follows only >FILE, >>FILE, 2>FILE, 2>&1, >&2 and </dev/null)"
                ));
            }
        };
        let unfollowed = |what: &str| {
            format!(
                "a redirection doctor does not follow ({what}; it follows only >FILE, >>FILE, 2>FILE, 2>&1, >&2 and </dev/null)"
            )
        };
        self.at = at + 1;
        let next = self.peek();
        if op == '<' {
            if fd != 0 || matches!(next, Some('<' | '>' | '&')) {
                return Err(unfollowed(&format!("{digits}<{}", next.unwrap_or(' '))));
            }
            let file = self.target()?;
            if file != "/dev/null" {
                return Err(unfollowed(&format!("<{file}")));
            }
            return Ok(Some(Redirection::NullInput));
        }
        if fd == 0 {
            return Err(unfollowed(&format!("{digits}>")));
        }
        match next {
            Some('&') => {
                self.at += 1;
                let to = match (self.peek(), self.peek_at(1)) {
                    (Some(c @ ('1' | '2')), None | Some(' ' | '\t' | '<' | '>' | '&')) => c,
                    _ => {
                        let rest: String = self.chars[self.at..]
                            .iter()
                            .take_while(|c| !matches!(c, ' ' | '\t'))
                            .collect();
                        return Err(unfollowed(&format!("{digits}>&{rest}")));
                    }
                };
                self.at += 1;
                Ok(Some(Redirection::Copy {
                    fd,
                    to: if to == '1' { 1 } else { 2 },
                }))
            }
            Some('|' | '<') => Err(unfollowed(&format!("{digits}>{}", next.unwrap_or(' ')))),
            Some('>') => {
                self.at += 1;
                Ok(Some(Redirection::ToFile {
                    fd,
                    file: self.target()?,
                    append: true,
                }))
            }
            _ => Ok(Some(Redirection::ToFile {
                fd,
                file: self.target()?,
                append: false,
            })),
        }
    }

    /// The file a redirection names: the next word (blanks before it
    /// allowed), expanded but never split.
    fn target(&mut self) -> Result<String, String> {
        self.skip_blanks();
        match self.peek() {
            None | Some('<' | '>' | '#') => Err("a redirection with no file after it".to_owned()),
            Some(_) => Ok(self.word(WordKind::Assignment)?.concat()),
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.at + offset).copied()
    }

    /// At an unquoted `&&`.
    fn at_and(&self) -> bool {
        self.peek() == Some('&') && self.peek_at(1) == Some('&')
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
    }

    /// At an unquoted `NAME=`: the name, and the reader moved past `=`.
    fn assignment_name(&mut self) -> Option<String> {
        self.peek().filter(|c| is_name_start(*c))?;
        let mut end = self.at + 1;
        while self.chars.get(end).is_some_and(|c| is_name(*c)) {
            end += 1;
        }
        if self.chars.get(end) != Some(&'=') {
            return None;
        }
        let name: String = self.chars[self.at..end].iter().collect();
        self.at = end + 1;
        Some(name)
    }

    fn home(&self) -> Result<String, String> {
        (self.env)("HOME").ok_or_else(|| "a ~ with no HOME set".to_owned())
    }

    /// A `~` that begins a word (or, in an assignment, its value or a part
    /// after `:`): the home folder when it stands alone or before `/`.
    fn tilde(&mut self, fields: &mut Fields, mode: WordKind) -> Result<(), String> {
        let ends = |c: Option<char>| match c {
            None | Some(' ' | '\t' | '/') => true,
            Some(':') => mode == WordKind::Assignment,
            _ => false,
        };
        if ends(self.peek_at(1)) {
            self.at += 1;
            fields.push_str(&self.home()?);
            Ok(())
        } else {
            Err("another user's home (~user)".to_owned())
        }
    }

    /// One shell word from here, as its fields.
    fn word(&mut self, mode: WordKind) -> Result<Vec<String>, String> {
        let mut fields = Fields::default();
        if mode == WordKind::Assignment {
            fields.started = true;
        }
        let mut word_start = true;
        while let Some(c) = self.peek() {
            // A redirection operator or `&&` ends the word before it
            // (`a>f`, `a&&b`).
            if matches!(c, ' ' | '\t' | '<' | '>') || self.at_and() {
                break;
            }
            if c == '~' && word_start {
                self.tilde(&mut fields, mode)?;
                word_start = false;
                continue;
            }
            word_start = mode == WordKind::Assignment && c == ':';
            match c {
                '\'' => {
                    self.at += 1;
                    let end = (self.at..self.chars.len())
                        .find(|&i| self.chars[i] == '\'')
                        .ok_or("an unterminated single quote")?;
                    let text: String = self.chars[self.at..end].iter().collect();
                    fields.push_str(&text);
                    self.at = end + 1;
                }
                '"' => {
                    self.at += 1;
                    self.double_quoted(&mut fields)?;
                }
                '\\' => {
                    self.at += 1;
                    // A trailing backslash: the shell reads on, and there
                    // is nothing more.
                    if let Some(next) = self.peek() {
                        fields.push(next);
                        self.at += 1;
                    }
                }
                '$' => {
                    self.at += 1;
                    match self.expansion()? {
                        Some(value) if mode == WordKind::Command => {
                            if value.chars().any(|c| matches!(c, '*' | '?' | '[')) {
                                return Err(
                                    "an unquoted variable whose value holds a pattern (*, ? or [)"
                                        .to_owned(),
                                );
                            }
                            fields.push_split(&value);
                        }
                        Some(value) => fields.push_str(&value),
                        None => fields.push('$'),
                    }
                }
                _ => {
                    if let Some(what) = operator(c) {
                        return Err(what.to_owned());
                    }
                    fields.push(c);
                    self.at += 1;
                }
            }
        }
        Ok(fields.finish())
    }

    /// Inside double quotes, after the opening one: up to the closing one.
    fn double_quoted(&mut self, fields: &mut Fields) -> Result<(), String> {
        fields.started = true;
        loop {
            let Some(c) = self.peek() else {
                return Err("an unterminated double quote".to_owned());
            };
            self.at += 1;
            match c {
                '"' => return Ok(()),
                '\\' => match self.peek() {
                    Some(next @ ('$' | '`' | '"' | '\\')) => {
                        fields.push(next);
                        self.at += 1;
                    }
                    _ => fields.push('\\'),
                },
                '`' => return Err("a command substitution (a backquote)".to_owned()),
                '$' => match self.expansion()? {
                    Some(value) => fields.push_str(&value),
                    None => fields.push('$'),
                },
                _ => fields.push(c),
            }
        }
    }

    /// After a `$`: the value of `$NAME` or `${NAME}` (empty when unset);
    /// `None` for a `$` the shell takes literally; `Err` for any other
    /// expansion.
    fn expansion(&mut self) -> Result<Option<String>, String> {
        let value = |name: &str| (self.env)(name).unwrap_or_default();
        match self.peek() {
            Some('{') => {
                let close = (self.at..self.chars.len())
                    .find(|&i| self.chars[i] == '}')
                    .ok_or("an unterminated ${")?;
                let name: String = self.chars[self.at + 1..close].iter().collect();
                let simple =
                    name.chars().next().is_some_and(is_name_start) && name.chars().all(is_name);
                if !simple {
                    return Err(format!(
                        "a parameter expansion other than $NAME or ${{NAME}} (${{{name}}})"
                    ));
                }
                self.at = close + 1;
                Ok(Some(value(&name)))
            }
            Some(c) if is_name_start(c) => {
                let start = self.at;
                while self.peek().is_some_and(is_name) {
                    self.at += 1;
                }
                let name: String = self.chars[start..self.at].iter().collect();
                Ok(Some(value(&name)))
            }
            Some('(') => Err("a command substitution ($( ... ))".to_owned()),
            Some(c) if c.is_ascii_digit() || "@*#?-$!".contains(c) => {
                Err(format!("a special parameter (${c})"))
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/alice".into()),
            "DIR" => Some("/srv/leases dir".into()),
            "FLAGS" => Some("--quiet  --json".into()),
            "GLOB" => Some("/x/*".into()),
            _ => None,
        }
    }

    fn words(command: &str) -> Vec<String> {
        let split = split(command, &env).expect(command);
        assert!(split.assignments.is_empty(), "{command}");
        split.words
    }

    fn refused(command: &str) -> String {
        split(command, &env).expect_err(command)
    }

    #[test]
    fn words_quotes_and_backslashes_as_sh_reads_them() {
        assert_eq!(
            words("rch-sweep --quiet   --lease-dir\t/x"),
            ["rch-sweep", "--quiet", "--lease-dir", "/x"]
        );
        assert_eq!(
            words(r#"rch-sweep --lease-dir '/a b' "/c d" e\ f '' "" g"h"'i'"#),
            [
                "rch-sweep",
                "--lease-dir",
                "/a b",
                "/c d",
                "e f",
                "",
                "",
                "ghi"
            ]
        );
        // Inside double quotes a backslash escapes only $ ` " \.
        assert_eq!(words(r#""a\$b\"c\\d\e""#), [r#"a$b"c\d\e"#]);
        // Single quotes keep everything.
        assert_eq!(words(r#"'$HOME \ "'"#), [r#"$HOME \ ""#]);
        // A word that begins with # begins a comment; inside a word it does not.
        assert_eq!(words("rch-sweep a#b # the sweep"), ["rch-sweep", "a#b"]);
        assert_eq!(words(""), Vec::<String>::new());
    }

    #[test]
    fn variables_expand_from_the_lines_environment() {
        assert_eq!(
            words("$HOME/.cargo/bin/rch-sweep --lease-dir ${HOME}/l"),
            [
                "/home/alice/.cargo/bin/rch-sweep",
                "--lease-dir",
                "/home/alice/l"
            ]
        );
        // Unquoted: split at blanks; quoted: one word; unset: nothing.
        assert_eq!(words("a $DIR"), ["a", "/srv/leases", "dir"]);
        assert_eq!(words(r#"a "$DIR""#), ["a", "/srv/leases dir"]);
        assert_eq!(words("a $FLAGS"), ["a", "--quiet", "--json"]);
        assert_eq!(words("a $UNSET b"), ["a", "b"]);
        assert_eq!(words(r#"a "$UNSET" b"#), ["a", "", "b"]);
        // A $ the shell takes literally.
        assert_eq!(words("a $ b$ c$/"), ["a", "$", "b$", "c$/"]);
        // ~ at the start of a word, alone or before /.
        assert_eq!(
            words("~/bin/rch-sweep ~ a~ '~'"),
            ["/home/alice/bin/rch-sweep", "/home/alice", "a~", "~"]
        );
    }

    #[test]
    fn assignments_before_the_command_are_its_own() {
        let split = split(
            "XDG_RUNTIME_DIR=/run/user/1000 A=\"x y\" B=~/b:~/c rch-sweep C=d",
            &env,
        )
        .expect("split");
        assert_eq!(
            split.assignments,
            [
                ("XDG_RUNTIME_DIR".to_owned(), "/run/user/1000".to_owned()),
                ("A".to_owned(), "x y".to_owned()),
                ("B".to_owned(), "/home/alice/b:/home/alice/c".to_owned()),
            ]
        );
        // After the command word, NAME=value is an argument.
        assert_eq!(split.words, ["rch-sweep", "C=d"]);
        // An assignment's value is not split, and may be empty.
        let split = super::split("A=$DIR B= rch-sweep", &env).expect("split");
        assert_eq!(split.assignments[0].1, "/srv/leases dir");
        assert_eq!(split.assignments[1].1, "");
    }

    #[test]
    fn anything_more_than_a_simple_command_is_refused_by_name() {
        for (command, what) in [
            ("rch-sweep | logger", "a pipe"),
            ("rch-sweep;true", "a command list"),
            ("rch-sweep && true", "&&"),
            ("rch-sweep 3>/x", "descriptor 3"),
            ("rch-sweep < x", "a redirection doctor does not follow (<x"),
            ("rch-sweep <<EOF", "(<<"),
            ("rch-sweep >|/x", "(>|"),
            ("rch-sweep 2>&3", "(2>&3"),
            ("rch-sweep 2>&-", "(2>&-"),
            ("rch-sweep >", "no file"),
            ("rch-sweep &>/x", "a background job"),
            ("rch-sweep --lease-dir $(cat f)", "command substitution"),
            ("rch-sweep --lease-dir \"$(cat f)\"", "command substitution"),
            ("rch-sweep `date`", "backquote"),
            ("rch-sweep \"`date`\"", "backquote"),
            ("(rch-sweep)", "subshell"),
            ("rch-sweep /x/*", "pattern"),
            ("rch-sweep $GLOB", "pattern"),
            ("rch-sweep ${HOME:-/root}", "${HOME:-/root}"),
            ("rch-sweep $1", "special parameter"),
            ("rch-sweep ~bob/x", "~user"),
            ("rch-sweep 'open", "unterminated single quote"),
            ("rch-sweep \"open", "unterminated double quote"),
        ] {
            let why = refused(command);
            assert!(why.contains(what), "{command}: {why}");
        }
        // Quoted or escaped, they are characters.
        assert_eq!(words("rch-sweep '>x' \\<y"), ["rch-sweep", ">x", "<y"]);
        assert_eq!(
            words("rch-sweep '|;&<>()*' \"|;&<>*\" \\|"),
            ["rch-sweep", "|;&<>()*", "|;&<>*", "|"]
        );
    }

    #[test]
    fn a_list_joined_by_and_is_split_one_command_at_a_time() {
        let (first, rest) = split_first("cd ~/x&&A=1 rch-sweep -q 2>&1&& b", &env).expect("split");
        assert_eq!(first.words, ["cd", "/home/alice/x"]);
        let rest = rest.expect("more");
        assert_eq!(rest, "A=1 rch-sweep -q 2>&1&& b");
        let (second, rest) = split_first(rest, &env).expect("split");
        assert_eq!(second.assignments, [("A".to_owned(), "1".to_owned())]);
        assert_eq!(second.words, ["rch-sweep", "-q"]);
        assert_eq!(
            split_first(rest.expect("more"), &env).expect("split").1,
            None
        );
        // Quoted, it is a word; alone at either end, sh refuses the line.
        assert_eq!(words("a '&&' \\&\\&"), ["a", "&&", "&&"]);
        assert!(refused("&& a").contains("nothing before &&"));
        assert!(refused("a && # b").contains("nothing after &&"));
        assert!(refused("a &&").contains("nothing after &&"));
    }

    #[test]
    fn the_redirections_crontabs_use_are_followed_and_leave_the_words() {
        let split = split("rch-sweep --quiet >>$HOME/log 2>&1 </dev/null", &env).expect("split");
        assert_eq!(split.words, ["rch-sweep", "--quiet"]);
        assert_eq!(
            split.redirections,
            [
                Redirection::ToFile {
                    fd: 1,
                    file: "/home/alice/log".into(),
                    append: true
                },
                Redirection::Copy { fd: 2, to: 1 },
                Redirection::NullInput,
            ]
        );
        // Anywhere in the command, with or without blanks, ending a word.
        let split = super::split(
            ">/dev/null A=1 rch-sweep --quiet>'/a b' 2> /e 1>&2 --json 0</dev/null",
            &env,
        )
        .expect("split");
        assert_eq!(split.assignments, [("A".to_owned(), "1".to_owned())]);
        assert_eq!(split.words, ["rch-sweep", "--quiet", "--json"]);
        assert_eq!(split.redirections.len(), 5);
        assert_eq!(
            split.redirections[1],
            Redirection::ToFile {
                fd: 1,
                file: "/a b".into(),
                append: false
            }
        );
        // A file name with blanks from a variable is not split.
        let split = super::split("rch-sweep 2>$DIR", &env).expect("split");
        assert_eq!(
            split.redirections,
            [Redirection::ToFile {
                fd: 2,
                file: "/srv/leases dir".into(),
                append: false
            }]
        );
        // A digit that is a word of its own is an argument.
        assert_eq!(words("rch-sweep 2 1"), ["rch-sweep", "2", "1"]);
    }
}

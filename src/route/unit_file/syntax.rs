//! The text formats systemd reads for a service, as systemd.syntax(7),
//! systemd.exec(5) and systemd.service(5) define them: a unit file's
//! sections and assignments (a setting's words are [`super::words`]'s),
//! the specifiers (`%h`, `%u`, `%i`, ...), an `EnvironmentFile=`, and the
//! `$VAR` / `${VAR}` expansion of `ExecStart=`'s arguments.

use crate::route::vars::{self, Vars};

/// One assignment of a unit file: the line it ends on (the number systemd
/// names in its messages), its key and value, trimmed.
#[derive(Debug, PartialEq, Eq)]
pub struct Assignment {
    pub line: usize,
    pub key: String,
    pub value: String,
}

/// The assignments of a unit file's `[Service]` section, in order, as
/// systemd 252's `config_parse` reads them: a line whose last character is
/// an unescaped `\` (an odd run of backslashes) continues on the next, the
/// backslash becoming a blank; `#` and `;` begin comment lines, which are
/// skipped inside a continued line too and never continue themselves
/// (systemd.syntax(7): "the comment block is ignored").
pub fn service_assignments(text: &str) -> Vec<Assignment> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut pending = String::new();
    for (index, raw) in text.lines().enumerate() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if raw.trim_start().starts_with(['#', ';']) {
            continue;
        }
        let backslashes = raw.len() - raw.trim_end_matches('\\').len();
        if backslashes % 2 == 1 {
            pending.push_str(&raw[..raw.len() - 1]);
            pending.push(' ');
            continue;
        }
        let whole = std::mem::take(&mut pending) + raw;
        let whole = whole.trim();
        if whole.is_empty() {
            continue;
        }
        if whole.starts_with('[') && whole.ends_with(']') {
            section = whole[1..whole.len() - 1].to_owned();
            continue;
        }
        if section != "Service" {
            continue;
        }
        if let Some((key, value)) = whole.split_once('=') {
            out.push(Assignment {
                line: index + 1,
                key: key.trim().to_owned(),
                value: value.trim().to_owned(),
            });
        }
    }
    out
}

/// What the specifiers of a unit stand for, for one manager and unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Specifiers {
    /// `%h`: the home of the user the manager runs as (`/root` for the
    /// system manager, whatever `User=` says).
    pub home: String,
    /// `%u`: that user's name.
    pub user: String,
    /// `%U`: that user's uid.
    pub uid: u32,
    /// `%i`: the instance (`alice` of `rch-sweep@alice.service`), or empty.
    pub instance: String,
    /// `%n`: the unit's full name.
    pub unit: String,
    /// `%t`, `%S`, `%C`, `%L`, `%E`: the runtime, state, cache, logs and
    /// configuration folders of the manager.
    pub runtime: String,
    pub state: String,
    pub cache: String,
    pub logs: String,
    pub config: String,
}

/// `\xHH` escapes of a unit name part undone (`%I`, `%P`).
fn unescape_name(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let escaped = rest
            .strip_prefix("\\x")
            .and_then(|hex| hex.get(..2))
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .and_then(char::from_u32);
        match escaped {
            Some(unescaped) => {
                out.push(unescaped);
                rest = &rest[4..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

impl Specifiers {
    /// `word` with its specifiers resolved. `Err` names a specifier this
    /// reading does not know (systemd knows more; doctor says so).
    pub fn resolve(&self, word: &str) -> Result<String, String> {
        let mut out = String::with_capacity(word.len());
        let mut chars = word.chars();
        let name = self.unit.rsplit_once('.').map_or(&*self.unit, |(n, _)| n);
        let prefix = name.split_once('@').map_or(name, |(p, _)| p);
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let Some(spec) = chars.next() else {
                return Err("a lone % at the end".to_owned());
            };
            match spec {
                '%' => out.push('%'),
                'h' => out.push_str(&self.home),
                'u' => out.push_str(&self.user),
                'U' => out.push_str(&self.uid.to_string()),
                'i' => out.push_str(&self.instance),
                'I' => out.push_str(&unescape_name(&self.instance)),
                'n' => out.push_str(&self.unit),
                'N' => out.push_str(name),
                'p' => out.push_str(prefix),
                'P' => out.push_str(&unescape_name(prefix)),
                't' => out.push_str(&self.runtime),
                'S' => out.push_str(&self.state),
                'C' => out.push_str(&self.cache),
                'L' => out.push_str(&self.logs),
                'E' => out.push_str(&self.config),
                'T' => out.push_str("/tmp"),
                'V' => out.push_str("/var/tmp"),
                other => return Err(format!("%{other}, a specifier doctor does not resolve")),
            }
        }
        Ok(out)
    }
}

/// Whether `name` may name an environment variable.
pub fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// The first systemd whose environment files end a comment at a newline
/// after a `\` (v254, `env-file.c`: "treated as a non comment line since
/// v254"); before it the backslash takes the newline, and the next line
/// is comment too.
pub const COMMENT_ENDS_AT_ESCAPED_NEWLINE: u32 = 254;

/// The version in `systemctl --version`'s first line (`systemd 252
/// (252.38-1~deb12u1)`).
pub fn systemd_version(first_line: &str) -> Option<u32> {
    let mut words = first_line.split_whitespace();
    (words.next() == Some("systemd"))
        .then(|| words.next()?.parse().ok())
        .flatten()
}

/// An `EnvironmentFile=`'s variables, as systemd `version` reads one
/// (`parse_env_file_internal`): `KEY=VALUE` lines, `#` and `;` comment
/// lines (a `\` in a comment takes the next character, before v254 a
/// newline too, so the next line is comment); a value's trailing blanks
/// dropped; a backslash escapes the next character (a newline too: the
/// value goes on); single quotes literal; in double quotes a backslash
/// escapes only `"`, `\`, `` ` ``, `$` and a newline. A line without `=`,
/// or with a key that cannot name a variable (`export NAME=` too), is
/// ignored. With the variables come notes, `line N: ...`, for each line
/// systemd drops that looks meant to set one (see [`EnvFile::notes`]).
pub fn environment_file(text: &str, version: u32) -> (Vars, Vec<String>) {
    let read = read_environment_file(text, version);
    let mut out = Vars::new();
    for assignment in &read.assignments {
        if is_var_name(&assignment.key) {
            vars::set(&mut out, &assignment.key, &assignment.value);
        }
    }
    (out, read.notes())
}

/// An environment file as systemd reads it, before the names are checked.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct EnvFile {
    /// The `KEY=VALUE` assignments, in order, keys trimmed, each with the
    /// line its key stands on.
    pub assignments: Vec<Assignment>,
    /// Lines taken into a comment above them that ends in `\` (systemd
    /// before 254), each with the comment's line: `(line, comment line)`.
    pub swallowed: Vec<(usize, usize)>,
}

impl EnvFile {
    /// What systemd drops that a reader would take for a setting: a key
    /// that names no variable (`export NAME=value`: systemd 252 takes no
    /// `export`), a line taken into a comment.
    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<(usize, String)> = self
            .assignments
            .iter()
            .filter(|a| !is_var_name(&a.key))
            .map(|a| {
                let why = if a.key.starts_with("export ") {
                    " (systemd takes no `export` before a name)"
                } else {
                    ""
                };
                (
                    a.line,
                    format!(
                        "line {}: {:?} is no variable name{why}, so systemd ignores the line",
                        a.line, a.key
                    ),
                )
            })
            .collect();
        notes.extend(self.swallowed.iter().map(|(line, comment)| {
            (
                *line,
                format!(
                    "line {line}: systemd reads it as part of the comment on line {comment}, which ends in \\ (as systemd before 254 does), and ignores it"
                ),
            )
        }));
        notes.sort();
        notes.into_iter().map(|(_, note)| note).collect()
    }
}

/// An environment file read as [`environment_file`] says.
pub fn read_environment_file(text: &str, version: u32) -> EnvFile {
    let mut out = EnvFile::default();
    let chars: Vec<char> = text.chars().collect();
    // The line of the character at an index: 1 and the newlines before it.
    let newlines: Vec<usize> = (0..chars.len()).filter(|&i| chars[i] == '\n').collect();
    let line_of = |at: usize| newlines.partition_point(|&newline| newline < at) + 1;
    let mut at = 0;
    while at < chars.len() {
        // The start of a line: blanks, then a comment or a key.
        while at < chars.len() && matches!(chars[at], ' ' | '\t' | '\r') {
            at += 1;
        }
        if at >= chars.len() {
            break;
        }
        if matches!(chars[at], '#' | ';') {
            let comment = line_of(at);
            let (end, continued) = comment_end(&chars, at + 1, version);
            out.swallowed.extend(
                continued
                    .into_iter()
                    .map(|newline| (line_of(newline + 1), comment))
                    .filter(|(line, _)| *line <= newlines.len() + 1),
            );
            at = end;
            continue;
        }
        if chars[at] == '\n' {
            at += 1;
            continue;
        }
        let key_start = at;
        while at < chars.len() && !matches!(chars[at], '=' | '\n') {
            at += 1;
        }
        let key: String = chars[key_start..at].iter().collect();
        if chars.get(at) != Some(&'=') {
            at += 1;
            continue;
        }
        at += 1;
        let (value, next) = file_value(&chars, at);
        at = next;
        out.assignments.push(Assignment {
            line: line_of(key_start),
            key: key.trim().to_owned(),
            value,
        });
    }
    out
}

/// Where the line after a comment starts, the comment's text from `at`,
/// and the newlines an escape took into it (before v254).
fn comment_end(chars: &[char], mut at: usize, version: u32) -> (usize, Vec<usize>) {
    let mut continued = Vec::new();
    while let Some(&c) = chars.get(at) {
        at += 1;
        match c {
            '\n' => break,
            '\\' => match chars.get(at) {
                Some('\n') if version >= COMMENT_ENDS_AT_ESCAPED_NEWLINE => {
                    return (at + 1, continued);
                }
                Some(next) => {
                    if *next == '\n' {
                        continued.push(at);
                    }
                    at += 1;
                }
                None => {}
            },
            _ => {}
        }
    }
    (at, continued)
}

/// A value of an environment file from `at`: the value and where the next
/// line starts.
fn file_value(chars: &[char], mut at: usize) -> (String, usize) {
    while at < chars.len() && matches!(chars[at], ' ' | '\t') {
        at += 1;
    }
    let mut value = String::new();
    // How long `value` is up to its last character that was quoted or
    // escaped: trailing blanks beyond it are dropped.
    let mut kept = 0;
    while at < chars.len() {
        let c = chars[at];
        at += 1;
        match c {
            '\n' => break,
            '\\' => {
                if let Some(&next) = chars.get(at) {
                    at += 1;
                    if next != '\n' {
                        value.push(next);
                    }
                    kept = value.len();
                }
            }
            '\'' => {
                while at < chars.len() && chars[at] != '\'' {
                    value.push(chars[at]);
                    at += 1;
                }
                at += 1;
                kept = value.len();
            }
            '"' => {
                while at < chars.len() && chars[at] != '"' {
                    if chars[at] == '\\'
                        && chars
                            .get(at + 1)
                            .is_some_and(|n| matches!(n, '"' | '\\' | '`' | '$' | '\n'))
                    {
                        if chars[at + 1] != '\n' {
                            value.push(chars[at + 1]);
                        }
                        at += 2;
                        continue;
                    }
                    value.push(chars[at]);
                    at += 1;
                }
                at += 1;
                kept = value.len();
            }
            _ => {
                value.push(c);
                if !c.is_whitespace() {
                    kept = value.len();
                }
            }
        }
    }
    value.truncate(kept);
    (value, at)
}

/// `ExecStart=`'s arguments with the environment's variables in, as
/// systemd.service(5) says: a word that is exactly `$NAME` becomes the
/// value split at blanks (no word when unset or empty); `${NAME}` anywhere
/// becomes the value, as one word; `$$` is a `$`; `$NAME` inside a longer
/// word stays as written.
pub fn expand_args(args: &[String], env: &Vars) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    for word in args {
        if let Some(name) = word.strip_prefix('$').filter(|name| is_var_name(name)) {
            let value = vars::get(env, name).unwrap_or_default();
            out.extend(value.split_whitespace().map(str::to_owned));
            continue;
        }
        out.push(expand_braced(word, env));
    }
    out
}

/// `${NAME}` (and `${NAME:-default}`, `${NAME:+alternative}`) and `$$` in
/// a word.
fn expand_braced(word: &str, env: &Vars) -> String {
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(index) = rest.find('$') {
        out.push_str(&rest[..index]);
        let after = &rest[index + 1..];
        if let Some(after) = after.strip_prefix('$') {
            out.push('$');
            rest = after;
            continue;
        }
        let braced = after
            .strip_prefix('{')
            .and_then(|inner| inner.split_once('}'));
        let Some((inside, tail)) = braced else {
            out.push('$');
            rest = after;
            continue;
        };
        let value = |name: &str| vars::get(env, name).unwrap_or_default().to_owned();
        let expanded = if let Some((name, default)) = inside.split_once(":-") {
            Some(value(name))
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_owned())
        } else if let Some((name, alternative)) = inside.split_once(":+") {
            if value(name).is_empty() {
                String::new()
            } else {
                alternative.to_owned()
            }
        } else {
            value(inside)
        };
        out.push_str(&expanded);
        rest = tail;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn only_the_service_section_with_continuations_and_comments() {
        let text = "[Unit]\nDescription=x\n# Environment=NO=1\n[Service]\n\
                    Environment = A=1 \\\n  B=2\n; ExecStart=/bin/false\n#ExecStart=/bin/false\n\
                    ExecStart=rch-sweep\n\n[Install]\nWantedBy=timers.target\n";
        assert_eq!(
            pairs(&service_assignments(text)),
            [
                (6, "Environment", "A=1    B=2"),
                (9, "ExecStart", "rch-sweep")
            ]
        );
    }

    fn pairs(assignments: &[Assignment]) -> Vec<(usize, &str, &str)> {
        assignments
            .iter()
            .map(|a| (a.line, a.key.as_str(), a.value.as_str()))
            .collect()
    }

    #[test]
    fn an_even_run_of_backslashes_continues_nothing() {
        let text = "[Service]\nEnvironment=V=ok\\\\\nExecStart=x \\\\\\\n  -q\r\nUser=a \\ \n";
        assert_eq!(
            pairs(&service_assignments(text)),
            [
                (2, "Environment", "V=ok\\\\"),
                (4, "ExecStart", "x \\\\   -q"),
                (5, "User", "a \\"),
            ]
        );
    }

    fn specifiers() -> Specifiers {
        Specifiers {
            home: "/root".into(),
            user: "root".into(),
            uid: 0,
            instance: "alice".into(),
            unit: "rch-sweep@alice.service".into(),
            runtime: "/run".into(),
            state: "/var/lib".into(),
            cache: "/var/cache".into(),
            logs: "/var/log".into(),
            config: "/etc".into(),
        }
    }

    #[test]
    fn specifiers_are_the_managers_and_the_units() {
        let s = specifiers();
        assert_eq!(
            s.resolve("%h/l %u %U %i %I %n %N %p %t %S %C %L %E %T %V 100%%")
                .expect("resolved"),
            "/root/l root 0 alice alice rch-sweep@alice.service rch-sweep@alice rch-sweep /run /var/lib /var/cache /var/log /etc /tmp /var/tmp 100%"
        );
        assert!(s.resolve("%H").expect_err("unknown").contains("%H"));
        assert!(s.resolve("50%").is_err());
        let escaped = Specifiers {
            instance: "a\\x2db".into(),
            ..specifiers()
        };
        assert_eq!(escaped.resolve("%i %I").expect("resolved"), "a\\x2db a-b");
    }

    #[test]
    fn an_environment_file_as_systemd_reads_it() {
        let text = "# comment\n; also\n  A=1  \nB = two words \nC='single $x'\n\
                    D=\"dq \\\"x\\\" \\n\"\nE=a\\\nb\nnot a line\n1X=bad\nF=\r\nG=\"multi\nline\"\n";
        let (vars, _) = environment_file(text, 252);
        let get = |name| vars::get(&vars, name);
        assert_eq!(get("A"), Some("1"));
        assert_eq!(get("B"), Some("two words"));
        assert_eq!(get("C"), Some("single $x"));
        assert_eq!(get("D"), Some("dq \"x\" \\n"));
        assert_eq!(get("E"), Some("ab"));
        assert_eq!(get("1X"), None);
        assert_eq!(get("F"), Some(""));
        assert_eq!(get("G"), Some("multi\nline"));
        assert_eq!(vars.len(), 7, "{vars:?}");
    }

    #[test]
    fn a_comment_ending_in_a_backslash_takes_the_next_line_before_254() {
        let text = "A=good\n# old path was C:\\\nA=wrong\n; x \\\\\nB=2\n#\\\nC=3\n";
        // 252 (Debian 12): "A=wrong" is comment; "\\\\" is one escaped
        // backslash, so B's line is not; "#\\" takes "C=3".
        let (old, notes) = environment_file(text, 252);
        assert_eq!(vars::get(&old, "A"), Some("good"));
        assert_eq!(vars::get(&old, "B"), Some("2"));
        assert_eq!(vars::get(&old, "C"), None);
        assert_eq!(
            notes,
            [
                "line 3: systemd reads it as part of the comment on line 2, which ends in \\ (as systemd before 254 does), and ignores it",
                "line 7: systemd reads it as part of the comment on line 6, which ends in \\ (as systemd before 254 does), and ignores it",
            ]
        );
        // An export before the name, or another name systemd refuses.
        let (vars, notes) = environment_file("A=1\nexport B=2\n\n bad-name = 3\nC\n", 252);
        assert_eq!(vars, [("A".to_owned(), "1".to_owned())]);
        assert_eq!(
            notes,
            [
                "line 2: \"export B\" is no variable name (systemd takes no `export` before a name), so systemd ignores the line",
                "line 4: \"bad-name\" is no variable name, so systemd ignores the line",
            ]
        );
        // 254 and later: a comment ends at the newline, whatever precedes it.
        let (new, _) = environment_file(text, COMMENT_ENDS_AT_ESCAPED_NEWLINE);
        assert_eq!(vars::get(&new, "A"), Some("wrong"));
        assert_eq!(vars::get(&new, "B"), Some("2"));
        assert_eq!(vars::get(&new, "C"), Some("3"));
        assert_eq!(systemd_version("systemd 252 (252.38-1~deb12u1)"), Some(252));
        assert_eq!(systemd_version("systemd 256 (256.7)"), Some(256));
        assert_eq!(systemd_version("elogind 252"), None);
        assert_eq!(systemd_version(""), None);
    }

    #[test]
    fn unit_file_comments_inside_a_continued_line_are_skipped() {
        // systemd.syntax(7)'s example: the comment block is ignored, and
        // a comment ending in a backslash continues nothing.
        let text = "[Service]\nEnvironment=A=3\\\n# this line is ignored\n\
                    ; this line is ignored too\n       B=4\n# c \\\nExecStart=rch-sweep\n";
        assert_eq!(
            pairs(&service_assignments(text)),
            [
                (5, "Environment", "A=3        B=4"),
                (7, "ExecStart", "rch-sweep")
            ]
        );
    }

    #[test]
    fn exec_arguments_expand_as_systemd_expands_them() {
        let env: Vars = [
            ("DIR", "/srv/l dir"),
            ("FLAGS", "--quiet  --json"),
            ("EMPTY", ""),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        assert_eq!(
            expand_args(
                &strings(&[
                    "$FLAGS",
                    "--lease-dir",
                    "${DIR}/job-leases",
                    "$EMPTY",
                    "$UNSET",
                    "${UNSET}",
                    "a$DIR",
                    "$$HOME",
                    "${UNSET:-/d}",
                    "${DIR:+set}",
                ]),
                &env
            ),
            strings(&[
                "--quiet",
                "--json",
                "--lease-dir",
                "/srv/l dir/job-leases",
                "",
                "a$DIR",
                "$HOME",
                "/d",
                "set"
            ])
        );
    }
}

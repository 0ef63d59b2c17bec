//! The text formats systemd reads for a service, as systemd.syntax(7),
//! systemd.exec(5) and systemd.service(5) define them: a unit file's
//! sections and assignments, the words of a setting (quotes, C escapes),
//! the specifiers (`%h`, `%u`, `%i`, ...), an `EnvironmentFile=`, and the
//! `$VAR` / `${VAR}` expansion of `ExecStart=`'s arguments.

use crate::vars::{self, Vars};

/// The assignments of a unit file's `[Service]` section, in order, keys
/// and values trimmed. A line ending in `\` continues on the next (the
/// backslash becomes a blank); `#` and `;` begin comment lines, which are
/// skipped inside a continued line too and never continue themselves
/// (systemd.syntax(7): "the comment block is ignored").
pub fn service_assignments(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut pending = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(start) = line.strip_suffix('\\') {
            pending.push_str(start);
            pending.push(' ');
            continue;
        }
        let whole = if pending.is_empty() {
            line.to_owned()
        } else {
            let mut whole = std::mem::take(&mut pending);
            whole.push_str(line);
            whole
        };
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
            out.push((key.trim().to_owned(), value.trim().to_owned()));
        }
    }
    out
}

/// One C escape after a backslash, as systemd's `cunescape` reads it; the
/// character and how many input characters it used. An unknown escape is
/// the character itself.
fn escape(rest: &[char]) -> (Option<char>, usize) {
    let Some(&c) = rest.first() else {
        return (None, 0);
    };
    let hex = |digits: &[char]| -> Option<char> {
        let text: String = digits.iter().collect();
        u32::from_str_radix(&text, 16).ok().and_then(char::from_u32)
    };
    match c {
        'a' => (Some('\u{7}'), 1),
        'b' => (Some('\u{8}'), 1),
        'f' => (Some('\u{c}'), 1),
        'n' => (Some('\n'), 1),
        'r' => (Some('\r'), 1),
        't' => (Some('\t'), 1),
        'v' => (Some('\u{b}'), 1),
        's' => (Some(' '), 1),
        'x' if rest.len() >= 3 => (hex(&rest[1..3]), 3),
        'u' if rest.len() >= 5 => (hex(&rest[1..5]), 5),
        '0'..='7' if rest.len() >= 3 => {
            let text: String = rest[..3].iter().collect();
            (
                u32::from_str_radix(&text, 8).ok().and_then(char::from_u32),
                3,
            )
        }
        other => (Some(other), 1),
    }
}

/// The words of a setting (`Environment=`, `ExecStart=`), as systemd's
/// `extract_first_word` with unquoting and C unescaping splits them: blanks
/// separate words, single and double quotes group (also inside a word),
/// backslash escapes. `Err` for an unterminated quote: systemd ignores
/// such a setting.
pub fn words(text: &str) -> Result<Vec<String>, String> {
    match words_until_error(text) {
        (words, None) => Ok(words),
        (_, Some(why)) => Err(why),
    }
}

/// The words of a setting up to where they cannot be split (an
/// unterminated quote), and why they stop there: systemd's
/// `config_parse_environ` keeps the assignments it took before such a
/// word and ignores the rest of the line.
pub fn words_until_error(text: &str) -> (Vec<String>, Option<String>) {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    let mut started = false;
    let mut quote: Option<char> = None;
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        at += 1;
        if c == '\\' {
            let (unescaped, used) = escape(&chars[at..]);
            at += used;
            if let Some(unescaped) = unescaped {
                current.push(unescaped);
            }
            started = true;
            continue;
        }
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                started = true;
            }
            None if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut current));
                }
                started = false;
            }
            None => {
                current.push(c);
                started = true;
            }
        }
    }
    if quote.is_some() {
        return (out, Some(format!("an unterminated quote in {text:?}")));
    }
    if started {
        out.push(current);
    }
    (out, None)
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
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut at = 0;
    while at < chars.len() {
        if chars[at] == '\\' && chars.get(at + 1) == Some(&'x') {
            let (c, used) = escape(&chars[at + 1..]);
            if let Some(c) = c.filter(|_| used == 3) {
                out.push(c);
                at += 4;
                continue;
            }
        }
        out.push(chars[at]);
        at += 1;
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
/// or with a key that cannot name a variable, is ignored.
pub fn environment_file(text: &str, version: u32) -> Vars {
    let mut out = Vars::new();
    for (key, value) in assignments(text, version) {
        if is_var_name(&key) {
            vars::set(&mut out, &key, &value);
        }
    }
    out
}

/// The `KEY=VALUE` assignments of an environment file, in order, keys
/// trimmed and not yet checked, read as [`environment_file`] says.
pub fn assignments(text: &str, version: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
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
            at = comment_end(&chars, at + 1, version);
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
        out.push((key.trim().to_owned(), value));
    }
    out
}

/// Where the line after a comment starts, the comment's text from `at`.
fn comment_end(chars: &[char], mut at: usize, version: u32) -> usize {
    while let Some(&c) = chars.get(at) {
        at += 1;
        match c {
            '\n' => break,
            '\\' => match chars.get(at) {
                Some('\n') if version >= COMMENT_ENDS_AT_ESCAPED_NEWLINE => return at + 1,
                Some(_) => at += 1,
                None => {}
            },
            _ => {}
        }
    }
    at
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
            service_assignments(text),
            [
                ("Environment".to_owned(), "A=1  B=2".to_owned()),
                ("ExecStart".into(), "rch-sweep".into())
            ]
        );
    }

    #[test]
    fn words_unquote_and_unescape_as_systemd_does() {
        assert_eq!(
            words(r#"A=1 "B=x y" 'C=$HOME' D="e"f g\ h \x41\t\s"#).expect("words"),
            strings(&["A=1", "B=x y", "C=$HOME", "D=ef", "g h", "A\t "])
        );
        assert_eq!(words("  ").expect("words"), Vec::<String>::new());
        assert_eq!(words("\"\"").expect("words"), strings(&[""]));
        assert!(words("\"open").is_err());
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
        let vars = environment_file(text, 252);
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
        let old = environment_file(text, 252);
        assert_eq!(vars::get(&old, "A"), Some("good"));
        assert_eq!(vars::get(&old, "B"), Some("2"));
        assert_eq!(vars::get(&old, "C"), None);
        // 254 and later: a comment ends at the newline, whatever precedes it.
        let new = environment_file(text, COMMENT_ENDS_AT_ESCAPED_NEWLINE);
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
            service_assignments(text),
            [
                ("Environment".to_owned(), "A=3 B=4".to_owned()),
                ("ExecStart".into(), "rch-sweep".into())
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

//! What `pam_env` gives a cron job: which files `/etc/pam.d/cron` makes it
//! read, and what each sets.
//!
//! Debian's cron opens a PAM session for every job and starts the job
//! with PAM's environment under its own (`build_env`), and Debian's
//! `/etc/pam.d/cron` loads `pam_env` twice: once for `/etc/environment`,
//! once for `/etc/default/locale`. So a variable set there (an
//! `RCH_STATE_HOME` for every account) reaches every cron job, and doctor
//! must read the same files the same way. [`steps`] reads a PAM service
//! file (which `@include`s to follow, which env files `pam_env` reads and
//! where its `conffile` is). Each `pam_env` line reads its `conffile`
//! (`/etc/security/pam_env.conf`) first, then its env file, and each file
//! is read as Linux-PAM 1.5.2's `pam_env.c` reads it: [`conf_file`] the
//! conffile (`NAME [DEFAULT=value] [OVERRIDE=value]`, `${VAR}` from what
//! PAM's environment holds so far, `@{HOME}`, `@{SHELL}`, `@{PAM_USER}`
//! from the account), [`env_file`] an env file (`#` ends the line wherever
//! it stands, a trailing `\` joins the next line, `export ` is skipped, a
//! key of letters, digits and `_` only, a leading quote dropped along with
//! every quote that ends the value, a bare `NAME` unsets it, nothing
//! expanded). Pure: the files are read elsewhere.

use crate::route::vars::{self, Vars};

/// `pam_env`'s default env file.
pub const DEFAULT_ENVFILE: &str = "/etc/environment";

/// `pam_env`'s default `conffile`.
pub const DEFAULT_CONFFILE: &str = "/etc/security/pam_env.conf";

/// What one line of a PAM service file asks for, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// `@include NAME`: the lines of `/etc/pam.d/NAME`, here.
    Include(String),
    /// `pam_env` reads its `conffile` (a syntax of its own, with
    /// expansions), then this env file (none when `readenv=0`).
    PamEnv {
        conffile: String,
        envfile: Option<String>,
        /// `user_readenv=1`: the user's `~/.pam_environment` too (off by
        /// default since Linux-PAM 1.5.0, deprecated).
        user_env: bool,
    },
}

/// The steps of a PAM service file that bear on the environment:
/// `@include`s and the `auth` or `session` lines that load `pam_env.so`
/// (cron both establishes credentials and opens a session, and `pam_env`
/// sets the environment in either).
pub fn steps(text: &str) -> Vec<Step> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if let Some(name) = line.strip_prefix("@include") {
            let name = name.trim();
            if !name.is_empty() {
                out.push(Step::Include(name.to_owned()));
            }
            continue;
        }
        let Some((kind, rest)) = line.split_once([' ', '\t']) else {
            continue;
        };
        if !matches!(kind.trim_start_matches('-'), "auth" | "session") {
            continue;
        }
        let rest = rest.trim_start();
        // The control: a word, or `[...]` that may hold blanks.
        let rest = match rest.strip_prefix('[') {
            Some(inside) => match inside.split_once(']') {
                Some((_, after)) => after,
                None => continue,
            },
            None => rest.split_once([' ', '\t']).map_or("", |(_, after)| after),
        };
        let mut words = rest.split_whitespace();
        let Some(module) = words.next() else { continue };
        if module.rsplit('/').next() != Some("pam_env.so") {
            continue;
        }
        let mut envfile = Some(DEFAULT_ENVFILE.to_owned());
        let mut conffile = DEFAULT_CONFFILE.to_owned();
        let mut user_env = false;
        for arg in words {
            if let Some(file) = arg.strip_prefix("envfile=").filter(|f| !f.is_empty()) {
                if envfile.is_some() {
                    envfile = Some(file.to_owned());
                }
            } else if let Some(file) = arg.strip_prefix("conffile=").filter(|f| !f.is_empty()) {
                file.clone_into(&mut conffile);
            } else if let Some(flag) = arg.strip_prefix("user_readenv=") {
                user_env = atoi(flag) != 0;
            } else if let Some(flag) = arg.strip_prefix("readenv=") {
                if atoi(flag) == 0 {
                    envfile = None;
                } else if envfile.is_none() {
                    envfile = Some(DEFAULT_ENVFILE.to_owned());
                }
            }
        }
        out.push(Step::PamEnv {
            conffile,
            envfile,
            user_env,
        });
    }
    out
}

/// C's `atoi` of an option's value: its leading digits, else 0.
fn atoi(text: &str) -> u64 {
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or(0)
}

/// The logical lines of a `pam_env` file (`_assemble_line`), each with
/// the number of the line it starts on: blank and comment lines skipped,
/// everything from a `#` dropped, a line whose end (before blanks) is `\`
/// joined with the next. A line keeps its newline, as `fgets` does.
fn assembled(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (index, raw) in text.split_inclusive('\n').enumerate() {
        let line = raw.trim_start_matches([' ', '\n', '\t']);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (_, part) = current.get_or_insert_with(|| (index + 1, String::new()));
        if let Some((before, _)) = line.split_once('#') {
            part.push_str(before);
            out.extend(current.take());
            continue;
        }
        let end = line.trim_end_matches([' ', '\t', '\n']);
        match end.strip_suffix('\\') {
            Some(joined) => part.push_str(joined),
            None => {
                part.push_str(line);
                out.extend(current.take());
            }
        }
    }
    out.extend(current);
    out
}

/// What `@{ITEM}` stands for in cron's PAM session: `PAM_USER` is the
/// crontab's owner, `HOME` and `SHELL` that account's passwd entry's.
#[derive(Clone, Copy, Debug)]
pub struct Items<'a> {
    pub user: &'a str,
    pub home: &'a str,
    pub shell: &'a str,
}

/// What reading a conffile came to, beyond the variables it set.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ConfRead {
    /// What pam_env ignored or doctor could not tell, each `line N: ...`.
    pub notes: Vec<String>,
    /// The line where pam_env gave up (an unterminated `${` or `@{`): it
    /// then reads no env file and fails the PAM session.
    pub aborted: Option<usize>,
}

/// A `DEFAULT=` or `OVERRIDE=` value as `_parse_line` keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ConfValue {
    Text(String),
    /// `""`: the empty string, which defines the variable empty.
    Empty,
}

/// Applies a `pam_env` conffile (`/etc/security/pam_env.conf`) to `env`,
/// line by line as pam_env 1.5.2's `_parse_config_file` does: each line
/// `NAME [DEFAULT=value] [OVERRIDE=value]` (a value quoted with `"` whole,
/// or up to a blank; anything else on the line, trailing blanks included,
/// makes it a bad line, ignored), values expanded (`${VAR}` from `env` as
/// it stands, `@{ITEM}` from `items`, `\$` and `\@` literal, any other
/// backslash dropped); then a non-empty `OVERRIDE` sets the variable, else
/// a `DEFAULT` (empty when given as `""`), else it is unset.
pub fn conf_file(text: &str, env: &mut Vars, items: &Items<'_>) -> ConfRead {
    let mut read = ConfRead::default();
    for (number, line) in assembled(text) {
        let (name, default, over) = match conf_line(&line) {
            Ok(parsed) => parsed,
            Err(why) => {
                read.notes
                    .push(format!("line {number}: pam_env ignores it ({why})"));
                continue;
            }
        };
        let mut expand = |value: Option<ConfValue>| -> Result<Option<ConfValue>, String> {
            Ok(match value {
                Some(ConfValue::Text(text)) => Some(ConfValue::Text(conf_expand(
                    &text,
                    env,
                    items,
                    &mut read.notes,
                    number,
                )?)),
                other => other,
            })
        };
        let (default, over) = match (expand(default), expand(over)) {
            (Ok(default), Ok(over)) => (default, over),
            (Err(why), _) | (_, Err(why)) => {
                read.notes.push(format!(
                    "line {number}: {why}: pam_env stops reading there, reads no env file after it and fails the session"
                ));
                read.aborted = Some(number);
                return read;
            }
        };
        match (over, default) {
            (Some(ConfValue::Text(value)), _) if !value.is_empty() => vars::set(env, &name, &value),
            (_, Some(ConfValue::Text(value))) => vars::set(env, &name, &value),
            (_, Some(ConfValue::Empty)) => vars::set(env, &name, ""),
            (_, None) => vars::unset(env, &name),
        }
    }
    read
}

/// One conffile line (`_parse_line`): the name, `DEFAULT`, `OVERRIDE`.
type ConfLine = (String, Option<ConfValue>, Option<ConfValue>);

fn conf_line(line: &str) -> Result<ConfLine, String> {
    let end = line.find([' ', '\t', '\n']).unwrap_or(line.len());
    let name = line[..end].to_owned();
    let mut rest = &line[end..];
    let (mut default, mut over) = (None, None);
    // A count of the quoted values, as `_parse_line` keeps it: an empty
    // unquoted value after a quoted one is taken as "" too.
    let mut quoted = 0usize;
    loop {
        let after = rest.trim_start_matches([' ', '\t']);
        if after.len() == rest.len() {
            break;
        }
        rest = after;
        let slot = if let Some(value) = rest.strip_prefix("DEFAULT=") {
            rest = value;
            &mut default
        } else if let Some(value) = rest.strip_prefix("OVERRIDE=") {
            rest = value;
            &mut over
        } else {
            let shown = rest.trim_end_matches('\n');
            return Err(if shown.is_empty() {
                "blanks at its end, which pam_env reads as an unrecognized option".to_owned()
            } else {
                format!("an unrecognized option: {shown}")
            });
        };
        let value = if let Some(inner) = rest.strip_prefix('"') {
            let close = inner
                .find('"')
                .ok_or_else(|| format!("an unterminated quoted string: \"{}", inner.trim_end()))?;
            let after = &inner[close + 1..];
            if !after.is_empty() && !after.starts_with([' ', '\t', '\n']) {
                return Err("quotes that do not cover the entire value".to_owned());
            }
            quoted += 1;
            rest = after;
            &inner[..close]
        } else {
            let end = rest.find([' ', '\t', '\n']).unwrap_or(rest.len());
            let value = &rest[..end];
            rest = &rest[end..];
            value
        };
        if !value.is_empty() {
            *slot = Some(ConfValue::Text(value.to_owned()));
        } else if quoted > 0 {
            quoted -= 1;
            *slot = Some(ConfValue::Empty);
        }
    }
    Ok((name, default, over))
}

/// A conffile value expanded (`_expand_arg`); `Err` for an unterminated
/// `${` or `@{`.
fn conf_expand(
    value: &str,
    env: &Vars,
    items: &Items<'_>,
    notes: &mut Vec<String>,
    number: usize,
) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            '\\' => {
                if let Some(next @ ('$' | '@')) = rest.chars().next() {
                    out.push(next);
                    rest = &rest[1..];
                }
            }
            '$' | '@' if rest.starts_with('{') => {
                let Some(close) = rest.find('}') else {
                    return Err(format!("an unterminated {c}{{ in {value:?}"));
                };
                let name = &rest[1..close];
                rest = &rest[close + 1..];
                if c == '$' {
                    out.push_str(vars::get(env, name).unwrap_or_default());
                    continue;
                }
                match name {
                    "PAM_USER" => out.push_str(items.user),
                    "HOME" => out.push_str(items.home),
                    "SHELL" => out.push_str(items.shell),
                    _ => notes.push(format!(
                        "line {number}: @{{{name}}} is a PAM item doctor does not know in cron's session: taken as empty"
                    )),
                }
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Applies a `pam_env` env file (`/etc/environment`) to `env`.
pub fn env_file(text: &str, env: &mut Vars) {
    for (_, line) in assembled(text) {
        let line = line.trim_start_matches([' ', '\n', '\t']);
        let line = line.strip_prefix("export ").unwrap_or(line);
        let line = line.split(['\n', '#']).next().unwrap_or_default();
        if line.is_empty() || line.starts_with('=') {
            continue;
        }
        let (name, value) = match line.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (line, None),
        };
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        match value {
            None => vars::unset(env, name),
            Some(value) => vars::set(env, name, &unquoted(value)),
        }
    }
}

/// A value as `pam_env` unquotes it: when it begins with a quote, that
/// quote is dropped, and so is any quote that is the last character.
fn unquoted(value: &str) -> String {
    let is_quote = |c: char| c == '"' || c == '\'';
    let Some(rest) = value.strip_prefix(is_quote) else {
        return value.to_owned();
    };
    let chars: Vec<char> = rest.chars().collect();
    chars
        .iter()
        .enumerate()
        .filter(|&(index, &c)| !(is_quote(c) && index + 1 == chars.len()))
        .map(|(_, &c)| c)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debians_pam_d_cron() {
        let text = "# The PAM configuration file for the cron daemon\n\
                    \n\
                    @include common-auth\n\
                    session    required     pam_loginuid.so\n\
                    session       required   pam_env.so\n\
                    session       required   pam_env.so envfile=/etc/default/locale\n\
                    @include common-account\n\
                    @include common-session-noninteractive \n\
                    session [success=1 default=ignore] pam_succeed_if.so service in cron quiet use_uid\n\
                    -session optional /lib/x86_64-linux-gnu/security/pam_env.so readenv=0 # off\n\
                    account required pam_env.so envfile=/not-read\n\
                    # session required pam_env.so envfile=/commented\n\
                    auth [default=ignore] pam_env.so conffile=/c envfile=/e readenv=1 user_readenv=1\n";
        let default = |envfile: Option<&str>| Step::PamEnv {
            conffile: DEFAULT_CONFFILE.into(),
            envfile: envfile.map(String::from),
            user_env: false,
        };
        assert_eq!(
            steps(text),
            [
                Step::Include("common-auth".into()),
                default(Some("/etc/environment")),
                default(Some("/etc/default/locale")),
                Step::Include("common-account".into()),
                Step::Include("common-session-noninteractive".into()),
                default(None),
                Step::PamEnv {
                    conffile: "/c".into(),
                    envfile: Some("/e".into()),
                    user_env: true,
                },
            ]
        );
    }

    #[test]
    fn a_conffile_as_pam_env_reads_it() {
        let items = Items {
            user: "alice",
            home: "/home/alice",
            shell: "/bin/bash",
        };
        // GONE and KEEP are set before; a line with no non-empty value
        // unsets its variable.
        let mut env = pairs(&[("LANG", "C"), ("GONE", "x"), ("KEEP", "k")]);
        let text = "# pam_env.conf\n\
                    RCH_STATE_HOME DEFAULT=@{HOME}/.state\n\
                    OWN DEFAULT=${RCH_STATE_HOME}/own OVERRIDE=${UNSET}\n\
                    WINS DEFAULT=d OVERRIDE=\"o ${LANG}\"\n\
                    EMPTY DEFAULT=\"\"\n\
                    GONE\n\
                    ALSO_GONE DEFAULT=\n\
                    LIT DEFAULT=\\${LANG}\\x$LANG@{PAM_USER}@{SHELL}\n\
                    TTY DEFAULT=t@{PAM_TTY}\n\
                    TRAILING DEFAULT=x \n\
                    ODD DEFAULT=x OTHER=y\n\
                    OPEN DEFAULT=\"x\n\
                    HALF DEFAULT=\"x\"y\n\
                    JOINED DEFAULT=a\\\n\
                    b\n\
                    COMMENT DEFAULT=c # ends here\n\
                    KEEP OVERRIDE=\n";
        let read = conf_file(text, &mut env, &items);
        assert_eq!(
            env,
            pairs(&[
                ("LANG", "C"),
                ("RCH_STATE_HOME", "/home/alice/.state"),
                ("OWN", "/home/alice/.state/own"),
                ("WINS", "o C"),
                ("EMPTY", ""),
                ("LIT", "${LANG}x$LANGalice/bin/bash"),
                ("TTY", "t"),
                ("JOINED", "ab"),
            ])
        );
        assert_eq!(read.aborted, None);
        let notes = read.notes.join("\n");
        for said in [
            "line 9: @{PAM_TTY} is a PAM item doctor does not know",
            "line 10: pam_env ignores it (blanks at its end",
            "line 11: pam_env ignores it (an unrecognized option: OTHER=y)",
            "line 12: pam_env ignores it (an unterminated quoted string",
            "line 13: pam_env ignores it (quotes that do not cover the entire value)",
            "line 16: pam_env ignores it (blanks at its end",
        ] {
            assert!(notes.contains(said), "{said} not in {notes}");
        }
        // An unterminated ${ ends the reading: what came before stays.
        let mut env = Vars::new();
        let read = conf_file(
            "A DEFAULT=1\nB DEFAULT=${OPEN\nC DEFAULT=3\n",
            &mut env,
            &items,
        );
        assert_eq!(env, pairs(&[("A", "1")]));
        assert_eq!(read.aborted, Some(2));
    }

    fn applied(text: &str) -> Vars {
        let mut env = vec![("GONE".to_owned(), "x".to_owned())];
        env_file(text, &mut env);
        env
    }

    fn pairs(list: &[(&str, &str)]) -> Vars {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn an_env_file_as_pam_env_reads_it() {
        let text = "# comment\n\
                    \n\
                    RCH_STATE_HOME=/srv/state\n\
                    \texport LANG=C.UTF-8\n\
                    A=\"b c\"\n\
                    B='b'\n\
                    C=\"in\"side\"\n\
                    D=x # a comment ends it, blanks kept\n\
                    E=\"no#hash\"\n\
                    Q=\"q\" # after the closing quote: a blank, so it stays\n\
                    F=$HOME/x\n\
                    bad-key=1\n\
                    =nothing\n\
                    GONE\n\
                    NEVER\n\
                    G=one\\\n\
                    two\n\
                    H=\n";
        assert_eq!(
            applied(text),
            pairs(&[
                ("RCH_STATE_HOME", "/srv/state"),
                ("LANG", "C.UTF-8"),
                ("A", "b c"),
                ("B", "b"),
                ("C", "in\"side"),
                ("D", "x "),
                ("E", "no"),
                ("Q", "q\" "),
                ("F", "$HOME/x"),
                ("G", "onetwo"),
                ("H", ""),
            ])
        );
        // Set again: the later value, in the first place.
        assert_eq!(
            applied("A=1\nB=2\nA=3\n"),
            pairs(&[("GONE", "x"), ("A", "3"), ("B", "2")])
        );
    }
}

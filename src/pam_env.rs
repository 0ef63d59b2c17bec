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
//! where its `conffile` is); [`env_file`] applies one env file as
//! Linux-PAM 1.5.2's `_parse_env_file` does: `#` ends the line wherever it
//! stands, a trailing `\` joins the next line, `export ` is skipped, a key
//! of letters, digits and `_` only, a leading quote dropped along with
//! every quote that ends the value, a bare `NAME` unsets it, nothing
//! expanded. Pure: the files are read elsewhere.

use crate::vars::{self, Vars};

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

/// The logical lines of a `pam_env` file (`_assemble_line`): blank and
/// comment lines skipped, everything from a `#` dropped, a line whose end
/// (before blanks) is `\` joined with the next.
fn assembled(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for raw in text.split_inclusive('\n') {
        let line = raw.trim_start_matches([' ', '\n', '\t']);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let part = current.get_or_insert_with(String::new);
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

/// Applies a `pam_env` env file (`/etc/environment`) to `env`.
pub fn env_file(text: &str, env: &mut Vars) {
    for line in assembled(text) {
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

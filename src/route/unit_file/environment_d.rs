//! The user manager's own environment from `environment.d`, as
//! environment.d(5) and systemd 252's `systemd-environment-d-generator`
//! make it: the `*.conf` files of `~/.config/environment.d`,
//! `/etc/environment.d`, `/run/environment.d`,
//! `/usr/local/lib/environment.d` and `/usr/lib/environment.d` (first
//! first), a file name found in several folders taken only from the
//! first, all read in the order of their file names whatever folder holds
//! them (Debian links `/etc/environment` in as
//! `/usr/lib/environment.d/99-environment.conf`). Each file is an
//! environment file; a value may use `$NAME`, `${NAME}`,
//! `${NAME:-default}` and `${NAME:+alternative}` of what is set so far
//! (the manager's own variables included); an empty value or a name that
//! cannot be a variable is ignored (`merge_env_file`). Every unit of the
//! user manager starts with these variables, under what systemd sets from
//! the account.

use super::syntax;
use crate::route::vars::{self, Vars};
use std::path::{Path, PathBuf};

/// The folders, first first, for the user whose configuration folder is
/// `config_home` (`~/.config`).
pub fn folders(config_home: &Path) -> Vec<PathBuf> {
    std::iter::once(config_home.join("environment.d"))
        .chain(
            [
                "/etc/environment.d",
                "/run/environment.d",
                "/usr/local/lib/environment.d",
                "/usr/lib/environment.d",
            ]
            .iter()
            .map(PathBuf::from),
        )
        .collect()
}

/// The files read, in order: `list` names the entries of a folder.
pub fn files(folders: &[PathBuf], list: &dyn Fn(&Path) -> Vec<String>) -> Vec<PathBuf> {
    let mut chosen: Vec<(String, PathBuf)> = Vec::new();
    for folder in folders {
        for name in list(folder) {
            if name.ends_with(".conf") && !chosen.iter().any(|(seen, _)| *seen == name) {
                chosen.push((name.clone(), folder.join(name)));
            }
        }
    }
    chosen.sort_by(|a, b| a.0.cmp(&b.0));
    chosen.into_iter().map(|(_, path)| path).collect()
}

/// `env` with one file's assignments laid over it, as systemd `version`
/// reads the file; the notes on the lines it drops (see
/// [`syntax::EnvFile::notes`]).
pub fn apply(env: &mut Vars, text: &str, version: u32) -> Vec<String> {
    let read = syntax::read_environment_file(text, version);
    for syntax::Assignment { key, value, .. } in &read.assignments {
        if value.is_empty() || !syntax::is_var_name(key) {
            continue;
        }
        let value = expand(value, env);
        vars::set(env, key, &value);
    }
    read.notes()
}

/// `$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME:+alternative}` and
/// `$$` in `value` (systemd's `replace_env` with braceless and extended
/// forms); an unset variable is empty.
pub fn expand(value: &str, env: &Vars) -> String {
    let chars: Vec<char> = value.chars().collect();
    let get = |name: &str| vars::get(env, name).unwrap_or_default().to_owned();
    let mut out = String::with_capacity(value.len());
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        at += 1;
        if c != '$' {
            out.push(c);
            continue;
        }
        match chars.get(at) {
            Some('$') => {
                out.push('$');
                at += 1;
            }
            Some('{') => {
                let Some(close) = chars[at..].iter().position(|&c| c == '}') else {
                    out.extend(&chars[at - 1..]);
                    break;
                };
                let inside: String = chars[at + 1..at + close].iter().collect();
                at += close + 1;
                out.push_str(&if let Some((name, default)) = inside.split_once(":-") {
                    Some(get(name))
                        .filter(|v| !v.is_empty())
                        .unwrap_or_else(|| default.to_owned())
                } else if let Some((name, alternative)) = inside.split_once(":+") {
                    if get(name).is_empty() {
                        String::new()
                    } else {
                        alternative.to_owned()
                    }
                } else {
                    get(&inside)
                });
            }
            Some(&first) if first == '_' || first.is_ascii_alphabetic() => {
                let len = chars[at..]
                    .iter()
                    .take_while(|c| **c == '_' || c.is_ascii_alphanumeric())
                    .count();
                let name: String = chars[at..at + len].iter().collect();
                at += len;
                out.push_str(&get(&name));
            }
            _ => out.push('$'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vars {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_folders_and_files_in_systemds_order() {
        let dirs = folders(Path::new("/home/a/.config"));
        assert_eq!(
            dirs,
            [
                "/home/a/.config/environment.d",
                "/etc/environment.d",
                "/run/environment.d",
                "/usr/local/lib/environment.d",
                "/usr/lib/environment.d"
            ]
            .map(PathBuf::from)
        );
        let list = |dir: &Path| -> Vec<String> {
            let names: &[&str] = match dir.to_str().unwrap_or_default() {
                "/home/a/.config/environment.d" => &["50-rch.conf", "notes.txt"],
                "/etc/environment.d" => &["90qt-a11y.conf", "50-rch.conf", "10-path.conf"],
                "/usr/lib/environment.d" => &["99-environment.conf", "10-path.conf"],
                _ => &[],
            };
            names.iter().map(|n| (*n).to_owned()).collect()
        };
        let found: Vec<String> = files(&dirs, &list)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            found,
            [
                "/etc/environment.d/10-path.conf",
                "/home/a/.config/environment.d/50-rch.conf",
                "/etc/environment.d/90qt-a11y.conf",
                "/usr/lib/environment.d/99-environment.conf",
            ]
        );
    }

    #[test]
    fn values_expand_what_is_set_so_far() {
        let mut env = pairs(&[("HOME", "/home/a"), ("PATH", "/usr/bin:/bin")]);
        apply(
            &mut env,
            "# state\nXDG_STATE_HOME=$HOME/.state\nRCH_STATE_HOME=${XDG_STATE_HOME}/rch\n\
             PATH=$HOME/bin:${PATH}\nEMPTY=\nA=${UNSET:-d} ${HOME:+alt} $$ $1 ${UNSET}x\n1BAD=x\n",
            252,
        );
        assert_eq!(vars::get(&env, "XDG_STATE_HOME"), Some("/home/a/.state"));
        assert_eq!(
            vars::get(&env, "RCH_STATE_HOME"),
            Some("/home/a/.state/rch")
        );
        assert_eq!(vars::get(&env, "PATH"), Some("/home/a/bin:/usr/bin:/bin"));
        assert_eq!(vars::get(&env, "EMPTY"), None);
        assert_eq!(vars::get(&env, "A"), Some("d alt $ $1 x"));
        assert_eq!(vars::get(&env, "1BAD"), None);
        // A later file overrides an earlier one.
        apply(&mut env, "XDG_STATE_HOME=/srv/state\n", 252);
        assert_eq!(vars::get(&env, "XDG_STATE_HOME"), Some("/srv/state"));
    }
}

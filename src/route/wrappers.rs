//! The programs crontab lines start rch-sweep through, followed to the
//! rch-sweep they start.
//!
//! A crontab line rarely runs rch-sweep bare: `flock -n /tmp/l timeout 20m
//! nice rch-sweep --quiet` is the common shape. Each of these wrappers
//! reads its own options (GNU `getopt` in "stop at the first operand"
//! mode for all but `env`'s assignments), then `execvp`s the rest of its
//! arguments with the environment it was given (`env` changes it first:
//! `-i` empties it, `-u NAME` removes NAME, `NAME=VALUE` sets it; `-C DIR`
//! changes the working directory). [`follow`] walks that chain over plain
//! words, as the programs in Debian 12 read them (coreutils 9.1:
//! `timeout`, `nice`, `env`; util-linux 2.38: `flock`, `ionice`;
//! moreutils: `chronic`), and gives the rch-sweep at its end: its
//! arguments, environment and working directory, and every program that
//! must be found on the way (each on the `PATH` of its moment). What a
//! shell runs (cron's `$SHELL -c LINE`, `sh -c`, `bash -c`, `flock -c`) is
//! read by [`follow_line`]: `cd DIR &&` before the command (the folder the
//! rest starts in, which must exist), `exec` before it, then the command.
//! Anything it cannot be sure of (an option it does not know, `env -S`, a
//! wrapper that runs nothing) is an `Err` naming it: doctor then says it
//! cannot follow the line rather than guess. Pure: no program runs, no
//! folder is looked at.

use crate::route::shell_words;
use crate::route::vars::{self, Vars};

/// The `PATH` glibc's `execvp` searches when the environment has none
/// (after `env -i`): `confstr(_CS_PATH)`.
pub const EXECVP_DEFAULT_PATH: &str = "/bin:/usr/bin";

/// How many wrappers deep doctor follows a line.
const MAX_DEPTH: usize = 16;

/// A program that must be found for the line to run: its name as written,
/// the `PATH` it is looked up on (`None`: the environment has none) and
/// the folder it is started from (where a relative name or `PATH` entry
/// leads).
#[derive(Debug, PartialEq, Eq)]
pub struct Lookup {
    pub program: String,
    pub path: Option<String>,
    pub cwd: String,
}

/// The rch-sweep a line starts, at the end of its wrappers.
#[derive(Debug, PartialEq, Eq)]
pub struct Started {
    /// The program as the line names it (`rch-sweep`, `/usr/bin/rch-sweep`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The environment it gets.
    pub env: Vars,
    /// The folder it starts in.
    pub cwd: String,
    /// The wrappers on the way, outermost first (`flock`, `timeout`).
    pub through: Vec<String>,
    /// Every program that must be found, in the order they start.
    pub lookups: Vec<Lookup>,
    /// Every folder a `cd DIR &&` must enter, in order (absolute): one
    /// that is not there ends the line before rch-sweep starts.
    pub folders: Vec<String>,
}

/// Follows a command line as a shell started in `env` and `cwd` runs it
/// (`sh -c LINE`): `cd DIR &&` before the command, `exec`, and the command
/// through its wrappers to rch-sweep.
pub fn follow_line(line: &str, env: &Vars, cwd: &str) -> Result<Started, String> {
    let mut started = Started {
        program: String::new(),
        args: Vec::new(),
        env: env.clone(),
        cwd: cwd.to_owned(),
        through: Vec::new(),
        lookups: Vec::new(),
        folders: Vec::new(),
    };
    shell_line(line, &mut started, 0)?;
    Ok(started)
}

/// Why `shell` (a shell's path or name, as `SHELL` or a line names it) may
/// not run a command line as doctor reads it, if it may not: doctor reads
/// what `sh`, `dash` and `bash` run with `-c`, and `bash` reads
/// `$BASH_ENV` before the line, which doctor does not.
pub fn unread_shell(shell: &str, env: &Vars) -> Option<String> {
    match base(shell) {
        "sh" | "dash" => None,
        "bash" => vars::get(env, "BASH_ENV")
            .filter(|file| !file.is_empty())
            .map(|file| {
                format!("{shell} reads BASH_ENV={file} before the command, which doctor does not")
            }),
        _ => Some(format!("{shell} is a shell doctor does not read")),
    }
}

/// The simple commands of a shell's command line, from `text`, in the
/// environment and folder of `at`: `cd DIR &&` (as often as written),
/// then the command.
fn shell_line(text: &str, at: &mut Started, depth: usize) -> Result<(), String> {
    let mut rest = text;
    loop {
        let env = at.env.clone();
        let lookup = |name: &str| vars::get(&env, name).map(str::to_owned);
        let (command, after) = shell_words::split_first(rest, &lookup)?;
        let Some(after) = after else {
            for (name, value) in &command.assignments {
                vars::set(&mut at.env, name, value);
            }
            return shell_command(command.words, at, depth);
        };
        change_folder(&command, at)?;
        rest = after;
    }
}

/// A command before `&&`: only `cd DIR` is followed (the folder the rest
/// starts in). Relative folders are taken from the folder of the moment
/// (`CDPATH` set: not followed), no folder is `HOME`, `-` is refused.
fn change_folder(command: &shell_words::SimpleCommand, at: &mut Started) -> Result<(), String> {
    let words = &command.words;
    if words.first().map(String::as_str) != Some("cd") || !command.assignments.is_empty() {
        let what = words
            .first()
            .map_or("only variable assignments", String::as_str);
        return Err(format!(
            "a command list (&&) that runs {what} first (doctor follows only `cd DIR &&` before rch-sweep)"
        ));
    }
    let operands: Vec<&String> = words[1..]
        .iter()
        .skip_while(|word| matches!(word.as_str(), "-L" | "-P"))
        .collect();
    let operands = match operands.split_first() {
        Some((first, rest)) if first.as_str() == "--" => rest.to_vec(),
        _ => operands,
    };
    let dir = match operands.as_slice() {
        [] => vars::get(&at.env, "HOME")
            .filter(|home| !home.is_empty())
            .ok_or("cd with no folder and no HOME")?
            .to_owned(),
        [dir] if dir.as_str() == "-" => {
            return Err("cd - (the folder before, which doctor does not know)".to_owned());
        }
        [dir] if dir.starts_with('-') => {
            return Err(format!("cd {dir}, an option doctor does not know"));
        }
        [dir] => (*dir).clone(),
        _ => return Err("cd with more than one folder (sh refuses it)".to_owned()),
    };
    let relative = !dir.starts_with('/');
    let cdpath = vars::get(&at.env, "CDPATH").is_some_and(|p| !p.is_empty());
    if relative && cdpath && !dir.starts_with("./") && !dir.starts_with("../") {
        return Err(format!(
            "cd {dir} with CDPATH set (the folder depends on CDPATH's folders)"
        ));
    }
    let dir = if relative {
        format!("{}/{dir}", at.cwd.trim_end_matches('/'))
    } else {
        dir
    };
    at.folders.push(dir.clone());
    at.cwd = dir;
    Ok(())
}

/// The command of a shell's line: `exec` before it is the shell's own
/// (it replaces the shell with the command; the command is the same).
fn shell_command(words: Vec<String>, at: &mut Started, depth: usize) -> Result<(), String> {
    let Some(rest) = words.strip_prefix(&["exec".to_owned()]) else {
        return walk(words, at, depth);
    };
    let rest = match rest.split_first() {
        Some((first, after)) if first == "--" => after,
        Some((first, _)) if first.starts_with('-') => {
            return Err(format!(
                "exec {first}, an option of bash's exec doctor does not follow"
            ));
        }
        _ => rest,
    };
    if rest.is_empty() {
        return Err("exec with no command (it runs nothing)".to_owned());
    }
    walk(rest.to_vec(), at, depth + 1)
}

/// The file name of a program as written.
fn base(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn walk(words: Vec<String>, at: &mut Started, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("more than {MAX_DEPTH} wrappers deep"));
    }
    let Some((program, rest)) = words.split_first() else {
        return Err("no command, only variable assignments".to_owned());
    };
    at.lookups.push(Lookup {
        program: program.clone(),
        path: vars::get(&at.env, "PATH").map(str::to_owned),
        cwd: at.cwd.clone(),
    });
    let name = base(program);
    let rest = rest.to_vec();
    let next = match name {
        "rch-sweep" => {
            program.clone_into(&mut at.program);
            at.args = rest;
            return Ok(());
        }
        "timeout" => timeout(rest)?,
        "flock" => match flock(rest)? {
            Flock::Words(words) => words,
            Flock::Shell(text) => {
                at.through.push(name.to_owned());
                return flock_shell(&text, at, depth);
            }
        },
        "sh" | "dash" | "bash" => {
            let text = shell_c(program, &rest, &at.env)?;
            at.through.push(name.to_owned());
            return shell_line(&text, at, depth + 1);
        }
        "nice" => nice(rest)?,
        "ionice" => ionice(rest)?,
        "chronic" => chronic(rest)?,
        "env" => env(rest, at)?,
        _ => {
            return Err(format!(
                "it runs {program}, not rch-sweep (doctor follows rch-sweep itself, and through timeout, flock, nice, ionice, chronic, env, exec, sh -c and bash -c)"
            ));
        }
    };
    at.through.push(name.to_owned());
    walk(next, at, depth + 1)
}

/// `flock FILE -c TEXT`: TEXT run by `$SHELL -c` (cron's `SHELL=/bin/sh`
/// unless the crontab sets another), read as that shell reads it, in the
/// environment of this moment.
fn flock_shell(text: &str, at: &mut Started, depth: usize) -> Result<(), String> {
    let shell = vars::get(&at.env, "SHELL")
        .filter(|s| !s.is_empty())
        .unwrap_or("/bin/sh")
        .to_owned();
    if let Some(why) = unread_shell(&shell, &at.env) {
        return Err(format!(
            "flock -c runs its command with SHELL={shell}: {why}"
        ));
    }
    shell_line(text, at, depth + 1).map_err(|why| format!("flock -c: {why}"))
}

/// `sh -c TEXT [NAME [ARG]...]` (also `dash`, `bash`): the command line
/// TEXT. Options that only trace or stop on errors (`-e`, `-u`, `-x`,
/// `-v`, `-f`) may stand with `-c`; a login or interactive shell (`-l`,
/// `-i`) reads profile files doctor does not, and without `-c` the shell
/// reads a script.
fn shell_c(program: &str, words: &[String], env: &Vars) -> Result<String, String> {
    let name = base(program);
    if let Some(why) = unread_shell(program, env) {
        return Err(why);
    }
    let mut command = false;
    let mut rest = words.iter();
    let text = loop {
        let Some(word) = rest.next() else {
            return Err(if command {
                format!("{name} -c is given no command")
            } else {
                format!("{name} without -c runs a script, which doctor does not read")
            });
        };
        if word == "--" {
            continue;
        }
        let Some(letters) = word.strip_prefix(['-', '+']).filter(|l| !l.is_empty()) else {
            if command {
                break word.clone();
            }
            return Err(format!(
                "{name} {word} runs a script, which doctor does not read"
            ));
        };
        if let Some(other) = letters.chars().find(|c| !"ceuxvf".contains(*c)) {
            return Err(format!(
                "{name} -{other}, an option doctor does not follow (it follows -c with -e, -u, -x, -v and -f)"
            ));
        }
        command |= word.starts_with('-') && letters.contains('c');
    };
    Ok(text)
}

/// How a wrapper reads its options: GNU `getopt_long` with a leading `+`
/// (options end at the first operand or `--`), long options also by a
/// unique prefix.
struct Options {
    wrapper: &'static str,
    /// Short options without a value.
    flags: &'static str,
    /// Short options with a value.
    valued: &'static str,
    /// Long options without a value, and the short one each equals.
    long_flags: &'static [(&'static str, char)],
    /// Long options with a value, and the short one each equals.
    long_valued: &'static [(&'static str, char)],
}

/// The options read (each as its short letter, with its value), and the
/// words after them.
type Read = (Vec<(char, String)>, Vec<String>);

impl Options {
    fn read(&self, words: Vec<String>) -> Result<Read, String> {
        let mut seen = Vec::new();
        let mut words = words.into_iter().peekable();
        while let Some(word) = words.peek().cloned() {
            if word == "--" {
                words.next();
                break;
            }
            if let Some(long) = word.strip_prefix("--") {
                words.next();
                let (name, inline) = match long.split_once('=') {
                    Some((name, value)) => (name, Some(value.to_owned())),
                    None => (long, None),
                };
                let (letter, takes) = self.long(name)?;
                if takes {
                    let value = match inline {
                        Some(value) => value,
                        None => words
                            .next()
                            .ok_or_else(|| self.missing(&format!("--{name}")))?,
                    };
                    seen.push((letter, value));
                } else if inline.is_some() {
                    return Err(format!(
                        "{}: --{name} takes no value, so {} refuses {word}",
                        self.wrapper, self.wrapper
                    ));
                } else {
                    seen.push((letter, String::new()));
                }
                continue;
            }
            let Some(letters) = word.strip_prefix('-').filter(|l| !l.is_empty()) else {
                break;
            };
            words.next();
            for (index, letter) in letters.char_indices() {
                if self.flags.contains(letter) {
                    seen.push((letter, String::new()));
                } else if self.valued.contains(letter) {
                    let attached = &letters[index + letter.len_utf8()..];
                    let value = if attached.is_empty() {
                        words
                            .next()
                            .ok_or_else(|| self.missing(&format!("-{letter}")))?
                    } else {
                        attached.to_owned()
                    };
                    seen.push((letter, value));
                    break;
                } else {
                    return Err(self.unknown(&format!("-{letter}")));
                }
            }
        }
        Ok((seen, words.collect()))
    }

    /// A long option by its name or a unique prefix: its letter and
    /// whether it takes a value.
    fn long(&self, name: &str) -> Result<(char, bool), String> {
        let all = self
            .long_flags
            .iter()
            .map(|&(long, letter)| (long, letter, false))
            .chain(
                self.long_valued
                    .iter()
                    .map(|&(long, letter)| (long, letter, true)),
            );
        let matching: Vec<(&str, char, bool)> =
            all.filter(|(long, _, _)| long.starts_with(name)).collect();
        let exact = matching.iter().find(|(long, _, _)| *long == name);
        match (exact, matching.as_slice()) {
            (Some(&(_, letter, takes)), _) => Ok((letter, takes)),
            (None, [(_, letter, takes)]) if !name.is_empty() => Ok((*letter, *takes)),
            _ => Err(self.unknown(&format!("--{name}"))),
        }
    }

    fn unknown(&self, option: &str) -> String {
        format!(
            "{}: an option doctor does not know ({option}), so it cannot tell what follows it",
            self.wrapper
        )
    }

    fn missing(&self, option: &str) -> String {
        format!(
            "{}: {option} has no value ({} refuses the line)",
            self.wrapper, self.wrapper
        )
    }
}

/// Options after which a wrapper runs nothing: help and version.
fn runs_nothing(wrapper: &str, seen: &[(char, String)]) -> Result<(), String> {
    match seen.iter().find(|(letter, _)| matches!(letter, 'h' | 'V')) {
        Some(_) => Err(format!(
            "{wrapper} is given --help or --version, so it prints that and runs nothing"
        )),
        None => Ok(()),
    }
}

/// A wrapper with no command after its options.
fn no_command(wrapper: &str, words: &[String]) -> Result<(), String> {
    if words.is_empty() {
        return Err(format!("{wrapper} is given no command to run"));
    }
    Ok(())
}

/// `timeout [OPTION]... DURATION COMMAND...` (coreutils 9.1: `-f` and
/// `-p` are long options only there).
fn timeout(words: Vec<String>) -> Result<Vec<String>, String> {
    const OPTIONS: Options = Options {
        wrapper: "timeout",
        flags: "v",
        valued: "ks",
        long_flags: &[
            ("foreground", 'f'),
            ("preserve-status", 'p'),
            ("verbose", 'v'),
            ("help", 'h'),
            ("version", 'V'),
        ],
        long_valued: &[("kill-after", 'k'), ("signal", 's')],
    };
    let (seen, words) = OPTIONS.read(words)?;
    runs_nothing("timeout", &seen)?;
    let Some((duration, command)) = words.split_first() else {
        return Err("timeout is given no duration".to_owned());
    };
    if !is_duration(duration) {
        return Err(format!(
            "timeout: {duration} is no duration timeout takes (a number, then s, m, h or d): it exits 125"
        ));
    }
    no_command("timeout", command)?;
    Ok(command.to_vec())
}

/// A duration `timeout` takes: a number `strtod` reads whole, not
/// negative, optionally followed by one of `s`, `m`, `h`, `d`.
fn is_duration(text: &str) -> bool {
    let number = text.strip_suffix(['s', 'm', 'h', 'd']).unwrap_or(text);
    !number.starts_with(['+', '-']) && number.parse::<f64>().is_ok_and(|value| value >= 0.0)
}

/// What `flock` runs after its lock file.
enum Flock {
    Words(Vec<String>),
    /// `-c TEXT`: a shell command line.
    Shell(String),
}

/// `flock [OPTION]... FILE COMMAND...` or `flock [OPTION]... FILE -c
/// TEXT` (util-linux 2.38: `-c` only after FILE; before it, flock refuses
/// it as an unknown option).
fn flock(words: Vec<String>) -> Result<Flock, String> {
    const OPTIONS: Options = Options {
        wrapper: "flock",
        flags: "sxeunoFhV",
        valued: "wE",
        long_flags: &[
            ("shared", 's'),
            ("exclusive", 'x'),
            ("unlock", 'u'),
            ("nonblocking", 'n'),
            ("nonblock", 'n'),
            ("nb", 'n'),
            ("close", 'o'),
            ("no-fork", 'F'),
            ("verbose", 'v'),
            ("help", 'h'),
            ("version", 'V'),
        ],
        long_valued: &[("wait", 'w'), ("timeout", 'w'), ("conflict-exit-code", 'E')],
    };
    let (seen, words) = OPTIONS.read(words)?;
    runs_nothing("flock", &seen)?;
    let Some((file, command)) = words.split_first() else {
        return Err("flock is given no lock file".to_owned());
    };
    if command.is_empty() {
        return Err(if file.chars().all(|c| c.is_ascii_digit()) {
            format!("flock locks descriptor {file} and runs nothing")
        } else {
            format!("flock is given {file} and no command to run")
        });
    }
    match command.first().map(String::as_str) {
        Some("-c" | "--command") => match command {
            [_, text] => Ok(Flock::Shell(text.clone())),
            _ => Err(format!(
                "flock: {} takes exactly one command (flock refuses the line)",
                command[0]
            )),
        },
        _ => Ok(Flock::Words(command.to_vec())),
    }
}

/// `nice [-n N | --adjustment=N | -N] COMMAND...` (coreutils takes the
/// old `-N`, `--N` and `-+N` forms before any other option).
fn nice(mut words: Vec<String>) -> Result<Vec<String>, String> {
    const OPTIONS: Options = Options {
        wrapper: "nice",
        flags: "",
        valued: "n",
        long_flags: &[("help", 'h'), ("version", 'V')],
        long_valued: &[("adjustment", 'n')],
    };
    let legacy = |word: &str| {
        let digits = word
            .strip_prefix("--")
            .or_else(|| word.strip_prefix("-+"))
            .or_else(|| word.strip_prefix('-'))
            .unwrap_or_default();
        !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
    };
    if words.first().is_some_and(|w| legacy(w)) {
        words.remove(0);
    }
    let (seen, words) = OPTIONS.read(words)?;
    runs_nothing("nice", &seen)?;
    if words.is_empty() {
        return Err(
            "nice is given no command, so it prints the niceness and runs nothing".to_owned(),
        );
    }
    Ok(words)
}

/// `ionice [-c CLASS] [-n LEVEL] [-t] COMMAND...` (util-linux 2.38;
/// `-p`, `-P`, `-u` act on running processes and run nothing).
fn ionice(words: Vec<String>) -> Result<Vec<String>, String> {
    const OPTIONS: Options = Options {
        wrapper: "ionice",
        flags: "tpPuhV",
        valued: "cn",
        long_flags: &[
            ("ignore", 't'),
            ("pid", 'p'),
            ("pgid", 'P'),
            ("uid", 'u'),
            ("help", 'h'),
            ("version", 'V'),
        ],
        long_valued: &[("class", 'c'), ("classdata", 'n')],
    };
    let (seen, words) = OPTIONS.read(words)?;
    runs_nothing("ionice", &seen)?;
    if let Some((letter, _)) = seen.iter().find(|(l, _)| matches!(l, 'p' | 'P' | 'u')) {
        return Err(format!(
            "ionice -{letter} sets the I/O class of running processes and starts nothing"
        ));
    }
    if words.is_empty() {
        return Err(
            "ionice is given no command, so it prints the I/O class and runs nothing".to_owned(),
        );
    }
    Ok(words)
}

/// `chronic [-ev] COMMAND...` (moreutils: Perl's `getopts("ev")`).
fn chronic(words: Vec<String>) -> Result<Vec<String>, String> {
    const OPTIONS: Options = Options {
        wrapper: "chronic",
        flags: "ev",
        valued: "",
        long_flags: &[],
        long_valued: &[],
    };
    let (_, words) = OPTIONS.read(words)?;
    no_command("chronic", &words)?;
    Ok(words)
}

/// `env [OPTION]... [-] [NAME=VALUE]... COMMAND...` (coreutils 9.1): the
/// environment emptied (`-i`, `-`), then names removed (`-u`), then the
/// assignments set; `-C DIR` changes the working directory.
fn env(words: Vec<String>, at: &mut Started) -> Result<Vec<String>, String> {
    const OPTIONS: Options = Options {
        wrapper: "env",
        flags: "i0vhV",
        valued: "uCS",
        long_flags: &[
            ("ignore-environment", 'i'),
            ("null", '0'),
            ("debug", 'v'),
            ("help", 'h'),
            ("version", 'V'),
        ],
        long_valued: &[("unset", 'u'), ("chdir", 'C'), ("split-string", 'S')],
    };
    let (seen, mut words) = OPTIONS.read(words)?;
    runs_nothing("env", &seen)?;
    if seen.iter().any(|(letter, _)| *letter == 'S') {
        return Err("env -S splits its own command line, which doctor does not follow".to_owned());
    }
    let mut clear = seen.iter().any(|(letter, _)| *letter == 'i');
    if words.first().is_some_and(|w| w == "-") {
        words.remove(0);
        clear = true;
    }
    if clear {
        at.env.clear();
    }
    for (_, name) in seen.iter().filter(|(letter, _)| *letter == 'u') {
        vars::unset(&mut at.env, name);
    }
    let mut words = words.into_iter().peekable();
    while let Some((name, value)) = words.peek().and_then(|w| w.split_once('=')) {
        let (name, value) = (name.to_owned(), value.to_owned());
        words.next();
        vars::set(&mut at.env, &name, &value);
    }
    let words: Vec<String> = words.collect();
    if words.is_empty() {
        return Err(
            "env is given no command, so it prints the environment and runs nothing".to_owned(),
        );
    }
    if seen.iter().any(|(letter, _)| *letter == '0') {
        return Err("env refuses -0 with a command".to_owned());
    }
    if let Some((_, dir)) = seen.iter().rev().find(|(letter, _)| *letter == 'C') {
        at.cwd = if dir.starts_with('/') {
            dir.clone()
        } else {
            format!("{}/{dir}", at.cwd.trim_end_matches('/'))
        };
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cron_env() -> Vars {
        [
            ("HOME", "/home/alice"),
            ("LOGNAME", "alice"),
            ("SHELL", "/bin/sh"),
            ("PATH", "/usr/bin:/bin"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
    }

    fn line(command: &str) -> Result<Started, String> {
        follow_line(command, &cron_env(), "/home/alice")
    }

    fn args(command: &str) -> Vec<String> {
        match line(command) {
            Ok(started) => {
                let mut all = vec![started.program];
                all.extend(started.args);
                all
            }
            Err(why) => panic!("{command}: {why}"),
        }
    }

    fn refused(command: &str) -> String {
        line(command).expect_err(command)
    }

    #[test]
    fn real_world_lines_reach_rch_sweep() {
        for (command, expected) in [
            ("rch-sweep --quiet", &["rch-sweep", "--quiet"][..]),
            (
                "flock -n /tmp/rch-sweep.lock rch-sweep --quiet",
                &["rch-sweep", "--quiet"],
            ),
            (
                "/usr/bin/flock -xn /run/lock/rch.lock /usr/local/bin/rch-sweep",
                &["/usr/local/bin/rch-sweep"],
            ),
            (
                "flock -w 30 -E 0 /tmp/l rch-sweep --json",
                &["rch-sweep", "--json"],
            ),
            ("flock --wait=30 --nb /tmp/l rch-sweep", &["rch-sweep"]),
            ("flock -o -s /tmp/l rch-sweep", &["rch-sweep"]),
            ("flock -E75 /tmp/l rch-sweep", &["rch-sweep"]),
            ("timeout 20m rch-sweep --quiet", &["rch-sweep", "--quiet"]),
            (
                "timeout -k 30s -s INT 300 rch-sweep run --lease-dir /l",
                &["rch-sweep", "run", "--lease-dir", "/l"],
            ),
            (
                "timeout --foreground --kill-after=1m 1.5h rch-sweep",
                &["rch-sweep"],
            ),
            ("timeout .5d rch-sweep", &["rch-sweep"]),
            ("nice rch-sweep", &["rch-sweep"]),
            ("nice -n 10 rch-sweep -q", &["rch-sweep", "-q"]),
            ("nice -n10 rch-sweep", &["rch-sweep"]),
            ("nice -19 rch-sweep", &["rch-sweep"]),
            ("nice --adjustment=5 rch-sweep", &["rch-sweep"]),
            ("nice --adj 5 rch-sweep", &["rch-sweep"]),
            ("ionice -c3 rch-sweep", &["rch-sweep"]),
            ("ionice -c 2 -n 7 -t rch-sweep", &["rch-sweep"]),
            ("ionice --class idle rch-sweep", &["rch-sweep"]),
            ("chronic rch-sweep --quiet", &["rch-sweep", "--quiet"]),
            ("chronic -ev rch-sweep", &["rch-sweep"]),
            ("env rch-sweep", &["rch-sweep"]),
            (
                "flock -n /tmp/l timeout 300 nice -n 19 ionice -c3 chronic rch-sweep --quiet >/dev/null 2>&1",
                &["rch-sweep", "--quiet"],
            ),
            (
                "flock -n /tmp/l -c 'timeout 300 rch-sweep --lease-dir \"$HOME/l\"'",
                &["rch-sweep", "--lease-dir", "/home/alice/l"],
            ),
            (
                "flock /tmp/l --command \"rch-sweep -q\"",
                &["rch-sweep", "-q"],
            ),
            // flock stops at its file: what follows is the command's own.
            ("flock /tmp/l rch-sweep -n", &["rch-sweep", "-n"]),
            ("timeout -- 5 rch-sweep", &["rch-sweep"]),
        ] {
            assert_eq!(args(command), expected, "{command}");
        }
        let started = line("flock -n /tmp/l timeout 300 nice chronic rch-sweep").expect("followed");
        assert_eq!(started.through, ["flock", "timeout", "nice", "chronic"]);
        let names: Vec<&str> = started.lookups.iter().map(|l| l.program.as_str()).collect();
        assert_eq!(names, ["flock", "timeout", "nice", "chronic", "rch-sweep"]);
        assert!(
            started
                .lookups
                .iter()
                .all(|l| l.path.as_deref() == Some("/usr/bin:/bin"))
        );
    }

    #[test]
    fn the_environment_and_folder_each_wrapper_hands_on() {
        let started = line("A=1 env B=2 rch-sweep").expect("followed");
        assert_eq!(vars::get(&started.env, "A"), Some("1"));
        assert_eq!(vars::get(&started.env, "B"), Some("2"));
        assert_eq!(vars::get(&started.env, "HOME"), Some("/home/alice"));
        // -i empties it (before the assignments); PATH is then unset, and
        // execvp searches its own default.
        let started = line("RCH_SOCKET_PATH=/s env -i C=3 rch-sweep").expect("followed");
        assert_eq!(started.env, [("C".to_owned(), "3".to_owned())]);
        assert_eq!(started.lookups[1].path, None);
        let started = line("env - rch-sweep").expect("followed");
        assert!(started.env.is_empty());
        let started = line("env -u HOME -u LOGNAME rch-sweep").expect("followed");
        assert_eq!(vars::get(&started.env, "HOME"), None);
        assert_eq!(vars::get(&started.env, "LOGNAME"), None);
        assert_eq!(vars::get(&started.env, "PATH"), Some("/usr/bin:/bin"));
        // A PATH set on the way is the one the next program is found on.
        let started = line("env PATH=/opt/bin nice rch-sweep").expect("followed");
        assert_eq!(started.lookups[1].path.as_deref(), Some("/opt/bin"));
        assert_eq!(started.lookups[2].path.as_deref(), Some("/opt/bin"));
        // The working directory.
        assert_eq!(line("rch-sweep").expect("followed").cwd, "/home/alice");
        assert_eq!(line("env -C /srv rch-sweep").expect("followed").cwd, "/srv");
        assert_eq!(
            line("env --chdir=sub rch-sweep").expect("followed").cwd,
            "/home/alice/sub"
        );
        // flock -c: the shell's own assignments, expanded in the
        // environment of that moment.
        let started =
            line("env X=/x flock /tmp/l -c 'Y=$X/y rch-sweep --lease-dir $X'").expect("followed");
        assert_eq!(vars::get(&started.env, "Y"), Some("/x/y"));
        assert_eq!(started.args, ["--lease-dir", "/x"]);
    }

    #[test]
    fn what_doctor_cannot_be_sure_of_is_named() {
        for (command, why) in [
            ("backup.sh && rch-sweep", "&&"),
            (
                "/usr/local/bin/run-sweep",
                "it runs /usr/local/bin/run-sweep",
            ),
            ("sudo -u bob rch-sweep", "it runs sudo"),
            (
                "flock -c 'rch-sweep' /tmp/l",
                "flock: an option doctor does not know (-c)",
            ),
            ("flock /tmp/l -c rch-sweep extra", "exactly one command"),
            ("flock 9", "descriptor 9"),
            ("flock /tmp/l", "no command"),
            ("flock -w /tmp/l", "no lock file"),
            ("flock --frobnicate /tmp/l rch-sweep", "(--frobnicate)"),
            ("timeout rch-sweep", "rch-sweep is no duration"),
            ("timeout -p 5 rch-sweep", "(-p)"),
            ("timeout 5", "no command"),
            ("nice", "runs nothing"),
            ("nice -n", "-n has no value"),
            ("ionice -p 1 rch-sweep", "ionice -p"),
            ("ionice -c3", "runs nothing"),
            ("chronic -x rch-sweep", "(-x)"),
            ("env", "prints the environment"),
            ("env -S 'rch-sweep -q'", "env -S"),
            ("env -0 rch-sweep", "-0"),
            ("env --help rch-sweep", "--help"),
            ("nice FOO=1 rch-sweep", "it runs FOO=1"),
            ("flock /tmp/l -c 'rch-sweep | logger'", "flock -c: a pipe"),
            ("A=1", "no command"),
        ] {
            let said = refused(command);
            assert!(said.contains(why), "{command}: {said}");
        }
        // flock -c with a shell doctor does not read.
        let mut env = cron_env();
        vars::set(&mut env, "SHELL", "/usr/bin/fish");
        let said = follow_line("flock /l -c rch-sweep", &env, "/").expect_err("fish");
        assert!(said.contains("SHELL=/usr/bin/fish"), "{said}");
    }

    #[test]
    fn durations_as_timeout_takes_them() {
        for good in ["0", "5", "20m", "1.5h", ".5d", "10s", "3.", "1e3", "inf"] {
            assert!(is_duration(good), "{good}");
        }
        for bad in ["", "s", "5x", "-1", "1m30s", ".", "nan"] {
            assert!(!is_duration(bad), "{bad}");
        }
    }
}

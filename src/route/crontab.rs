//! A crontab as cron reads it: which lines run rch-sweep, with which
//! options, in which environment.
//!
//! `doctor --as cron` must check what the user's crontab really gives a
//! sweep, so the fix it prescribes (a variable line, an option on the line)
//! is what it sees next time. Debian's cron reads a user's crontab line by
//! line: a comment (`#` first), a blank line, a variable line (`NAME=value`,
//! blanks allowed around `=`, a value in single or double quotes taken
//! literally without them, nothing expanded) that sets its variable for the
//! job lines below it, or a job line (five time fields or an `@` keyword,
//! then the command). In the command an unescaped `%` ends it (what follows
//! becomes standard input) and `\%` is a `%`; the rest goes to
//! `/bin/sh -c`. [`read`] finds every job line that mentions rch-sweep and
//! says, for each, either the sweep it runs ([`Sweep`]: program, options,
//! environment, working directory) or why doctor cannot follow it. Plain
//! functions over the crontab's text; `crontab -l` is run elsewhere.

use crate::route::vars::{Vars as Env, get, set};
use crate::{route::shell_words, route::wrappers};

/// What one line of a crontab is.
#[derive(Debug, PartialEq, Eq)]
pub enum CronLine {
    /// Empty, or only blanks.
    Blank,
    /// `#` first (after blanks).
    Comment,
    /// `NAME=value`: set for the job lines below.
    Variable { name: String, value: String },
    /// When, and the command (as written, `%` and all).
    Job { schedule: String, command: String },
    /// Anything else (`crontab` refuses to install it).
    Unknown,
}

/// The `@` keywords cron takes instead of five time fields.
const KEYWORDS: [&str; 8] = [
    "reboot", "yearly", "annually", "monthly", "weekly", "daily", "midnight", "hourly",
];

/// A line without the carriage return a file saved on Windows ends it
/// with, and whether it had one. Debian's `crontab -l` prints that CR as
/// the two characters `\r`; a CR itself is taken too.
pub fn without_cr(line: &str) -> (&str, bool) {
    match line.strip_suffix('\r').or_else(|| line.strip_suffix("\\r")) {
        Some(line) => (line, true),
        None => (line, false),
    }
}

/// One line, without its newline and CR (see [`without_cr`]). cron reads
/// a CR as a blank in a variable line, but keeps it in a job line's
/// command, where the shell makes it part of the last word: [`read`]
/// puts it back there.
pub fn entry(line: &str) -> CronLine {
    let (line, _) = without_cr(line);
    let trimmed = line.trim_start_matches([' ', '\t']);
    if trimmed.trim().is_empty() {
        return CronLine::Blank;
    }
    if trimmed.starts_with('#') {
        return CronLine::Comment;
    }
    if let Some((name, value)) = variable(trimmed) {
        return CronLine::Variable { name, value };
    }
    match job(trimmed, false) {
        Some((schedule, _, command)) => CronLine::Job { schedule, command },
        None => CronLine::Unknown,
    }
}

/// A variable line, as Debian's cron (`load_env`) reads it: a name (quoted
/// or up to a blank or `=`), blanks, `=`, blanks, then a value: quoted
/// (taken as it stands between the quotes; only blanks may follow) or
/// unquoted (to the end of the line, trailing blanks dropped).
fn variable(line: &str) -> Option<(String, String)> {
    let (name, rest) = quoted_or_until(line, |c| c == '=' || c == ' ' || c == '\t')?;
    let rest = rest.trim_start_matches([' ', '\t']).strip_prefix('=')?;
    let rest = rest.trim_start_matches([' ', '\t']);
    let value = match rest.chars().next() {
        Some(quote @ ('\'' | '"')) => {
            let inner = &rest[1..];
            let end = inner.find(quote)?;
            if !inner[end + 1..].trim().is_empty() {
                return None;
            }
            inner[..end].to_owned()
        }
        _ => rest.trim_end().to_owned(),
    };
    if name.is_empty() {
        return None;
    }
    Some((name, value))
}

/// A quoted token (and what follows its closing quote), or the text up to
/// the first character `stop` accepts.
fn quoted_or_until(text: &str, stop: impl Fn(char) -> bool) -> Option<(String, &str)> {
    match text.chars().next() {
        Some(quote @ ('\'' | '"')) => {
            let inner = &text[1..];
            let end = inner.find(quote)?;
            Some((inner[..end].to_owned(), &inner[end + 1..]))
        }
        _ => {
            let end = text.find(stop).unwrap_or(text.len());
            Some((text[..end].to_owned(), &text[end..]))
        }
    }
}

/// Splits off the first blank-separated field.
fn field(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start_matches([' ', '\t']);
    if text.is_empty() {
        return None;
    }
    let end = text.find([' ', '\t']).unwrap_or(text.len());
    Some((&text[..end], &text[end..]))
}

/// A job line: its schedule, the user field when `with_user` (the system
/// crontab's form), and its command.
fn job(line: &str, with_user: bool) -> Option<(String, String, String)> {
    let (first, mut rest) = field(line)?;
    let schedule = if let Some(keyword) = first.strip_prefix('@') {
        if !KEYWORDS.contains(&keyword.to_ascii_lowercase().as_str()) {
            return None;
        }
        first.to_owned()
    } else {
        let mut fields = vec![first];
        for _ in 0..4 {
            let (next, after) = field(rest)?;
            fields.push(next);
            rest = after;
        }
        let time_field = |f: &&str| {
            f.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '*' | '/' | ',' | '-'))
        };
        if !fields.iter().all(time_field) {
            return None;
        }
        fields.join(" ")
    };
    let user = if with_user {
        let (user, after) = field(rest)?;
        rest = after;
        user.to_owned()
    } else {
        String::new()
    };
    let command = rest.trim_start_matches([' ', '\t']);
    if command.is_empty() {
        return None;
    }
    Some((schedule, user, command.to_owned()))
}

/// A job's command as cron splits it (Debian's cron 3.0pl1, `do_command`;
/// crontab(5)): the text up to the first unescaped `%` goes to the shell,
/// with `\%` made `%` (any other backslash stays for the shell); the text
/// after it, when there is one, is the command's standard input, each
/// further unescaped `%` made a newline and `\%` a `%`.
#[derive(Debug, PartialEq, Eq)]
pub struct CronCommand {
    pub command: String,
    pub input: Option<String>,
}

pub fn cron_command(command: &str) -> CronCommand {
    let mut out = String::with_capacity(command.len());
    let mut escaped = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        if escaped {
            if c == '%' {
                out.pop();
            }
            out.push(c);
            escaped = false;
            continue;
        }
        if c == '%' {
            return CronCommand {
                command: out,
                input: Some(standard_input(chars.as_str())),
            };
        }
        escaped = c == '\\';
        out.push(c);
    }
    CronCommand {
        command: out,
        input: None,
    }
}

/// What cron writes to the command's standard input: `%` a newline, `\%`
/// a `%`, every other backslash kept.
fn standard_input(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            if c != '%' {
                out.push('\\');
            }
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else {
            out.push(if c == '%' { '\n' } else { c });
        }
    }
    if escaped {
        out.push('\\');
    }
    out
}

/// What cron gives every job of an account before the crontab's own
/// lines: the account's passwd entry (`HOME`, `LOGNAME`) and what
/// `pam_env` set for cron's PAM session (`/etc/environment`,
/// `/etc/default/locale`, in the order read).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Base {
    pub name: String,
    pub home: String,
    pub pam: Env,
}

/// The environment Debian's cron (3.0pl1-162) gives a job: its entry's
/// environment is the crontab's variable lines above it, then `SHELL`,
/// `HOME` (the passwd entry's) and `PATH` for what those left unset, and
/// `LOGNAME` from the passwd entry whatever the crontab says (crontab(5):
/// it "may not be changed"); `build_env` then lays that over pam_env's
/// list, so cron's own settings win over `/etc/environment`'s.
pub fn job_env(base: &Base, above: &Env) -> Env {
    let mut own = above.clone();
    for (name, default) in [
        ("SHELL", "/bin/sh"),
        ("HOME", base.home.as_str()),
        ("PATH", crate::route::CRON_PATH),
    ] {
        if get(&own, name).is_none() {
            set(&mut own, name, default);
        }
    }
    set(&mut own, "LOGNAME", &base.name);
    let mut env = base.pam.clone();
    for (name, value) in &own {
        set(&mut env, name, value);
    }
    env
}

/// A job line that runs rch-sweep, followed to it.
#[derive(Debug, PartialEq, Eq)]
pub struct Sweep {
    /// The program as the line names it (`rch-sweep`, `/usr/bin/rch-sweep`).
    pub program: String,
    /// Its options (a leading `run` dropped).
    pub args: Vec<String>,
    /// The environment it gets: the line's, with what the command and its
    /// wrappers change.
    pub env: Env,
    /// Where it starts: the line's `HOME` (cron changes to it), unless
    /// `env -C` says otherwise.
    pub cwd: String,
    /// Every program that must be found for it to start.
    pub lookups: Vec<wrappers::Lookup>,
    /// Every folder a `cd DIR &&` of the line must enter.
    pub folders: Vec<String>,
    /// The standard input cron gives it (what follows a `%`), if any.
    pub input: Option<String>,
}

/// What doctor makes of a job line that mentions rch-sweep.
#[derive(Debug, PartialEq, Eq)]
pub enum Follow {
    Sweep(Sweep),
    /// Why doctor cannot check it as it runs.
    Cannot(String),
    /// Why it fails at every run, whatever the sweep would find.
    Fails(String),
}

/// A job line that mentions rch-sweep.
#[derive(Debug, PartialEq, Eq)]
pub struct Job {
    /// 1 for the first line of the crontab.
    pub number: usize,
    /// The line as `crontab -l` printed it (a CR as `\r`).
    pub text: String,
    /// It ends in a carriage return, which the command keeps.
    pub carriage_return: bool,
    pub follow: Follow,
}

/// What a crontab gives: every job line that mentions rch-sweep, and the
/// environment a job after its last line would get.
#[derive(Debug, PartialEq, Eq)]
pub struct Reading {
    pub jobs: Vec<Job>,
    pub last_env: Env,
}

/// The subcommands of rch-sweep that are not a sweep.
const NOT_A_SWEEP: [&str; 6] = [
    "status",
    "forget",
    "explain",
    "doctor",
    "completions",
    "help",
];

/// Reads a user's crontab (`crontab -l`'s output) as cron runs it for
/// `base`'s account.
pub fn read(text: &str, base: &Base) -> Reading {
    read_lines(text, base, None)
}

/// Reads a system crontab (`/etc/crontab`, `/etc/cron.d/*`: a user field
/// after the schedule): the lines run as `base`'s account, each in the
/// environment of the file's own variable lines above it.
pub fn read_system(text: &str, base: &Base) -> Reading {
    read_lines(text, base, Some(&base.name))
}

fn read_lines(text: &str, base: &Base, system_user: Option<&str>) -> Reading {
    let mut above = Env::new();
    let mut jobs = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        let (shown, carriage_return) = without_cr(line);
        let trimmed = shown.trim_start_matches([' ', '\t']);
        if trimmed.starts_with('#') {
            continue;
        }
        if let Some((name, value)) = variable(trimmed) {
            set(&mut above, &name, &value);
            continue;
        }
        let Some((_, user, mut command)) = job(trimmed, system_user.is_some()) else {
            continue;
        };
        if system_user.is_some_and(|wanted| wanted != user) || !command.contains("rch-sweep") {
            continue;
        }
        // cron keeps a CR in the command (see [`follow`]).
        if carriage_return {
            command.push('\r');
        }
        jobs.push(Job {
            number: index + 1,
            text: if carriage_return {
                format!("{shown}\\r")
            } else {
                shown.to_owned()
            },
            carriage_return,
            follow: follow(&command, &job_env(base, &above)),
        });
    }
    Reading {
        jobs,
        last_env: job_env(base, &above),
    }
}

/// The sweep a job line's command runs in `env`, or why doctor cannot
/// follow it, or why it fails.
///
/// cron hands the command up to its first unescaped `%` to `$SHELL -c`
/// (see [`cron_command`]); what it cuts off is standard input, which no
/// sweep reads. A `%` inside quotes cuts them too, so the shell then reads
/// an unterminated quote and the line fails at every run.
///
/// A carriage return at the end of a line (a crontab saved with Windows
/// line ends) is no line end to Debian's cron: `load_entry` reads the
/// command up to the newline, so the CR is its last character, and the
/// shell makes it part of the last word (`--quiet` arrives as
/// `--quiet\r`). Unless that word is a comment, the line then fails or
/// names another file at every run, so that is what doctor says, rather
/// than checking a sweep cron never starts (or showing clap's message
/// about an argument that looks like one it knows).
fn follow(command: &str, env: &Env) -> Follow {
    let CronCommand { command, input } = cron_command(command);
    let shell = get(env, "SHELL")
        .filter(|s| !s.is_empty())
        .unwrap_or("/bin/sh");
    if let Some(why) = wrappers::unread_shell(shell, env) {
        return Follow::Cannot(format!("cron runs the line with SHELL={shell}: {why}"));
    }
    let lookup = |name: &str| get(env, name).map(str::to_owned);
    if command.ends_with('\r') {
        match last_command(&command, &lookup) {
            Err(why) => {
                return Follow::Fails(format!(
                    "the line ends in a carriage return, which cron keeps in the command, and sh reads it as part of {why}; remove it (sed -i 's/\\r$//' FILE, then crontab FILE)"
                ));
            }
            Ok(last) => {
                if let Some(why) = carriage_return(&last) {
                    return Follow::Fails(why);
                }
            }
        }
    }
    let home = get(env, "HOME").unwrap_or("/").to_owned();
    let started = match wrappers::follow_line(&command, env, &home) {
        Ok(started) => started,
        Err(why) if input.is_some() && why.contains("unterminated") => {
            return Follow::Fails(format!(
                "cron ends the command at its first unescaped %, inside quotes, so sh reads {why} and runs nothing (exit 2); write \\% for a %"
            ));
        }
        Err(why) => return Follow::Cannot(why),
    };
    let mut args = started.args;
    if args.first().is_some_and(|first| first == "run") {
        args.remove(0);
    }
    if let Some(sub) = args
        .first()
        .filter(|first| NOT_A_SWEEP.contains(&first.as_str()))
    {
        return Follow::Cannot(format!("it runs `rch-sweep {sub}`, not a sweep"));
    }
    Follow::Sweep(Sweep {
        program: started.program,
        args,
        env: started.env,
        cwd: started.cwd,
        lookups: started.lookups,
        folders: started.folders,
        input,
    })
}

/// The last simple command of a command line (after its `&&`s), each
/// split in `env`: where a carriage return at the line's end lands.
fn last_command(
    command: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<shell_words::SimpleCommand, String> {
    let mut rest = command;
    loop {
        match shell_words::split_first(rest, env)? {
            (last, None) => return Ok(last),
            (_, Some(after)) => rest = after,
        }
    }
}

/// What a carriage return kept in a word of the command does, if one is.
fn carriage_return(split: &shell_words::SimpleCommand) -> Option<String> {
    let files = split.redirections.iter().filter_map(|r| match r {
        shell_words::Redirection::ToFile { file, .. } => Some(file),
        _ => None,
    });
    let (word, what) = split
        .words
        .iter()
        .enumerate()
        .map(|(index, word)| {
            let what = if index == 0 {
                "sh finds no program of that name (exit 127)"
            } else if word.starts_with('-') {
                "rch-sweep refuses an argument it does not know (exit 2)"
            } else {
                "the program gets that word with the CR in it (another file, folder or command than meant)"
            };
            (word, what)
        })
        .chain(split.assignments.iter().map(|(_, value)| {
            (value, "the variable's value ends in that CR")
        }))
        .chain(files.map(|file| (file, "the output goes to a file whose name ends in that CR")))
        .find(|(word, _)| word.contains('\r'))?;
    Some(format!(
        "the line ends in a carriage return (the crontab was saved with Windows line ends), which cron keeps in the command: the word {} ends in it, so {what}; remove it (sed -i 's/\\r$//' FILE, then crontab FILE)",
        word.escape_debug()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Env {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn defaults() -> Base {
        Base {
            name: "alice".into(),
            home: "/home/alice".into(),
            pam: Env::new(),
        }
    }

    fn var(name: &str, value: &str) -> CronLine {
        CronLine::Variable {
            name: name.to_owned(),
            value: value.to_owned(),
        }
    }

    #[test]
    fn each_kind_of_line() {
        assert_eq!(entry(""), CronLine::Blank);
        assert_eq!(entry(" \t\r"), CronLine::Blank);
        assert_eq!(entry("  # */5 * * * * rch-sweep"), CronLine::Comment);
        assert_eq!(entry("A=b"), var("A", "b"));
        assert_eq!(entry("  A  =  b c  "), var("A", "b c"));
        assert_eq!(entry("A='b c' "), var("A", "b c"));
        assert_eq!(entry("A=\"$HOME/x\""), var("A", "$HOME/x"));
        assert_eq!(entry("A=~/x"), var("A", "~/x"));
        assert_eq!(entry("A=b\r"), var("A", "b"));
        assert_eq!(entry("A='b'\\r"), var("A", "b"));
        assert_eq!(entry("A="), var("A", ""));
        assert_eq!(entry("A=\"\""), var("A", ""));
        assert_eq!(entry("A=b 'c'"), var("A", "b 'c'"));
        // Something after a closing quote: not a variable line, and not a
        // job line either.
        assert_eq!(entry("A=\"b\" c"), CronLine::Unknown);
        assert_eq!(
            entry("*/5 * * * * rch-sweep --quiet"),
            CronLine::Job {
                schedule: "*/5 * * * *".into(),
                command: "rch-sweep --quiet".into()
            }
        );
        assert_eq!(
            entry("0\t4 1-7 jan,feb mon   X=1 rch-sweep\r"),
            CronLine::Job {
                schedule: "0 4 1-7 jan,feb mon".into(),
                command: "X=1 rch-sweep".into()
            }
        );
        assert_eq!(
            entry("@hourly  rch-sweep"),
            CronLine::Job {
                schedule: "@hourly".into(),
                command: "rch-sweep".into()
            }
        );
        assert!(matches!(entry("@reboot rch-sweep"), CronLine::Job { .. }));
        assert_eq!(entry("@often rch-sweep"), CronLine::Unknown);
        assert_eq!(entry("* * * * rch-sweep"), CronLine::Unknown);
        assert_eq!(entry("* * * * *"), CronLine::Unknown);
    }

    #[test]
    fn percent_signs_as_cron_reads_them() {
        let whole = |command: &str| CronCommand {
            command: command.to_owned(),
            input: None,
        };
        let cut = |command: &str, input: &str| CronCommand {
            command: command.to_owned(),
            input: Some(input.to_owned()),
        };
        assert_eq!(cron_command("a \\% b"), whole("a % b"));
        assert_eq!(cron_command("a \\\\ b"), whole("a \\\\ b"));
        assert_eq!(cron_command("a \\x"), whole("a \\x"));
        // The first unescaped % ends the command; the rest is standard
        // input, each later % a newline, \% a %, other backslashes kept.
        assert_eq!(cron_command("date +%s"), cut("date +", "s"));
        assert_eq!(
            cron_command("mail -s hi x%line 1%line \\%2\\n\\"),
            cut("mail -s hi x", "line 1\nline %2\\n\\")
        );
        assert_eq!(cron_command("rch-sweep%"), cut("rch-sweep", ""));
        // Quotes do not protect it: cron splits before the shell reads.
        assert_eq!(cron_command("date '+%s'"), cut("date '+", "s'"));
        assert_eq!(cron_command("a \\\\%b"), cut("a \\\\", "b"));
    }

    fn sweep(job: &Job) -> &Sweep {
        match &job.follow {
            Follow::Sweep(sweep) => sweep,
            Follow::Cannot(why) | Follow::Fails(why) => {
                panic!("line {} not followed: {why}", job.number)
            }
        }
    }

    #[test]
    fn each_sweep_line_gets_the_variables_above_it() {
        let text = "# m h dom mon dow command\n\
                    MAILTO=\"\"\\r\n\
                    */5 * * * * rch-sweep --quiet\n\
                    \r\n\
                    XDG_RUNTIME_DIR = /run/user/1000\r\n\
                    HOME='/srv/alice'\\r\n\
                    */5 * * * * RCH_SOCKET_PATH=/s $HOME/bin/rch-sweep run --lease-dir \"$HOME/l\" --metrics-file /m\n\
                    0 * * * * /usr/bin/backup\n\
                    LAST=1\n";
        let reading = read(text, &defaults());
        assert_eq!(reading.jobs.len(), 2, "{reading:?}");
        let first = &reading.jobs[0];
        assert_eq!(first.number, 3);
        assert_eq!(first.text, "*/5 * * * * rch-sweep --quiet");
        let first = sweep(first);
        assert_eq!(first.program, "rch-sweep");
        assert_eq!(first.args, ["--quiet"]);
        assert_eq!(first.cwd, "/home/alice");
        assert_eq!(get(&first.env, "MAILTO"), Some(""));
        assert_eq!(get(&first.env, "XDG_RUNTIME_DIR"), None);
        let second = &reading.jobs[1];
        assert_eq!(second.number, 7);
        let second = sweep(second);
        assert_eq!(second.program, "/srv/alice/bin/rch-sweep");
        assert_eq!(
            second.args,
            ["--lease-dir", "/srv/alice/l", "--metrics-file", "/m"]
        );
        assert_eq!(second.cwd, "/srv/alice");
        assert_eq!(get(&second.env, "XDG_RUNTIME_DIR"), Some("/run/user/1000"));
        assert_eq!(get(&second.env, "RCH_SOCKET_PATH"), Some("/s"));
        // cron's order: the variable lines above, then its defaults for
        // what they left unset, LOGNAME last, then the command's own.
        let names: Vec<&str> = second.env.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "MAILTO",
                "XDG_RUNTIME_DIR",
                "HOME",
                "SHELL",
                "PATH",
                "LOGNAME",
                "RCH_SOCKET_PATH"
            ]
        );
        assert_eq!(get(&second.env, "HOME"), Some("/srv/alice"));
        assert_eq!(get(&reading.last_env, "LAST"), Some("1"));
        assert_eq!(get(&reading.last_env, "RCH_SOCKET_PATH"), None);
        assert!(!reading.jobs[0].carriage_return);
    }

    #[test]
    fn a_carriage_return_ends_a_variable_but_stays_in_the_command() {
        // As Debian's crontab -l prints it (\r), and as a CR.
        for cr in ["\\r", "\r"] {
            let text = format!("A=\"b\"{cr}\n*/5 * * * * rch-sweep --quiet{cr}\n");
            let reading = read(&text, &defaults());
            assert_eq!(get(&reading.last_env, "A"), Some("b"), "{cr:?}");
            let job = &reading.jobs[0];
            assert!(job.carriage_return);
            assert_eq!(job.text, "*/5 * * * * rch-sweep --quiet\\r");
            let Follow::Fails(why) = &job.follow else {
                panic!("{job:?}");
            };
            assert!(
                why.contains("the word --quiet\\r ends in it, so rch-sweep refuses an argument it does not know (exit 2)"),
                "{why}"
            );
        }
        // In the program's name, in a redirection, inside a comment.
        let fails = |line: &str| match &read(line, &defaults()).jobs[0].follow {
            Follow::Fails(why) => why.clone(),
            other => panic!("{line}: {other:?}"),
        };
        assert!(fails("@daily rch-sweep\r").contains("no program of that name"));
        assert!(fails("@daily rch-sweep >/l\r").contains("a file whose name ends"));
        assert!(fails("@daily rch-sweep 2>&1\r").contains("sh reads it as part of a redirection"));
        let job = &read("@daily rch-sweep -q # x\r", &defaults()).jobs[0];
        assert_eq!(sweep(job).args, ["-q"]);
    }

    #[test]
    fn crons_environment_for_a_line() {
        let base = Base {
            name: "alice".into(),
            home: "/home/alice".into(),
            pam: pairs(&[
                ("LANG", "C.UTF-8"),
                ("PATH", "/pam/bin"),
                ("RCH_STATE_HOME", "/srv/state"),
                ("HOME", "/pam/home"),
            ]),
        };
        // pam_env's first, cron's own over them; nothing of the crontab.
        assert_eq!(
            job_env(&base, &Env::new()),
            pairs(&[
                ("LANG", "C.UTF-8"),
                ("PATH", "/usr/bin:/bin"),
                ("RCH_STATE_HOME", "/srv/state"),
                ("HOME", "/home/alice"),
                ("SHELL", "/bin/sh"),
                ("LOGNAME", "alice"),
            ])
        );
        // The crontab's lines win over both, but for LOGNAME.
        let above = pairs(&[
            ("LOGNAME", "mallory"),
            ("HOME", "/srv/alice"),
            ("RCH_STATE_HOME", "/crontab"),
            ("SHELL", "/bin/bash"),
        ]);
        let env = job_env(&base, &above);
        assert_eq!(get(&env, "LOGNAME"), Some("alice"));
        assert_eq!(get(&env, "HOME"), Some("/srv/alice"));
        assert_eq!(get(&env, "RCH_STATE_HOME"), Some("/crontab"));
        assert_eq!(get(&env, "SHELL"), Some("/bin/bash"));
        assert_eq!(get(&env, "PATH"), Some("/usr/bin:/bin"));
    }

    #[test]
    fn a_variable_below_a_line_never_reaches_it() {
        let text = "*/5 * * * * flock -n /tmp/l rch-sweep --quiet\n\
                    RCH_SOCKET_PATH=/run/rch.sock\n";
        let reading = read(text, &defaults());
        let job = sweep(&reading.jobs[0]);
        assert_eq!(get(&job.env, "RCH_SOCKET_PATH"), None);
        assert_eq!(job.args, ["--quiet"]);
        assert_eq!(
            get(&reading.last_env, "RCH_SOCKET_PATH"),
            Some("/run/rch.sock")
        );
    }

    #[test]
    fn a_line_doctor_cannot_follow_says_why() {
        let text = "*/5 * * * * rch-sweep --quiet | logger -t rch-sweep\n\
                    @daily rch-sweep --metrics-file /m/rch-sweep-$(date +\\%F).prom\n\
                    @daily rch-sweep ; date '+%H'\n\
                    @daily flock -n /tmp/l rch-sweep\n\
                    @daily rch-sweep status\n\
                    @daily sudo rch-sweep\n\
                    # @daily rch-sweep | x\n\
                    @daily /usr/bin/rch-sweep\n";
        let reading = read(text, &defaults());
        let whys: Vec<(usize, String)> = reading
            .jobs
            .iter()
            .map(|job| match &job.follow {
                Follow::Cannot(why) | Follow::Fails(why) => (job.number, why.clone()),
                Follow::Sweep(_) => (job.number, "followed".to_owned()),
            })
            .collect();
        assert_eq!(whys.len(), 7, "{whys:?}");
        assert!(whys[0].1.contains("a pipe"), "{whys:?}");
        assert!(whys[1].1.contains("command substitution"), "{whys:?}");
        assert!(whys[2].1.contains("a command list (;)"), "{whys:?}");
        assert_eq!(whys[3], (4, "followed".to_owned()));
        assert!(whys[4].1.contains("`rch-sweep status`"), "{whys:?}");
        assert!(whys[5].1.contains("it runs sudo"), "{whys:?}");
        assert_eq!(whys[6], (8, "followed".to_owned()));
    }

    #[test]
    fn lines_cron_runs_through_a_shell_are_followed() {
        let text = "@daily rch-sweep --quiet % nothing for stdin%two\n\
                    @daily exec rch-sweep -q\n\
                    @daily cd /srv && cd l && rch-sweep\n\
                    @daily sh -c 'cd && exec nice rch-sweep --json' >/dev/null 2>&1\n\
                    @daily /bin/bash -ec \"rch-sweep --lease-dir $HOME/l\"\n\
                    @daily cd ~ && rch-sweep\n";
        let reading = read(text, &defaults());
        assert_eq!(reading.jobs.len(), 6);
        let first = sweep(&reading.jobs[0]);
        assert_eq!(first.args, ["--quiet"]);
        assert_eq!(first.input.as_deref(), Some(" nothing for stdin\ntwo"));
        assert!(first.folders.is_empty());
        let second = sweep(&reading.jobs[1]);
        assert_eq!(
            (second.program.as_str(), &second.args[..]),
            ("rch-sweep", &["-q".to_owned()][..])
        );
        let names: Vec<&str> = second.lookups.iter().map(|l| l.program.as_str()).collect();
        assert_eq!(names, ["rch-sweep"], "exec is the shell's own");
        let third = sweep(&reading.jobs[2]);
        assert_eq!(third.folders, ["/srv", "/srv/l"]);
        assert_eq!(third.cwd, "/srv/l");
        assert_eq!(third.lookups[0].cwd, "/srv/l");
        let fourth = sweep(&reading.jobs[3]);
        assert_eq!(fourth.args, ["--json"]);
        assert_eq!(fourth.folders, ["/home/alice"]);
        let names: Vec<&str> = fourth.lookups.iter().map(|l| l.program.as_str()).collect();
        assert_eq!(names, ["sh", "nice", "rch-sweep"]);
        let fifth = sweep(&reading.jobs[4]);
        assert_eq!(fifth.args, ["--lease-dir", "/home/alice/l"]);
        assert_eq!(sweep(&reading.jobs[5]).cwd, "/home/alice");
    }

    #[test]
    fn what_the_shell_cannot_run_or_doctor_cannot_read_is_said() {
        let follow_of = |line: &str| read(line, &defaults()).jobs.remove(0).follow;
        // A % inside quotes: sh reads an unterminated quote at every run.
        let Follow::Fails(why) = follow_of("@daily sh -c 'rch-sweep --x=%s'\n") else {
            panic!("not a failure");
        };
        assert!(why.contains("unterminated single quote"), "{why}");
        for (line, expected) in [
            ("@daily true && rch-sweep\n", "runs true first"),
            ("@daily cd - && rch-sweep\n", "cd -"),
            ("@daily cd /a /b && rch-sweep\n", "more than one folder"),
            (
                "@daily cd /a && rch-sweep && true\n",
                "runs rch-sweep first",
            ),
            ("@daily rch-sweep &&\n", "nothing after &&"),
            ("@daily exec >/dev/null # rch-sweep\n", "no command"),
            ("@daily exec -a x rch-sweep\n", "exec -a"),
            ("@daily sh rch-sweep.sh\n", "runs a script"),
            ("@daily bash -lc rch-sweep\n", "bash -l"),
            ("@daily sh -c # rch-sweep\n", "no command"),
            (
                "SHELL=/usr/bin/fish\n@daily rch-sweep\n",
                "SHELL=/usr/bin/fish",
            ),
            ("BASH_ENV=/e\n@daily bash -c rch-sweep\n", "BASH_ENV=/e"),
            ("CDPATH=/x\n@daily cd l && rch-sweep\n", "CDPATH"),
        ] {
            match follow_of(line) {
                Follow::Cannot(why) => assert!(why.contains(expected), "{line}: {why}"),
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn system_crontab_lines_are_found_by_their_user_field() {
        let text = "SHELL=/bin/sh\n\
                    */5 * * * * alice rch-sweep --quiet\n\
                    */5 * * * * bob rch-sweep --quiet\n\
                    @daily alice /usr/bin/backup\n\
                    #*/5 * * * * alice rch-sweep\n\
                    @hourly alice /usr/bin/rch-sweep\n";
        let reading = read_system(text, &defaults());
        let numbers: Vec<usize> = reading.jobs.iter().map(|j| j.number).collect();
        assert_eq!(numbers, [2, 6]);
        let job = sweep(&reading.jobs[0]);
        assert_eq!(job.args, ["--quiet"]);
        assert_eq!(get(&job.env, "LOGNAME"), Some("alice"));
        let carol = Base {
            name: "carol".into(),
            ..defaults()
        };
        assert!(read_system(text, &carol).jobs.is_empty());
    }
}

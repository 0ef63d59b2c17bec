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

use crate::shell_words;
use crate::vars::{Vars as Env, get, set};

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

/// The command as cron hands it to the shell: `\%` becomes `%`; `None` at
/// an unescaped `%`, where cron ends the command and feeds the rest to it
/// as standard input.
pub fn cron_command(command: &str) -> Option<String> {
    let mut out = String::with_capacity(command.len());
    let mut escaped = false;
    for c in command.chars() {
        if escaped {
            if c == '%' {
                out.pop();
            }
            out.push(c);
            escaped = false;
            continue;
        }
        if c == '%' {
            return None;
        }
        escaped = c == '\\';
        out.push(c);
    }
    Some(out)
}

/// A job line that runs rch-sweep as a simple command.
#[derive(Debug, PartialEq, Eq)]
pub struct Sweep {
    /// The program as the line names it (`rch-sweep`, `/usr/bin/rch-sweep`).
    pub program: String,
    /// Its options (a leading `run` dropped).
    pub args: Vec<String>,
    /// The line's environment with the command's own assignments on top.
    pub env: Env,
    /// Where cron starts it: the line's `HOME`.
    pub cwd: String,
}

/// What doctor makes of a job line that mentions rch-sweep.
#[derive(Debug, PartialEq, Eq)]
pub enum Follow {
    Sweep(Sweep),
    /// Why doctor cannot check it as it runs.
    Cannot(String),
}

/// A job line that mentions rch-sweep.
#[derive(Debug, PartialEq, Eq)]
pub struct Job {
    /// 1 for the first line of the crontab.
    pub number: usize,
    /// The line as `crontab -l` printed it (a CR as `\r`).
    pub text: String,
    /// It ends in a carriage return, which the command's last word keeps.
    pub carriage_return: bool,
    pub follow: Follow,
}

/// What a crontab gives: every job line that mentions rch-sweep, and the
/// environment after its last variable line.
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

/// Reads a user's crontab (`crontab -l`'s output) over cron's `defaults`.
pub fn read(text: &str, defaults: Env) -> Reading {
    let mut env = defaults;
    let mut jobs = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        match entry(line) {
            CronLine::Variable { name, value } => set(&mut env, &name, &value),
            CronLine::Job { mut command, .. } if command.contains("rch-sweep") => {
                let (shown, carriage_return) = without_cr(line);
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
                    follow: follow(&command, &env),
                });
            }
            _ => {}
        }
    }
    Reading {
        jobs,
        last_env: env,
    }
}

/// The sweep a job line's command runs in `env`, or why doctor cannot
/// follow it.
fn follow(command: &str, env: &Env) -> Follow {
    let Some(command) = cron_command(command) else {
        return Follow::Cannot(
            "an unescaped % (cron ends the command there and sends the rest to it as standard input; write \\% for a %)"
                .to_owned(),
        );
    };
    let lookup = |name: &str| get(env, name).map(str::to_owned);
    let split = match shell_words::split(&command, &lookup) {
        Ok(split) => split,
        Err(why) => return Follow::Cannot(why),
    };
    let Some((program, args)) = split.words.split_first() else {
        return Follow::Cannot("no command, only variable assignments".to_owned());
    };
    let name = program.rsplit('/').next().unwrap_or_default();
    if name != "rch-sweep" {
        return Follow::Cannot(format!(
            "it runs {program}, not rch-sweep (doctor follows only a line whose command is rch-sweep itself)"
        ));
    }
    let mut args = args.to_vec();
    if args.first().is_some_and(|first| first == "run") {
        args.remove(0);
    }
    if let Some(sub) = args
        .first()
        .filter(|first| NOT_A_SWEEP.contains(&first.as_str()))
    {
        return Follow::Cannot(format!("it runs `rch-sweep {sub}`, not a sweep"));
    }
    let cwd = get(env, "HOME").unwrap_or("/").to_owned();
    let mut line_env = env.clone();
    for (name, value) in &split.assignments {
        set(&mut line_env, name, value);
    }
    Follow::Sweep(Sweep {
        program: program.clone(),
        args,
        env: line_env,
        cwd,
    })
}

/// The lines of a system crontab (`/etc/crontab`, `/etc/cron.d/*`: a user
/// field after the schedule) that run a command mentioning rch-sweep as
/// `user`: their numbers.
pub fn system_lines_for(text: &str, user: &str) -> Vec<usize> {
    text.split('\n')
        .enumerate()
        .filter_map(|(index, line)| {
            let (line, _) = without_cr(line);
            let trimmed = line.trim_start_matches([' ', '\t']);
            if trimmed.starts_with('#') || variable(trimmed).is_some() {
                return None;
            }
            let (_, whose, command) = job(trimmed, true)?;
            (whose == user && command.contains("rch-sweep")).then_some(index + 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Env {
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
        assert_eq!(cron_command("a \\% b").as_deref(), Some("a % b"));
        assert_eq!(cron_command("a \\\\ b").as_deref(), Some("a \\\\ b"));
        assert_eq!(cron_command("a \\x").as_deref(), Some("a \\x"));
        assert_eq!(cron_command("date +%s"), None);
        // Quotes do not protect it: cron splits before the shell reads.
        assert_eq!(cron_command("date '+%s'"), None);
        assert_eq!(cron_command("a \\\\%"), None);
    }

    fn sweep(job: &Job) -> &Sweep {
        match &job.follow {
            Follow::Sweep(sweep) => sweep,
            Follow::Cannot(why) => panic!("line {} not followed: {why}", job.number),
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
        let reading = read(text, defaults());
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
        // HOME overridden in place, the order kept.
        assert_eq!(second.env[0], ("HOME".into(), "/srv/alice".into()));
        assert_eq!(get(&reading.last_env, "LAST"), Some("1"));
        assert_eq!(get(&reading.last_env, "RCH_SOCKET_PATH"), None);
        assert!(!reading.jobs[0].carriage_return);
    }

    #[test]
    fn a_carriage_return_ends_a_variable_but_stays_in_the_command() {
        // As Debian's crontab -l prints it (\r), and as a CR.
        for cr in ["\\r", "\r"] {
            let text = format!("A=\"b\"{cr}\n*/5 * * * * rch-sweep --quiet{cr}\n");
            let reading = read(&text, defaults());
            assert_eq!(get(&reading.last_env, "A"), Some("b"), "{cr:?}");
            let job = &reading.jobs[0];
            assert!(job.carriage_return);
            assert_eq!(job.text, "*/5 * * * * rch-sweep --quiet\\r");
            assert_eq!(sweep(job).args, ["--quiet\r"]);
        }
    }

    #[test]
    fn a_line_doctor_cannot_follow_says_why() {
        let text = "*/5 * * * * rch-sweep --quiet | logger -t rch-sweep\n\
                    @daily rch-sweep --metrics-file /m/rch-sweep-$(date +\\%F).prom\n\
                    @daily rch-sweep >/tmp/out-%H\n\
                    @daily flock -n /tmp/l rch-sweep\n\
                    @daily rch-sweep status\n\
                    # @daily rch-sweep | x\n\
                    @daily /usr/bin/rch-sweep\n";
        let reading = read(text, defaults());
        let whys: Vec<(usize, String)> = reading
            .jobs
            .iter()
            .map(|job| match &job.follow {
                Follow::Cannot(why) => (job.number, why.clone()),
                Follow::Sweep(_) => (job.number, "followed".to_owned()),
            })
            .collect();
        assert_eq!(whys.len(), 6, "{whys:?}");
        assert!(whys[0].1.contains("a pipe"), "{whys:?}");
        assert!(whys[1].1.contains("command substitution"), "{whys:?}");
        assert!(whys[2].1.contains("unescaped %"), "{whys:?}");
        assert!(whys[3].1.contains("it runs flock"), "{whys:?}");
        assert!(whys[4].1.contains("`rch-sweep status`"), "{whys:?}");
        assert_eq!(whys[5], (7, "followed".to_owned()));
    }

    #[test]
    fn system_crontab_lines_are_found_by_their_user_field() {
        let text = "SHELL=/bin/sh\n\
                    */5 * * * * alice rch-sweep --quiet\n\
                    */5 * * * * bob rch-sweep --quiet\n\
                    @daily alice /usr/bin/backup\n\
                    #*/5 * * * * alice rch-sweep\n\
                    @hourly alice /usr/bin/rch-sweep\n";
        assert_eq!(system_lines_for(text, "alice"), [2, 6]);
        assert_eq!(system_lines_for(text, "carol"), Vec::<usize>::new());
    }
}

//! The command line: every flag of SPEC.md with its environment variable and
//! default, in one place. Raw values land here; `config` turns them into the
//! validated settings the rest of the program uses.

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

const LEASE_DIR_HELP: &str = "The lease journals to scan [default: $RCH_STATE_HOME/job-leases, \
else $XDG_STATE_HOME/rch/job-leases, else $HOME/.local/state/rch/job-leases, else \
/tmp/rch/job-leases; an empty variable counts as unset]";
const STATE_FILE_HELP: &str =
    "Persisted per-lease backoff [default: <parent of the lease dir>/rch-sweep/backoff.json]";

const RCH_HELP: &str = "The client that performs a recovery; a bare name is looked up on PATH \
[default: rch on PATH (absolute entries only), else $HOME/.local/bin/rch, else \
$HOME/.cargo/bin/rch, else /usr/local/bin/rch]";

/// The programs `doctor` starts, and no others, each with when: the one
/// list `doctor --help` gives, and the README and the man page give word
/// for word (tests/operate.rs holds them to it).
pub const DOCTOR_STARTS: [&str; 8] = [
    "rch --version",
    "rch --capabilities",
    "rch jobs recover --help",
    "rch --json --format json daemon status",
    "crontab -l (with --as cron)",
    "systemctl --version (with --as user-timer or --as system-timer)",
    "systemctl [--user] show (with --as user-timer or --as system-timer)",
    "itself (with --as)",
];

/// [`DOCTOR_STARTS`] as the sentence the docs give.
pub fn doctor_starts() -> String {
    format!("starts no program but these: {}.", DOCTOR_STARTS.join("; "))
}

/// `--backoff-max`'s default: also the cap `status` and `explain`, which do
/// not take the flag, show a next attempt with.
pub const DEFAULT_BACKOFF_MAX_SECS: u64 = 21_600;

const SOCKET_HELP: &str = "rch's daemon socket: checked (GET /health) before any recovery and \
handed to every child as RCH_SOCKET_PATH; while no daemon answers there, no lease is charged and \
the run exits 75 (78 when one answers at another of rch's usual places); without the flag and \
RCH_SOCKET_PATH, rch's alias RCH_DAEMON_SOCKET names it; set but empty, either names no socket, as \
rch reads it (exit 78) [default: the socket `rch --json --format json daemon status` names]";

/// The environment variables that stand in for flags and are rch-sweep's
/// own. An empty one counts as unset (SPEC), which clap alone would read as
/// an empty value. `RCH_SOCKET_PATH` is not among them: it is rch's, and
/// rch takes an empty one as set (the socket is then "", where it finds no
/// daemon, and its alias is not read), so `--socket` takes it as rch does.
pub const ENV_VARS: [&str; 4] = [
    "RCH_SWEEP_LEASE_DIR",
    "RCH_SWEEP_STATE_FILE",
    "RCH_SWEEP_RCH",
    "RCH_SWEEP_METRICS_FILE",
];

/// rch's alias of `RCH_SOCKET_PATH` (rch-lease-format.md §10), which rch
/// reads only when `RCH_SOCKET_PATH` is unset: `--socket` takes it last,
/// after the flag and `RCH_SOCKET_PATH` (clap reads one variable a flag),
/// an empty one as rch does (set: no socket).
pub const SOCKET_ALIAS: &str = "RCH_DAEMON_SOCKET";

/// The command line as clap derives it. Its help, its completion scripts and
/// doctor's reading of the arguments are this; [`Cli`] parses through it.
#[derive(Debug, Parser)]
#[command(
    name = "rch-sweep",
    version,
    about = "Recover dead rch client leases: one scan, a few recoveries, a summary, an exit code",
    long_about = "Recover dead rch client leases.\n\n\
One run scans rch's lease journals, judges each one, and runs `rch jobs recover <WRAPPER_ID>` \
for the journals whose owner is provably gone while they still own worker-side source or wait \
for the daemon's acknowledgement: up to --max-recoveries in parallel, at most one per worker, \
oldest heartbeat first. Failures back off per lease in a state file. Meant to run every five \
minutes from a systemd timer or cron; `--dry-run` shows the plan without touching anything.",
    after_help = "Exit status: 0 ok, 1 a recovery failed (or --check found work due), 2 bad \
command line, 74 I/O error, 75 temporary host fault charging no lease (another sweep holds the \
lock; rch's daemon is not answering; no process could be started), 78 configuration error, \
128+N stopped by signal N.
See rch-sweep(1) for how a journal is judged.",
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
struct Definition {
    #[command(subcommand)]
    command: Option<Command>,

    #[command(flatten)]
    run: RunArgs,
}

/// The parsed command line: a subcommand, or the options of the default
/// command, `run`. Parsed as [`Definition`] says, after the options of
/// `run` that stand before a subcommand are moved to just after it
/// ([`options_after_subcommand`]), so `rch-sweep --lease-dir D status` is
/// `rch-sweep status --lease-dir D` (SPEC, Synopsis), and an option the
/// subcommand does not take is refused there as it would be after it.
#[derive(Debug)]
pub struct Cli {
    pub command: Option<Command>,
    pub run: RunArgs,
}

impl From<Definition> for Cli {
    fn from(mut definition: Definition) -> Self {
        let alias = std::env::var_os(SOCKET_ALIAS);
        definition.run.take_socket_alias(alias.as_deref());
        match &mut definition.command {
            Some(Command::Run(run)) => run.take_socket_alias(alias.as_deref()),
            Some(Command::Doctor(doctor)) => doctor.run.take_socket_alias(alias.as_deref()),
            _ => {}
        }
        Cli {
            command: definition.command,
            run: definition.run,
        }
    }
}

/// The definition clap derives: every completion script, the help and
/// doctor's reading of the command line come from it.
impl CommandFactory for Cli {
    fn command() -> clap::Command {
        Definition::command()
    }

    fn command_for_update() -> clap::Command {
        Definition::command_for_update()
    }
}

impl FromArgMatches for Cli {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Definition::from_arg_matches(matches).map(Cli::from)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        let mut definition = Definition {
            command: self.command.take(),
            run: self.run.clone(),
        };
        let result = definition.update_from_arg_matches(matches);
        *self = Cli::from(definition);
        result
    }
}

/// Every way in goes through [`arguments`]: `main`'s `Cli::parse()` and the
/// tests' `Cli::try_parse_from` alike.
impl Parser for Cli {
    fn parse() -> Self {
        Self::parse_from(std::env::args_os())
    }

    fn try_parse() -> Result<Self, clap::Error> {
        Self::try_parse_from(std::env::args_os())
    }

    fn parse_from<I, T>(itr: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        Cli::from(Definition::parse_from(arguments(itr)))
    }

    fn try_parse_from<I, T>(itr: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        Definition::try_parse_from(arguments(itr)).map(Cli::from)
    }

    fn update_from<I, T>(&mut self, itr: I)
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let matches = Self::command_for_update().get_matches_from(arguments(itr));
        if let Err(error) = self.update_from_arg_matches(&matches) {
            error.format(&mut Self::command()).exit()
        }
    }

    fn try_update_from<I, T>(&mut self, itr: I) -> Result<(), clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let matches = Self::command_for_update().try_get_matches_from(arguments(itr))?;
        self.update_from_arg_matches(&matches)
            .map_err(|error| error.format(&mut Self::command()))
    }
}

/// This process's command line as [`Cli`] parses it: the options of `run`
/// that stood before the subcommand moved after it. Code that reads the
/// arguments again with clap (doctor asks which options were given on the
/// command line, and re-executes itself with them) reads these, so that
/// `rch-sweep --lease-dir D doctor` is `rch-sweep doctor --lease-dir D`
/// there too.
pub fn args_os() -> Vec<OsString> {
    arguments(std::env::args_os())
}

/// A command line as clap is to parse it: [`options_after_subcommand`].
fn arguments<I, T>(itr: I) -> Vec<OsString>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let argv = itr.into_iter().map(Into::into).collect();
    options_after_subcommand(&Definition::command(), argv)
}

/// How many words an option of `command` takes up at the front of `words`
/// (itself, and its value when that is the next word), or None when the
/// first word is no option of `command` that may be moved: `--`, a help or
/// version flag (clap has not added those yet), an unknown option, an
/// option whose value is missing.
fn option_width(command: &clap::Command, words: &[OsString]) -> Option<usize> {
    let word = words.first()?.to_str()?;
    let takes_value = |arg: &clap::Arg| arg.get_action().takes_values();
    let next_is_value = || {
        words
            .get(1)
            .and_then(|next| next.to_str())
            .is_some_and(|next| !next.starts_with('-'))
    };
    if let Some(long) = word.strip_prefix("--") {
        let (name, inline_value) = match long.split_once('=') {
            Some((name, _)) => (name, true),
            None => (long, false),
        };
        let arg = command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(name))?;
        return match (takes_value(arg), inline_value) {
            (false, false) | (true, true) => Some(1),
            (true, false) if next_is_value() => Some(2),
            _ => None,
        };
    }
    let shorts = word.strip_prefix('-').filter(|shorts| !shorts.is_empty())?;
    for (at, short) in shorts.char_indices() {
        let arg = command
            .get_arguments()
            .find(|arg| arg.get_short() == Some(short))?;
        if takes_value(arg) {
            let rest = &shorts[at + short.len_utf8()..];
            return if !rest.is_empty() {
                Some(1)
            } else if next_is_value() {
                Some(2)
            } else {
                None
            };
        }
    }
    Some(1)
}

/// SPEC: the options of `run` that a subcommand also takes may stand before
/// it. Moves the options that stand before the first subcommand to just
/// after it, in their order, so clap parses them as the subcommand's: one
/// the subcommand does not take is then refused as unknown to it (2), and
/// one given on both sides as given twice (2), as if written after it.
/// Anything else (no subcommand, a word that is no option of `run`) leaves
/// the command line as it is, for clap to judge.
pub fn options_after_subcommand(command: &clap::Command, argv: Vec<OsString>) -> Vec<OsString> {
    let Some(words) = argv.get(1..) else {
        return argv;
    };
    let mut at = 0;
    while let Some(word) = words.get(at) {
        let is_subcommand = word
            .to_str()
            .is_some_and(|name| command.find_subcommand(name).is_some());
        if is_subcommand {
            if at == 0 {
                return argv;
            }
            let mut moved = Vec::with_capacity(argv.len());
            moved.extend(argv.first().cloned());
            moved.push(word.clone());
            moved.extend_from_slice(&words[..at]);
            moved.extend_from_slice(&words[at + 1..]);
            return moved;
        }
        match option_width(command, &words[at..]) {
            Some(width) => at += width,
            None => return argv,
        }
    }
    argv
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One sweep (the default command)
    Run(RunArgs),
    /// Print the backoff entries of the state file (takes no lock)
    Status(StatusArgs),
    /// Remove backoff entries so those leases are retried on the next run
    Forget(ForgetArgs),
    /// Print a completion script for SHELL on stdout
    Completions(CompletionsArgs),
    /// Say why named journals are (not) recovered: every check with its evidence
    Explain(ExplainArgs),
    /// Check what a timer run with these options would meet; changes nothing
    #[command(
        long_about = format!("Check what a timer run with these options would meet: the lease directory, \
the state file and its folder, the locks, rch (what `rch --version` and `rch --capabilities` say, and whether a \
timer's or cron's PATH finds the same one), rch's daemon (whether it answers where rch looks \
for it), the metrics file, the journals a dry run would judge, the host (PID namespace, free \
space where the state is saved) and the environment (which decisions rest on variables a timer \
or cron line lacks). Each check is ok, warn or fail, with a fix; a real run refuses exactly what \
this reports as fail. Writes, renames and creates nothing and takes no lock; it asks rch's daemon \
for its health, and it {DOCTOR_STARTS_SENTENCE} With --as ROUTE it reads \
that route's own configuration (cron: your crontab, each rch-sweep line checked with its own \
options and variables; user-timer and system-timer: the unit and its drop-ins as systemd would \
start it) and re-executes itself with those options in that environment and nothing else; the \
options given on the command line count only where the route gives none. Exit status: 0 when \
no check fails, 1 otherwise.", DOCTOR_STARTS_SENTENCE = doctor_starts())
    )]
    Doctor(DoctorArgs),
}

/// `doctor`: the options of `run`, and the route whose environment to
/// check in.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub run: RunArgs,

    /// Check as a run started by ROUTE meets it: in that route's environment
    #[arg(long = "as", value_name = "ROUTE", value_enum)]
    pub route: Option<Route>,

    /// Set by `doctor --as` on the doctor it re-executes: this environment
    /// is the one ROUTE gives, not a login shell's
    #[arg(long = "in-route", value_name = "ROUTE", value_enum, hide = true)]
    pub in_route: Option<Route>,

    /// Set by `doctor --as` on the doctor it re-executes: what ROUTE would
    /// refuse to start, failing the environment check (repeatable)
    #[arg(
        long = "route-fail",
        value_name = "FINDING",
        requires = "in_route",
        hide = true
    )]
    pub route_fails: Vec<String>,
}

/// How a sweep is started every five minutes; each hands it its own
/// environment (SPEC, `doctor --as`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Route {
    /// Your crontab's rch-sweep lines (crontab -l)
    Cron,
    /// rch-sweep.service of your user manager, with its drop-ins
    UserTimer,
    /// rch-sweep@USER.service of the system manager, with its drop-ins
    SystemTimer,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Cron => "cron",
            Route::UserTimer => "user-timer",
            Route::SystemTimer => "system-timer",
        }
    }
}

/// Where the lease directory and state file are; shared by every command.
#[derive(Debug, Args, Clone, Default)]
pub struct Paths {
    #[arg(long, value_name = "DIR", env = "RCH_SWEEP_LEASE_DIR", help = LEASE_DIR_HELP)]
    pub lease_dir: Option<PathBuf>,

    #[arg(long, value_name = "FILE", env = "RCH_SWEEP_STATE_FILE", help = STATE_FILE_HELP)]
    pub state_file: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub paths: Paths,

    #[arg(long, value_name = "PATH", env = "RCH_SWEEP_RCH", help = RCH_HELP)]
    pub rch: Option<PathBuf>,

    // Empty when named so (as rch reads RCH_SOCKET_PATH): no socket.
    #[arg(long, value_name = "PATH", env = "RCH_SOCKET_PATH", help = SOCKET_HELP,
          value_parser = socket_path())]
    pub socket: Option<PathBuf>,

    /// Recoveries started in one run, and most in flight at once (1 to 64)
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub max_recoveries: u16,

    /// Handed to the child as --timeout-secs (whole seconds, 1 to 86400)
    #[arg(long, value_name = "SECS", default_value_t = 300,
          value_parser = seconds(1, 86_400))]
    pub recover_timeout: u64,

    /// Slack after the timeout before the child's process group is killed
    /// (whole seconds, 0 to 86400)
    #[arg(long, value_name = "SECS", default_value_t = 30,
          value_parser = seconds(0, 86_400))]
    pub kill_grace: u64,

    /// Heartbeat age before an owner may be judged gone (whole seconds, 0 to
    /// 31536000)
    #[arg(long, value_name = "SECS", default_value_t = 900,
          value_parser = seconds(0, 31_536_000))]
    pub stale_after: u64,

    /// Delay after the first failure; doubles per failure (whole seconds, 0 to
    /// 31536000, at most --backoff-max)
    #[arg(long, value_name = "SECS", default_value_t = 600,
          value_parser = seconds(0, 31_536_000))]
    pub backoff_base: u64,

    /// Cap on the backoff delay (whole seconds, 0 to 31536000)
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_BACKOFF_MAX_SECS,
          value_parser = seconds(0, 31_536_000))]
    pub backoff_max: u64,

    /// Judge and plan only: start nothing, write nothing, need no rch
    #[arg(long)]
    pub dry_run: bool,

    /// A dry run that exits 1 when any journal is due for recovery now
    #[arg(long)]
    pub check: bool,

    /// Print the summary as one JSON document on stdout
    #[arg(long)]
    pub json: bool,

    /// Also write Prometheus textfile metrics there (name ends in .prom; not on a dry run)
    #[arg(long, value_name = "FILE", env = "RCH_SWEEP_METRICS_FILE")]
    pub metrics_file: Option<PathBuf>,

    /// List every journal with its verdict
    #[arg(short, long, conflicts_with = "quiet")]
    pub verbose: bool,

    /// Print only errors, the warning for a named lease directory that does not
    /// exist, and once a day a line for each lease held six hours or more
    /// without a recovery
    #[arg(short, long)]
    pub quiet: bool,
}

impl RunArgs {
    /// `--socket` from rch's alias [`SOCKET_ALIAS`] (`alias`, when set,
    /// empty or not), when neither the flag nor `RCH_SOCKET_PATH` named one.
    pub fn take_socket_alias(&mut self, alias: Option<&std::ffi::OsStr>) {
        if self.socket.is_none() {
            self.socket = alias.map(PathBuf::from);
        }
    }

    /// What no single flag's parser can see: a first delay above the cap
    /// would make `--backoff-base` meaningless (every delay is the cap).
    pub fn check_backoff(&self) -> Result<(), String> {
        if self.backoff_base > self.backoff_max {
            return Err(format!(
                "--backoff-base {} is above --backoff-max {}: the first delay may not exceed the cap; lower --backoff-base or raise --backoff-max",
                self.backoff_base, self.backoff_max
            ));
        }
        Ok(())
    }
}

/// `--socket`'s parser: any path, the empty one too (an empty
/// `RCH_SOCKET_PATH` names no socket, as rch reads it; clap's own path
/// parser refuses it).
fn socket_path() -> impl clap::builder::TypedValueParser<Value = PathBuf> {
    use clap::builder::TypedValueParser;
    clap::builder::OsStringValueParser::new().map(PathBuf::from)
}

/// A value parser for a duration flag: whole seconds within `min..=max`.
/// A refused value says the unit, and a value with a unit suffix (`10m`)
/// gets the number to write instead (`600`).
fn seconds(min: u64, max: u64) -> impl Fn(&str) -> Result<u64, String> + Clone {
    move |text: &str| {
        let range = format!("whole seconds, {min} to {max}");
        match text.trim().parse::<u64>() {
            Ok(value) if (min..=max).contains(&value) => Ok(value),
            Ok(_) => Err(format!("out of range: takes {range}")),
            Err(_) => Err(match suffixed_seconds(text.trim()) {
                Some(value) => format!("takes {range}; for {text} write {value}"),
                None => format!("takes {range} (a plain number, like 600)"),
            }),
        }
    }
}

/// `10m` → 600, `2h` → 7200, `1d` → 86400, `30s` → 30: what an operator
/// who wrote a unit meant, in seconds.
fn suffixed_seconds(text: &str) -> Option<u64> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let factor = match unit.to_ascii_lowercase().as_str() {
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hr" | "hour" | "hours" => 3_600,
        "d" | "day" | "days" => 86_400,
        _ => return None,
    };
    number.checked_mul(factor)
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub paths: Paths,

    /// Print the entries as JSON, each with a `due` flag
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ForgetArgs {
    #[command(flatten)]
    pub paths: Paths,

    /// Empty the state: every lease is retried on the next run
    #[arg(long, conflicts_with = "wrapper_ids")]
    pub all: bool,

    /// Wrapper ids (rchw-<uuid>), journal file names (rchw-<uuid>.json) or
    /// journal paths inside the lease directory, whose entries to remove
    #[arg(value_name = "WRAPPER_ID", required_unless_present = "all")]
    pub wrapper_ids: Vec<String>,
}

/// `completions SHELL`: the shells whose completion scripts are shipped
/// (SPEC: bash, zsh, fish); any other name is a usage error (2).
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_name = "SHELL", value_enum)]
    pub shell: CompletionShell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub paths: Paths,

    /// Heartbeat age before an owner may be judged gone (whole seconds, 0 to
    /// 31536000)
    #[arg(long, value_name = "SECS", default_value_t = 900,
          value_parser = seconds(0, 31_536_000))]
    pub stale_after: u64,

    /// Print the explanations as one JSON document
    #[arg(long)]
    pub json: bool,

    /// Journals to explain: a wrapper id (rchw-<uuid>), a journal's file name,
    /// or a path inside the lease directory
    #[arg(value_name = "JOURNAL", required = true)]
    pub journals: Vec<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_is_the_default_command() {
        let cli = Cli::try_parse_from(["rch-sweep", "--dry-run", "--max-recoveries", "2"])
            .expect("parses");
        assert!(cli.command.is_none());
        assert!(cli.run.dry_run);
        assert_eq!(cli.run.max_recoveries, 2);
        let cli = Cli::try_parse_from(["rch-sweep", "run", "--json"]).expect("parses");
        assert!(matches!(cli.command, Some(Command::Run(ref args)) if args.json));
    }

    /// SPEC, Synopsis: the options of `run` a subcommand also takes may
    /// stand before it.
    #[test]
    fn options_of_run_may_stand_before_the_subcommand() {
        let words = |argv: &[&str]| -> Vec<String> {
            let argv = argv.iter().map(OsString::from).collect();
            options_after_subcommand(&Cli::command(), argv)
                .into_iter()
                .map(|word| word.into_string().expect("utf-8"))
                .collect()
        };
        assert_eq!(
            words(&["rch-sweep", "--lease-dir", "D", "status", "--json"]),
            ["rch-sweep", "status", "--lease-dir", "D", "--json"]
        );
        assert_eq!(
            words(&[
                "rch-sweep",
                "--lease-dir=D",
                "-q",
                "--json",
                "doctor",
                "--as",
                "cron"
            ]),
            [
                "rch-sweep",
                "doctor",
                "--lease-dir=D",
                "-q",
                "--json",
                "--as",
                "cron"
            ]
        );
        // A value that is a subcommand's name is the option's value.
        assert_eq!(
            words(&["rch-sweep", "--lease-dir", "status", "status"]),
            ["rch-sweep", "status", "--lease-dir", "status"]
        );
        // Left for clap: no subcommand, help, an unknown option, `--`, a
        // missing value.
        for argv in [
            &["rch-sweep", "--lease-dir", "D", "--dry-run"][..],
            &["rch-sweep", "status", "--lease-dir", "D"],
            &["rch-sweep", "--help", "status"],
            &["rch-sweep", "--as", "cron", "doctor"],
            &["rch-sweep", "--", "status"],
            &["rch-sweep", "--lease-dir", "--json", "status"],
        ] {
            assert_eq!(words(argv), argv, "{argv:?}");
        }

        let cli = Cli::try_parse_from(["rch-sweep", "--lease-dir", "D", "status", "--json"])
            .expect("parses");
        let Some(Command::Status(status)) = cli.command else {
            panic!("not status: {cli:?}");
        };
        assert_eq!(status.paths.lease_dir, Some(PathBuf::from("D")));
        assert!(status.json);
        let cli = Cli::try_parse_from(["rch-sweep", "--state-file", "S", "forget", "--all"])
            .expect("parses");
        assert!(
            matches!(cli.command, Some(Command::Forget(ref forget)) if forget.all && forget.paths.state_file == Some(PathBuf::from("S")))
        );
        let cli = Cli::try_parse_from(["rch-sweep", "--stale-after", "60", "explain", "rchw-x"])
            .expect("parses");
        assert!(
            matches!(cli.command, Some(Command::Explain(ref explain)) if explain.stale_after == 60)
        );
        let cli = Cli::try_parse_from(["rch-sweep", "--rch", "/r", "doctor", "--as", "cron"])
            .expect("parses");
        assert!(
            matches!(cli.command, Some(Command::Doctor(ref doctor)) if doctor.run.rch == Some(PathBuf::from("/r")) && doctor.route == Some(Route::Cron))
        );
        // Not taken by the subcommand, or given on both sides: refused.
        for argv in [
            &["rch-sweep", "--stale-after", "60", "status"][..],
            &["rch-sweep", "--json", "forget", "--all"],
            &["rch-sweep", "--lease-dir", "D", "completions", "bash"],
            &[
                "rch-sweep",
                "--lease-dir",
                "D",
                "status",
                "--lease-dir",
                "E",
            ],
        ] {
            let error = Cli::try_parse_from(argv).expect_err("refused");
            assert_eq!(error.exit_code(), 2, "{argv:?}");
        }
    }

    #[test]
    fn durations_teach_their_unit() {
        let parse = seconds(0, 31_536_000);
        assert_eq!(parse("600"), Ok(600));
        assert_eq!(
            parse("10m"),
            Err("takes whole seconds, 0 to 31536000; for 10m write 600".into())
        );
        assert!(parse("2h").is_err_and(|e| e.ends_with("for 2h write 7200")));
        assert!(parse("1d").is_err_and(|e| e.ends_with("for 1d write 86400")));
        assert!(parse("1.5").is_err_and(|e| e.contains("whole seconds")));
        assert!(parse("31536001").is_err_and(|e| e.contains("out of range")));
        assert!(seconds(1, 10)("0").is_err());
    }

    #[test]
    fn a_backoff_base_above_the_max_is_refused() {
        let cli = Cli::try_parse_from([
            "rch-sweep",
            "--backoff-base",
            "7200",
            "--backoff-max",
            "600",
        ])
        .expect("each value alone is valid");
        let why = cli.run.check_backoff().expect_err("base above max");
        assert!(
            why.contains("--backoff-base 7200 is above --backoff-max 600"),
            "{why}"
        );
        let cli =
            Cli::try_parse_from(["rch-sweep", "--backoff-base", "600", "--backoff-max", "600"])
                .expect("parses");
        assert!(cli.run.check_backoff().is_ok());
    }

    #[test]
    fn out_of_range_and_conflicting_flags_are_refused() {
        for argv in [
            &["rch-sweep", "--max-recoveries", "0"][..],
            &["rch-sweep", "--max-recoveries", "65"],
            &["rch-sweep", "-v", "-q"],
            &["rch-sweep", "forget"],
            &["rch-sweep", "forget", "--all", "rchw-x"],
            &["rch-sweep", "--dry-run", "status"],
            &["rch-sweep", "--quiet", "completions", "bash"],
            &["rch-sweep", "completions", "powershell"],
            &["rch-sweep", "completions"],
            &["rch-sweep", "doctor", "--as", "anacron"],
            &["rch-sweep", "--as", "cron"],
        ] {
            assert!(Cli::try_parse_from(argv).is_err(), "{argv:?}");
        }
    }
}

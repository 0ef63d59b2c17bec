//! A service unit as systemd will start it: its file and drop-ins merged,
//! the environment its process gets, the options of its `ExecStart=`.
//!
//! `doctor --as user-timer|system-timer` checks what the unit really gives
//! a sweep, so that a drop-in an operator added (`systemctl edit`) is what
//! it sees. Where a manager runs, it is asked ([`show`]); elsewhere the
//! files are read from systemd's search path ([`search`]) and merged here
//! as systemd.unit(5) says: the unit file, then every drop-in in file-name
//! order; an empty `Environment=` (or `EnvironmentFile=`, `ExecStart=`)
//! resets the list. The process's environment is systemd's own variables
//! (`HOME`, `USER`, `LOGNAME`, `SHELL`), the manager's (`PATH`, for the
//! user manager `XDG_RUNTIME_DIR`), then `Environment=`, then
//! `EnvironmentFile=` (which wins over `Environment=`), less
//! `UnsetEnvironment=`. Plain functions over text; reading files and
//! running `systemctl` happen elsewhere.
//!
//! What systemd would refuse to start (a program it cannot run, a missing
//! working directory or environment file without `-`) is [`refusal`]'s.

pub mod refusal;

pub use refusal::{
    FileRead, Program, Refusal, environment_file_refusal, exec_refusals, program_path,
    working_directory_refusal,
};
pub mod environment_d;
pub mod glob;
pub mod search;
pub mod show;
pub mod syntax;
pub mod words;

use crate::route::vars::{self, Vars};
pub use syntax::Specifiers;
use words::UnknownEscape;

/// systemd's `PATH` for what it starts when its manager sets none (the
/// default of a manager built for a split `/usr`, as Debian's 252 is; on a
/// merged `/usr` the last two are the same folders again).
pub const MANAGER_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// One command of `ExecStart=`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecCommand {
    /// The program as written (a bare name is looked up by systemd).
    pub program: String,
    /// Its arguments after `argv[0]`, specifiers resolved, `$VAR` not yet.
    pub args: Vec<String>,
    /// False with the `:` prefix: no `$VAR` expansion.
    pub expand: bool,
    /// The `-` prefix: systemd skips a missing program (`Executable ...
    /// missing, skipping`) and ignores a failure.
    pub ignore_failure: bool,
    /// The file that set it.
    pub source: String,
}

impl ExecCommand {
    /// From the words of an `ExecStart=` value: the prefixes (`@`, `-`,
    /// `:`, `+`, `!`, `!!`) taken off the first; with `@`, the second word
    /// is `argv[0]`.
    pub fn from_words(words: &[String]) -> Option<ExecCommand> {
        let (first, rest) = words.split_first()?;
        let bare = first.trim_start_matches(['@', '-', ':', '+', '!']);
        let prefixes = &first[..first.len() - bare.len()];
        let args = if prefixes.contains('@') {
            rest.get(1..).unwrap_or_default()
        } else {
            rest
        };
        Some(ExecCommand {
            program: bare.to_owned(),
            args: args.to_vec(),
            expand: !prefixes.contains(':'),
            ignore_failure: prefixes.contains('-'),
            source: String::new(),
        })
    }

    /// Whether it runs rch-sweep (its file name).
    pub fn is_sweep(&self) -> bool {
        self.program.rsplit('/').next() == Some("rch-sweep")
    }
}

/// One `EnvironmentFile=`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvironmentFile {
    /// The path as set, specifiers resolved: a glob(3) pattern ([`glob`]).
    pub path: String,
    /// The `-` prefix: missing (or unreadable) is no error.
    pub optional: bool,
    /// The file that set it.
    pub source: String,
}

/// What a unit's `[Service]` settings come to once every file is merged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Service {
    /// `Environment=` assignments (`NAME=value`), in order.
    pub environment: Vec<(String, String)>,
    /// `EnvironmentFile=` paths (patterns), in order.
    pub environment_files: Vec<EnvironmentFile>,
    pub exec_start: Vec<ExecCommand>,
    /// `WorkingDirectory=` as set (`~` and a leading `-` kept), and the
    /// file that set it.
    pub working_directory: Option<String>,
    pub working_directory_source: String,
    /// `User=`, resolved.
    pub user: Option<String>,
    /// `UnsetEnvironment=` entries (`NAME` or `NAME=value`).
    pub unset_environment: Vec<String>,
    /// What systemd would ignore or doctor cannot resolve, each with its
    /// file and line.
    pub problems: Vec<String>,
    /// Settings systemd refuses as a fatal error of the unit ("Unit
    /// configuration has fatal error, unit will not be started"), each
    /// with its file and line.
    pub fatal: Vec<String>,
}

/// The files of a unit, merged in the order given (the unit file first,
/// then the drop-ins in the order [`search::find`] gives), each
/// `(where it is, its text)`.
pub fn merge(files: &[(String, String)], specifiers: &Specifiers) -> Service {
    let mut service = Service::default();
    for (source, text) in files {
        for syntax::Assignment { line, key, value } in syntax::service_assignments(text) {
            let at = format!("{source}:{line}");
            if let Err(why) = apply(&mut service, &at, &key, &value, specifiers) {
                service
                    .problems
                    .push(format!("{at}: systemd ignores {key}={value}: {why}"));
            }
        }
    }
    service
}

/// One assignment of a `[Service]` section, from `at` (its file and line).
fn apply(
    service: &mut Service,
    at: &str,
    key: &str,
    value: &str,
    spec: &Specifiers,
) -> Result<(), String> {
    let source = at.rsplit_once(':').map_or(at, |(file, _)| file);
    match key {
        "Environment" if value.is_empty() => service.environment.clear(),
        "Environment" => return environment(service, value, spec),
        "EnvironmentFile" if value.is_empty() => service.environment_files.clear(),
        "EnvironmentFile" => {
            let (optional, path) = match value.strip_prefix('-') {
                Some(path) => (true, path),
                None => (false, value),
            };
            let path = spec.resolve(path)?;
            if !path.starts_with('/') {
                return Err("not an absolute path".to_owned());
            }
            service.environment_files.push(EnvironmentFile {
                path,
                optional,
                source: source.to_owned(),
            });
        }
        "ExecStart" if value.is_empty() => service.exec_start.clear(),
        "ExecStart" => return exec_start(service, at, source, value, spec),
        "WorkingDirectory" if value.is_empty() => service.working_directory = None,
        "WorkingDirectory" => {
            service.working_directory = Some(spec.resolve(value)?);
            source.clone_into(&mut service.working_directory_source);
        }
        "User" if value.is_empty() => service.user = None,
        "User" => service.user = Some(spec.resolve(value)?),
        "UnsetEnvironment" if value.is_empty() => service.unset_environment.clear(),
        "UnsetEnvironment" => {
            let split = words::split(value, UnknownEscape::Ends);
            for word in &split.words {
                let word = String::from_utf8(word.clone())
                    .map_err(|_| "a word that is not UTF-8".to_owned())?;
                service.unset_environment.push(spec.resolve(&word)?);
            }
            if let Some(why) = split.stopped {
                return Err(format!(
                    "{why}: systemd says \"Invalid syntax, ignoring\" and reads no more of the line"
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// One `ExecStart=` command, its words split as systemd 252's
/// `config_parse_exec` splits them: an escape systemd does not know is
/// kept, backslash and all (in the program's name with a warning,
/// "Ignoring unknown escape sequences"); a program name then holding a
/// backslash, a quote or a control character is refused ("Executable name
/// contains special characters"), which is fatal for the unit unless the
/// `-` prefix makes systemd ignore the line.
fn exec_start(
    service: &mut Service,
    at: &str,
    source: &str,
    value: &str,
    spec: &Specifiers,
) -> Result<(), String> {
    let split = words::split(value, UnknownEscape::Kept);
    if let Some(why) = split.stopped {
        return Err(why);
    }
    if split.kept_escapes.first() == Some(&0) {
        service.problems.push(format!(
            "{at}: ExecStart={value}: an escape systemd does not know in the program's name, kept as written (\"Ignoring unknown escape sequences\")"
        ));
    }
    let words = split
        .words
        .iter()
        .map(|word| spec.resolve(&String::from_utf8_lossy(word)))
        .collect::<Result<Vec<String>, String>>()?;
    let Some(mut command) = ExecCommand::from_words(&words) else {
        return Ok(());
    };
    let special = |c: char| c.is_control() || matches!(c, '\\' | '"' | '\'');
    if command.program.contains(special) {
        let said = format!(
            "{at}: ExecStart={value}: the program's name {:?} holds a backslash, quote or control character (\"Executable name contains special characters\")",
            command.program
        );
        if command.ignore_failure {
            service.problems.push(format!(
                "{said}: the - prefix makes systemd ignore the line"
            ));
        } else {
            service
                .fatal
                .push(format!("{said}: systemd does not start the unit"));
        }
        return Ok(());
    }
    source.clone_into(&mut command.source);
    service.exec_start.push(command);
    Ok(())
}

/// The words of one `Environment=` line, as systemd 252's
/// `config_parse_environ` takes them: each word taken or skipped on its
/// own (a specifier that does not resolve, no `NAME=value` assignment,
/// bytes that are not UTF-8: skipped, the rest of the line still counts);
/// an escape systemd does not know (`\d`) or an unterminated quote ends
/// the parse ("Invalid syntax, ignoring"): the words before it are set,
/// nothing after. `Err` names what was skipped.
fn environment(service: &mut Service, value: &str, spec: &Specifiers) -> Result<(), String> {
    let split = words::split(value, UnknownEscape::Ends);
    let mut skipped = Vec::new();
    for word in split.words {
        let word = match String::from_utf8(word) {
            Ok(word) => word,
            Err(error) => {
                let shown = String::from_utf8_lossy(error.as_bytes()).into_owned();
                skipped.push(format!("{shown:?} (not UTF-8)"));
                continue;
            }
        };
        let word = match spec.resolve(&word) {
            Ok(word) => word,
            Err(why) => {
                skipped.push(format!("{word:?} ({why})"));
                continue;
            }
        };
        match word.split_once('=') {
            Some((name, value)) if syntax::is_var_name(name) => {
                service
                    .environment
                    .push((name.to_owned(), value.to_owned()));
            }
            _ => skipped.push(format!("{word:?} (no NAME=value assignment)")),
        }
    }
    let mut said = Vec::new();
    if !skipped.is_empty() {
        said.push(format!("the word(s) {}", skipped.join(", ")));
    }
    let set = if let Some(why) = split.stopped {
        said.push(format!(
            "the rest of the line from {why} on (systemd says \"Invalid syntax, ignoring\" and sets none of it)"
        ));
        "the words before it are set"
    } else {
        "the others are set"
    };
    if said.is_empty() {
        Ok(())
    } else {
        Err(format!("{} ({set})", said.join("; ")))
    }
}

/// The environment the service's process gets: `own` (what systemd sets
/// from the account: `HOME`, `USER`, `LOGNAME`, `SHELL`), the manager's
/// `manager` (where `own` has not set the name), the unit's
/// `Environment=`, then its environment files' variables `files` (in
/// order), less `UnsetEnvironment=`.
pub fn exec_environment(own: &Vars, manager: &Vars, service: &Service, files: &[Vars]) -> Vars {
    let mut env = own.clone();
    for (name, value) in manager {
        if vars::get(&env, name).is_none() {
            vars::set(&mut env, name, value);
        }
    }
    for (name, value) in &service.environment {
        vars::set(&mut env, name, value);
    }
    for file in files {
        for (name, value) in file {
            vars::set(&mut env, name, value);
        }
    }
    for entry in &service.unset_environment {
        match entry.split_once('=') {
            Some((name, value)) if vars::get(&env, name) == Some(value) => {
                vars::unset(&mut env, name);
            }
            Some(_) => {}
            None => vars::unset(&mut env, entry),
        }
    }
    env
}

/// Where the process starts: `WorkingDirectory=` (`~` is the home of the
/// user it runs as; a leading `-` only says it may be missing), else the
/// home folder for the user manager and `/` for the system manager.
pub fn working_directory(service: &Service, home: &str, user_manager: bool) -> String {
    match service.working_directory.as_deref() {
        Some(dir) => {
            let dir = dir.strip_prefix('-').unwrap_or(dir);
            let dir = dir.strip_prefix('!').unwrap_or(dir);
            if dir == "~" {
                home.to_owned()
            } else {
                dir.to_owned()
            }
        }
        None if user_manager => home.to_owned(),
        None => "/".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specifiers(home: &str, instance: &str) -> Specifiers {
        Specifiers {
            home: home.into(),
            user: "root".into(),
            uid: 0,
            instance: instance.into(),
            unit: format!("rch-sweep@{instance}.service"),
            runtime: "/run".into(),
            state: "/var/lib".into(),
            cache: "/var/cache".into(),
            logs: "/var/log".into(),
            config: "/etc".into(),
        }
    }

    fn file(source: &str, text: &str) -> (String, String) {
        (source.to_owned(), text.to_owned())
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn drop_ins_override_and_empty_settings_reset() {
        let unit = "[Service]\nUser=%i\nWorkingDirectory=~\nExecStart=rch-sweep\n\
                    Environment=PATH=/usr/local/bin:/usr/bin:/bin\nEnvironment=\"A=x y\" B=%u\n";
        let first = "[Service]\nEnvironment=XDG_RUNTIME_DIR=/run/user/1001\n\
                     EnvironmentFile=-/etc/default/rch-sweep-%i\n";
        let second = "[Service]\nExecStart=\nExecStart=-/opt/bin/rch-sweep --lease-dir %h/l --quiet\n\
                      Environment=\nEnvironment=C=3\nUnsetEnvironment=X\n";
        let service = merge(
            &[
                file("/usr/lib/systemd/system/rch-sweep@.service", unit),
                file("/etc/a.conf", first),
                file("/etc/b.conf", second),
            ],
            &specifiers("/root", "alice"),
        );
        assert_eq!(service.user.as_deref(), Some("alice"));
        assert_eq!(service.working_directory.as_deref(), Some("~"));
        // The empty Environment= dropped the unit's and the first drop-in's.
        assert_eq!(service.environment, pairs(&[("C", "3")]));
        assert_eq!(
            service.environment_files,
            [EnvironmentFile {
                path: "/etc/default/rch-sweep-alice".into(),
                optional: true,
                source: "/etc/a.conf".into()
            }]
        );
        assert_eq!(
            service.exec_start,
            [ExecCommand {
                program: "/opt/bin/rch-sweep".into(),
                args: ["--lease-dir", "/root/l", "--quiet"]
                    .map(String::from)
                    .to_vec(),
                expand: true,
                ignore_failure: true,
                source: "/etc/b.conf".into(),
            }]
        );
        assert_eq!(
            service.working_directory_source,
            "/usr/lib/systemd/system/rch-sweep@.service"
        );
        assert!(service.exec_start[0].is_sweep());
        assert!(service.problems.is_empty(), "{:?}", service.problems);
        // Without the second drop-in, the first adds to the unit's.
        let service = merge(
            &[file("u", unit), file("a", first)],
            &specifiers("/root", "alice"),
        );
        assert_eq!(
            service.environment,
            pairs(&[
                ("PATH", "/usr/local/bin:/usr/bin:/bin"),
                ("A", "x y"),
                ("B", "root"),
                ("XDG_RUNTIME_DIR", "/run/user/1001")
            ])
        );
    }

    #[test]
    fn what_systemd_would_ignore_is_named_with_its_file() {
        let service = merge(
            &[file(
                "/etc/x.conf",
                "[Service]\nEnvironment=NOT-A-NAME=1\nEnvironment=\"open\nExecStart=rch-sweep %H\n\
                 EnvironmentFile=relative\n",
            )],
            &specifiers("/root", "alice"),
        );
        assert_eq!(service.problems.len(), 4, "{:?}", service.problems);
        assert!(
            service.problems[0]
                .starts_with("/etc/x.conf:2: systemd ignores Environment=NOT-A-NAME=1"),
            "{:?}",
            service.problems
        );
        assert!(service.problems[2].contains("%H"));
        assert!(service.exec_start.is_empty());
    }

    #[test]
    fn exec_start_prefixes() {
        let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let at = ExecCommand::from_words(&words(&["@/usr/bin/rch-sweep", "sweeper", "--quiet"]))
            .expect("command");
        assert_eq!(at.program, "/usr/bin/rch-sweep");
        assert_eq!(at.args, ["--quiet"]);
        let colon = ExecCommand::from_words(&words(&["-:rch-sweep", "$X"])).expect("command");
        assert!(!colon.expand);
        assert_eq!(colon.args, ["$X"]);
        assert!(
            !ExecCommand::from_words(&words(&["/bin/true", "rch-sweep"]))
                .expect("command")
                .is_sweep()
        );
        assert_eq!(ExecCommand::from_words(&[]), None);
    }

    #[test]
    fn the_process_environment_in_systemds_order() {
        let own = pairs(&[
            ("HOME", "/home/alice"),
            ("USER", "alice"),
            ("LOGNAME", "alice"),
            ("SHELL", "/bin/bash"),
        ]);
        let manager = pairs(&[
            ("HOME", "/elsewhere"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("PATH", MANAGER_PATH),
        ]);
        let service = Service {
            environment: pairs(&[("PATH", "/usr/bin"), ("A", "1"), ("B", "2"), ("D", "4")]),
            unset_environment: vec!["B".into(), "D=5".into(), "SHELL".into()],
            ..Service::default()
        };
        let files = [pairs(&[("A", "from the file")]), pairs(&[("C", "3")])];
        let env = exec_environment(&own, &manager, &service, &files);
        assert_eq!(
            env,
            pairs(&[
                ("HOME", "/home/alice"),
                ("USER", "alice"),
                ("LOGNAME", "alice"),
                ("XDG_RUNTIME_DIR", "/run/user/1000"),
                ("PATH", "/usr/bin"),
                ("A", "from the file"),
                ("D", "4"),
                ("C", "3"),
            ])
        );
    }

    #[test]
    fn the_working_directory() {
        let mut service = Service::default();
        assert_eq!(working_directory(&service, "/home/a", true), "/home/a");
        assert_eq!(working_directory(&service, "/home/a", false), "/");
        service.working_directory = Some("~".into());
        assert_eq!(working_directory(&service, "/home/a", false), "/home/a");
        service.working_directory = Some("-/srv/x".into());
        assert_eq!(working_directory(&service, "/home/a", false), "/srv/x");
    }

    #[test]
    fn an_invalid_word_of_environment_is_skipped_not_the_line() {
        let service = merge(
            &[file(
                "/u",
                "[Service]\nEnvironment=FLAGS=-q -v RCH_SWEEP_LEASE_DIR=/good \"B=x y\" %H=1 C=%u =x\n\
                 Environment=D=4 \"E=5\n",
            )],
            &specifiers("/root", "alice"),
        );
        assert_eq!(
            service.environment,
            pairs(&[
                ("FLAGS", "-q"),
                ("RCH_SWEEP_LEASE_DIR", "/good"),
                ("B", "x y"),
                ("C", "root"),
                ("D", "4"),
            ])
        );
        assert_eq!(service.problems.len(), 2, "{:?}", service.problems);
        assert!(
            service.problems[0].contains("\"-v\"")
                && service.problems[0].contains("%H")
                && service.problems[0].contains("\"=x\""),
            "{:?}",
            service.problems
        );
        assert!(
            service.problems[1].contains("the rest of the line"),
            "{:?}",
            service.problems
        );
    }

    /// systemd 252 (and `systemd-analyze verify`) on such lines: "Invalid
    /// syntax, ignoring" for an unknown escape in `Environment=`, the
    /// words before it set; in `ExecStart=` the escape kept, and in the
    /// program's name refused as "special characters", fatal.
    #[test]
    fn escapes_as_systemd_reads_them_named_with_file_and_line() {
        let service = merge(
            &[file(
                "/u",
                "[Service]\nEnvironment=NOTE=C:\\data RCH_SWEEP_LEASE_DIR=/wrong\n\
                 Environment=A=1 B=\\x4 C=3\n\
                 Environment=M=\\xff N=\\x41\\u00e9\n\
                 Environment=D=4 \\\n  E=\\d\n\
                 ExecStart=/opt/rch-sweep --lease-dir=C:\\data \"a\\ b\" \\$X\n\
                 ExecStart=/opt/x\\dy/rch-sweep\n\
                 ExecStart=-/opt/\\\"q/tool\n",
            )],
            &specifiers("/root", "alice"),
        );
        assert_eq!(
            service.environment,
            pairs(&[("A", "1"), ("N", "Aé"), ("D", "4")])
        );
        let problems = service.problems.join("\n");
        for said in [
            "/u:2: systemd ignores Environment=NOTE=C:\\data RCH_SWEEP_LEASE_DIR=/wrong: the rest of the line from an escape systemd does not know (\\d) on",
            "/u:3: systemd ignores Environment=A=1 B=\\x4 C=3: the rest of the line from an escape systemd does not know (\\x) on",
            "/u:4: systemd ignores Environment=M=\\xff N=\\x41\\u00e9: the word(s) \"M=\u{fffd}\" (not UTF-8) (the others are set)",
            "/u:6: systemd ignores Environment=D=4    E=\\d",
            "/u:8: ExecStart=/opt/x\\dy/rch-sweep: an escape systemd does not know in the program's name",
            "/u:9: ExecStart=-/opt/\\\"q/tool: the program's name \"/opt/\\\"q/tool\" holds a backslash",
        ] {
            assert!(problems.contains(said), "{said} not in\n{problems}");
        }
        assert_eq!(service.exec_start.len(), 1, "{:?}", service.exec_start);
        assert_eq!(
            service.exec_start[0].args,
            ["--lease-dir=C:\\data", "a\\ b", "\\$X"]
        );
        assert_eq!(service.fatal.len(), 1, "{:?}", service.fatal);
        assert!(
            service.fatal[0]
                .starts_with("/u:8: ExecStart=/opt/x\\dy/rch-sweep: the program's name")
                && service.fatal[0].ends_with("systemd does not start the unit"),
            "{:?}",
            service.fatal
        );
    }
}

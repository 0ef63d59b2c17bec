//! What systemd would refuse to start, read from the merged unit: an
//! `ExecStart=` program that does not exist or may not run, a
//! `WorkingDirectory=` or an `EnvironmentFile=` that is missing without
//! its `-` (SPEC, `doctor --as` units: `fail route`).

use super::{EnvironmentFile, MANAGER_PATH, Service, glob, working_directory};

/// Something systemd would do other than start the sweep as doctor then
/// checks it: `fails` when systemd would not start it at all (or would
/// start it and run no sweep), else a warning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub fails: bool,
    pub text: String,
}

impl Refusal {
    fn fails(text: String) -> Refusal {
        Refusal { fails: true, text }
    }
    fn warns(text: String) -> Refusal {
        Refusal { fails: false, text }
    }
}

/// What stands at a program's path, for the user it runs as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    Missing,
    NotExecutable,
    Executable,
}

/// The program systemd 252 runs for `program` as written, and what stands
/// there: an absolute path as it is; a bare name looked up in systemd's
/// fixed search path ([`MANAGER_PATH`], systemd.service(5)), the first
/// folder where it is executable.
pub fn program_path(program: &str, state: &dyn Fn(&str) -> Program) -> (String, Program) {
    if program.starts_with('/') {
        return (program.to_owned(), state(program));
    }
    MANAGER_PATH
        .split(':')
        .map(|dir| format!("{dir}/{program}"))
        .find(|path| state(path) == Program::Executable)
        .map_or_else(
            || (program.to_owned(), Program::Missing),
            |path| (path, Program::Executable),
        )
}

/// The `ExecStart=` commands systemd cannot run: a missing program or one
/// that is not executable. A failing command without `-` stops the unit;
/// with `-` systemd skips a missing program and ignores a failure, which
/// for the command that sweeps still means no sweep (so it fails too).
pub fn exec_refusals(service: &Service, state: &dyn Fn(&str) -> Program) -> Vec<Refusal> {
    let mut out = Vec::new();
    for command in &service.exec_start {
        let (path, found) = program_path(&command.program, state);
        let what = match found {
            Program::Executable => continue,
            Program::Missing if command.program.starts_with('/') => "does not exist",
            Program::Missing => "is in none of systemd's search folders (MANAGER_PATH)",
            Program::NotExecutable => "is not executable",
        };
        let text = format!(
            "ExecStart= program {path} (set in {}) {what}",
            command.source
        );
        out.push(match (command.ignore_failure, command.is_sweep()) {
            (false, _) => Refusal::fails(format!("{text}: systemd does not start the unit")),
            (true, true) => Refusal::fails(format!(
                "{text}: systemd skips it (the - prefix) and no sweep runs"
            )),
            (true, false) => Refusal::warns(format!("{text}: systemd skips it (the - prefix)")),
        });
    }
    out
}

/// A `WorkingDirectory=` that is no folder, without `-`: systemd does not
/// start the unit (`200/CHDIR`). `home` stands for `~`.
pub fn working_directory_refusal(
    service: &Service,
    home: &str,
    is_dir: &dyn Fn(&str) -> bool,
) -> Option<Refusal> {
    let set = service.working_directory.as_deref()?;
    let optional = set.starts_with('-');
    let dir = working_directory(service, home, true);
    (!optional && !is_dir(&dir)).then(|| {
        Refusal::fails(format!(
            "WorkingDirectory={set} (set in {}): {dir} is no folder, so systemd does not start the unit",
            service.working_directory_source
        ))
    })
}

/// What reading one file an `EnvironmentFile=` names came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileRead {
    /// No file matches (the pattern expanded to nothing).
    Missing,
    /// This user may not read it.
    Denied,
    /// Another error of the system (a folder, a bad link...).
    Failed(String),
    /// doctor does not read it (a FIFO, a device, too large).
    NotRead(String),
}

/// What systemd does about an `EnvironmentFile=` it cannot read at `path`
/// (one file its pattern matched, or the pattern itself when it matched
/// none): with `-` it goes on without it (`ignore_errors`); without, it
/// does not start the unit. The system manager reads as root: a file this
/// user may not read is no sign systemd cannot.
pub fn environment_file_refusal(
    file: &EnvironmentFile,
    path: &str,
    read: &FileRead,
    system_manager: bool,
) -> Option<Refusal> {
    let what = if path == file.path {
        format!("EnvironmentFile={} (in {})", file.path, file.source)
    } else {
        format!("EnvironmentFile={} (in {}): {path}", file.path, file.source)
    };
    let missing = if glob::has_magic(&file.path) && path == file.path {
        "matches no file"
    } else {
        "does not exist"
    };
    match read {
        FileRead::Missing if file.optional => None,
        FileRead::NotRead(why) => Some(Refusal::warns(format!(
            "{what} is not read ({why}); its variables are not checked"
        ))),
        FileRead::Denied if system_manager => Some(Refusal::warns(format!(
            "{what} cannot be read by doctor (systemd reads it as root); its variables are not checked"
        ))),
        _ if file.optional => Some(Refusal::warns(format!(
            "{what} cannot be read ({}): systemd goes on without it (the - prefix)",
            describe(read)
        ))),
        FileRead::Missing => Some(Refusal::fails(format!(
            "{what} {missing}: systemd does not start the unit (create it, or prefix it with - to make it optional)"
        ))),
        _ => Some(Refusal::fails(format!(
            "{what} cannot be read ({}): systemd does not start the unit",
            describe(read)
        ))),
    }
}

fn describe(read: &FileRead) -> String {
    match read {
        FileRead::Missing => "no such file".to_owned(),
        FileRead::Denied => "permission denied".to_owned(),
        FileRead::Failed(why) | FileRead::NotRead(why) => why.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;

    fn exec(program: &str, ignore_failure: bool) -> ExecCommand {
        ExecCommand {
            program: program.into(),
            args: Vec::new(),
            expand: true,
            ignore_failure,
            source: "/u".into(),
        }
    }

    #[test]
    fn a_program_systemd_cannot_run_is_refused() {
        let state = |path: &str| match path {
            "/usr/bin/rch-sweep" | "/usr/local/bin/tool" => Program::Executable,
            "/opt/rch-sweep" | "/usr/sbin/tool" => Program::NotExecutable,
            _ => Program::Missing,
        };
        assert_eq!(
            program_path("tool", &state),
            ("/usr/local/bin/tool".to_owned(), Program::Executable)
        );
        assert_eq!(
            program_path("nowhere", &state),
            ("nowhere".to_owned(), Program::Missing)
        );
        let service = Service {
            exec_start: vec![
                exec("/usr/bin/rch-sweep", false),
                exec("/usr/bin/missing", false),
                exec("/usr/bin/missing-but-dashed", true),
                exec("/opt/rch-sweep", false),
                exec("/srv/rch-sweep", true),
                exec("rch-sweep", false),
            ],
            ..Service::default()
        };
        let refusals = exec_refusals(&service, &state);
        let fails: Vec<bool> = refusals.iter().map(|r| r.fails).collect();
        // The bare rch-sweep is /usr/bin/rch-sweep: no refusal.
        assert_eq!(fails, [true, false, true, true], "{refusals:?}");
        assert!(
            refusals[0]
                .text
                .starts_with("ExecStart= program /usr/bin/missing (set in /u) does not exist")
        );
        assert!(refusals[1].text.contains("systemd skips it (the - prefix)"));
        assert!(
            refusals[2]
                .text
                .contains("/opt/rch-sweep (set in /u) is not executable")
        );
        assert!(refusals[3].text.contains("no sweep runs"));
        // A bare name in none of the folders.
        let bare = Service {
            exec_start: vec![exec("rch-sweeper", false)],
            ..Service::default()
        };
        assert!(
            exec_refusals(&bare, &state)[0]
                .text
                .contains("is in none of systemd's search folders")
        );
    }

    #[test]
    fn a_missing_working_directory_without_a_dash_is_refused() {
        let is_dir = |dir: &str| dir == "/home/a" || dir == "/srv";
        let mut service = Service {
            working_directory: Some("/srv/gone".into()),
            working_directory_source: "/etc/x.conf".into(),
            ..Service::default()
        };
        let refusal = working_directory_refusal(&service, "/home/a", &is_dir).expect("refused");
        assert!(refusal.fails);
        assert!(
            refusal
                .text
                .starts_with("WorkingDirectory=/srv/gone (set in /etc/x.conf)")
        );
        service.working_directory = Some("-/srv/gone".into());
        assert_eq!(
            working_directory_refusal(&service, "/home/a", &is_dir),
            None
        );
        service.working_directory = Some("~".into());
        assert_eq!(
            working_directory_refusal(&service, "/home/a", &is_dir),
            None
        );
        assert_eq!(
            working_directory_refusal(&service, "/home/gone", &is_dir).map(|r| r.fails),
            Some(true)
        );
        assert_eq!(
            working_directory_refusal(&Service::default(), "/home/gone", &is_dir),
            None
        );
    }

    #[test]
    fn an_environment_file_systemd_cannot_read() {
        let file = |path: &str, optional| EnvironmentFile {
            path: path.into(),
            optional,
            source: "/u".into(),
        };
        let needed = file("/etc/default/rch-sweep", false);
        let refusal = environment_file_refusal(&needed, &needed.path, &FileRead::Missing, false)
            .expect("refused");
        assert!(refusal.fails);
        assert_eq!(
            refusal.text,
            "EnvironmentFile=/etc/default/rch-sweep (in /u) does not exist: systemd does not start the unit (create it, or prefix it with - to make it optional)"
        );
        let pattern = file("/etc/rch/*.env", false);
        let refusal = environment_file_refusal(&pattern, &pattern.path, &FileRead::Missing, true)
            .expect("refused");
        assert!(refusal.fails && refusal.text.contains("matches no file"));
        // Optional: missing is nothing; unreadable is a warning without
        // the advice to add the - it has.
        let optional = file("/etc/default/rch-sweep", true);
        assert_eq!(
            environment_file_refusal(&optional, &optional.path, &FileRead::Missing, false),
            None
        );
        let refusal = environment_file_refusal(&optional, &optional.path, &FileRead::Denied, false)
            .expect("warned");
        assert!(!refusal.fails);
        assert!(
            !refusal.text.contains("prefix it with -"),
            "{}",
            refusal.text
        );
        assert!(refusal.text.contains("systemd goes on without it"));
        // The system manager reads as root.
        let refusal = environment_file_refusal(&needed, &needed.path, &FileRead::Denied, true)
            .expect("warned");
        assert!(!refusal.fails);
        // The user manager cannot read what this user cannot.
        let refusal = environment_file_refusal(&needed, &needed.path, &FileRead::Denied, false)
            .expect("refused");
        assert!(refusal.fails);
        let refusal = environment_file_refusal(
            &pattern,
            "/etc/rch/a.env",
            &FileRead::NotRead("it is a FIFO".into()),
            false,
        )
        .expect("warned");
        assert!(!refusal.fails);
        assert!(
            refusal
                .text
                .starts_with("EnvironmentFile=/etc/rch/*.env (in /u): /etc/rch/a.env is not read")
        );
    }
}

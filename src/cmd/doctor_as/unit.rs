//! `doctor --as user-timer|system-timer`: the unit as systemd would
//! start it, from the running manager (`systemctl show`), else from its
//! files on disk merged by [`unit_file`], else the shipped unit. What
//! systemd would refuse to start (a masked unit, a missing
//! `EnvironmentFile=`, `ExecStart=` program or `WorkingDirectory=`) fails
//! the report's `environment` check, named with the file that sets it.

use super::{Plan, Planned, ToolAnswer, ask, is_output_flag, program, refused_option};
use crate::cli::Route;
use crate::fsio::{self, NotRead};
use crate::route::unit_file::search::{self, Scope, UnitPath};
use crate::route::unit_file::{
    self, FileRead, Program, Refusal, Service, Specifiers, environment_d, glob, syntax,
};
use crate::route::vars::{self, Vars};
use crate::{account, config, route};
use std::io::ErrorKind;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// The systemd doctor reads files as when `systemctl --version` does not
/// say: Debian 12's.
const ASSUMED_VERSION: u32 = 252;

/// The most doctor reads of one unit file, drop-in or `EnvironmentFile=`:
/// far more than any real one holds, and a bound on what a file standing
/// there (or `/dev/zero` linked there) can make it read.
const MAX_UNIT_TEXT: u64 = 1024 * 1024;

/// The unit of `route`, as systemd would start it.
pub(super) fn plan(
    route: Route,
    uid: u32,
    account: Option<&account::Account>,
    own: &Vars,
) -> Result<Plan, String> {
    let user_manager = route == Route::UserTimer;
    let name = account.map(|a| a.name.clone()).ok_or_else(|| {
        format!("uid {uid} has no entry in the password database, so no unit runs as it")
    })?;
    let home = vars::get(own, "HOME").unwrap_or("/").to_owned();
    let (unit, shipped, spec) = which_unit(user_manager, &name, uid, &home);
    let mut plan = Plan::default();
    let version = systemd_version(&mut plan);
    let loaded = match from_manager(user_manager, &unit, &mut plan) {
        Some((ManagerLoad::Service(service), manager_env)) => Some((*service, manager_env)),
        Some((ManagerLoad::Masked, _)) => None,
        // The manager answers, but has no such unit: what is on disk (the
        // shipped unit, said so) in the manager's environment.
        Some((ManagerLoad::NotFound, manager_env)) => {
            from_disk(user_manager, &unit, shipped, &spec, &home, uid, &mut plan)
                .map(|service| (service, manager_env))
        }
        None => {
            from_disk(user_manager, &unit, shipped, &spec, &home, uid, &mut plan).map(|service| {
                let manager_env = manager_environment(user_manager, own, &home, version, &mut plan);
                (service, manager_env)
            })
        }
    };
    // Masked: systemd starts nothing; the other checks run with doctor's
    // own options in what systemd would give.
    let Some((service, manager_env)) = loaded else {
        let manager_path = vec![("PATH".to_owned(), unit_file::MANAGER_PATH.to_owned())];
        plan.runs.push(Planned {
            line: None,
            file: None,
            env: unit_file::exec_environment(own, &manager_path, &Service::default(), &[]),
            cwd: PathBuf::from(unit_file::working_directory(
                &Service::default(),
                &home,
                user_manager,
            )),
            options: None,
            failures: Vec::new(),
        });
        return Ok(plan);
    };
    plan.warnings.extend(service.problems.iter().cloned());
    plan.failures.extend(service.fatal.iter().cloned());
    if let Some(runs_as) = service
        .user
        .as_deref()
        .filter(|u| !user_manager && *u != name)
    {
        plan.warnings.push(format!(
            "{unit} runs as {runs_as} (User=), but doctor runs as {name}: checked as {name}; run doctor as {runs_as}"
        ));
    }
    let (files, mut refusals) = environment_files(&service, user_manager, version, &mut plan);
    let env = unit_file::exec_environment(own, &manager_env, &service, &files);
    refusals.extend(unit_file::exec_refusals(&service, &program_state));
    let is_dir = |dir: &str| Path::new(dir).is_dir();
    refusals.extend(unit_file::working_directory_refusal(
        &service, &home, &is_dir,
    ));
    let mut cwd = unit_file::working_directory(&service, &home, user_manager);
    if !is_dir(&cwd) {
        // `-`: systemd starts it where the manager is; without, it never
        // starts (failed above). doctor runs where it can.
        cwd = unit_file::working_directory(&Service::default(), &home, user_manager);
    }
    let cwd = PathBuf::from(cwd);
    for refusal in refusals {
        let Refusal { fails, text } = refusal;
        if fails {
            plan.failures.push(text);
        } else {
            plan.warnings.push(text);
        }
    }
    let options = options(&service, &env, &unit, &mut plan);
    plan.runs.push(Planned {
        line: None,
        file: None,
        env,
        cwd,
        options,
        failures: Vec::new(),
    });
    Ok(plan)
}

/// The `EnvironmentFile=`s of `service`, each pattern expanded as systemd's
/// glob does and each match read bounded: their parsed contents, in order,
/// and what systemd would say of those it cannot read.
fn environment_files(
    service: &Service,
    user_manager: bool,
    version: u32,
    plan: &mut Plan,
) -> (Vec<Vars>, Vec<Refusal>) {
    let mut files = Vec::new();
    let mut refusals = Vec::new();
    for file in &service.environment_files {
        // What this user cannot look into may be there for root: it is
        // read (and its error told) rather than called missing.
        let matched = glob::expand(
            &file.path,
            &list,
            &|path: &Path| !matches!(path.symlink_metadata(), Err(e) if e.kind() == ErrorKind::NotFound),
        );
        if matched.is_empty() {
            let read = if unlistable(&file.path) {
                FileRead::Denied
            } else {
                FileRead::Missing
            };
            refusals.extend(unit_file::environment_file_refusal(
                file,
                &file.path,
                &read,
                !user_manager,
            ));
        }
        for path in matched {
            let read = match fsio::read_regular_text(&path, MAX_UNIT_TEXT) {
                Ok(text) => {
                    plan.from
                        .push(format!("EnvironmentFile {}", path.display()));
                    let (vars, notes) = syntax::environment_file(&text, version);
                    files.push(vars);
                    plan.notes.extend(
                        notes
                            .into_iter()
                            .map(|note| format!("EnvironmentFile {}: {note}", path.display())),
                    );
                    continue;
                }
                Err(NotRead::Io(error)) => match error.kind() {
                    ErrorKind::NotFound => FileRead::Missing,
                    ErrorKind::PermissionDenied => FileRead::Denied,
                    _ => FileRead::Failed(error.to_string()),
                },
                Err(refused) => FileRead::NotRead(refused.to_string()),
            };
            refusals.extend(unit_file::environment_file_refusal(
                file,
                &path.display().to_string(),
                &read,
                !user_manager,
            ));
        }
    }
    (files, refusals)
}

/// The unit of this user for the manager, the unit rch-sweep ships for
/// it, and what its specifiers stand for (`%h` and `%u` are the manager's
/// user's: root's for the system manager).
fn which_unit(
    user_manager: bool,
    name: &str,
    uid: u32,
    home: &str,
) -> (String, &'static str, Specifiers) {
    if user_manager {
        let spec = Specifiers {
            home: home.to_owned(),
            user: name.to_owned(),
            uid,
            instance: String::new(),
            unit: "rch-sweep.service".into(),
            runtime: format!("/run/user/{uid}"),
            state: format!("{home}/.local/state"),
            cache: format!("{home}/.cache"),
            logs: format!("{home}/.local/state/log"),
            config: format!("{home}/.config"),
        };
        ("rch-sweep.service".to_owned(), route::USER_UNIT, spec)
    } else {
        let root_home = account::entry(0)
            .map(|root| root.home.display().to_string())
            .filter(|home| !home.is_empty())
            .unwrap_or_else(|| "/root".to_owned());
        let unit = format!("rch-sweep@{name}.service");
        let spec = Specifiers {
            home: root_home,
            user: "root".into(),
            uid: 0,
            instance: name.to_owned(),
            unit: unit.clone(),
            runtime: "/run".into(),
            state: "/var/lib".into(),
            cache: "/var/cache".into(),
            logs: "/var/log".into(),
            config: "/etc".into(),
        };
        (unit, route::SYSTEM_UNIT, spec)
    }
}

/// The options of the unit's `ExecStart=` that runs rch-sweep, `$VAR`
/// expanded in `env`; `None` when it gives none (doctor's own then stand
/// in) or runs no rch-sweep.
fn options(service: &Service, env: &Vars, unit: &str, plan: &mut Plan) -> Option<Vec<String>> {
    let sweeps: Vec<&unit_file::ExecCommand> =
        service.exec_start.iter().filter(|c| c.is_sweep()).collect();
    match sweeps.first() {
        None => {
            plan.warnings.push(format!(
                "{unit}'s ExecStart= does not run rch-sweep: checked with the options given to doctor"
            ));
            None
        }
        Some(command) => {
            if sweeps.len() > 1 {
                plan.warnings.push(format!(
                    "{unit} runs rch-sweep {} times (ExecStart=): only the first is checked",
                    sweeps.len()
                ));
            }
            let args = if command.expand {
                syntax::expand_args(&command.args, env)
            } else {
                command.args.clone()
            };
            if let Some(why) = refused_option(&args) {
                plan.warnings.push(format!("ExecStart= gives {why}"));
            }
            let args: Vec<String> = args
                .into_iter()
                .filter(|a| *a != "--as" && !a.starts_with("--as="))
                .collect();
            let own_options = args.iter().any(|a| !is_output_flag(a));
            own_options.then_some(args)
        }
    }
}

/// What a manager has of the unit.
enum ManagerLoad {
    Service(Box<Service>),
    /// Masked: systemd starts nothing (said in the plan's failures).
    Masked,
    /// Not found (or another load state, said in a warning).
    NotFound,
}

/// The systemd version `systemctl --version` gives, else the one assumed
/// (said in a note): it decides how an environment file's comment ending
/// in `\` reads.
fn systemd_version(plan: &mut Plan) -> u32 {
    let said = program("systemctl", &["/usr/bin/systemctl", "/bin/systemctl"])
        .map(|systemctl| ask(&systemctl, &["--version"]));
    let why = match said {
        Some(ToolAnswer::Out(text)) => {
            match text.lines().next().and_then(syntax::systemd_version) {
                Some(version) => return version,
                None => "its first line names no version".to_owned(),
            }
        }
        Some(ToolAnswer::Failed(code, last)) => format!(
            "it exited {}: {last}",
            code.map_or("on a signal".to_owned(), |c| c.to_string())
        ),
        Some(ToolAnswer::Broken(why)) => why,
        None => "systemctl is not installed".to_owned(),
    };
    plan.notes.push(format!(
        "systemctl --version does not say which systemd runs ({why}): environment files are read as systemd {ASSUMED_VERSION} (Debian 12) reads them, a comment ending in \\ taking the next line"
    ));
    ASSUMED_VERSION
}

/// What stands at a unit file, drop-in or `environment.d` file.
fn entry(path: &Path) -> UnitPath {
    match std::fs::metadata(path) {
        Ok(meta) if meta.file_type().is_char_device() => UnitPath::Masked,
        Ok(meta) if meta.is_file() && meta.len() == 0 => UnitPath::Masked,
        Ok(meta) if meta.is_file() => UnitPath::File,
        Ok(_) => UnitPath::Other,
        Err(error) if error.kind() == ErrorKind::NotFound && path.symlink_metadata().is_err() => {
            UnitPath::Missing
        }
        Err(_) => UnitPath::Other,
    }
}

/// The names in a folder (none when it cannot be listed).
fn list(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a folder on the way to `pattern`, before its first magic
/// character, cannot be looked into by this user.
fn unlistable(pattern: &str) -> bool {
    let mut dir = PathBuf::from("/");
    for component in pattern.split('/').filter(|c| !c.is_empty()) {
        if let Err(error) = std::fs::read_dir(&dir) {
            return error.kind() == ErrorKind::PermissionDenied;
        }
        if glob::has_magic(component) {
            return false;
        }
        dir.push(component);
    }
    false
}

/// What stands at an `ExecStart=` program for this user.
fn program_state(path: &str) -> Program {
    let path = Path::new(path);
    if path.metadata().is_err() {
        Program::Missing
    } else if config::is_executable(path) {
        Program::Executable
    } else {
        Program::NotExecutable
    }
}

/// The manager's environment when no manager answers: its `PATH`, and for
/// the user manager what `environment.d` adds (over the variables it has
/// from the account, which `$VAR` there may use).
fn manager_environment(
    user_manager: bool,
    own: &Vars,
    home: &str,
    version: u32,
    plan: &mut Plan,
) -> Vars {
    let path = vec![("PATH".to_owned(), unit_file::MANAGER_PATH.to_owned())];
    if !user_manager {
        return path;
    }
    let mut env = own.clone();
    vars::set(&mut env, "PATH", unit_file::MANAGER_PATH);
    let folders = environment_d::folders(&Path::new(home).join(".config"));
    for file in environment_d::files(&folders, &list) {
        if entry(&file) == UnitPath::Masked {
            continue;
        }
        match fsio::read_regular_text(&file, MAX_UNIT_TEXT) {
            Ok(text) => {
                plan.from.push(format!("environment.d {}", file.display()));
                let notes = environment_d::apply(&mut env, &text, version);
                plan.notes.extend(
                    notes
                        .into_iter()
                        .map(|note| format!("environment.d {}: {note}", file.display())),
                );
            }
            Err(error) => plan.warnings.push(format!(
                "environment.d file {} cannot be read ({error}): its variables are not checked",
                file.display()
            )),
        }
    }
    env
}

/// The unit as its manager describes it, and the manager's environment;
/// `None` when no manager answers.
fn from_manager(user_manager: bool, unit: &str, plan: &mut Plan) -> Option<(ManagerLoad, Vars)> {
    let systemctl = program("systemctl", &["/usr/bin/systemctl", "/bin/systemctl"])?;
    let scope: &[&str] = if user_manager { &["--user"] } else { &[] };
    let mut args = scope.to_vec();
    args.extend([
        "show",
        "-p",
        "LoadState",
        "-p",
        "FragmentPath",
        "-p",
        "DropInPaths",
        "-p",
        "Environment",
        "-p",
        "EnvironmentFiles",
        "-p",
        "ExecStart",
        "-p",
        "WorkingDirectory",
        "-p",
        "User",
        unit,
    ]);
    let ToolAnswer::Out(text) = ask(&systemctl, &args) else {
        return None;
    };
    let shown = unit_file::show::parse(&text);
    if shown.load_state.is_empty() {
        return None;
    }
    let mut manager_args = scope.to_vec();
    manager_args.extend(["show", "-p", "Environment"]);
    let mut manager_env = match ask(&systemctl, &manager_args) {
        ToolAnswer::Out(text) => text
            .lines()
            .find_map(|line| line.strip_prefix("Environment="))
            .map(unit_file::show::environment)
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    if vars::get(&manager_env, "PATH").is_none() {
        vars::set(&mut manager_env, "PATH", unit_file::MANAGER_PATH);
    }
    let who = if user_manager {
        "the user manager (systemctl --user show)"
    } else {
        "the system manager (systemctl show)"
    };
    if shown.load_state == "masked" {
        plan.failures.push(format!(
            "{who} says {unit} is masked: systemd will not start it (systemctl{} unmask {unit})",
            if user_manager { " --user" } else { "" }
        ));
        return Some((ManagerLoad::Masked, manager_env));
    }
    if shown.load_state != "loaded" {
        plan.warnings
            .push(format!("{who} says {unit} is {}", shown.load_state));
        return Some((ManagerLoad::NotFound, manager_env));
    }
    plan.from.push(format!("{who}: {}", shown.files.join(", ")));
    Some((ManagerLoad::Service(Box::new(shown.service)), manager_env))
}

/// The unit from its files on disk; the shipped unit when none is
/// installed; `None` when it is masked (said in the plan's failures).
fn from_disk(
    user_manager: bool,
    unit: &str,
    shipped: &str,
    spec: &Specifiers,
    home: &str,
    uid: u32,
    plan: &mut Plan,
) -> Option<Service> {
    let scope = if user_manager {
        Scope::User
    } else {
        Scope::System
    };
    let search_path = search::search_path(scope, Path::new(home), uid);
    let found = search::find(&search_path, unit, &entry, &list);
    if let Some(mask) = &found.masked_by {
        plan.failures.push(format!(
            "{} masks {unit} (a link to /dev/null, or empty): systemd will not start it, and reads no copy further down the search path (systemctl{} unmask {unit})",
            mask.display(),
            if user_manager { " --user" } else { "" }
        ));
        plan.from.push(format!("{} (masked)", mask.display()));
        return None;
    }
    let mut files = Vec::new();
    match &found.unit_file {
        Some(path) => match fsio::read_regular_text(path, MAX_UNIT_TEXT) {
            Ok(text) => files.push((path.display().to_string(), text)),
            Err(error) => {
                plan.warnings.push(format!(
                    "{} cannot be read ({error}): checked with the unit rch-sweep ships",
                    path.display()
                ));
                files.push(("the shipped unit".to_owned(), shipped.to_owned()));
            }
        },
        None => {
            let first = search_path.first().map(|dir| dir.display().to_string());
            let last = search_path.last().map(|dir| dir.display().to_string());
            plan.warnings.push(format!(
                "{unit} is not installed (no unit file in the {} folders of systemd's search path, {} to {}): checked with the unit rch-sweep ships, as it would run once installed",
                search_path.len(),
                first.unwrap_or_default(),
                last.unwrap_or_default()
            ));
            files.push((
                "the shipped unit (compiled in)".to_owned(),
                shipped.to_owned(),
            ));
        }
    }
    for path in &found.drop_ins {
        match fsio::read_regular_text(path, MAX_UNIT_TEXT) {
            Ok(text) => files.push((path.display().to_string(), text)),
            Err(error) => plan.warnings.push(format!(
                "drop-in {} cannot be read ({error}): left out",
                path.display()
            )),
        }
    }
    for path in &found.masked_drop_ins {
        plan.notes.push(format!(
            "{} masks the drop-in of that name (a link to /dev/null, or empty): systemd reads none of that name further down",
            path.display()
        ));
    }
    plan.from
        .extend(files.iter().map(|(source, _)| source.clone()));
    Some(unit_file::merge(&files, spec))
}

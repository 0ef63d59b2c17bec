//! `doctor --as user-timer|system-timer`: the unit as systemd would
//! start it, from the running manager (`systemctl show`), else from its
//! files on disk merged by [`unit_file`], else the shipped unit.

use super::{Plan, Planned, Said, ask, is_output_flag, program, refused_option};
use crate::cli::Route;
use crate::fsio::{self, NotRead};
use crate::unit_file::search::{self, Scope};
use crate::unit_file::{self, Service, Specifiers, syntax};
use crate::vars::{self, Vars};
use crate::{account, route};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

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
    let (service, manager_env) = match from_manager(user_manager, &unit, &mut plan) {
        Some((Some(service), manager_env)) => (service, manager_env),
        // The manager answers, but has no such unit: what is on disk (the
        // shipped unit, said so) in the manager's environment.
        Some((None, manager_env)) => (
            from_disk(user_manager, &unit, shipped, &spec, &home, uid, &mut plan),
            manager_env,
        ),
        None => {
            let manager_env = vec![("PATH".to_owned(), unit_file::MANAGER_PATH.to_owned())];
            (
                from_disk(user_manager, &unit, shipped, &spec, &home, uid, &mut plan),
                manager_env,
            )
        }
    };
    for problem in &service.problems {
        plan.warnings.push(format!("systemd ignores {problem}"));
    }
    if let Some(runs_as) = service
        .user
        .as_deref()
        .filter(|u| !user_manager && *u != name)
    {
        plan.warnings.push(format!(
            "{unit} runs as {runs_as} (User=), but doctor runs as {name}: checked as {name}; run doctor as {runs_as}"
        ));
    }
    let mut files = Vec::new();
    for (path, optional) in &service.environment_files {
        match fsio::read_regular_text(Path::new(path), MAX_UNIT_TEXT) {
            Ok(text) => {
                plan.from.push(format!("EnvironmentFile {path}"));
                files.push(syntax::environment_file(&text));
            }
            Err(NotRead::Io(error)) if *optional && error.kind() == ErrorKind::NotFound => {}
            // The system manager reads it as root: a file only root may
            // read is no sign that systemd cannot.
            Err(NotRead::Io(error))
                if !user_manager && error.kind() == ErrorKind::PermissionDenied =>
            {
                plan.warnings.push(format!(
                    "EnvironmentFile {path} cannot be read as {name} (systemd reads it as root); its variables are not checked"
                ))
            }
            Err(NotRead::Io(error)) => plan.warnings.push(format!(
                "EnvironmentFile {path} cannot be read ({error}): systemd does not start {unit} while it is missing (prefix it with - to make it optional)"
            )),
            Err(refused) => plan.warnings.push(format!(
                "EnvironmentFile {path} is not read ({refused}); its variables are not checked"
            )),
        }
    }
    let env = unit_file::exec_environment(own, &manager_env, &service, &files);
    let cwd = PathBuf::from(unit_file::working_directory(&service, &home, user_manager));
    let options = options(&service, &env, &unit, &mut plan);
    plan.runs.push(Planned {
        line: None,
        file: None,
        env,
        cwd,
        options,
    });
    Ok(plan)
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

/// The unit as its manager describes it (`None` when the manager has not
/// loaded it: not installed, masked), and the manager's environment;
/// `None` when no manager answers.
fn from_manager(
    user_manager: bool,
    unit: &str,
    plan: &mut Plan,
) -> Option<(Option<Service>, Vars)> {
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
    let Said::Out(text) = ask(&systemctl, &args) else {
        return None;
    };
    let shown = unit_file::show::parse(&text);
    if shown.load_state.is_empty() {
        return None;
    }
    let mut manager_args = scope.to_vec();
    manager_args.extend(["show", "-p", "Environment"]);
    let mut manager_env = match ask(&systemctl, &manager_args) {
        Said::Out(text) => text
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
    if shown.load_state != "loaded" {
        plan.warnings
            .push(format!("{who} says {unit} is {}", shown.load_state));
        return Some((None, manager_env));
    }
    plan.from.push(format!("{who}: {}", shown.files.join(", ")));
    Some((Some(shown.service), manager_env))
}

/// The unit from its files on disk; the shipped unit when none is installed.
fn from_disk(
    user_manager: bool,
    unit: &str,
    shipped: &str,
    spec: &Specifiers,
    home: &str,
    uid: u32,
    plan: &mut Plan,
) -> Service {
    let scope = if user_manager {
        Scope::User
    } else {
        Scope::System
    };
    let search_path = search::search_path(scope, Path::new(home), uid);
    let is_file = |path: &Path| std::fs::metadata(path).is_ok_and(|meta| meta.is_file());
    let list = |dir: &Path| {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let found = search::find(&search_path, unit, &is_file, &list);
    let mut files = Vec::new();
    match &found.unit_file {
        Some(path)
            if std::fs::canonicalize(path).is_ok_and(|real| real == Path::new("/dev/null")) =>
        {
            plan.warnings.push(format!(
                "{} masks {unit} (a link to /dev/null): systemd will not start it; checked with the unit rch-sweep ships",
                path.display()
            ));
            files.push(("the shipped unit".to_owned(), shipped.to_owned()));
        }
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
    plan.from
        .extend(files.iter().map(|(source, _)| source.clone()));
    unit_file::merge(&files, spec)
}

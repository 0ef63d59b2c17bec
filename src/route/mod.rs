//! What cron or a timer gives a sweep, read as its own reader reads it:
//! the route readers of `doctor --as`.
//!
//! - this file: the environments cron and the units give a run, and which
//!   decisions rest on a variable they lack;
//! - [`crontab`], [`shell_words`], [`wrappers`], [`pam_env`]: a crontab as
//!   cron reads it, a command's words as `/bin/sh` splits them, the
//!   wrappers a line starts rch-sweep through, the env files `pam_env`
//!   reads;
//! - [`unit_file`]: a service unit as systemd merges it;
//! - [`vars`]: an environment built up in order.
//!
//! May use: the files at the top of `src/` (`cli`, `config`, `account`).
//! Only `cmd` (doctor) uses this folder.
//!
//! The environments a sweep meets when cron or a timer starts it, and
//! which decisions of this process would come out differently there.
//!
//! A login shell has variables a crontab line or a unit does not: rch's
//! state home (`RCH_STATE_HOME`, `XDG_STATE_HOME`), `XDG_RUNTIME_DIR` for
//! the daemon's socket, a `PATH` with the folder `rch` lives in. A sweep
//! that relied on them at the terminal looks elsewhere under a timer, and a
//! lease directory that is not there is a silent success. `doctor --as`
//! starts from what [`environment`] gives (cron's defaults, what systemd
//! sets from the account) and lays the crontab's or the unit's own
//! settings over it; doctor's `environment` check lists what [`rests_on`]
//! finds. Both are functions over plain data. The shipped units are
//! compiled in: their `PATH` is what the `rch` and `environment` checks
//! compare with, and `doctor --as` checks with them where a unit is not
//! installed.

pub mod crontab;
pub mod pam_env;
pub mod shell_words;
pub mod unit_file;
pub mod vars;
pub mod wrappers;

use crate::account::Account;
use crate::cli::Route;
use crate::config;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// The shipped user unit, as installed.
pub const USER_UNIT: &str = include_str!("../../systemd/rch-sweep.service");

/// The shipped system template, as installed.
pub const SYSTEM_UNIT: &str = include_str!("../../systemd/rch-sweep@.service");

/// The `PATH` cron gives a line.
pub const CRON_PATH: &str = "/usr/bin:/bin";

/// The `PATH` a unit sets with `Environment=PATH=...`, specifiers as written.
pub fn unit_path(unit: &str) -> Option<&str> {
    unit.lines()
        .find_map(|line| line.trim().strip_prefix("Environment=PATH="))
}

/// A timer's `PATH` without the home folders: the system template's (the
/// user unit's ends with it, a unit test says so).
pub fn timer_path() -> &'static str {
    unit_path(SYSTEM_UNIT).unwrap_or_default()
}

/// What a route hands the run: its only variables, and where it starts.
#[derive(Debug, PartialEq, Eq)]
pub struct RouteEnv {
    pub vars: Vec<(&'static str, OsString)>,
    pub cwd: PathBuf,
}

/// What `route` gives a run by this user before its own configuration
/// (the crontab's variable lines, the unit's settings) is read, as SPEC
/// lists it: cron's defaults, `HOME` and `LOGNAME` from the account's
/// passwd entry (Debian's crontab(5); never this process's own, which `su`
/// or `sudo -E` may have kept from another account), `SHELL=/bin/sh` and
/// `PATH=/usr/bin:/bin`;
/// for the units what systemd sets from the account (`HOME`, `USER`,
/// `LOGNAME`, `SHELL`; for the user manager also `XDG_RUNTIME_DIR`), the
/// `PATH` coming from the unit or the manager. Each starts in the home
/// folder unless the route says otherwise. `env` is this process's
/// environment; an empty value counts as unset.
pub fn environment(
    route: Route,
    uid: u32,
    account: Option<&Account>,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<RouteEnv, String> {
    let var = |name: &str| env(name).filter(|value| !value.is_empty());
    let from_account = |field: fn(&Account) -> OsString| {
        account
            .map(field)
            .filter(|value: &OsString| !value.is_empty())
    };
    let account_home = || from_account(|a| a.home.clone().into_os_string());
    let account_name = || from_account(|a| a.name.clone().into());
    let home = match route {
        Route::Cron => account_home(),
        Route::UserTimer | Route::SystemTimer => account_home().or_else(|| var("HOME")),
    }
    .ok_or_else(|| match route {
        Route::Cron => format!(
            "cannot tell the home folder cron would start in: uid {uid} has no entry in the password database, where cron takes HOME from"
        ),
        Route::UserTimer | Route::SystemTimer => format!(
            "cannot tell the home folder {} would start in: this process has no HOME and uid {uid} has no entry in the password database",
            route.as_str()
        ),
    })?;
    let mut vars: Vec<(&'static str, OsString)> = vec![("HOME", home.clone())];
    match route {
        Route::Cron => {
            if let Some(name) = account_name() {
                vars.push(("LOGNAME", name));
            }
            vars.push(("SHELL", "/bin/sh".into()));
            vars.push(("PATH", CRON_PATH.into()));
        }
        Route::UserTimer | Route::SystemTimer => {
            if let Some(name) = account_name()
                .or_else(|| var("USER"))
                .or_else(|| var("LOGNAME"))
            {
                vars.push(("USER", name.clone()));
                vars.push(("LOGNAME", name));
            }
            let shell = from_account(|a| a.shell.clone().into_os_string())
                .or_else(|| var("SHELL"))
                .unwrap_or_else(|| "/bin/sh".into());
            vars.push(("SHELL", shell));
            if route == Route::UserTimer {
                vars.push(("XDG_RUNTIME_DIR", format!("/run/user/{uid}").into()));
            }
        }
    }
    Ok(RouteEnv {
        vars,
        cwd: PathBuf::from(home),
    })
}

/// A unit's value with systemd's `%h` (the home folder) and `%%` expanded,
/// the only specifiers the shipped `PATH` lines use (a unit test checks).
fn expand(value: &str, home: &OsStr) -> OsString {
    let mut out = Vec::with_capacity(value.len() + home.len());
    let mut bytes = value.bytes();
    while let Some(byte) = bytes.next() {
        if byte != b'%' {
            out.push(byte);
            continue;
        }
        match bytes.next() {
            Some(b'h') => out.extend_from_slice(home.as_bytes()),
            Some(other) => out.push(other),
            None => out.push(b'%'),
        }
    }
    OsString::from_vec(out)
}

/// Which options were given on the command line (a route keeps those; an
/// option that came from its variable is dropped with it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Given {
    pub lease_dir: bool,
    pub state_file: bool,
    pub rch: bool,
    pub socket: bool,
    pub metrics_file: bool,
}

/// What the `environment` check looks at.
pub struct EnvironmentFacts<'a> {
    /// This process's environment (an empty value counts as unset).
    pub env: &'a dyn Fn(&str) -> Option<OsString>,
    pub given: Given,
    pub uid: u32,
    /// The `PATH` entry `rch` was found in, when it was looked up on `PATH`
    /// and found there.
    pub rch_path_entry: Option<PathBuf>,
    /// Whether a socket stands at `$XDG_RUNTIME_DIR/rch.sock`, rch's own
    /// default while that variable is set.
    pub runtime_socket: bool,
}

/// One decision that rests on a variable a route lacks.
#[derive(Debug, PartialEq, Eq)]
pub struct Rest {
    /// What rests on what: `the lease directory on XDG_STATE_HOME=/x (...)`.
    pub finding: String,
    /// What to carry over to the crontab line or the drop-in: `NAME=value`.
    pub setting: String,
}

/// The decisions of this run that rest on a variable a timer or cron line
/// will not have by default, in the order of a run: the lease directory,
/// the state file, `rch`, the daemon's socket, the metrics file.
pub fn rests_on(facts: &EnvironmentFacts<'_>) -> Vec<Rest> {
    let given = facts.given;
    [
        option_rest(
            facts,
            given.lease_dir,
            "RCH_SWEEP_LEASE_DIR",
            "the lease directory",
        )
        .or_else(|| state_home_rest(facts)),
        option_rest(
            facts,
            given.state_file,
            "RCH_SWEEP_STATE_FILE",
            "the state file",
        ),
        option_rest(facts, given.rch, "RCH_SWEEP_RCH", "rch"),
        rch_path_rest(facts),
        option_rest(facts, given.socket, "RCH_SOCKET_PATH", "the daemon socket")
            .or_else(|| {
                option_rest(
                    facts,
                    given.socket,
                    "RCH_DAEMON_SOCKET",
                    "the daemon socket",
                )
            })
            .or_else(|| runtime_socket_rest(facts)),
        option_rest(
            facts,
            given.metrics_file,
            "RCH_SWEEP_METRICS_FILE",
            "the metrics file",
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Who lacks a variable only a login shell sets.
const ALL_LACK: &str = "a timer and cron lack it";

impl EnvironmentFacts<'_> {
    /// A variable of this process, unless unset or empty.
    fn var(&self, name: &str) -> Option<OsString> {
        (self.env)(name).filter(|value| !value.is_empty())
    }
}

/// A value as text (lossily: the finding is for people).
fn shown(value: &OsStr) -> String {
    value.to_string_lossy().into_owned()
}

/// `what` (an option not `given` on the command line) taken from its
/// variable `name`.
fn option_rest(facts: &EnvironmentFacts<'_>, given: bool, name: &str, what: &str) -> Option<Rest> {
    let value = facts.var(name).filter(|_| !given)?;
    Some(Rest {
        finding: format!("{what} on {name}={} ({ALL_LACK})", shown(&value)),
        setting: format!("{name}={}", shown(&value)),
    })
}

/// The default lease directory, when rch's state home variables move it
/// away from where a timer or cron line would look.
fn state_home_rest(facts: &EnvironmentFacts<'_>) -> Option<Rest> {
    if facts.given.lease_dir {
        return None;
    }
    let var = |name: &str| facts.var(name);
    let here = config::default_lease_dir(var);
    let there = config::default_lease_dir(|name: &str| match name {
        "RCH_STATE_HOME" | "XDG_STATE_HOME" => None,
        _ => var(name),
    });
    if here == there {
        return None;
    }
    let name = if var("RCH_STATE_HOME").is_some() {
        "RCH_STATE_HOME"
    } else {
        "XDG_STATE_HOME"
    };
    let value = var(name).unwrap_or_default();
    Some(Rest {
        finding: format!(
            "the lease directory on {name}={} ({ALL_LACK}: without it a run sweeps {}, not {})",
            shown(&value),
            there.display(),
            here.display()
        ),
        setting: format!("{name}={}", shown(&value)),
    })
}

/// `rch` found on a `PATH` entry that neither cron's nor the units' `PATH`
/// nor the fallbacks reach.
fn rch_path_rest(facts: &EnvironmentFacts<'_>) -> Option<Rest> {
    let entry = facts.rch_path_entry.as_ref()?;
    let home = facts.var("HOME");
    let mut reached: Vec<PathBuf> = std::env::split_paths(OsStr::new(CRON_PATH))
        .chain(std::env::split_paths(OsStr::new(timer_path())))
        .chain(std::env::split_paths(&expand(
            unit_path(USER_UNIT).unwrap_or_default(),
            home.as_deref().unwrap_or_default(),
        )))
        .collect();
    reached.extend(
        config::rch_fallbacks(home.as_deref())
            .iter()
            .filter_map(|place| place.parent().map(Path::to_path_buf)),
    );
    if reached.iter().any(|dir| dir == entry) {
        return None;
    }
    Some(Rest {
        finding: format!(
            "rch on the PATH entry {} ({ALL_LACK}: their PATH and the fallbacks do not reach it)",
            entry.display()
        ),
        setting: format!("RCH_SWEEP_RCH={}", entry.join("rch").display()),
    })
}

/// rch's default socket under `XDG_RUNTIME_DIR`, when one stands there and
/// no socket was named.
fn runtime_socket_rest(facts: &EnvironmentFacts<'_>) -> Option<Rest> {
    if facts.given.socket || !facts.runtime_socket {
        return None;
    }
    let value = facts.var("XDG_RUNTIME_DIR")?;
    let user_manager = format!("/run/user/{}", facts.uid);
    let lacking = if value == OsStr::new(&user_manager) {
        "cron and the system timer lack it"
    } else {
        ALL_LACK
    };
    Some(Rest {
        finding: format!(
            "the daemon socket on XDG_RUNTIME_DIR={} (rch's default {}/rch.sock; {lacking}, and rch then looks in ~/.cache/rch/rch.sock)",
            shown(&value),
            shown(&value)
        ),
        setting: format!("XDG_RUNTIME_DIR={}", shown(&value)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), OsString::from(value)))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn alice() -> Account {
        Account {
            name: "alice".into(),
            home: "/home/alice".into(),
            shell: "/bin/bash".into(),
        }
    }

    fn vars(route_env: &RouteEnv) -> Vec<(&str, &str)> {
        route_env
            .vars
            .iter()
            .map(|(name, value)| (*name, value.to_str().expect("utf8")))
            .collect()
    }

    #[test]
    fn the_units_set_the_path_doctor_checks_with() {
        let user = unit_path(USER_UNIT).expect("the user unit sets PATH");
        let system = unit_path(SYSTEM_UNIT).expect("the system template sets PATH");
        assert_eq!(system, timer_path());
        // The user unit puts rch's installers' folders first, then the
        // same folders as the system template.
        assert!(
            user.ends_with(&format!(":{system}")),
            "{user} does not end with {system}"
        );
        for path in [user, system] {
            let without_home = path.replace("%h", "");
            assert!(!without_home.contains('%'), "another specifier in {path}");
            // Every folder absolute: a relative one would be looked up in
            // the working directory, which rch-sweep skips.
            for entry in path.split(':') {
                assert!(
                    entry.starts_with('/') || entry.starts_with("%h/"),
                    "{entry}"
                );
            }
        }
        // cron's folders are a timer's too.
        for entry in CRON_PATH.split(':') {
            assert!(system.split(':').any(|e| e == entry), "{entry}");
        }
        assert_eq!(
            expand(user, OsStr::new("/home/alice")),
            OsString::from(user.replace("%h", "/home/alice"))
        );
        assert_eq!(expand("100%%", OsStr::new("/h")), OsString::from("100%"));
    }

    #[test]
    fn cron_passes_four_variables_and_starts_in_home() {
        // HOME and LOGNAME are the passwd entry's, whatever this process
        // has (after `su`, another account's).
        let shell = env(&[
            ("HOME", "/srv/alice"),
            ("LOGNAME", "al"),
            ("XDG_STATE_HOME", "/srv/alice/.state"),
            ("PATH", "/opt/rch/bin:/usr/bin"),
        ]);
        let cron = environment(Route::Cron, 1000, Some(&alice()), shell).expect("cron");
        assert_eq!(
            vars(&cron),
            [
                ("HOME", "/home/alice"),
                ("LOGNAME", "alice"),
                ("SHELL", "/bin/sh"),
                ("PATH", "/usr/bin:/bin")
            ]
        );
        assert_eq!(cron.cwd, Path::new("/home/alice"));
        // No entry: cron runs no crontab for it, and doctor says it cannot
        // tell, whatever HOME this process has.
        let none =
            environment(Route::Cron, 4242, None, env(&[("HOME", "/h")])).expect_err("no entry");
        assert!(none.contains("uid 4242"), "{none}");
    }

    #[test]
    fn the_timers_pass_what_systemd_sets_from_the_account() {
        let shell = env(&[
            ("HOME", "/elsewhere"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
        ]);
        let user = environment(Route::UserTimer, 1000, Some(&alice()), &shell).expect("user");
        assert_eq!(
            vars(&user),
            [
                ("HOME", "/home/alice"),
                ("USER", "alice"),
                ("LOGNAME", "alice"),
                ("SHELL", "/bin/bash"),
                ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ]
        );
        assert_eq!(user.cwd, Path::new("/home/alice"));
        let system = environment(Route::SystemTimer, 1000, Some(&alice()), &shell).expect("system");
        assert_eq!(
            vars(&system),
            [
                ("HOME", "/home/alice"),
                ("USER", "alice"),
                ("LOGNAME", "alice"),
                ("SHELL", "/bin/bash"),
            ]
        );
        // No account entry: this process's own values; no HOME at all is an
        // error, not a run in /.
        let bare = environment(Route::SystemTimer, 4242, None, env(&[("HOME", "/h")]))
            .expect("from the environment");
        assert_eq!(vars(&bare)[0], ("HOME", "/h"));
        assert!(vars(&bare).contains(&("SHELL", "/bin/sh")));
        let none = environment(Route::Cron, 4242, None, env(&[])).expect_err("no home");
        assert!(none.contains("uid 4242"), "{none}");
    }

    fn facts<'a>(env: &'a dyn Fn(&str) -> Option<OsString>) -> EnvironmentFacts<'a> {
        EnvironmentFacts {
            env,
            given: Given::default(),
            uid: 1000,
            rch_path_entry: None,
            runtime_socket: false,
        }
    }

    #[test]
    fn a_login_shells_state_home_is_named_with_what_cron_sweeps_instead() {
        let shell = env(&[
            ("HOME", "/home/alice"),
            ("XDG_STATE_HOME", "/home/alice/.state"),
        ]);
        let rests = rests_on(&facts(&shell));
        assert_eq!(rests.len(), 1, "{rests:?}");
        assert_eq!(rests[0].setting, "XDG_STATE_HOME=/home/alice/.state");
        assert!(
            rests[0].finding.contains(
                "without it a run sweeps /home/alice/.local/state/rch/job-leases, not /home/alice/.state/rch/job-leases"
            ),
            "{rests:?}"
        );
        // RCH_STATE_HOME decides before XDG_STATE_HOME.
        let both = env(&[
            ("HOME", "/h"),
            ("RCH_STATE_HOME", "/r"),
            ("XDG_STATE_HOME", "/x"),
        ]);
        assert_eq!(rests_on(&facts(&both))[0].setting, "RCH_STATE_HOME=/r");
        // The default spelled out changes nothing; nor does a lease
        // directory named on the command line.
        let same = env(&[("HOME", "/h"), ("XDG_STATE_HOME", "/h/.local/state")]);
        assert!(rests_on(&facts(&same)).is_empty());
        let mut given = facts(&shell);
        given.given.lease_dir = true;
        assert!(rests_on(&given).is_empty());
    }

    #[test]
    fn option_variables_rest_on_themselves_unless_the_option_was_given() {
        let shell = env(&[
            ("HOME", "/h"),
            ("RCH_SWEEP_LEASE_DIR", "/l/job-leases"),
            ("RCH_SWEEP_STATE_FILE", "/s/backoff.json"),
            ("RCH_SWEEP_RCH", "/opt/rch"),
            ("RCH_SOCKET_PATH", "/run/rch.sock"),
            ("RCH_SWEEP_METRICS_FILE", "/m/rch.prom"),
            ("XDG_STATE_HOME", "/x"),
        ]);
        let settings: Vec<String> = rests_on(&facts(&shell))
            .into_iter()
            .map(|rest| rest.setting)
            .collect();
        assert_eq!(
            settings,
            [
                "RCH_SWEEP_LEASE_DIR=/l/job-leases",
                "RCH_SWEEP_STATE_FILE=/s/backoff.json",
                "RCH_SWEEP_RCH=/opt/rch",
                "RCH_SOCKET_PATH=/run/rch.sock",
                "RCH_SWEEP_METRICS_FILE=/m/rch.prom"
            ]
        );
        let mut given = facts(&shell);
        given.given = Given {
            lease_dir: true,
            state_file: true,
            rch: true,
            socket: true,
            metrics_file: true,
        };
        assert!(rests_on(&given).is_empty());
    }

    #[test]
    fn rch_daemon_socket_is_the_socket_only_without_rch_socket_path() {
        let alias = env(&[("HOME", "/h"), ("RCH_DAEMON_SOCKET", "/run/alias.sock")]);
        let rests = rests_on(&facts(&alias));
        assert_eq!(rests.len(), 1, "{rests:?}");
        assert_eq!(rests[0].setting, "RCH_DAEMON_SOCKET=/run/alias.sock");
        assert!(
            rests[0]
                .finding
                .starts_with("the daemon socket on RCH_DAEMON_SOCKET")
        );
        let both = env(&[
            ("HOME", "/h"),
            ("RCH_DAEMON_SOCKET", "/run/alias.sock"),
            ("RCH_SOCKET_PATH", "/run/rch.sock"),
        ]);
        let rests = rests_on(&facts(&both));
        assert_eq!(rests.len(), 1, "{rests:?}");
        assert_eq!(rests[0].setting, "RCH_SOCKET_PATH=/run/rch.sock");
        let mut given = facts(&alias);
        given.given.socket = true;
        assert!(rests_on(&given).is_empty());
    }

    #[test]
    fn rch_on_a_path_entry_no_route_reaches_is_named() {
        let shell = env(&[("HOME", "/home/alice")]);
        for reached in [
            "/usr/bin",
            "/bin",
            "/usr/local/bin",
            "/home/alice/.local/bin",
            "/home/alice/.cargo/bin",
        ] {
            let mut found = facts(&shell);
            found.rch_path_entry = Some(PathBuf::from(reached));
            assert!(rests_on(&found).is_empty(), "{reached}");
        }
        let mut found = facts(&shell);
        found.rch_path_entry = Some(PathBuf::from("/opt/rch/bin"));
        let rests = rests_on(&found);
        assert_eq!(rests.len(), 1);
        assert!(rests[0].finding.contains("the PATH entry /opt/rch/bin"));
        assert_eq!(rests[0].setting, "RCH_SWEEP_RCH=/opt/rch/bin/rch");
    }

    #[test]
    fn the_daemon_socket_rests_on_xdg_runtime_dir_only_where_one_listens() {
        let shell = env(&[("HOME", "/h"), ("XDG_RUNTIME_DIR", "/run/user/1000")]);
        assert!(rests_on(&facts(&shell)).is_empty());
        let mut listening = facts(&shell);
        listening.runtime_socket = true;
        let rests = rests_on(&listening);
        assert_eq!(rests.len(), 1);
        assert!(
            rests[0]
                .finding
                .contains("cron and the system timer lack it"),
            "{rests:?}"
        );
        assert_eq!(rests[0].setting, "XDG_RUNTIME_DIR=/run/user/1000");
        // Another folder than the user manager's: the user timer lacks it too.
        let odd = env(&[("HOME", "/h"), ("XDG_RUNTIME_DIR", "/tmp/rt")]);
        let mut listening = facts(&odd);
        listening.runtime_socket = true;
        assert!(
            rests_on(&listening)[0]
                .finding
                .contains("a timer and cron lack it")
        );
        listening.given.socket = true;
        assert!(rests_on(&listening).is_empty());
    }
}

//! doctor's `environment` check: which decisions of this run rest on a
//! variable a timer or cron line lacks, an empty state-home variable, and
//! which of the options a route keeps were given on the command line.

use crate::cli::RunArgs;
use crate::config;
use crate::sweep::preflight::{DoctorCheck, Finding};
use crate::{account, route};
use std::path::{Path, PathBuf};

/// Which decisions of this run rest on a variable a timer or cron line
/// lacks ([`route::rests_on`]), and how to carry each over.
/// `rch_socket`: the socket `rch` named when doctor asked it (the daemon
/// check), if it did.
pub(super) fn environment(args: &RunArgs, rch_socket: Option<&Path>) -> Finding {
    let env = config::process_env;
    let explicit = args.rch.as_deref();
    let name = explicit.unwrap_or(Path::new("rch"));
    let bare = name.components().count() == 1 && !name.is_absolute();
    let rch_path_entry = if bare {
        let path_var = env("PATH").unwrap_or_default();
        std::env::split_paths(&path_var)
            .filter(|dir| dir.is_absolute())
            .find(|dir| config::is_executable(&dir.join(name)))
    } else {
        None
    };
    // The socket rests on XDG_RUNTIME_DIR when rch named one under it; an
    // rch that names none resolves `$XDG_RUNTIME_DIR/rch.sock` when a
    // socket stands there and no config file says otherwise.
    let runtime_socket = env("XDG_RUNTIME_DIR").is_some_and(|dir| match rch_socket {
        Some(socket) => socket.starts_with(&dir),
        None => {
            use std::os::unix::fs::FileTypeExt;
            std::fs::symlink_metadata(PathBuf::from(dir).join("rch.sock"))
                .is_ok_and(|meta| meta.file_type().is_socket())
        }
    });
    let facts = route::EnvironmentFacts {
        env: &env,
        given: given_on_command_line(),
        uid: account::euid(),
        rch_path_entry,
        runtime_socket,
    };
    let rests = route::rests_on(&facts);
    let empty = empty_state_homes(config::set_but_empty);
    if rests.is_empty() && empty.is_none() {
        return Finding::ok(
            DoctorCheck::Environment,
            "no decision rests on a variable a timer or cron line lacks",
        );
    }
    let mut found = Vec::new();
    let mut fixes = Vec::new();
    if !rests.is_empty() {
        let findings: Vec<&str> = rests.iter().map(|rest| rest.finding.as_str()).collect();
        let settings: Vec<&str> = rests.iter().map(|rest| rest.setting.as_str()).collect();
        found.push(format!(
            "decisions rest on variables a timer or cron line lacks: {}",
            findings.join("; ")
        ));
        fixes.push(format!(
            "carry them over: {} on the crontab line (above it, or before the command), or Environment= lines in a drop-in (systemctl --user edit rch-sweep.service, or systemctl edit rch-sweep@USER.service); then check with `rch-sweep doctor --as cron` or `--as user-timer`",
            settings.join(" ")
        ));
    }
    if let Some((finding, fix)) = empty {
        found.push(finding);
        fixes.push(fix);
    }
    Finding::warn(DoctorCheck::Environment, found.join("; "), fixes.join("; "))
}

/// `RCH_STATE_HOME` or `XDG_STATE_HOME` set but empty (as
/// `set_but_empty` tells): rch-sweep takes such a variable as unset, as
/// the XDG rules say, but rch 2.1 joins it into a relative path, so its
/// wrappers write leases under whatever folder they ran in. The finding
/// and its fix, when any is.
pub(super) fn empty_state_homes(set_but_empty: impl Fn(&str) -> bool) -> Option<(String, String)> {
    let names: Vec<&str> = ["RCH_STATE_HOME", "XDG_STATE_HOME"]
        .into_iter()
        .filter(|name| set_but_empty(name))
        .collect();
    if names.is_empty() {
        return None;
    }
    let which = names.join(" and ");
    let verb = if names.len() == 1 { "is" } else { "are" };
    Some((
        format!(
            "{which} {verb} set but empty: rch-sweep takes an empty variable as unset, but rch 2.1 then writes leases under the working folder of each wrapper (rch/job-leases), where no sweep looks"
        ),
        format!(
            "unset {which} (or set it to a folder) wherever rch's wrappers run, and in the sweep's environment"
        ),
    ))
}

/// Which of the options a route keeps were given on the command line
/// rather than by their variables (clap merges the two; its matches know).
pub(super) fn given_on_command_line() -> route::Given {
    use clap::CommandFactory;
    use clap::parser::ValueSource;
    let Ok(matches) = crate::cli::Cli::command().try_get_matches_from(crate::cli::args_os()) else {
        return route::Given::default();
    };
    let Some(doctor) = matches.subcommand_matches("doctor") else {
        return route::Given::default();
    };
    let given = |id: &str| doctor.value_source(id) == Some(ValueSource::CommandLine);
    route::Given {
        lease_dir: given("lease_dir"),
        state_file: given("state_file"),
        rch: given("rch"),
        socket: given("socket"),
        metrics_file: given("metrics_file"),
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn an_empty_state_home_variable_is_named() {
        assert_eq!(empty_state_homes(|_| false), None);
        let (finding, fix) = empty_state_homes(|name| name == "XDG_STATE_HOME").expect("a warning");
        assert!(
            finding.starts_with("XDG_STATE_HOME is set but empty")
                && finding.contains("rch/job-leases"),
            "{finding}"
        );
        assert!(fix.starts_with("unset XDG_STATE_HOME"), "{fix}");
        let (both, _) = empty_state_homes(|_| true).expect("a warning");
        assert!(
            both.starts_with("RCH_STATE_HOME and XDG_STATE_HOME are set but empty"),
            "{both}"
        );
    }
}

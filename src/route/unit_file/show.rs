//! What a running manager says of a unit: the output of
//! `systemctl [--user] show -p ... <unit>` read into a [`Service`], and the
//! manager's own environment (`systemctl [--user] show -p Environment`).
//!
//! The manager has merged the unit's files and resolved its specifiers
//! already; `$VAR` in `ExecStart=` it expands only when it starts the
//! process, so that is left to [`super::syntax::expand_args`], as for a
//! unit read from disk.

use super::{EnvironmentFile, ExecCommand, Service, words};

/// Where a setting the manager shows came from: it does not say which of
/// the unit's files.
pub const SOURCE: &str = "the unit as the manager loaded it";

/// A unit as `systemctl show` describes it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Shown {
    /// `loaded`, `not-found`, `masked`, ...
    pub load_state: String,
    /// The unit file and drop-ins the manager read.
    pub files: Vec<String>,
    pub service: Service,
}

/// Reads `systemctl show`'s `Key=value` lines.
pub fn parse(text: &str) -> Shown {
    let mut shown = Shown::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match key {
            "LoadState" => value.clone_into(&mut shown.load_state),
            "FragmentPath" if !value.is_empty() => shown.files.insert(0, value.to_owned()),
            "DropInPaths" => shown
                .files
                .extend(value.split_whitespace().map(str::to_owned)),
            "Environment" => shown.service.environment.extend(environment(value)),
            "EnvironmentFiles" if !value.is_empty() => {
                // `/etc/default/x (ignore_errors=yes)`
                let (path, flags) = value.rsplit_once(" (").unwrap_or((value, ""));
                shown.service.environment_files.push(EnvironmentFile {
                    path: path.to_owned(),
                    optional: flags.contains("ignore_errors=yes"),
                    source: SOURCE.to_owned(),
                });
            }
            "ExecStart" => shown.service.exec_start.extend(exec_start(value)),
            "WorkingDirectory" if !value.is_empty() => {
                shown.service.working_directory = Some(value.to_owned());
                SOURCE.clone_into(&mut shown.service.working_directory_source);
            }
            "User" if !value.is_empty() => shown.service.user = Some(value.to_owned()),
            _ => {}
        }
    }
    shown
}

/// The assignments of an `Environment=` line (quoted where a value holds
/// blanks).
pub fn environment(value: &str) -> Vec<(String, String)> {
    words::kept(value)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|word| {
            let (name, value) = word.split_once('=')?;
            Some((name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// The commands of an `ExecStart=` line:
/// `{ path=/usr/bin/rch-sweep ; argv[]=rch-sweep --quiet ; ignore_errors=no ; ... }`,
/// possibly several.
fn exec_start(value: &str) -> Vec<ExecCommand> {
    value
        .split("{ path=")
        .skip(1)
        .filter_map(|group| {
            let (path, rest) = group.split_once(" ; argv[]=")?;
            let (argv, flags) = rest.split_once(" ; ignore_errors=").unwrap_or((rest, ""));
            let words = words::kept(argv).ok()?;
            Some(ExecCommand {
                program: path.to_owned(),
                args: words.get(1..).unwrap_or_default().to_vec(),
                expand: true,
                ignore_failure: flags.starts_with("yes"),
                source: SOURCE.to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemctl_shows_the_merged_unit() {
        let text = "LoadState=loaded\n\
                    FragmentPath=/usr/lib/systemd/system/rch-sweep@.service\n\
                    DropInPaths=/etc/systemd/system/rch-sweep@alice.service.d/override.conf\n\
                    Environment=PATH=/usr/local/bin:/usr/bin:/bin \"A=x y\" XDG_RUNTIME_DIR=/run/user/1001\n\
                    EnvironmentFiles=/etc/default/rch-sweep (ignore_errors=yes)\n\
                    EnvironmentFiles=/etc/rch-sweep.env (ignore_errors=no)\n\
                    ExecStart={ path=/usr/bin/rch-sweep ; argv[]=/usr/bin/rch-sweep --lease-dir /root/l \"--metrics-file\" /m ; ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }\n\
                    WorkingDirectory=~\n\
                    User=alice\n";
        let shown = parse(text);
        assert_eq!(shown.load_state, "loaded");
        assert_eq!(
            shown.files,
            [
                "/usr/lib/systemd/system/rch-sweep@.service",
                "/etc/systemd/system/rch-sweep@alice.service.d/override.conf"
            ]
        );
        let service = &shown.service;
        assert_eq!(service.environment.len(), 3);
        assert_eq!(service.environment[1], ("A".into(), "x y".into()));
        let files: Vec<(&str, bool)> = service
            .environment_files
            .iter()
            .map(|file| (file.path.as_str(), file.optional))
            .collect();
        assert_eq!(
            files,
            [
                ("/etc/default/rch-sweep", true),
                ("/etc/rch-sweep.env", false)
            ]
        );
        assert!(!service.exec_start[0].ignore_failure);
        assert_eq!(service.exec_start.len(), 1);
        assert_eq!(service.exec_start[0].program, "/usr/bin/rch-sweep");
        assert_eq!(
            service.exec_start[0].args,
            ["--lease-dir", "/root/l", "--metrics-file", "/m"]
        );
        assert_eq!(service.working_directory.as_deref(), Some("~"));
        assert_eq!(service.user.as_deref(), Some("alice"));
        let missing = parse("LoadState=not-found\nFragmentPath=\nExecStart=\nEnvironment=\n");
        assert_eq!(missing.load_state, "not-found");
        assert!(missing.files.is_empty() && missing.service.exec_start.is_empty());
    }
}

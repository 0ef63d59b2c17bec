//! `doctor --as cron`: the crontab of the user running doctor, as
//! `crontab -l` prints it, read by [`crontab`]; which lines run rch-sweep
//! and what each gives it.

use super::{Plan, Planned, Said, ask, program, refused_option};
use crate::vars::{self, Vars};
use crate::{account, config, crontab};
use std::path::{Path, PathBuf};

/// The crontab of the user running doctor, as cron reads it.
pub(super) fn plan(defaults: &Vars, account: Option<&account::Account>, cwd: &Path) -> Plan {
    let mut plan = Plan::default();
    let user = account.map_or_else(|| "this user".to_owned(), |a| a.name.clone());
    let text = match program("crontab", &["/usr/bin/crontab"]) {
        None => {
            plan.from.push(
                "no crontab command here (Debian's cron package has it): cron's defaults"
                    .to_owned(),
            );
            None
        }
        Some(crontab) => match ask(&crontab, &["-l"]) {
            Said::Out(text) => {
                plan.from
                    .push(format!("the crontab of {user} ({} -l)", crontab.display()));
                Some(text)
            }
            Said::Failed(_, said) if said.starts_with("no crontab for") => {
                plan.from
                    .push(format!("{said} (crontab -l): cron's defaults"));
                None
            }
            Said::Failed(code, said) => {
                plan.warnings.push(format!(
                    "crontab -l exited {}: {said}; checked with cron's defaults",
                    code.map_or_else(|| "on a signal".to_owned(), |c| c.to_string())
                ));
                None
            }
            Said::Broken(why) => {
                plan.warnings
                    .push(format!("crontab -l {why}; checked with cron's defaults"));
                None
            }
        },
    };
    let reading = crontab::read(text.as_deref().unwrap_or_default(), defaults.clone());
    for job in &reading.jobs {
        if job.carriage_return {
            plan.warnings.push(format!(
                "line {} ends in a carriage return (the crontab was saved with Windows line ends): cron hands it to the shell as part of the last word; remove it (sed -i 's/\\r$//' FILE, then crontab FILE)",
                job.number
            ));
        }
        match &job.follow {
            crontab::Follow::Sweep(sweep) => {
                if let Some(why) = refused_option(&sweep.args) {
                    plan.warnings.push(format!(
                        "line {} gives {why}: {}",
                        job.number, job.text
                    ));
                    continue;
                }
                if let Some(missing) = unreachable_program(&sweep.program, &sweep.env) {
                    plan.warnings.push(format!("line {}: {missing}", job.number));
                }
                plan.runs.push(Planned {
                    line: Some((job.number, job.text.clone())),
                    env: sweep.env.clone(),
                    cwd: PathBuf::from(&sweep.cwd),
                    options: Some(sweep.args.clone()),
                });
            }
            crontab::Follow::Cannot(why) => plan.warnings.push(format!(
                "line {} runs rch-sweep in a form doctor cannot follow ({why}), so it is not checked: {}",
                job.number, job.text
            )),
        }
    }
    if plan.runs.is_empty() {
        if text.is_some() {
            plan.warnings.push(
                "no line of the crontab runs rch-sweep: checked with the options given to doctor, in the environment after the crontab's last variable line"
                    .to_owned(),
            );
        }
        let env = reading.last_env;
        let home = vars::get(&env, "HOME").map_or_else(|| cwd.to_path_buf(), PathBuf::from);
        plan.runs.push(Planned {
            line: None,
            env,
            cwd: home,
            options: None,
        });
    }
    plan.notes.extend(system_crontab_lines(&user));
    plan
}

/// Why the shell would not find the line's program, if it would not: a
/// bare name is looked up on the line's `PATH`.
fn unreachable_program(name: &str, env: &Vars) -> Option<String> {
    if name.contains('/') {
        return (!config::is_executable(Path::new(name))).then(|| {
            format!(
                "{name} is no program this user may run: cron fails to start it (exit 126 or 127)"
            )
        });
    }
    let path = vars::get(env, "PATH").unwrap_or_default();
    let found = std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .any(|dir| config::is_executable(&dir.join(name)));
    (!found).then(|| {
        format!(
            "its PATH ({path}) does not find {name}: cron fails to start it (sh: {name}: not found); name it with its full path"
        )
    })
}

/// Lines of `/etc/crontab` and `/etc/cron.d/*` that run rch-sweep as
/// `user`: outside what `doctor --as cron` reads, so said.
fn system_crontab_lines(user: &str) -> Vec<String> {
    let mut files = vec![PathBuf::from("/etc/crontab")];
    if let Ok(entries) = std::fs::read_dir("/etc/cron.d") {
        let mut more: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        more.sort();
        files.extend(more);
    }
    files
        .iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(file).ok()?;
            let lines = crontab::system_lines_for(&text, user);
            (!lines.is_empty()).then(|| {
                let numbers: Vec<String> = lines.iter().map(usize::to_string).collect();
                format!(
                    "{} runs rch-sweep as {user} (line {}): doctor --as cron reads only your crontab (crontab -l) and does not check it",
                    file.display(),
                    numbers.join(", ")
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_cron_cannot_find_is_named() {
        let env: Vars = vec![("PATH".into(), "/nonexistent:/also-not".into())];
        let missing = unreachable_program("rch-sweep", &env).expect("not found");
        assert!(
            missing.contains("(/nonexistent:/also-not) does not find rch-sweep"),
            "{missing}"
        );
        let env: Vars = vec![("PATH".into(), "/bin:/usr/bin".into())];
        assert_eq!(unreachable_program("sh", &env), None);
        assert!(unreachable_program("/nonexistent/rch-sweep", &env).is_some());
    }
}

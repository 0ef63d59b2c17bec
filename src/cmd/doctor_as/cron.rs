//! `doctor --as cron`: what Debian's cron runs as the user running doctor
//! (the user's crontab as `crontab -l` prints it, and the lines of
//! `/etc/crontab` and `/etc/cron.d/*` with this user in their user
//! field), each line in the environment cron gives it: pam_env's files
//! where `/etc/pam.d/cron` loads it, then the line's own. The decisions are
//! in [`crontab`], [`pam_env`] and [`crate::route::wrappers`]; this reads the
//! files, bounded and without blocking.

use super::{Plan, Planned, ToolAnswer, Unfollowed, ask, program, refused_option};
use crate::fsio::{self, NotRead};
use crate::route::vars::{self, Vars};
use crate::{account, config, route::crontab, route::pam_env, route::wrappers};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The most doctor reads of a crontab, a PAM file or an env file: far
/// more than any real one holds, and a bound on what a file standing there
/// (or `/dev/zero` linked there) can make it read.
const MAX_TEXT: u64 = 1024 * 1024;

/// Where cron's PAM service and the files it includes live.
const PAM_D: &str = "/etc/pam.d";

/// How deep doctor follows `@include` in PAM files.
const MAX_INCLUDES: usize = 8;

/// The crontab lines run as the user running doctor, as cron reads them.
pub(super) fn plan(defaults: &Vars, account: Option<&account::Account>, cwd: &Path) -> Plan {
    let mut plan = Plan::default();
    let user = account.map_or_else(|| "this user".to_owned(), |a| a.name.clone());
    let text = user_crontab(&user, &mut plan);
    let name = vars::get(defaults, "LOGNAME").unwrap_or(&user).to_owned();
    let home = vars::get(defaults, "HOME").unwrap_or("/").to_owned();
    let shell = account
        .map(|a| a.shell.display().to_string())
        .unwrap_or_default();
    let items = pam_env::Items {
        user: &name,
        home: &home,
        shell: &shell,
    };
    let pam = pam_environment(&items, &mut plan);
    let base = crontab::Base { name, home, pam };
    let reading = crontab::read(text.as_deref().unwrap_or_default(), &base);
    let mut sources: Vec<(Option<PathBuf>, crontab::Reading)> = vec![(None, reading)];
    sources.extend(
        system_crontabs(&mut plan)
            .into_iter()
            .map(|(file, text)| (Some(file), crontab::read_system(&text, &base)))
            .filter(|(_, reading)| !reading.jobs.is_empty()),
    );
    let host = Host {
        program: &unreachable_program,
        folder: &unenterable_folder,
    };
    if decide(&sources, &user, &host, &mut plan) {
        return plan;
    }
    let (_, user_reading) = sources.swap_remove(0);
    if text.is_some() {
        plan.warnings.push(
            "no line of the crontab runs rch-sweep: checked with the options given to doctor, in the environment after the crontab's last variable line"
                .to_owned(),
        );
    }
    let env = user_reading.last_env;
    let home = vars::get(&env, "HOME").map_or_else(|| cwd.to_path_buf(), PathBuf::from);
    plan.runs.push(Planned {
        line: None,
        file: None,
        env,
        cwd: home,
        options: None,
        failures: Vec::new(),
    });
    plan
}

/// What doctor asks of the host about a followed line: why a program
/// would not start, why a folder could not be entered (`None`: it would).
struct Host<'a> {
    program: &'a dyn Fn(&wrappers::Lookup) -> Option<String>,
    folder: &'a dyn Fn(&str) -> Option<String>,
}

impl Host<'_> {
    /// The first reason the line's run never reaches rch-sweep: a `cd`
    /// before it fails, or a program on the way cannot be started (cron's
    /// shell then answers 127 or 126, or the wrapper fails to start it).
    fn first_refusal(&self, sweep: &crontab::Sweep) -> Option<String> {
        sweep
            .folders
            .iter()
            .find_map(|dir| (self.folder)(dir))
            .or_else(|| {
                sweep
                    .lookups
                    .iter()
                    .find_map(|lookup| (self.program)(lookup))
            })
    }
}

/// What doctor makes of the rch-sweep lines read (pure, the program
/// lookups aside, which `unreachable` answers): a run for each line it
/// follows, a warning for each it cannot, and when it follows none of
/// several, the failed `environment` check. `false` when no line mentions
/// rch-sweep (the caller then checks doctor's own options).
fn decide(
    sources: &[(Option<PathBuf>, crontab::Reading)],
    user: &str,
    host: &Host<'_>,
    plan: &mut Plan,
) -> bool {
    let mut unfollowed = Vec::new();
    for (file, reading) in sources {
        let whose = |number: usize| match file {
            None => format!("line {number}"),
            Some(file) => format!("line {number} of {}", file.display()),
        };
        for job in &reading.jobs {
            let at = whose(job.number);
            match &job.follow {
                crontab::Follow::Sweep(sweep) => {
                    if let Some(why) = refused_option(&sweep.args) {
                        plan.warnings
                            .push(format!("{at} gives {why}: {}", job.text));
                        unfollowed.push(format!("{at} ({}): it gives {why}", job.text));
                        continue;
                    }
                    // cron starts the line, but it never reaches
                    // rch-sweep: its report's `environment` check fails.
                    let failures: Vec<String> = host
                        .first_refusal(sweep)
                        .map(|why| format!("{at} ({}): {why}", job.text))
                        .into_iter()
                        .collect();
                    if sweep.input.is_some() {
                        plan.notes.push(format!(
                            "{at}: cron gives the command the text after its first unescaped % as standard input, which rch-sweep does not read"
                        ));
                    }
                    // Where a `cd` of the line fails, the checks run from
                    // the line's first folder (the run never starts).
                    let cwd = if failures.is_empty() || Path::new(&sweep.cwd).is_dir() {
                        PathBuf::from(&sweep.cwd)
                    } else {
                        PathBuf::from(vars::get(&sweep.env, "HOME").unwrap_or("/"))
                    };
                    plan.runs.push(Planned {
                        line: Some((job.number, job.text.clone())),
                        file: file.as_ref().map(|f| f.display().to_string()),
                        env: sweep.env.clone(),
                        cwd,
                        options: Some(sweep.args.clone()),
                        failures,
                    });
                }
                crontab::Follow::Cannot(why) => {
                    plan.warnings.push(format!(
                        "{at} runs rch-sweep in a form doctor cannot follow ({why}), so it is not checked: {}",
                        job.text
                    ));
                    unfollowed.push(format!("{at} ({}): {why}", job.text));
                }
                crontab::Follow::Fails(why) => {
                    plan.warnings
                        .push(format!("{at} fails at every run: {why}: {}", job.text));
                    unfollowed.push(format!("{at} ({}): {why}", job.text));
                }
            }
        }
    }
    if plan.runs.is_empty() && !unfollowed.is_empty() {
        // Never doctor's own options in their stead: that would check a
        // sweep cron never starts.
        plan.refused = Some(Unfollowed {
            finding: format!(
                "no line that runs rch-sweep as {user} can be followed, so doctor cannot tell what cron's runs will meet: {}",
                unfollowed.join("; ")
            ),
            fix: "make one line a command doctor follows (rch-sweep itself, through timeout, flock, nice, ionice, chronic, env, exec, sh -c or bash -c, after cd DIR &&, with plain >FILE, 2>&1 or </dev/null redirections), then check again with `rch-sweep doctor --as cron`".to_owned(),
        });
    }
    !plan.runs.is_empty() || !unfollowed.is_empty()
}

/// The user's crontab as `crontab -l` prints it, or `None` (said in the
/// plan) when there is none or it cannot be read.
fn user_crontab(user: &str, plan: &mut Plan) -> Option<String> {
    match program("crontab", &["/usr/bin/crontab"]) {
        None => {
            plan.from.push(
                "no crontab command here (Debian's cron package has it): cron's defaults"
                    .to_owned(),
            );
            None
        }
        Some(crontab) => match ask(&crontab, &["-l"]) {
            ToolAnswer::Out(text) => {
                plan.from
                    .push(format!("the crontab of {user} ({} -l)", crontab.display()));
                Some(text)
            }
            ToolAnswer::Failed(_, said) if said.starts_with("no crontab for") => {
                plan.from
                    .push(format!("{said} (crontab -l): cron's defaults"));
                None
            }
            ToolAnswer::Failed(code, said) => {
                plan.warnings.push(format!(
                    "crontab -l exited {}: {said}; checked with cron's defaults",
                    code.map_or_else(|| "on a signal".to_owned(), |c| c.to_string())
                ));
                None
            }
            ToolAnswer::Broken(why) => {
                plan.warnings
                    .push(format!("crontab -l {why}; checked with cron's defaults"));
                None
            }
        },
    }
}

/// What pam_env gives cron's jobs: for each `pam_env` line of
/// `/etc/pam.d/cron` (and what it includes), in order, its conffile and
/// then its env file, applied as pam_env applies them. What doctor does
/// not read, or cannot, is said in the plan.
fn pam_environment(items: &pam_env::Items<'_>, plan: &mut Plan) -> Vars {
    let mut env = Vars::new();
    let service = Path::new(PAM_D).join("cron");
    match fsio::read_regular_text(&service, MAX_TEXT) {
        Ok(text) => {
            let mut files = Vec::new();
            pam_files(&text, 0, &mut files, plan);
            for (conffile, envfile) in files {
                if !pam_conf_file(&conffile, envfile.as_deref(), items, &mut env, plan) {
                    continue;
                }
                let Some(envfile) = envfile else { continue };
                match fsio::read_regular_text(Path::new(&envfile), MAX_TEXT) {
                    Ok(text) => {
                        pam_env::env_file(&text, &mut env);
                        said(&mut plan.from, format!("{envfile} (pam_env)"));
                    }
                    // pam_env logs it and goes on.
                    Err(NotRead::Io(error)) if error.kind() == ErrorKind::NotFound => {}
                    Err(why) => said(
                        &mut plan.warnings,
                        format!(
                            "pam_env gives cron's jobs the variables of {envfile}, which doctor does not read ({why}): checked without them"
                        ),
                    ),
                }
            }
        }
        Err(NotRead::Io(error)) if error.kind() == ErrorKind::NotFound => plan.from.push(format!(
            "no {}: cron's PAM session (pam.d/other) reads no environment file",
            service.display()
        )),
        Err(why) => plan.warnings.push(format!(
            "{} cannot be read ({why}): checked without the variables pam_env may give cron's jobs",
            service.display()
        )),
    }
    env
}

/// Pushes `text` unless it is there already (pam_env reads its conffile
/// once for each of its lines: what it says of it is said once).
fn said(list: &mut Vec<String>, text: String) {
    if !list.contains(&text) {
        list.push(text);
    }
}

/// pam_env's conffile (`/etc/security/pam_env.conf`), applied to `env`
/// as one `pam_env` line reads it before its env file; whether pam_env
/// then reads that env file: not when the conffile is missing (pam_env
/// 1.5.2's `handle_env` reads the env file only after the conffile was
/// read) or when it gave up in it.
fn pam_conf_file(
    conffile: &str,
    envfile: Option<&str>,
    items: &pam_env::Items<'_>,
    env: &mut Vars,
    plan: &mut Plan,
) -> bool {
    match fsio::read_regular_text(Path::new(conffile), MAX_TEXT) {
        Ok(text) => {
            let read = pam_env::conf_file(&text, env, items);
            said(&mut plan.from, format!("{conffile} (pam_env)"));
            for note in read.notes {
                said(&mut plan.notes, format!("{conffile}: {note}"));
            }
            if let Some(line) = read.aborted {
                said(
                    &mut plan.warnings,
                    format!(
                        "pam_env gives up at line {line} of {conffile} (see the note): it then fails cron's PAM session, and doctor cannot tell what cron does with the job; checked with what was set before that line"
                    ),
                );
                return false;
            }
            true
        }
        Err(NotRead::Io(error)) if error.kind() == ErrorKind::NotFound => {
            if let Some(envfile) = envfile {
                said(
                    &mut plan.notes,
                    format!(
                        "no {conffile}: pam_env then reads no {envfile} either, so cron's jobs get none of its variables"
                    ),
                );
            }
            false
        }
        Err(why) => {
            said(
                &mut plan.warnings,
                format!(
                    "pam_env gives cron's jobs the variables of {conffile}, which doctor does not read ({why}): checked without them"
                ),
            );
            true
        }
    }
}

/// The `(conffile, envfile)` of each `pam_env` line of a PAM file, its
/// `@include`s followed.
fn pam_files(text: &str, depth: usize, out: &mut Vec<(String, Option<String>)>, plan: &mut Plan) {
    for step in pam_env::steps(text) {
        match step {
            pam_env::Step::PamEnv {
                conffile,
                envfile,
                user_env,
            } => {
                if user_env {
                    let warning = "cron's PAM service has pam_env read each user's ~/.pam_environment (user_readenv=1), which doctor does not read: what it sets is not checked".to_owned();
                    if !plan.warnings.contains(&warning) {
                        plan.warnings.push(warning);
                    }
                }
                out.push((conffile, envfile));
            }
            pam_env::Step::Include(name) if depth < MAX_INCLUDES && !name.contains('/') => {
                let path = Path::new(PAM_D).join(&name);
                match fsio::read_regular_text(&path, MAX_TEXT) {
                    Ok(text) => pam_files(&text, depth + 1, out, plan),
                    Err(NotRead::Io(error)) if error.kind() == ErrorKind::NotFound => {}
                    Err(why) => plan.warnings.push(format!(
                        "{} (included by cron's PAM service) cannot be read ({why})",
                        path.display()
                    )),
                }
            }
            pam_env::Step::Include(name) => plan.warnings.push(format!(
                "cron's PAM service includes {name}, which doctor does not follow"
            )),
        }
    }
}

/// Whether cron reads a file of `/etc/cron.d` by its name: letters,
/// digits, `_` and `-` only (Debian's cron(8); a name with a dot, such as
/// a package manager's `.dpkg-old`, is skipped).
pub(super) fn cron_d_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Why cron skips a system crontab it could read, by what `fstat` and
/// `lstat` said (Debian's cron(8): owned by root, not writable by group or
/// others, one hard link; a link owned by root too).
pub(super) fn cron_skips(uid: u32, mode: u32, links: u64, link_uid: Option<u32>) -> Option<String> {
    if link_uid.is_some_and(|owner| owner != 0) {
        return Some("it is a link not owned by root".to_owned());
    }
    if uid != 0 {
        return Some("it is not owned by root".to_owned());
    }
    if mode & 0o022 != 0 {
        return Some(format!(
            "it is writable by group or others (mode {:04o})",
            mode & 0o7777
        ));
    }
    if links > 1 {
        return Some(format!("it has {links} hard links"));
    }
    None
}

/// The texts of `/etc/crontab` and the files of `/etc/cron.d` that cron
/// reads, each by cron's own rules (a regular file, read bounded and
/// without blocking: a FIFO or a link to a device there is skipped, as
/// cron skips it, not waited on). Files cron skips, or doctor cannot
/// read, are said in the plan when they mention rch-sweep or cannot be
/// read at all.
fn system_crontabs(plan: &mut Plan) -> Vec<(PathBuf, String)> {
    let mut files = vec![PathBuf::from("/etc/crontab")];
    if let Ok(entries) = std::fs::read_dir("/etc/cron.d") {
        let mut more: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| {
                path.file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(cron_d_name)
            })
            .collect();
        more.sort();
        files.extend(more);
    }
    let mut out = Vec::new();
    for file in files {
        let link_uid = std::fs::symlink_metadata(&file)
            .ok()
            .filter(|meta| meta.file_type().is_symlink())
            .map(|meta| meta.uid());
        match fsio::read_regular(&file, MAX_TEXT) {
            Ok((text, meta)) => {
                match cron_skips(meta.uid(), meta.mode(), meta.nlink(), link_uid) {
                    Some(why) if text.contains("rch-sweep") => plan.notes.push(format!(
                        "cron skips {} ({why}), so its rch-sweep lines are not checked",
                        file.display()
                    )),
                    Some(_) => {}
                    None => out.push((file, text)),
                }
            }
            Err(NotRead::Io(error)) if error.kind() == ErrorKind::NotFound => {}
            Err(NotRead::NotRegular(kind)) => plan.notes.push(format!(
                "cron skips {}: it is {}, not a regular file",
                file.display(),
                kind.described()
            )),
            Err(why) => plan.warnings.push(format!(
                "{} cannot be read ({why}): a line of it that runs rch-sweep for this user would not be checked",
                file.display()
            )),
        }
    }
    out
}

/// Why a program of the line would not start, if it would not: a name
/// with a `/` is taken as it stands (from the folder of its moment when
/// relative); a bare name is looked up on the `PATH` of its moment
/// (`execvp`'s own default when there is none), an empty or relative entry
/// from that folder, as `sh` and `execvp` search it. Not found, `sh`
/// answers 127; found but not executable by this user, 126.
fn unreachable_program(lookup: &wrappers::Lookup) -> Option<String> {
    let name = &lookup.program;
    let from = Path::new(&lookup.cwd);
    if name.contains('/') {
        let path = from.join(name);
        if config::is_executable(&path) {
            return None;
        }
        let what = if path.is_file() {
            "is not executable by this user: every run ends in \"Permission denied\" (sh exits 126)"
        } else {
            "does not exist: every run ends in \"not found\" (sh exits 127)"
        };
        return Some(format!(
            "{} {what}, so cron never starts rch-sweep",
            path.display()
        ));
    }
    let path = lookup
        .path
        .as_deref()
        .unwrap_or(wrappers::EXECVP_DEFAULT_PATH);
    let candidates: Vec<PathBuf> = path
        .split(':')
        .map(|dir| from.join(dir).join(name))
        .collect();
    if candidates.iter().any(|c| config::is_executable(c)) {
        return None;
    }
    let what = match candidates.iter().find(|c| c.is_file()) {
        Some(found) => format!(
            "its PATH ({path}) finds {name} only at {}, which is not executable by this user: every run ends in \"Permission denied\" (sh exits 126)",
            found.display()
        ),
        None => format!(
            "its PATH ({path}) does not find {name}: every run ends in \"{name}: not found\" (sh exits 127)"
        ),
    };
    Some(format!(
        "{what}, so cron never starts rch-sweep; name it with its full path, or put its folder in a PATH= line above the line"
    ))
}

/// Why `cd DIR` would fail, if it would: DIR is no folder this user may
/// enter. sh then runs nothing after its `&&` (and exits 2).
fn unenterable_folder(dir: &str) -> Option<String> {
    let path = Path::new(dir);
    let why = match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => match fsio::may_access(path, libc::X_OK) {
            Ok(()) => return None,
            Err(error) => format!("this user may not enter it ({error})"),
        },
        Ok(_) => "it is no folder".to_owned(),
        Err(error) if error.kind() == ErrorKind::NotFound => "no such folder".to_owned(),
        Err(error) => error.to_string(),
    };
    Some(format!(
        "cd {dir} fails ({why}), so sh runs nothing after its && and cron never starts rch-sweep"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_cron_cannot_find_is_named() {
        let lookup = |program: &str, path: Option<&str>| wrappers::Lookup {
            program: program.to_owned(),
            path: path.map(str::to_owned),
            cwd: "/".to_owned(),
        };
        let missing = unreachable_program(&lookup("rch-sweep", Some("/nonexistent:/also-not")))
            .expect("not found");
        assert!(
            missing.contains("(/nonexistent:/also-not) does not find rch-sweep"),
            "{missing}"
        );
        assert_eq!(
            unreachable_program(&lookup("sh", Some("/bin:/usr/bin"))),
            None
        );
        // No PATH (after env -i): execvp's default.
        assert_eq!(unreachable_program(&lookup("sh", None)), None);
        assert!(unreachable_program(&lookup("/nonexistent/rch-sweep", None)).is_some());
    }

    fn base() -> crontab::Base {
        crontab::Base {
            name: "alice".into(),
            home: "/home/alice".into(),
            pam: Vars::new(),
        }
    }

    const ALL_THERE: Host<'static> = Host {
        program: &|_| None,
        folder: &|_| None,
    };

    #[test]
    fn no_followable_line_is_a_refusal_and_one_followed_line_is_not() {
        let found = ALL_THERE;
        let unfollowable = "@daily rch-sweep | logger\n@daily rch-sweep --as cron\n";
        let sources = vec![
            (None, crontab::read(unfollowable, &base())),
            (
                Some(PathBuf::from("/etc/cron.d/rch")),
                crontab::read_system("@daily alice sudo rch-sweep\n", &base()),
            ),
        ];
        let mut plan = Plan::default();
        assert!(decide(&sources, "alice", &found, &mut plan));
        assert!(plan.runs.is_empty());
        let refused = plan.refused.expect("refused");
        assert!(
            refused
                .finding
                .contains("line 1 (@daily rch-sweep | logger): a pipe"),
            "{}",
            refused.finding
        );
        assert!(
            refused
                .finding
                .contains("line 2 (@daily rch-sweep --as cron): it gives --as"),
            "{}",
            refused.finding
        );
        assert!(
            refused
                .finding
                .contains("line 1 of /etc/cron.d/rch (@daily alice sudo rch-sweep): it runs sudo"),
            "{}",
            refused.finding
        );
        assert_eq!(plan.warnings.len(), 3);
        // One line followed: the others are warnings, nothing refused.
        let sources = vec![(
            None,
            crontab::read(
                "@daily rch-sweep | logger\n@daily chronic rch-sweep -q\n",
                &base(),
            ),
        )];
        let mut plan = Plan::default();
        assert!(decide(&sources, "alice", &found, &mut plan));
        assert!(plan.refused.is_none());
        assert_eq!(plan.runs.len(), 1);
        assert_eq!(
            plan.runs[0].options.as_deref(),
            Some(&["-q".to_owned()][..])
        );
        assert!(plan.runs[0].failures.is_empty());
        // No rch-sweep line at all: nothing decided here.
        let sources = vec![(None, crontab::read("@daily /usr/bin/backup\n", &base()))];
        let mut plan = Plan::default();
        assert!(!decide(&sources, "alice", &found, &mut plan));
        assert!(plan.runs.is_empty() && plan.refused.is_none());
    }

    /// A followed line cron starts but that never reaches rch-sweep (a
    /// program not found, a `cd` that fails) is checked with its report's
    /// `environment` check failed, naming the line and why.
    #[test]
    fn a_line_that_never_reaches_rch_sweep_fails_its_own_report() {
        let missing = |lookup: &wrappers::Lookup| {
            (lookup.program == "chronic").then(|| "no chronic".to_owned())
        };
        let gone = |dir: &str| (dir == "/gone").then(|| "cd /gone fails".to_owned());
        let host = Host {
            program: &missing,
            folder: &gone,
        };
        let sources = vec![(
            None,
            crontab::read(
                "@daily chronic rch-sweep -q\n@daily rch-sweep -v\n@daily cd /gone && rch-sweep\n",
                &base(),
            ),
        )];
        let mut plan = Plan::default();
        assert!(decide(&sources, "alice", &host, &mut plan));
        assert!(plan.refused.is_none());
        let failures: Vec<&[String]> = plan.runs.iter().map(|r| &r.failures[..]).collect();
        assert_eq!(
            failures,
            [
                &["line 1 (@daily chronic rch-sweep -q): no chronic".to_owned()][..],
                &[],
                &["line 3 (@daily cd /gone && rch-sweep): cd /gone fails".to_owned()],
            ]
        );
        // The checks of the line whose cd fails run from its HOME.
        assert_eq!(plan.runs[2].cwd, Path::new("/home/alice"));
    }

    #[test]
    fn crons_rules_for_its_own_files() {
        for good in ["e2scrub_all", "rch-sweep", "A_1"] {
            assert!(cron_d_name(good), "{good}");
        }
        for bad in ["", "rch.sweep", "x.dpkg-old", "a b", "~x"] {
            assert!(!cron_d_name(bad), "{bad}");
        }
        assert_eq!(cron_skips(0, 0o100644, 1, None), None);
        assert_eq!(cron_skips(0, 0o100600, 1, Some(0)), None);
        assert!(
            cron_skips(1000, 0o100644, 1, None).is_some_and(|w| w.contains("not owned by root"))
        );
        assert!(cron_skips(0, 0o100664, 1, None).is_some_and(|w| w.contains("0664")));
        assert!(cron_skips(0, 0o100644, 2, None).is_some_and(|w| w.contains("2 hard links")));
        assert!(cron_skips(0, 0o100644, 1, Some(1000)).is_some_and(|w| w.contains("a link")));
    }
}

//! What a host must offer before a sweep may touch anything: the checks that
//! `run`, `forget` and `doctor` share.
//!
//! Each check looks (never writes) and returns a [`Finding`]: ok, warn or
//! fail, one line of finding and one line of fix, and the exit code a run
//! ends with when it fails. `run` and `forget` turn the first failing
//! finding into their exit code and print warnings; `doctor` prints them
//! all. Because both come from these functions, a run refuses exactly what
//! `doctor` reports as `fail`.

use crate::account;
use crate::config;
use crate::exit::{ExitCode, Fatal};
use crate::fsio::{self, Existing};
use crate::lease_dir::{Identity, LeaseDirFound, writable};
use crate::proc_locks;
use crate::stat::FileKind;
use crate::state::{self, Access, lock};
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The checks of `doctor`, in the order it runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoctorCheck {
    LeaseDir,
    State,
    Lock,
    Rch,
    Daemon,
    Metrics,
    Journals,
    Host,
    Environment,
}

impl DoctorCheck {
    pub fn as_str(self) -> &'static str {
        match self {
            DoctorCheck::LeaseDir => "lease_dir",
            DoctorCheck::State => "state",
            DoctorCheck::Lock => "lock",
            DoctorCheck::Rch => "rch",
            DoctorCheck::Daemon => "daemon",
            DoctorCheck::Metrics => "metrics",
            DoctorCheck::Journals => "journals",
            DoctorCheck::Host => "host",
            DoctorCheck::Environment => "environment",
        }
    }
}

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One check's result.
#[derive(Debug)]
pub struct Finding {
    pub check: DoctorCheck,
    pub status: Status,
    /// The exit code a run ends with when this check fails.
    pub code: ExitCode,
    pub finding: String,
    /// What to do about it (None when ok).
    pub fix: Option<String>,
}

impl Finding {
    pub fn ok(check: DoctorCheck, finding: impl Into<String>) -> Finding {
        Finding {
            check,
            status: Status::Ok,
            code: ExitCode::Success,
            finding: finding.into(),
            fix: None,
        }
    }

    pub fn warn(check: DoctorCheck, finding: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding {
            check,
            status: Status::Warn,
            code: ExitCode::Success,
            finding: finding.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn fail(
        check: DoctorCheck,
        code: ExitCode,
        finding: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            check,
            status: Status::Fail,
            code,
            finding: finding.into(),
            fix: Some(fix.into()),
        }
    }

    /// The finding and its fix as one message line.
    pub fn message(&self) -> String {
        match &self.fix {
            Some(fix) => format!("{}; {fix}", self.finding),
            None => self.finding.clone(),
        }
    }

    /// For a command that stops at the first failure: a failing finding
    /// becomes the error that ends it with the check's exit code; a warning
    /// is printed; ok is silent.
    pub fn enforce(self) -> anyhow::Result<()> {
        match self.status {
            Status::Ok => Ok(()),
            Status::Warn => {
                crate::log::warn(self.message());
                Ok(())
            }
            Status::Fail => Err(Fatal::error(self.code, self.message())),
        }
    }

    /// Like [`Finding::enforce`], but a warning is left unsaid: for checks
    /// whose warnings only `doctor` reports (a state folder a run creates).
    pub fn refuse(self) -> anyhow::Result<()> {
        match self.status {
            Status::Fail => Err(Fatal::error(self.code, self.message())),
            Status::Ok | Status::Warn => Ok(()),
        }
    }

    /// For a dry run, which makes a real run's checks but acts on none: a
    /// failure or a warning is printed as a warning.
    pub fn warn_only(self) {
        match self.status {
            Status::Ok => {}
            Status::Warn => crate::log::warn(self.message()),
            Status::Fail => crate::log::warn(format!(
                "a real run would stop here (exit {}): {}",
                self.code.code(),
                self.message()
            )),
        }
    }
}

/// What the command at hand is about to do, which decides what it refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// A real run: recovers with this user's keys, writes state, locks.
    Run,
    /// `--check`: a dry run whose answer a monitor acts on.
    Check,
    /// `--dry-run`: judges and plans only.
    DryRun,
    /// `forget`: rewrites the state under its lock.
    Forget,
    /// `doctor`: reports what a real run would meet.
    Doctor,
    /// `status`, `explain`: read only.
    Read,
}

impl Intent {
    /// How the state path and the state are checked: as their writer
    /// needs them for a run and `forget` (which write the state file under
    /// its lock), and for `doctor`, which writes nothing but reports what a
    /// run would meet; as a reader needs them for the rest.
    fn state_access(self) -> Access {
        if matches!(self, Intent::Run | Intent::Forget | Intent::Doctor) {
            Access::Write
        } else {
            Access::Read
        }
    }

    /// Lists the lease directory and judges every journal in it.
    fn scans(self) -> bool {
        matches!(
            self,
            Intent::Run | Intent::Check | Intent::DryRun | Intent::Doctor
        )
    }

    /// Creates the state folder when it is missing (`forget` then has
    /// nothing to forget).
    fn creates_state_folder(self) -> bool {
        matches!(self, Intent::Run | Intent::Doctor)
    }

    /// Acts for the lease directory's owner, so refuses any other user: a
    /// run's recoveries use this user's keys; `--check` run by a monitor's
    /// own account would judge every journal foreign and always pass;
    /// `forget` would rewrite another user's state.
    fn owner_only(self) -> bool {
        matches!(
            self,
            Intent::Run | Intent::Check | Intent::Forget | Intent::Doctor
        )
    }

    /// Hands the directory to `rch`, which finds it only as
    /// `<state home>/job-leases`.
    fn needs_rch_name(self) -> bool {
        matches!(self, Intent::Run | Intent::Doctor)
    }
}

/// The lease directory: a directory a run may use, owned by this user.
pub fn lease_dir(identity: &Identity, intent: Intent) -> Finding {
    let shown = identity.display();
    let check = DoctorCheck::LeaseDir;
    let uid = match directory_owner(identity) {
        Ok(uid) => uid,
        Err(finding) => return finding,
    };
    if intent.needs_rch_name() && !identity.named_job_leases() {
        return not_named_for_rch(identity);
    }
    if uid != account::euid() {
        return not_the_owners(identity, uid, intent);
    }
    // What the scan needs: to list the directory and open what is in it.
    // Looked at only for the owner (another user's directory is refused or
    // warned about above, and a dry run of theirs fails at the listing),
    // and only for the commands that scan (`status` and `forget` read only
    // the state, `explain` opens journals by name).
    if intent.scans()
        && let Err(error) = fsio::may_access(&identity.resolved, libc::R_OK | libc::X_OK)
    {
        return Finding::fail(
            check,
            ExitCode::Io,
            format!("cannot read lease directory {shown}: {error}"),
            "check its permissions and the disk",
        );
    }
    // What a real run checks before its first child (and only then: doctor
    // says now what that run would meet).
    if intent == Intent::Doctor
        && let Err(why) = writable::check_path(&identity.resolved)
    {
        return Finding::fail(
            check,
            ExitCode::Io,
            format!(
                "{}; a run with something due would start no recovery and exit 74",
                why.error(&shown)
            ),
            why.fix(),
        );
    }
    if let Some(nested) = identity.nested_job_leases() {
        return Finding::warn(
            check,
            format!(
                "lease directory {shown} holds no journal but a job-leases folder: {}",
                nested.display()
            ),
            format!(
                "point --lease-dir / RCH_SWEEP_LEASE_DIR at {} (you named rch's state home)",
                nested.display()
            ),
        );
    }
    Finding::ok(
        check,
        format!("{shown}, owned by {}", account::describe(uid)),
    )
}

/// The owner of the lease directory; else what is wrong with it: missing
/// (a warning: nothing to sweep yet), not a directory, or unreadable.
fn directory_owner(identity: &Identity) -> Result<u32, Finding> {
    let shown = identity.display();
    let check = DoctorCheck::LeaseDir;
    Err(match &identity.found {
        LeaseDirFound::Directory { uid } => return Ok(*uid),
        LeaseDirFound::Missing => Finding::warn(
            check,
            format!("lease directory {shown} does not exist; nothing to sweep yet"),
            if identity.explicit {
                "check --lease-dir / RCH_SWEEP_LEASE_DIR for a typo; rch creates the folder on its first build"
            } else {
                "nothing to do if rch has not built here yet (it creates the folder on its first build); if it keeps its leases elsewhere (RCH_STATE_HOME or XDG_STATE_HOME set in a login shell), name that folder with --lease-dir or set the variable where the sweep runs"
            },
        ),
        LeaseDirFound::NotADirectory => Finding::fail(
            check,
            ExitCode::Config,
            format!("lease directory {shown} is not a directory"),
            "point --lease-dir / RCH_SWEEP_LEASE_DIR at rch's job-leases folder",
        ),
        LeaseDirFound::Unreadable(error) => Finding::fail(
            check,
            ExitCode::Io,
            format!("cannot read lease directory {shown}: {error}"),
            "check its permissions and the disk",
        ),
    })
}

/// A lease directory `rch` would not find: it looks for its journals only
/// in `<state home>/job-leases`.
fn not_named_for_rch(identity: &Identity) -> Finding {
    let fix = match identity.nested_job_leases() {
        // An operator named rch's state home: say where its leases are.
        Some(nested) => format!(
            "it holds a job-leases folder: point --lease-dir / RCH_SWEEP_LEASE_DIR at {}",
            nested.display()
        ),
        None => "point --lease-dir / RCH_SWEEP_LEASE_DIR at rch's job-leases folder, or at a link named job-leases to this one (storage moved behind a link: rch follows it from the link's folder); a dry run accepts any folder".to_owned(),
    };
    Finding::fail(
        DoctorCheck::LeaseDir,
        ExitCode::Config,
        format!(
            "lease directory {} is not named job-leases; rch looks for its journals only in <state home>/job-leases, so `rch jobs recover` would not find these",
            identity.display()
        ),
        fix,
    )
}

/// Another user's lease directory (`uid`'s): refused by the commands that
/// act for its owner, a warning for the others.
fn not_the_owners(identity: &Identity, uid: u32, intent: Intent) -> Finding {
    let shown = identity.display();
    let check = DoctorCheck::LeaseDir;
    let euid = account::euid();
    let owner = account::describe(uid);
    let login = account::login(uid);
    let how = format!(
        "run it as its owner: `runuser -u {login} -- rch-sweep ...`, or enable the `rch-sweep@{login}.timer` unit"
    );
    if intent.owner_only() {
        Finding::fail(
            check,
            ExitCode::Config,
            format!(
                "lease directory {shown} belongs to {owner}, not to {} who runs this; the sweep acts only for the directory's owner, since a recovery runs with the keys and sockets of the user running it",
                account::describe(euid)
            ),
            how,
        )
    } else {
        Finding::warn(
            check,
            format!(
                "lease directory {shown} belongs to {owner}: its journals are judged as {}, so they show as foreign_owner",
                account::describe(euid)
            ),
            how,
        )
    }
}

/// The state path (and the lock beside it) a command may read or replace:
/// never inside the lease directory, a regular file if anything, this
/// user's when written, in a folder no other user can write.
pub fn state_path(identity: &Identity, state_file: &Path, intent: Intent) -> Finding {
    if is_inside(&identity.resolved, state_file) {
        return Finding::fail(
            DoctorCheck::State,
            ExitCode::Config,
            format!(
                "state file {} is inside the lease directory {}; rch-sweep keeps its state beside rch's journals, never among them",
                state_file.display(),
                identity.display()
            ),
            "drop --state-file / RCH_SWEEP_STATE_FILE to use the default <parent of the lease dir>/rch-sweep/backoff.json",
        );
    }
    // The lock is opened for reading and writing, even when another sweep
    // holds it; the state file is only read and then replaced by a rename.
    for (what, path, opened_for_writing) in [
        ("state file", state_file.to_path_buf(), false),
        ("lock file", lock::lock_path(state_file), true),
    ] {
        let file = StateFile {
            what,
            path: &path,
            opened_for_writing,
        };
        if let Some(refused) = file.refused(identity, state_file, intent.state_access()) {
            return refused;
        }
    }
    state_folder(state_file, intent)
}

/// The state file or its lock, as [`state_path`] looks at each.
struct StateFile<'a> {
    /// What it is called in a finding.
    what: &'a str,
    path: &'a Path,
    /// Opened for writing by a writer (the lock), not only replaced by a
    /// rename (the state file).
    opened_for_writing: bool,
}

impl StateFile<'_> {
    /// Why a command with `access` may not use the file, if it may not: it
    /// is no regular file of this user's (another user's may be read), a
    /// writer could not open it as it needs to, or it cannot be looked at.
    fn refused(&self, identity: &Identity, state_file: &Path, access: Access) -> Option<Finding> {
        let check = DoctorCheck::State;
        let (what, path) = (self.what, self.path);
        let refuse = |kind: &str| {
            Some(Finding::fail(
                check,
                ExitCode::Io,
                format!(
                    "{what} {} is {kind}; rch-sweep reads and replaces only a regular file of its own, so it left it as it is",
                    path.display()
                ),
                "move it away, or point --state-file / RCH_SWEEP_STATE_FILE elsewhere",
            ))
        };
        match fsio::existing(path) {
            Ok(Existing::Missing) => None,
            Ok(Existing::Ours(_)) if access == Access::Write && self.opened_for_writing => {
                let error = fsio::may_access(path, libc::R_OK | libc::W_OK).err()?;
                Some(Finding::fail(
                    check,
                    ExitCode::Io,
                    format!("cannot open {what} {} to lock it: {error}", path.display()),
                    format!("chmod 0600 {}", path.display()),
                ))
            }
            Ok(Existing::Ours(_)) => None,
            Ok(Existing::Foreign(_)) if access == Access::Read => None,
            Ok(Existing::Foreign(_)) => refuse("owned by another user"),
            Ok(Existing::Other(kind)) => refuse(kind.described()),
            Err(error) => Some(match hidden_backoff(identity, state_file) {
                Some(hidden) => hidden.finding(state_file),
                None => Finding::fail(
                    check,
                    ExitCode::Io,
                    format!("cannot look at {what} {}: {error}", path.display()),
                    "check the permissions of its folder",
                ),
            }),
        }
    }
}

/// The folder of the state file: for a writer, a real folder (no link),
/// this user's or root's and writable by no one else, into which it may
/// write; one that is missing must be creatable by a command that creates
/// it.
fn state_folder(state_file: &Path, intent: Intent) -> Finding {
    let check = DoctorCheck::State;
    let writer = intent.state_access() == Access::Write;
    let folder = fsio::parent_dir(state_file);
    // A run opens the folder without following a link (O_NOFOLLOW) and
    // would refuse a link there at its first write: say so now.
    if writer && std::fs::symlink_metadata(folder).is_ok_and(|meta| meta.is_symlink()) {
        return Finding::fail(
            check,
            ExitCode::Io,
            format!(
                "state folder {} is a symbolic link; rch-sweep does not follow one to its lock and state",
                folder.display()
            ),
            "point --state-file / RCH_SWEEP_STATE_FILE into the real folder",
        );
    }
    match std::fs::metadata(folder) {
        Ok(meta) if writer && !folder_trusted(meta.uid(), meta.mode()) => Finding::fail(
            check,
            ExitCode::Io,
            format!(
                "state folder {} belongs to {} with mode {:04o}; it holds the lock and the state, so a folder another user owns or can write to could swap them under a sweep",
                folder.display(),
                account::describe(meta.uid()),
                meta.mode() & 0o7777
            ),
            format!(
                "make it yours and private (as its owner or root: chown {} {} && chmod 0700 {}), or point --state-file / RCH_SWEEP_STATE_FILE into a folder of your own",
                account::login(account::euid()),
                folder.display(),
                folder.display()
            ),
        ),
        Ok(meta) if !meta.is_dir() => Finding::fail(
            check,
            ExitCode::Io,
            format!("state folder {} is not a directory", folder.display()),
            "point --state-file / RCH_SWEEP_STATE_FILE into a folder",
        ),
        Ok(_) => match writer.then(|| fsio::may_write_into(folder)) {
            Some(Err(error)) => Finding::fail(
                check,
                ExitCode::Io,
                format!(
                    "cannot write into state folder {} ({error}); a run could neither take its lock nor save its state",
                    folder.display()
                ),
                unwritable_fix(folder),
            ),
            _ => Finding::ok(check, format!("{}", state_file.display())),
        },
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            match intent.creates_state_folder().then(|| creatable(folder)) {
                Some(Err((above, error))) => Finding::fail(
                    check,
                    ExitCode::Io,
                    format!(
                        "state folder {} does not exist and cannot be created: {}: {error}",
                        folder.display(),
                        above.display()
                    ),
                    unwritable_fix(folder),
                ),
                _ => Finding::warn(
                    check,
                    format!("state folder {} does not exist yet", folder.display()),
                    "nothing to do: a run creates it (mode 0700)",
                ),
            }
        }
        Err(error) => Finding::fail(
            check,
            ExitCode::Io,
            format!("cannot look at state folder {}: {error}", folder.display()),
            "check the permissions of the folders above it",
        ),
    }
}

/// Another user's backoff, behind their private state folder (0700).
#[derive(Debug)]
pub struct HiddenBackoff {
    /// Whose sweep it is: the lease directory's owner (else the state
    /// folder's).
    pub owner: u32,
    /// Why it cannot be read.
    pub error: std::io::Error,
}

impl HiddenBackoff {
    /// What a dry run, `explain` and `doctor` say as they go on without it.
    pub fn finding(&self, state_file: &Path) -> Finding {
        Finding::warn(
            DoctorCheck::State,
            format!(
                "cannot read the backoff in {} ({}): it is {}'s, in a folder only they may enter; going on without it, so every due candidate is shown as if it had no backoff entry",
                state_file.display(),
                self.error,
                account::describe(self.owner)
            ),
            format!(
                "to see it, run as its owner: `runuser -u {} -- rch-sweep ...`",
                account::login(self.owner)
            ),
        )
    }
}

/// The state of a sweep that is not this user's (a monitor account looking
/// at someone's lease directory) and that this user may not read: the
/// state folder is private (0700), or, in a folder made open by hand, the
/// file is (0600). `None` when this user is the owner (then a state that
/// cannot be read is an I/O error like any other) or may read it.
pub fn hidden_backoff(identity: &Identity, state_file: &Path) -> Option<HiddenBackoff> {
    let denied = |error: std::io::Error| {
        (error.kind() == std::io::ErrorKind::PermissionDenied).then_some(error)
    };
    let error = match fsio::existing(state_file) {
        Err(error) => denied(error)?,
        Ok(Existing::Foreign(_)) => denied(fsio::may_access(state_file, libc::R_OK).err()?)?,
        Ok(_) => return None,
    };
    let owner = identity.owner().or_else(|| {
        std::fs::metadata(fsio::parent_dir(state_file))
            .ok()
            .map(|meta| meta.uid())
    })?;
    (owner != account::euid()).then_some(HiddenBackoff { owner, error })
}

fn unwritable_fix(folder: &Path) -> String {
    format!(
        "make {} this user's (or create it as this user, mode 0700), or point --state-file / RCH_SWEEP_STATE_FILE into a folder of your own",
        folder.display()
    )
}

/// Whether a run could create the missing `folder`: its nearest existing
/// ancestor must be a directory this user may write into. The error names
/// that ancestor.
fn creatable(folder: &Path) -> Result<(), (PathBuf, std::io::Error)> {
    let Some(above) = folder
        .ancestors()
        .skip(1)
        .find(|path| path.as_os_str().is_empty() || std::fs::symlink_metadata(path).is_ok())
    else {
        return Ok(());
    };
    let above = if above.as_os_str().is_empty() {
        Path::new(".")
    } else {
        above
    };
    match std::fs::metadata(above) {
        Ok(meta) if !meta.is_dir() => Err((
            above.to_path_buf(),
            std::io::Error::from_raw_os_error(libc::ENOTDIR),
        )),
        Ok(_) => fsio::may_write_into(above).map_err(|error| (above.to_path_buf(), error)),
        Err(error) => Err((above.to_path_buf(), error)),
    }
}

/// The rule for the state folder, checked here on its path and by a run on
/// the descriptor it writes through ([`crate::state::folder::open_private`]).
pub use crate::state::folder::trusted as folder_trusted;

/// Whether `state_file` names the lease directory or a path inside it,
/// compared with symlinks resolved both through its final component and
/// short of it, so no alias gets past.
fn is_inside(lease_dir: &Path, state_file: &Path) -> bool {
    let inside = |resolved: std::io::Result<PathBuf>| {
        resolved.is_ok_and(|state| state.starts_with(lease_dir))
    };
    inside(fsio::resolve(state_file, false)) || inside(fsio::resolve(state_file, true))
}

/// The state file's content, as a run would load it: an unknown version is
/// refused (78); one that does not parse is moved aside by a run (warn).
pub fn state_content(state_file: &Path, intent: Intent) -> Finding {
    let check = DoctorCheck::State;
    match state::load(state_file, intent.state_access()) {
        Ok(state::Loaded::Missing) => Finding::ok(
            check,
            format!("{} (none yet: no lease backing off)", state_file.display()),
        ),
        Ok(state::Loaded::Valid(backoff)) => Finding::ok(
            check,
            format!(
                "{} ({} lease{} backing off or retried)",
                state_file.display(),
                backoff.leases.len(),
                if backoff.leases.len() == 1 { "" } else { "s" }
            ),
        ),
        Ok(state::Loaded::Corrupt(why, _)) => Finding::warn(
            check,
            format!("state file {} does not parse ({why})", state_file.display()),
            "nothing to do: a run moves it aside and starts with empty backoff",
        ),
        Err(error) => Finding::fail(
            check,
            crate::exit::code_of(&error),
            format!("{error:#}"),
            "see the message",
        ),
    }
}

/// Whether a sweep holds the state lock or the lease directory now, seen
/// in `/proc/locks` without taking either lock (and without creating the
/// lock file). A held lock is no fault: a run meanwhile exits 75, which the
/// units count as success.
pub fn locks_held(identity: &Identity, state_file: &Path) -> Finding {
    let check = DoctorCheck::Lock;
    let lock_file = lock::lock_path(state_file);
    let mut held = Vec::new();
    // Each is looked up as /proc/locks names it (by its mount's device:
    // on btrfs and overlayfs `stat`'s is another).
    let mut looked = |what: String, path: &Path, pid_file: Option<&Path>| {
        match proc_locks::holders(path, true) {
            Ok(pids) if pids.is_empty() => Ok(()),
            // Gone since it was found: nobody holds it.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Ok(pids) => {
                // The lock file holds its holder's PID; /proc/locks knows it too.
                let pid = pid_file
                    .and_then(|path| std::fs::read_to_string(path).ok())
                    .and_then(|text| text.trim().parse::<u32>().ok())
                    .unwrap_or(pids[0]);
                held.push(format!("{what} (pid {pid})"));
                Ok(())
            }
            Err(error) => Err(error),
        }
    };
    let mut outcome = Ok(());
    if let Ok(meta) = std::fs::symlink_metadata(&lock_file)
        && meta.is_file()
    {
        outcome = looked(
            format!("the state lock {}", lock_file.display()),
            &lock_file,
            Some(&lock_file),
        );
    }
    if outcome.is_ok() && matches!(identity.found, LeaseDirFound::Directory { .. }) {
        outcome = looked(
            format!("the lease directory {}", identity.resolved.display()),
            &identity.resolved,
            None,
        );
    }
    if let Err(error) = outcome {
        return Finding::warn(
            check,
            format!("cannot tell whether a sweep holds the locks: /proc/locks: {error}"),
            "mount /proc, or look with `fuser` at the lock file",
        );
    }
    if held.is_empty() {
        Finding::ok(
            check,
            format!(
                "free: no sweep holds {} or the lease directory",
                lock_file.display()
            ),
        )
    } else {
        Finding::warn(
            check,
            format!("a sweep holds {} now", held.join(" and ")),
            "nothing to do: a run meanwhile exits 75, which the units count as success; if it lasts, look at that process (ps -p PID)",
        )
    }
}

/// Where `rch` is, found as `execvp` would find it; the failing finding
/// when it is nowhere this user may run it.
pub fn rch(
    explicit: Option<&Path>,
    path_var: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Result<PathBuf, Finding> {
    config::resolve_rch(explicit, path_var, home).map_err(|why| {
        Finding::fail(
            DoctorCheck::Rch,
            ExitCode::Config,
            format!("rch client: {}", why.finding),
            why.fix,
        )
    })
}

/// The metrics file a run will replace: its folder must exist and be
/// writable, and the path must be absent or this user's own regular file.
pub fn metrics(path: &Path) -> Finding {
    let check = DoctorCheck::Metrics;
    let fail = |finding: String, fix: String| Finding::fail(check, ExitCode::Io, finding, fix);
    if let Some(refused) = metrics_folder(path) {
        return refused;
    }
    let not_ours = |what: &str| {
        fail(
            format!(
                "--metrics-file {} is {what}; rch-sweep replaces only a regular file of its own, so it left it as it is",
                path.display()
            ),
            "move it away, or point --metrics-file / RCH_SWEEP_METRICS_FILE at a path of your own"
                .into(),
        )
    };
    match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Finding::ok(
            check,
            format!("{} (written by the first run, mode 0644)", path.display()),
        ),
        Err(error) => fail(
            format!(
                "--metrics-file {}: cannot look at it: {error}",
                path.display()
            ),
            "check the permissions of its folder".into(),
        ),
        Ok(meta) if !meta.is_file() => not_ours(FileKind::of(&meta).described()),
        Ok(meta) if meta.uid() != account::euid() => not_ours("owned by another user"),
        Ok(meta) if meta.mode() & 0o004 == 0 => Finding::warn(
            check,
            format!(
                "--metrics-file {} has mode {:04o}: node_exporter, running as another user, cannot read it",
                path.display(),
                meta.mode() & 0o7777
            ),
            "nothing to do if a run follows: every run writes it 0644; otherwise chmod 0644 it",
        ),
        Ok(_) => Finding::ok(check, path.display().to_string()),
    }
}

/// [`metrics`], and another `.prom` file in the same folder that holds
/// `rch_sweep_` series for the same lease directory: node_exporter serves
/// one of the two, stale or not (SPEC, sixth wave), so that is a warning.
pub fn metrics_and_others(path: &Path, lease_dir: &Path) -> Finding {
    let finding = metrics(path);
    if finding.status == Status::Fail {
        return finding;
    }
    let others = crate::metrics_peers::other_files_for(path, lease_dir);
    if others.is_empty() {
        return finding;
    }
    let names: Vec<String> = others.iter().map(|o| o.display().to_string()).collect();
    let said = format!(
        "{} also holds rch_sweep_ series for lease_dir=\"{}\": node_exporter serves one file's series or the other's, stale or not",
        names.join(" and "),
        lease_dir.display()
    );
    let fix = format!(
        "remove {} (a sweep of this lease directory writes only {})",
        names.join(" and "),
        path.display()
    );
    match finding.status {
        Status::Ok => Finding::warn(
            DoctorCheck::Metrics,
            format!("{}; but {said}", finding.finding),
            fix,
        ),
        _ => Finding::warn(
            DoctorCheck::Metrics,
            format!("{}; {said}", finding.finding),
            match finding.fix {
                Some(first) => format!("{first}; {fix}"),
                None => fix,
            },
        ),
    }
}

/// Why the folder of the metrics file at `path` cannot take it, if it
/// cannot: not a directory, not writable by this user, missing, or not to
/// be looked at.
fn metrics_folder(path: &Path) -> Option<Finding> {
    let folder = fsio::parent_dir(path);
    let fail = |finding: String, fix: String| {
        Some(Finding::fail(
            DoctorCheck::Metrics,
            ExitCode::Io,
            finding,
            fix,
        ))
    };
    match std::fs::metadata(folder) {
        Ok(meta) if !meta.is_dir() => fail(
            format!(
                "--metrics-file {}: {} is not a directory",
                path.display(),
                folder.display()
            ),
            "point --metrics-file / RCH_SWEEP_METRICS_FILE into node_exporter's textfile directory"
                .into(),
        ),
        Ok(_) => {
            let error = fsio::may_write_into(folder).err()?;
            fail(
                format!(
                    "--metrics-file {}: cannot write into {} ({error})",
                    path.display(),
                    folder.display()
                ),
                "give this user write access to it (e.g. a group-writable textfile directory) or point --metrics-file elsewhere".into(),
            )
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => fail(
            format!(
                "--metrics-file {}: its folder {} does not exist",
                path.display(),
                folder.display()
            ),
            format!(
                "create it (install -d -m 0755 {}) or point --metrics-file / RCH_SWEEP_METRICS_FILE into node_exporter's textfile directory",
                folder.display()
            ),
        ),
        Err(error) => fail(
            format!(
                "--metrics-file {}: cannot look at {}: {error}",
                path.display(),
                folder.display()
            ),
            "check the permissions of the folders above it".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_trusted_when_ours_or_roots_and_not_shared_unless_sticky() {
        let me = account::euid();
        assert!(folder_trusted(me, 0o40700));
        assert!(folder_trusted(0, 0o40755));
        assert!(folder_trusted(0, 0o41777), "sticky, like /tmp");
        assert!(!folder_trusted(0, 0o40777));
        assert!(!folder_trusted(me, 0o40770));
        assert!(!folder_trusted(me, 0o40702));
        if me != 4_000_000 {
            assert!(!folder_trusted(4_000_000, 0o40700), "another user's");
        }
    }

    #[test]
    fn findings_become_errors_with_their_code_and_fix() {
        let fail = Finding::fail(DoctorCheck::State, ExitCode::Io, "broken", "mend it");
        let error = fail.enforce().expect_err("fails");
        assert_eq!(crate::exit::code_of(&error), ExitCode::Io);
        assert_eq!(error.to_string(), "broken; mend it");
        assert!(
            Finding::warn(DoctorCheck::Lock, "held", "wait")
                .enforce()
                .is_ok()
        );
        assert!(
            Finding::ok(DoctorCheck::Rch, "/usr/bin/rch")
                .enforce()
                .is_ok()
        );
    }

    #[test]
    fn a_state_path_inside_the_lease_directory_is_a_configuration_error() {
        let world = tempfile::tempdir().expect("tempdir");
        let leases = world.path().join("job-leases");
        std::fs::create_dir(&leases).expect("mkdir");
        let identity = Identity::resolve(Some(&leases));
        for state in [leases.join("x/backoff.json"), leases.clone()] {
            let finding = state_path(&identity, &state, Intent::Read);
            assert_eq!(
                (finding.status, finding.code),
                (Status::Fail, ExitCode::Config)
            );
        }
        let beside = state_path(&identity, &world.path().join("s/b.json"), Intent::Run);
        assert_eq!(beside.status, Status::Warn, "{beside:?}");
    }

    #[test]
    fn the_metrics_path_must_be_a_writable_folders_own_regular_file() {
        let world = tempfile::tempdir().expect("tempdir");
        assert_eq!(metrics(&world.path().join("ok.prom")).status, Status::Ok);
        let missing = metrics(&world.path().join("nope/rch.prom"));
        assert_eq!((missing.status, missing.code), (Status::Fail, ExitCode::Io));
        assert!(missing.finding.contains("does not exist"), "{missing:?}");
        std::fs::create_dir(world.path().join("dir.prom")).expect("mkdir");
        let folder = metrics(&world.path().join("dir.prom"));
        assert!(folder.finding.contains("a directory"), "{folder:?}");
        std::os::unix::fs::symlink("ok.prom", world.path().join("link.prom")).expect("link");
        let link = metrics(&world.path().join("link.prom"));
        assert!(link.finding.contains("symbolic link"), "{link:?}");
        let private = world.path().join("private.prom");
        std::fs::write(&private, "").expect("write");
        std::fs::set_permissions(
            &private,
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .expect("chmod");
        assert_eq!(metrics(&private).status, Status::Warn);
    }
}

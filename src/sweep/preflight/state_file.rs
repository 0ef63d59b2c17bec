//! The `state` check: the state path and the lock beside it (never inside
//! the lease directory, regular files of this user's), the private folder
//! that holds them, the content a run would load, and another user's
//! backoff that this user may not read.

use super::{DoctorCheck, Finding, Intent};
use crate::account;
use crate::exit::ExitCode;
use crate::fsio::{self, Existing};
use crate::lease_dir::Identity;
use crate::state::{self, Access, lock};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::preflight::Status;

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
}

//! The `lease_dir` check: the lease directory a command is about to use,
//! its owner, its name as rch looks for it, and (for doctor) whether rch
//! could rewrite a journal there.

use super::{DoctorCheck, Finding, Intent};
use crate::account;
use crate::exit::ExitCode;
use crate::fsio;
use crate::lease_dir::{Identity, LeaseDirFound, writable};

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

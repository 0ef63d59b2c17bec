//! One module per subcommand, each with one `run` returning the exit code.

pub mod completions;
pub mod doctor;
pub mod explain;
pub mod forget;
pub mod run;
pub mod status;

use crate::cli::Paths;
use crate::exit::{ExitCode, Fatal};
use crate::lease_dir::{Found, Identity};
use crate::preflight::{self, Intent};
use std::path::PathBuf;

/// The lease directory and state file a command works on: the flags (or
/// their environment variables), else rch's defaults, with the lease
/// directory resolved once and the default state path derived from that.
pub struct Target {
    pub lease_dir: Identity,
    pub state_file: PathBuf,
}

impl Target {
    pub fn resolve(paths: &Paths) -> Target {
        let lease_dir = Identity::resolve(paths.lease_dir.as_deref());
        let state_file = paths
            .state_file
            .clone()
            .unwrap_or_else(|| lease_dir.default_state_file());
        Target {
            lease_dir,
            state_file,
        }
    }

    /// The checks every command makes before it reads anything: the lease
    /// directory (a failure ends the command; a warning is printed; a
    /// missing directory is left to the command, which knows what that
    /// means for it) and the state path (only failures: a state folder a
    /// run has yet to create is no news).
    pub fn check(&self, intent: Intent) -> anyhow::Result<()> {
        if !matches!(self.lease_dir.found, Found::Missing) {
            preflight::lease_dir(&self.lease_dir, intent).enforce()?;
        }
        preflight::state_path(&self.lease_dir, &self.state_file, intent).refuse()
    }
}

/// A lease directory that cannot be opened or listed.
pub fn unreadable_lease_dir(identity: &Identity, error: &std::io::Error) -> anyhow::Error {
    Fatal::error(
        ExitCode::Io,
        format!(
            "cannot read lease directory {}: {error}; check its permissions and the disk",
            identity.display()
        ),
    )
}

//! One module per subcommand, each with one `run` returning the exit code.
//!
//! May use: every folder and file of the crate; nothing uses it but `main.rs`.

pub mod completions;
pub mod doctor;
pub mod doctor_as;
pub mod explain;
pub mod forget;
pub mod run;
pub mod status;

use crate::cli::Paths;
use crate::config;
use crate::exit::{ExitCode, Fatal};
use crate::lease_dir::{Identity, LeaseDirFound};
use crate::log;
use crate::state::backoff::Backoff;
use crate::sweep::preflight::{self, Intent};
use std::path::{Path, PathBuf};

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

    /// The backoff a read-only command (a dry run, `explain`) plans or
    /// explains with: what `load` reads, or, when the state is another
    /// user's behind their private folder, none, said once as a warning.
    pub fn readable_backoff(
        &self,
        load: impl FnOnce(&Path) -> anyhow::Result<Backoff>,
    ) -> anyhow::Result<Backoff> {
        match preflight::hidden_backoff(&self.lease_dir, &self.state_file) {
            Some(hidden) => {
                log::warn(hidden.finding(&self.state_file).message());
                Ok(Backoff::empty())
            }
            None => load(&self.state_file),
        }
    }

    /// The checks every command makes before it reads anything: the lease
    /// directory (a failure ends the command; a warning is printed; a
    /// missing directory is left to the command, which knows what that
    /// means for it) and the state path (only failures: a state folder a
    /// run has yet to create is no news).
    pub fn check(&self, intent: Intent) -> anyhow::Result<()> {
        if !matches!(self.lease_dir.found, LeaseDirFound::Missing) {
            preflight::lease_dir(&self.lease_dir, intent).enforce()?;
        }
        preflight::state_path(&self.lease_dir, &self.state_file, intent).refuse()
    }
}

/// SPEC's `~` rule, the first thing every command that takes a path
/// checks: a path value (a variable of [`config::PATH_VARS`], or one of
/// `extra`'s options, or `--lease-dir` / `--state-file`) that begins with
/// `~` is a configuration error (78) naming it.
pub fn refuse_tilde(paths: &Paths, extra: &[(&str, Option<&Path>)]) -> anyhow::Result<()> {
    let mut options = vec![
        ("--lease-dir", paths.lease_dir.as_deref()),
        ("--state-file", paths.state_file.as_deref()),
    ];
    options.extend_from_slice(extra);
    config::refuse_tilde(config::process_env, &options)
        .map_err(|why| Fatal::error(ExitCode::Config, why))
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

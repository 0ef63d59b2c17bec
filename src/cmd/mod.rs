//! One module per subcommand, each with one `run` returning the exit code.

pub mod completions;
pub mod explain;
pub mod forget;
pub mod run;
pub mod status;

use crate::cli::Paths;
use crate::exit::{ExitCode, Fatal};
use crate::{config, fsio};
use std::path::{Path, PathBuf};

/// The lease directory and state file a command works on: the flags (or
/// their environment variables), else rch's defaults.
pub fn resolve_paths(paths: &Paths) -> (PathBuf, PathBuf) {
    let lease_dir = paths
        .lease_dir
        .clone()
        .unwrap_or_else(|| config::default_lease_dir(config::process_env));
    let state_file = paths
        .state_file
        .clone()
        .unwrap_or_else(|| config::default_state_file(&lease_dir));
    (lease_dir, state_file)
}

/// A state path equal to the lease directory or inside it would put our
/// files among rch's journals (or rename rch's whole folder aside): a
/// configuration error, checked before anything else about the state path.
/// Compared with symlinks resolved, both through the final component and
/// not, so no alias gets past it.
pub fn check_state_outside_leases(lease_dir: &Path, state_file: &Path) -> anyhow::Result<()> {
    let inside = |resolved: std::io::Result<PathBuf>, leases: &Path| {
        resolved.is_ok_and(|state| state.starts_with(leases))
    };
    let leases = fsio::resolve(lease_dir, true).unwrap_or_else(|_| lease_dir.to_path_buf());
    if inside(fsio::resolve(state_file, false), &leases)
        || inside(fsio::resolve(state_file, true), &leases)
    {
        return Err(Fatal::error(
            ExitCode::Config,
            format!(
                "state file {} is inside the lease directory {}; rch-sweep keeps its state beside rch's journals, never among them. Drop --state-file / RCH_SWEEP_STATE_FILE to use the default <parent of the lease dir>/rch-sweep/backoff.json",
                state_file.display(),
                lease_dir.display()
            ),
        ));
    }
    Ok(())
}

/// A lease directory path that is not a directory: one wording for every
/// command that meets it.
pub fn not_a_directory(lease_dir: &Path) -> anyhow::Error {
    Fatal::error(
        ExitCode::Config,
        format!(
            "lease directory {} is not a directory; point --lease-dir / RCH_SWEEP_LEASE_DIR at rch's job-leases folder",
            lease_dir.display()
        ),
    )
}

/// A lease directory that cannot be opened or listed.
pub fn unreadable_lease_dir(lease_dir: &Path, error: &std::io::Error) -> anyhow::Error {
    Fatal::error(
        ExitCode::Io,
        format!(
            "cannot read lease directory {}: {error}; check its permissions and the disk",
            lease_dir.display()
        ),
    )
}

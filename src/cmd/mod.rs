//! One module per subcommand, each with one `run` returning the exit code.

pub mod explain;
pub mod forget;
pub mod run;
pub mod status;

use crate::cli::Paths;
use crate::config;
use std::path::PathBuf;

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

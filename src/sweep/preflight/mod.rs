//! What a host must offer before a sweep may touch anything: the checks that
//! `run`, `forget` and `doctor` share.
//!
//! Each check looks (never writes) and returns a [`Finding`]: ok, warn or
//! fail, one line of finding and one line of fix, and the exit code a run
//! ends with when it fails. `run` and `forget` turn the first failing
//! finding into their exit code and print warnings; `doctor` prints them
//! all. Because both come from these functions, a run refuses exactly what
//! `doctor` reports as `fail`.
//!
//! Its rooms, one a check: [`directory`] (`lease_dir`), [`state_file`]
//! (`state`), [`locks`] (`lock`), [`metrics_file`] (`metrics`); this file
//! holds what a finding is, what a command's [`Intent`] makes it refuse,
//! and [`rch()`], the `rch` check (a finding around
//! [`crate::config::resolve_rch`]). The checks are re-exported here, so a
//! command calls `preflight::state_path` and so on.

pub mod directory;
pub mod locks;
pub mod metrics_file;
pub mod state_file;

pub use directory::lease_dir;
pub use locks::locks_held;
pub use metrics_file::{metrics, metrics_and_others};
pub use state_file::{HiddenBackoff, folder_trusted, hidden_backoff, state_content, state_path};

use crate::config;
use crate::exit::{ExitCode, Fatal};
use crate::state::Access;
use std::ffi::OsStr;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! The tool's exit codes, and how the results of one run merge into one code.
//!
//! Timers, cron and CI act on these numbers (SPEC "Exit status"), so every
//! path that ends the process goes through [`ExitCode`]; nothing else calls
//! `std::process::exit` with a literal.

use std::fmt;

/// One of the SPEC's exit statuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    /// The sweep ran and no recovery failed.
    Success,
    /// A recovery failed or timed out; with `--check`, a journal is due.
    Failed,
    /// Bad command line (clap exits with this itself).
    Usage,
    /// An I/O error on the lease directory, the state file or the metrics file.
    Io,
    /// A temporary host fault that charges no lease: another sweep holds
    /// the lock, rch's daemon is not answering, the host could not start a
    /// recovery (no thread or process). Timers count it as success
    /// (`SuccessExitStatus=75`); the metrics show it.
    TempFail,
    /// `rch` missing or not startable, lease dir not a directory or not
    /// this user's, unknown state file version.
    Config,
    /// Stopped by this signal after cleaning up.
    Signal(i32),
}

impl ExitCode {
    pub fn code(self) -> i32 {
        match self {
            ExitCode::Success => 0,
            ExitCode::Failed => 1,
            ExitCode::Usage => 2,
            ExitCode::Io => 74,
            ExitCode::TempFail => 75,
            ExitCode::Config => 78,
            ExitCode::Signal(n) => 128 + n,
        }
    }

    /// Which of two outcomes of one run the exit status reports (SPEC "JSON
    /// summary"): a signal, then an I/O error, then a configuration error,
    /// then a temporary host fault, then a failed recovery, then success. A
    /// run whose state could not be saved reports 74 even when `rch` also
    /// could not be started: what was lost is what an operator must see
    /// first. A configuration error outranks a host fault because it will
    /// not mend itself, while a daemon that is down or a host out of
    /// processes may. (Usage errors end a command before there is anything
    /// to merge with.)
    pub fn merge(self, other: ExitCode) -> ExitCode {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }

    fn rank(self) -> u8 {
        match self {
            ExitCode::Success => 0,
            ExitCode::Failed => 1,
            ExitCode::TempFail => 2,
            ExitCode::Config => 3,
            ExitCode::Usage => 4,
            ExitCode::Io => 5,
            ExitCode::Signal(_) => 6,
        }
    }
}

/// An error that ends the run with a chosen exit code. Raised where the
/// decision is made and carried through `anyhow` to `main`, which prints the
/// whole context chain once and exits with `code`.
#[derive(Debug)]
pub struct Fatal {
    pub code: ExitCode,
    pub message: String,
}

impl Fatal {
    pub fn error(code: ExitCode, message: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(Fatal {
            code,
            message: message.into(),
        })
    }
}

impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Fatal {}

/// The exit code an error carries; an error nobody classified is an I/O
/// error, since every fallible step at the boundary is one.
pub fn code_of(error: &anyhow::Error) -> ExitCode {
    error
        .chain()
        .find_map(|cause| cause.downcast_ref::<Fatal>())
        .map_or(ExitCode::Io, |fatal| fatal.code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_spec() {
        let codes: Vec<i32> = [
            ExitCode::Success,
            ExitCode::Failed,
            ExitCode::Usage,
            ExitCode::Io,
            ExitCode::TempFail,
            ExitCode::Config,
            ExitCode::Signal(15),
        ]
        .into_iter()
        .map(ExitCode::code)
        .collect();
        assert_eq!(codes, [0, 1, 2, 74, 75, 78, 143]);
    }

    #[test]
    fn precedence_is_signal_io_config_tempfail_failed_success() {
        use ExitCode::*;
        let order = [Signal(15), Io, Config, TempFail, Failed, Success];
        for (rank, higher) in order.iter().enumerate() {
            for lower in &order[rank..] {
                assert_eq!(higher.merge(*lower), *higher, "{higher:?} over {lower:?}");
                assert_eq!(lower.merge(*higher), *higher, "{higher:?} over {lower:?}");
            }
        }
        assert_eq!(
            Signal(15).merge(Signal(2)),
            Signal(15),
            "the first signal stays"
        );
    }

    #[test]
    fn a_fatal_error_keeps_its_code_under_context() {
        let error = Fatal::error(ExitCode::TempFail, "busy").context("while sweeping");
        assert_eq!(code_of(&error), ExitCode::TempFail);
        assert_eq!(code_of(&anyhow::anyhow!("plain")), ExitCode::Io);
    }
}

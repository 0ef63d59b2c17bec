//! The `rch-sweep` binary: the process set up before anything is opened
//! (inherited descriptors, SIGCHLD, empty variables), the command run, its
//! error turned into the exit code, and with `--json` one document even
//! when the command ends in an error.

#![deny(unsafe_code)]

use clap::Parser;
use rch_sweep::cli::{Cli, Command, ENV_VARS};
use rch_sweep::exit::{self, ExitCode};
use rch_sweep::{cmd, log, rch::child, sys};

fn main() {
    // Before anything is opened or started: no descriptor this process
    // inherited may reach a child, whatever the kernel offers.
    child::cloexec_inherited();
    // Before any child: cron may hand us SIGCHLD ignored.
    child::reset_sigchld();
    // Set but empty counts as unset, for us and for the children; no
    // other thread exists yet, so the environment may still change.
    let empty: Vec<&std::ffi::OsStr> = ENV_VARS
        .iter()
        .map(std::ffi::OsStr::new)
        .filter(|name| std::env::var_os(name).is_some_and(|value| value.is_empty()))
        .collect();
    // It refuses only where /proc cannot show the thread count: then the
    // empty values stay.
    let _ = sys::env::remove_while_single_threaded(&empty);
    let cli = Cli::parse();
    let (quiet, json) = match &cli.command {
        None => (cli.run.quiet, cli.run.json),
        Some(Command::Run(args)) => (args.quiet, args.json),
        Some(Command::Status(args)) => (false, args.json),
        Some(Command::Explain(args)) => (false, args.json),
        Some(Command::Doctor(args)) => (false, args.run.json),
        Some(Command::Forget(_) | Command::Completions(_)) => (false, false),
    };
    log::init(quiet);
    let result = match cli.command {
        None => cmd::run::run(cli.run),
        Some(Command::Run(args)) => cmd::run::run(args),
        Some(Command::Status(args)) => cmd::status::run(args),
        Some(Command::Forget(args)) => cmd::forget::run(args),
        Some(Command::Completions(args)) => cmd::completions::run(args),
        Some(Command::Explain(args)) => cmd::explain::run(args),
        Some(Command::Doctor(args)) => cmd::doctor::run(args),
    };
    let code = match result {
        Ok(code) => code,
        Err(error) => {
            let code = exit::code_of(&error);
            // Another sweep running is routine for a timer (the units count
            // 75 as success): a warning, which --quiet hides.
            if code == ExitCode::TempFail {
                log::warn(format!("{error:#}"));
            } else {
                log::error(format!("{error:#}"));
            }
            if json {
                print_error_document(code, &error);
            }
            code
        }
    };
    // Under --quiet, a run's errors wait for its exit code: nothing at all
    // is printed for a temporary host fault (75).
    log::release(code == ExitCode::TempFail);
    std::process::exit(code.code());
}

/// With `--json`, a command that ends in an error instead of its document
/// (74, 75, 78) still prints exactly one, so `rch-sweep --json | jq` never
/// reads empty input and takes it for success.
fn print_error_document(code: ExitCode, error: &anyhow::Error) {
    use std::io::Write;
    if !matches!(code, ExitCode::Io | ExitCode::TempFail | ExitCode::Config) {
        return;
    }
    // A struct, not `json!`, so the keys come in SPEC's order.
    #[derive(serde::Serialize)]
    struct ErrorDocument {
        version: u32,
        exit_code: i32,
        error: String,
    }
    let document = ErrorDocument {
        version: 1,
        exit_code: code.code(),
        error: format!("{error:#}"),
    };
    let text = serde_json::to_string(&document).unwrap_or_default();
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

use clap::Parser;
use rch_sweep::cli::{Cli, Command, ENV_VARS};
use rch_sweep::exit;
use rch_sweep::{child, cmd, log};

fn main() {
    // Before any child: cron may hand us SIGCHLD ignored.
    child::reset_sigchld();
    for name in ENV_VARS {
        if std::env::var_os(name).is_some_and(|value| value.is_empty()) {
            // SAFETY: no other thread exists yet, so nothing reads the
            // environment while it changes.
            unsafe { std::env::remove_var(name) };
        }
    }
    let cli = Cli::parse();
    let quiet = matches!(&cli.command, Some(Command::Run(args)) if args.quiet)
        || (cli.command.is_none() && cli.run.quiet);
    log::init(quiet);
    let result = match cli.command {
        None => cmd::run::run(cli.run),
        Some(Command::Run(args)) => cmd::run::run(args),
        Some(Command::Status(args)) => cmd::status::run(args),
        Some(Command::Forget(args)) => cmd::forget::run(args),
        Some(Command::Completions(args)) => cmd::completions::run(args),
        Some(Command::Explain(args)) => cmd::explain::run(args),
    };
    let code = match result {
        Ok(code) => code,
        Err(error) => {
            let code = exit::code_of(&error);
            // Another sweep running is routine for a timer (the units count
            // 75 as success): a warning, which --quiet hides.
            if code == exit::ExitCode::Locked {
                log::warn(format!("{error:#}"));
            } else {
                log::error(format!("{error:#}"));
            }
            code
        }
    };
    std::process::exit(code.code());
}

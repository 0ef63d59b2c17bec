//! `rch-sweep forget`: remove backoff entries so those leases are retried on
//! the next run (after an operator fixed the worker, say). Takes the lock, so
//! it never races a running sweep's save.

use crate::backoff::Backoff;
use crate::cli::ForgetArgs;
use crate::exit::{ExitCode, Fatal};
use crate::lock;
use crate::state;
use crate::{fsio, log};
use anyhow::Result;

pub fn run(args: ForgetArgs) -> Result<ExitCode> {
    let (lease_dir, state_file) = super::resolve_paths(&args.paths);
    super::check_state_outside_leases(&lease_dir, &state_file)?;
    // Before the lock is created beside it.
    state::check_path(&state_file, state::Access::Write)?;
    if !fsio::parent_dir(&state_file).is_dir() {
        log::info(format!(
            "no state file at {}; nothing to forget",
            state_file.display()
        ));
        return Ok(ExitCode::Success);
    }
    let _lock = lock::acquire_for(&state_file)?;
    let Some(mut backoff) = state::load_existing(&state_file, state::Access::Write)? else {
        log::info(format!(
            "no state file at {}; nothing to forget",
            state_file.display()
        ));
        return Ok(ExitCode::Success);
    };
    let removed = if args.all {
        let count = backoff.leases.len();
        backoff = Backoff {
            leases: Default::default(),
            ..backoff
        };
        count
    } else {
        let mut count = 0;
        for id in &args.wrapper_ids {
            if backoff.forget(id) {
                count += 1;
            } else {
                log::info(format!("{id} has no backoff entry"));
            }
        }
        count
    };
    if removed > 0 {
        state::save(&state_file, &backoff).map_err(|error| {
            Fatal::error(
                ExitCode::Io,
                format!("cannot write state file {}: {error}", state_file.display()),
            )
        })?;
    }
    log::info(format!(
        "forgot {removed} entr{} in {}",
        if removed == 1 { "y" } else { "ies" },
        state_file.display()
    ));
    Ok(ExitCode::Success)
}

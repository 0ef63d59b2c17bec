//! `rch-sweep forget`: remove backoff entries so those leases are retried on
//! the next run (after an operator fixed the worker, say). Takes the lock, so
//! it never races a running sweep's save.

use crate::backoff::Backoff;
use crate::cli::ForgetArgs;
use crate::exit::{ExitCode, Fatal};
use crate::lock;
use crate::preflight::Intent;
use crate::state;
use crate::{fsio, journal, log};
use anyhow::Result;

pub fn run(args: ForgetArgs) -> Result<ExitCode> {
    // Before anything else: a typo must forget nothing, not report "no
    // backoff entry" and exit 0.
    let wrapper_ids =
        wrapper_ids(&args.wrapper_ids).map_err(|why| Fatal::error(ExitCode::Usage, why))?;
    super::refuse_tilde(&args.paths, &[])?;
    let target = super::Target::resolve(&args.paths);
    // Before the lock is created beside it: the directory's owner, the
    // state path and its folder.
    target.check(Intent::Forget)?;
    let state_file = target.state_file;
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
        for id in &wrapper_ids {
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

/// The wrapper ids the arguments name: each a canonical wrapper id or a
/// journal's file name (what an operator copies from `ls`). The first
/// argument that is neither is the error, naming it.
fn wrapper_ids(arguments: &[String]) -> Result<Vec<String>, String> {
    arguments
        .iter()
        .map(|argument| {
            if journal::is_wrapper_id(argument) {
                Ok(argument.clone())
            } else if let Some(id) = journal::wrapper_id_of(argument.as_bytes()) {
                Ok(id.to_owned())
            } else {
                Err(format!(
                    "forget: {:?} is neither a wrapper id (rchw-<uuid>, lowercase) nor a journal file name (rchw-<uuid>.json); nothing was forgotten (rch-sweep status lists the ids)",
                    log::printable(argument)
                ))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10";

    #[test]
    fn ids_and_file_names_name_wrapper_ids() {
        let args = [ID.to_owned(), format!("{ID}.json")];
        assert_eq!(wrapper_ids(&args), Ok(vec![ID.to_owned(), ID.to_owned()]));
    }

    #[test]
    fn anything_else_is_refused_by_name() {
        for bad in [
            "not-an-id",
            "RCHW-6F1C3B7E-2A4D-4C8E-9B1F-3E5A7D9C2B10",
            "rchw-6F1C3B7E-2a4d-4c8e-9b1f-3e5a7d9c2b10",
            "6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10",
            "rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10.jsonx",
            "rchw-6f1c3b7e2a4d4c8e9b1f3e5a7d9c2b10",
            "leases/rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10.json",
            "",
        ] {
            let args = [ID.to_owned(), bad.to_owned()];
            let why = wrapper_ids(&args).expect_err(bad);
            assert!(why.contains(&format!("{bad:?}")), "{why}");
        }
    }
}

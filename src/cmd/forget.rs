//! `rch-sweep forget`: remove backoff entries so those leases are retried on
//! the next run (after an operator fixed the worker, say). Takes the lock, so
//! it never races a running sweep's save.

use crate::cli::ForgetArgs;
use crate::exit::{ExitCode, Fatal};
use crate::state::backoff::Backoff;
use crate::state::{self, Store};
use crate::sweep::preflight::Intent;
use crate::{fsio, lease, log};
use anyhow::Result;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub fn run(args: ForgetArgs) -> Result<ExitCode> {
    super::refuse_tilde(&args.paths, &[])?;
    let target = super::Target::resolve(&args.paths);
    // Before anything is checked or locked: a typo must forget nothing,
    // not report "no backoff entry" and exit 0.
    let wrapper_ids = wrapper_ids(&args.wrapper_ids, &target.lease_dir.resolved)
        .map_err(|why| Fatal::error(ExitCode::Usage, why))?;
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
    // The folder opened once: the lock, the read and the save all go
    // through it.
    let store = Store::open(&state_file).map_err(|error| {
        let message = if state::folder::is_untrusted(&error) {
            error.to_string()
        } else {
            format!(
                "cannot open state folder {}: {error}",
                fsio::parent_dir(&state_file).display()
            )
        };
        Fatal::error(ExitCode::Io, message)
    })?;
    let _lock = store.lock()?;
    let Some(mut backoff) = store.load_existing()? else {
        log::info(format!(
            "no state file at {}; nothing to forget",
            state_file.display()
        ));
        return Ok(ExitCode::Success);
    };
    let removed = if args.all {
        // Every entry, and every lease held without one.
        let count = backoff.leases.len()
            + backoff
                .held
                .keys()
                .filter(|id| !backoff.leases.contains_key(*id))
                .count();
        backoff = Backoff {
            leases: Default::default(),
            held: Default::default(),
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
        store.save(&backoff).map_err(|error| {
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

/// The wrapper ids the arguments name: each a canonical wrapper id, a
/// journal's file name (what an operator copies from `ls`) or, as for
/// `explain`, a journal's path inside `lease_dir` (what a shell completes).
/// The first argument that is none of these is the error, naming it.
fn wrapper_ids(arguments: &[String], lease_dir: &Path) -> Result<Vec<String>, String> {
    arguments
        .iter()
        .map(|argument| {
            if lease::is_wrapper_id(argument) {
                return Ok(argument.clone());
            }
            if argument.contains('/') {
                let name = super::explain::entry_name(Path::new(argument), lease_dir)
                    .map_err(|why| {
                        format!(
                            "forget: {:?}: {why}; nothing was forgotten",
                            log::printable(argument)
                        )
                    })?;
                if let Some(id) = lease::wrapper_id_of(name.as_bytes()) {
                    return Ok(id.to_owned());
                }
            } else if let Some(id) = lease::wrapper_id_of(argument.as_bytes()) {
                return Ok(id.to_owned());
            }
            Err(format!(
                "forget: {:?} is neither a wrapper id (rchw-<uuid>, lowercase) nor a journal's file name (rchw-<uuid>.json) or path in the lease directory; nothing was forgotten (rch-sweep status lists the ids)",
                log::printable(argument)
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10";

    const LEASES: &str = "/nonexistent/job-leases";

    #[test]
    fn ids_and_file_names_name_wrapper_ids() {
        let args = [ID.to_owned(), format!("{ID}.json")];
        assert_eq!(
            wrapper_ids(&args, Path::new(LEASES)),
            Ok(vec![ID.to_owned(), ID.to_owned()])
        );
    }

    #[test]
    fn a_journal_path_counts_only_inside_the_lease_directory() {
        let world = tempfile::tempdir().expect("tempdir");
        let leases = world.path().join("job-leases");
        std::fs::create_dir(&leases).expect("mkdir");
        let inside = leases.join(format!("{ID}.json")).display().to_string();
        assert_eq!(wrapper_ids(&[inside], &leases), Ok(vec![ID.to_owned()]));
        let outside = world
            .path()
            .join(format!("{ID}.json"))
            .display()
            .to_string();
        let why = wrapper_ids(&[outside], &leases).expect_err("outside");
        assert!(
            why.contains("is not a journal inside the lease directory"),
            "{why}"
        );
        let odd = leases.join("notes.json").display().to_string();
        assert!(wrapper_ids(&[odd], &leases).is_err());
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
            "",
        ] {
            let args = [ID.to_owned(), bad.to_owned()];
            let why = wrapper_ids(&args, Path::new(LEASES)).expect_err(bad);
            assert!(why.contains(&format!("{bad:?}")), "{why}");
        }
    }
}

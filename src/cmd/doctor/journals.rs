//! doctor's `journals` check: the counts a dry run would give (a scan and
//! a plan over the lease directory, read only), and what in them asks for a
//! look: journals never recovered as they stand, heartbeats from a clock
//! ahead, candidates' recovery locks that rch refuses.

use super::super::Target;
use super::ok_or_warn;
use crate::cli::RunArgs;
use crate::judge::owner::ProcFs;
use crate::judge::verdict::SkipReason;
use crate::lease_dir::{LeaseDirFound, recovery_lock};
use crate::state;
use crate::state::backoff::{Backoff, now_unix_ms};
use crate::sweep::held::Told;
use crate::sweep::plan::{self, Slot};
use crate::sweep::preflight::{DoctorCheck, Finding};
use crate::sweep::scan::{self, Scan, ScanOptions};
use std::fmt::Write as _;
use std::path::Path;

/// The counts a dry run would give, and what in them asks for a look.
pub(super) fn journals(target: &Target, args: &RunArgs) -> Finding {
    let check = DoctorCheck::Journals;
    match &target.lease_dir.found {
        LeaseDirFound::Missing => {
            return Finding::ok(check, "no lease directory yet: nothing to judge");
        }
        LeaseDirFound::NotADirectory | LeaseDirFound::Unreadable(_) => {
            return Finding::warn(
                check,
                "not judged: the lease directory cannot be read",
                "see lease_dir above",
            );
        }
        LeaseDirFound::Directory { .. } => {}
    }
    let now = now_unix_ms();
    let opened = target.lease_dir.open();
    let scanned = match &opened {
        Ok(dir) => {
            let options = ScanOptions {
                now_unix_ms: now,
                stale_after_ms: args.stale_after.saturating_mul(1000),
                keep_skipped: false,
            };
            scan::scan(dir, &options, &ProcFs::system())
        }
        Err(error) => Err(std::io::Error::new(error.kind(), error.to_string())),
    };
    let scan = match scanned {
        Ok(scan) => scan,
        Err(error) => {
            return Finding::warn(
                check,
                format!("not judged: cannot list the lease directory: {error}"),
                "check its permissions and the disk",
            );
        }
    };
    let mut backoff = match state::load(&target.state_file, state::Access::Read) {
        Ok(state::Loaded::Valid(backoff)) => backoff,
        _ => Backoff::empty(),
    };
    backoff.prune(&scan.candidates, now, args.backoff_max.saturating_mul(1000));
    let slots = plan::dry_run(
        &scan.candidates,
        &backoff,
        now,
        usize::from(args.max_recoveries),
    );
    let mut counts = journal_counts(&scan, &slots);
    let (mut warnings, mut fixes) = journal_concerns(&scan);
    match crate::sweep::held::for_doctor(&backoff, now) {
        Some(Told::Note(note)) => {
            let _ = write!(counts, "; {note}");
        }
        Some(Told::Warning(warning, fix)) => {
            warnings.push(warning);
            fixes.push(fix);
        }
        None => {}
    }
    if let Ok(dir) = &opened {
        let refused = refused_locks(dir, &target.lease_dir.resolved, &scan);
        if !refused.is_empty() {
            warnings.push(format!(
                "{} candidate{} recovery lock{} rch refuses (a run defers {} and exits 74): {}",
                refused.len(),
                if refused.len() == 1 { "'s" } else { "s'" },
                if refused.len() == 1 {
                    " is one"
                } else {
                    "s are ones"
                },
                if refused.len() == 1 { "it" } else { "them" },
                refused
                    .iter()
                    .map(|refusal| refusal.error())
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
            fixes.push(
                refused
                    .iter()
                    .map(recovery_lock::LockRefusal::fix)
                    .collect::<Vec<_>>()
                    .join("; "),
            );
        }
    }
    ok_or_warn(check, counts, &warnings, &fixes)
}

/// The recovery locks of `scan`'s candidates that rch refuses (not a
/// regular file, another user's, more than one link, open to group or
/// others), each with why, in `lease_dir`.
fn refused_locks(
    dir: &crate::lease_dir::LeaseDir,
    lease_dir: &Path,
    scan: &Scan,
) -> Vec<recovery_lock::LockRefusal> {
    use std::os::fd::AsFd;
    scan.candidates
        .iter()
        .filter_map(|candidate| {
            recovery_lock::refusal_at(dir.as_fd(), lease_dir, &candidate.wrapper_id)
        })
        .collect()
}

/// What a dry run would count: journals, candidates by their slot in the
/// plan, and the skipped ones by reason.
fn journal_counts(scan: &Scan, slots: &[Slot]) -> String {
    let count = |slot: Slot| slots.iter().filter(|s| **s == slot).count();
    let skipped: Vec<String> = SkipReason::ALL
        .iter()
        .filter(|reason| scan.skipped[reason.index()] > 0)
        .map(|reason| format!("{} {}", scan.skipped[reason.index()], reason.as_str()))
        .collect();
    let mut counts = format!(
        "{} journal{}: {} candidate{} ({} would recover now, {} backing off, {} deferred)",
        scan.scanned,
        if scan.scanned == 1 { "" } else { "s" },
        scan.candidates.len(),
        if scan.candidates.len() == 1 { "" } else { "s" },
        count(Slot::WouldRecover),
        count(Slot::BackingOff),
        count(Slot::Deferred),
    );
    let total: usize = scan.skipped.iter().sum();
    if total > 0 {
        let _ = write!(counts, ", {total} skipped ({})", skipped.join(", "));
    }
    counts
}

/// What in a scan asks for a look, and what to do about it: journals
/// never recovered as they stand, and heartbeats from a clock ahead.
fn journal_concerns(scan: &Scan) -> (Vec<String>, Vec<String>) {
    let odd: Vec<String> = [
        SkipReason::Malformed,
        SkipReason::Unreadable,
        SkipReason::OwnerUnverified,
    ]
    .iter()
    .filter(|reason| scan.skipped[reason.index()] > 0)
    .map(|reason| format!("{} {}", scan.skipped[reason.index()], reason.as_str()))
    .collect();
    let mut warnings = Vec::new();
    let mut fixes = Vec::new();
    if !odd.is_empty() {
        warnings.push(format!("never recovered as they stand: {}", odd.join(", ")));
        fixes.push(
            "see why: rch-sweep --dry-run -v lists them, rch-sweep explain WRAPPER_ID shows the evidence"
                .to_owned(),
        );
    }
    if scan.heartbeats_ahead > 0 {
        warnings.push(format!(
            "{} heartbeat{} more than {} s in the future: this machine's clock is behind, and such leases look fresh",
            scan.heartbeats_ahead,
            if scan.heartbeats_ahead == 1 { " lies" } else { "s lie" },
            scan::CLOCK_AHEAD_MS / 1000
        ));
        fixes.push(
            "check time sync (timedatectl status, chronyc tracking); such a lease waits until its heartbeat's time has passed, or recover it by hand: rch jobs recover <id>"
                .to_owned(),
        );
    }
    (warnings, fixes)
}

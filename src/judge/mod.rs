//! The verdict and its evidence: one journal becomes a recovery candidate
//! or a skip reason, and a journal read back after a recovery is judged
//! complete or not; with it, what `/proc` and the host show that the
//! verdict rests on.
//!
//! - this file: the candidate rules ([`judge()`]): one journal, a
//!   candidate or exactly one skip reason, with each check's evidence;
//! - [`completion`]: the read-back of a finished recovery
//!   ([`verify_completion`], re-exported here), by the release of rch that
//!   ran it;
//! - [`verdict`], [`observation`], [`evidence`]: plain data (a verdict, what
//!   `/proc` showed of an owner, the facts each check rested on), and
//!   [`evidence_text`], that evidence in words;
//! - [`owner`]: the owner's presence from `/proc`, by rch-common's rules;
//! - [`proc_locks`] and [`mounts`]: who holds a `flock`, from `/proc/locks`,
//!   by the device `/proc/self/mountinfo` names;
//! - [`host`]: what the machine offers a sweep (its PID namespace, room
//!   where the state is saved).
//!
//! May use: [`crate::lease`], the files at the top of `src/` and
//! [`crate::sys`]. Used by `lease_dir`, `state`, `rch`, `sweep` and `cmd`;
//! it uses none of them.
//!
//! The candidate rules here and the completion check are pure functions of
//! the journal, the time and the owner's presence (asked for lazily, only
//! once the cheap checks passed), so the rules of SPEC.md are tested without
//! a filesystem.

pub mod completion;
pub mod evidence;
pub mod evidence_text;
pub mod host;
pub mod mounts;
pub mod observation;
pub mod owner;
pub mod proc_locks;
pub mod verdict;

pub use crate::judge::completion::{
    Completion, IDENTITY_CHANGED, NOT_ACKNOWLEDGED, verify_completion,
};
use crate::judge::evidence::{Check, Evidence, Judgement, Recipe};
use crate::judge::observation::{Observation, Presence, Recorded};
pub use crate::judge::verdict::{Candidate, SkipReason};
use crate::lease::{DurableJobLease, Kept, LeaseState};
use SkipReason::{
    HeartbeatFresh, Malformed, NoPid, NotAdmitted, NotOwning, OwnerAlive, OwnerUnverified, Terminal,
};

/// The recipe still names worker-side source that is not retired: the lease
/// is the only authority able to release that claim.
pub fn owns_unretired_source(lease: &DurableJobLease) -> bool {
    owned_source(lease).is_some()
}

/// What an unretired recipe owns: the number of source roots, a pair, a
/// retire root (at least one of them); None when it owns nothing.
fn owned_source(lease: &DurableJobLease) -> Option<(usize, bool, bool)> {
    let recipe = lease.recovery.as_ref().filter(|recipe| recipe.object)?;
    let roots = recipe.source_roots.array_len().unwrap_or(0);
    let pair = recipe.pair.is_set();
    let retire_root = recipe.retire_root.is_set();
    let owns = roots > 0 || pair || retire_root;
    (owns && recipe.retired.as_bool() != Some(true)).then_some((roots, pair, retire_root))
}

/// A delivered and retired result bound to this very lease, waiting only for
/// the daemon's acknowledgement. Returns the delivery's `returned` code.
pub fn settled_handoff(lease: &DurableJobLease) -> Option<i32> {
    handoff(lease).ok()
}

/// [`settled_handoff`], or the first of its conditions the journal misses
/// (for people: which one decides nothing).
fn handoff(lease: &DurableJobLease) -> Result<i32, &'static str> {
    let recipe = lease.recovery.as_ref().ok_or("no recovery recipe")?;
    let build_id = lease
        .identity
        .remote_build_id
        .filter(|id| *id > 0)
        .ok_or("no remote_build_id")?;
    let worker = lease
        .worker_id
        .as_deref()
        .filter(|id| !id.is_empty())
        .ok_or("no worker_id")?;
    let roots = recipe
        .source_roots
        .array_len()
        .ok_or("recovery.source_roots is not an array")?;
    let flag = |slot: &Kept| slot.as_bool() == Some(true);
    if recipe.version.as_u64() != Some(2) {
        return Err("recovery.version is not 2");
    }
    if recipe.wrapper_id.as_str() != Some(lease.identity.local_wrapper_id.as_str()) {
        return Err("recovery.wrapper_id is not this lease's");
    }
    if recipe.build_id.as_u64() != Some(build_id) {
        return Err("recovery.build_id is not the lease's build");
    }
    if recipe.worker_id.as_str() != Some(worker) {
        return Err("recovery.worker.id is not the lease's worker");
    }
    if !flag(&recipe.retired) {
        return Err("recovery.retired is not true");
    }
    if roots > 0 && !flag(&recipe.sources_released) {
        return Err("recovery.sources_released is not true");
    }
    if recipe.pair.is_set() && !flag(&recipe.pair_released) {
        return Err("recovery.pair_released is not true");
    }
    if recipe.retire_root.is_set() && !flag(&recipe.tree_retired) {
        return Err("recovery.tree_retired is not true");
    }
    recipe
        .returned
        .as_i64()
        .and_then(|code| i32::try_from(code).ok())
        .ok_or("recovery.returned is not an i32")
}

/// What rch's `DurableLeaseWriter::load` demands beyond the JSON shape:
/// schema 1, and the id inside equal to the file's name. A journal failing
/// this is one `rch jobs recover` would refuse to load.
pub fn is_loadable(file_id: &str, lease: &DurableJobLease) -> bool {
    lease.schema_version == 1 && lease.identity.local_wrapper_id == file_id
}

fn state_name(state: LeaseState) -> &'static str {
    match state {
        LeaseState::FailedBeforeAdmission => "failed_before_admission",
        LeaseState::Queued => "queued",
        LeaseState::Running => "running",
        LeaseState::Finished => "finished",
        LeaseState::Abandoned => "abandoned",
    }
}

/// Judges one parsed journal found as `<file_id>.json`, from `malformed` on
/// (`checks` holds the file checks it already passed; this appends the
/// rest, ending at the first that fails). `observe` is called only for a
/// stale, unacknowledged, owning, admitted journal with a real PID, so
/// `/proc` is read for the few journals that can become candidates.
///
/// The evidence is plain data and costs next to nothing; it becomes text
/// only when a caller prints it.
pub fn judge(
    file_id: &str,
    lease: DurableJobLease,
    now_unix_ms: u64,
    stale_after_ms: u64,
    observe: impl FnOnce(u32, &Recorded) -> Observation,
    mut checks: Vec<Check>,
) -> Judgement {
    let verdict = decide(
        file_id,
        lease,
        now_unix_ms,
        stale_after_ms,
        observe,
        &mut checks,
    );
    Judgement { verdict, checks }
}

fn decide(
    file_id: &str,
    lease: DurableJobLease,
    now_unix_ms: u64,
    stale_after_ms: u64,
    observe: impl FnOnce(u32, &Recorded) -> Observation,
    checks: &mut Vec<Check>,
) -> Result<Candidate, SkipReason> {
    if lease.schema_version != 1 {
        return fail(checks, Malformed, Evidence::Schema(lease.schema_version));
    }
    if !is_loadable(file_id, &lease) {
        return fail(
            checks,
            Malformed,
            Evidence::IdMismatch {
                inside: lease.identity.local_wrapper_id,
                file: file_id.to_owned(),
            },
        );
    }
    checks.push(Check::pass(Malformed, Evidence::Loadable));

    let terminal = Evidence::Terminal {
        acknowledged: lease.terminal_acknowledged,
        state: state_name(lease.state),
    };
    if lease.terminal_acknowledged {
        return fail(checks, Terminal, terminal);
    }
    checks.push(Check::pass(Terminal, terminal));

    // The handoff is looked at only when no unretired source is owned, as
    // the verdict needs; most journals own source.
    let owning = match owned_source(&lease) {
        Some((roots, pair, retire_root)) => Evidence::Owns {
            roots,
            pair,
            retire_root,
        },
        None => match handoff(&lease) {
            Ok(returned) => Evidence::Handoff { returned },
            Err(gap) => {
                let recipe = match &lease.recovery {
                    None => Recipe::Missing,
                    Some(recipe) if !recipe.object => Recipe::NotObject,
                    Some(recipe) if recipe.retired.as_bool() == Some(true) => Recipe::Retired,
                    Some(_) => Recipe::OwnsNothing,
                };
                return fail(checks, NotOwning, Evidence::NotOwning { recipe, gap });
            }
        },
    };
    checks.push(Check::pass(NotOwning, owning));

    let build_id = lease.identity.remote_build_id.filter(|id| *id > 0);
    let worker_id = lease.worker_id.as_ref().filter(|id| !id.is_empty());
    let admission = || Evidence::Admission {
        build_id: lease.identity.remote_build_id,
        worker_id: lease.worker_id.clone(),
    };
    let (Some(build_id), Some(_)) = (build_id, worker_id) else {
        return fail(checks, NotAdmitted, admission());
    };
    checks.push(Check::pass(NotAdmitted, admission()));

    let heartbeat = Evidence::Heartbeat {
        heartbeat_unix_ms: lease.heartbeat_unix_ms,
        now_unix_ms,
        stale_after_ms,
    };
    // A heartbeat from the future (a clock that jumped) counts as fresh.
    if now_unix_ms.saturating_sub(lease.heartbeat_unix_ms) < stale_after_ms {
        return fail(checks, HeartbeatFresh, heartbeat);
    }
    checks.push(Check::pass(HeartbeatFresh, heartbeat));

    if lease.wrapper_pid <= 1 {
        return fail(checks, NoPid, Evidence::Pid(lease.wrapper_pid));
    }
    checks.push(Check::pass(NoPid, Evidence::Pid(lease.wrapper_pid)));

    let observation = Box::new(observe(lease.wrapper_pid, &Recorded::of(&lease)));
    match observation.presence() {
        Presence::Alive => fail(checks, OwnerAlive, Evidence::Process(observation)),
        Presence::Unverified => {
            checks.push(Check::pass(
                OwnerAlive,
                Evidence::Process(observation.clone()),
            ));
            fail(checks, OwnerUnverified, Evidence::Judgeable(observation))
        }
        Presence::Gone => {
            checks.push(Check::pass(
                OwnerAlive,
                Evidence::Process(observation.clone()),
            ));
            checks.push(Check::pass(
                OwnerUnverified,
                Evidence::Judgeable(observation),
            ));
            Ok(Candidate {
                worker_id: lease.worker_id.unwrap_or_default(),
                wrapper_id: lease.identity.local_wrapper_id,
                build_id,
                heartbeat_unix_ms: lease.heartbeat_unix_ms,
            })
        }
    }
}

/// Records the failing check; the verdict is its reason.
fn fail(
    checks: &mut Vec<Check>,
    check: SkipReason,
    evidence: Evidence,
) -> Result<Candidate, SkipReason> {
    checks.push(Check::fail(check, evidence));
    Err(check)
}

/// Journals in rch's shape, for the unit tests of this folder (the
/// candidate rules' and the completion check's).
#[cfg(test)]
mod samples {
    use crate::lease::DurableJobLease;
    use serde_json::{Value, json};

    pub(super) const ID: &str = "rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10";

    pub(super) fn lease(heartbeat: u64, pid: u32, recipe: Value) -> DurableJobLease {
        serde_json::from_value(json!({
            "schema_version": 1,
            "identity": {"local_wrapper_id": ID, "remote_build_id": 7},
            "wrapper_pid": pid,
            "process_start_ticks": 123,
            "boot_id": "3f1c2a9e-5b7d-4e2a-9c1f-0a1b2c3d4e5f",
            "state": "running", "phase": "execute", "worker_id": "worker1",
            "heartbeat_unix_ms": heartbeat, "strict_remote": false,
            "self_healing_enabled": true, "command_fingerprint": "blake3:test",
            "terminal_acknowledged": false, "recovery": recipe
        }))
        .expect("valid lease")
    }

    /// A settled handoff's recipe, delivered with `returned`.
    pub(super) fn handoff_recipe(returned: i32) -> Value {
        json!({"version": 2, "wrapper_id": ID, "build_id": 7, "worker": {"id": "worker1"},
               "returned": returned, "retired": true, "sources_released": true,
               "source_roots": ["/p"]})
    }

    pub(super) fn handoff(heartbeat: u64, pid: u32, returned: i32) -> DurableJobLease {
        lease(heartbeat, pid, handoff_recipe(returned))
    }

    /// `lease` with the recipe `recipe`, read as a journal's would be.
    pub(super) fn with_recipe(lease: &DurableJobLease, recipe: Value) -> DurableJobLease {
        let mut changed = lease.clone();
        changed.recovery = Some(serde_json::from_value(recipe).expect("any JSON is a recipe"));
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::samples::{ID, handoff, handoff_recipe, lease, with_recipe};
    use super::*;
    use crate::judge::owner::{Kill, Namespace, StatSeen};
    use crate::stat::FileKind;
    use serde_json::{Value, json};

    const NOW: u64 = 100 * 60 * 60 * 1000;
    const STALE_AFTER: u64 = 15 * 60 * 1000;
    const STALE: u64 = NOW - 60 * 60 * 1000;

    fn owning_recipe() -> Value {
        json!({"version": 2, "wrapper_id": ID, "build_id": 7, "worker": {"id": "worker1"},
               "source_roots": ["/p"], "pair": null, "retire_root": null, "retired": false,
               "returned": null, "sources_released": false})
    }

    const BOOT: &str = "3f1c2a9e-5b7d-4e2a-9c1f-0a1b2c3d4e5f";

    /// Facts from /proc that make `presence` what a test needs.
    fn observed(pid: u32, recorded: &Recorded, presence: Presence) -> Observation {
        let mut observation = Observation {
            pid,
            recorded: recorded.clone(),
            namespace: Some(Namespace::Own),
            boot_id: Some(BOOT.into()),
            stat: StatSeen::Absent(Kill::NoSuchProcess),
            shortage: None,
        };
        match presence {
            Presence::Gone => {}
            Presence::Alive => {
                let start_ticks = match recorded {
                    Recorded::Linux { ticks, .. } => *ticks,
                    _ => 1,
                };
                observation.stat = StatSeen::Seen {
                    pid,
                    state: b'S',
                    threads: 1,
                    start_ticks,
                };
            }
            Presence::Unverified => observation.boot_id = None,
        }
        assert_eq!(observation.presence(), presence);
        observation
    }

    fn judged(lease: DurableJobLease, presence: Presence) -> Judgement {
        judge(
            ID,
            lease,
            NOW,
            STALE_AFTER,
            |pid, recorded| observed(pid, recorded, presence),
            Vec::new(),
        )
    }

    fn verdict(lease: DurableJobLease, presence: Presence) -> Result<Candidate, SkipReason> {
        judged(lease, presence).verdict
    }

    #[test]
    fn a_host_shortage_observing_a_dead_owner_is_unverified_and_told() {
        let judgement = judge(
            ID,
            lease(STALE, 11, owning_recipe()),
            NOW,
            STALE_AFTER,
            |pid, recorded| Observation {
                shortage: Some("cannot read /proc/self/stat: EMFILE".into()),
                ..observed(pid, recorded, Presence::Gone)
            },
            Vec::new(),
        );
        assert_eq!(judgement.verdict, Err(SkipReason::OwnerUnverified));
        assert_eq!(
            judgement.shortage(),
            Some("cannot read /proc/self/stat: EMFILE")
        );
        let judged = judged(lease(STALE, 11, owning_recipe()), Presence::Unverified);
        assert_eq!(
            judged.shortage(),
            None,
            "unverified for a fact, no shortage"
        );
    }

    #[test]
    fn a_dead_stale_owner_of_unretired_source_is_a_candidate() {
        let candidate =
            verdict(lease(STALE, 11, owning_recipe()), Presence::Gone).expect("candidate");
        assert_eq!(
            candidate,
            Candidate {
                wrapper_id: ID.into(),
                worker_id: "worker1".into(),
                build_id: 7,
                heartbeat_unix_ms: STALE,
            }
        );
        assert!(verdict(handoff(STALE, 11, 102), Presence::Gone).is_ok());
    }

    #[test]
    fn each_skip_reason_is_reported_in_spec_order() {
        let mut schema = lease(STALE, 11, owning_recipe());
        schema.schema_version = 2;
        assert_eq!(verdict(schema, Presence::Gone), Err(SkipReason::Malformed));

        let renamed = lease(STALE, 11, owning_recipe());
        assert_eq!(
            judge(
                "rchw-00000000-0000-4000-8000-000000000000",
                renamed,
                NOW,
                STALE_AFTER,
                |pid, recorded| observed(pid, recorded, Presence::Gone),
                Vec::new(),
            )
            .verdict,
            Err(SkipReason::Malformed)
        );

        // Terminal wins over everything below it, even a fresh heartbeat.
        let mut acked = lease(NOW, 0, owning_recipe());
        acked.terminal_acknowledged = true;
        assert_eq!(verdict(acked, Presence::Gone), Err(SkipReason::Terminal));

        let retired = lease(STALE, 11, json!({"source_roots": ["/p"], "retired": true}));
        assert_eq!(verdict(retired, Presence::Gone), Err(SkipReason::NotOwning));
        let mut no_recipe = lease(STALE, 11, Value::Null);
        no_recipe.recovery = None;
        assert_eq!(
            verdict(no_recipe, Presence::Gone),
            Err(SkipReason::NotOwning)
        );

        let mut unadmitted = lease(STALE, 11, owning_recipe());
        unadmitted.identity.remote_build_id = None;
        assert_eq!(
            verdict(unadmitted, Presence::Gone),
            Err(SkipReason::NotAdmitted)
        );
        let mut zero_build = lease(STALE, 11, owning_recipe());
        zero_build.identity.remote_build_id = Some(0);
        assert_eq!(
            verdict(zero_build, Presence::Gone),
            Err(SkipReason::NotAdmitted)
        );
        let mut no_worker = lease(STALE, 11, owning_recipe());
        no_worker.worker_id = Some(String::new());
        assert_eq!(
            verdict(no_worker, Presence::Gone),
            Err(SkipReason::NotAdmitted)
        );

        assert_eq!(
            verdict(lease(NOW - 1000, 11, owning_recipe()), Presence::Gone),
            Err(SkipReason::HeartbeatFresh)
        );
        assert_eq!(
            verdict(lease(NOW + 60_000, 11, owning_recipe()), Presence::Gone),
            Err(SkipReason::HeartbeatFresh),
            "a heartbeat from the future is fresh"
        );
        for pid in [0, 1] {
            assert_eq!(
                verdict(lease(STALE, pid, owning_recipe()), Presence::Gone),
                Err(SkipReason::NoPid)
            );
        }
        assert_eq!(
            verdict(lease(STALE, 11, owning_recipe()), Presence::Alive),
            Err(SkipReason::OwnerAlive)
        );
        assert_eq!(
            verdict(lease(STALE, 11, owning_recipe()), Presence::Unverified),
            Err(SkipReason::OwnerUnverified)
        );
    }

    #[test]
    fn presence_is_asked_only_for_journals_that_passed_the_cheap_checks() {
        let mut asked = false;
        let fresh = lease(NOW, 11, owning_recipe());
        let _ = judge(
            ID,
            fresh,
            NOW,
            STALE_AFTER,
            |pid, recorded| {
                asked = true;
                observed(pid, recorded, Presence::Gone)
            },
            Vec::new(),
        );
        assert!(!asked);
        let stale = lease(STALE, 11, owning_recipe());
        let _ = judge(
            ID,
            stale,
            NOW,
            STALE_AFTER,
            |pid, recorded| {
                asked = true;
                assert_eq!(pid, 11);
                assert!(matches!(recorded, Recorded::Linux { ticks: 123, .. }));
                observed(pid, recorded, Presence::Gone)
            },
            Vec::new(),
        );
        assert!(asked);
    }

    /// The names of the checks a judgement went through, with their result.
    fn trail(judgement: &Judgement) -> Vec<(&'static str, bool)> {
        judgement
            .checks
            .iter()
            .map(|check| (check.check.as_str(), check.passed))
            .collect()
    }

    #[test]
    fn checks_run_in_table_order_and_stop_at_the_deciding_one() {
        let lease_checks = &SkipReason::ALL[SkipReason::Malformed.index()..];
        let candidate = judged(lease(STALE, 11, owning_recipe()), Presence::Gone);
        assert!(candidate.verdict.is_ok());
        assert_eq!(
            trail(&candidate),
            lease_checks
                .iter()
                .map(|reason| (reason.as_str(), true))
                .collect::<Vec<_>>()
        );
        assert!(candidate.deciding().is_none());
        for (lease, presence, reason) in [
            (
                lease(NOW, 11, owning_recipe()),
                Presence::Gone,
                HeartbeatFresh,
            ),
            (lease(STALE, 1, owning_recipe()), Presence::Gone, NoPid),
            (
                lease(STALE, 11, owning_recipe()),
                Presence::Alive,
                OwnerAlive,
            ),
            (
                lease(STALE, 11, owning_recipe()),
                Presence::Unverified,
                OwnerUnverified,
            ),
        ] {
            let judgement = judged(lease, presence);
            assert_eq!(judgement.verdict, Err(reason));
            let expected: Vec<(&str, bool)> = lease_checks
                .iter()
                .take_while(|check| **check <= reason)
                .map(|check| (check.as_str(), *check != reason))
                .collect();
            assert_eq!(trail(&judgement), expected, "{reason:?}");
            assert_eq!(judgement.deciding().map(|check| check.check), Some(reason));
        }
    }

    #[test]
    fn every_check_says_what_it_saw() {
        let candidate = judged(lease(STALE, 4242, owning_recipe()), Presence::Gone);
        let texts: Vec<String> = candidate
            .checks
            .iter()
            .map(|check| check.evidence.to_string())
            .collect();
        assert!(texts.iter().all(|text| !text.is_empty()), "{texts:?}");
        assert_eq!(
            texts[2],
            "the recipe owns unretired source on the worker (1 source root; retired is not true)"
        );
        assert_eq!(texts[3], "build 7 on worker worker1");
        assert_eq!(texts[4], "heartbeat 1h 0m old, stale after 15m 0s");
        assert_eq!(texts[5], "wrapper_pid 4242");
        assert_eq!(
            texts[6],
            "pid 4242 absent from /proc, and kill(4242, 0) says no such process (ESRCH): owner gone"
        );

        let fresh = judged(lease(NOW - 192_000, 11, owning_recipe()), Presence::Gone);
        let deciding = fresh.deciding().expect("skipped").evidence.to_string();
        assert_eq!(deciding, "heartbeat 3m 12s old, stale after 15m 0s");

        let alive = judged(lease(STALE, 4242, owning_recipe()), Presence::Alive);
        let deciding = alive.deciding().expect("skipped").evidence.to_string();
        assert_eq!(
            deciding,
            "pid 4242: /proc/4242/stat state S, start ticks 123 = recorded; boot id 3f1c2a9e\u{2026} = this machine's"
        );

        let settled = judged(handoff(STALE, 11, 102), Presence::Gone);
        assert!(
            settled.checks[2]
                .evidence
                .to_string()
                .contains("returned 102")
        );

        let retired = judged(
            lease(STALE, 11, json!({"source_roots": ["/p"], "retired": true})),
            Presence::Gone,
        );
        assert_eq!(
            retired.deciding().expect("skipped").evidence.to_string(),
            "the recipe is retired, and is no settled handoff: recovery.version is not 2"
        );

        let mut unadmitted = lease(STALE, 11, owning_recipe());
        unadmitted.worker_id = None;
        let unadmitted = judged(unadmitted, Presence::Gone);
        assert_eq!(
            unadmitted.deciding().expect("skipped").evidence.to_string(),
            "build 7, no worker_id: never admitted to a worker"
        );

        let mut schema = lease(STALE, 11, owning_recipe());
        schema.schema_version = 2;
        assert_eq!(
            judged(schema, Presence::Gone).checks[0]
                .evidence
                .to_string(),
            "schema_version 2, not 1"
        );
    }

    #[test]
    fn the_checks_already_passed_are_kept_in_front() {
        let file_check = Check::pass(SkipReason::NotRegular, Evidence::Listed(FileKind::Regular));
        let judgement = judge(
            ID,
            lease(NOW, 11, owning_recipe()),
            NOW,
            STALE_AFTER,
            |pid, recorded| observed(pid, recorded, Presence::Gone),
            vec![file_check],
        );
        assert_eq!(trail(&judgement)[0], ("not_regular", true));
        assert_eq!(trail(&judgement)[1], ("malformed", true));
    }

    #[test]
    fn ownership_needs_roots_a_pair_or_a_retire_root_and_no_retirement() {
        for (recipe, owns) in [
            (json!({"source_roots": ["/p"]}), true),
            (json!({"source_roots": [], "pair": ["/a", "t"]}), true),
            (json!({"source_roots": [], "retire_root": "/t"}), true),
            (json!({"source_roots": ["/p"], "retired": false}), true),
            (json!({"source_roots": ["/p"], "retired": "true"}), true),
            (json!({"source_roots": ["/p"], "retired": true}), false),
            (
                json!({"source_roots": [], "pair": null, "retire_root": null}),
                false,
            ),
            (json!({"source_roots": "/p"}), false),
            (json!({}), false),
            (json!([1, 2]), false),
            (json!("recipe"), false),
        ] {
            let lease = lease(STALE, 11, recipe.clone());
            assert_eq!(owns_unretired_source(&lease), owns, "{recipe}");
        }
    }

    #[test]
    fn incomplete_or_foreign_retired_recipes_do_not_authorize_a_handoff() {
        let original = handoff(0, 11, 102);
        assert_eq!(settled_handoff(&original), Some(102));
        for (key, value) in [
            ("version", json!(3)),
            ("version", json!(2.0)),
            ("wrapper_id", json!("another-wrapper")),
            ("build_id", json!(8)),
            ("worker", json!({"id": "another-worker"})),
            ("worker", json!(["worker1"])),
            ("retired", json!(false)),
            ("sources_released", json!(false)),
            ("pair", json!(["/pair", "token"])),
            ("retire_root", json!("/unretired-tree")),
            ("returned", Value::Null),
            ("returned", json!(i64::MAX)),
            ("returned", json!(u64::MAX)),
            ("returned", json!("0")),
            ("returned", json!(0.0)),
            ("source_roots", Value::Null),
        ] {
            let mut recipe = handoff_recipe(102);
            recipe[key] = value;
            assert!(
                settled_handoff(&with_recipe(&original, recipe)).is_none(),
                "{key}"
            );
        }
        let mut released_pair = handoff_recipe(102);
        released_pair["pair"] = json!(["/pair", "token"]);
        released_pair["pair_released"] = json!(true);
        released_pair["retire_root"] = json!("/tree");
        released_pair["tree_retired"] = json!(true);
        assert_eq!(
            settled_handoff(&with_recipe(&original, released_pair)),
            Some(102)
        );
        let mut no_roots = handoff_recipe(-3);
        no_roots["source_roots"] = json!([]);
        no_roots["sources_released"] = json!(false);
        assert_eq!(settled_handoff(&with_recipe(&original, no_roots)), Some(-3));
        let mut unadmitted = original.clone();
        unadmitted.identity.remote_build_id = None;
        assert!(settled_handoff(&unadmitted).is_none());
        let mut no_worker = original;
        no_worker.worker_id = None;
        assert!(settled_handoff(&no_worker).is_none());
    }
}

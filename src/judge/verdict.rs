//! A journal's verdict, as plain data: a candidate for recovery, or the one
//! reason it is skipped. Everything above reads these; they read nothing.

/// Why a journal is not a candidate, in the order SPEC.md checks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipReason {
    NotRegular,
    BadName,
    ForeignOwner,
    Unreadable,
    Malformed,
    Terminal,
    NotOwning,
    NotAdmitted,
    HeartbeatFresh,
    NoPid,
    OwnerAlive,
    OwnerUnverified,
}

impl SkipReason {
    pub const ALL: [SkipReason; 12] = [
        SkipReason::NotRegular,
        SkipReason::BadName,
        SkipReason::ForeignOwner,
        SkipReason::Unreadable,
        SkipReason::Malformed,
        SkipReason::Terminal,
        SkipReason::NotOwning,
        SkipReason::NotAdmitted,
        SkipReason::HeartbeatFresh,
        SkipReason::NoPid,
        SkipReason::OwnerAlive,
        SkipReason::OwnerUnverified,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::NotRegular => "not_regular",
            SkipReason::BadName => "bad_name",
            SkipReason::ForeignOwner => "foreign_owner",
            SkipReason::Unreadable => "unreadable",
            SkipReason::Malformed => "malformed",
            SkipReason::Terminal => "terminal",
            SkipReason::NotOwning => "not_owning",
            SkipReason::NotAdmitted => "not_admitted",
            SkipReason::HeartbeatFresh => "heartbeat_fresh",
            SkipReason::NoPid => "no_pid",
            SkipReason::OwnerAlive => "owner_alive",
            SkipReason::OwnerUnverified => "owner_unverified",
        }
    }

    /// Position in [`SkipReason::ALL`], for counting in an array.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The small record kept per candidate; the journal itself is dropped and
/// read again just before its recovery starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub wrapper_id: String,
    pub worker_id: String,
    pub build_id: u64,
    pub heartbeat_unix_ms: u64,
}

/// A journal that is not a candidate.
#[derive(Clone, Debug)]
pub struct Skipped {
    /// The entry name (lossily decoded).
    pub file: String,
    /// The wrapper id, when the name is canonical.
    pub wrapper_id: Option<String>,
    pub reason: SkipReason,
    /// The evidence of the check that decided it, for people (kept only
    /// with `keep_skipped`: `--verbose`).
    pub detail: Option<String>,
}

//! What `/proc` showed of a journal's owner, as plain data, and what rch's
//! `owner_presence` makes of it. [`crate::judge::owner`] reads the facts;
//! `explain` and `--verbose` show them ([`crate::judge::evidence_text`]); both read
//! this one record, so the words cannot drift from the rule.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    /// The owner runs: same PID, same boot, same start time.
    Alive,
    /// No such process, a zombie, or the PID now belongs to another process.
    Gone,
    /// Cannot be judged from here: among others, a PID that exists when the
    /// journal recorded no identity to tell its owner from a later process
    /// that reused the PID (rch's `owner_presence` says `Unknown`).
    Unverified,
}

/// The owner identity a journal recorded, as rch's `owner_identity()` reads
/// it: `process_birth` when present (an invalid one never falls back to the
/// legacy fields), else `boot_id` with `process_start_ticks`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    None,
    Linux {
        boot_id: String,
        ticks: u64,
    },
    /// Present but unusable here, and why.
    Invalid(Invalid),
}

/// Why a recorded identity cannot be compared with what `/proc` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalid {
    /// A boot id that is not a canonical lowercase UUID.
    BootId,
    /// A `process_birth` of another platform (darwin): never observable here.
    NotLinux,
    /// Only one of the legacy `boot_id` / `process_start_ticks`.
    HalfLegacy,
}

/// Whether `/proc` is this process's own view, as rch-common 2.1.34 proves
/// it: `/proc/self/stat` shows our own PID, and `/proc/self/status` has
/// exactly one `NSpid` entry, equal to it (a `/proc` mounted by a parent
/// PID namespace can show the same number for another process).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Namespace {
    /// Both show our own PID, at one level.
    Own,
    /// `/proc/self/stat` shows `seen` (None: unreadable), not our `own` PID.
    Foreign { seen: Option<u32>, own: u32 },
    /// `/proc/self/stat` shows our PID, but `NSpid` does not prove it.
    NsPid { seen: NsPidSeen, own: u32 },
}

/// What `/proc/self/status` showed instead of one `NSpid` entry equal to
/// our PID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NsPidSeen {
    /// The file could not be read: the error.
    Unreadable(String),
    /// No `NSpid` line (a kernel before 4.1).
    Missing,
    /// More than one `NSpid` line.
    Repeated,
    /// The one line's entries, as written: several (a nested PID
    /// namespace), none, another number, or not a decimal number.
    Entries(String),
}

/// What `kill(pid, 0)` said of a PID whose `/proc/<pid>/stat` is missing:
/// only the kernel's "no such process" proves the owner gone, since a
/// `/proc` mounted with `hidepid` hides other users' live processes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kill {
    /// `ESRCH`: no such process.
    NoSuchProcess,
    /// It succeeded: the process exists.
    Exists,
    /// Another error (`EPERM`: it exists, and is another user's).
    Failed(String),
}

/// What `/proc/<pid>/stat` showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatSeen {
    /// Not read: an earlier fact already left presence unverified.
    NotRead,
    /// No such file, and what `kill(pid, 0)` said then.
    Absent(Kill),
    /// Another error reading it.
    Unreadable(String),
    /// Read, but not in the `pid (comm) state ...` shape.
    Garbled,
    Seen {
        /// The pid field of the file.
        pid: u32,
        /// The state letter (`S`, `R`, `Z`, ...).
        state: u8,
        /// Field 20, `num_threads` (at least 1): a zombie leader whose
        /// other threads still run is not gone.
        threads: u32,
        /// Field 22, the start time in clock ticks after boot.
        start_ticks: u64,
    },
}

/// Every fact the owner check rests on, in the order rch reads them. Plain
/// data: [`Observation::presence`] decides from it, and the same facts are
/// the evidence `explain` shows, so the two cannot disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    pub pid: u32,
    pub recorded: Recorded,
    /// None when the PID is beyond `i32`: nothing was read.
    pub namespace: Option<Namespace>,
    /// This machine's boot id, canonical; None when unreadable or not read.
    pub boot_id: Option<String>,
    pub stat: StatSeen,
    /// A host shortage ([`crate::shortage`]) that stopped a fact from being
    /// read (presence is then unverified): no fact about the owner.
    pub shortage: Option<String>,
}

/// What `presence` makes of a stat line's state and start.
pub enum Process {
    Zombie,
    Running(u64),
    OddState,
}

pub fn process(state: u8, start_ticks: u64) -> Process {
    match state {
        b'Z' | b'X' | b'x' => Process::Zombie,
        b'R' | b'S' | b'D' | b'T' | b't' | b'K' | b'W' | b'P' | b'I' => {
            Process::Running(start_ticks)
        }
        _ => Process::OddState,
    }
}

impl Observation {
    /// The owner's presence, judged from the facts alone (rch-common
    /// 2.1.34's `owner_presence`): a missing PID proves the owner gone
    /// whatever was recorded, but only once our own `/proc` (`NSpid`
    /// included) and the boot id were read, and only when `kill(pid, 0)`
    /// says no such process; a zombie or dead leader is gone only when it
    /// was the process's one thread.
    pub fn presence(&self) -> Presence {
        if self.shortage.is_some() || self.namespace != Some(Namespace::Own) {
            return Presence::Unverified;
        }
        let Some(current_boot) = self.boot_id.as_deref() else {
            return Presence::Unverified;
        };
        let ticks = match &self.stat {
            StatSeen::Absent(Kill::NoSuchProcess) => return Presence::Gone,
            StatSeen::Absent(Kill::Exists | Kill::Failed(_)) => return Presence::Unverified,
            StatSeen::Seen { pid, .. } if *pid != self.pid => return Presence::Unverified,
            StatSeen::Seen {
                state,
                start_ticks,
                threads,
                ..
            } => match process(*state, *start_ticks) {
                Process::Zombie if *threads == 1 => return Presence::Gone,
                Process::Zombie => return Presence::Unverified,
                Process::Running(ticks) => ticks,
                Process::OddState => return Presence::Unverified,
            },
            StatSeen::NotRead | StatSeen::Unreadable(_) | StatSeen::Garbled => {
                return Presence::Unverified;
            }
        };
        match &self.recorded {
            // Nothing to tell the owner from a process that reused its PID.
            Recorded::None | Recorded::Invalid(_) => Presence::Unverified,
            Recorded::Linux {
                boot_id,
                ticks: recorded_ticks,
            } if boot_id == current_boot && ticks == *recorded_ticks => Presence::Alive,
            // Another boot, or the PID was reused by a later process.
            Recorded::Linux { .. } => Presence::Gone,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shortage_leaves_presence_unverified_whatever_else_was_read() {
        let mut observation = Observation {
            pid: 42,
            recorded: Recorded::None,
            namespace: Some(Namespace::Own),
            boot_id: Some("3f1c2a9e-5b7d-4e2a-9c1f-0a1b2c3d4e5f".into()),
            stat: StatSeen::Absent(Kill::NoSuchProcess),
            shortage: None,
        };
        assert_eq!(observation.presence(), Presence::Gone);
        observation.shortage = Some("cannot read /proc/42/stat: EMFILE".into());
        assert_eq!(observation.presence(), Presence::Unverified);
    }
}

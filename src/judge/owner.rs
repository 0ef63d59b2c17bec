//! Is a journal's owner (the `rch exec` wrapper) still running? Answered from
//! Linux `/proc` with the same evidence `rch jobs recover` demands, so a
//! journal is never handed to it that it would refuse for a live owner.
//!
//! The recorded identity (boot id plus start ticks) tells a live owner from a
//! reused PID. Anything that cannot be judged is [`Presence::Unverified`]:
//! failing closed keeps a recovery from racing a wrapper that is still alive.
//! The rules are rch-common 2.1.34's, the strictest of the releases users
//! run (rch refuses a recovery its own check cannot prove, so a sweep that
//! proved less would hand over leases rch refuses): our own `/proc` needs
//! `/proc/self/stat` and exactly one `NSpid` entry showing our PID; a
//! missing `/proc/<pid>/stat` proves nothing until `kill(pid, 0)` says
//! `ESRCH`; a zombie leader is gone only as the process's one thread.
//! The `/proc` root and the `kill` probe are injectable so tests can
//! present a foreign or nested PID namespace, `hidepid`, a zombie or a
//! reused PID.
//!
//! What was read is kept as an [`Observation`] (`observation.rs`), plain
//! facts from which [`Observation::presence`] decides; the same facts are
//! the evidence that `explain` and `--verbose` show, so the words cannot
//! drift from the rule.

pub use crate::judge::observation::{
    Invalid, Kill, Namespace, NsPidSeen, Observation, Presence, Recorded, StatSeen,
};
use crate::lease::{DurableJobLease, ProcessStart, is_canonical_uuid};
use crate::shortage;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

impl Recorded {
    pub fn of(lease: &DurableJobLease) -> Recorded {
        if let Some(birth) = &lease.process_birth {
            return match birth.start {
                ProcessStart::Linux { ticks } if is_canonical_uuid(&birth.boot_id) => {
                    Recorded::Linux {
                        boot_id: birth.boot_id.clone(),
                        ticks,
                    }
                }
                // A non-canonical boot id, or a start this machine cannot
                // observe (darwin): present but unusable, never a fallback.
                ProcessStart::Linux { .. } => Recorded::Invalid(Invalid::BootId),
                ProcessStart::Darwin { .. } => Recorded::Invalid(Invalid::NotLinux),
            };
        }
        match (&lease.boot_id, lease.process_start_ticks) {
            (None, None) => Recorded::None,
            (Some(boot_id), Some(ticks)) if is_canonical_uuid(boot_id) => Recorded::Linux {
                boot_id: boot_id.clone(),
                ticks,
            },
            (Some(_), Some(_)) => Recorded::Invalid(Invalid::BootId),
            _ => Recorded::Invalid(Invalid::HalfLegacy),
        }
    }
}

/// A view of `/proc`. The own-PID check and the boot id are read once, on
/// first use, and shared by every judgement of the run.
pub struct ProcFs {
    root: PathBuf,
    own_pid: u32,
    /// Asks the kernel whether a PID exists (`kill(pid, 0)`), for a PID
    /// whose `/proc/<pid>/stat` is missing.
    kill: fn(u32) -> Kill,
    namespace: OnceLock<Namespace>,
    boot_id: OnceLock<Option<String>>,
}

impl ProcFs {
    /// The system's `/proc`, seen by this process, and its kernel asked.
    pub fn system() -> ProcFs {
        ProcFs::at(Path::new("/proc"), std::process::id())
    }

    /// A `/proc` tree at `root`, as seen by a process with PID `own_pid`;
    /// the kernel is asked about missing PIDs unless [`ProcFs::with_kill`]
    /// says otherwise.
    pub fn at(root: &Path, own_pid: u32) -> ProcFs {
        ProcFs {
            root: root.to_path_buf(),
            own_pid,
            kill: probe,
            namespace: OnceLock::new(),
            boot_id: OnceLock::new(),
        }
    }

    /// The same view with `kill` answering for the kernel: a fake `/proc`
    /// needs a kernel that agrees with it.
    pub fn with_kill(mut self, kill: fn(u32) -> Kill) -> ProcFs {
        self.kill = kill;
        self
    }

    /// Whether process `pid` is the owner the journal recorded: a thin
    /// accessor over [`ProcFs::observe`].
    pub fn presence(&self, pid: u32, recorded: &Recorded) -> Presence {
        self.observe(pid, recorded).presence()
    }

    /// Reads the facts about process `pid` in rch's own order
    /// (`observe_process`): our PID namespace, then this machine's boot id,
    /// then `/proc/<pid>/stat`; a later fact is not read once an earlier one
    /// leaves presence unverified.
    pub fn observe(&self, pid: u32, recorded: &Recorded) -> Observation {
        let mut observation = Observation {
            pid,
            recorded: recorded.clone(),
            namespace: None,
            boot_id: None,
            stat: StatSeen::NotRead,
            shortage: None,
        };
        if pid > i32::MAX as u32 {
            return observation;
        }
        let namespace = match self.namespace() {
            Ok(namespace) => namespace,
            Err(short) => {
                observation.shortage = Some(short);
                return observation;
            }
        };
        let own = namespace == Namespace::Own;
        observation.namespace = Some(namespace);
        if !own {
            return observation;
        }
        match self.boot_id() {
            Ok(boot_id) => observation.boot_id = boot_id.map(str::to_owned),
            Err(short) => {
                observation.shortage = Some(short);
                return observation;
            }
        }
        if observation.boot_id.is_none() {
            return observation;
        }
        let file = self.root.join(pid.to_string()).join("stat");
        observation.stat = match std::fs::read(&file) {
            Ok(stat) => match parse_stat(&stat) {
                Some(Stat {
                    pid,
                    state,
                    threads,
                    start_ticks,
                }) => StatSeen::Seen {
                    pid,
                    state,
                    threads,
                    start_ticks,
                },
                None => StatSeen::Garbled,
            },
            // hidepid hides a live process of another user: only the
            // kernel's ESRCH proves it gone.
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                StatSeen::Absent((self.kill)(pid))
            }
            Err(error) if shortage::of(&error) => {
                observation.shortage = Some(short_text(&file, &error));
                StatSeen::Unreadable(error.to_string())
            }
            Err(error) => StatSeen::Unreadable(error.to_string()),
        };
        observation
    }

    /// `/proc/self/stat` must show our own PID, and `/proc/self/status`
    /// exactly one `NSpid` entry equal to it; otherwise `/proc` belongs to
    /// another PID namespace, or ours is nested in one whose `/proc` this
    /// is, and a missing PID there proves nothing. A host shortage while
    /// reading either is no answer (Err, not kept): the next judgement asks
    /// again.
    fn namespace(&self) -> Result<Namespace, String> {
        if let Some(namespace) = self.namespace.get() {
            return Ok(namespace.clone());
        }
        let file = self.root.join("self/stat");
        let seen = match std::fs::read(&file) {
            Ok(stat) => parse_stat(&stat).map(|stat| stat.pid),
            Err(error) if shortage::of(&error) => return Err(short_text(&file, &error)),
            Err(_) => None,
        };
        let own = self.own_pid;
        let namespace = if seen != Some(own) {
            Namespace::Foreign { seen, own }
        } else {
            match self.nspid() {
                Ok(()) => Namespace::Own,
                Err(Ok(seen)) => Namespace::NsPid { seen, own },
                Err(Err(short)) => return Err(short),
            }
        };
        Ok(self.namespace.get_or_init(|| namespace).clone())
    }

    /// [`single_nspid`] over `/proc/self/status`: Err(Err) for a host
    /// shortage while reading it.
    fn nspid(&self) -> Result<(), Result<NsPidSeen, String>> {
        let file = self.root.join("self/status");
        match std::fs::read(&file) {
            Ok(status) => single_nspid(&String::from_utf8_lossy(&status), self.own_pid).map_err(Ok),
            Err(error) if shortage::of(&error) => Err(Err(short_text(&file, &error))),
            Err(error) => Err(Ok(NsPidSeen::Unreadable(error.to_string()))),
        }
    }

    /// This process's own identity as rch-common 2.1.34 proves it, for
    /// doctor's `host` check: Ok when `/proc/self/status` has one `NSpid`
    /// entry equal to our PID.
    pub fn own_nspid(&self) -> Result<(), NsPidSeen> {
        self.nspid().map_err(|seen| match seen {
            Ok(seen) => seen,
            Err(short) => NsPidSeen::Unreadable(short),
        })
    }

    /// This machine's boot id, canonical (None: unreadable or not a UUID);
    /// a host shortage while reading it is no answer (Err, not kept).
    fn boot_id(&self) -> Result<Option<&str>, String> {
        if let Some(boot_id) = self.boot_id.get() {
            return Ok(boot_id.as_deref());
        }
        let file = self.root.join("sys/kernel/random/boot_id");
        let boot_id = match std::fs::read_to_string(&file) {
            // rch parses it as a UUID; compare in canonical form.
            Ok(text) => uuid::Uuid::try_parse(text.trim())
                .ok()
                .map(|uuid| uuid.hyphenated().to_string()),
            Err(error) if shortage::of(&error) => return Err(short_text(&file, &error)),
            Err(_) => None,
        };
        Ok(self.boot_id.get_or_init(|| boot_id).as_deref())
    }
}

/// Whether `/proc/self/status` proves this process's PID is `own` at one
/// level (rch-common 2.1.34's `linux_namespace_matches`): exactly one
/// `NSpid` line, holding exactly one decimal number, equal to `own`.
pub fn single_nspid(status: &str, own: u32) -> Result<(), NsPidSeen> {
    let mut lines = status
        .lines()
        .filter_map(|line| line.strip_prefix("NSpid:"));
    let line = lines.next().ok_or(NsPidSeen::Missing)?;
    if lines.next().is_some() {
        return Err(NsPidSeen::Repeated);
    }
    let mut entries = line.split_ascii_whitespace();
    let first = entries.next().filter(|entry| {
        !entry.is_empty()
            && entry.bytes().all(|byte| byte.is_ascii_digit())
            && entry.parse::<u32>().ok() == Some(own)
    });
    match (first, entries.next()) {
        (Some(_), None) => Ok(()),
        _ => Err(NsPidSeen::Entries(line.trim().to_owned())),
    }
}

/// `kill(pid, 0)`: whether the kernel knows the PID, asked without a
/// signal.
fn probe(pid: u32) -> Kill {
    let Ok(pid) = i32::try_from(pid) else {
        return Kill::Failed("not a PID".to_owned());
    };
    match crate::sys::process::probe(pid) {
        Ok(()) => Kill::Exists,
        Err(error) if crate::sys::process::is_no_such_process(&error) => Kill::NoSuchProcess,
        Err(error) => Kill::Failed(error.to_string()),
    }
}

/// The shortage met reading `file`, for the run's error.
fn short_text(file: &Path, error: &io::Error) -> String {
    format!("cannot read {}: {error}", file.display())
}

struct Stat {
    pid: u32,
    state: u8,
    threads: u32,
    start_ticks: u64,
}

/// Parses `/proc/<pid>/stat`: `pid (comm) state ppid ... num_threads ...
/// starttime ...`. The command name may hold spaces and parentheses, so
/// split at the last `") "`; `num_threads` is field 20 and the start time
/// field 22, the 18th and 20th after the command. A `num_threads` that is
/// not a count of at least one does not parse (rch-common 2.1.34: it
/// cannot prove a zombie leader was the last thread).
fn parse_stat(stat: &[u8]) -> Option<Stat> {
    let text = std::str::from_utf8(stat).ok()?;
    let close = text.rfind(") ")?;
    let (head, tail) = (&text[..close], &text[close + 2..]);
    let pid = head.split_once(" (")?.0.parse().ok()?;
    let mut fields = tail.split_ascii_whitespace();
    let state = fields.next()?.as_bytes();
    let [state] = state else { return None };
    let threads = fields
        .nth(16)
        .filter(|count| count.bytes().all(|byte| byte.is_ascii_digit()))?
        .parse()
        .ok()
        .filter(|count| *count > 0)?;
    let start_ticks = fields.nth(1)?.parse().ok()?;
    Some(Stat {
        pid,
        state: *state,
        threads,
        start_ticks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::ProcessIdentity;

    const BOOT: &str = "3f1c2a9e-5b7d-4e2a-9c1f-0a1b2c3d4e5f";

    fn stat_line(pid: u32, comm: &str, state: char, threads: u32, ticks: u64) -> String {
        // Fields 4..=19 and 21 are filler; field 20 is num_threads, field
        // 22 the start time.
        let filler: Vec<String> = (4..20).map(|n| n.to_string()).collect();
        format!(
            "{pid} ({comm}) {state} {} {threads} 21 {ticks} 23 24\n",
            filler.join(" ")
        )
    }

    struct FakeProc {
        dir: tempfile::TempDir,
    }

    impl FakeProc {
        /// A `/proc` of a process `own_pid` at one PID-namespace level,
        /// whose kernel knows no PID but what the test says.
        fn new(own_pid: u32) -> FakeProc {
            let dir = tempfile::tempdir().expect("tempdir");
            let proc = FakeProc { dir };
            proc.process("self", own_pid, 'R', 1);
            proc.status(&format!("Name:\trch-sweep\nNSpid:\t{own_pid}\nNSsid:\t1\n"));
            std::fs::create_dir_all(proc.dir.path().join("sys/kernel/random")).expect("mkdir");
            std::fs::write(
                proc.dir.path().join("sys/kernel/random/boot_id"),
                format!("{BOOT}\n"),
            )
            .expect("boot_id");
            proc
        }

        fn status(&self, text: &str) {
            std::fs::write(self.dir.path().join("self/status"), text).expect("status");
        }

        fn process(&self, name: &str, pid: u32, state: char, ticks: u64) {
            self.threads(name, pid, state, 1, ticks);
        }

        fn threads(&self, name: &str, pid: u32, state: char, threads: u32, ticks: u64) {
            let dir = self.dir.path().join(name);
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(
                dir.join("stat"),
                stat_line(pid, "rch (exec) x", state, threads, ticks),
            )
            .expect("stat");
        }

        /// The view, with a kernel that says ESRCH for every missing PID.
        fn view(&self, own_pid: u32) -> ProcFs {
            ProcFs::at(self.dir.path(), own_pid).with_kill(|_| Kill::NoSuchProcess)
        }
    }

    fn linux(ticks: u64) -> Recorded {
        Recorded::Linux {
            boot_id: BOOT.into(),
            ticks,
        }
    }

    #[test]
    fn a_matching_identity_is_alive() {
        let proc = FakeProc::new(100);
        proc.process("4242", 4242, 'S', 777);
        assert_eq!(proc.view(100).presence(4242, &linux(777)), Presence::Alive);
    }

    #[test]
    fn a_missing_pid_is_gone_whatever_was_recorded() {
        let proc = FakeProc::new(100);
        let view = proc.view(100);
        for recorded in [Recorded::None, Recorded::Invalid(Invalid::BootId), linux(1)] {
            assert_eq!(view.presence(4242, &recorded), Presence::Gone);
        }
    }

    #[test]
    fn a_reused_pid_or_another_boot_is_gone() {
        let proc = FakeProc::new(100);
        proc.process("4242", 4242, 'S', 778);
        assert_eq!(proc.view(100).presence(4242, &linux(777)), Presence::Gone);
        let other_boot = Recorded::Linux {
            boot_id: "00000000-0000-4000-8000-000000000000".into(),
            ticks: 778,
        };
        assert_eq!(proc.view(100).presence(4242, &other_boot), Presence::Gone);
    }

    #[test]
    fn a_zombie_is_gone() {
        let proc = FakeProc::new(100);
        proc.process("4242", 4242, 'Z', 777);
        assert_eq!(proc.view(100).presence(4242, &linux(777)), Presence::Gone);
        assert_eq!(
            proc.view(100).presence(4242, &Recorded::None),
            Presence::Gone
        );
    }

    #[test]
    fn a_foreign_namespace_or_missing_proc_is_unverified() {
        let proc = FakeProc::new(100);
        // /proc/self shows PID 100, but we are PID 200: not our namespace.
        assert_eq!(
            proc.view(200).presence(4242, &linux(1)),
            Presence::Unverified
        );
        let nothing = ProcFs::at(Path::new("/nonexistent/proc"), 1);
        assert_eq!(
            nothing.presence(4242, &Recorded::None),
            Presence::Unverified
        );
    }

    #[test]
    fn no_recorded_identity_and_an_existing_pid_is_unverified() {
        let proc = FakeProc::new(100);
        proc.process("4242", 4242, 'S', 777);
        // rch's owner_presence: an existing PID with no expected identity is
        // Unknown, since the PID may have been reused.
        assert_eq!(
            proc.view(100).presence(4242, &Recorded::None),
            Presence::Unverified
        );
    }

    #[test]
    fn an_invalid_identity_of_an_existing_pid_is_unverified() {
        let proc = FakeProc::new(100);
        proc.process("4242", 4242, 'S', 777);
        assert_eq!(
            proc.view(100)
                .presence(4242, &Recorded::Invalid(Invalid::BootId)),
            Presence::Unverified
        );
    }

    #[test]
    fn pids_beyond_i32_and_odd_stat_files_are_unverified() {
        let proc = FakeProc::new(100);
        assert_eq!(
            proc.view(100).presence(u32::MAX, &Recorded::None),
            Presence::Unverified
        );
        proc.process("4242", 4243, 'S', 777); // stat names another pid
        assert_eq!(
            proc.view(100).presence(4242, &linux(777)),
            Presence::Unverified
        );
        proc.process("4244", 4244, '?', 777); // unknown state
        assert_eq!(
            proc.view(100).presence(4244, &linux(777)),
            Presence::Unverified
        );
        std::fs::create_dir_all(proc.dir.path().join("4245")).expect("mkdir");
        std::fs::write(proc.dir.path().join("4245/stat"), "garbage").expect("write");
        assert_eq!(
            proc.view(100).presence(4245, &linux(777)),
            Presence::Unverified
        );
    }

    #[test]
    fn an_unreadable_boot_id_leaves_a_recorded_identity_unverified() {
        let proc = FakeProc::new(100);
        proc.process("4242", 4242, 'S', 777);
        std::fs::write(
            proc.dir.path().join("sys/kernel/random/boot_id"),
            "not-a-uuid",
        )
        .expect("write");
        assert_eq!(
            proc.view(100).presence(4242, &linux(777)),
            Presence::Unverified
        );
    }

    #[test]
    fn the_real_proc_sees_this_process_alive() {
        let own = std::process::id();
        let stat = std::fs::read(format!("/proc/{own}/stat")).expect("own stat");
        let ticks = parse_stat(&stat).expect("parses").start_ticks;
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").expect("boot id");
        let recorded = Recorded::Linux {
            boot_id: boot.trim().to_owned(),
            ticks,
        };
        let proc = ProcFs::system();
        assert_eq!(proc.presence(own, &recorded), Presence::Alive);
        let reused = Recorded::Linux {
            boot_id: boot.trim().to_owned(),
            ticks: ticks + 1,
        };
        assert_eq!(proc.presence(own, &reused), Presence::Gone);
    }

    #[test]
    fn recorded_identity_prefers_process_birth_and_never_falls_back() {
        let base: DurableJobLease = serde_json::from_value(serde_json::json!({
            "schema_version": 1,
            "identity": {"local_wrapper_id": "rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10"},
            "wrapper_pid": 5, "state": "running", "phase": "execute",
            "heartbeat_unix_ms": 0, "strict_remote": false, "self_healing_enabled": true,
            "command_fingerprint": "blake3:x", "terminal_acknowledged": false
        }))
        .expect("lease");
        assert_eq!(Recorded::of(&base), Recorded::None);

        let mut legacy = base.clone();
        legacy.boot_id = Some(BOOT.into());
        legacy.process_start_ticks = Some(9);
        assert_eq!(Recorded::of(&legacy), linux(9));

        let mut half = base.clone();
        half.boot_id = Some(BOOT.into());
        assert_eq!(Recorded::of(&half), Recorded::Invalid(Invalid::HalfLegacy));
        let mut half = base.clone();
        half.process_start_ticks = Some(9);
        assert_eq!(Recorded::of(&half), Recorded::Invalid(Invalid::HalfLegacy));

        let mut upper = legacy.clone();
        upper.boot_id = Some(BOOT.to_uppercase());
        assert_eq!(Recorded::of(&upper), Recorded::Invalid(Invalid::BootId));

        let birth = |boot: &str, start: ProcessStart| {
            let mut lease = legacy.clone();
            lease.process_birth = Some(ProcessIdentity {
                boot_id: boot.into(),
                start,
            });
            Recorded::of(&lease)
        };
        assert_eq!(birth(BOOT, ProcessStart::Linux { ticks: 11 }), linux(11));
        let darwin = ProcessStart::Darwin {
            seconds: 1,
            microseconds: 2,
        };
        assert_eq!(
            birth(BOOT, darwin),
            Recorded::Invalid(Invalid::NotLinux),
            "no fallback"
        );
        assert_eq!(
            birth(&BOOT.to_uppercase(), ProcessStart::Linux { ticks: 11 }),
            Recorded::Invalid(Invalid::BootId),
            "no fallback"
        );
    }

    #[test]
    fn an_observation_carries_the_facts_its_presence_rests_on() {
        let proc = FakeProc::new(100);
        proc.process("4242", 4242, 'S', 777);
        let seen = proc.view(100).observe(4242, &linux(777));
        assert_eq!(seen.namespace, Some(Namespace::Own));
        assert_eq!(seen.boot_id.as_deref(), Some(BOOT));
        assert_eq!(
            seen.stat,
            StatSeen::Seen {
                pid: 4242,
                state: b'S',
                threads: 1,
                start_ticks: 777
            }
        );
        assert_eq!(seen.presence(), Presence::Alive);
        assert_eq!(
            seen.process_text(),
            "pid 4242: /proc/4242/stat state S, start ticks 777 = recorded; boot id 3f1c2a9e\u{2026} = this machine's"
        );
        assert_eq!(
            seen.judgeable_text(),
            "judged from this process's own /proc; this machine's boot id is 3f1c2a9e\u{2026}; recorded boot id 3f1c2a9e\u{2026}, start ticks 777"
        );
    }

    #[test]
    fn the_evidence_says_why_an_owner_is_gone() {
        let proc = FakeProc::new(100);
        let view = proc.view(100);
        assert_eq!(
            view.observe(4242, &linux(777)).process_text(),
            "pid 4242 absent from /proc, and kill(4242, 0) says no such process (ESRCH): owner gone"
        );
        proc.process("4242", 4242, 'S', 99);
        assert_eq!(
            view.observe(4242, &linux(123456789)).process_text(),
            "pid 4242 now belongs to another process: start ticks 99 \u{2260} recorded 123456789"
        );
        let other_boot = Recorded::Linux {
            boot_id: "00000000-0000-4000-8000-000000000000".into(),
            ticks: 99,
        };
        let rebooted = view.observe(4242, &other_boot);
        assert_eq!(rebooted.presence(), Presence::Gone);
        assert!(
            rebooted
                .process_text()
                .starts_with("pid 4242 was recorded in boot 00000000\u{2026}"),
            "{}",
            rebooted.process_text()
        );
        proc.process("4243", 4243, 'Z', 1);
        assert!(
            view.observe(4243, &linux(1))
                .process_text()
                .ends_with("a zombie, its only thread, owner gone")
        );
        let unrecorded = view.observe(4242, &Recorded::None);
        assert_eq!(unrecorded.presence(), Presence::Unverified);
        assert_eq!(
            unrecorded.judgeable_text(),
            "pid 4242: /proc/4242/stat state S, start ticks 99; no identity recorded to tell the owner from a process that reused the PID: unverified"
        );
    }

    #[test]
    fn the_evidence_says_why_presence_cannot_be_judged() {
        let proc = FakeProc::new(100);
        let foreign = proc.view(200).observe(4242, &linux(1));
        assert_eq!(
            foreign.stat,
            StatSeen::NotRead,
            "nothing read past the namespace"
        );
        assert_eq!(
            foreign.judgeable_text(),
            "/proc/self/stat shows pid 100, not this process's 200: /proc belongs to another PID namespace"
        );
        let huge = proc.view(100).observe(u32::MAX, &Recorded::None);
        assert_eq!(huge.namespace, None);
        assert!(huge.judgeable_text().contains("above 2147483647"));
        proc.process("4242", 4242, 'S', 5);
        let invalid = proc
            .view(100)
            .observe(4242, &Recorded::Invalid(Invalid::HalfLegacy));
        assert_eq!(invalid.presence(), Presence::Unverified);
        assert!(
            invalid
                .judgeable_text()
                .ends_with("only one of boot_id and process_start_ticks is recorded"),
            "{}",
            invalid.judgeable_text()
        );
        std::fs::remove_file(proc.dir.path().join("sys/kernel/random/boot_id")).expect("rm");
        let no_boot = proc.view(100).observe(4242, &linux(5));
        assert_eq!(no_boot.stat, StatSeen::NotRead);
        assert!(no_boot.judgeable_text().contains("boot id"));
        assert!(no_boot.process_text().starts_with("pid 4242 not looked up"));
    }

    #[test]
    fn without_a_boot_id_even_a_missing_pid_proves_nothing() {
        let proc = FakeProc::new(100);
        std::fs::remove_file(proc.dir.path().join("sys/kernel/random/boot_id")).expect("rm");
        for recorded in [Recorded::None, linux(1)] {
            assert_eq!(
                proc.view(100).presence(4242, &recorded),
                Presence::Unverified
            );
        }
    }

    #[test]
    fn only_one_nspid_entry_equal_to_our_pid_proves_our_own_proc() {
        assert_eq!(single_nspid("Name:\trch\nNSpid:\t123\n", 123), Ok(()));
        assert_eq!(single_nspid("NSpid: 123 \n", 123), Ok(()));
        for (status, seen) in [
            ("Name:\trch\n", NsPidSeen::Missing),
            ("", NsPidSeen::Missing),
            ("NSpid:\t123\nNSpid:\t123\n", NsPidSeen::Repeated),
            ("NSpid:\t123\t7\n", NsPidSeen::Entries("123\t7".into())),
            ("NSpid:\t999\t123\n", NsPidSeen::Entries("999\t123".into())),
            ("NSpid:\t999\n", NsPidSeen::Entries("999".into())),
            ("NSpid:\n", NsPidSeen::Entries(String::new())),
            ("NSpid:\t+123\n", NsPidSeen::Entries("+123".into())),
            (
                "NSpid:\t123 invalid\n",
                NsPidSeen::Entries("123 invalid".into()),
            ),
        ] {
            assert_eq!(single_nspid(status, 123), Err(seen), "{status:?}");
        }
    }

    #[test]
    fn without_a_single_nspid_entry_every_owner_is_unverified() {
        for status in [
            // A kernel before 4.1: no NSpid line at all.
            "Name:\trch-sweep\nPid:\t100\n",
            // A nested PID namespace: this /proc's number and ours.
            "NSpid:\t100\t7\n",
            "NSpid:\t100\nNSpid:\t100\n",
            "NSpid:\t101\n",
        ] {
            let proc = FakeProc::new(100);
            proc.status(status);
            proc.process("4243", 4243, 'S', 5);
            let view = proc.view(100);
            // A missing PID, a zombie, a reused PID: gone with a single
            // NSpid, unverified without one.
            for (pid, recorded) in [(4242, linux(1)), (4243, linux(777))] {
                let seen = view.observe(pid, &recorded);
                assert_eq!(seen.presence(), Presence::Unverified, "{status:?}");
                assert_eq!(seen.stat, StatSeen::NotRead, "nothing read past it");
                assert!(
                    seen.judgeable_text().contains("every owner is unverified"),
                    "{}",
                    seen.judgeable_text()
                );
            }
        }
        let proc = FakeProc::new(100);
        std::fs::remove_file(proc.dir.path().join("self/status")).expect("rm");
        let seen = proc.view(100).observe(4242, &linux(1));
        assert_eq!(seen.presence(), Presence::Unverified);
        assert!(
            seen.judgeable_text()
                .starts_with("/proc/self/status is unreadable"),
            "{}",
            seen.judgeable_text()
        );
        assert!(proc.view(100).own_nspid().is_err());
        assert_eq!(FakeProc::new(100).view(100).own_nspid(), Ok(()));
    }

    #[test]
    fn a_missing_stat_proves_the_owner_gone_only_with_esrch() {
        let proc = FakeProc::new(100);
        let gone = proc.view(100).observe(4242, &linux(1));
        assert_eq!(gone.stat, StatSeen::Absent(Kill::NoSuchProcess));
        assert_eq!(gone.presence(), Presence::Gone);
        // hidepid: /proc hides another user's live process; kill finds it
        // (EPERM for another user's, success for our own).
        let hidden = ProcFs::at(proc.dir.path(), 100).with_kill(|_| Kill::Exists);
        let seen = hidden.observe(4242, &linux(1));
        assert_eq!(seen.presence(), Presence::Unverified);
        assert!(
            seen.process_text().contains("hidepid"),
            "{}",
            seen.process_text()
        );
        let refused = ProcFs::at(proc.dir.path(), 100)
            .with_kill(|_| Kill::Failed("Operation not permitted (os error 1)".into()));
        let seen = refused.observe(4242, &Recorded::None);
        assert_eq!(seen.presence(), Presence::Unverified);
        assert!(
            seen.judgeable_text()
                .contains("kill(4242, 0) says Operation not permitted"),
            "{}",
            seen.judgeable_text()
        );
    }

    #[test]
    fn the_kernel_is_asked_about_a_pid_missing_from_proc() {
        // This process is missing from the fake /proc, but the real kernel
        // knows it: the real probe refuses to call it gone.
        let proc = FakeProc::new(100);
        let own = std::process::id();
        let real = ProcFs::at(proc.dir.path(), 100);
        assert_eq!(
            real.observe(own, &linux(1)).stat,
            StatSeen::Absent(Kill::Exists)
        );
        assert_eq!(real.presence(own, &linux(1)), Presence::Unverified);
    }

    #[test]
    fn a_zombie_leader_is_gone_only_as_its_only_thread() {
        let proc = FakeProc::new(100);
        proc.threads("4242", 4242, 'Z', 1, 777);
        proc.threads("4243", 4243, 'Z', 3, 777);
        proc.threads("4244", 4244, 'X', 2, 777);
        let view = proc.view(100);
        assert_eq!(view.presence(4242, &linux(777)), Presence::Gone);
        for pid in [4243, 4244] {
            let seen = view.observe(pid, &linux(777));
            assert_eq!(seen.presence(), Presence::Unverified, "pid {pid}");
            assert!(
                seen.process_text()
                    .contains("threads, whose others may still run"),
                "{}",
                seen.process_text()
            );
        }
        // A count that is not one of at least one proves nothing.
        std::fs::create_dir_all(proc.dir.path().join("4245")).expect("mkdir");
        let zero = stat_line(4245, "rch", 'Z', 1, 777).replace(" 1 21 777 ", " 0 21 777 ");
        std::fs::write(proc.dir.path().join("4245/stat"), zero).expect("write");
        assert_eq!(view.observe(4245, &linux(777)).stat, StatSeen::Garbled);
        assert_eq!(view.presence(4245, &linux(777)), Presence::Unverified);
    }
}

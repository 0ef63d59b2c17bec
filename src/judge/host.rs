//! What the machine must offer a sweep besides its files: to see the PIDs
//! of the owners it judges, and room to save the state after recoveries.
//!
//! A sweep in a container with a PID namespace of its own sees none of the
//! host's processes, so every owner outside it looks gone, to rch as to
//! rch-sweep; a full file system lets recoveries run and then loses their
//! backoff. [`look`] gathers the facts, [`concerns`] judges them (plain
//! data in, findings out).

use crate::judge::observation::NsPidSeen;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The inode of the initial PID namespace (`PROC_PID_INIT_INO`), the one
/// a host's processes and a systemd manager run in.
pub const INITIAL_PID_NS: u64 = 4_026_531_836;

/// Less room than this where the state is saved is a warning: a state file
/// of a few hundred leases, its temporary copy and the lock fit many times.
pub const MIN_FREE_BYTES: u64 = 1024 * 1024;

/// Room on the file system that holds the state folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Space {
    /// The folder looked at: the state folder, or its nearest existing
    /// ancestor while a run has yet to create it.
    pub folder: PathBuf,
    /// Bytes this user may still write (`f_bavail * f_frsize`).
    pub free_bytes: u64,
    /// Blocks in all; 0 for a file system that keeps no block count (a
    /// tmpfs without a size limit), which has no byte limit.
    pub blocks: u64,
    /// Inodes in all; 0 for a file system that counts none (btrfs, an
    /// unlimited tmpfs), which is never short of them.
    pub inodes: u64,
    /// Inodes this user may still use (`f_favail`).
    pub free_inodes: u64,
}

/// What [`look`] saw; each part may be unknown, with why.
#[derive(Debug)]
pub struct Facts {
    /// The inode of `/proc/self/ns/pid`.
    pub pid_ns: Result<u64, String>,
    /// Whether `/proc/self/status` has one `NSpid` entry equal to our PID,
    /// without which rch 2.1.22 and later (and rch-sweep) prove no owner
    /// gone.
    pub nspid: Result<(), NsPidSeen>,
    pub space: Result<Space, String>,
}

/// One thing about the host a run would suffer from, and what to do.
#[derive(Debug, PartialEq, Eq)]
pub struct Concern {
    pub finding: String,
    pub fix: String,
    /// A run fails outright here (exit 74), rather than risks to.
    pub fatal: bool,
}

/// Looks at this process's PID namespace and at the file system where
/// `state_file` is (or will be) saved.
pub fn look(state_file: &Path) -> Facts {
    let pid_ns = std::fs::metadata("/proc/self/ns/pid")
        .map(|meta| meta.ino())
        .map_err(|error| format!("cannot read /proc/self/ns/pid: {error}"));
    let folder = crate::fsio::parent_dir(state_file);
    let existing = folder
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir).is_ok())
        .unwrap_or(Path::new("."));
    let space = statvfs(existing).map_err(|error| {
        format!(
            "cannot look at the file system of {}: {error}",
            existing.display()
        )
    });
    let nspid = crate::judge::owner::ProcFs::system().own_nspid();
    Facts {
        pid_ns,
        nspid,
        space,
    }
}

fn statvfs(folder: &Path) -> io::Result<Space> {
    let stat = crate::sys::fs::statvfs(folder)?;
    #[allow(clippy::useless_conversion)] // the field types differ by target
    Ok(Space {
        folder: folder.to_path_buf(),
        free_bytes: u64::from(stat.f_bavail).saturating_mul(u64::from(stat.f_frsize)),
        blocks: u64::from(stat.f_blocks),
        inodes: u64::from(stat.f_files),
        free_inodes: u64::from(stat.f_favail),
    })
}

/// What in `facts` a run would suffer from: a PID namespace other than the
/// initial one; less than [`MIN_FREE_BYTES`] free where the state is
/// saved; and, fatal, not one byte or not one inode free there (a run
/// could not even take its lock: 74; a file system that keeps no block
/// count is not short of bytes, nor one that counts no inodes of them). What could not be looked at is no concern (the
/// finding of an `ok` says so).
pub fn concerns(facts: &Facts) -> Vec<Concern> {
    let mut concerns = Vec::new();
    if let Ok(inode) = facts.pid_ns
        && inode != INITIAL_PID_NS
    {
        concerns.push(Concern {
            finding: format!(
                "this process runs in a PID namespace other than the initial one (/proc/self/ns/pid is inode {inode}, not {INITIAL_PID_NS}): owners that run outside it look gone, to rch as to rch-sweep"
            ),
            fix: "sweep where rch's wrappers run (on the host, or in the container that runs the builds), not in a PID namespace of its own".to_owned(),
            fatal: false,
        });
    }
    if let Err(seen) = &facts.nspid {
        let shown = match seen {
            NsPidSeen::Unreadable(error) => format!("/proc/self/status is unreadable ({error})"),
            NsPidSeen::Missing => "/proc/self/status has no NSpid line".to_owned(),
            NsPidSeen::Repeated => "/proc/self/status has more than one NSpid line".to_owned(),
            NsPidSeen::Entries(entries) => format!("/proc/self/status shows NSpid \"{entries}\""),
        };
        concerns.push(Concern {
            finding: format!(
                "{shown}, not one entry equal to this process's PID (an old kernel, before 4.1, or a nested PID namespace): this process's identity is unproven, so every owner is owner_unverified and nothing is recovered, as rch 2.1.22 and later refuse too"
            ),
            fix: "sweep on a kernel of 4.1 or later, in the PID namespace /proc was mounted by (on the host, or in the container that runs the builds, with its own /proc)".to_owned(),
            fatal: false,
        });
    }
    if let Ok(space) = &facts.space {
        let counts_bytes = space.blocks > 0;
        let short_of_bytes = counts_bytes && space.free_bytes < MIN_FREE_BYTES;
        let short_of_inodes = space.inodes > 0 && space.free_inodes == 0;
        let fatal = (counts_bytes && space.free_bytes == 0) || short_of_inodes;
        if short_of_bytes || short_of_inodes {
            let mut what = Vec::new();
            if short_of_bytes {
                what.push(format!(
                    "{} bytes",
                    crate::human::thousands(space.free_bytes)
                ));
            }
            if short_of_inodes {
                what.push("no inode".to_owned());
            }
            let consequence = if fatal {
                "a run could not even take its lock, and would exit 74"
            } else {
                "the state could not be saved after the recoveries"
            };
            concerns.push(Concern {
                finding: format!(
                    "the file system of the state folder ({}) has {} free: {consequence}",
                    space.folder.display(),
                    what.join(" and ")
                ),
                fix: "free space there (df -h, df -i), or point --state-file / RCH_SWEEP_STATE_FILE to another file system".to_owned(),
                fatal,
            });
        }
    }
    concerns
}

/// The finding of an `ok` host check: what was seen, and what could not be.
pub fn summary(facts: &Facts) -> String {
    let namespace = match &facts.pid_ns {
        Ok(_) => "the initial PID namespace".to_owned(),
        Err(why) => format!("PID namespace unknown ({why})"),
    };
    let namespace = match facts.nspid {
        Ok(()) => format!("{namespace}; one NSpid entry"),
        Err(_) => namespace,
    };
    let space = match &facts.space {
        Ok(space) if space.blocks == 0 => format!(
            "no byte limit for the state ({}; the file system keeps no block count{})",
            space.folder.display(),
            if space.inodes == 0 {
                " and counts no inodes".to_owned()
            } else {
                format!(
                    "; {} inodes free",
                    crate::human::thousands(space.free_inodes)
                )
            }
        ),
        Ok(space) if space.inodes == 0 => format!(
            "{} MiB free for the state ({}; the file system counts no inodes)",
            space.free_bytes / (1024 * 1024),
            space.folder.display()
        ),
        Ok(space) => format!(
            "{} MiB and {} inodes free for the state ({})",
            space.free_bytes / (1024 * 1024),
            crate::human::thousands(space.free_inodes),
            space.folder.display()
        ),
        Err(why) => format!("free space unknown ({why})"),
    };
    format!("{namespace}; {space}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(free_bytes: u64, inodes: u64, free_inodes: u64) -> Result<Space, String> {
        Ok(Space {
            folder: PathBuf::from("/home/alice/.local/state/rch/rch-sweep"),
            free_bytes,
            blocks: 1_000_000,
            inodes,
            free_inodes,
        })
    }

    #[test]
    fn a_healthy_host_has_no_concern() {
        let facts = Facts {
            pid_ns: Ok(INITIAL_PID_NS),
            nspid: Ok(()),
            space: space(70 << 30, 1_000_000, 900_000),
        };
        assert!(concerns(&facts).is_empty());
        assert_eq!(
            summary(&facts),
            "the initial PID namespace; one NSpid entry; 71680 MiB and 900,000 inodes free for the state (/home/alice/.local/state/rch/rch-sweep)"
        );
    }

    #[test]
    fn another_pid_namespace_is_a_concern() {
        let facts = Facts {
            pid_ns: Ok(4_026_532_500),
            nspid: Ok(()),
            space: space(70 << 30, 0, 0),
        };
        let found = concerns(&facts);
        assert_eq!(found.len(), 1);
        assert!(
            found[0]
                .finding
                .contains("inode 4026532500, not 4026531836")
        );
        assert!(found[0].finding.contains("look gone"));
    }

    #[test]
    fn no_single_nspid_entry_is_a_warning_that_every_owner_is_unverified() {
        for (seen, shown) in [
            (NsPidSeen::Missing, "has no NSpid line"),
            (NsPidSeen::Repeated, "more than one NSpid line"),
            (NsPidSeen::Entries("7\t1".into()), "shows NSpid \"7\t1\""),
            (
                NsPidSeen::Unreadable("EACCES".into()),
                "unreadable (EACCES)",
            ),
        ] {
            let facts = Facts {
                pid_ns: Ok(INITIAL_PID_NS),
                nspid: Err(seen),
                space: space(70 << 30, 0, 0),
            };
            let found = concerns(&facts);
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(found[0].finding.contains(shown), "{found:?}");
            assert!(
                found[0].finding.contains("every owner is owner_unverified"),
                "{found:?}"
            );
            assert!(!found[0].fatal, "a warning");
            assert!(!summary(&facts).contains("NSpid"));
        }
    }

    #[test]
    fn too_little_room_or_no_inode_is_a_concern_but_uncounted_inodes_are_not() {
        let at = |free_bytes, inodes, free_inodes| {
            concerns(&Facts {
                pid_ns: Ok(INITIAL_PID_NS),
                nspid: Ok(()),
                space: space(free_bytes, inodes, free_inodes),
            })
        };
        assert!(at(MIN_FREE_BYTES, 10, 1).is_empty());
        let short = &at(MIN_FREE_BYTES - 1, 10, 1)[0];
        assert!(short.finding.contains("1,048,575 bytes free"), "{short:?}");
        assert!(!short.fatal, "a warning while a byte is free");
        let no_inode = &at(MIN_FREE_BYTES, 10, 0)[0];
        assert!(
            no_inode.finding.contains("has no inode free"),
            "{no_inode:?}"
        );
        assert!(no_inode.fatal && no_inode.finding.contains("exit 74"));
        let nothing = &at(0, 10, 0)[0];
        assert!(nothing.finding.contains("0 bytes and no inode free"));
        assert!(nothing.fatal);
        assert!(at(0, 10, 5)[0].fatal, "no byte free");
        // A file system that counts no inodes (btrfs) is not short of them.
        assert!(at(MIN_FREE_BYTES, 0, 0).is_empty());
        assert!(at(1, 0, 0).iter().all(|concern| !concern.fatal));
    }

    #[test]
    fn a_file_system_without_a_block_count_has_no_byte_limit() {
        // A tmpfs mounted with size=0 (Docker's --tmpfs): f_blocks and
        // f_bavail are 0, and it holds whatever memory allows.
        let unlimited = |inodes, free_inodes| Facts {
            pid_ns: Ok(INITIAL_PID_NS),
            nspid: Ok(()),
            space: Ok(Space {
                folder: PathBuf::from("/run/rch/rch-sweep"),
                free_bytes: 0,
                blocks: 0,
                inodes,
                free_inodes,
            }),
        };
        assert!(concerns(&unlimited(0, 0)).is_empty());
        assert!(summary(&unlimited(0, 0)).contains("no byte limit"));
        // Its inodes are still counted when it counts them.
        assert!(concerns(&unlimited(10, 0))[0].fatal);
    }

    #[test]
    fn what_cannot_be_looked_at_is_said_but_no_concern() {
        let facts = Facts {
            pid_ns: Err("cannot read /proc/self/ns/pid: gone".into()),
            nspid: Ok(()),
            space: Err("cannot look at the file system of /x: gone".into()),
        };
        assert!(concerns(&facts).is_empty());
        assert!(summary(&facts).contains("PID namespace unknown"));
        assert!(summary(&facts).contains("free space unknown"));
    }

    #[test]
    fn this_machine_is_looked_at() {
        let facts = look(Path::new("/nonexistent/deeper/backoff.json"));
        assert!(facts.pid_ns.is_ok(), "{facts:?}");
        assert_eq!(facts.nspid, Ok(()), "this machine's /proc shows one NSpid");
        assert_eq!(facts.space.expect("statvfs of /").folder, Path::new("/"));
    }
}

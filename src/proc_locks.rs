//! Who holds a `flock`, read from `/proc/locks` without taking any lock.
//!
//! Three locks are looked at this way, each by its own room: the state lock
//! (`doctor`'s look, which must never take it: a doctor that took it,
//! however briefly, could make a timer's run exit 75), the sweep lock on
//! the lease directory (for the PID in a run's 75 message: the directory
//! holds no PID to read) and rch's per-lease recovery lock (which must not
//! even be opened). This module guards nothing itself.

use std::io;

/// Who holds a `flock` on the file `dev`/`ino` name: the PIDs
/// `/proc/locks` lists for it (empty: nobody).
pub fn holders(dev: u64, ino: u64) -> io::Result<Vec<u32>> {
    let locks = std::fs::read_to_string("/proc/locks")?;
    Ok(holders_in(&locks, libc::major(dev), libc::minor(dev), ino))
}

/// The PIDs of the `FLOCK` lines of `/proc/locks` text that name the file
/// `major:minor:ino` (as the kernel prints it: hex device numbers).
/// Blocked waiters (`->` lines) hold nothing.
fn holders_in(locks: &str, major: u32, minor: u32, ino: u64) -> Vec<u32> {
    let file = format!("{major:02x}:{minor:02x}:{ino}");
    locks
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                [_, "FLOCK", _, _, pid, id, ..] if *id == file => pid.parse().ok(),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_locks_lines_name_their_holders() {
        let text = "1: FLOCK  ADVISORY  WRITE 4242 fe:00:10011186 0 EOF\n\
                    1: -> FLOCK  ADVISORY  WRITE 4343 fe:00:10011186 0 EOF\n\
                    2: POSIX  ADVISORY  WRITE 77 fe:00:10011186 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 99 fe:00:555 0 EOF\n";
        assert_eq!(holders_in(text, 0xfe, 0, 10011186), [4242]);
        assert!(holders_in(text, 0xfe, 1, 10011186).is_empty());
    }
}

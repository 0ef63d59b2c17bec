//! SIGINT, SIGTERM and SIGHUP end a run cleanly: the handler only records the
//! signal; the main loop sees it, stops new starts, has every running child's
//! group killed, writes the state file, and exits 128 + N. The first signal
//! decides N: a second one (an impatient Ctrl-C after systemd's SIGTERM) must
//! not rewrite what the run reports as the reason it stopped.

use std::sync::atomic::{AtomicI32, Ordering};

static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn record(signal: libc::c_int) {
    // Only a lock-free atomic operation: async-signal-safe. Only the first
    // signal is kept; a later one finds the slot taken and changes nothing.
    let _ = first_wins(&RECEIVED, signal);
}

/// Stores `signal` in `slot` unless a signal is already there; returns
/// whether it was stored.
fn first_wins(slot: &AtomicI32, signal: i32) -> bool {
    slot.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// Installs the handlers. Called once a run holds its lock and may have
/// children to clean up; before that, the default action (exit) is right.
pub fn install() -> std::io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is a valid value to fill in; `record`
        // only performs an atomic store, which is async-signal-safe; the
        // mask is initialised by sigemptyset before use.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = record as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The first stop signal received, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// Blocks the stop signals in the calling thread and returns the first one
/// received before. From then on a signal stays pending until the process
/// exits, so what this returns is final: a run that has written its
/// records as they stand after this call cannot be contradicted by a
/// signal that arrives later. For the end of a run, when no other thread
/// is left.
pub fn hold() -> Option<i32> {
    // SAFETY: `set` is a local sigset_t, initialised by sigemptyset before
    // use; pthread_sigmask only changes the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    received()
}

/// A signal's name for messages.
pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_signal_is_kept() {
        let slot = AtomicI32::new(0);
        assert!(first_wins(&slot, libc::SIGTERM));
        assert!(!first_wins(&slot, libc::SIGINT));
        assert!(!first_wins(&slot, libc::SIGHUP));
        assert_eq!(slot.load(Ordering::SeqCst), libc::SIGTERM);
    }
}

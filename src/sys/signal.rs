//! Signal dispositions and masks: the handler that records the first stop
//! signal (the only code of ours that ever runs in signal context), an
//! inherited "ignore SIGCHLD" undone, and signals blocked or unblocked in
//! the calling thread.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

/// The first signal [`record`] saw; 0 for none.
static RECORDED: AtomicI32 = AtomicI32::new(0);

/// The handler [`install_recorder`] installs. Only a lock-free atomic
/// operation: async-signal-safe. Only the first signal is kept; a later one
/// finds the slot taken and changes nothing.
extern "C" fn record(signal: libc::c_int) {
    let _ = first_wins(&RECORDED, signal);
}

/// Stores `signal` in `slot` unless a signal is already there; returns
/// whether it was stored.
fn first_wins(slot: &AtomicI32, signal: i32) -> bool {
    slot.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// Installs, for each of `signals`, the handler that records the first
/// signal received (`SA_RESTART`, nothing masked); [`recorded`] reads it.
pub fn install_recorder(signals: &[libc::c_int]) -> io::Result<()> {
    for &signal in signals {
        // SAFETY: a zeroed sigaction is a valid value to fill in; `record`
        // only performs an atomic operation, which is async-signal-safe; the
        // mask is initialised by sigemptyset before use, and the call only
        // reads `action`.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = record as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The first signal the recorder saw, if any.
pub fn recorded() -> Option<i32> {
    match RECORDED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// Resets SIGCHLD to the default when it is ignored (`SIG_IGN`, or
/// `SA_NOCLDWAIT` set), as it may be inherited; any other disposition (a
/// handler someone installed) is left alone. Returns whether it was reset.
pub fn reset_ignored_sigchld() -> bool {
    // SAFETY: `sigaction` with a null new action only reads the current
    // disposition into `current`, a zeroed (valid) `sigaction` we own. The
    // replacement is a plain SIG_DFL with an empty mask and no flags, which
    // installs no code of ours to run in signal context.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGCHLD, std::ptr::null(), &mut current) == 0
            && (current.sa_sigaction == libc::SIG_IGN || current.sa_flags & libc::SA_NOCLDWAIT != 0)
        {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigemptyset(&mut default.sa_mask);
            return libc::sigaction(libc::SIGCHLD, &default, std::ptr::null_mut()) == 0;
        }
    }
    false
}

/// `pthread_sigmask(how, signals)` in the calling thread.
fn change_mask(how: libc::c_int, signals: &[libc::c_int]) {
    // SAFETY: `set` is a local sigset_t, initialised by sigemptyset before
    // use; pthread_sigmask only reads it and changes the calling thread's
    // mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &signal in signals {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Blocks `signals` in the calling thread (threads it spawns later inherit
/// the mask): they stay pending until unblocked.
pub fn block(signals: &[libc::c_int]) {
    change_mask(libc::SIG_BLOCK, signals);
}

/// Unblocks `signals` in the calling thread (threads it spawns later
/// inherit the mask).
pub fn unblock(signals: &[libc::c_int]) {
    change_mask(libc::SIG_UNBLOCK, signals);
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

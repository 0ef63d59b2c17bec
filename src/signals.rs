//! SIGINT, SIGTERM and SIGHUP end a run cleanly: the handler only records the
//! signal; the main loop sees it, stops new starts, has every running child's
//! group killed, writes the state file, and exits 128 + N. The first signal
//! decides N: a second one (an impatient Ctrl-C after systemd's SIGTERM) must
//! not rewrite what the run reports as the reason it stopped.

use crate::sys;

/// The signals that end a run.
const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Installs the handlers. Called once a run holds its lock and may have
/// children to clean up; before that, the default action (exit) is right.
/// The handler only records the first signal (`sys::signal`).
pub fn install() -> std::io::Result<()> {
    sys::signal::install_recorder(&STOP_SIGNALS)
}

/// The first stop signal received, if any.
pub fn received() -> Option<i32> {
    sys::signal::recorded()
}

/// Blocks the stop signals in the calling thread and returns the first one
/// received before. From then on a signal stays pending until the process
/// exits, so what this returns is final: a run that has written its
/// records as they stand after this call cannot be contradicted by a
/// signal that arrives later. For the end of a run, when no other thread
/// is left.
pub fn hold() -> Option<i32> {
    sys::signal::block(&STOP_SIGNALS);
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

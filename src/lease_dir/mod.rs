//! The lease directory: the folder rch keeps its journals in
//! (`<state home>/job-leases`), as this tool finds, opens and locks it.
//!
//! - [`identity`]: which directory that is, resolved once at start, and
//!   what stands there ([`LeaseDirFound`]);
//! - [`open`]: the one opener of it ([`LeaseDir`]): its descriptor, the
//!   listing read from that descriptor, and each journal opened relative
//!   to it;
//! - [`sweep_lock`]: the lock on the directory that keeps two sweeps off it;
//! - [`recovery_lock`]: rch's lock on one lease's recovery
//!   (`<id>.recovery.lock`), only ever looked up, never opened;
//! - [`writable`]: whether rch could rewrite a journal in it (a
//!   read-write mount this user may write);
//! - [`room`]: whether its file system has room for that rewrite (bytes
//!   and an inode).
//!
//! What a journal holds, and how its bytes are read and parsed, is
//! [`crate::lease`]'s.
//!
//! May use: [`crate::judge`] (its `/proc` readers), [`crate::lease`], the
//! files at the top of `src/` and [`crate::sys`]. Used by `rch`, `sweep` and
//! `cmd`.

pub mod identity;
pub mod open;
pub mod recovery_lock;
pub mod room;
pub mod sweep_lock;
pub mod writable;

pub use identity::{Identity, JOB_LEASES, LeaseDirFound};
pub use open::{LeaseDir, ListedType, Listing};

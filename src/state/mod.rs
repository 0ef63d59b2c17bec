//! The backoff state: what this tool keeps between runs, and the one place
//! it is read, saved and locked.
//!
//! - [`backoff`]: the state itself, plain data (each failing lease's
//!   failures and next attempt, the last success) and the arithmetic on
//!   it; no I/O;
//! - [`file`](mod@file): the state file (`backoff.json`): loaded, a
//!   corrupt one moved aside, saved atomically into the private state
//!   folder;
//! - [`folder`]: that folder, opened without following a link and trusted
//!   only as checked on the descriptor every write goes through;
//! - [`lock`]: the state lock (`<state file>.lock`), which keeps two
//!   sweeps from writing one state;
//! - [`store`]: the state as its writers hold it: the folder opened once,
//!   and the lock, the read, the quarantine and the save all through that
//!   one descriptor.
//!
//! The file's API is used as `state::load`, `state::save` and so on.
//!
//! May use: [`crate::judge`] (the verdict, the `/proc/locks` reader), the
//! files at the top of `src/` and [`crate::sys`]. Used by `rch`, `sweep` and
//! `cmd`.

pub mod backoff;
pub mod file;
pub mod folder;
pub mod lock;
pub mod store;

pub use file::{
    Access, Decode, Loaded, MAX_STATE_BYTES, StateFound, check_path, decode, load, load_existing,
    load_for_plan, read,
};
pub use store::Store;

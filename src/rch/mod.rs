//! One recovery and rch's answers: everything that runs `rch` or asks its
//! daemon, and reads what they say.
//!
//! - [`recover`]: one recovery (re-read, admission, another's recovery
//!   lock, the child, the completion check) and whether a failure is the
//!   lease's own;
//! - [`child`]: run one child under one deadline (exec, capture, wait);
//! - [`release`]: which rch release runs, and what it leaves and lacks;
//! - [`rch_says`]: rch's answers, one table checked against rch's
//!   published sources, and the match over a failed child's `Error:` line;
//! - [`rch_env`]: what every `rch` this tool starts is told;
//! - [`answer`]: what rch's answer says of the lease directory, where a
//!   look at it after the child confirms it;
//! - [`daemon`] and [`health`]: the socket `rch` names, and one try at it
//!   with rch's health request.
//!
//! May use: [`crate::state`], [`crate::lease_dir`], [`crate::judge`],
//! [`crate::lease`], the files at the top of `src/` and [`crate::sys`].
//! Used by `sweep` and `cmd`; it uses neither.

pub mod answer;
pub mod child;
pub mod daemon;
pub mod health;
pub mod rch_env;
pub mod rch_says;
pub mod recover;
pub mod release;

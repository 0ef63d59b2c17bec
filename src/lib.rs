//! rch-sweep: a one-shot recovery of dead rch client leases.
//!
//! The flow is preflight → scan → judge → plan → recover → record → report.
//! `src/` is one folder a subject, each opening with what it holds and what
//! it may use, from the bottom up:
//! - [`sys`]: the one room of raw system calls, the only one allowed
//!   `unsafe` (see its doc);
//! - the files at this level: the command line (`cli`), defaults
//!   (`config`), exit codes, logging, signals, the account, atomic writes
//!   (`fsio`), and plain data everyone uses (`stat`, `shortage`, `human`);
//! - [`lease`]: rch's journal; [`judge`]: the verdict and its evidence
//!   (with the `/proc` readers it rests on); [`lease_dir`]: the lease
//!   directory; [`state`]: the backoff file and its lock;
//! - [`rch`]: one recovery and rch's answers (the child, rch's release,
//!   its phrases, its daemon);
//! - [`sweep`]: the run's pipeline; [`route`]: what cron or a timer gives a
//!   run (the readers of `doctor --as`);
//! - [`cmd`]: the subcommands.
//!
//! No folder uses one above it (`layers_check.py`, run by `.ci/run`); the
//! decisions are plain functions over plain data, and the I/O stays at the
//! edges (README, "Development").

#![deny(unsafe_code)]

pub mod account;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod exit;
pub mod fsio;
pub mod human;
pub mod judge;
pub mod lease;
pub mod lease_dir;
pub mod log;
pub mod rch;
pub mod route;
pub mod shortage;
pub mod signals;
pub mod stat;
pub mod state;
pub mod sweep;
#[allow(unsafe_code)] // the one room of raw system calls: each block says why it holds
pub mod sys;

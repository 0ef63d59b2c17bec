//! rch-sweep: a one-shot recovery of dead rch client leases.
//!
//! The flow is preflight → scan → judge → plan → recover → record → report,
//! one module a step. Plain data sits at the bottom (`verdict`,
//! `observation`, `stat`, `evidence`); the decisions over it (`judge`,
//! `plan`, `exit`, `record`, `release` (which rch runs, and what that
//! release leaves and lacks), and the backoff arithmetic of
//! `state::backoff`) are functions over plain data; the modules around
//! them do the I/O: `lease` (rch's journal format and its bounded reader),
//! `lease_dir` (the directory: found, opened, listed, locked) and `owner`
//! read, `preflight` and `proc_locks` (with `mounts`) look, `child`, `recover` and
//! `dispatch` run `rch` (`daemon` asks it, and its daemon, which socket to
//! use and whether it answers), `state` (the backoff file and its lock),
//! `fsio` and `persist` write, `report`, `evidence_text`, `metrics` and
//! `log` speak. No module imports one above it (README, "Development").
//! Under all of them, `sys` is the one room that makes system calls std
//! does not wrap, and the only module allowed to (see its doc).

#![deny(unsafe_code)]

pub mod account;
pub mod answer;
pub mod child;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod crontab;
pub mod daemon;
pub mod dispatch;
pub mod evidence;
pub mod evidence_text;
pub mod exit;
pub mod fsio;
pub mod health;
pub mod held;
pub mod host;
pub mod human;
pub mod judge;
pub mod lease;
pub mod lease_dir;
pub mod log;
pub mod metrics;
pub mod metrics_peers;
pub mod mounts;
pub mod observation;
pub mod owner;
pub mod pam_env;
pub mod persist;
pub mod plan;
pub mod preflight;
pub mod proc_locks;
pub mod rch_env;
pub mod rch_says;
pub mod record;
pub mod recover;
pub mod release;
pub mod report;
pub mod route;
pub mod scan;
pub mod shell_words;
pub mod shortage;
pub mod signals;
pub mod stat;
pub mod state;
#[allow(unsafe_code)] // the one room of raw system calls: each block says why it holds
pub mod sys;
pub mod unit_file;
pub mod vars;
pub mod verdict;
pub mod wrappers;

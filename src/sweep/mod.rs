//! The run's pipeline, one room a step: preflight → scan → plan → dispatch
//! → record → report and persist, with the metrics a run leaves.
//!
//! - [`preflight`]: what a host must offer, as findings `run`, `forget` and
//!   `doctor` share;
//! - [`scan`]: one pass over the lease directory, every core judging;
//! - [`plan`]: order, backoff due, start budget, one per worker (pure);
//! - [`dispatch`]: a real run's recoveries, drawn on threads;
//! - [`record`]: each attempt into its backoff entry, report line and exit
//!   code;
//! - [`report`]: the summary for people and the JSON document;
//! - [`persist`]: what a run leaves behind (state, then metrics);
//! - [`held`]: a lease held without a start that reached rch's verdict,
//!   as `status`, `explain`, doctor and a quiet run's daily line tell it;
//! - [`metrics`] and [`metrics_peers`]: the metrics text, and another
//!   `.prom` file holding series for the same lease directory.
//!
//! May use: [`crate::rch`], [`crate::state`], [`crate::lease_dir`],
//! [`crate::judge`], [`crate::lease`] and the files at the top of `src/`.
//! Used by `cmd` alone.

pub mod dispatch;
pub mod held;
pub mod metrics;
pub mod metrics_peers;
pub mod persist;
pub mod plan;
pub mod preflight;
pub mod record;
pub mod report;
pub mod scan;

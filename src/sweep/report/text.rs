//! The run's summary for people: the table of candidates (and with
//! `--verbose` the skipped journals) and the one-line summary.

use super::{LeaseLine, LeaseOutcome, Summary};
use crate::exit::ExitCode;
use crate::human::{one_line, span, utc};
use crate::judge::verdict::SkipReason;
use crate::state::backoff::Hold;
use std::fmt::Write;
use std::time::Duration;

impl Summary {
    /// The table of candidates (when there are any, or with `verbose` the
    /// skipped journals too) and the one-line summary.
    pub fn human(&self, verbose: bool) -> String {
        let mut out = String::new();
        if !self.leases.is_empty() {
            self.table(&mut out);
        }
        if verbose && !self.skipped_list.is_empty() {
            let width = self
                .skipped_list
                .iter()
                .map(|s| s.file.len())
                .max()
                .unwrap_or(0);
            out.push_str("skipped:\n");
            for skipped in &self.skipped_list {
                let _ = write!(
                    out,
                    "  {:width$}  {}",
                    skipped.file,
                    skipped.reason.as_str()
                );
                if let Some(detail) = &skipped.detail {
                    let _ = write!(out, ": {detail}");
                }
                out.push('\n');
            }
        }
        if let Some(asked) = &self.rch {
            out.push_str(&asked.summary_line());
            out.push('\n');
        }
        if let Some(daemon) = &self.daemon {
            out.push_str(&daemon.line());
            out.push('\n');
        }
        out.push_str(&self.summary_line());
        out.push('\n');
        out
    }

    fn table(&self, out: &mut String) {
        let rows: Vec<[String; 5]> = self
            .leases
            .iter()
            .map(|line| {
                [
                    line.candidate.wrapper_id.clone(),
                    line.candidate.worker_id.clone(),
                    line.candidate.build_id.to_string(),
                    format!(
                        "{} ago",
                        span(
                            self.now_unix_ms
                                .saturating_sub(line.candidate.heartbeat_unix_ms)
                        )
                    ),
                    self.describe(line),
                ]
            })
            .collect();
        let header = ["WRAPPER", "WORKER", "BUILD", "HEARTBEAT", "OUTCOME"];
        let mut widths = header.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let header = header.map(str::to_owned);
        for row in std::iter::once(&header).chain(&rows) {
            let line: Vec<String> = row[..4]
                .iter()
                .zip(widths)
                .map(|(cell, width)| format!("{cell:width$}"))
                .collect();
            let _ = writeln!(out, "{}  {}", line.join("  "), row[4]);
        }
    }

    fn describe(&self, line: &LeaseLine) -> String {
        let retry = |failures: Option<u32>, next: Option<u64>| match (failures, next) {
            (Some(failures), Some(next)) => {
                // From the run's end, as `status` counts: a failure's
                // backoff runs from its attempt's end, which may lie
                // minutes after the run's start.
                let end = self
                    .now_unix_ms
                    .saturating_add(self.duration.as_millis() as u64);
                let when = if next <= end {
                    "retry next run".to_owned()
                } else {
                    format!("retry in {}", span(next - end))
                };
                format!(
                    "{failures} failure{}, {when}",
                    if failures == 1 { "" } else { "s" }
                )
            }
            _ => String::new(),
        };
        let held = |hold: Hold| match hold {
            Hold::Stuck => format!(
                "stuck: this rch never completes it, upgrade rch to 2.1.34 ({})",
                retry(line.failures(), line.next_attempt_unix_ms())
            ),
            Hold::DaemonRecordWait => match line.next_attempt_unix_ms() {
                Some(next) if next > self.now_unix_ms => format!(
                    "waiting until {}: rch finishes it once the lease is 24h old",
                    utc(next)
                ),
                // A heartbeat over a day old that rch still waits for (the
                // clocks disagree): retried next run, still uncharged.
                _ => "deferred: rch waits for the lease to be 24h old; retry next run".into(),
            },
        };
        let described = match (line.outcome, line.hold()) {
            (LeaseOutcome::Stuck | LeaseOutcome::BackingOff, Some(hold))
            | (LeaseOutcome::Deferred, Some(hold @ Hold::DaemonRecordWait)) => held(hold),
            (LeaseOutcome::Stuck, None) => "stuck".into(),
            // Why it waits: the error the JSON line carries, or for one a
            // real run did not start, the reason it holds it for.
            (LeaseOutcome::Deferred, _)
                if line.error().is_some() || (!self.dry_run && line.held().is_some()) =>
            {
                let why = line.error().or(line.held().map(|held| held.error.as_str()));
                let error = one_line(why.unwrap_or_default());
                return match self.held_for(line) {
                    Some(held_for) => format!("deferred, held for {held_for}: {error}"),
                    None => format!("deferred: {error}"),
                };
            }
            _ => self.describe_outcome(line, retry),
        };
        match (self.held_for(line), line.held()) {
            (Some(held_for), Some(_)) if line.hold().is_some() => {
                format!("{described} (held for {held_for})")
            }
            (Some(held_for), Some(held)) => format!(
                "{described} (held for {held_for}: {})",
                one_line(&held.error)
            ),
            _ => described,
        }
    }

    /// How long `line`'s lease has been held, when an earlier run began to
    /// hold it ("7h 0m").
    fn held_for(&self, line: &LeaseLine) -> Option<String> {
        line.held()
            .filter(|held| held.since_unix_ms < self.now_unix_ms)
            .map(|held| span(held.held_ms(self.now_unix_ms)))
    }

    fn describe_outcome(
        &self,
        line: &LeaseLine,
        retry: impl Fn(Option<u32>, Option<u64>) -> String,
    ) -> String {
        match line.outcome {
            LeaseOutcome::Recovered if line.note().is_some() => format!(
                "recovered in {} (finished by someone else)",
                seconds(line.duration().unwrap_or_default())
            ),
            LeaseOutcome::Recovered => format!(
                "recovered in {}",
                seconds(line.duration().unwrap_or_default())
            ),
            LeaseOutcome::Failed => format!(
                "failed after {} ({})",
                seconds(line.duration().unwrap_or_default()),
                retry(line.failures(), line.next_attempt_unix_ms())
            ),
            LeaseOutcome::BackingOff => format!(
                "backing off ({})",
                retry(line.failures(), line.next_attempt_unix_ms())
            ),
            LeaseOutcome::Interrupted => format!(
                "interrupted by {} after {} (not counted as a failure)",
                self.stop_signal(),
                seconds(line.duration().unwrap_or_default())
            ),
            LeaseOutcome::Vanished => "vanished (finished elsewhere)".into(),
            LeaseOutcome::Stuck => "stuck".into(),
            LeaseOutcome::Deferred => "deferred to the next run".into(),
            LeaseOutcome::WouldRecover => "would recover".into(),
        }
    }

    /// The name of the signal that stopped the run (the first one received
    /// decides the exit code, so the code names it).
    fn stop_signal(&self) -> &'static str {
        match self.exit_code {
            ExitCode::Signal(signal) => crate::signals::name(signal),
            _ => "a signal",
        }
    }

    fn summary_line(&self) -> String {
        let counts = self.counts();
        let mut line = format!(
            "scanned {} journal{} in {}",
            self.scanned,
            if self.scanned == 1 { "" } else { "s" },
            seconds(self.scan_duration)
        );
        let skipped: Vec<String> = SkipReason::ALL
            .iter()
            .filter(|reason| self.skipped[reason.index()] > 0)
            .map(|reason| format!("{} {}", self.skipped[reason.index()], reason.as_str()))
            .collect();
        if !skipped.is_empty() {
            let _ = write!(
                line,
                ": {} skipped ({})",
                self.skipped_total(),
                skipped.join(", ")
            );
        }
        if counts.candidates == 0 {
            line.push_str("; nothing to recover");
        } else if self.dry_run {
            let _ = write!(
                line,
                "; {} candidate{}: {} backing off, {} would recover, {} deferred (dry run: nothing started or written)",
                counts.candidates,
                if counts.candidates == 1 { "" } else { "s" },
                counts.backing_off,
                counts.would_recover,
                counts.deferred
            );
        } else {
            let _ = write!(
                line,
                "; {} candidate{}: {} backing off, {} recovered, {} failed, {} vanished, {} interrupted, {} deferred",
                counts.candidates,
                if counts.candidates == 1 { "" } else { "s" },
                counts.backing_off,
                counts.recovered,
                counts.failed,
                counts.vanished,
                counts.interrupted,
                counts.deferred
            );
        }
        if counts.stuck > 0 {
            let _ = write!(
                line,
                "; {} stuck (this rch never completes them: upgrade rch to 2.1.34)",
                counts.stuck
            );
        }
        if counts.attempted > 0 {
            let _ = write!(line, "; the run took {}", seconds(self.duration));
        }
        line
    }
}

/// "42ms" under a second, "8.1s" above.
fn seconds(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        format!("{}ms", duration.as_millis())
    } else {
        format!("{:.1}s", duration.as_secs_f64())
    }
}

//! A scan that runs out of descriptors is no scan (issue 34): when a host
//! shortage (EMFILE, ENFILE, ENOMEM, EAGAIN) keeps a journal, its owner's
//! `/proc/<pid>/stat` or the boot id from being read, the run must not
//! prune that lease's backoff as "no longer a candidate", must record no
//! success, and ends 75 naming the shortage. Run as an operator would
//! reproduce it: the real binary under `prlimit --nofile=N`.

mod common;

use common::wrap::wrapped;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

/// The metrics file of the runs given one.
const METRICS: &str = "sweep.prom";

/// The sweep of `world` with `--json`, one scan thread and (`metrics`) a
/// metrics file, under `prlimit --nofile=<nofile>` when given.
fn sweep(world: &World, rch: &Path, metrics: bool, nofile: Option<u32>) -> Output {
    let file = world.path(METRICS);
    let mut args = vec!["--json", "--rch", utf8(rch)];
    if metrics {
        args.extend_from_slice(&["--metrics-file", utf8(&file)]);
    }
    let mut inner = world.command(&args);
    inner.env("RCH_SWEEP_SCAN_THREADS", "1");
    let command = match nofile {
        Some(nofile) => {
            let limit = format!("--nofile={nofile}");
            wrapped(&["prlimit", &limit, "--"], &inner).output()
        }
        None => inner.output(),
    };
    command.expect("run rch-sweep")
}

fn document(output: &Output) -> Value {
    serde_json::from_str(&stdout(output)).unwrap_or_else(|error| {
        panic!(
            "stdout is not one JSON document ({error}): {}\nstderr: {}",
            stdout(output),
            stderr(output)
        )
    })
}

/// The fewest descriptors a run is given: stdin, stdout, stderr and not
/// one more.
const FEWEST: u32 = 3;

/// Whether the run under a limit got as far as its scan: a smaller limit
/// stops the binary before it reads anything (the loader, 127, or a lock
/// or the state file, 74).
fn started(output: &Output) -> bool {
    let text = stderr(output);
    matches!(output.status.code(), Some(0 | 75))
        || !(text.contains("Too many open files") || text.contains("Error 24"))
}

/// A run whose scan a shortage cut short: 75, the shortage named, SPEC's
/// reasons only in `skipped`, every entry and the last success as they
/// were, and (`metrics`) 75 in the metrics.
fn assert_cut_short(world: &World, metrics: bool, nofile: u32, output: &Output, before: &Value) {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(75), "nofile {nofile}: {text}");
    let document = document(output);
    assert_eq!(document["exit_code"], 75, "{document}");
    let error = document["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("host shortage") && error.contains("Too many open files"),
        "{document}"
    );
    let skipped = document["skipped"].as_object().expect("skipped");
    assert!(
        skipped
            .keys()
            .all(|reason| REASONS.contains(&reason.as_str())),
        "{document}"
    );
    assert!(text.contains("host shortage"), "{text}");
    if metrics {
        let metrics = std::fs::read_to_string(world.path(METRICS)).expect("metrics");
        assert!(
            metrics
                .lines()
                .any(|line| line.starts_with("rch_sweep_exit_code{") && line.ends_with("} 75")),
            "nofile {nofile}: {metrics}"
        );
    }
    let after = world.state();
    assert_eq!(
        after["leases"], before["leases"],
        "nofile {nofile}: {after}"
    );
    assert_eq!(
        after["last_success_unix_ms"], before["last_success_unix_ms"],
        "no success"
    );
    eprintln!("nofile {nofile}: {error}");
}

/// Raising the open-file limit from nothing: each run too starved to start
/// leaves the state alone; each that starts but cannot open what the scan
/// needs (the journal, then `/proc/self/stat`, the boot id,
/// `/proc/<pid>/stat`) is 75 and keeps every entry; the first that exits 0
/// judged all three journals (each a candidate, backing off). Returns how
/// many limits cut the scan short.
fn ladder(world: &World, rch: &Path, metrics: bool) -> usize {
    let before = world.state();
    let mut cut_short = 0;
    for nofile in FEWEST..64 {
        let output = sweep(world, rch, metrics, Some(nofile));
        if !started(&output) {
            let text = stderr(&output);
            assert_eq!(world.state(), before, "nofile {nofile}: {text}");
            continue;
        }
        if output.status.code() == Some(0) {
            assert_eq!(
                world.state()["leases"],
                before["leases"],
                "nofile {nofile}: exit 0, and the entries? {}",
                stdout(&output)
            );
            let document = document(&output);
            assert_eq!(
                document["skipped"],
                serde_json::json!({}),
                "nofile {nofile}: a run that exits 0 judged every journal: {document}"
            );
            assert_eq!(outcomes(&document).len(), 3, "{document}");
            return cut_short;
        }
        assert_cut_short(world, metrics, nofile, &output, &before);
        cut_short += 1;
    }
    panic!("no --nofile limit under 64 let the run succeed");
}

/// The reviewer's reproduction: three leases charged once, then a run
/// starved of descriptors; without and with a metrics file (which takes
/// a descriptor of its own before the scan).
#[test]
fn a_scan_out_of_descriptors_keeps_every_backoff_entry_and_exits_75() {
    if !tool_or_skip("/usr/bin/prlimit", "util-linux") {
        return;
    }
    let world = World::new();
    let journals = world.add_three_stale(["w1", "w2", "w3"]);
    let rch = world.fake_rch("rch", "exit 1");
    // A plain run charges each lease its first failure.
    let first = sweep(&world, &rch, false, None);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let before = world.state();
    for journal in &journals {
        assert_eq!(before["leases"][&journal.id]["failures"], 1, "{before}");
    }
    for metrics in [false, true] {
        let cut_short = ladder(&world, &rch, metrics);
        assert!(
            cut_short > 0,
            "metrics {metrics}: no limit cut the scan short"
        );
        assert_eq!(world.state()["leases"], before["leases"]);
    }
}

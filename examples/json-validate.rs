//! `json-validate`: serde_json's own validation of the files named, one
//! after another on one thread, each read whole and checked with
//! `serde_json::from_slice` (the call rch's loader makes), into
//! `IgnoredAny`, which keeps nothing. The baseline `scripts/bench.sh`
//! holds rch-sweep's judging of large journals to: a ratio to the JSON
//! parser itself holds across machines better than one to `cat`.
//!
//! ```text
//! cargo run --release --example json-validate -- FILE...
//! ```
//!
//! Exits 1 when any file cannot be read or is not one JSON value.

use serde::de::IgnoredAny;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut failed = false;
    for path in std::env::args_os().skip(1) {
        let verdict = std::fs::read(&path)
            .map_err(|error| error.to_string())
            .and_then(|bytes| {
                serde_json::from_slice::<IgnoredAny>(&bytes).map_err(|error| error.to_string())
            });
        if let Err(error) = verdict {
            eprintln!("json-validate: {}: {error}", path.to_string_lossy());
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

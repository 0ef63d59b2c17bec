//! Runs that see no daemon of the machine running the tests: each has the
//! world's own home and none of the host's `XDG_RUNTIME_DIR`,
//! `XDG_CACHE_HOME` or `XDG_CONFIG_HOME`, unless a test sets one.

use super::{World, one_document, stderr};
use serde_json::Value;
use std::fs;
use std::process::Command;

/// The binary for a run on `world` with `args`, with the world's own home
/// and none of the host's places for a daemon.
pub fn sweep(world: &World, args: &[&str]) -> Command {
    let mut command = world.command(args);
    isolate(world, &mut command);
    command
}

/// Gives `command` the world's home (and folder) and takes the host's
/// places for a daemon away.
pub fn isolate(world: &World, command: &mut Command) {
    let home = world.path("home");
    fs::create_dir_all(&home).expect("home");
    command
        .current_dir(world.dir.path())
        .env("HOME", &home)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("RCH_NO_UPDATE_CHECK")
        .env_remove("RCH_DISABLE_CONFIG_CACHE");
}

/// Runs it with `--json`: exit code, document, stderr.
pub fn run_json(mut command: Command) -> (i32, Value, String) {
    command.arg("--json");
    let output = command.output().expect("run rch-sweep");
    let document = one_document(&output);
    (
        output.status.code().unwrap_or(-1),
        document,
        stderr(&output),
    )
}

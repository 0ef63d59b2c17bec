//! Test support: a temporary lease directory with realistic journals (pretty
//! JSON in rch's key order, the field set of rch-lease-format.md §5), fake
//! `rch` scripts, and a runner for the real built binary.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};

pub mod account;
pub mod backoff;
pub mod doctor_rows;
pub mod isolated;
pub mod locks;
pub mod mounts;
pub mod private_host;
pub mod wrap;

pub const BIN: &str = env!("CARGO_BIN_EXE_rch-sweep");
pub const BOOT: &str = "3f1c2a9e-5b7d-4e2a-9c1f-0a1b2c3d4e5f";
/// Above Linux's largest possible PID (4194304): never a live process.
pub const DEAD_PID: u32 = 4_194_400;
pub const HOUR_MS: u64 = 3_600_000;

/// How rch finds its lease directory (rch-lease-format.md §5), as `sh`:
/// `$RCH_STATE_HOME/job-leases`, else `$XDG_STATE_HOME/rch/job-leases`, else
/// `$HOME/.local/state/rch/job-leases`, else `/tmp/rch/job-leases`. Sets
/// `$leases`; the fakes know nothing else about where journals are.
pub const RCH_LEASE_DIR_SH: &str = r#"if [ -n "$RCH_STATE_HOME" ]; then state="$RCH_STATE_HOME"
elif [ -n "$XDG_STATE_HOME" ]; then state="$XDG_STATE_HOME/rch"
elif [ -n "$HOME" ]; then state="$HOME/.local/state/rch"
else state=/tmp/rch; fi
leases="$state/job-leases""#;

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64
}

pub fn new_id() -> String {
    format!("rchw-{}", uuid::Uuid::new_v4())
}

/// A JSON value whose object keys keep the order they were given in, so
/// journals are written as rch's serde structs write them.
pub enum J {
    V(Value),
    O(Vec<(String, J)>),
}

impl J {
    fn get_mut(&mut self, key: &str) -> Option<&mut J> {
        match self {
            J::O(pairs) => pairs.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            J::V(_) => None,
        }
    }

    /// Sets `key` (appending it when absent); `None` removes it.
    pub fn set(&mut self, key: &str, value: Option<J>) {
        if let J::O(pairs) = self {
            match (pairs.iter().position(|(k, _)| k == key), value) {
                (Some(at), Some(value)) => pairs[at].1 = value,
                (Some(at), None) => {
                    pairs.remove(at);
                }
                (None, Some(value)) => pairs.push((key.to_owned(), value)),
                (None, None) => {}
            }
        }
    }

    pub fn pretty(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out
    }

    fn write(&self, out: &mut String, indent: usize) {
        match self {
            J::V(value) => {
                let text = serde_json::to_string_pretty(value).expect("serializable");
                out.push_str(&text.replace('\n', &format!("\n{}", "  ".repeat(indent))));
            }
            J::O(pairs) if pairs.is_empty() => out.push_str("{}"),
            J::O(pairs) => {
                out.push_str("{\n");
                for (index, (key, value)) in pairs.iter().enumerate() {
                    out.push_str(&"  ".repeat(indent + 1));
                    out.push_str(&serde_json::to_string(key).expect("key"));
                    out.push_str(": ");
                    value.write(out, indent + 1);
                    if index + 1 < pairs.len() {
                        out.push(',');
                    }
                    out.push('\n');
                }
                out.push_str(&"  ".repeat(indent));
                out.push('}');
            }
        }
    }
}

fn v(value: Value) -> J {
    J::V(value)
}

fn o(pairs: Vec<(&str, J)>) -> J {
    J::O(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// One journal, built from the §5.1 example and adjusted per test.
pub struct Journal {
    pub id: String,
    pub root: J,
}

impl Journal {
    /// An admitted, running job whose owner is dead and whose recipe still
    /// owns worker source: a candidate, given a stale heartbeat.
    pub fn dead_owner(worker: &str, build_id: u64, heartbeat_unix_ms: u64) -> Journal {
        let id = new_id();
        let recipe = o(vec![
            ("version", v(json!(2))),
            ("wrapper_id", v(json!(id))),
            ("build_id", v(json!(build_id))),
            (
                "worker",
                v(
                    json!({"id": worker, "host": "203.0.113.41", "user": "ubuntu",
                    "identity_file": "~/.ssh/rch_key", "total_slots": 64, "priority": 100,
                    "tags": [], "tools": []}),
                ),
            ),
            ("identity", v(json!("f012922922a54f779fcb0e9d7b475d56"))),
            (
                "completion",
                v(json!(format!(
                    "/data/tmp/rch/recovery-{build_id}-f012922922a54f779fcb0e9d7b475d56.done"
                ))),
            ),
            (
                "source_roots",
                v(json!([
                    "/data/projects/myproj",
                    "/data/projects/myproj/.rch-target"
                ])),
            ),
            ("pair", v(Value::Null)),
            ("retire_root", v(Value::Null)),
            (
                "transfer",
                v(json!({"compression_level": 3,
                    "exclude_patterns": ["target/", "*.rlib", "*.rmeta", ".git/"],
                    "remote_base": "/data/tmp/rch",
                    "retry": {"max_attempts": 3, "base_delay_ms": 100, "max_delay_ms": 5000,
                              "jitter_factor": 0.1, "total_timeout_ms": 30000},
                    "verify_artifacts": false, "verify_max_size_bytes": 104857600u64})),
            ),
            ("project_root", v(json!("/data/projects/myproj"))),
            ("kind", v(json!("cargo_build"))),
            ("expected_triple", v(json!("x86_64-unknown-linux-gnu"))),
            ("pinned_triple", v(Value::Null)),
            ("allow_foreign", v(json!(false))),
            ("package_archive", v(json!(false))),
            ("cargo_output_capture", v(Value::Null)),
            (
                "phases",
                v(json!([{"name": "project", "local": "/data/projects/myproj",
                    "remote": "/data/projects/myproj", "patterns": ["target/debug/**"],
                    "result_dir": null, "custom_target": false, "output_gate": true,
                    "cargo_outputs": null, "native_outputs": null,
                    "baseline": {"target/debug/myproj": "6e5c1f45cbaf19f94230ba3501c378a5335af71a331b5b5aed62792332288dc3"},
                    "published": {}, "pending": null, "complete": false, "missing_result": null}])),
            ),
            ("exit_code", v(Value::Null)),
            ("returned", v(Value::Null)),
            ("prepared", v(json!(true))),
            ("execution_started", v(json!(true))),
            ("preparation_cancelled", v(json!(false))),
            ("sources_released", v(json!(false))),
            ("tree_retired", v(json!(false))),
            ("pair_released", v(json!(false))),
            ("retired", v(json!(false))),
        ]);
        let root = o(vec![
            ("schema_version", v(json!(1))),
            (
                "identity",
                o(vec![
                    ("local_wrapper_id", v(json!(id))),
                    ("remote_build_id", v(json!(build_id))),
                ]),
            ),
            ("wrapper_pid", v(json!(DEAD_PID))),
            ("process_start_ticks", v(json!(123456789))),
            ("boot_id", v(json!(BOOT))),
            ("state", v(json!("running"))),
            ("phase", v(json!("execute"))),
            ("worker_id", v(json!(worker))),
            ("heartbeat_unix_ms", v(json!(heartbeat_unix_ms))),
            ("strict_remote", v(json!(false))),
            ("self_healing_enabled", v(json!(true))),
            (
                "command_fingerprint",
                v(json!(
                    "blake3:8928aae63c84d87ea098564d1e03ad813f107add474e56aedd286349c0c03ea4"
                )),
            ),
            ("terminal_acknowledged", v(json!(false))),
            ("recovery", recipe),
        ]);
        Journal { id, root }
    }

    /// A stale candidate on `worker` with a heartbeat `age_ms` in the past.
    pub fn stale(worker: &str, age_ms: u64) -> Journal {
        Journal::dead_owner(worker, 30052631078502447, now_ms() - age_ms)
    }

    /// Owned by this very process, recorded as rch records a live owner
    /// (`process_birth` with this boot and our start ticks): `owner_alive`.
    pub fn owned_by_this_process(self) -> Journal {
        self.set("wrapper_pid", json!(std::process::id()))
            .remove("boot_id")
            .remove("process_start_ticks")
            .set(
                "process_birth",
                json!({"boot_id": boot_id(), "start": {"platform": "linux", "ticks": own_start_ticks()}}),
            )
    }

    pub fn set(mut self, key: &str, value: Value) -> Journal {
        self.root.set(key, Some(J::V(value)));
        self
    }

    pub fn remove(mut self, key: &str) -> Journal {
        self.root.set(key, None);
        self
    }

    pub fn set_recipe(mut self, key: &str, value: Value) -> Journal {
        if let Some(recipe) = self.root.get_mut("recovery") {
            recipe.set(key, Some(J::V(value)));
        }
        self
    }

    pub fn remove_recipe(mut self, key: &str) -> Journal {
        if let Some(recipe) = self.root.get_mut("recovery") {
            recipe.set(key, None);
        }
        self
    }

    /// With `count` output files in the recipe's `baseline`, each with its
    /// fingerprint, as rch records them for a large workspace's build (one
    /// pretty-printed line of about 120 bytes each, so 26,000 make 3 MiB).
    pub fn with_outputs(self, count: usize) -> Journal {
        let baseline: serde_json::Map<String, Value> = (0..count)
            .map(|index| {
                let hash = fingerprint(index as u64);
                (
                    format!("target/debug/deps/crate{index}-{}.rlib", &hash[..16]),
                    Value::String(hash),
                )
            })
            .collect();
        self.set_recipe(
            "phases",
            json!([{"name": "project", "local": "/data/projects/myproj",
                "remote": "/data/projects/myproj", "patterns": ["target/debug/**"],
                "result_dir": null, "custom_target": false, "output_gate": true,
                "cargo_outputs": null, "native_outputs": null,
                "baseline": baseline, "published": {}, "pending": null,
                "complete": false, "missing_result": null}]),
        )
    }

    /// Delivered and retired, waiting only for the daemon: a settled handoff.
    pub fn settled(self, returned: i32) -> Journal {
        self.set_recipe("exit_code", json!(returned))
            .set_recipe("returned", json!(returned))
            .set_recipe("sources_released", json!(true))
            .set_recipe("tree_retired", json!(true))
            .set_recipe("pair_released", json!(true))
            .set_recipe("retired", json!(true))
    }

    /// What `rch jobs recover` leaves behind (§4.3).
    pub fn completed(self, exit: i32) -> Journal {
        self.settled(exit)
            .set_recipe("daemon_exit_code", json!(exit))
            .set("state", json!("finished"))
            .set("phase", json!("finished"))
            .set("terminal_acknowledged", json!(true))
            .set("exit_code", json!(exit))
    }

    pub fn text(&self) -> String {
        format!("{}\n", self.root.pretty())
    }

    pub fn file_name(&self) -> String {
        format!("{}.json", self.id)
    }
}

/// A 64-hex-digit stand-in for a blake3 fingerprint, different for each `n`.
pub fn fingerprint(n: u64) -> String {
    (0..4u64)
        .map(|part| {
            // splitmix64: well spread, and the same on every run.
            let mut z = (n * 4 + part)
                .wrapping_add(1)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            format!("{:016x}", z ^ (z >> 31))
        })
        .collect()
}

/// `examples/fake-rch`: rch's stand-in, also for `daemon status`.
pub const FAKE_RCH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/fake-rch");
/// `examples/fake-rchd`: rch's daemon's stand-in.
pub const FAKE_RCHD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/fake-rchd");

/// What a fake `rch` does for each kind of call ([`World::fake_rch_with`]).
#[derive(Default)]
pub struct FakeRch<'a> {
    /// Runs first, for every call (to log `$*`, say).
    pub first: &'a str,
    /// `--version`: its exit status is the last command's; by default it
    /// prints a version line.
    pub version: Option<&'a str>,
    /// `--capabilities` (wherever it stands, as rch reads it), as shell:
    /// by default rch 2.1.34's object ([`capabilities_says`]).
    pub capabilities: Option<&'a str>,
    /// `jobs recover <WRAPPER_ID> --timeout-secs <N>`, with `$leases` set
    /// (`jobs recover --help` prints a usage line and exits 0, as rch 2.1).
    pub recover: &'a str,
    /// Knows `daemon status` and asks the daemon before a recovery, as
    /// rch 2.1.24 does ([`World::daemon_rch`]); without, an older rch.
    pub daemon: bool,
}

/// Shell that prints what `rch --capabilities` prints for rch `release`
/// (the head of `build_capabilities_output`, pretty as rch prints it; the
/// real 2.1.16's and 2.1.34's are in tests/data/real-rch-<release>/).
pub fn capabilities_says(release: &str) -> String {
    format!(
        "printf '%s\\n' '{{' '  \"contract_version\": \"rch.capabilities.v1\",' '  \"schema_version\": \"1.1\",' '  \"version\": \"{release}\",' '  \"runtimes\": []' '}}'"
    )
}

/// How a [`FakeDaemon`] answers `GET /health` (`examples/fake-rchd --reply`).
#[derive(Clone, Copy, Debug)]
pub enum Reply {
    /// `HTTP/1.0 200 OK`, `{"status":"healthy",...}`: rchd when up.
    Healthy,
    /// `HTTP/1.0 200 OK`, `{"status":"starting",...}`.
    Starting,
    /// `HTTP/1.0 500 Internal Server Error`.
    Error,
    /// Closes the connection without a byte.
    Close,
    /// Accepts and never answers.
    Silent,
}

impl Reply {
    fn as_str(self) -> &'static str {
        match self {
            Reply::Healthy => "healthy",
            Reply::Starting => "starting",
            Reply::Error => "error",
            Reply::Close => "close",
            Reply::Silent => "silent",
        }
    }
}

/// `examples/fake-rchd` listening on a real Unix socket, speaking rch's
/// health protocol; stopped (and its socket removed) when dropped.
pub struct FakeDaemon {
    child: std::process::Child,
    pub socket: PathBuf,
    log: PathBuf,
}

impl FakeDaemon {
    /// Starts it at `socket` and returns once it accepts connections.
    pub fn start(socket: &Path, reply: Reply) -> FakeDaemon {
        FakeDaemon::launch(socket, reply, &mut Command::new("python3"), &[])
    }

    /// Started as `nobody` (needs root): another user's listener, as one
    /// planted at a shared path. The socket's folder must let `nobody` in
    /// and write there (the socket and its request log).
    pub fn start_as_nobody(socket: &Path, reply: Reply) -> FakeDaemon {
        FakeDaemon::launch(socket, reply, as_nobody(&mut Command::new("python3")), &[])
    }

    /// A healthy daemon whose health reply names rchd `release` (its
    /// `version`; `examples/fake-rchd --version`).
    pub fn of_release(socket: &Path, release: &str) -> FakeDaemon {
        FakeDaemon::launch(
            socket,
            Reply::Healthy,
            &mut Command::new("python3"),
            &["--version", release],
        )
    }

    /// A healthy daemon whose build history holds nothing (`--history
    /// forgotten`): it answers rch's build query `not_found`, as rchd does
    /// for a build it no longer knows.
    pub fn forgetting(socket: &Path) -> FakeDaemon {
        FakeDaemon::launch(
            socket,
            Reply::Healthy,
            &mut Command::new("python3"),
            &["--history", "forgotten"],
        )
    }

    fn launch(socket: &Path, reply: Reply, python: &mut Command, extra: &[&str]) -> FakeDaemon {
        use std::io::BufRead;
        let log = socket.with_extension("requests");
        let mut child = python
            .arg(FAKE_RCHD)
            .arg("--socket")
            .arg(socket)
            .args(["--reply", reply.as_str(), "--log"])
            .arg(&log)
            .args(extra)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start examples/fake-rchd");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("fake-rchd's ready line");
        assert!(
            line.starts_with("fake-rchd: ready"),
            "fake-rchd said {line:?}"
        );
        FakeDaemon {
            child,
            socket: socket.to_path_buf(),
            log,
        }
    }

    /// The health requests it was sent (a connection that sent nothing
    /// logs an empty line: no request).
    pub fn requests(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .map(|text| text.lines().filter(|line| !line.is_empty()).count())
            .unwrap_or(0)
    }

    /// Stops it (SIGTERM: it removes its socket) and waits for it.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        // SAFETY: kill only sends a signal to our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

impl Drop for FakeDaemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.halt();
        }
    }
}

/// A temporary world: `leases/`, a state file path, fake scripts.
pub struct World {
    pub dir: tempfile::TempDir,
}

impl World {
    pub fn new() -> World {
        let world = World {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        std::fs::create_dir(world.leases()).expect("leases dir");
        world
    }

    pub fn leases(&self) -> PathBuf {
        self.dir.path().join("job-leases")
    }

    pub fn state_file(&self) -> PathBuf {
        self.dir.path().join("state/backoff.json")
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn add(&self, journal: &Journal) -> PathBuf {
        let path = self.leases().join(journal.file_name());
        std::fs::write(&path, journal.text()).expect("write journal");
        path
    }

    /// Three due leases, oldest first (dead for 3, 2 and 1 hours), on
    /// `workers`, added to the lease dir.
    pub fn add_three_stale(&self, workers: [&str; 3]) -> [Journal; 3] {
        let journals = [
            Journal::stale(workers[0], 3 * HOUR_MS),
            Journal::stale(workers[1], 2 * HOUR_MS),
            Journal::stale(workers[2], HOUR_MS),
        ];
        for journal in &journals {
            self.add(journal);
        }
        journals
    }

    pub fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.leases().join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    }

    /// An executable `/bin/sh` script at `name` in the world.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    /// A command for the binary with the world's lease dir and state file
    /// and an environment that cannot leak the host's settings in.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = World::bare_command();
        command
            .arg("--lease-dir")
            .arg(self.leases())
            .arg("--state-file")
            .arg(self.state_file())
            .args(args);
        command
    }

    /// The binary with no paths given and the host's settings removed.
    pub fn bare_command() -> Command {
        let mut command = Command::new(BIN);
        for var in [
            "RCH_SWEEP_LEASE_DIR",
            "RCH_SWEEP_STATE_FILE",
            "RCH_SWEEP_RCH",
            "RCH_SOCKET_PATH",
            "RCH_DAEMON_SOCKET",
            "RCH_SWEEP_METRICS_FILE",
            "RCH_SWEEP_SCAN_THREADS",
            "RCH_STATE_HOME",
            "XDG_STATE_HOME",
            "XDG_RUNTIME_DIR",
            "XDG_CACHE_HOME",
            "XDG_CONFIG_HOME",
            "JOURNAL_STREAM",
        ] {
            command.env_remove(var);
        }
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run rch-sweep")
    }

    /// Runs with `--json` and returns (exit code, document).
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let output = self.run(&all);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let document = serde_json::from_str(&stdout).unwrap_or_else(|error| {
            panic!(
                "stdout is not one JSON document ({error}): {stdout}\nstderr: {}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
        (output.status.code().unwrap_or(-1), document)
    }

    /// A fake `rch` at `name` that answers like an rch without the
    /// `daemon status` command: `body` runs for `jobs recover ...` only,
    /// after `$leases` was set to the lease directory exactly as rch finds
    /// it ([`RCH_LEASE_DIR_SH`]), so a stand-in knows no more than the real
    /// client; `--version` prints a version; anything else (`--json
    /// --format json daemon status` included) is a usage error, exit 2.
    /// Every fake `rch` of the tests is made here or by
    /// [`World::fake_rch_with`].
    pub fn fake_rch(&self, name: &str, body: &str) -> PathBuf {
        self.fake_rch_with(
            name,
            &FakeRch {
                recover: body,
                ..FakeRch::default()
            },
        )
    }

    /// A fake `rch` that knows its daemon, as rch 2.1.24 does: `daemon
    /// status` is answered by `examples/fake-rch` (the socket resolved as
    /// rch resolves it, `running` from a real health request), and `jobs
    /// recover` asks the daemon first and exits 1 when it does not answer
    /// healthy, before `body` runs.
    pub fn daemon_rch(&self, name: &str, body: &str) -> PathBuf {
        self.fake_rch_with(
            name,
            &FakeRch {
                recover: body,
                daemon: true,
                ..FakeRch::default()
            },
        )
    }

    /// A fake `rch` as `spec` says (see [`FakeRch`]).
    pub fn fake_rch_with(&self, name: &str, spec: &FakeRch<'_>) -> PathBuf {
        let version = spec
            .version
            .unwrap_or("echo 'rch 2.1.34 (fake, rch-sweep tests)'");
        let default_capabilities = capabilities_says("2.1.34");
        let capabilities = spec.capabilities.unwrap_or(&default_capabilities);
        let daemon_status = if spec.daemon {
            format!("exec python3 '{FAKE_RCH}' \"$@\"")
        } else {
            "echo \"error: unrecognized subcommand 'daemon'\" >&2\nexit 2".to_owned()
        };
        let ask_daemon = if spec.daemon {
            format!(
                "rch_daemon=$(python3 '{FAKE_RCH}' --json --format json daemon status) || exit 1\n\
                 case \"$rch_daemon\" in *'\"running\": true'*) ;; \
                 *) echo \"rch: [RCH-E504] cannot reach rch's daemon: $rch_daemon\" >&2; exit 1 ;; esac"
            )
        } else {
            String::new()
        };
        self.script(
            name,
            &format!(
                "{first}\n\
                 case \" $* \" in *' --capabilities '*)\n{capabilities}\nexit ;; esac\n\
                 if [ \"$*\" = --version ]; then\n{version}\nexit\nfi\n\
                 if [ \"$*\" = '--json --format json daemon status' ]; then\n{daemon_status}\nfi\n\
                 if [ \"$*\" = 'jobs recover --help' ]; then\n\
                 echo 'Usage: rch jobs recover [OPTIONS] <WRAPPER_ID>'\nexit 0\nfi\n\
                 if [ \"$1 $2\" != 'jobs recover' ]; then\n\
                 echo \"rch: usage: rch jobs recover <WRAPPER_ID> --timeout-secs <N> (fake; got: $*)\" >&2\nexit 2\nfi\n\
                 {RCH_LEASE_DIR_SH}\n{ask_daemon}\n{recover}",
                first = spec.first,
                recover = spec.recover,
            ),
        )
    }

    /// A fake rch that does what a successful `rch jobs recover` does to the
    /// journal: installs `done/<id>.json` (written by [`World::will_complete`])
    /// over it, then exits 0. A lease with no such file fails (`cp` exits 1).
    pub fn completing_rch(&self) -> PathBuf {
        self.completing(false)
    }

    /// [`World::completing_rch`] that knows its daemon, as
    /// [`World::daemon_rch`]: it recovers only while the daemon answers.
    pub fn completing_daemon_rch(&self) -> PathBuf {
        self.completing(true)
    }

    fn completing(&self, daemon: bool) -> PathBuf {
        std::fs::create_dir_all(self.path("done")).expect("mkdir done");
        let body = format!(
            "cp \"{done}/$3.json\" \"$leases/$3.json\"",
            done = self.path("done").display(),
        );
        self.fake_rch_with(
            "rch",
            &FakeRch {
                recover: &body,
                daemon,
                ..FakeRch::default()
            },
        )
    }

    /// Adds `journal` to the lease dir and prepares what [`World::completing_rch`]
    /// leaves behind for it: the same lease, completed with exit code 0.
    pub fn will_complete(&self, journal: Journal) -> String {
        self.add(&journal);
        let id = journal.id.clone();
        let done = self.path("done");
        std::fs::create_dir_all(&done).expect("mkdir done");
        std::fs::write(done.join(journal.file_name()), journal.completed(0).text())
            .expect("write completed journal");
        id
    }

    pub fn state(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.state_file()).expect("state file"))
            .expect("state parses")
    }
}

/// Wrapper ids of the `leases` array, in order, with their outcomes.
pub fn outcomes(document: &Value) -> Vec<(String, String)> {
    document["leases"]
        .as_array()
        .expect("leases array")
        .iter()
        .filter(|lease| lease["outcome"] != "skipped")
        .map(|lease| {
            (
                lease["wrapper_id"].as_str().unwrap_or_default().to_owned(),
                lease["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Whether a process exists (and is not a zombie).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rfind(") ")
                .map(|at| !matches!(stat.as_bytes().get(at + 2), Some(b'Z' | b'X')))
        })
        .unwrap_or(false)
}

/// Waits up to `seconds` for `pid` to be gone.
pub fn gone_within(pid: u32, seconds: u64) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while std::time::Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    !alive(pid)
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// This process's start time in clock ticks (field 22 of `/proc/self/stat`):
/// what rch records for a live owner.
pub fn own_start_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("own stat");
    let after = &stat[stat.rfind(") ").expect("comm") + 2..];
    after
        .split_whitespace()
        .nth(19)
        .and_then(|ticks| ticks.parse().ok())
        .expect("start ticks")
}

/// This machine's boot id, as rch records it.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .expect("boot id")
        .trim()
        .to_owned()
}

/// The skip reasons, in the order of SPEC's table (which is also the order
/// `explain` runs its checks in).
pub const REASONS: [&str; 12] = [
    "not_regular",
    "bad_name",
    "foreign_owner",
    "unreadable",
    "malformed",
    "terminal",
    "not_owning",
    "not_admitted",
    "heartbeat_fresh",
    "no_pid",
    "owner_alive",
    "owner_unverified",
];

/// Makes a FIFO at `path`: an entry that would hang a careless reader.
pub fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL");
    // SAFETY: a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// What a path is, as `lstat` shows it: type, size, mode, owner, inode and
/// modification time. Two snapshots that are equal saw nothing written,
/// renamed, created or removed.
#[derive(Debug, PartialEq, Eq)]
pub struct Seen {
    pub kind: String,
    pub size: u64,
    pub mode: u32,
    pub uid: u32,
    pub ino: u64,
    pub mtime_ns: i128,
}

/// Every path under `dir` (and `dir` itself) with what `lstat` shows of it.
pub fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Seen> {
    use std::os::unix::fs::MetadataExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    let seen = |meta: std::fs::Metadata| Seen {
        kind: format!("{:?}", meta.file_type()),
        size: meta.len(),
        mode: meta.mode(),
        uid: meta.uid(),
        ino: meta.ino(),
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
    };
    if let Ok(meta) = std::fs::symlink_metadata(dir) {
        out.insert(dir.to_path_buf(), seen(meta));
    }
    while let Some(path) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries {
            let entry = entry.expect("entry");
            let meta = std::fs::symlink_metadata(entry.path()).expect("lstat");
            if meta.is_dir() {
                stack.push(entry.path());
            }
            out.insert(entry.path(), seen(meta));
        }
    }
    out
}

/// The uid (and gid) tests drop to when they need another user: `nobody`.
pub const NOBODY: u32 = 65534;

/// Gives `path` to `nobody`.
pub fn give_to_nobody(path: &Path) {
    std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).expect("chown to nobody");
}

impl World {
    /// Makes the world `nobody`'s to sweep: traversable by all, the lease
    /// directory, its journals and the state folder owned by `nobody`.
    /// Needs root.
    pub fn hand_to_nobody(&self) {
        std::fs::set_permissions(self.dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod world");
        give_to_nobody(&self.leases());
        for entry in std::fs::read_dir(self.leases()).expect("list") {
            give_to_nobody(&entry.expect("entry").path());
        }
        let state = self.state_file();
        let folder = state.parent().expect("state folder");
        std::fs::create_dir_all(folder).expect("mkdir state");
        give_to_nobody(folder);
    }

    /// The binary with `args`, a leading subcommand (`status`, `forget`,
    /// `explain`, `doctor`) first, then the world's lease dir and state file.
    pub fn sub(&self, args: &[&str]) -> Command {
        let mut command = World::bare_command();
        let rest = match args.first() {
            Some(&sub) if matches!(sub, "status" | "forget" | "explain" | "doctor") => {
                command.arg(sub);
                &args[1..]
            }
            _ => args,
        };
        command
            .arg("--lease-dir")
            .arg(self.leases())
            .arg("--state-file")
            .arg(self.state_file())
            .args(rest);
        command
    }
}

/// Runs `command` as `nobody`.
pub fn as_nobody(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    command.uid(NOBODY).gid(NOBODY)
}

/// Parses stdout as exactly one JSON document (one line), naming stderr
/// when it is not.
pub fn one_document(output: &Output) -> Value {
    let text = stdout(output);
    assert_eq!(
        text.lines().count(),
        1,
        "not one line on stdout: {text}\nstderr: {}",
        stderr(output)
    );
    serde_json::from_str(&text).unwrap_or_else(|error| {
        panic!(
            "stdout is not a JSON document ({error}): {text}\nstderr: {}",
            stderr(output)
        )
    })
}

/// Checks an error document: `{"version": 1, "exit_code": code, "error"}`
/// and nothing else, the error naming `words`.
pub fn assert_error_document(output: &Output, code: i32, words: &str) {
    assert_eq!(output.status.code(), Some(code), "{}", stderr(output));
    let document = one_document(output);
    let keys: Vec<&String> = document.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["error", "exit_code", "version"], "{document}");
    assert_eq!(document["version"], 1);
    assert_eq!(document["exit_code"], code);
    let error = document["error"].as_str().expect("error string");
    assert!(error.contains(words), "{error:?} lacks {words:?}");
}

/// Needs root (another user, a PID namespace, a mount); says so when it
/// cannot run. CI runs as root, so there it always runs: under CI a test
/// that would skip fails instead, so the mount, namespace and other-user
/// tests can never pass there by not running.
pub fn root_or_skip(test: &str) -> bool {
    if !is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test} needs root, and CI runs as root: run `bash .ci/run` as root"
        );
        eprintln!("{test}: skipped: needs root (CI runs as root)");
    }
    is_root()
}

/// Whether the tool at `path` is installed: outside CI a test without it
/// says it skipped; under CI (which installs `package`) its absence fails.
pub fn tool_or_skip(path: &str, package: &str) -> bool {
    if std::path::Path::new(path).exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{path} is missing; .ci/run installs {package}"
    );
    eprintln!("skipped: {path} is not installed (apt-get install {package})");
    false
}

//! `gen-leases`: writes a deterministic lease directory of rch journals, for
//! benchmarking rch-sweep's scan and plan on large directories.
//!
//! ```text
//! cargo run --release --example gen-leases -- --count 100000 --dir DIR \
//!     [--seed 42] [--now-ms MS] [--live-pid PID] [--candidates N] [--only KIND] \
//!     [--journal-bytes B]
//! ```
//!
//! Every file is a `rchw-<uuid>.json` journal pretty-printed like rch's own
//! (`serde_json::to_vec_pretty`, keys in declaration order), with a full
//! recovery recipe. The mix is fixed by index (`index % 20`), the contents are
//! fixed by `--seed` and `--now-ms`; with the verdict rch-sweep should give:
//!
//! | share | kind | verdict |
//! |---|---|---|
//! | 60 % | finished and acknowledged (mostly the shape of a recovered or self-finished job, some without a recipe) | `terminal` |
//! | 15 % | running, heartbeat a few seconds to minutes before `--now-ms` | `heartbeat_fresh` |
//! | 10 % | stale, owned by `--live-pid` with no recorded identity | `owner_unverified` while that PID exists (it may have been reused) |
//! | 5 % | stale, dead owner, recipe retired but with no delivery result | `not_owning` |
//! | 5 % | stale, dead owner (PID above Linux's limit), unretired source | candidate |
//! | 5 % | hostile, in rotation: truncated JSON, `schema_version` 2, id/name mismatch, JSON nested 10,000 deep, a byte that is not UTF-8 in the recipe's last string, binary garbage | `malformed` |
//!
//! The kind of a file depends only on its index; the names are random UUIDs,
//! so kinds are shuffled in directory order. A journal is about 3.5 KB:
//! `--count 100000` writes about 350 MB, 1,000,000 about 3.5 GB. (Until
//! journals up to 64 MiB were read, one hostile journal in 120 was a
//! recoverable one padded to 1.5 MiB, past the old 1 MiB limit; past 64 MiB
//! such files would take 53 GB per 100,000, so large journals have a
//! benchmark of their own: `--journal-bytes`.)
//!
//! `--candidates N` writes at most N candidates; the later candidate slots
//! become `not_owning` journals of the same size, so directories of any size
//! can hold the same candidates (to show that memory grows with candidates
//! only). `--only KIND` writes every journal as that kind (`terminal`,
//! `fresh`, `live_owner`, `not_owning`, `candidate`, `hostile`).
//! `--journal-bytes B` pads every journal with a recipe to at least B bytes
//! with output files, as a large workspace's build records them: each a
//! pretty-printed `"target/debug/deps/<name>.rlib": "<64 hex>"` line in the
//! phase's `baseline`, every other one also in `published` (a delivery cut
//! short half way), so `--only candidate --journal-bytes 8388608` writes
//! candidates of 8 MiB.
//!
//! `--live-pid` defaults to the shell that started the generator (the parent,
//! or the grandparent when the parent is `cargo run`): sweep from that same
//! shell, or pass the PID of a process that outlives the benchmark. Once that
//! process is gone, the live-owner journals become candidates. Fresh journals
//! record that PID too, with its real identity when `/proc` shows it, so after
//! they age past `--stale-after` they are `owner_alive` while it lives. Pass
//! `--now-ms` to pin every heartbeat (and the output) for a reproducible set.

use std::borrow::Cow;
use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

const USAGE: &str = "usage: gen-leases --count N --dir DIR [--seed S] [--now-ms MS] [--live-pid PID] [--candidates N] [--only KIND] [--journal-bytes B]";

/// Linux never hands out a PID at or above this (`PID_MAX_LIMIT`), so an owner
/// recorded above it is provably gone on any machine.
const PID_MAX_LIMIT: u64 = 4_194_304;
const MINUTE_MS: u64 = 60_000;
const HOUR_MS: u64 = 60 * MINUTE_MS;
const DAY_MS: u64 = 24 * HOUR_MS;
/// Stands in for the wrapper id in the self-check's templates.
const TEMPLATE_ID: &str = "rchw-00000000-0000-4000-8000-000000000000";

#[rustfmt::skip]
const WORKERS: [&str; 40] = [
    "hz1", "hz2", "hz3", "hz4", "hz5", "hz6", "hz7", "hz8", "w1", "w2",
    "w3", "w4", "w5", "w6", "fsn1", "fsn2", "fsn3", "nbg1", "nbg2", "hel1",
    "hel2", "ash1", "ash2", "hil1", "ovh1", "ovh2", "ovh3", "gra1", "sbg1", "waw1",
    "lim1", "vmi1227854", "vmi1303311", "m1-mini", "m2-studio", "arm1", "arm2", "gpu1", "big1", "big2",
];
const USERS: [&str; 4] = ["ubuntu", "rch", "builder", "ci"];
const REMOTE_BASES: [&str; 3] = ["/data/tmp/rch", "/home/rch/tmp", "/srv/rch/tmp"];
#[rustfmt::skip]
const PROJECTS: [&str; 24] = [
    "ledgerd", "parser-kit", "geo-tiles", "img-pipeline", "atlas-api", "webhook-relay",
    "mailroom", "tokio-bench", "search-core", "billing", "edge-proxy", "metrics-agent",
    "vault-sync", "chat-gateway", "pdf-render", "route-planner", "feature-flags", "auth-svc",
    "log-shipper", "kv-store", "scheduler", "notebook", "wasm-runtime", "cli-tools",
];
const KINDS: [&str; 5] = [
    "cargo_build",
    "cargo_test",
    "cargo_check",
    "cargo_clippy",
    "cargo_doc",
];
const PHASES: [&str; 4] = ["sync_up", "execute", "sync_down", "finalize"];
const PATTERNS: [&str; 5] = [
    "target/debug/**",
    "target/release/**",
    "target/*/debug/**",
    "target/*/release/**",
    "target/doc/**",
];
const EXCLUDES: [&str; 7] = [
    "target/",
    "*.rlib",
    "*.rmeta",
    ".git/",
    "node_modules/",
    ".env",
    "*.pem",
];

// ---------------------------------------------------------------- randomness

/// SplitMix64: tiny, fast and good enough to vary benchmark fixtures.
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    /// One stream per file, so a file's content depends only on the seed and its index.
    fn for_index(seed: u64, index: u64) -> Self {
        let mut rng = Rng(seed ^ index.wrapping_add(1).wrapping_mul(0xD1B5_4A32_D192_ED03));
        rng.next_u64();
        rng
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform enough in `lo..hi` (`hi > lo`).
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo)
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.next_u64().is_multiple_of(one_in)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next_u64() % items.len() as u64) as usize]
    }

    fn hex(&mut self, bytes: usize) -> String {
        let mut out = String::with_capacity(bytes * 2);
        for _ in 0..bytes.div_ceil(8) {
            let _ = write!(out, "{:016x}", self.next_u64());
        }
        out.truncate(bytes * 2);
        out
    }

    /// A random (version 4) UUID, canonical lowercase hyphenated.
    fn uuid(&mut self) -> String {
        let (a, b) = (self.next_u64(), self.next_u64());
        let b = (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000; // variant 10
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xFFFF,
            a & 0x0FFF,
            b >> 48,
            b & 0xFFFF_FFFF_FFFF
        )
    }
}

// ------------------------------------------------------ ordered JSON + printer

/// A JSON value that keeps key order (serde_json's `Value` sorts keys unless
/// its `preserve_order` feature is on, and rch's journals are in struct order).
enum J {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(Cow<'static, str>, J)>),
}

fn s(text: &str) -> J {
    J::Str(text.to_owned())
}

fn u(n: u64) -> J {
    J::Int(n as i64)
}

fn obj(fields: Vec<(&'static str, J)>) -> J {
    J::Obj(
        fields
            .into_iter()
            .map(|(k, v)| (Cow::Borrowed(k), v))
            .collect(),
    )
}

fn strs(items: &[&str]) -> J {
    J::Arr(items.iter().map(|item| s(item)).collect())
}

fn opt(value: Option<i64>) -> J {
    value.map_or(J::Null, J::Int)
}

fn push_str(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// Pretty-prints like `serde_json::to_vec_pretty`: 2-space indent, `"key": value`,
/// empty containers as `[]` / `{}`, no trailing newline.
fn render(value: &J, depth: usize, out: &mut String) {
    match value {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Int(n) => {
            let _ = write!(out, "{n}");
        }
        J::Float(x) if x.fract() == 0.0 => {
            let _ = write!(out, "{x:.1}");
        }
        J::Float(x) => {
            let _ = write!(out, "{x}");
        }
        J::Str(text) => push_str(out, text),
        J::Arr(items) if items.is_empty() => out.push_str("[]"),
        J::Obj(fields) if fields.is_empty() => out.push_str("{}"),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                indent(out, depth + 1);
                render(item, depth + 1, out);
            }
            out.push('\n');
            indent(out, depth);
            out.push(']');
        }
        J::Obj(fields) => {
            out.push('{');
            for (i, (key, item)) in fields.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                indent(out, depth + 1);
                push_str(out, key);
                out.push_str(": ");
                render(item, depth + 1, out);
            }
            out.push('\n');
            indent(out, depth);
            out.push('}');
        }
    }
}

fn to_pretty(value: &J) -> String {
    let mut out = String::with_capacity(4096);
    render(value, 0, &mut out);
    out
}

// ------------------------------------------------------------------ journals

/// The owner evidence a journal records.
enum Owner {
    /// `process_start_ticks` + `boot_id` (what current Linux clients write).
    Legacy { ticks: u64, boot: String },
    /// `process_birth` (native evidence).
    Birth { ticks: u64, boot: String },
    /// Nothing recorded: the owner counts as alive while its PID exists.
    Unrecorded,
}

/// How far the recovery recipe got.
#[derive(Clone, Copy, PartialEq)]
enum Progress {
    /// Sources owned, nothing delivered (`retired: false`).
    Running,
    /// Marked retired, but no delivery result: neither owning nor settled.
    RetiredUnsettled,
    /// Delivered and retired with this result; `daemon` adds `daemon_exit_code`.
    Settled {
        code: i64,
        remote: i64,
        daemon: bool,
    },
}

struct Lease {
    wrapper_id: String,
    build_id: u64,
    pid: u64,
    owner: Owner,
    state: &'static str,
    phase: &'static str,
    worker: usize,
    heartbeat_ms: u64,
    acknowledged: bool,
    recipe: Option<Progress>,
    exit_code: Option<i64>,
    schema_version: u64,
}

fn worker_config(w: usize) -> J {
    obj(vec![
        ("id", s(WORKERS[w])),
        (
            "host",
            J::Str(format!("10.{}.{}.{}", 20 + w % 4, w / 4, 11 + w)),
        ),
        ("user", s(USERS[w % USERS.len()])),
        ("identity_file", s("~/.ssh/rch_key")),
        ("total_slots", u([16, 24, 32, 48, 64][w % 5])),
        ("priority", u(50 + (w as u64 * 7) % 60)),
        (
            "tags",
            if w.is_multiple_of(3) {
                strs(&["x86_64", "nvme"])
            } else {
                J::Arr(vec![])
            },
        ),
        ("tools", J::Arr(vec![])),
    ])
}

fn transfer(w: usize) -> J {
    obj(vec![
        ("compression_level", u(3)),
        ("exclude_patterns", strs(&EXCLUDES)),
        ("remote_base", s(REMOTE_BASES[w % REMOTE_BASES.len()])),
        (
            "retry",
            obj(vec![
                ("max_attempts", u(3)),
                ("base_delay_ms", u(100)),
                ("max_delay_ms", u(5000)),
                ("jitter_factor", J::Float(0.1)),
                ("total_timeout_ms", u(30000)),
            ]),
        ),
        ("verify_artifacts", J::Bool(false)),
        ("verify_max_size_bytes", u(104_857_600)),
        ("adaptive_compression", J::Bool(true)),
        ("min_compression_level", u(1)),
        ("max_compression_level", u(9)),
    ])
}

/// Output paths and their blake3-style hashes (`extra` adds many, for a large journal).
fn outputs(rng: &mut Rng, project: &str, kind: &str, extra: usize) -> Vec<(Cow<'static, str>, J)> {
    let crate_name = project.replace('-', "_");
    let count = rng.range(1, 3) as usize;
    let mut out = Vec::with_capacity(count + extra);
    for i in 0..count + extra {
        let path = match (i, kind) {
            (0, "cargo_build") => format!("target/release/{project}"),
            (0, _) => format!("target/debug/deps/{crate_name}-{}", rng.hex(8)),
            (1, _) => format!("target/debug/{project}"),
            _ => format!(
                "target/debug/deps/lib{crate_name}_{i:05}-{}.rlib",
                rng.hex(8)
            ),
        };
        out.push((Cow::Owned(path), J::Str(rng.hex(32))));
    }
    out
}

fn recipe(rng: &mut Rng, lease: &Lease, progress: Progress, extra_outputs: usize) -> J {
    let w = lease.worker;
    let project = *rng.pick(&PROJECTS);
    let kind = *rng.pick(&KINDS);
    let root = format!("/data/projects/{project}");
    let token = rng.hex(16);
    let baseline = outputs(rng, project, kind, extra_outputs);
    let done = progress != Progress::Running;
    let published: Vec<_> = match progress {
        Progress::Settled { .. } => baseline
            .iter()
            .map(|(k, _)| (k.clone(), J::Str(rng.hex(32))))
            .collect(),
        // A large build whose delivery was cut short half way.
        _ if extra_outputs > 0 => baseline
            .iter()
            .step_by(2)
            .map(|(k, _)| (k.clone(), J::Str(rng.hex(32))))
            .collect(),
        _ => Vec::new(),
    };
    let (remote_exit, returned, daemon) = match progress {
        Progress::Running => (None, None, None),
        Progress::RetiredUnsettled => (Some(0), None, None),
        Progress::Settled {
            code,
            remote,
            daemon,
        } => (Some(remote), Some(code), daemon.then_some(code)),
    };
    let phase = obj(vec![
        ("name", s("project")),
        ("local", s(&root)),
        ("remote", s(&root)),
        ("patterns", strs(&PATTERNS)),
        ("result_dir", J::Null),
        ("custom_target", J::Bool(false)),
        ("output_gate", J::Bool(true)),
        ("cargo_outputs", J::Null),
        ("native_outputs", J::Null),
        ("baseline", J::Obj(baseline)),
        ("published", J::Obj(published)),
        ("pending", J::Null),
        (
            "complete",
            J::Bool(matches!(progress, Progress::Settled { .. })),
        ),
        ("missing_result", J::Null),
    ]);
    let mut fields = vec![
        ("version", u(2)),
        ("wrapper_id", s(&lease.wrapper_id)),
        ("build_id", u(lease.build_id)),
        ("worker", worker_config(w)),
        ("identity", s(&token)),
        (
            "completion",
            J::Str(format!(
                "{}/recovery-{}-{token}.done",
                REMOTE_BASES[w % REMOTE_BASES.len()],
                lease.build_id
            )),
        ),
        (
            "source_roots",
            J::Arr(vec![s(&root), J::Str(format!("{root}/.rch-target"))]),
        ),
        ("pair", J::Null),
        ("retire_root", J::Null),
        ("transfer", transfer(w)),
        ("project_root", s(&root)),
        ("kind", s(kind)),
        ("expected_triple", s("x86_64-unknown-linux-gnu")),
        ("pinned_triple", J::Null),
        ("allow_foreign", J::Bool(false)),
        ("package_archive", J::Bool(false)),
        ("cargo_output_capture", J::Null),
        ("phases", J::Arr(vec![phase])),
        ("exit_code", opt(remote_exit)),
        ("returned", opt(returned)),
    ];
    if let Some(code) = daemon {
        fields.push(("daemon_exit_code", J::Int(code)));
    }
    fields.extend([
        ("prepared", J::Bool(true)),
        ("execution_started", J::Bool(true)),
        ("preparation_cancelled", J::Bool(false)),
        ("sources_released", J::Bool(done)),
        ("tree_retired", J::Bool(done)),
        ("pair_released", J::Bool(done)),
        ("retired", J::Bool(done)),
    ]);
    obj(fields)
}

fn journal(rng: &mut Rng, lease: &Lease, extra_outputs: usize) -> J {
    let identity = obj(vec![
        ("local_wrapper_id", s(&lease.wrapper_id)),
        ("remote_build_id", u(lease.build_id)),
    ]);
    let mut fields = vec![
        ("schema_version", u(lease.schema_version)),
        ("identity", identity),
        ("wrapper_pid", u(lease.pid)),
    ];
    match &lease.owner {
        Owner::Legacy { ticks, boot } => {
            fields.push(("process_start_ticks", u(*ticks)));
            fields.push(("boot_id", s(boot)));
        }
        Owner::Birth { ticks, boot } => fields.push((
            "process_birth",
            obj(vec![
                ("boot_id", s(boot)),
                (
                    "start",
                    obj(vec![("platform", s("linux")), ("ticks", u(*ticks))]),
                ),
            ]),
        )),
        Owner::Unrecorded => {}
    }
    fields.extend([
        ("state", s(lease.state)),
        ("phase", s(lease.phase)),
        ("worker_id", s(WORKERS[lease.worker])),
        ("heartbeat_unix_ms", u(lease.heartbeat_ms)),
        ("strict_remote", J::Bool(rng.chance(10))),
        ("self_healing_enabled", J::Bool(!rng.chance(8))),
        (
            "command_fingerprint",
            J::Str(format!("blake3:{}", rng.hex(32))),
        ),
        ("terminal_acknowledged", J::Bool(lease.acknowledged)),
    ]);
    if let Some(progress) = lease.recipe {
        fields.push(("recovery", recipe(rng, lease, progress, extra_outputs)));
    }
    if let Some(code) = lease.exit_code {
        fields.push(("exit_code", J::Int(code)));
    }
    obj(fields)
}

// --------------------------------------------------------------------- kinds

#[derive(Clone, Copy)]
enum Kind {
    Terminal,
    Fresh,
    LiveOwner,
    NotOwning,
    Candidate,
    Hostile,
}

const KINDS_ALL: [Kind; 6] = [
    Kind::Terminal,
    Kind::Fresh,
    Kind::LiveOwner,
    Kind::NotOwning,
    Kind::Candidate,
    Kind::Hostile,
];

const KIND_NAMES: [&str; 6] = [
    "terminal",
    "fresh",
    "live_owner",
    "not_owning",
    "candidate",
    "hostile",
];

/// The fixed mix: 12/20 terminal, 3/20 fresh, 2/20 live owner, 1/20 each of the rest.
fn kind_of(index: u64, only: Option<Kind>) -> Kind {
    if let Some(kind) = only {
        return kind;
    }
    match index % 20 {
        0..=11 => Kind::Terminal,
        12..=14 => Kind::Fresh,
        15 | 16 => Kind::LiveOwner,
        17 => Kind::NotOwning,
        18 => Kind::Candidate,
        _ => Kind::Hostile,
    }
}

struct Context {
    now_ms: u64,
    live_pid: u64,
    /// The live PID's real `(start ticks, boot id)`, when `/proc` shows them.
    live_identity: Option<(u64, String)>,
    /// A few boots of the client machine.
    boots: Vec<String>,
    /// `--journal-bytes`: the least size of a journal with a recipe.
    journal_bytes: usize,
}

/// rch build ids: `(daemon_start_secs << 24) | 1`, then incrementing.
fn build_id(rng: &mut Rng, heartbeat_ms: u64) -> u64 {
    let started = heartbeat_ms / 1000 - rng.range(60, 3 * 86_400);
    ((started << 24) | 1) + rng.range(0, 5000)
}

fn dead_pid(rng: &mut Rng) -> u64 {
    rng.range(PID_MAX_LIMIT + 1, 1 << 30)
}

fn dead_owner(rng: &mut Rng, ctx: &Context) -> Owner {
    let ticks = rng.range(100_000, 900_000_000);
    let boot = rng.pick(&ctx.boots).clone();
    if rng.chance(4) {
        Owner::Birth { ticks, boot }
    } else {
        Owner::Legacy { ticks, boot }
    }
}

/// A well-formed journal of the given kind (`Hostile` gets a candidate to spoil).
fn lease_of(rng: &mut Rng, ctx: &Context, kind: Kind, wrapper_id: String) -> Lease {
    let now = ctx.now_ms;
    let phase = *rng.pick(&PHASES);
    // A dead owner's stale, running lease that owns source: a candidate.
    let mut lease = Lease {
        wrapper_id,
        build_id: 0,
        pid: dead_pid(rng),
        owner: dead_owner(rng, ctx),
        state: "running",
        phase,
        worker: rng.range(0, WORKERS.len() as u64) as usize,
        heartbeat_ms: now - rng.range(HOUR_MS, 7 * DAY_MS),
        acknowledged: false,
        recipe: Some(Progress::Running),
        exit_code: None,
        schema_version: 1,
    };
    match kind {
        Kind::Terminal => {
            let code = *rng.pick(&[0, 0, 0, 0, 0, 0, 1, 101, 102]);
            let remote = if code == 102 { 0 } else { code };
            // Recovered (with daemon_exit_code) or finished by their own
            // wrapper; one in ten never had a recipe.
            lease.recipe = (!rng.chance(10)).then_some(Progress::Settled {
                code,
                remote,
                daemon: rng.chance(3),
            });
            lease.pid = rng.range(1000, PID_MAX_LIMIT);
            lease.heartbeat_ms = now - rng.range(MINUTE_MS, 30 * DAY_MS);
            (lease.state, lease.phase, lease.acknowledged) = ("finished", "finished", true);
            lease.exit_code = Some(code);
        }
        Kind::Fresh => {
            lease.pid = ctx.live_pid;
            lease.owner = match &ctx.live_identity {
                Some((ticks, boot)) => Owner::Legacy {
                    ticks: *ticks,
                    boot: boot.clone(),
                },
                None => Owner::Unrecorded,
            };
            lease.heartbeat_ms = now.saturating_sub(rng.range(1000, 10 * MINUTE_MS));
        }
        Kind::LiveOwner => {
            (lease.pid, lease.owner) = (ctx.live_pid, Owner::Unrecorded);
            lease.heartbeat_ms = now - rng.range(20 * MINUTE_MS, 3 * DAY_MS);
        }
        Kind::NotOwning => {
            lease.phase = "sync_down";
            lease.recipe = Some(Progress::RetiredUnsettled);
        }
        Kind::Candidate | Kind::Hostile => {}
    }
    lease.build_id = build_id(rng, lease.heartbeat_ms);
    lease
}

/// The bytes of journal number `index` (its file name is `<wrapper_id>.json`).
fn file_bytes(rng: &mut Rng, ctx: &Context, index: u64, kind: Kind, wrapper_id: &str) -> Vec<u8> {
    let Kind::Hostile = kind else {
        let lease = lease_of(rng, ctx, kind, wrapper_id.to_owned());
        return padded(rng, &lease, ctx.journal_bytes).into_bytes();
    };
    let mut candidate = lease_of(rng, ctx, Kind::Candidate, wrapper_id.to_owned());
    match (index / 20) % 6 {
        0 => {
            // Truncated mid-object.
            let mut text = to_pretty(&journal(rng, &candidate, 0)).into_bytes();
            text.truncate(text.len() * 3 / 5);
            text
        }
        1 => {
            candidate.schema_version = 2;
            to_pretty(&journal(rng, &candidate, 0)).into_bytes()
        }
        2 => {
            // Valid name, but the journal claims another wrapper.
            candidate.wrapper_id = format!("rchw-{}", rng.uuid());
            to_pretty(&journal(rng, &candidate, 0)).into_bytes()
        }
        3 => {
            let mut text = "[".repeat(10_000);
            text.push_str(&"]".repeat(10_000));
            text.into_bytes()
        }
        4 => {
            // Recoverable but for one byte that is not UTF-8, in the last
            // string of the recipe: rch refuses it, and only a parse to
            // the end finds it.
            let mut text = padded(rng, &candidate, ctx.journal_bytes).into_bytes();
            let last = text.iter().rposition(|byte| *byte == b'"').unwrap_or(0);
            text.insert(last, 0xff);
            text
        }
        _ => {
            // Binary garbage: starts with a NUL, never JSON.
            let mut blob = vec![0u8];
            while blob.len() < 2048 {
                blob.extend_from_slice(&rng.next_u64().to_le_bytes());
            }
            blob
        }
    }
}

/// The journal of `lease`, with enough extra output files in its recipe to
/// be at least `min_bytes` long (none when it is that long already, or has
/// no recipe to hold them).
fn padded(rng: &mut Rng, lease: &Lease, min_bytes: usize) -> String {
    let start = rng.clone();
    let plain = to_pretty(&journal(rng, lease, 0));
    if plain.len() >= min_bytes || lease.recipe.is_none() {
        return plain;
    }
    let render = |extra| to_pretty(&journal(&mut start.clone(), lease, extra));
    let probe = render(64).len();
    let per_output = (probe - plain.len()).div_ceil(64);
    let mut extra = (min_bytes - plain.len()) / per_output;
    loop {
        let text = render(extra);
        if text.len() >= min_bytes {
            return text;
        }
        extra += (min_bytes - text.len()).div_ceil(per_output).max(8);
    }
}

// ----------------------------------------------------------------- the host

/// `(start ticks, boot id)` of a live process, as rch records them (Linux `/proc`).
fn proc_identity(pid: u64) -> Option<(u64, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    let ticks = rest.split_whitespace().nth(19)?.parse().ok()?;
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some((ticks, boot.trim().to_owned()))
}

/// The parent of `pid`, from `/proc/<pid>/stat` (field 4).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The shell that started us: our parent, or its parent when that is `cargo run`.
fn default_live_pid() -> u32 {
    let parent = std::os::unix::process::parent_id();
    let comm = std::fs::read_to_string(format!("/proc/{parent}/comm")).unwrap_or_default();
    if comm.trim() == "cargo" {
        return parent_of(parent).unwrap_or(parent);
    }
    parent
}

// ----------------------------------------------------------------- arguments

struct Args {
    count: u64,
    dir: PathBuf,
    seed: u64,
    now_ms: Option<u64>,
    live_pid: Option<u32>,
    candidates: Option<u64>,
    only: Option<Kind>,
    journal_bytes: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        count: 0,
        dir: PathBuf::new(),
        seed: 42,
        now_ms: None,
        live_pid: None,
        candidates: None,
        only: None,
        journal_bytes: 0,
    };
    let (mut count, mut dir) = (None, None);
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        if arg == "-h" || arg == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg, None),
        };
        let value = match inline.or_else(|| argv.next()) {
            Some(value) => value,
            None => return Err(format!("{flag} needs a value")),
        };
        let number = |value: &str| {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {value:?}"))
        };
        match flag.as_str() {
            "--count" => count = Some(number(&value)?),
            "--dir" => dir = Some(PathBuf::from(value)),
            "--seed" => args.seed = number(&value)?,
            "--candidates" => args.candidates = Some(number(&value)?),
            "--only" => {
                let at = KIND_NAMES
                    .iter()
                    .position(|name| *name == value)
                    .ok_or_else(|| format!("--only: not a kind: {value:?}"))?;
                args.only = Some(KINDS_ALL[at]);
            }
            "--journal-bytes" => {
                args.journal_bytes = usize::try_from(number(&value)?)
                    .map_err(|_| format!("--journal-bytes: out of range: {value}"))?;
            }
            "--now-ms" => args.now_ms = Some(number(&value)?),
            "--live-pid" => {
                let pid = number(&value)?;
                args.live_pid = Some(
                    u32::try_from(pid).map_err(|_| format!("--live-pid: out of range: {pid}"))?,
                );
            }
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    args.count = count.ok_or("--count is required")?;
    args.dir = dir.ok_or("--dir is required")?;
    if args.dir.as_os_str().is_empty() {
        return Err("--dir is empty".into());
    }
    Ok(args)
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Box<dyn Error>> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()).into())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("gen-leases: {message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let started = Instant::now();
    let now_ms = match args.now_ms {
        Some(ms) => ms,
        None => u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis())?,
    };
    if now_ms < 30 * DAY_MS {
        return Err(format!("--now-ms {now_ms} is too early for 30 days of history").into());
    }
    let live_pid = args.live_pid.unwrap_or_else(default_live_pid);
    if live_pid <= 1 || !Path::new(&format!("/proc/{live_pid}")).exists() {
        eprintln!(
            "gen-leases: warning: live PID {live_pid} is not a running process other than init; live-owner journals will not be judged owner_unverified"
        );
    }
    let mut boot_rng = Rng::for_index(args.seed, u64::MAX - 2);
    let ctx = Context {
        now_ms,
        live_pid: u64::from(live_pid),
        live_identity: proc_identity(u64::from(live_pid)),
        boots: (0..3).map(|_| boot_rng.uuid()).collect(),
        journal_bytes: args.journal_bytes,
    };
    // Self-check: what the printer writes parses as JSON.
    for kind in [
        Kind::Terminal,
        Kind::Fresh,
        Kind::LiveOwner,
        Kind::NotOwning,
        Kind::Candidate,
    ] {
        let mut rng = Rng::for_index(args.seed, u64::MAX - 3);
        let lease = lease_of(&mut rng, &ctx, kind, TEMPLATE_ID.to_owned());
        serde_json::from_str::<serde_json::Value>(&to_pretty(&journal(&mut rng, &lease, 0)))?;
    }

    std::fs::create_dir_all(&args.dir).map_err(|e| format!("{}: {e}", args.dir.display()))?;
    let mut counts = [0u64; 6];
    let mut bytes = 0u64;
    for index in 0..args.count {
        let mut rng = Rng::for_index(args.seed, index);
        let kind = match kind_of(index, args.only) {
            Kind::Candidate
                if args
                    .candidates
                    .is_some_and(|most| counts[Kind::Candidate as usize] >= most) =>
            {
                Kind::NotOwning
            }
            kind => kind,
        };
        let wrapper_id = format!("rchw-{}", rng.uuid());
        let data = file_bytes(&mut rng, &ctx, index, kind, &wrapper_id);
        write_file(&args.dir.join(format!("{wrapper_id}.json")), &data)?;
        counts[kind as usize] += 1;
        bytes += data.len() as u64;
    }
    let mix: Vec<String> = KIND_NAMES
        .iter()
        .zip(counts)
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    println!(
        "gen-leases: {} journals in {} ({}; live pid {live_pid}), {bytes} bytes, {:.2} s",
        args.count,
        args.dir.display(),
        mix.join(", "),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

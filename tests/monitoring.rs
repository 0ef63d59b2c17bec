//! Monitoring with the real components an operator runs: two users' sweeps
//! (the real binary, each over its own lease directory) write their metrics
//! files into one textfile directory; Debian's `prometheus-node-exporter`
//! serves them over HTTP on loopback; `promtool` checks each file and the
//! shipped alert rules, and runs their unit tests.
//!
//! Without node_exporter or promtool the test says it skipped and why; under
//! CI (`CI` set, where `.ci/run` installs both) a missing tool is a failure,
//! so the check cannot silently stop running.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const RULES: &str = "monitoring/rch-sweep.rules.yml";
const RULE_TESTS: &str = "monitoring/rch-sweep.rules.test.yml";

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The first of `names` found on `PATH`.
fn find_tool(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// The tool, or None after saying why the test skips (a failure under CI).
fn tool(names: &[&str], package: &str) -> Option<PathBuf> {
    let found = find_tool(names);
    if found.is_none() {
        let why = format!(
            "{} not found on PATH (Debian package {package}; .ci/run installs it)",
            names.join(" / ")
        );
        assert!(std::env::var_os("CI").is_none(), "under CI: {why}");
        eprintln!("skipped: {why}");
    }
    found
}

/// node_exporter, killed and reaped when dropped, also when a test panics.
struct Exporter {
    child: Child,
    log: PathBuf,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Exporter {
    /// Starts `binary` with only the textfile collector on a free loopback
    /// port and waits (bounded) until it answers; a few tries, since another
    /// process may take the port between choosing it and node_exporter's bind.
    /// With `uid`, it runs as that user and group (the test must be root).
    fn start(
        binary: &Path,
        textfile_dir: &Path,
        log: PathBuf,
        uid: Option<u32>,
    ) -> (Exporter, SocketAddr) {
        use std::os::unix::process::CommandExt;
        for _ in 0..3 {
            let address = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|listener| listener.local_addr())
                .expect("a free loopback port");
            let output = std::fs::File::create(&log).expect("log file");
            let mut command = Command::new(binary);
            if let Some(uid) = uid {
                command.uid(uid).gid(uid);
            }
            let child = command
                .arg("--collector.disable-defaults")
                .arg("--collector.textfile")
                .arg(format!(
                    "--collector.textfile.directory={}",
                    textfile_dir.display()
                ))
                .arg(format!("--web.listen-address={address}"))
                .stdin(Stdio::null())
                .stdout(output.try_clone().expect("clone"))
                .stderr(output)
                .spawn()
                .expect("start node_exporter");
            let mut exporter = Exporter {
                child,
                log: log.clone(),
            };
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline {
                if exporter.child.try_wait().expect("poll").is_some() {
                    break; // exited: most likely the port was taken; try another
                }
                if get_metrics(address).is_ok() {
                    return (exporter, address);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = exporter.child.kill();
            let _ = exporter.child.wait();
        }
        panic!(
            "node_exporter never answered: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }
}

/// `GET /metrics` over HTTP/1.0 (the server closes the connection, so the
/// body ends at EOF); the body of a 200 answer.
fn get_metrics(address: SocketAddr) -> std::io::Result<String> {
    let timeout = Duration::from_secs(5);
    let mut stream = TcpStream::connect_timeout(&address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut response = Vec::new();
    stream.take(64 << 20).read_to_end(&mut response)?;
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no end of headers"))?;
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other(format!("answer: {head}")));
    }
    Ok(body.to_owned())
}

/// `name{labels}` → value of every sample line of an exposition text.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// Runs `promtool <args>`; panics with its output unless it succeeds.
fn promtool(promtool: &Path, args: &[&Path], stdin: Option<&Path>) -> String {
    let mut command = Command::new(promtool);
    command.args(args);
    if let Some(path) = stdin {
        command.stdin(std::fs::File::open(path).expect("open"));
    }
    let output = command.output().expect("run promtool");
    let text = format!("{}{}", stdout(&output), stderr(&output));
    assert!(output.status.success(), "promtool {args:?}: {text}");
    text
}

/// A user's lease directory (`<home>/job-leases`, as rch names it) and a real
/// sweep over it with a fake rch that fails without touching the journal;
/// returns the lease directory and the run's exit code.
fn sweep(world: &World, user: &str, stranded: usize, rch: &Path, prom: &Path) -> (PathBuf, i32) {
    sweep_with(world, user, stranded, rch, prom, |_| {})
}

/// [`sweep`], with `adjust` given the command before it runs.
fn sweep_with(
    world: &World,
    user: &str,
    stranded: usize,
    rch: &Path,
    prom: &Path,
    adjust: impl FnOnce(&mut Command),
) -> (PathBuf, i32) {
    let lease_dir = world.path(user).join("job-leases");
    std::fs::create_dir_all(&lease_dir).expect("mkdir lease dir");
    for _ in 0..stranded {
        let journal = Journal::stale("hz4", 2 * HOUR_MS);
        std::fs::write(lease_dir.join(journal.file_name()), journal.text()).expect("journal");
    }
    let mut command = World::bare_command();
    command
        .arg("--lease-dir")
        .arg(&lease_dir)
        .arg("--rch")
        .arg(rch)
        .arg("--metrics-file")
        .arg(prom);
    adjust(&mut command);
    let output = command.output().expect("run rch-sweep");
    (lease_dir, output.status.code().unwrap_or(-1))
}

#[test]
fn node_exporter_serves_two_users_sweeps_and_promtool_accepts_files_and_rules() {
    let Some(node_exporter) = tool(
        &["prometheus-node-exporter", "node_exporter"],
        "prometheus-node-exporter",
    ) else {
        return;
    };
    let Some(promtool_bin) = tool(&["promtool"], "prometheus") else {
        return;
    };
    let world = World::new();
    let textfile = world.path("textfile");
    std::fs::create_dir(&textfile).expect("mkdir textfile");
    let rch = world.fake_rch("rch", "echo 'worker unreachable' >&2\nexit 1");

    // alice has a stranded lease whose recovery fails; bob has none.
    let alice_prom = textfile.join("rch-sweep-alice.prom");
    let bob_prom = textfile.join("rch-sweep-bob.prom");
    let (alice, code) = sweep(&world, "alice", 1, &rch, &alice_prom);
    assert_eq!(code, 1, "alice's recovery fails");
    let (bob, code) = sweep(&world, "bob", 0, &rch, &bob_prom);
    assert_eq!(code, 0, "bob has nothing to do");
    // carol has a stranded lease, but her rch's daemon does not answer: no
    // lease charged, exit 75, and the metrics say the daemon is down.
    let carol_prom = textfile.join("rch-sweep-carol.prom");
    let (carol, code) = sweep_with(&world, "carol", 1, &rch, &carol_prom, |command| {
        command
            .arg("--socket")
            .arg(world.path("carol/rch.sock"))
            .env("HOME", world.path("carol"))
            .env_remove("XDG_RUNTIME_DIR")
            .env("RCH_SWEEP_TEST_DAEMON_WAIT_MS", "100");
    });
    assert_eq!(code, 75, "carol's daemon is down");

    for prom in [&alice_prom, &bob_prom, &carol_prom] {
        promtool(
            &promtool_bin,
            &[Path::new("check"), Path::new("metrics")],
            Some(prom),
        );
    }

    let (exporter, address) = Exporter::start(
        &node_exporter,
        &textfile,
        world.path("node_exporter.log"),
        None,
    );
    let served = get_metrics(address).expect("scrape /metrics");
    let served_samples = samples(&served);
    assert_eq!(
        served_samples.get("node_textfile_scrape_error"),
        Some(&0.0),
        "node_exporter could not read the textfile directory:\n{served}\n{}",
        std::fs::read_to_string(&exporter.log).unwrap_or_default()
    );
    for (prom, lease_dir) in [
        (&alice_prom, &alice),
        (&bob_prom, &bob),
        (&carol_prom, &carol),
    ] {
        let written = samples(&std::fs::read_to_string(prom).expect("metrics file"));
        assert!(written.len() >= 20, "{prom:?}: {written:?}");
        let label = format!("lease_dir=\"{}\"", lease_dir.display());
        for (series, value) in &written {
            assert!(series.contains(&label), "{series} lacks {label}");
            assert_eq!(
                served_samples.get(series),
                Some(value),
                "node_exporter does not serve {series} {value} from {prom:?}"
            );
        }
    }
    let failed = |lease_dir: &Path| {
        served_samples
            .get(&format!(
                "rch_sweep_recoveries{{lease_dir=\"{}\",outcome=\"failed\"}}",
                lease_dir.display()
            ))
            .copied()
    };
    assert_eq!(failed(&alice), Some(1.0));
    assert_eq!(failed(&bob), Some(0.0));
    assert_eq!(failed(&carol), Some(0.0));
    let daemon_up = |lease_dir: &Path| {
        served_samples
            .get(&format!(
                "rch_sweep_daemon_up{{lease_dir=\"{}\"}}",
                lease_dir.display()
            ))
            .copied()
    };
    assert_eq!(daemon_up(&carol), Some(0.0), "{served}");
    // alice's rch cannot say which socket it uses, bob had nothing due:
    // neither checked, so neither claims anything.
    assert_eq!(daemon_up(&alice), None);
    assert_eq!(daemon_up(&bob), None);
    drop(exporter);

    let check = promtool(
        &promtool_bin,
        &[Path::new("check"), Path::new("rules"), &repo(RULES)],
        None,
    );
    assert!(check.contains("SUCCESS"), "{check}");
    let tests = promtool(
        &promtool_bin,
        &[Path::new("test"), Path::new("rules"), &repo(RULE_TESTS)],
        None,
    );
    assert!(tests.contains("SUCCESS"), "{tests}");
}

/// The premise of the alert RchSweepMetricsUnreadable, with the real
/// node_exporter: a metrics file its user may not read is served by no series
/// of its own and raises only `node_textfile_scrape_error`, while the 0644
/// file rch-sweep writes is served.
#[test]
fn node_exporter_flags_a_metrics_file_it_cannot_read_only_by_its_scrape_error() {
    use std::os::unix::fs::PermissionsExt;
    let Some(node_exporter) = tool(
        &["prometheus-node-exporter", "node_exporter"],
        "prometheus-node-exporter",
    ) else {
        return;
    };
    let world = World::new();
    // node_exporter runs as a user of its own (Debian: prometheus). Root
    // reads any file, so under root it runs as nobody, for whom the world
    // must be traversable; otherwise as this user, who cannot read a mode
    // 0000 file either.
    let nobody = is_root().then_some(65534);
    std::fs::set_permissions(world.dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let textfile = world.path("textfile");
    std::fs::create_dir(&textfile).expect("mkdir textfile");
    let rch = world.fake_rch("rch", "exit 1");
    let prom = textfile.join("rch-sweep-alice.prom");
    let (alice, code) = sweep(&world, "alice", 0, &rch, &prom);
    assert_eq!(code, 0, "alice has nothing to do");
    let mode = std::fs::metadata(&prom)
        .expect("metrics file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "rch-sweep writes its metrics 0644");

    let (exporter, address) = Exporter::start(
        &node_exporter,
        &textfile,
        world.path("node_exporter.log"),
        nobody,
    );
    let log = || std::fs::read_to_string(&exporter.log).unwrap_or_default();
    let exit_code = format!("rch_sweep_exit_code{{lease_dir=\"{}\"}}", alice.display());
    let served = samples(&get_metrics(address).expect("scrape /metrics"));
    assert_eq!(
        served.get("node_textfile_scrape_error"),
        Some(&0.0),
        "{}",
        log()
    );
    assert_eq!(served.get(&exit_code), Some(&0.0), "{served:?}");

    // The file as a strict umask, a copy or an older tool might leave it.
    let unreadable = if nobody.is_some() { 0o600 } else { 0o000 };
    std::fs::set_permissions(&prom, std::fs::Permissions::from_mode(unreadable)).expect("chmod");
    let served = samples(&get_metrics(address).expect("scrape /metrics"));
    assert_eq!(
        served.get("node_textfile_scrape_error"),
        Some(&1.0),
        "{served:?}\n{}",
        log()
    );
    let ours: Vec<&String> = served
        .keys()
        .filter(|series| series.starts_with("rch_sweep_"))
        .collect();
    assert!(ours.is_empty(), "still served: {ours:?}");
    assert!(log().contains("rch-sweep-alice.prom"), "{}", log());
}

/// A sweep that finds no lease directory exits 0 and reports success, so
/// only `rch_sweep_lease_dir_present` can tell monitoring (the alert
/// RchSweepLeaseDirMissing): with the real node_exporter, a `--quiet` run
/// over a named directory that does not exist is served with 0 beside a
/// sweep that found its directory, with 1, and promtool accepts the file.
#[test]
fn node_exporter_serves_a_missing_lease_directory_as_lease_dir_present_zero() {
    let Some(node_exporter) = tool(
        &["prometheus-node-exporter", "node_exporter"],
        "prometheus-node-exporter",
    ) else {
        return;
    };
    let Some(promtool_bin) = tool(&["promtool"], "prometheus") else {
        return;
    };
    let world = World::new();
    let textfile = world.path("textfile");
    std::fs::create_dir(&textfile).expect("mkdir textfile");
    let rch = world.fake_rch("rch", "exit 1");
    let (present, code) = sweep(&world, "alice", 0, &rch, &textfile.join("alice.prom"));
    assert_eq!(code, 0);
    // bob's timer names a folder with a typo.
    let missing = world.path("bob/job-lease");
    let bob_prom = textfile.join("bob.prom");
    let output = World::bare_command()
        .arg("--quiet")
        .arg("--lease-dir")
        .arg(&missing)
        .arg("--rch")
        .arg(&rch)
        .arg("--metrics-file")
        .arg(&bob_prom)
        .output()
        .expect("run rch-sweep");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("does not exist"),
        "{}",
        stderr(&output)
    );
    promtool(
        &promtool_bin,
        &[Path::new("check"), Path::new("metrics")],
        Some(&bob_prom),
    );

    let (exporter, address) = Exporter::start(
        &node_exporter,
        &textfile,
        world.path("node_exporter.log"),
        None,
    );
    let served = samples(&get_metrics(address).expect("scrape /metrics"));
    assert_eq!(
        served.get("node_textfile_scrape_error"),
        Some(&0.0),
        "{}",
        std::fs::read_to_string(&exporter.log).unwrap_or_default()
    );
    let present_of = |lease_dir: &Path| {
        served
            .get(&format!(
                "rch_sweep_lease_dir_present{{lease_dir=\"{}\"}}",
                lease_dir.display()
            ))
            .copied()
    };
    assert_eq!(present_of(&missing), Some(0.0), "{served:?}");
    assert_eq!(present_of(&present), Some(1.0), "{served:?}");
    assert_eq!(
        served.get(&format!(
            "rch_sweep_exit_code{{lease_dir=\"{}\"}}",
            missing.display()
        )),
        Some(&0.0),
        "a run over a missing directory succeeds: only the gauge says it"
    );
}

/// The annotation `key` of alert `alert` in the shipped rules, rendered as
/// Prometheus renders it for these labels and value (`$labels.instance`,
/// `$labels.lease_dir`, `$value | humanizeDuration`): what promtool must
/// find on the alert.
fn rendered(alert: &str, key: &str, instance: &str, lease_dir: &str, value: f64) -> String {
    let rules = std::fs::read_to_string(repo(RULES)).expect("rules");
    let block = rules
        .split_once(&format!("- alert: {alert}\n"))
        .map(|(_, rest)| rest)
        .expect("the alert");
    let template = block
        .lines()
        .find_map(|line| line.trim().strip_prefix(&format!("{key}: ")))
        .expect("the annotation")
        .trim_matches('"');
    // Go's humanizeDuration: whole seconds, the largest unit first.
    let seconds = value as u64;
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    let duration = match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m {s}s"),
        _ => format!("{d}d {h}h {m}m {s}s"),
    };
    template
        .replace("{{ $labels.instance }}", instance)
        .replace("{{ $labels.lease_dir }}", lease_dir)
        .replace("{{ $value | humanizeDuration }}", &duration)
}

/// YAML's single-quoted form of `text`.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A lease deferred for seven hours (issue 47: the state an earlier run
/// left, its hold moved seven hours back) is in the text summary and
/// `status`; the real node_exporter serves `rch_sweep_lease_held_seconds`
/// for it; and with that very value, the real promtool finds the shipped
/// `RchSweepLeaseHeld` firing.
#[test]
fn a_lease_held_seven_hours_is_served_and_fires_its_alert() {
    let Some(node_exporter) = tool(
        &["prometheus-node-exporter", "node_exporter"],
        "prometheus-node-exporter",
    ) else {
        return;
    };
    let Some(promtool_bin) = tool(&["promtool"], "prometheus") else {
        return;
    };
    let world = World::new();
    let textfile = world.path("textfile");
    std::fs::create_dir(&textfile).expect("mkdir textfile");
    // Another process holds the lease's recovery lock, every run.
    let rch = world.fake_rch(
        "rch",
        "echo 'Error: cannot acquire exclusive job recovery: journal is held by another handle; retry the same wrapper' >&2\nexit 1",
    );
    let prom = textfile.join("rch-sweep-alice.prom");
    let (lease_dir, code) = sweep(&world, "alice", 1, &rch, &prom);
    assert_eq!(code, 0, "a busy lease is deferred, not charged");
    let state_file = world.path("alice/rch-sweep/backoff.json");
    let mut state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&state_file).expect("state")).expect("json");
    for held in state["held"].as_object_mut().expect("held").values_mut() {
        let since = held["since_unix_ms"].as_u64().expect("since");
        held["since_unix_ms"] = (since - 7 * HOUR_MS).into();
    }
    std::fs::write(&state_file, serde_json::to_vec(&state).expect("json")).expect("state");

    let run = World::bare_command()
        .arg("--lease-dir")
        .arg(&lease_dir)
        .arg("--rch")
        .arg(&rch)
        .arg("--metrics-file")
        .arg(&prom)
        .output()
        .expect("run rch-sweep");
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let summary = stdout(&run);
    assert!(
        summary.contains("deferred, held for 7h 0m: another process is recovering this lease"),
        "{summary}"
    );
    let status = World::bare_command()
        .arg("status")
        .arg("--lease-dir")
        .arg(&lease_dir)
        .output()
        .expect("status");
    assert!(
        stdout(&status).contains("held for 7h 0m"),
        "{}",
        stdout(&status)
    );
    promtool(
        &promtool_bin,
        &[Path::new("check"), Path::new("metrics")],
        Some(&prom),
    );

    let (exporter, address) = Exporter::start(
        &node_exporter,
        &textfile,
        world.path("node_exporter.log"),
        None,
    );
    let served = samples(&get_metrics(address).expect("scrape /metrics"));
    drop(exporter);
    let series = format!(
        "rch_sweep_lease_held_seconds{{lease_dir=\"{}\"}}",
        lease_dir.display()
    );
    let held = *served.get(&series).unwrap_or_else(|| panic!("{served:?}"));
    assert!((7.0 * 3600.0..7.5 * 3600.0).contains(&held), "{held}");

    // The value served, as Prometheus would scrape it from build1, one
    // run every five minutes: RchSweepLeaseHeld fires at once.
    let lease_dir = lease_dir.display().to_string();
    let instance = "build1:9100";
    let tests = world.path("held.test.yml");
    let annotation = |key| {
        quoted(&rendered(
            "RchSweepLeaseHeld",
            key,
            instance,
            &lease_dir,
            held,
        ))
    };
    std::fs::write(
        &tests,
        format!(
            "rule_files:\n- {rules}\nevaluation_interval: 1m\ntests:\n\
             - interval: 5m\n  input_series:\n\
             \x20 - series: rch_sweep_lease_held_seconds{{instance=\"{instance}\",job=\"node\",lease_dir=\"{lease_dir}\"}}\n\
             \x20   values: {held}+300x6\n\
             \x20 alert_rule_test:\n\
             \x20 - eval_time: 0m\n    alertname: RchSweepLeaseHeld\n    exp_alerts:\n\
             \x20   - exp_labels:\n        instance: {instance}\n        job: node\n        lease_dir: {quoted_dir}\n        severity: warning\n\
             \x20     exp_annotations:\n        summary: {summary}\n        description: {description}\n",
            rules = repo(RULES).display(),
            quoted_dir = quoted(&lease_dir),
            summary = annotation("summary"),
            description = annotation("description"),
        ),
    )
    .expect("write rule tests");
    let result = promtool(
        &promtool_bin,
        &[Path::new("test"), Path::new("rules"), &tests],
        None,
    );
    assert!(result.contains("SUCCESS"), "{result}");
}

//! A private view of the host for tests that add accounts, crontabs, unit
//! files or drop-ins (issue 43): the real `useradd`, the real `crontab`,
//! real files where systemd looks, all inside a mount namespace of their
//! own, so the host's accounts, crontabs and units stay as they were.
//!
//! The namespace is held open by one long-lived process (the holder, made
//! with `unshare --mount --propagation private`, so no mount made inside
//! propagates back); programs enter it with `nsenter`. Inside:
//! - `/etc` is an overlay whose writes land in a tmpfs, with copies of
//!   `/etc/passwd`, `/etc/group`, `/etc/shadow` (and `gshadow`, `subuid`,
//!   `subgid`) taken when the namespace is made; `useradd`'s locks and
//!   backups (`passwd-`) are private too, and the host's locks are not seen
//!   (a `useradd` on the host at the same time does not fail the test's). (A copy bound over each file is not enough: `useradd`
//!   replaces `/etc/passwd` by renaming `/etc/passwd+` over it, which fails
//!   on a mount point and leaves `/etc/passwd+` on the host.) Where overlayfs
//!   cannot be mounted, a copy of `/etc` in a tmpfs is bound over it.
//! - `/etc/systemd` and `/var/spool/cron` (when the host has it) are tmpfs
//!   with the host's folders (owners and modes: `crontab(1)` needs
//!   `crontabs` as Debian makes it) and none of its files.
//! - `/run` is an empty tmpfs: no systemd manager answers inside, and
//!   `/run/user/*` is hidden (tests keep their sockets in their own folders).
//!
//! Everything else, `/tmp` and the target folder among it, is the host's:
//! a test's temporary folders are seen alike inside and out.
//!
//! Every command run through the holder (`nsenter --target=<pid>`) and
//! every path reached through `/proc/<pid>/root` is checked first
//! ([`check_holder`]): the holder, held by a pidfd since it was started,
//! has not exited, and its mount namespace is neither the host's (pid 1's)
//! nor the test's own. Otherwise the test fails: a holder that died, its
//! pid taken by a process of the host, would have the test act on the host.
#![allow(dead_code)]

use std::ffi::{CStr, CString, OsStr};
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

const UNSHARE: &str = "/usr/bin/unshare";
const NSENTER: &str = "/usr/bin/nsenter";

/// Shell functions the holder (and [`PrivateHost::write`]) use. The working
/// folder is the staging tmpfs, which the private `/run` later covers (the
/// holder stays in it, so `/proc/<holder>/cwd` still reaches it).
const FUNCTIONS: &str = r#"
# cover DIR [FILE...]: DIR becomes private and writable, with the host's
# contents. Each FILE is copied now (what the host does to it later is not
# seen inside), and the host's FILE.lock, if any, is not seen inside (a
# whiteout): the host's own useradd, locking its passwd while a test's runs
# inside, does not make the test's fail.
cover() {
  dir=$1; shift
  c=$(mktemp -d ./cover.XXXXXX) && mkdir "$c/upper" "$c/work" || return 1
  chown --reference="$dir" "$c/upper" && chmod --reference="$dir" "$c/upper" || return 1
  for f in "$@"; do
    if [ -e "$dir/$f" ]; then cp -a "$dir/$f" "$c/upper/$f" || return 1; fi
    mknod "$c/upper/$f.lock" c 0 0 || return 1
  done
  mount -t overlay -o "lowerdir=$dir,upperdir=$PWD/$c/upper,workdir=$PWD/$c/work" rch-sweep-test "$dir" 2>/dev/null \
    && return 0
  # No overlayfs here: a copy of the whole folder, without those locks.
  rm -rf "$c/upper" && mkdir "$c/upper" || return 1
  chown --reference="$dir" "$c/upper" && chmod --reference="$dir" "$c/upper" || return 1
  cp -a "$dir/." "$c/upper/" || return 1
  for f in "$@"; do rm -f "$c/upper/$f.lock"; done
  mount --bind "$c/upper" "$dir"
}
# skeleton DIR: DIR becomes a private tmpfs with the host's folders (owners,
# modes) and none of its files.
skeleton() {
  s=$(mktemp -d ./skeleton.XXXXXX) || return 1
  (cd "$1" && find . -type d) | while IFS= read -r d; do
    mkdir -p "$s/$d" && chown --reference="$1/$d" "$s/$d" && chmod --reference="$1/$d" "$s/$d" || exit 1
  done || return 1
  mount --bind "$s" "$1"
}
"#;

/// The holder: builds the private view, names each folder it made private
/// (`private DIR`; `/etc/systemd` lies in `/etc`), says `ready`, then waits
/// for its stdin to close (its owner gone) or to be killed.
const HOLDER: &str = r#"
set -e
mount -t tmpfs -o mode=0700 rch-sweep-test-stage /run
cd /run
cover /etc passwd group shadow gshadow subuid subgid
mkdir -p /etc/systemd
skeleton /etc/systemd
echo private /etc
if [ -d /var/spool/cron ]; then skeleton /var/spool/cron; echo private /var/spool/cron; fi
mount -t tmpfs -o mode=0755 rch-sweep-test-run /run
echo private /run
echo ready
read -r _ || :
"#;

/// A private mount namespace, held open until dropped.
pub struct PrivateHost {
    holder: Child,
    pid: u32,
    /// The holder, as the kernel names it: its pid may be reused once it
    /// is reaped, this may not. Shared with the commands made through it.
    pidfd: Arc<OwnedFd>,
    /// Where [`check_holder`] reads the namespaces, made once.
    paths: Arc<HolderPaths>,
    /// Where a test may write through [`PrivateHost::write`] without a
    /// cover of its own: the folders the holder said it made private (no
    /// `/var/spool/cron` on a host that has none).
    private: Vec<PathBuf>,
    /// Folders [`PrivateHost::write`] covered beyond `private`.
    covered: Mutex<Vec<PathBuf>>,
}

impl PrivateHost {
    /// The private view of the host for `test`. `None` (having said why)
    /// where it cannot be made: not root, or no mount namespace (`unshare`
    /// refused, as in an unprivileged container). Under CI (`CI` set),
    /// which runs as root, that fails the test instead.
    pub fn new(test: &str) -> Option<PrivateHost> {
        if !super::root_or_skip(test) {
            return None;
        }
        match PrivateHost::make() {
            Ok(host) => Some(host),
            Err(why) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "{test}: no private mount namespace: {why}"
                );
                eprintln!("{test}: skipped: no private mount namespace: {why}");
                None
            }
        }
    }

    fn make() -> Result<PrivateHost, String> {
        for tool in [UNSHARE, NSENTER] {
            if !Path::new(tool).exists() {
                return Err(format!("{tool} is missing (apt-get install util-linux)"));
            }
        }
        let mut holder = Command::new(UNSHARE)
            .args(["--mount", "--propagation", "private", "--", "/bin/sh", "-c"])
            .arg(format!("{FUNCTIONS}{HOLDER}"))
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("{UNSHARE}: {error}"))?;
        // unshare runs the shell in its own process (it execs, no fork):
        // the child is inside the namespace. Not reaped yet, its pid is
        // still its own: the pidfd names the holder and nothing else.
        let pid = holder.id();
        let said = match pidfd_open(pid) {
            Ok(pidfd) => read_private(holder.stdout.take().expect("piped stdout"))
                .map(|private| (pidfd, private)),
            Err(error) => Err(format!("pidfd_open({pid}): {error}")),
        };
        let (pidfd, private) = match said {
            Ok(said) => said,
            Err(said) => {
                let _ = holder.kill();
                let _ = holder.wait();
                let mut why = String::new();
                if let Some(mut stderr) = holder.stderr.take() {
                    let _ = stderr.read_to_string(&mut why);
                }
                return Err(format!("the holder did not start: {said} {}", why.trim()));
            }
        };
        let host = PrivateHost {
            holder,
            pid,
            pidfd: Arc::new(pidfd),
            paths: Arc::new(HolderPaths::new(Path::new("/proc"), pid)),
            private,
            covered: Mutex::new(Vec::new()),
        };
        // A holder that said `ready` from the host's namespace has already
        // mounted over the host's /etc and /run: never skipped, always a
        // failure (dropping `host` ends it).
        host.check();
        Ok(host)
    }

    /// The holder's process id: `/proc/<pid>/root` is the private view.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `program` run as root inside the namespace, in `/`. Add args and env
    /// as to any Command; but not `uid`/`gid`/`current_dir` (nsenter, the
    /// program actually started, needs root, and entering the namespace
    /// moves to its `/`): use [`PrivateHost::command_as`] or
    /// [`PrivateHost::command_in`] for those.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        self.enter(None, Path::new("/"), program.as_ref())
    }

    /// `program` run as root inside the namespace, in `dir`.
    pub fn command_in(&self, dir: &Path, program: impl AsRef<OsStr>) -> Command {
        self.enter(None, dir, program.as_ref())
    }

    /// `program` run inside the namespace as `uid`:`gid` (no supplementary
    /// groups), in `dir`.
    pub fn command_as(
        &self,
        uid: u32,
        gid: u32,
        dir: &Path,
        program: impl AsRef<OsStr>,
    ) -> Command {
        self.enter(Some((uid, gid)), dir, program.as_ref())
    }

    fn enter(&self, user: Option<(u32, u32)>, dir: &Path, program: &OsStr) -> Command {
        assert!(dir.is_absolute(), "{} is not absolute", dir.display());
        self.check();
        let mut command = Command::new(NSENTER);
        // Checked again when the command starts, for one started later (or
        // after this PrivateHost is gone: the pidfd lives with the command).
        let (pidfd, paths) = (Arc::clone(&self.pidfd), Arc::clone(&self.paths));
        // SAFETY: the hook runs in the child between fork and exec, where
        // only async-signal-safe calls may be made: check_holder makes three
        // stat(2) calls and one poll(2) and allocates nothing (its paths
        // were made beforehand); a refusal becomes a bare errno, which
        // std reports as the spawn's error, and nsenter never runs.
        unsafe {
            command.pre_exec(move || {
                check_holder(&paths, &pidfd)
                    .map_err(|refusal| std::io::Error::from_raw_os_error(refusal.errno()))
            });
        }
        command
            .arg(format!("--target={}", self.pid))
            .arg("--mount")
            // Opened through the holder's root: the folder as seen inside.
            .arg(format!("--wd={}", self.inside(dir).display()));
        if let Some((uid, gid)) = user {
            command.arg(format!("--setuid={uid}"));
            command.arg(format!("--setgid={gid}"));
        }
        command.arg("--").arg(program);
        command
    }

    /// `path` (absolute) as seen inside, reached from outside: for what
    /// [`PrivateHost::write`] does not do (a folder made, a mode changed).
    pub fn inside(&self, path: &Path) -> PathBuf {
        self.check();
        let relative = path.strip_prefix("/").unwrap_or(path);
        PathBuf::from(format!("/proc/{}/root", self.pid)).join(relative)
    }

    /// Writes `contents` at `path` (absolute) as seen inside only, making
    /// its missing folders. Under `/etc`, `/etc/systemd`, `/var/spool/cron`
    /// and `/run` that is already private; elsewhere (a unit under
    /// `/usr/lib/systemd/system`, say) the nearest existing folder is first
    /// covered with a private overlay, so the host's file is never touched.
    /// In the test's own folders (the temporary folder, the checkout and
    /// its target folder) it is written as it is outside: seen alike
    /// inside and out.
    pub fn write(&self, path: &Path, contents: &[u8]) {
        assert!(path.is_absolute(), "{} is not absolute", path.display());
        let parent = path.parent().expect("a file path");
        let own = [
            std::env::temp_dir(),
            PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        ]
        .iter()
        .any(|folder| path.starts_with(folder));
        if !own && !self.is_private(parent) {
            let mut folder = parent.to_path_buf();
            while !self.inside(&folder).is_dir() {
                folder = folder.parent().expect("/ exists").to_path_buf();
            }
            assert!(
                folder != Path::new("/"),
                "{}: will not cover /",
                path.display()
            );
            let output = self
                .command("/bin/sh")
                .arg("-c")
                .arg(format!(
                    "{FUNCTIONS}\ncd /proc/{}/cwd && cover \"$1\"",
                    self.pid
                ))
                .arg("cover")
                .arg(&folder)
                .output()
                .expect("nsenter");
            assert!(
                output.status.success(),
                "cover {}: {}",
                folder.display(),
                String::from_utf8_lossy(&output.stderr)
            );
            self.covered.lock().expect("covered").push(folder);
        }
        let inside = self.inside(path);
        std::fs::create_dir_all(inside.parent().expect("parent"))
            .unwrap_or_else(|error| panic!("mkdir {}: {error}", parent.display()));
        std::fs::write(&inside, contents)
            .unwrap_or_else(|error| panic!("write {}: {error}", path.display()));
    }

    fn is_private(&self, path: &Path) -> bool {
        self.private.iter().any(|private| path.starts_with(private))
            || self
                .covered
                .lock()
                .expect("covered")
                .iter()
                .any(|covered| path.starts_with(covered))
    }
}

impl PrivateHost {
    /// Fails the test unless the holder is still the process it started
    /// as, in a mount namespace of its own.
    fn check(&self) {
        if let Err(refusal) = check_holder(&self.paths, &self.pidfd) {
            panic!(
                "the private host's holder (pid {}) {refusal}: not acting through it, \
                 which could act on the host",
                self.pid
            );
        }
    }
}

/// The holder's report, up to `ready`: the folders it made private.
fn read_private(stdout: impl Read) -> Result<Vec<PathBuf>, String> {
    let mut private = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|error| format!("reading the holder: {error}"))?;
        if line == "ready" {
            return Ok(private);
        }
        match line.strip_prefix("private ").map(Path::new) {
            Some(folder) if folder.is_absolute() => private.push(folder.to_path_buf()),
            _ => return Err(format!("the holder said {line:?}")),
        }
    }
    Err("the holder ended before it was ready".to_owned())
}

/// A mount namespace, as `stat(2)` of an `ns/mnt` link names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Namespace {
    pub dev: u64,
    pub ino: u64,
}

/// Why nothing may be run through the holder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// It has exited: its pid may be another process's by now.
    Exited,
    /// Its `ns/mnt` cannot be read (it is exiting).
    Unreadable,
    /// This process's own `ns/mnt` cannot be read (no `/proc`): nothing to
    /// tell the host's namespace by.
    OwnUnreadable,
    /// It is in the host's (pid 1's) mount namespace.
    HostsNamespace,
    /// It is in the test's own mount namespace, whose files are the host's.
    OwnNamespace,
}

impl Refusal {
    /// What a command refused when it starts fails with (between fork and
    /// exec there is no room for words).
    pub fn errno(self) -> i32 {
        match self {
            Refusal::Exited | Refusal::Unreadable => libc::ESRCH,
            _ => libc::EPERM,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refusal::Exited => "has exited",
            Refusal::Unreadable => "has no readable ns/mnt",
            Refusal::OwnUnreadable => {
                "cannot be told from the host: /proc/self/ns/mnt is unreadable"
            }
            Refusal::HostsNamespace => "is in the host's mount namespace (pid 1's)",
            Refusal::OwnNamespace => "is in this test's own mount namespace",
        })
    }
}

/// The holder check, over what was read: the holder's process still
/// running (its pidfd), and the mount namespaces of the holder, of the host
/// (pid 1) and of this test. The holder must differ from both: the test's
/// own namespace sees the host's files too (a test run under `unshare -m`
/// with nothing mounted over them). Pid 1's is compared where it can be
/// read: where it cannot (a sandbox that refuses even root ptrace access
/// to pid 1, as the one these tests were written in does), the test's own
/// namespace is the host as far as the test can see it, and the pidfd
/// still proves the holder the same process.
pub fn judge_holder(
    running: bool,
    holder: Option<Namespace>,
    host: Option<Namespace>,
    own: Option<Namespace>,
) -> Result<(), Refusal> {
    let holder = match (running, holder) {
        (false, _) => return Err(Refusal::Exited),
        (true, None) => return Err(Refusal::Unreadable),
        (true, Some(holder)) => holder,
    };
    match (host, own) {
        (Some(host), _) if host == holder => Err(Refusal::HostsNamespace),
        (_, None) => Err(Refusal::OwnUnreadable),
        (_, Some(own)) if own == holder => Err(Refusal::OwnNamespace),
        (_, Some(_)) => Ok(()),
    }
}

/// Where [`check_holder`] reads: `<proc>/<pid>/ns/mnt`, `<proc>/1/ns/mnt`
/// and `<proc>/self/ns/mnt`. Made once, as C strings, so that the check
/// allocates nothing (it also runs between fork and exec).
pub struct HolderPaths {
    holder: CString,
    host: CString,
    own: CString,
}

impl HolderPaths {
    /// The paths under `proc` (`/proc`, or a test's stand-in for it).
    pub fn new(proc: &Path, pid: u32) -> HolderPaths {
        let at = |who: &str| {
            CString::new(proc.join(who).join("ns/mnt").as_os_str().as_bytes())
                .expect("a path without NUL")
        };
        HolderPaths {
            holder: at(&pid.to_string()),
            host: at("1"),
            own: at("self"),
        }
    }
}

/// Checks the holder: reads the three namespaces, then asks its pidfd
/// whether it still runs. A holder still running after the reads ran
/// through them, so its pid named it throughout and what was read is its.
pub fn check_holder(paths: &HolderPaths, pidfd: &OwnedFd) -> Result<(), Refusal> {
    let holder = namespace(&paths.holder);
    let host = namespace(&paths.host);
    let own = namespace(&paths.own);
    judge_holder(running(pidfd), holder, host, own)
}

/// The namespace the link at `path` names (`stat(2)` follows it).
fn namespace(path: &CStr) -> Option<Namespace> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `path` is NUL-terminated, and stat(2) writes a whole `struct
    // stat` into `stat` when it returns 0, the only case it is read in.
    if unsafe { libc::stat(path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: initialised by the successful stat(2) above.
    let stat = unsafe { stat.assume_init() };
    Some(Namespace {
        dev: stat.st_dev,
        ino: stat.st_ino,
    })
}

/// A pidfd for `pid` (close-on-exec), which names that process even once
/// its pid is reused.
pub fn pidfd_open(pid: u32) -> std::io::Result<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).map_err(std::io::Error::other)?;
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new
    // descriptor or -1; nothing else is read or written.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fd = RawFd::try_from(fd).map_err(std::io::Error::other)?;
    // SAFETY: `fd` was just returned by the kernel and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether the process `pidfd` names has not exited: a pidfd polls
/// readable once it has (pidfd_open(2)). A poll that fails proves nothing,
/// so it counts as exited.
pub fn running(pidfd: &OwnedFd) -> bool {
    let mut poll = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, and a zero timeout: poll(2) returns at once.
    unsafe { libc::poll(&mut poll, 1, 0) == 0 }
}

impl Drop for PrivateHost {
    /// Ends the holder; the namespace and its mounts go with the last
    /// process in it.
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

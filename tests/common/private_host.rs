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
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

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

/// The holder: builds the private view, says `ready`, then waits for its
/// stdin to close (its owner gone) or to be killed.
const HOLDER: &str = r#"
set -e
mount -t tmpfs -o mode=0700 rch-sweep-test-stage /run
cd /run
cover /etc passwd group shadow gshadow subuid subgid
mkdir -p /etc/systemd
skeleton /etc/systemd
if [ -d /var/spool/cron ]; then skeleton /var/spool/cron; fi
mount -t tmpfs -o mode=0755 rch-sweep-test-run /run
echo ready
read -r _ || :
"#;

/// Where a test may write through [`PrivateHost::write`] without a cover of
/// its own: what the holder made private (`/etc/systemd` lies in `/etc`).
const PRIVATE: [&str; 3] = ["/etc", "/var/spool/cron", "/run"];

/// A private mount namespace, held open until dropped.
pub struct PrivateHost {
    holder: Child,
    pid: u32,
    /// Folders [`PrivateHost::write`] covered beyond [`PRIVATE`].
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
        let mut line = String::new();
        let said = BufReader::new(holder.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .is_ok();
        if !said || line != "ready\n" {
            let _ = holder.kill();
            let _ = holder.wait();
            let mut why = String::new();
            if let Some(mut stderr) = holder.stderr.take() {
                let _ = stderr.read_to_string(&mut why);
            }
            return Err(format!("the holder did not start: {}", why.trim()));
        }
        // unshare runs the shell in its own process (it execs, no fork):
        // the child is inside the namespace.
        let pid = holder.id();
        Ok(PrivateHost {
            holder,
            pid,
            covered: Mutex::new(Vec::new()),
        })
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
        let mut command = Command::new(NSENTER);
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
        PRIVATE.iter().any(|private| path.starts_with(private))
            || self
                .covered
                .lock()
                .expect("covered")
                .iter()
                .any(|covered| path.starts_with(covered))
    }
}

impl Drop for PrivateHost {
    /// Ends the holder; the namespace and its mounts go with the last
    /// process in it.
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

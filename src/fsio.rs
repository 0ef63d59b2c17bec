//! File primitives for what this tool writes: atomic replacement (temporary
//! file in the same folder, flushed, renamed, folder flushed) and cleanup of
//! temporary files a killed run left behind.
//!
//! Nothing here writes through or replaces a path this tool did not create:
//! [`existing`] classifies what is at a path without following a link, and
//! [`write_atomic`] refuses to rename over anything but a regular file owned
//! by this user. Every file is created, replaced and removed relative to an
//! open [`Folder`], so all the steps of one write land in one folder, and a
//! folder judged on its descriptor (the private state folder,
//! `state::folder`) is the very one written into.
//!
//! Temporary files are named `.<name>.<random>.tmp` so that a later run, holding
//! the lock, can recognise and remove the ones a SIGKILLed run could not.
//!
//! [`read_regular_text`] reads small text files others wrote (unit files,
//! drop-ins, `EnvironmentFile=`s) so that a FIFO or a device standing
//! there never blocks the read or fills memory.

use crate::stat::FileKind;
use crate::sys;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::{File, Permissions};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The folder holding `path` ("." for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// What stands at a path, seen without following a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Existing {
    Missing,
    /// A regular file owned by this user: ours to read and replace.
    Ours(FileId),
    /// A regular file of another user.
    Foreign(FileId),
    /// Anything else: a symlink, directory, FIFO, socket or device.
    Other(FileKind),
}

/// Identifies one file, so a rename can check the path still names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    pub fn of(meta: &std::fs::Metadata) -> FileId {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

/// Classifies `path` with `lstat`, never following a final symlink.
pub fn existing(path: &Path) -> io::Result<Existing> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Existing::Missing),
        Err(error) => return Err(error),
    };
    Ok(match FileKind::of(&meta) {
        FileKind::Regular if meta.uid() == crate::account::euid() => {
            Existing::Ours(FileId::of(&meta))
        }
        FileKind::Regular => Existing::Foreign(FileId::of(&meta)),
        kind => Existing::Other(kind),
    })
}

/// `path` made absolute with every existing ancestor's symlinks resolved;
/// the part that does not exist yet is appended as written (`..` popped).
/// With `follow_final`, an existing final component is resolved too.
pub fn resolve(path: &Path, follow_final: bool) -> io::Result<PathBuf> {
    use std::path::Component;
    let absolute = std::path::absolute(path)?;
    let components: Vec<Component<'_>> = absolute.components().collect();
    let mut resolved = PathBuf::from("/");
    let mut exists = true;
    for (index, component) in components.iter().enumerate() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                resolved.push(name);
                let last = index + 1 == components.len();
                if exists && (follow_final || !last) {
                    match std::fs::canonicalize(&resolved) {
                        Ok(real) => resolved = real,
                        Err(_) => exists = false,
                    }
                }
            }
        }
    }
    Ok(resolved)
}

/// Whether this process may access `path` with `mode` (`R_OK`, `W_OK`,
/// `X_OK`), as the kernel judges it for the effective ids (modes, ACLs, a
/// read-only or `noexec` mount), without opening or running anything.
pub fn may_access(path: &Path, mode: libc::c_int) -> io::Result<()> {
    sys::fs::access(path, mode)
}

/// Whether this process may create and rename files in `folder`.
pub fn may_write_into(folder: &Path) -> io::Result<()> {
    may_access(folder, libc::W_OK | libc::X_OK)
}

/// An open folder that this tool creates, replaces and removes files in,
/// always relative to its descriptor (`openat`, `renameat`, `unlinkat`), so
/// every step lands in the very folder that was opened (and, for the
/// private state folder, checked), whatever happens to its path meanwhile.
#[derive(Debug)]
pub struct Folder {
    dir: File,
    path: PathBuf,
}

impl Folder {
    /// Opens `path` as a folder to write into, following links as any path
    /// is followed (the metrics file's shared textfile folder).
    pub fn open(path: &Path) -> io::Result<Folder> {
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(path)?;
        Ok(Folder {
            dir,
            path: path.to_path_buf(),
        })
    }

    /// Opens `path` as a folder without following its last component
    /// (`O_DIRECTORY|O_NOFOLLOW`: a link, or anything but a folder, is an
    /// error). Whether to trust it is the caller's to judge, on
    /// [`Folder::metadata`]: the descriptor every later step uses.
    pub fn open_nofollow(path: &Path) -> io::Result<Folder> {
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        Ok(Folder {
            dir,
            path: path.to_path_buf(),
        })
    }

    /// What the open folder is (`fstat` of its descriptor).
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        self.dir.metadata()
    }

    /// The path the folder was opened by, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens `name` inside the folder with `open(2)` `flags` (and `mode`
    /// when it is created); `O_CLOEXEC` is always added.
    pub fn open_at(&self, name: &OsStr, flags: libc::c_int, mode: u32) -> io::Result<File> {
        sys::fs::open_at(self.dir.as_fd(), &c_name(name)?, flags, mode)
    }

    /// What stands at `name` in the folder, seen without following a link.
    pub fn existing(&self, name: &OsStr) -> io::Result<Existing> {
        let stat = match stat_at_nofollow(self.dir.as_fd(), &c_name(name)?) {
            Ok(stat) => stat,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Existing::Missing),
            Err(error) => return Err(error),
        };
        let id = FileId {
            dev: stat.st_dev,
            ino: stat.st_ino,
        };
        Ok(match FileKind::of_mode(stat.st_mode) {
            FileKind::Regular if stat.st_uid == crate::account::euid() => Existing::Ours(id),
            FileKind::Regular => Existing::Foreign(id),
            kind => Existing::Other(kind),
        })
    }

    /// Renames `from` to `to`, both inside the folder.
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        sys::fs::rename_at(self.dir.as_fd(), &c_name(from)?, &c_name(to)?)
    }

    /// Removes the file `name` from the folder.
    fn remove(&self, name: &OsStr) -> io::Result<()> {
        sys::fs::unlink_at(self.dir.as_fd(), &c_name(name)?)
    }

    /// Flushes the folder itself (a rename in it is durable once this
    /// returns).
    pub fn sync(&self) -> io::Result<()> {
        self.dir.sync_all()
    }

    /// [`write_atomic`] of the file `name` in this folder: the temporary
    /// file, the check of what it replaces, the rename and the flush all
    /// happen in this folder, by its descriptor.
    pub fn write_atomic(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<()> {
        let prefix = temp_prefix(Path::new(name))?;
        let (mut temp, temp_name) = self.create_temp(&prefix, mode)?;
        let written = (|| {
            temp.set_permissions(Permissions::from_mode(mode))?;
            temp.write_all(bytes)?;
            temp.sync_all()?;
            match self.existing(name)? {
                Existing::Missing | Existing::Ours(_) => {}
                Existing::Foreign(_) => {
                    return Err(not_ours(&self.path.join(name), "another user's file"));
                }
                Existing::Other(kind) => {
                    return Err(not_ours(&self.path.join(name), kind.described()));
                }
            }
            self.rename(&temp_name, name)
        })();
        if let Err(error) = written {
            // A failed write leaves no temporary file behind.
            let _ = self.remove(&temp_name);
            return Err(error);
        }
        self.sync()
    }

    /// A new temporary file `<prefix><random>.tmp` in the folder, created
    /// exclusively (never an existing file or a link's target).
    fn create_temp(&self, prefix: &OsStr, mode: u32) -> io::Result<(File, OsString)> {
        let mut last = None;
        for _ in 0..16 {
            let mut name = prefix.to_os_string();
            name.push(random_text());
            name.push(TEMP_SUFFIX);
            match self.open_at(
                &name,
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
                mode,
            ) {
                Ok(file) => return Ok((file, name)),
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => last = Some(error),
                Err(error) => return Err(error),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)))
    }

    /// [`remove_stale_temps`] for the file `name` in this folder.
    pub fn remove_stale_temps(&self, name: &OsStr) -> io::Result<Vec<PathBuf>> {
        let prefix = temp_prefix(Path::new(name))?;
        let mut stale = Vec::new();
        // Listed by a duplicate of the descriptor: the very folder opened.
        let listing = std::fs::read_dir(format!("/proc/self/fd/{}", self.dir.as_raw_fd()))?;
        for entry in listing {
            let entry_name = entry?.file_name();
            let bytes = entry_name.as_bytes();
            if bytes.starts_with(prefix.as_bytes()) && bytes.ends_with(TEMP_SUFFIX.as_bytes()) {
                stale.push(entry_name);
            }
        }
        let mut removed = Vec::new();
        for entry_name in stale {
            // Only what a killed run of ours can have left: our own regular
            // file. A link or another user's file of that name is not ours.
            if !matches!(self.existing(&entry_name)?, Existing::Ours(_)) {
                continue;
            }
            match self.remove(&entry_name) {
                Ok(()) => removed.push(self.path.join(&entry_name)),
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        Ok(removed)
    }
}

/// The last component of `path`, for the `*at` calls of its folder.
pub fn file_name(path: &Path) -> io::Result<&OsStr> {
    path.file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: what stands at `name` in an
/// open folder, a link seen as a link, never followed. The one place a
/// folder's entries are looked at by descriptor (the state folder, the
/// lease directory).
pub fn stat_at_nofollow(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<libc::stat> {
    sys::fs::stat_at_nofollow(dir, name)
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name contains a NUL byte"))
}

/// 16 hex digits no other run is likely to draw: std's per-process random
/// hash keys over the time, the PID and a counter. A clash only costs a
/// retry, since temporary files are created exclusively.
fn random_text() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    if let Ok(now) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        hasher.write_u128(now.as_nanos());
    }
    format!("{:016x}", hasher.finish())
}

fn temp_prefix(path: &Path) -> io::Result<OsString> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    Ok(prefix)
}

const TEMP_SUFFIX: &str = ".tmp";

/// Replaces `path` with `bytes` so that a crash at any moment leaves either
/// the old file or the new one, never a torn one: a temporary file in the
/// same folder, created exclusively, flushed, renamed over it, then the
/// folder flushed. The file gets
/// exactly `mode` whatever the umask (the temporary file is `fchmod`ed):
/// under `umask 077` a metrics file must still be readable by
/// node_exporter, which runs as another user.
///
/// The folder is opened as any path is ([`Folder::open`]): the metrics
/// file's. The state file is written with [`Folder::write_atomic`] into its
/// checked private folder.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    Folder::open(parent_dir(path))?.write_atomic(file_name(path)?, bytes, mode)
}

fn not_ours(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{} is {what}; rch-sweep replaces only a regular file of its own and left it as it is",
            path.display()
        ),
    )
}

/// Removes temporary files of `path` left by a run that was killed while
/// writing it. Call only while holding the lock, so no live writer owns them.
pub fn remove_stale_temps(path: &Path) -> io::Result<Vec<PathBuf>> {
    match Folder::open(parent_dir(path)) {
        Ok(folder) => folder.remove_stale_temps(file_name(path)?),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(error) => Err(error),
    }
}

/// What [`read_regular_text`] refuses to read: not a regular file (its
/// kind), or more than its limit.
#[derive(Debug)]
pub enum NotRead {
    Io(io::Error),
    NotRegular(FileKind),
    TooLarge(u64),
}

impl std::fmt::Display for NotRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotRead::Io(error) => write!(f, "{error}"),
            NotRead::NotRegular(kind) => {
                write!(f, "it is {}, not a regular file", kind.described())
            }
            NotRead::TooLarge(limit) => write!(
                f,
                "it is too large (over {})",
                crate::human::mebibytes(*limit)
            ),
        }
    }
}

/// The text of the regular file at `path` (a link to one is followed, as
/// systemd follows links in its unit folders), at most `limit` bytes.
/// Opened `O_NONBLOCK` so a FIFO there never blocks the open, then judged
/// on the opened descriptor (`fstat`): anything but a regular file is
/// refused unread, so a FIFO or `/dev/zero` never blocks the read or
/// grows it without end; the read stops one byte past `limit`.
pub fn read_regular_text(path: &Path, limit: u64) -> Result<String, NotRead> {
    read_regular(path, limit).map(|(text, _)| text)
}

/// [`read_regular_text`], with what `fstat` said of the file read (its
/// owner and mode, for a reader with rules about them, as cron has).
pub fn read_regular(path: &Path, limit: u64) -> Result<(String, std::fs::Metadata), NotRead> {
    use std::io::Read;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(NotRead::Io)?;
    let meta = file.metadata().map_err(NotRead::Io)?;
    match FileKind::of(&meta) {
        FileKind::Regular => {}
        kind => return Err(NotRead::NotRegular(kind)),
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(NotRead::Io)?;
    if bytes.len() as u64 > limit {
        return Err(NotRead::TooLarge(limit));
    }
    let text = String::from_utf8(bytes)
        .map_err(|error| NotRead::Io(io::Error::new(io::ErrorKind::InvalidData, error)))?;
    Ok((text, meta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn only_a_regular_file_within_the_limit_is_read_and_a_link_to_one_is_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let unit = dir.path().join("a.conf");
        std::fs::write(&unit, "[Service]\n").expect("write");
        assert_eq!(read_regular_text(&unit, 10).expect("read"), "[Service]\n");
        let link = dir.path().join("link.conf");
        std::os::unix::fs::symlink(&unit, &link).expect("symlink");
        assert_eq!(read_regular_text(&link, 10).expect("read"), "[Service]\n");
        // One byte over the limit is too large; exactly the limit is read.
        assert!(matches!(
            read_regular_text(&unit, 9),
            Err(NotRead::TooLarge(9))
        ));
        // A FIFO with no writer would block a plain open; a device never ends.
        let fifo = dir.path().join("fifo.conf");
        crate::sys::fs::mkfifo(&fifo, 0o600).expect("mkfifo");
        assert!(matches!(
            read_regular_text(&fifo, 10),
            Err(NotRead::NotRegular(FileKind::Fifo))
        ));
        let zero = dir.path().join("zero.conf");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let refused = read_regular_text(&zero, 10).expect_err("a device");
        assert!(matches!(refused, NotRead::NotRegular(FileKind::Device)));
        assert_eq!(
            refused.to_string(),
            format!("it is {}, not a regular file", FileKind::Device.described())
        );
        assert!(matches!(
            read_regular_text(&dir.path().join("gone"), 10),
            Err(NotRead::Io(error)) if error.kind() == io::ErrorKind::NotFound
        ));
    }

    #[test]
    fn atomic_write_replaces_with_the_given_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.json");
        std::fs::write(&path, "old").expect("write");
        write_atomic(&path, b"new", 0o600).expect("atomic write");
        assert_eq!(std::fs::read(&path).expect("read"), b"new");
        assert_eq!(
            std::fs::metadata(&path).expect("meta").mode() & 0o777,
            0o600
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["state.json"]);
    }

    #[test]
    fn only_our_stale_temps_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("backoff.json");
        for name in [
            ".backoff.json.abc123.tmp",
            ".other.json.abc.tmp",
            "backoff.json.tmp",
        ] {
            std::fs::write(dir.path().join(name), "").expect("write");
        }
        std::os::unix::fs::symlink(
            dir.path().join("backoff.json.tmp"),
            dir.path().join(".backoff.json.link.tmp"),
        )
        .expect("symlink");
        let removed = remove_stale_temps(&path).expect("clean");
        assert_eq!(removed, [dir.path().join(".backoff.json.abc123.tmp")]);
        assert!(
            std::fs::symlink_metadata(dir.path().join(".backoff.json.link.tmp")).is_ok(),
            "a link is not ours to remove"
        );
        assert!(dir.path().join(".other.json.abc.tmp").exists());
        assert!(
            remove_stale_temps(&dir.path().join("absent/x.json"))
                .expect("ok")
                .is_empty()
        );
    }

    #[test]
    fn atomic_write_never_replaces_a_link_a_folder_or_a_fifo() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("target");
        std::fs::write(&target, "theirs").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let folder = dir.path().join("folder");
        std::fs::create_dir(&folder).expect("mkdir");
        for path in [&link, &folder] {
            let error = write_atomic(path, b"new", 0o600).expect_err("refused");
            assert!(error.to_string().contains("left it as it is"), "{error}");
        }
        assert_eq!(std::fs::read(&target).expect("read"), b"theirs");
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("lstat")
                .is_symlink()
        );
        assert!(folder.is_dir());
        assert_eq!(
            existing(&link).expect("lstat"),
            Existing::Other(FileKind::Symlink)
        );
        assert!(matches!(
            existing(&target).expect("lstat"),
            Existing::Ours(_)
        ));
        assert_eq!(
            existing(&dir.path().join("none")).expect("lstat"),
            Existing::Missing
        );
    }

    #[test]
    fn resolve_follows_existing_ancestors_and_keeps_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real");
        std::fs::create_dir(&real).expect("mkdir");
        std::os::unix::fs::symlink(&real, dir.path().join("alias")).expect("symlink");
        let real = std::fs::canonicalize(&real).expect("canonical");
        assert_eq!(
            resolve(&dir.path().join("alias/a/../b/c"), true).expect("resolve"),
            real.join("b/c")
        );
        assert_eq!(
            resolve(&dir.path().join("alias"), false).expect("resolve"),
            std::fs::canonicalize(dir.path())
                .expect("canonical")
                .join("alias")
        );
        assert_eq!(
            resolve(&dir.path().join("alias"), true).expect("resolve"),
            real
        );
    }
}

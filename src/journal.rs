//! rch's durable lease journal (`DurableJobLease`, schema 1) and the one safe
//! way this tool reads it.
//!
//! A journal is input from disk, possibly hostile: the reader never follows a
//! link, never blocks on a FIFO, reads at most [`MAX_JOURNAL_BYTES`], and only
//! accepts files owned by the user running the sweep, since a journal is the
//! authority for a recovery run with that user's keys. Unknown fields are
//! allowed so journals of newer rch versions still parse.

use crate::evidence::{FileKind, FileStat};
use serde::Deserialize;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Larger journals are refused; rch's are a few KiB.
pub const MAX_JOURNAL_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct JobIdentity {
    pub local_wrapper_id: String,
    #[serde(default)]
    pub remote_build_id: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseState {
    FailedBeforeAdmission,
    Queued,
    Running,
    Finished,
    Abandoned,
}

/// rch's native owner identity (`process_identity.rs`): the boot it ran in
/// and when it started. Its validity (canonical boot id, a platform this
/// machine can observe) is judged by `owner`, not here: only the shape is
/// rch's to demand.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ProcessIdentity {
    pub boot_id: String,
    pub start: ProcessStart,
}

/// How rch records a process start, tagged by `platform`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "platform", rename_all = "snake_case")]
pub enum ProcessStart {
    /// `/proc/<pid>/stat` field 22.
    Linux { ticks: u64 },
    /// macOS process start time; never observable on Linux.
    Darwin { seconds: u64, microseconds: u32 },
}

/// The fields of rch's journal that the decisions need. The required ones
/// are the ones rch itself requires, so a journal rch would refuse to load
/// is `malformed` here rather than a recovery that fails forever.
#[derive(Debug, Clone, Deserialize)]
pub struct DurableJobLease {
    pub schema_version: u32,
    pub identity: JobIdentity,
    pub wrapper_pid: u32,
    #[serde(default)]
    pub process_start_ticks: Option<u64>,
    #[serde(default)]
    pub boot_id: Option<String>,
    /// Typed as rch types it: a shape rch cannot deserialize makes the whole
    /// journal `malformed`, since `rch jobs recover` could not even load it.
    #[serde(default)]
    pub process_birth: Option<ProcessIdentity>,
    pub state: LeaseState,
    pub phase: String,
    #[serde(default)]
    pub worker_id: Option<String>,
    pub heartbeat_unix_ms: u64,
    pub strict_remote: bool,
    pub self_healing_enabled: bool,
    pub command_fingerprint: String,
    pub terminal_acknowledged: bool,
    /// The recovery recipe, untyped as rch stores it.
    #[serde(default)]
    pub recovery: Option<serde_json::Value>,
    #[serde(default)]
    pub exit_code: Option<i32>,
}

/// Why a journal file could not be turned into a lease. Each carries the
/// fact that decided it, for `explain` and `--verbose`.
#[derive(Debug)]
pub enum ReadFailure {
    /// Gone between listing and opening (or before a re-read).
    Missing,
    /// A symlink, FIFO, socket, directory or other non-regular file.
    NotRegular(FileKind),
    /// Owned by another user (uid None: could not be read).
    ForeignOwner { uid: Option<u32>, euid: u32 },
    /// Larger than [`MAX_JOURNAL_BYTES`].
    TooLarge(u64),
    /// An I/O error.
    Unreadable(String),
    /// Not the lease JSON shape.
    Malformed(String),
}

/// The kind of file a `st_mode` describes.
pub fn file_kind(mode: u32) -> FileKind {
    match mode & libc::S_IFMT {
        libc::S_IFREG => FileKind::Regular,
        libc::S_IFLNK => FileKind::Symlink,
        libc::S_IFDIR => FileKind::Directory,
        libc::S_IFIFO => FileKind::Fifo,
        libc::S_IFSOCK => FileKind::Socket,
        libc::S_IFCHR | libc::S_IFBLK => FileKind::Device,
        _ => FileKind::Unknown,
    }
}

/// `rchw-<uuid>` with the UUID in canonical lowercase hyphenated form: the
/// only names rch writes, and the only ones that may select a file.
pub fn is_wrapper_id(id: &str) -> bool {
    let Some(suffix) = id.strip_prefix("rchw-") else {
        return false;
    };
    is_canonical_uuid(suffix)
}

/// A UUID in canonical lowercase hyphenated form (what rch's `is_valid`
/// requires of a boot id, and of a wrapper id's suffix).
pub fn is_canonical_uuid(text: &str) -> bool {
    let Ok(uuid) = uuid::Uuid::try_parse(text) else {
        return false;
    };
    let mut buffer = uuid::Uuid::encode_buffer();
    uuid.hyphenated().encode_lower(&mut buffer) == text
}

/// The wrapper id a journal file name stands for, if the name is canonical.
pub fn wrapper_id_of(file_name: &[u8]) -> Option<&str> {
    let id = std::str::from_utf8(file_name.strip_suffix(b".json")?).ok()?;
    is_wrapper_id(id).then_some(id)
}

/// An open lease directory. Journals are opened relative to it, so a name
/// can never select a path outside it and the directory is resolved once.
pub struct LeaseDir {
    dir: File,
    euid: u32,
}

impl LeaseDir {
    /// Opens `path`, which must be a directory.
    pub fn open(path: &Path) -> io::Result<LeaseDir> {
        let c_path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `c_path` is a valid NUL-terminated string that outlives the call.
        let fd = unsafe {
            libc::open(
                c_path.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by open and is owned by nobody else.
        let dir = unsafe { File::from_raw_fd(fd) };
        Ok(LeaseDir {
            dir,
            euid: crate::account::euid(),
        })
    }

    /// The user this reader accepts journals of (the effective uid).
    pub fn euid(&self) -> u32 {
        self.euid
    }

    /// What the entry `name` is, without following a link (`lstat`):
    /// `Ok(None)` when there is no such entry.
    pub fn kind(&self, name: &[u8]) -> io::Result<Option<FileKind>> {
        let c_name =
            CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        match self.stat_at(&c_name) {
            Ok(stat) => Ok(Some(file_kind(stat.st_mode))),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Reads the journal `name` into `buffer` (cleared first), refusing what
    /// is not a regular file owned by this user or is too large. Opened with
    /// `O_NOFOLLOW | O_NONBLOCK`, so a symlink or FIFO never blocks or leads
    /// elsewhere; the type and owner are checked on the opened descriptor,
    /// whose size and owner are returned as the evidence they are.
    pub fn read(&self, name: &[u8], buffer: &mut Vec<u8>) -> Result<FileStat, ReadFailure> {
        buffer.clear();
        let c_name = CString::new(name).map_err(|_| ReadFailure::NotRegular(FileKind::Unknown))?;
        // SAFETY: the directory fd is open for the lifetime of `self` and
        // `c_name` is a valid NUL-terminated string.
        let fd = unsafe {
            libc::openat(
                self.dir.as_raw_fd(),
                c_name.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let error = io::Error::last_os_error();
            return Err(match error.raw_os_error() {
                Some(libc::ENOENT) => ReadFailure::Missing,
                // A symlink (ELOOP), a socket (ENXIO) or something else that
                // is not a plain file.
                Some(libc::ELOOP | libc::ENXIO | libc::ENODEV | libc::EISDIR) => {
                    let kind = self.stat_at(&c_name).map(|stat| file_kind(stat.st_mode));
                    ReadFailure::NotRegular(match error.raw_os_error() {
                        Some(libc::ELOOP) => FileKind::Symlink,
                        Some(libc::EISDIR) => FileKind::Directory,
                        _ => kind.unwrap_or(FileKind::Unknown),
                    })
                }
                Some(libc::EACCES | libc::EPERM) => {
                    let uid = self.stat_at(&c_name).ok().map(|stat| stat.st_uid);
                    if uid == Some(self.euid) {
                        ReadFailure::Unreadable(error.to_string())
                    } else {
                        ReadFailure::ForeignOwner {
                            uid,
                            euid: self.euid,
                        }
                    }
                }
                _ => ReadFailure::Unreadable(error.to_string()),
            });
        }
        // SAFETY: `fd` was just returned by openat and is owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        let meta = file
            .metadata()
            .map_err(|error| ReadFailure::Unreadable(error.to_string()))?;
        if !meta.file_type().is_file() {
            return Err(ReadFailure::NotRegular(file_kind(meta.mode())));
        }
        if meta.uid() != self.euid {
            return Err(ReadFailure::ForeignOwner {
                uid: Some(meta.uid()),
                euid: self.euid,
            });
        }
        if meta.len() > MAX_JOURNAL_BYTES {
            return Err(ReadFailure::TooLarge(meta.len()));
        }
        (&file)
            .take(MAX_JOURNAL_BYTES + 1)
            .read_to_end(buffer)
            .map_err(|error| ReadFailure::Unreadable(error.to_string()))?;
        // The file may have grown after fstat.
        if buffer.len() as u64 > MAX_JOURNAL_BYTES {
            return Err(ReadFailure::TooLarge(buffer.len() as u64));
        }
        Ok(FileStat {
            size: buffer.len() as u64,
            uid: meta.uid(),
            euid: self.euid,
        })
    }

    /// Reads and parses the journal of `wrapper_id` (which must be canonical).
    pub fn load(&self, wrapper_id: &str) -> Result<DurableJobLease, ReadFailure> {
        if !is_wrapper_id(wrapper_id) {
            return Err(ReadFailure::Malformed("not a canonical wrapper id".into()));
        }
        let mut buffer = Vec::new();
        self.read(format!("{wrapper_id}.json").as_bytes(), &mut buffer)?;
        parse(&buffer).map_err(|error| ReadFailure::Malformed(error.to_string()))
    }

    /// `fstatat(.., AT_SYMLINK_NOFOLLOW)` of an entry: never follows a link.
    fn stat_at(&self, c_name: &CString) -> io::Result<libc::stat> {
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: the fd and name are valid; `stat` is written by fstatat
        // before it is read, and only read when the call succeeded.
        let rc = unsafe {
            libc::fstatat(
                self.dir.as_raw_fd(),
                c_name.as_ptr(),
                stat.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fstatat returned 0, so it filled `stat`.
        Ok(unsafe { stat.assume_init() })
    }
}

/// The open directory's descriptor, for the lease-directory lock.
impl AsRawFd for LeaseDir {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.dir.as_raw_fd()
    }
}

/// The type an entry's listing gave (`d_type`), before anything is opened.
/// `DT_UNKNOWN` (some file systems never fill it in) is resolved by the scan
/// with [`LeaseDir::kind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListedType(u8);

impl ListedType {
    /// What the listing says the entry is; `Unknown` when it cannot tell.
    pub fn kind(self) -> FileKind {
        match self.0 {
            libc::DT_REG => FileKind::Regular,
            libc::DT_LNK => FileKind::Symlink,
            libc::DT_DIR => FileKind::Directory,
            libc::DT_FIFO => FileKind::Fifo,
            libc::DT_SOCK => FileKind::Socket,
            libc::DT_CHR | libc::DT_BLK => FileKind::Device,
            _ => FileKind::Unknown,
        }
    }
}

/// A stream over the entries of an open [`LeaseDir`], read by its descriptor
/// (never by path again, so a directory renamed or replaced after opening
/// cannot be listed in its place) and consumed as it is read: nothing is
/// collected, so memory does not grow with the number of entries.
pub struct Listing {
    dir: std::ptr::NonNull<libc::DIR>,
}

impl Listing {
    /// The next entry other than `.` and `..`, with its listed type; `None`
    /// at the end. An error means the listing cannot go on (the caller must
    /// not take what it saw for the whole directory).
    pub fn next_entry(&mut self) -> Option<io::Result<(&[u8], ListedType)>> {
        loop {
            // readdir reports an error only through errno, so clear it first.
            // SAFETY: __errno_location returns this thread's errno slot,
            // valid for the thread's lifetime.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: `self.dir` is an open DIR stream owned by this value and
            // used by this thread only (`Listing` is neither Send nor Sync).
            let entry = unsafe { libc::readdir(self.dir.as_ptr()) };
            if entry.is_null() {
                let error = io::Error::last_os_error();
                return match error.raw_os_error() {
                    Some(0) | None => None,
                    Some(_) => Some(Err(error)),
                };
            }
            // SAFETY: readdir returned a non-null pointer to an entry that
            // stays valid until the next readdir or closedir on this stream,
            // both of which need `&mut self`, which the returned borrow holds.
            let (name, kind) = unsafe {
                let entry = &*entry;
                (
                    std::ffi::CStr::from_ptr(entry.d_name.as_ptr()).to_bytes(),
                    entry.d_type,
                )
            };
            if name != b"." && name != b".." {
                return Some(Ok((name, ListedType(kind))));
            }
        }
    }
}

impl Drop for Listing {
    fn drop(&mut self) {
        // SAFETY: the stream is open and owned by this value; closedir also
        // closes the duplicated descriptor it was made from.
        unsafe { libc::closedir(self.dir.as_ptr()) };
    }
}

impl LeaseDir {
    /// Lists the directory by its open descriptor, from the start. The
    /// listing owns a duplicate of the descriptor (close-on-exec, like every
    /// descriptor this tool opens), so reading journals meanwhile is unaffected.
    pub fn list(&self) -> io::Result<Listing> {
        // SAFETY: the directory fd is open for the lifetime of `self`;
        // F_DUPFD_CLOEXEC returns a new descriptor or -1.
        let fd = unsafe { libc::fcntl(self.dir.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor of a directory, owned by nobody
        // else; on success the DIR stream takes it over.
        let dir = unsafe { libc::fdopendir(fd) };
        let Some(dir) = std::ptr::NonNull::new(dir) else {
            let error = io::Error::last_os_error();
            // SAFETY: fdopendir failed, so `fd` is still ours to close.
            unsafe { libc::close(fd) };
            return Err(error);
        };
        // A duplicate shares the file offset: start from the first entry
        // whatever listed this descriptor before.
        // SAFETY: `dir` is the open stream just made.
        unsafe { libc::rewinddir(dir.as_ptr()) };
        Ok(Listing { dir })
    }
}

/// Parses journal bytes. serde_json's recursion limit keeps deeply nested
/// input from exhausting the stack.
pub fn parse(bytes: &[u8]) -> Result<DurableJobLease, serde_json::Error> {
    serde_json::from_slice(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_wrapper_ids_are_accepted() {
        let id = "rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10";
        assert!(is_wrapper_id(id));
        for bad in [
            "rchw-6F1C3B7E-2A4D-4C8E-9B1F-3E5A7D9C2B10",
            "rchw-6f1c3b7e2a4d4c8e9b1f3e5a7d9c2b10",
            "rchw-{6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10}",
            "rchw-urn:uuid:6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10",
            "6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10",
            "rchw-",
            "rchw-../../etc/passwd",
        ] {
            assert!(!is_wrapper_id(bad), "{bad}");
        }
        assert_eq!(wrapper_id_of(format!("{id}.json").as_bytes()), Some(id));
        assert_eq!(wrapper_id_of(id.as_bytes()), None);
        assert_eq!(wrapper_id_of(b"rchw-\xff.json"), None);
    }

    #[test]
    fn the_listing_reads_every_entry_by_descriptor_with_its_type() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.json"), "{}").expect("write");
        std::fs::create_dir(dir.path().join("b.json")).expect("mkdir");
        std::os::unix::fs::symlink("a.json", dir.path().join("c.json")).expect("symlink");
        let lease_dir = LeaseDir::open(dir.path()).expect("open");
        // Listed by the descriptor: renaming the path away changes nothing.
        let moved = dir.path().with_extension("moved");
        std::fs::rename(dir.path(), &moved).expect("rename");
        let list = |lease_dir: &LeaseDir| {
            let mut listing = lease_dir.list().expect("list");
            let mut seen = Vec::new();
            while let Some(entry) = listing.next_entry() {
                let (name, listed) = entry.expect("entry");
                seen.push((String::from_utf8_lossy(name).into_owned(), listed.kind()));
            }
            seen.sort_by(|a, b| a.0.cmp(&b.0));
            seen
        };
        // tmpfs and ext4 fill in d_type; a file system that does not gives
        // Unknown, which leaves the type to the reader's fstat.
        let expected = [
            ("a.json".to_owned(), FileKind::Regular),
            ("b.json".to_owned(), FileKind::Directory),
            ("c.json".to_owned(), FileKind::Symlink),
        ];
        assert_eq!(list(&lease_dir), expected);
        // A second listing starts from the first entry again.
        assert_eq!(list(&lease_dir), expected);
        std::fs::rename(&moved, dir.path()).expect("rename back");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        assert!(parse(deep.as_bytes()).is_err());
        let deep_recipe = format!(r#"{{"recovery": {}}}"#, "[".repeat(100_000));
        assert!(parse(deep_recipe.as_bytes()).is_err());
    }

    fn with_birth(birth: &str) -> String {
        format!(
            r#"{{"schema_version": 1, "identity": {{"local_wrapper_id": "rchw-x"}},
               "wrapper_pid": 5, "process_birth": {birth}, "state": "running",
               "phase": "execute", "heartbeat_unix_ms": 0, "strict_remote": false,
               "self_healing_enabled": true, "command_fingerprint": "blake3:x",
               "terminal_acknowledged": false}}"#
        )
    }

    #[test]
    fn process_birth_must_have_rchs_shape() {
        let boot = "3f1c2a9e-5b7d-4e2a-9c1f-0a1b2c3d4e5f";
        for (birth, expected) in [
            ("null".to_owned(), None),
            (
                format!(r#"{{"boot_id": "{boot}", "start": {{"platform": "linux", "ticks": 7}}}}"#),
                Some(ProcessStart::Linux { ticks: 7 }),
            ),
            (
                format!(
                    r#"{{"boot_id": "{boot}", "start": {{"platform": "darwin", "seconds": 1, "microseconds": 2}}}}"#
                ),
                Some(ProcessStart::Darwin {
                    seconds: 1,
                    microseconds: 2,
                }),
            ),
        ] {
            let lease = parse(with_birth(&birth).as_bytes()).expect(&birth);
            assert_eq!(lease.process_birth.map(|b| b.start), expected, "{birth}");
        }
        for bad in [
            format!(r#""{boot}:123""#),
            format!(r#"{{"boot_id": "{boot}", "start": {{"platform": "linux", "ticks": -1}}}}"#),
            format!(r#"{{"boot_id": "{boot}", "start": {{"platform": "windows", "ticks": 1}}}}"#),
            format!(r#"{{"boot_id": "{boot}", "start": {{"ticks": 1}}}}"#),
            format!(r#"{{"boot_id": "{boot}", "start": {{"platform": "linux"}}}}"#),
            format!(
                r#"{{"boot_id": "{boot}", "start": {{"platform": "darwin", "seconds": 1, "microseconds": 4294967296}}}}"#
            ),
            r#"{"start": {"platform": "linux", "ticks": 1}}"#.to_owned(),
            r#"{"boot_id": 5, "start": {"platform": "linux", "ticks": 1}}"#.to_owned(),
            "[]".to_owned(),
            "7".to_owned(),
        ] {
            assert!(parse(with_birth(&bad).as_bytes()).is_err(), "{bad}");
        }
    }
}

//! The one opener of the lease directory: its open descriptor, the
//! listing read from that descriptor, and each journal opened relative to
//! it.
//!
//! A journal is input from disk, possibly hostile: a journal is opened
//! without following a link or blocking on a FIFO, and only a regular file
//! owned by the user running the sweep, within [`MAX_JOURNAL_BYTES`], is
//! handed on to be read ([`crate::lease::read_lease`]), since a journal
//! is the authority for a recovery run with that user's keys. The path was
//! resolved before ([`super::Identity`]); from here on the directory is
//! reached only by its descriptor, so a name can never select a path
//! outside it.

use crate::fsio;
use crate::lease::{DurableJobLease, MAX_JOURNAL_BYTES, ReadFailure, is_wrapper_id, read_lease};
use crate::stat::{FileKind, FileStat};
use crate::sys;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// An open lease directory. Journals are opened relative to it, so a name
/// can never select a path outside it and the directory is resolved once.
pub struct LeaseDir {
    dir: File,
    euid: u32,
}

impl LeaseDir {
    /// Opens `path`, which must be a directory (`O_DIRECTORY`: anything
    /// else fails with ENOTDIR, and the descriptor names what was opened
    /// however the path changes later). The one place a lease directory is
    /// opened; [`crate::lease_dir::Identity::open`] resolves the path first.
    pub fn open(path: &Path) -> io::Result<LeaseDir> {
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY)
            .open(path)?;
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
            Ok(stat) => Ok(Some(FileKind::of_mode(stat.st_mode))),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Opens the journal `name`, refusing what is not a regular file owned
    /// by this user or is too large. Opened with `O_NOFOLLOW | O_NONBLOCK`,
    /// so a symlink or FIFO never blocks or leads elsewhere; the type, owner
    /// and size are checked on the opened descriptor, and returned as the
    /// evidence they are. [`read_lease`] then parses what was opened.
    pub fn open_journal(&self, name: &[u8]) -> Result<(File, FileStat), ReadFailure> {
        let c_name = CString::new(name).map_err(|_| ReadFailure::NotRegular(FileKind::Unknown))?;
        let opened = sys::fs::open_at(
            self.dir.as_fd(),
            &c_name,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
            0,
        );
        let file = match opened {
            Ok(file) => file,
            Err(error) => return Err(self.refused(&c_name, error)),
        };
        let meta = file
            .metadata()
            .map_err(|error| ReadFailure::unreadable(&error))?;
        if !meta.file_type().is_file() {
            return Err(ReadFailure::NotRegular(FileKind::of(&meta)));
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
        let stat = FileStat {
            size: meta.len(),
            uid: meta.uid(),
            euid: self.euid,
        };
        Ok((file, stat))
    }

    /// What a refused open of the journal `c_name` means: missing, not a
    /// plain file (what the listing or a look without following says it
    /// is), another user's, or unreadable.
    fn refused(&self, c_name: &CString, error: io::Error) -> ReadFailure {
        match error.raw_os_error() {
            Some(libc::ENOENT) => ReadFailure::Missing,
            // A symlink (ELOOP), a socket (ENXIO) or something else that
            // is not a plain file.
            Some(libc::ELOOP | libc::ENXIO | libc::ENODEV | libc::EISDIR) => {
                let kind = self
                    .stat_at(c_name)
                    .map(|stat| FileKind::of_mode(stat.st_mode));
                ReadFailure::NotRegular(match error.raw_os_error() {
                    Some(errno @ (libc::ELOOP | libc::EISDIR)) => {
                        FileKind::refused_open(errno).unwrap_or(FileKind::Unknown)
                    }
                    _ => kind.unwrap_or(FileKind::Unknown),
                })
            }
            Some(libc::EACCES | libc::EPERM) => {
                let uid = self.stat_at(c_name).ok().map(|stat| stat.st_uid);
                if uid == Some(self.euid) {
                    ReadFailure::Unreadable(error.to_string())
                } else {
                    ReadFailure::ForeignOwner {
                        uid,
                        euid: self.euid,
                    }
                }
            }
            _ => ReadFailure::unreadable(&error),
        }
    }

    /// Reads and parses the journal of `wrapper_id` (which must be canonical).
    pub fn load(&self, wrapper_id: &str) -> Result<DurableJobLease, ReadFailure> {
        if !is_wrapper_id(wrapper_id) {
            return Err(ReadFailure::Malformed("not a canonical wrapper id".into()));
        }
        let (file, _) = self.open_journal(format!("{wrapper_id}.json").as_bytes())?;
        read_lease(&file).map(|(lease, _)| lease)
    }

    /// `fstatat(.., AT_SYMLINK_NOFOLLOW)` of an entry: never follows a link.
    fn stat_at(&self, c_name: &CString) -> io::Result<libc::stat> {
        fsio::stat_at_nofollow(self.dir.as_fd(), c_name)
    }
}

/// The open directory's descriptor, borrowed: for what is asked of the
/// directory itself (whether rch could write it) and its sweep lock.
impl AsFd for LeaseDir {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.dir.as_fd()
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
        FileKind::listed(self.0)
    }
}

/// A stream over the entries of an open [`LeaseDir`], read by its descriptor
/// (never by path again, so a directory renamed or replaced after opening
/// cannot be listed in its place) and consumed as it is read: nothing is
/// collected, so memory does not grow with the number of entries.
pub struct Listing {
    stream: sys::fs::DirStream,
}

impl Listing {
    /// The next entry other than `.` and `..`, with its listed type; `None`
    /// at the end. An error means the listing cannot go on (the caller must
    /// not take what it saw for the whole directory).
    pub fn next_entry(&mut self) -> Option<io::Result<(&[u8], ListedType)>> {
        Some(
            self.stream
                .read_entry()?
                .map(|(name, kind)| (name, ListedType(kind))),
        )
    }
}

impl LeaseDir {
    /// Lists the directory by its open descriptor, from the start. The
    /// listing owns a duplicate of the descriptor (close-on-exec, like every
    /// descriptor this tool opens), so reading journals meanwhile is unaffected.
    pub fn list(&self) -> io::Result<Listing> {
        Ok(Listing {
            stream: sys::fs::DirStream::open(self.dir.as_fd())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

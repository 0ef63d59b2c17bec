//! What a path turned out to be: its kind, and the facts `fstat` gave of
//! an opened journal. Plain data at the bottom of the house, with the one
//! classification every reader of a mode, a listing or a refused open uses,
//! so a symlink is called the same thing wherever it is met.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;

/// What kind of directory entry a path turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Regular,
    Symlink,
    Directory,
    Fifo,
    Socket,
    Device,
    /// Could not be told (a listing without `d_type`, an odd mode).
    Unknown,
}

impl FileKind {
    /// The kind a `st_mode` describes.
    pub fn of_mode(mode: u32) -> FileKind {
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

    /// The kind of what `lstat` or `fstat` described.
    pub fn of(meta: &Metadata) -> FileKind {
        FileKind::of_mode(meta.mode())
    }

    /// What a directory listing's `d_type` says; `Unknown` when it cannot
    /// tell (some file systems never fill it in).
    pub fn listed(d_type: u8) -> FileKind {
        match d_type {
            libc::DT_REG => FileKind::Regular,
            libc::DT_LNK => FileKind::Symlink,
            libc::DT_DIR => FileKind::Directory,
            libc::DT_FIFO => FileKind::Fifo,
            libc::DT_SOCK => FileKind::Socket,
            libc::DT_CHR | libc::DT_BLK => FileKind::Device,
            _ => FileKind::Unknown,
        }
    }

    /// What an `open(O_NOFOLLOW | O_NONBLOCK)` that failed with `errno`
    /// proves the path is, when the error alone tells: a link (`ELOOP`), a
    /// directory opened for writing (`EISDIR`), a socket (`ENXIO`).
    pub fn refused_open(errno: i32) -> Option<FileKind> {
        match errno {
            libc::ELOOP => Some(FileKind::Symlink),
            libc::EISDIR => Some(FileKind::Directory),
            libc::ENXIO => Some(FileKind::Socket),
            _ => None,
        }
    }

    /// "a symbolic link", "a directory", … as a message names it.
    pub fn described(self) -> &'static str {
        match self {
            FileKind::Regular => "a regular file",
            FileKind::Symlink => "a symbolic link",
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO",
            FileKind::Socket => "a socket",
            FileKind::Device => "a device",
            FileKind::Unknown => "not a regular file",
        }
    }
}

/// What `fstat` of an opened journal said, and who asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    pub size: u64,
    pub uid: u32,
    /// The user rch-sweep runs as.
    pub euid: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_listings_and_refused_opens_agree() {
        let pairs = [
            (libc::S_IFREG, libc::DT_REG, FileKind::Regular),
            (libc::S_IFLNK, libc::DT_LNK, FileKind::Symlink),
            (libc::S_IFDIR, libc::DT_DIR, FileKind::Directory),
            (libc::S_IFIFO, libc::DT_FIFO, FileKind::Fifo),
            (libc::S_IFSOCK, libc::DT_SOCK, FileKind::Socket),
            (libc::S_IFCHR, libc::DT_CHR, FileKind::Device),
            (libc::S_IFBLK, libc::DT_BLK, FileKind::Device),
        ];
        for (mode, d_type, kind) in pairs {
            assert_eq!(FileKind::of_mode(mode | 0o644), kind);
            assert_eq!(FileKind::listed(d_type), kind);
        }
        assert_eq!(FileKind::listed(libc::DT_UNKNOWN), FileKind::Unknown);
        assert_eq!(FileKind::refused_open(libc::ELOOP), Some(FileKind::Symlink));
        assert_eq!(FileKind::refused_open(libc::ENOENT), None);
        assert_eq!(FileKind::Symlink.described(), "a symbolic link");
    }
}

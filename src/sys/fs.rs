//! Files and folders by descriptor: opened, looked at, renamed and removed
//! relative to an open folder (`openat`, `fstatat`, `renameat`,
//! `unlinkat`), access as the kernel judges it (`faccessat`), a file's
//! mount (`statx`), the file system's room and flags (`statvfs`,
//! `fstatvfs`), the `flock` that keeps two runs apart, and a folder listed
//! by its descriptor (`fdopendir`, `readdir`).
//!
//! Names inside a folder come as `&CStr` (the caller decides what a name
//! with a NUL byte means); whole paths as `&Path`, converted here.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::NonNull;

/// `path` as the NUL-terminated string the kernel takes.
fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// `rc` of a call that returns 0 or -1 with errno.
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `faccessat(AT_FDCWD, path, mode, AT_EACCESS)`: whether this process may
/// access `path` with `mode` (`R_OK`, `W_OK`, `X_OK`), as the kernel judges
/// it for the effective ids, without opening or running anything.
pub fn access(path: &Path, mode: libc::c_int) -> io::Result<()> {
    let c_path = c_path(path)?;
    // SAFETY: `c_path` is a valid NUL-terminated string for the duration
    // of the call, which only reads it.
    check(unsafe { libc::faccessat(libc::AT_FDCWD, c_path.as_ptr(), mode, libc::AT_EACCESS) })
}

/// `faccessat(dir, name, mode, AT_EACCESS)`: [`access`] of `name` relative
/// to the open folder `dir` (`c"."` for the folder itself).
pub fn access_at(dir: BorrowedFd<'_>, name: &CStr, mode: libc::c_int) -> io::Result<()> {
    // SAFETY: the descriptor is open for the borrow and `name` is a valid
    // NUL-terminated string; the call only reads them.
    check(unsafe { libc::faccessat(dir.as_raw_fd(), name.as_ptr(), mode, libc::AT_EACCESS) })
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`: `name` opened relative to
/// the open folder `dir` (`mode` counts only when the file is created).
pub fn open_at(
    dir: BorrowedFd<'_>,
    name: &CStr,
    flags: libc::c_int,
    mode: u32,
) -> io::Result<File> {
    // SAFETY: the descriptor is open for the borrow and `name` is a valid
    // NUL-terminated string; the call only reads it.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and is owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: what stands at `name` in an
/// open folder, a link seen as a link, never followed.
pub fn stat_at_nofollow(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<libc::stat> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: the descriptor is open for the borrow and the name is a valid
    // NUL-terminated string; `stat` is valid for writes and only read below
    // when the call succeeded and so filled it.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            stat.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    check(rc)?;
    // SAFETY: fstatat returned 0, so it filled `stat`.
    Ok(unsafe { stat.assume_init() })
}

/// `fstat` of an open descriptor (one std holds no `File` for, such as
/// stderr).
pub fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: the descriptor is open for the borrow; `stat` is valid for
    // writes and only read below when the call succeeded.
    check(unsafe { libc::fstat(fd.as_raw_fd(), stat.as_mut_ptr()) })?;
    // SAFETY: fstat returned 0, so it filled `stat`.
    Ok(unsafe { stat.assume_init() })
}

/// `renameat(dir, from, dir, to)`: a rename inside one open folder.
pub fn rename_at(dir: BorrowedFd<'_>, from: &CStr, to: &CStr) -> io::Result<()> {
    let fd = dir.as_raw_fd();
    // SAFETY: the descriptor is open for the borrow and both names are
    // valid NUL-terminated strings, only read by the call.
    check(unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) })
}

/// `unlinkat(dir, name, 0)`: the file `name` removed from an open folder.
pub fn unlink_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    // SAFETY: the descriptor is open for the borrow and the name a valid
    // NUL-terminated string, only read by the call.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) })
}

/// `statvfs(path)`: the file system holding `path`, as plain data.
pub fn statvfs(path: &Path) -> io::Result<libc::statvfs> {
    let c_path = c_path(path)?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is NUL-terminated and `stat` valid for writes; both
    // outlive the call, and `stat` is only read when it succeeded.
    check(unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) })?;
    // SAFETY: statvfs returned 0, so it filled `stat`.
    Ok(unsafe { stat.assume_init() })
}

/// `fstatvfs(fd)`: the file system the open descriptor `fd` lies on.
pub fn fstatvfs(fd: BorrowedFd<'_>) -> io::Result<libc::statvfs> {
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: the descriptor is open for the borrow and `stat` is valid for
    // writes of one statvfs, only read when the call succeeded.
    check(unsafe { libc::fstatvfs(fd.as_raw_fd(), stat.as_mut_ptr()) })?;
    // SAFETY: fstatvfs returned 0, so it filled `stat`.
    Ok(unsafe { stat.assume_init() })
}

/// `statx(AT_FDCWD, path, flags, mask)`. Fields the kernel did not fill
/// (not in `stx_mask`) are 0, never undefined: the buffer is zeroed first.
pub fn statx(path: &Path, flags: libc::c_int, mask: libc::c_uint) -> io::Result<libc::statx> {
    let c_path = c_path(path)?;
    let mut buffer = std::mem::MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: `c_path` is a valid NUL-terminated string and `buffer` is
    // valid for writes of one statx; both outlive the call.
    check(unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c_path.as_ptr(),
            flags,
            mask,
            buffer.as_mut_ptr(),
        )
    })?;
    // SAFETY: statx returned 0, so it filled the buffer (zeroed before, so a
    // field it did not fill is 0: all zeroes is a valid statx).
    Ok(unsafe { buffer.assume_init() })
}

/// `mkfifo(path, mode)`: a named pipe (for tests that put one where a file
/// is expected).
pub fn mkfifo(path: &Path, mode: u32) -> io::Result<()> {
    let c_path = c_path(path)?;
    // SAFETY: `c_path` is a valid NUL-terminated string, only read.
    check(unsafe { libc::mkfifo(c_path.as_ptr(), mode as libc::mode_t) })
}

/// What a non-blocking `flock` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TryLock {
    /// The exclusive lock is ours until the descriptor is closed.
    Taken,
    /// Another open file description holds it (`EWOULDBLOCK`).
    Busy,
}

/// `flock(fd, LOCK_EX | LOCK_NB)`: the exclusive lock on the open file
/// description of `fd`, without waiting.
pub fn try_lock_exclusive(fd: BorrowedFd<'_>) -> io::Result<TryLock> {
    // SAFETY: the descriptor is open for the borrow; flock takes integers.
    let rc = unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(TryLock::Taken);
    }
    let error = io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(TryLock::Busy)
    } else {
        Err(error)
    }
}

/// A directory stream (`DIR`) over a duplicate of an open folder's
/// descriptor: its entries read by descriptor, never by path, one at a
/// time (nothing is collected). Neither `Send` nor `Sync`: a stream is read
/// by the thread that made it.
pub struct DirStream {
    dir: NonNull<libc::DIR>,
}

impl DirStream {
    /// Lists the open folder `dir` from its first entry. The stream owns a
    /// close-on-exec duplicate of the descriptor (`F_DUPFD_CLOEXEC`), so `dir` stays usable
    /// (opening files in it meanwhile is unaffected).
    pub fn open(dir: BorrowedFd<'_>) -> io::Result<DirStream> {
        let fd = dir.try_clone_to_owned()?;
        // SAFETY: `fd` is a fresh descriptor of a directory owned by nobody
        // else; on success the DIR stream takes it over.
        let stream = unsafe { libc::fdopendir(fd.as_raw_fd()) };
        let Some(stream) = NonNull::new(stream) else {
            // `fd` is dropped, and so closed, with the error.
            return Err(io::Error::last_os_error());
        };
        // The stream owns the descriptor now; closedir closes it.
        let _ = fd.into_raw_fd();
        // A duplicate shares the file offset: start from the first entry
        // whatever listed this descriptor before.
        // SAFETY: `stream` is the open stream just made.
        unsafe { libc::rewinddir(stream.as_ptr()) };
        Ok(DirStream { dir: stream })
    }

    /// The next entry's name and listed type (`d_type`; `DT_UNKNOWN` where
    /// the file system does not fill it in), `.` and `..` passed over;
    /// `None` at the end. An error means the listing cannot go on.
    pub fn read_entry(&mut self) -> Option<io::Result<(&[u8], u8)>> {
        loop {
            // readdir reports an error only through errno, so clear it first.
            // SAFETY: __errno_location returns this thread's errno slot,
            // valid for the thread's lifetime.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: `self.dir` is an open DIR stream owned by this value and
            // used by this thread only (`DirStream` is neither Send nor Sync).
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
            // both of which need `&mut self`, which the returned borrow
            // holds; d_name is NUL-terminated within the entry.
            let (name, kind) = unsafe {
                let entry = &*entry;
                (
                    CStr::from_ptr(entry.d_name.as_ptr()).to_bytes(),
                    entry.d_type,
                )
            };
            if name != b"." && name != b".." {
                return Some(Ok((name, kind)));
            }
        }
    }
}

impl Drop for DirStream {
    fn drop(&mut self) {
        // SAFETY: the stream is open and owned by this value, and dropped
        // once; closedir also closes the duplicated descriptor it was made
        // from.
        unsafe { libc::closedir(self.dir.as_ptr()) };
    }
}

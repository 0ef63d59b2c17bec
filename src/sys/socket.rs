//! Unix-domain sockets where std falls short: a connect bounded by a
//! timeout, and who listens at the other end (`SO_PEERCRED`).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// A blocking connect to the Unix socket at `path`, bounded by `timeout`:
/// `SO_SNDTIMEO` bounds the wait of a Unix-domain `connect` on a full
/// listen queue (which a non-blocking connect would refuse at once with
/// `EAGAIN` rather than let us wait for), and std has no way to set it
/// before connecting. The descriptor is close-on-exec; the timeout stays
/// set on the stream for its writes.
pub fn connect_unix(path: &Path, timeout: Duration) -> io::Result<UnixStream> {
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: sockaddr_un is plain old data; all zeroes is a valid value.
    let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.is_empty() || bytes.contains(&0) || bytes.len() >= address.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "not a usable socket path (empty, a NUL byte, or longer than {} bytes)",
                address.sun_path.len() - 1
            ),
        ));
    }
    address.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (slot, byte) in address.sun_path.iter_mut().zip(bytes) {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: socket takes plain integers and returns a new descriptor or -1.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket and is owned by nothing else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let timeval = libc::timeval {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_usec: libc::suseconds_t::from(timeout.subsec_micros() as i32),
    };
    // SAFETY: the descriptor is open (`owned`); `timeval` is a valid timeval
    // that outlives the call, and its size is passed with it.
    let rc = unsafe {
        libc::setsockopt(
            owned.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            (&timeval as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let length = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    loop {
        // SAFETY: the descriptor is open; `address` is a valid sockaddr_un
        // whose first `length` bytes hold the family and the NUL-terminated
        // path, and the call only reads them.
        let rc = unsafe {
            libc::connect(
                owned.as_raw_fd(),
                (&address as *const libc::sockaddr_un).cast(),
                length as libc::socklen_t,
            )
        };
        if rc == 0 {
            return Ok(UnixStream::from(owned));
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// The uid of the process at the other end of the connected Unix socket
/// `fd`, as the kernel recorded it when that process listened or connected
/// (`SO_PEERCRED`). (std's `UnixStream::peer_cred` is not stable.)
pub fn peer_uid(fd: BorrowedFd<'_>) -> io::Result<u32> {
    // SAFETY: ucred is plain old data; all zeroes is a valid value.
    let mut credentials: libc::ucred = unsafe { std::mem::zeroed() };
    let mut length = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the descriptor is open for the borrow; `credentials` is a
    // valid ucred that outlives the call, and `length` holds its size,
    // which the kernel writes no further than.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut credentials as *mut libc::ucred).cast(),
            &mut length,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(credentials.uid)
}

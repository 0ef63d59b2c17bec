//! Who this process is (`geteuid`) and what the password database says of
//! an account (`getpwuid_r`), copied out into owned values.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// `geteuid()`: the effective uid.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions, touches no memory of ours and
    // cannot fail.
    unsafe { libc::geteuid() }
}

/// The fields of a password-database entry this program reads, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PasswdEntry {
    /// The login name (`pw_name`), as bytes may not be UTF-8: lossily.
    pub name: String,
    /// `pw_dir`, empty when the entry has none.
    pub home: PathBuf,
    /// `pw_shell`, empty when the entry has none.
    pub shell: PathBuf,
}

/// `getpwuid_r(uid)`: the entry of `uid`, `None` when there is none or the
/// lookup fails. The buffer grows (to at most 1 MiB) while the entry does
/// not fit.
pub fn passwd_entry(uid: u32) -> Option<PasswdEntry> {
    let mut buffer = vec![0u8; 1024];
    loop {
        // SAFETY: all zeroes is a valid passwd (plain data with null
        // pointers) for getpwuid_r to fill.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: `entry`, `buffer` and `found` are valid for writes of the
        // sizes given, and live across the call; on success `found` points
        // at `entry`, whose strings point into `buffer`.
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &mut entry,
                buffer.as_mut_ptr().cast(),
                buffer.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && buffer.len() < 1 << 20 {
            buffer.resize(buffer.len() * 4, 0);
            continue;
        }
        if rc != 0 || found.is_null() || entry.pw_name.is_null() {
            return None;
        }
        let text = |field: *const libc::c_char| {
            if field.is_null() {
                return PathBuf::new();
            }
            // SAFETY: getpwuid_r succeeded, so a non-null field is a
            // NUL-terminated string inside `buffer`, which is still alive.
            let bytes = unsafe { CStr::from_ptr(field) }.to_bytes();
            PathBuf::from(OsStr::from_bytes(bytes))
        };
        // SAFETY: as above; pw_name was checked to be non-null.
        let name = unsafe { CStr::from_ptr(entry.pw_name) };
        return Some(PasswdEntry {
            name: name.to_string_lossy().into_owned(),
            home: text(entry.pw_dir),
            shell: text(entry.pw_shell),
        });
    }
}

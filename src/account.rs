//! Who this process acts as, and who owns what it finds.
//!
//! A recovery runs with the keys and sockets of the user running the sweep,
//! so every trust decision (a journal's owner, the lease directory's owner,
//! the state folder's owner) compares a file's uid with the effective uid
//! read here, and every message about another user names them the way an
//! operator types them (`runuser -u alice`).

use std::ffi::CStr;

/// The effective uid: the user whose keys a recovery would use and whose
/// files this run may replace.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// What the password database says of an account: what cron and systemd
/// hand a job run as it (`LOGNAME`/`USER`, `HOME`, `SHELL`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub name: String,
    pub home: std::path::PathBuf,
    pub shell: std::path::PathBuf,
}

/// The password database's entry of `uid`, if it has one.
pub fn entry(uid: u32) -> Option<Account> {
    use std::os::unix::ffi::OsStrExt;
    let mut buffer = vec![0u8; 1024];
    loop {
        // SAFETY: a zeroed passwd is a valid value for getpwuid_r to fill.
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
                return std::path::PathBuf::new();
            }
            // SAFETY: getpwuid_r succeeded, so a non-null field is a
            // NUL-terminated string inside `buffer`, which is still alive.
            let bytes = unsafe { CStr::from_ptr(field) }.to_bytes();
            std::path::PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
        };
        // SAFETY: as above; pw_name was checked to be non-null.
        let name = unsafe { CStr::from_ptr(entry.pw_name) };
        return Some(Account {
            name: name.to_string_lossy().into_owned(),
            home: text(entry.pw_dir),
            shell: text(entry.pw_shell),
        });
    }
}

/// The login name of `uid` from the password database, if it has one.
pub fn user_name(uid: u32) -> Option<String> {
    entry(uid).map(|account| account.name)
}

/// `alice (uid 1000)`, or `uid 1000` for a uid with no name.
pub fn describe(uid: u32) -> String {
    match user_name(uid) {
        Some(name) => format!("{name} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

/// The name to hand `runuser -u` or a unit instance: the login name, else
/// the numeric uid (which `runuser` does not take, but names the user).
pub fn login(uid: u32) -> String {
    user_name(uid).unwrap_or_else(|| uid.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_has_a_name_and_a_description() {
        assert_eq!(user_name(0).as_deref(), Some("root"));
        assert_eq!(describe(0), "root (uid 0)");
        assert_eq!(login(0), "root");
        let root = entry(0).expect("root's entry");
        assert!(root.home.is_absolute(), "{root:?}");
    }

    #[test]
    fn a_uid_without_an_entry_is_described_by_number() {
        // Far above any uid a test machine's password file holds.
        let uid = 3_999_999_999;
        assert_eq!(user_name(uid), None);
        assert_eq!(describe(uid), format!("uid {uid}"));
    }
}

//! Who this process acts as, and who owns what it finds.
//!
//! A recovery runs with the keys and sockets of the user running the sweep,
//! so every trust decision (a journal's owner, the lease directory's owner,
//! the state folder's owner) compares a file's uid with the effective uid
//! read here, and every message about another user names them the way an
//! operator types them (`runuser -u alice`).

use crate::sys;

/// The effective uid: the user whose keys a recovery would use and whose
/// files this run may replace.
pub fn euid() -> u32 {
    sys::user::euid()
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
    sys::user::passwd_entry(uid).map(|entry| Account {
        name: entry.name,
        home: entry.home,
        shell: entry.shell,
    })
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

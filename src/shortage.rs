//! A host shortage: the kernel had no descriptor, no memory or no room to
//! spare when a journal, `/proc/<pid>/stat` or the boot id was opened or
//! read. Such a failure says nothing about the journal, only about this
//! machine, so a judgement it cut short is no judgement: the run keeps
//! every backoff entry and ends 75 (SPEC's *Exit status*, issue 34).

use std::io;

/// Whether `errno` is a shortage of the host rather than a fact about
/// the file: `EMFILE`, `ENFILE`, `ENOMEM`, `EAGAIN` (`EWOULDBLOCK`).
pub fn is_shortage(errno: Option<i32>) -> bool {
    matches!(
        errno,
        Some(libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::EAGAIN)
    )
}

/// [`is_shortage`] of an I/O error.
pub fn of(error: &io::Error) -> bool {
    is_shortage(error.raw_os_error())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_memory_and_again_are_shortages() {
        for errno in [libc::EMFILE, libc::ENFILE, libc::ENOMEM, libc::EAGAIN] {
            assert!(is_shortage(Some(errno)), "{errno}");
            assert!(of(&io::Error::from_raw_os_error(errno)), "{errno}");
        }
        assert_eq!(libc::EWOULDBLOCK, libc::EAGAIN);
    }

    #[test]
    fn facts_about_the_file_are_not() {
        for errno in [
            libc::ENOENT,
            libc::EACCES,
            libc::EIO,
            libc::ELOOP,
            libc::EISDIR,
        ] {
            assert!(!is_shortage(Some(errno)), "{errno}");
        }
        assert!(!is_shortage(None));
        assert!(!of(&io::Error::other("parse")));
    }
}

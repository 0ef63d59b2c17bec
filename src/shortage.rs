//! A host shortage: the kernel had no descriptor, no memory or no room to
//! spare when a journal, `/proc/<pid>/stat` or the boot id was opened or
//! read. Such a failure says nothing about the journal, only about this
//! machine, so a judgement it cut short is no judgement: the run keeps
//! every backoff entry and ends 75 (SPEC's *Exit status*, issue 34).

use std::io;

/// What ran out, when `errno` is a shortage of the host rather than a
/// fact about the file or the program: `EAGAIN` (`EWOULDBLOCK`), `ENOMEM`,
/// `EMFILE`, `ENFILE`. The one list of them, for a journal that could not
/// be read and for a child, thread or pipe that could not be made.
pub fn what_ran_out(errno: Option<i32>) -> Option<&'static str> {
    match errno? {
        libc::EAGAIN => Some(
            "no thread or process could be created: this user's process limit (RLIMIT_NPROC, a unit's TasksMax) or the system's is reached",
        ),
        libc::ENOMEM => Some("out of memory"),
        libc::EMFILE => Some("this process has too many open files (RLIMIT_NOFILE)"),
        libc::ENFILE => Some("the system has too many open files (fs.file-max)"),
        _ => None,
    }
}

/// What ran out, when an I/O `error` says the host could not create a
/// thread, a process, a pipe or a descriptor, or find the memory, now.
pub fn what(error: &io::Error) -> Option<&'static str> {
    what_ran_out(error.raw_os_error())
}

/// Whether `errno` is a shortage ([`what_ran_out`]).
pub fn is_shortage(errno: Option<i32>) -> bool {
    what_ran_out(errno).is_some()
}

/// [`is_shortage`] of an I/O error.
pub fn of(error: &io::Error) -> bool {
    what(error).is_some()
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

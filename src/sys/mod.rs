//! The one room where this program talks to the kernel through `libc`:
//! every system call std does not already wrap safely is made here, behind
//! a safe function with a typed result (`io::Result`, a small enum), so no
//! other module has to audit a pointer, a buffer's lifetime or an `errno`
//! read to understand a lease directory or a health probe. Every `unsafe`
//! block of the crate is in this folder, each under a `// SAFETY:` line
//! saying why it holds (`#![deny(unsafe_code)]` at the crate root, allowed
//! on this module alone).
//!
//! Policy stays with the callers: which flags a journal is opened with,
//! which signals end a run, what a refused open means. This room only
//! makes the calls and turns their results into Rust values.
//!
//! The rooms, by what they hold:
//! - [`fs`]: files and folders by descriptor (`openat`, `fstatat`,
//!   `renameat`, `unlinkat`, `faccessat`, `statx`, `statvfs`, `fstatvfs`,
//!   `flock`, a directory listed by descriptor);
//! - [`fd`]: descriptor flags and readiness (close-on-exec, `poll`);
//! - [`process`]: this process and its children (`getrlimit`, `kill` of a
//!   process group, `pidfd_open`, `waitid` without reaping);
//! - [`user`]: the effective uid and the password database;
//! - [`signal`]: dispositions and masks (the stop-signal recorder, SIGCHLD
//!   reset, blocking);
//! - [`socket`]: a Unix-socket connect bounded by `SO_SNDTIMEO`, and the
//!   listener's uid (`SO_PEERCRED`);
//! - [`env`](mod@env): the environment changed while only one thread exists;
//! - [`prechild`]: what runs in a forked child before `execve`.
//!
//! # Between fork and exec
//!
//! The forked child of a multi-threaded process may only make
//! async-signal-safe calls: no allocation, no lock (another thread may have
//! held the allocator's at the fork). Only these functions may run there,
//! and [`prechild::exec_in_child`] is the one place that runs them: each
//! makes plain system calls on values prepared before the fork and builds
//! its errors from raw errnos (`io::Error::from_raw_os_error` and
//! `last_os_error` do not allocate):
//! - [`prechild::set_parent_death_signal`] and [`prechild::parent_pid`]
//!   (`prctl(PR_SET_PDEATHSIG)`, `getppid`);
//! - [`fd::close_range_cloexec`] and [`fd::set_cloexec_below`] (`close_range`,
//!   `fcntl(F_SETFD)`);
//! - [`prechild::ExecImage::exec`] (`execve`).
//!
//! Nothing else here may be called in a forked child.
//!
//! May use: nothing of the crate; every other room may use it.

pub mod env;
pub mod fd;
pub mod fs;
pub mod prechild;
pub mod process;
pub mod signal;
pub mod socket;
pub mod user;

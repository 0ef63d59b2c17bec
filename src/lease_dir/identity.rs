//! The lease directory's one identity, resolved once at start.
//!
//! Everything a run derives from the lease directory (the child's
//! `RCH_STATE_HOME`, the default state path, the sweep lock, the metrics
//! label) must name the very directory that was judged, however it
//! was reached: `--lease-dir .` from inside it, a symlink, a path with `..`.
//! So the path is resolved as `realpath` does, once, and the resolved path is
//! what the rest of the run uses; messages name the path as given and, when
//! it differs, the resolved one.
//!
//! One exception, for storage moved behind a link: when the path's own last
//! component is a symbolic link named `job-leases`, rch reaches the target
//! through that link from its state home, so the state home is the link's
//! parent (resolved), not the target's; the sweep lock, the owner rule and
//! the metrics label still use the target.

use super::LeaseDir;
use crate::config;
use std::ffi::OsStr;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The name rch gives its lease directory under its state home.
pub const JOB_LEASES: &str = "job-leases";

/// What stands at the lease directory's path.
#[derive(Debug)]
pub enum LeaseDirFound {
    /// Nothing: nothing to sweep (yet).
    Missing,
    /// A directory, owned by `uid`.
    Directory { uid: u32 },
    /// Something that is not a directory.
    NotADirectory,
    /// It could not be looked at.
    Unreadable(io::Error),
}

/// The lease directory of one command.
#[derive(Debug)]
pub struct Identity {
    /// As given by `--lease-dir` / `RCH_SWEEP_LEASE_DIR`, or rch's default.
    pub given: PathBuf,
    /// Named explicitly (a typo there would sweep nothing forever).
    pub explicit: bool,
    /// Absolute, with symlinks, `.` and `..` resolved; a missing directory
    /// is made absolute without resolving.
    pub resolved: PathBuf,
    pub found: LeaseDirFound,
    /// The link's parent, resolved, when `given` itself is a symbolic link
    /// named `job-leases` (rch's folder moved to other storage): the state
    /// home through which rch reaches the target whatever it is named.
    behind_link: Option<PathBuf>,
}

impl Identity {
    /// Resolves the lease directory a command was given (`None`: rch's own
    /// default, from the environment).
    pub fn resolve(given: Option<&Path>) -> Identity {
        let explicit = given.is_some();
        let given = given
            .map(Path::to_path_buf)
            .unwrap_or_else(|| config::default_lease_dir(config::process_env));
        let absolute = || std::path::absolute(&given).unwrap_or_else(|_| given.clone());
        let (resolved, found) = match std::fs::canonicalize(&given) {
            Ok(resolved) => {
                let found = match std::fs::metadata(&resolved) {
                    Ok(meta) if meta.is_dir() => LeaseDirFound::Directory { uid: meta.uid() },
                    Ok(_) => LeaseDirFound::NotADirectory,
                    Err(error) => LeaseDirFound::Unreadable(error),
                };
                (resolved, found)
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                (absolute(), LeaseDirFound::Missing)
            }
            Err(error) if error.raw_os_error() == Some(libc::ENOTDIR) => {
                (absolute(), LeaseDirFound::NotADirectory)
            }
            Err(error) => (absolute(), LeaseDirFound::Unreadable(error)),
        };
        let behind_link = moved_behind_link(&given);
        Identity {
            given,
            explicit,
            resolved,
            found,
            behind_link,
        }
    }

    /// The path for messages: as given, plus the resolved one when they
    /// differ, so an operator recognises what they typed and sees what it
    /// reached.
    pub fn display(&self) -> String {
        if self.given == self.resolved {
            self.given.display().to_string()
        } else {
            format!(
                "{} (resolved: {})",
                self.given.display(),
                self.resolved.display()
            )
        }
    }

    /// rch's state home for this directory: what the child is handed as
    /// `RCH_STATE_HOME`, so rch resolves exactly this lease directory (for
    /// storage moved behind a link, through that link).
    pub fn state_home(&self) -> &Path {
        if let Some(parent) = &self.behind_link {
            return parent;
        }
        match self.resolved.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => &self.resolved,
        }
    }

    /// The state file used when none is named: beside rch's own state,
    /// derived from the resolved path (for storage moved behind a link,
    /// beside the link, in rch's state home).
    pub fn default_state_file(&self) -> PathBuf {
        match &self.behind_link {
            Some(parent) => parent.join("rch-sweep").join("backoff.json"),
            None => config::default_state_file(&self.resolved),
        }
    }

    /// Whether `rch` finds this directory as `<state home>/job-leases`:
    /// the resolved directory carries that name, or the path given is a
    /// link of that name. A real run refuses any other, since `rch` would
    /// look elsewhere.
    pub fn named_job_leases(&self) -> bool {
        self.behind_link.is_some() || self.resolved.file_name() == Some(OsStr::new(JOB_LEASES))
    }

    /// The owner, when it is a directory.
    pub fn owner(&self) -> Option<u32> {
        match self.found {
            LeaseDirFound::Directory { uid } => Some(uid),
            _ => None,
        }
    }

    /// Opens the resolved directory for listing and reading journals.
    pub fn open(&self) -> io::Result<LeaseDir> {
        LeaseDir::open(&self.resolved)
    }

    /// A `job-leases` folder inside a lease directory that holds no
    /// journal: the operator most likely named rch's state home instead of
    /// its lease directory. Costs one `lstat` unless such a folder exists.
    pub fn nested_job_leases(&self) -> Option<PathBuf> {
        self.owner()?;
        let nested = self.resolved.join(JOB_LEASES);
        if !std::fs::symlink_metadata(&nested).is_ok_and(|meta| meta.is_dir()) {
            return None;
        }
        let dir = self.open().ok()?;
        let mut listing = dir.list().ok()?;
        while let Some(entry) = listing.next_entry() {
            if entry.is_ok_and(|(name, _)| name.ends_with(b".json")) {
                return None;
            }
        }
        Some(nested)
    }
}

/// For a path whose own last component is a symbolic link named
/// `job-leases`: the link's parent, absolute with its own symlinks
/// resolved. `None` for any other path (a link elsewhere in it is resolved
/// with the rest).
fn moved_behind_link(given: &Path) -> Option<PathBuf> {
    let name = given.file_name().filter(|name| *name == JOB_LEASES)?;
    let parent = match given.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    // The link itself, not what a trailing `/` would make of it.
    let meta = std::fs::symlink_metadata(parent.join(name)).ok()?;
    if !meta.is_symlink() {
        return None;
    }
    std::fs::canonicalize(parent).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_alias_resolves_to_one_directory() {
        let world = tempfile::tempdir().expect("tempdir");
        let real = world.path().join("state/job-leases");
        std::fs::create_dir_all(&real).expect("mkdir");
        std::os::unix::fs::symlink(&real, world.path().join("alias")).expect("symlink");
        let real = std::fs::canonicalize(&real).expect("canonical");
        for given in [
            world.path().join("alias"),
            world.path().join("state/../state/job-leases/."),
        ] {
            let identity = Identity::resolve(Some(&given));
            assert_eq!(identity.resolved, real);
            assert!(identity.named_job_leases());
            assert!(matches!(identity.found, LeaseDirFound::Directory { .. }));
            assert_eq!(identity.state_home(), real.parent().expect("parent"));
            assert_eq!(
                identity.default_state_file(),
                real.parent()
                    .expect("parent")
                    .join("rch-sweep/backoff.json")
            );
            assert!(identity.display().contains("(resolved: "));
        }
        let plain = Identity::resolve(Some(&real));
        assert_eq!(plain.display(), real.display().to_string());
    }

    #[test]
    fn a_link_named_job_leases_is_reached_from_its_own_parent() {
        let world = tempfile::tempdir().expect("tempdir");
        let storage = world.path().join("srv/dev-leases");
        let home = world.path().join("home/state/rch");
        std::fs::create_dir_all(&storage).expect("mkdir");
        std::fs::create_dir_all(&home).expect("mkdir");
        std::os::unix::fs::symlink(&storage, home.join(JOB_LEASES)).expect("symlink");
        // The state home is reached through a link of its own too.
        std::os::unix::fs::symlink(&home, world.path().join("alias")).expect("symlink");
        let home = std::fs::canonicalize(&home).expect("canonical");
        let storage = std::fs::canonicalize(&storage).expect("canonical");
        for given in [
            world.path().join("alias/job-leases"),
            world.path().join("alias/job-leases/"),
        ] {
            let identity = Identity::resolve(Some(&given));
            assert_eq!(identity.resolved, storage, "{given:?}");
            assert!(identity.named_job_leases());
            assert_eq!(identity.state_home(), home);
            assert_eq!(
                identity.default_state_file(),
                home.join("rch-sweep/backoff.json")
            );
        }
        // A link named otherwise is judged by its target's name, as before.
        std::os::unix::fs::symlink(&storage, world.path().join("leases")).expect("symlink");
        let other = Identity::resolve(Some(&world.path().join("leases")));
        assert!(!other.named_job_leases());
        assert_eq!(other.state_home(), storage.parent().expect("parent"));
    }

    #[test]
    fn a_missing_directory_is_made_absolute_and_a_file_is_no_directory() {
        let world = tempfile::tempdir().expect("tempdir");
        let missing = Identity::resolve(Some(&world.path().join("absent/job-leases")));
        assert!(matches!(missing.found, LeaseDirFound::Missing));
        assert!(missing.resolved.is_absolute());
        assert_eq!(missing.owner(), None);
        let file = world.path().join("file");
        std::fs::write(&file, "").expect("write");
        for given in [file.clone(), file.join("below")] {
            assert!(matches!(
                Identity::resolve(Some(&given)).found,
                LeaseDirFound::NotADirectory
            ));
        }
    }

    #[test]
    fn a_state_home_named_instead_of_its_lease_directory_is_recognised() {
        let world = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(world.path().join("job-leases")).expect("mkdir");
        let identity = Identity::resolve(Some(world.path()));
        assert_eq!(
            identity.nested_job_leases(),
            Some(identity.resolved.join("job-leases"))
        );
        std::fs::write(world.path().join("rchw-x.json"), "{}").expect("write");
        assert_eq!(identity.nested_job_leases(), None);
    }
}

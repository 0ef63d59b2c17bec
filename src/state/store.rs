//! The state as its writers (a real run, `forget`) hold it: the private
//! state folder opened once, before the lock, and that one descriptor
//! serving every later step: the lock, reading the state, moving a
//! corrupt one aside, the temporary file, the rename, the flush.
//!
//! No step opens the folder by its path again, so the lock and the state
//! always lie in the one folder that was checked ([`open_private`]): a
//! folder renamed away and replaced mid-run (even by one the owner rule
//! accepts, a root-owned sticky folder) keeps the run's state beside its
//! lock, never in the newcomer. Readers that take no lock (a dry run,
//! `status`, `explain`, `doctor`) read by path ([`super::file`]).

use super::backoff::Backoff;
use super::file::{self, Access, Loaded, StateFound};
use super::folder::{create_private, open_private};
use super::lock::{self, StateLock};
use crate::exit::{ExitCode, Fatal};
use crate::fsio::{self, Existing, FileId, Folder};
use crate::log;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// The state file in its opened, checked folder.
#[derive(Debug)]
pub struct Store {
    folder: Folder,
    /// The state file's name in the folder.
    name: OsString,
    /// The state file's path, for messages.
    path: PathBuf,
}

impl Store {
    /// Creates the state folder of `state_file` when it is missing
    /// (`mkdir`, 0700) and opens it once, checked on its descriptor: for a
    /// run.
    pub fn create(state_file: &Path) -> io::Result<Store> {
        Store::with(state_file, create_private)
    }

    /// Opens the existing state folder of `state_file` once, checked on its
    /// descriptor: for `forget`.
    pub fn open(state_file: &Path) -> io::Result<Store> {
        Store::with(state_file, open_private)
    }

    fn with(state_file: &Path, open: fn(&Path) -> io::Result<Folder>) -> io::Result<Store> {
        let name = fsio::file_name(state_file)?.to_os_string();
        Ok(Store {
            folder: open(fsio::parent_dir(state_file))?,
            name,
            path: state_file.to_path_buf(),
        })
    }

    /// The state file's path, as it was named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the state lock (`<state file>.lock`) in this folder: busy is
    /// 75, any other failure 74.
    pub fn lock(&self) -> anyhow::Result<StateLock> {
        lock::acquire_for(&self.folder, &self.path)
    }

    /// Reads the state file in this folder without following a link or
    /// blocking; refused (74) when it is not this user's regular file.
    fn read(&self) -> anyhow::Result<(StateFound, Option<FileId>)> {
        self.read_as(Access::Write)
    }

    /// The state file in this folder, read as a reader that changes
    /// nothing reads it (empty when there is none, `None` when it cannot
    /// be read): the last success and the held leases that the metrics of
    /// a run that stopped on an error after it opened this folder report,
    /// read through this folder and never by the path again (SPEC
    /// "Files").
    pub fn as_it_stands(&self) -> Option<Backoff> {
        match self.read_as(Access::Read) {
            Ok((StateFound::Valid(backoff), _)) => Some(backoff),
            // No run has saved a state here: none held any lease.
            Ok((StateFound::Missing, _)) => Some(Backoff::empty()),
            _ => None,
        }
    }

    fn read_as(&self, access: Access) -> anyhow::Result<(StateFound, Option<FileId>)> {
        let found = self.folder.existing(&self.name);
        if file::judge_existing(found, &self.path, access)?.is_none() {
            return Ok((StateFound::Missing, None));
        }
        let opened = self.folder.open_at(
            &self.name,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
            0,
        );
        match opened {
            Ok(opened) => file::read_opened(opened, &self.path, access),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                Ok((StateFound::Missing, None))
            }
            Err(error) => Err(file::read_error(&self.path, error)),
        }
    }

    /// The state a real run starts from. A corrupt file is moved aside
    /// (kept for a person to read, never overwritten) and the run starts
    /// with empty backoff; should it not move, the run stops (74) rather
    /// than lose it.
    pub fn load_for_run(&self, now_ms: u64) -> anyhow::Result<Backoff> {
        match file::loaded(&self.path, self.read()?)? {
            Loaded::Missing => Ok(Backoff::empty()),
            Loaded::Valid(backoff) => Ok(backoff),
            Loaded::Corrupt(why, read) => {
                let shown = self.path.display();
                let aside = self.quarantine(read, now_ms).map_err(|error| {
                    Fatal::error(
                        ExitCode::Io,
                        format!(
                            "state file {shown} does not parse ({why}) and cannot be moved aside: {error}"
                        ),
                    )
                })?;
                log::warn(format!(
                    "state file {shown} does not parse ({why}); moved it to {} and starting with empty backoff",
                    aside.display()
                ));
                Ok(Backoff::empty())
            }
        }
    }

    /// The state as `forget` changes it: `None` when there is none; a
    /// corrupt file is an error (only a run moves it aside).
    pub fn load_existing(&self) -> anyhow::Result<Option<Backoff>> {
        file::existing(&self.path, file::loaded(&self.path, self.read()?)?)
    }

    /// Moves the corrupt state file `read` to `<name>.corrupt-<unix_ms>`
    /// beside it, only if the name still names that very file (same dev
    /// and inode).
    pub fn quarantine(&self, read: FileId, now_ms: u64) -> io::Result<PathBuf> {
        match self.folder.existing(&self.name)? {
            Existing::Ours(now) if now == read => {}
            _ => {
                return Err(io::Error::other(
                    "it changed after it was read; left it as it is",
                ));
            }
        }
        let mut aside = self.name.clone();
        aside.push(format!(".corrupt-{now_ms}"));
        self.folder.rename(&self.name, &aside)?;
        Ok(self.path.with_file_name(aside))
    }

    /// Writes the state atomically, mode 0600, in this folder.
    pub fn save(&self, backoff: &Backoff) -> io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(backoff).map_err(io::Error::other)?;
        bytes.push(b'\n');
        self.folder.write_atomic(&self.name, &bytes, 0o600)
    }

    /// Removes the temporary files of the state file a killed run left in
    /// this folder (only our own regular files); call only while holding
    /// the lock.
    pub fn remove_stale_temps(&self) -> io::Result<Vec<PathBuf>> {
        self.folder.remove_stale_temps(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::file::read;

    #[test]
    fn save_then_read_round_trips_and_quarantine_moves_aside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("backoff.json");
        let store = Store::create(&path).expect("store");
        assert!(matches!(store.read().expect("read").0, StateFound::Missing));
        let mut backoff = Backoff::empty();
        backoff.last_success_unix_ms = Some(5);
        store.save(&backoff).expect("save");
        assert!(
            matches!(read(&path, Access::Write).expect("read").0, StateFound::Valid(b) if b == backoff)
        );
        assert_eq!(store.load_existing().expect("load"), Some(backoff));
        std::fs::write(&path, "garbage").expect("write");
        let (found, id) = store.read().expect("read");
        assert!(matches!(found, StateFound::Corrupt(_)));
        let aside = store
            .quarantine(id.expect("identified"), 42)
            .expect("quarantine");
        assert_eq!(aside, dir.path().join("backoff.json.corrupt-42"));
        assert_eq!(std::fs::read(&aside).expect("read"), b"garbage");
        assert!(!path.exists());
    }

    #[test]
    fn quarantine_leaves_a_file_that_changed_since_it_was_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("backoff.json");
        std::fs::write(&path, "garbage").expect("write");
        let store = Store::open(&path).expect("store");
        let (_, id) = store.read().expect("read");
        // Replaced by another file since (a new inode at the same path).
        let other = dir.path().join("other");
        std::fs::write(&other, "new").expect("write");
        std::fs::rename(&other, &path).expect("rename");
        assert!(store.quarantine(id.expect("identified"), 42).is_err());
        assert_eq!(std::fs::read(&path).expect("read"), b"new");
    }

    #[test]
    fn every_step_stays_in_the_folder_opened_whatever_its_path_becomes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().join("rch-sweep");
        let path = folder.join("backoff.json");
        let store = Store::create(&path).expect("store");
        let lock = store.lock().expect("lock");
        std::fs::write(&path, "garbage").expect("write");
        // Renamed away, and another folder put at its path.
        let moved = dir.path().join("moved");
        std::fs::rename(&folder, &moved).expect("rename");
        std::fs::create_dir(&folder).expect("mkdir");
        std::fs::write(folder.join("backoff.json"), "{\"version\": 1}").expect("write");
        // The corrupt file read and moved aside is the one in the opened
        // folder, where the lock is; the state is saved there too.
        assert_eq!(store.load_for_run(7).expect("load"), Backoff::empty());
        store.save(&Backoff::empty()).expect("save");
        drop(lock);
        let mut left: Vec<String> = std::fs::read_dir(&moved)
            .expect("list")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "backoff.json",
                "backoff.json.corrupt-7",
                "backoff.json.lock"
            ]
        );
        assert_eq!(
            std::fs::read_to_string(folder.join("backoff.json")).expect("read"),
            "{\"version\": 1}"
        );
        assert_eq!(std::fs::read_dir(&folder).expect("list").count(), 1);
    }
}

//! Which device `/proc/locks` names a file by.
//!
//! `/proc/locks` prints a lock's file as `major:minor:inode`, where the
//! device is its file system's own (the superblock's). `stat`'s `st_dev`
//! is another on btrfs (every subvolume has an anonymous device of its
//! own) and on overlayfs whose layers lie on other file systems, so a
//! lookup by `st_dev` never matches there and a held lock looks free. The
//! superblock's device is the `major:minor` field of the file's mount in
//! `/proc/self/mountinfo`: the mount `statx` names by its mount id
//! (`STATX_MNT_ID`), else, where the kernel reports none, the longest
//! mount point that contains the file.
//!
//! [`parse`] and [`device_of`] are pure; [`lock_id`] is the one I/O, and
//! reads the mount table at most once a process (again only when a mount
//! id is not in it: a mount made since), and only when a lock is looked
//! up, so a run with nothing due reads nothing.

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One line of `/proc/self/mountinfo`: what a lock lookup needs of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// The mount id (`statx`'s `stx_mnt_id`).
    pub id: u64,
    /// The file system's device, as `/proc/locks` prints it.
    pub major: u32,
    pub minor: u32,
    /// Where it is mounted, unescaped.
    pub point: PathBuf,
    /// The file system's type (`ext4`, `nfs4`, `tmpfs`), as the kernel
    /// names it: what a message about its locks names.
    pub fs_type: String,
}

/// The mounts of a `/proc/self/mountinfo` text, in its order (a mount
/// listed later is on top of an earlier one at the same point). A line
/// that is not of the kernel's form (`id parent major:minor root point
/// options [optional fields...] - type source super-options`) is left out.
pub fn parse(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Mount> {
    let fields: Vec<&str> = line.split(' ').collect();
    // Six fixed fields, any number of optional ones, then the separator
    // and the three after it.
    let separator = fields.iter().skip(6).position(|field| *field == "-")? + 6;
    if fields.len() < separator + 3 {
        return None;
    }
    let (major, minor) = fields[2].split_once(':')?;
    Some(Mount {
        id: fields[0].parse().ok()?,
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        point: PathBuf::from(unescape(fields[4])),
        fs_type: fields[separator + 1].to_owned(),
    })
}

/// A mount point as the kernel writes it: space, tab, newline and
/// backslash as three octal digits after a backslash (`\040`).
fn unescape(field: &str) -> OsString {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let octal = bytes
            .get(at + 1..at + 4)
            .filter(|digits| bytes[at] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .map(|digits| {
                digits
                    .iter()
                    .fold(0u32, |value, digit| value * 8 + u32::from(digit - b'0'))
            })
            .and_then(|value| u8::try_from(value).ok());
        match octal {
            Some(byte) => {
                out.push(byte);
                at += 4;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    OsString::from_vec(out)
}

/// The device (`major`, `minor`) `/proc/locks` names the file at the
/// absolute, resolved `path` by: its mount's, found by `mount_id` when
/// the kernel gave one and it is listed, else by the longest mount point
/// containing `path` (the one on top, of several at one point).
pub fn device_of(mounts: &[Mount], mount_id: Option<u64>, path: &Path) -> Option<(u32, u32)> {
    mount_of(mounts, mount_id, path).map(|mount| (mount.major, mount.minor))
}

/// The mount of the file at the absolute, resolved `path`, found as
/// [`device_of`] finds it.
fn mount_of<'a>(mounts: &'a [Mount], mount_id: Option<u64>, path: &Path) -> Option<&'a Mount> {
    let by_id = mount_id.and_then(|id| mounts.iter().find(|mount| mount.id == id));
    by_id.or_else(|| {
        mounts
            .iter()
            .filter(|mount| path.starts_with(&mount.point))
            // max_by_key keeps the last of equals: the mount on top.
            .max_by_key(|mount| mount.point.components().count())
    })
}

/// A file as `/proc/locks` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockId {
    pub major: u32,
    pub minor: u32,
    pub ino: u64,
}

/// How `statx` saw a file.
struct Statx {
    ino: u64,
    /// `st_dev`: the fallback when the mount table cannot be read.
    major: u32,
    minor: u32,
    /// The mount id, where the kernel reports one (Linux 5.8 and later).
    mount_id: Option<u64>,
}

/// `statx(path)` with the mount id; a final link followed only with
/// `follow`. Where `statx` itself is refused (a seccomp filter, an old
/// kernel), `stat` without a mount id.
fn statx(path: &Path, follow: bool) -> io::Result<Statx> {
    let flags = if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
    let stat = match crate::sys::fs::statx(path, flags, libc::STATX_INO | libc::STATX_MNT_ID) {
        Ok(stat) => stat,
        Err(error) if matches!(error.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
            use std::os::unix::fs::MetadataExt;
            let meta = if follow {
                std::fs::metadata(path)?
            } else {
                std::fs::symlink_metadata(path)?
            };
            return Ok(Statx {
                ino: meta.ino(),
                major: libc::major(meta.dev()),
                minor: libc::minor(meta.dev()),
                mount_id: None,
            });
        }
        Err(error) => return Err(error),
    };
    Ok(Statx {
        ino: stat.stx_ino,
        major: stat.stx_dev_major,
        minor: stat.stx_dev_minor,
        mount_id: (stat.stx_mask & libc::STATX_MNT_ID != 0).then_some(stat.stx_mnt_id),
    })
}

/// This process's mount table, read once and kept (`None`: not read yet).
static MOUNTS: Mutex<Option<Vec<Mount>>> = Mutex::new(None);

/// The device of the mount `mount_id` (else the one containing `path`),
/// from the kept mount table; read (again) when it was not yet, or does
/// not list `mount_id`. `None` when `/proc/self/mountinfo` cannot be read.
fn mount_device(mount_id: Option<u64>, path: &Path) -> Option<(u32, u32)> {
    with_mount(mount_id, path, |mount| (mount.major, mount.minor))
}

/// `what` of the mount `mount_id` (else the one containing `path`), from
/// the kept mount table, read as [`mount_device`] says.
fn with_mount<T>(mount_id: Option<u64>, path: &Path, what: impl Fn(&Mount) -> T) -> Option<T> {
    let mut kept = MOUNTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let stale = match (kept.as_ref(), mount_id) {
        (None, _) => true,
        (Some(mounts), Some(id)) => !mounts.iter().any(|mount| mount.id == id),
        (Some(_), None) => false,
    };
    if stale {
        let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        *kept = Some(parse(&text));
    }
    mount_of(kept.as_deref()?, mount_id, path).map(what)
}

/// The file system the folder at `path` lies on: its type and where it is
/// mounted (`("nfs4", "/srv/shared")`). What a message about the folder's
/// file system names; None when it cannot be told.
pub fn file_system_of(path: &Path) -> Option<(String, PathBuf)> {
    let stat = statx(path, true).ok()?;
    let resolved = crate::fsio::resolve(path, true).ok()?;
    with_mount(stat.mount_id, &resolved, |mount| {
        (mount.fs_type.clone(), mount.point.clone())
    })
}

/// How `/proc/locks` names the file at `path` (a final link followed only
/// with `follow`): its inode on its mount's device. Where the mount table
/// cannot be read, `stat`'s device, which is the same on most file
/// systems.
pub fn lock_id(path: &Path, follow: bool) -> io::Result<LockId> {
    let stat = statx(path, follow)?;
    let device = match stat.mount_id {
        Some(id) => mount_device(Some(id), path),
        // No mount id: found by where the file is, symlinks resolved.
        None => crate::fsio::resolve(path, follow)
            .ok()
            .and_then(|resolved| mount_device(None, &resolved)),
    };
    let (major, minor) = device.unwrap_or((stat.major, stat.minor));
    Ok(LockId {
        major,
        minor,
        ino: stat.ino,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 0:21 / / rw,relatime shared:1 - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w
25 22 0:23 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
67 22 0:40 / /srv/btrfs rw,relatime shared:30 master:2 - btrfs /dev/loop0 rw,subvol=/
68 67 0:40 /home /srv/btrfs/home rw,relatime - btrfs /dev/loop0 rw,subvol=/home
70 22 0:44 / /mnt/with\\040space rw,relatime - tmpfs tmpfs rw
71 22 0:45 / /mnt/back\\134slash\\011tab rw - tmpfs tmpfs rw
72 22 0:46 / /srv/btrfs rw,relatime - ext4 /dev/sda1 rw
not a mount line
73 22 0:47 / /short rw
";

    #[test]
    fn mountinfo_lines_are_read_with_optional_fields_and_escapes() {
        let mounts = parse(MOUNTINFO);
        let ids: Vec<u64> = mounts.iter().map(|mount| mount.id).collect();
        assert_eq!(ids, [22, 25, 67, 68, 70, 71, 72], "{mounts:#?}");
        assert_eq!(
            mounts[2],
            Mount {
                id: 67,
                major: 0,
                minor: 40,
                point: PathBuf::from("/srv/btrfs"),
                fs_type: "btrfs".to_owned(),
            }
        );
        assert_eq!(mounts[4].point, Path::new("/mnt/with space"));
        assert_eq!(mounts[5].point, Path::new("/mnt/back\\slash\ttab"));
        // Not an escape: left as it is.
        assert_eq!(unescape("/a\\9x\\04"), OsString::from("/a\\9x\\04"));
    }

    #[test]
    fn the_device_is_the_mount_ids_else_the_longest_mount_point_on_top() {
        let mounts = parse(MOUNTINFO);
        let lock = Path::new("/srv/btrfs/home/u/job-leases/x.recovery.lock");
        // By mount id, whatever the path says.
        assert_eq!(device_of(&mounts, Some(68), lock), Some((0, 40)));
        assert_eq!(device_of(&mounts, Some(25), lock), Some((0, 23)));
        // By path: the longest mount point that contains it.
        assert_eq!(device_of(&mounts, None, lock), Some((0, 40)));
        assert_eq!(
            device_of(&mounts, None, Path::new("/mnt/with space/f")),
            Some((0, 44))
        );
        // Of two mounts at one point, the later one is on top.
        assert_eq!(
            device_of(&mounts, None, Path::new("/srv/btrfs/f")),
            Some((0, 46))
        );
        // A component, not a string, prefix.
        assert_eq!(
            device_of(&mounts, None, Path::new("/srv/btrfsx/f")),
            Some((0, 21))
        );
        // An unknown mount id falls back to the path.
        assert_eq!(device_of(&mounts, Some(999), lock), Some((0, 40)));
        assert_eq!(device_of(&[], None, lock), None);
    }

    #[test]
    fn this_machines_files_are_named_as_proc_locks_names_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f");
        std::fs::write(&file, "").expect("write");
        let id = lock_id(&file, false).expect("lock id");
        use std::os::unix::fs::MetadataExt;
        assert_eq!(id.ino, std::fs::metadata(&file).expect("meta").ino());
        let missing = lock_id(&dir.path().join("none"), true).expect_err("missing");
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let (fs_type, point) = file_system_of(dir.path()).expect("its file system");
        let resolved = std::fs::canonicalize(dir.path()).expect("resolve");
        assert!(!fs_type.is_empty() && resolved.starts_with(&point));
        assert_eq!(file_system_of(&dir.path().join("none")), None);
    }
}

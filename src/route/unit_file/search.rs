//! Where systemd finds a unit and its drop-ins, as systemd.unit(5) says
//! (and systemd 252's `unit_file_find_fragment`, `unit_file_find_dirs`).
//!
//! The unit file is the first one of the search path that holds it (for
//! an instance, `rch-sweep@alice.service`, else the template
//! `rch-sweep@.service`). When that first one is masked (a link to
//! `/dev/null`, any character device, or an empty file), the unit is
//! masked: systemd never reads a copy further down. Drop-ins are the
//! `*.conf` files of the unit's drop-in folders ([`drop_in_folders`]: the
//! unit's own, its template's, those of its dash prefixes) in every
//! directory of the search path, then of the type-wide `service.d/`,
//! applied in the order of their file names whatever folder holds them; a
//! file name found in several folders is taken only from the first, so a
//! masked drop-in hides the same name further down and adds nothing. The
//! search path's directories are plain data here; what lies in them is
//! asked through the caller's functions, so the choice is tested without
//! a file system.

use std::path::{Path, PathBuf};

/// Which manager: the user's own (`systemctl --user`) or the system's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    User,
    System,
}

/// The directories systemd searches for units, first first: for the user
/// manager of the user whose home is `home` and uid `uid`; for the system
/// manager. As systemd 252 (Debian 12, built for a split `/usr`) lists
/// them (`systemd-analyze [--user] unit-paths`; `lookup-paths.c`), the
/// user manager's with `$XDG_RUNTIME_DIR=/run/user/<uid>` and the default
/// `$XDG_CONFIG_DIRS` (`/etc/xdg`) and `$XDG_DATA_DIRS`. (The generator
/// folders are left out: no generator makes rch-sweep's units.)
pub fn search_path(scope: Scope, home: &Path, uid: u32) -> Vec<PathBuf> {
    match scope {
        Scope::System => [
            "/etc/systemd/system.control",
            "/run/systemd/system.control",
            "/run/systemd/transient",
            "/etc/systemd/system",
            "/etc/systemd/system.attached",
            "/run/systemd/system",
            "/run/systemd/system.attached",
            "/usr/local/lib/systemd/system",
            "/lib/systemd/system",
            "/usr/lib/systemd/system",
        ]
        .iter()
        .map(PathBuf::from)
        .collect(),
        Scope::User => {
            let runtime = PathBuf::from(format!("/run/user/{uid}/systemd"));
            vec![
                home.join(".config/systemd/user.control"),
                runtime.join("user.control"),
                runtime.join("transient"),
                home.join(".config/systemd/user"),
                PathBuf::from("/etc/xdg/systemd/user"),
                PathBuf::from("/etc/systemd/user"),
                runtime.join("user"),
                PathBuf::from("/run/systemd/user"),
                home.join(".local/share/systemd/user"),
                PathBuf::from("/usr/local/share/systemd/user"),
                PathBuf::from("/usr/share/systemd/user"),
                PathBuf::from("/usr/local/lib/systemd/user"),
                PathBuf::from("/usr/lib/systemd/user"),
            ]
        }
    }
}

/// The template of an instance name (`rch-sweep@alice.service` →
/// `rch-sweep@.service`); `None` for a name that is no instance.
pub fn template_of(unit: &str) -> Option<String> {
    let (prefix, rest) = unit.split_once('@')?;
    let (instance, suffix) = rest.rsplit_once('.')?;
    (!instance.is_empty()).then(|| format!("{prefix}@.{suffix}"))
}

/// The drop-in folders (without `.d`) systemd 252 looks for in each
/// directory of the search path, in its order (`unit_file_find_dirs`): the
/// unit's own name, its template's (and so on for each), then the name
/// built from the prefix cut after its last inner dash (`rch-sweep` →
/// `rch-`, with the instance kept: `rch-@alice.service`), recursively. The
/// type-wide `service.d` comes after these, in every directory.
pub fn drop_in_folders(unit: &str) -> Vec<String> {
    let mut out = Vec::new();
    folders_of(unit, &mut out);
    out
}

fn folders_of(name: &str, out: &mut Vec<String>) {
    if !out.iter().any(|seen| seen == name) {
        out.push(name.to_owned());
    }
    let Some((stem, suffix)) = name.rsplit_once('.') else {
        return;
    };
    let (prefix, instance) = match stem.split_once('@') {
        Some((prefix, instance)) => (prefix, Some(instance).filter(|i| !i.is_empty())),
        None => (stem, None),
    };
    if let Some(template) = template_of(name) {
        folders_of(&template, out);
    }
    // "foo-bar-waldo" → "foo-bar-"; a trailing dash is chopped once first
    // ("foo-" → "foo" → none); a leading dash ends it.
    let mut prefix = prefix.to_owned();
    let mut chopped = false;
    let cut = loop {
        let Some(dash) = prefix.rfind('-') else {
            return;
        };
        if dash == 0 {
            return;
        }
        if dash + 1 < prefix.len() || chopped {
            break prefix[..=dash].to_owned();
        }
        prefix.truncate(dash);
        chopped = true;
    };
    let built = match instance {
        Some(instance) => format!("{cut}@{instance}.{suffix}"),
        None => format!("{cut}.{suffix}"),
    };
    folders_of(&built, out);
}

/// What stands at a path, as systemd tells a unit file or drop-in apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitPath {
    Missing,
    /// A file with something in it (through links).
    File,
    /// A link to `/dev/null` (any character device) or an empty file:
    /// systemd's `null_or_empty`.
    Masked,
    /// A folder, a dangling link, anything else.
    Other,
}

/// The files of a unit: its unit file, if any directory holds it, and its
/// drop-ins in the order systemd applies them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Found {
    pub unit_file: Option<PathBuf>,
    /// The masking entry, when the first directory holding the unit masks
    /// it (`unit_file` is then `None`).
    pub masked_by: Option<PathBuf>,
    pub drop_ins: Vec<PathBuf>,
    /// Masked drop-ins: each hides its name further down and adds nothing.
    pub masked_drop_ins: Vec<PathBuf>,
}

/// Finds `unit`'s files on `search`: `entry` says what stands at a path,
/// `list` names the entries of a folder (none when it is missing).
pub fn find(
    search: &[PathBuf],
    unit: &str,
    entry: &dyn Fn(&Path) -> UnitPath,
    list: &dyn Fn(&Path) -> Vec<String>,
) -> Found {
    let template = template_of(unit);
    let names: Vec<&str> = std::iter::once(unit).chain(template.as_deref()).collect();
    let first = names.iter().find_map(|name| {
        search
            .iter()
            .map(|dir| dir.join(name))
            .find_map(|path| match entry(&path) {
                kind @ (UnitPath::File | UnitPath::Masked) => Some((path, kind)),
                UnitPath::Missing | UnitPath::Other => None,
            })
    });
    let (unit_file, masked_by) = match first {
        Some((path, UnitPath::Masked)) => (None, Some(path)),
        Some((path, _)) => (Some(path), None),
        None => (None, None),
    };
    let suffix = unit.rsplit_once('.').map_or("service", |(_, s)| s);
    let folders: Vec<PathBuf> = search
        .iter()
        .flat_map(|dir| {
            drop_in_folders(unit)
                .into_iter()
                .map(move |name| dir.join(format!("{name}.d")))
        })
        .chain(search.iter().map(|dir| dir.join(format!("{suffix}.d"))))
        .collect();
    let mut chosen: Vec<(String, PathBuf, bool)> = Vec::new();
    for folder in &folders {
        let mut entries = list(folder);
        entries.sort();
        for name in entries {
            if !name.ends_with(".conf") || chosen.iter().any(|(seen, _, _)| *seen == name) {
                continue;
            }
            let path = folder.join(&name);
            match entry(&path) {
                UnitPath::File => chosen.push((name, path, false)),
                UnitPath::Masked => chosen.push((name, path, true)),
                UnitPath::Missing | UnitPath::Other => {}
            }
        }
    }
    chosen.sort_by(|a, b| a.0.cmp(&b.0));
    let (masked, used): (Vec<_>, Vec<_>) = chosen.into_iter().partition(|(_, _, masked)| *masked);
    Found {
        unit_file,
        masked_by,
        drop_ins: used.into_iter().map(|(_, path, _)| path).collect(),
        masked_drop_ins: masked.into_iter().map(|(_, path, _)| path).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A file system of folders and their file names; a name ending in
    /// ` -> /dev/null` is a masking link.
    fn world(files: &[&str]) -> (impl Fn(&Path) -> UnitPath, impl Fn(&Path) -> Vec<String>) {
        let masked: Vec<PathBuf> = files
            .iter()
            .filter_map(|f| f.strip_suffix(" -> /dev/null"))
            .map(PathBuf::from)
            .collect();
        let files: Vec<&str> = files
            .iter()
            .map(|f| f.strip_suffix(" -> /dev/null").unwrap_or(f))
            .collect();
        let files = &files[..];
        let set: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
        let mut folders: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
        for file in &set {
            let folder = file.parent().expect("parent").to_path_buf();
            let name = file
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            folders.entry(folder).or_default().push(name);
        }
        let is_file = {
            let set = set.clone();
            move |path: &Path| {
                if masked.iter().any(|file| file == path) {
                    UnitPath::Masked
                } else if set.iter().any(|file| file == path) {
                    UnitPath::File
                } else {
                    UnitPath::Missing
                }
            }
        };
        let list = move |path: &Path| folders.get(path).cloned().unwrap_or_default();
        (is_file, list)
    }

    #[test]
    fn the_first_directory_holding_the_unit_and_drop_ins_by_file_name() {
        let search = search_path(Scope::System, Path::new("/root"), 0);
        let (is_file, list) = world(&[
            "/usr/lib/systemd/system/rch-sweep@.service",
            "/usr/lib/systemd/system/rch-sweep@.service.d/10-package.conf",
            "/usr/lib/systemd/system/rch-sweep@.service.d/50-override.conf",
            "/etc/systemd/system/rch-sweep@.service.d/50-override.conf",
            "/etc/systemd/system/rch-sweep@alice.service.d/override.conf",
            "/etc/systemd/system/rch-sweep@alice.service.d/README",
            "/run/systemd/system/rch-sweep@alice.service.d/20-runtime.conf",
            "/etc/systemd/system/rch-sweep@bob.service.d/override.conf",
        ]);
        let found = find(&search, "rch-sweep@alice.service", &is_file, &list);
        assert_eq!(
            found.unit_file.as_deref(),
            Some(Path::new("/usr/lib/systemd/system/rch-sweep@.service"))
        );
        let drop_ins: Vec<&str> = found
            .drop_ins
            .iter()
            .map(|p| p.to_str().expect("utf8"))
            .collect();
        assert_eq!(
            drop_ins,
            [
                "/usr/lib/systemd/system/rch-sweep@.service.d/10-package.conf",
                "/run/systemd/system/rch-sweep@alice.service.d/20-runtime.conf",
                // The same name in /etc masks the package's.
                "/etc/systemd/system/rch-sweep@.service.d/50-override.conf",
                "/etc/systemd/system/rch-sweep@alice.service.d/override.conf",
            ]
        );
        // An instance's own unit file wins over the template, wherever.
        let (is_file, list) = world(&[
            "/etc/systemd/system/rch-sweep@.service",
            "/usr/lib/systemd/system/rch-sweep@alice.service",
        ]);
        let found = find(&search, "rch-sweep@alice.service", &is_file, &list);
        assert_eq!(
            found.unit_file.as_deref(),
            Some(Path::new("/usr/lib/systemd/system/rch-sweep@alice.service"))
        );
        let nothing = find(
            &search,
            "rch-sweep@alice.service",
            &|_| UnitPath::Missing,
            &|_| Vec::new(),
        );
        assert_eq!(nothing, Found::default());
    }

    #[test]
    fn the_user_search_path_puts_the_home_first() {
        let search = search_path(Scope::User, Path::new("/home/alice"), 1000);
        assert_eq!(
            search[3],
            Path::new("/home/alice/.config/systemd/user"),
            "{search:?}"
        );
        assert!(search.contains(&PathBuf::from("/run/user/1000/systemd/user")));
        assert_eq!(
            search.last().map(PathBuf::as_path),
            Some(Path::new("/usr/lib/systemd/user"))
        );
        let (is_file, list) = world(&[
            "/usr/lib/systemd/user/rch-sweep.service",
            "/home/alice/.config/systemd/user/rch-sweep.service",
            "/home/alice/.config/systemd/user/rch-sweep.service.d/override.conf",
        ]);
        let found = find(&search, "rch-sweep.service", &is_file, &list);
        assert_eq!(
            found.unit_file.as_deref(),
            Some(Path::new(
                "/home/alice/.config/systemd/user/rch-sweep.service"
            ))
        );
        assert_eq!(found.drop_ins.len(), 1);
        assert_eq!(template_of("rch-sweep.service"), None);
        assert_eq!(template_of("rch-sweep@.service"), None);
        assert_eq!(
            template_of("rch-sweep@a.b.service").as_deref(),
            Some("rch-sweep@.service")
        );
    }

    fn shown(paths: &[PathBuf]) -> Vec<&str> {
        paths.iter().map(|p| p.to_str().expect("utf8")).collect()
    }

    #[test]
    fn the_search_paths_of_systemd_252() {
        // `systemd-analyze --user unit-paths` on Debian 12, with
        // XDG_RUNTIME_DIR=/run/user/1000.
        assert_eq!(
            shown(&search_path(Scope::User, Path::new("/home/alice"), 1000)),
            [
                "/home/alice/.config/systemd/user.control",
                "/run/user/1000/systemd/user.control",
                "/run/user/1000/systemd/transient",
                "/home/alice/.config/systemd/user",
                "/etc/xdg/systemd/user",
                "/etc/systemd/user",
                "/run/user/1000/systemd/user",
                "/run/systemd/user",
                "/home/alice/.local/share/systemd/user",
                "/usr/local/share/systemd/user",
                "/usr/share/systemd/user",
                "/usr/local/lib/systemd/user",
                "/usr/lib/systemd/user",
            ]
        );
        // `systemd-analyze unit-paths`, generator folders left out.
        assert_eq!(
            shown(&search_path(Scope::System, Path::new("/root"), 0)),
            [
                "/etc/systemd/system.control",
                "/run/systemd/system.control",
                "/run/systemd/transient",
                "/etc/systemd/system",
                "/etc/systemd/system.attached",
                "/run/systemd/system",
                "/run/systemd/system.attached",
                "/usr/local/lib/systemd/system",
                "/lib/systemd/system",
                "/usr/lib/systemd/system",
            ]
        );
    }

    #[test]
    fn a_unit_in_etc_xdg_is_found_for_the_user_manager() {
        let search = search_path(Scope::User, Path::new("/home/alice"), 1000);
        let (entry, list) = world(&[
            "/etc/xdg/systemd/user/rch-sweep.service",
            "/usr/lib/systemd/user/rch-sweep.service",
        ]);
        let found = find(&search, "rch-sweep.service", &entry, &list);
        assert_eq!(
            found.unit_file.as_deref(),
            Some(Path::new("/etc/xdg/systemd/user/rch-sweep.service"))
        );
    }

    #[test]
    fn the_drop_in_folders_in_systemds_order() {
        assert_eq!(
            drop_in_folders("rch-sweep.service"),
            ["rch-sweep.service", "rch-.service"]
        );
        assert_eq!(
            drop_in_folders("rch-sweep@alice.service"),
            [
                "rch-sweep@alice.service",
                "rch-sweep@.service",
                "rch-.service",
                "rch-@alice.service",
                "rch-@.service"
            ]
        );
        assert_eq!(
            drop_in_folders("foo-bar-waldo.service"),
            ["foo-bar-waldo.service", "foo-bar-.service", "foo-.service"]
        );
        assert_eq!(drop_in_folders("-x.service"), ["-x.service"]);
        assert_eq!(drop_in_folders("plain.service"), ["plain.service"]);
    }

    #[test]
    fn type_wide_and_dash_prefix_drop_ins_the_first_folder_wins_a_name() {
        let search = search_path(Scope::System, Path::new("/root"), 0);
        let (entry, list) = world(&[
            "/usr/lib/systemd/system/rch-sweep@.service",
            "/usr/lib/systemd/system/service.d/10-all.conf",
            "/etc/systemd/system/service.d/90-all.conf",
            "/etc/systemd/system/rch-.service.d/20-prefix.conf",
            "/etc/systemd/system/rch-.service.d/50-same.conf",
            "/etc/systemd/system/rch-sweep@.service.d/50-same.conf",
            "/run/systemd/system/rch-sweep@alice.service.d/50-same.conf",
            "/etc/systemd/system/service.d/30-type.conf",
            "/etc/systemd/system/rch-sweep@alice.service.d/30-type.conf",
        ]);
        let found = find(&search, "rch-sweep@alice.service", &entry, &list);
        assert_eq!(
            shown(&found.drop_ins),
            [
                "/usr/lib/systemd/system/service.d/10-all.conf",
                "/etc/systemd/system/rch-.service.d/20-prefix.conf",
                // The unit's own folder comes before service.d in a directory.
                "/etc/systemd/system/rch-sweep@alice.service.d/30-type.conf",
                // /etc before /run; in /etc the template's before the prefix's.
                "/etc/systemd/system/rch-sweep@.service.d/50-same.conf",
                "/etc/systemd/system/service.d/90-all.conf",
            ]
        );
    }

    #[test]
    fn a_masked_unit_hides_every_copy_below_and_a_masked_drop_in_its_name() {
        let search = search_path(Scope::User, Path::new("/home/alice"), 1000);
        let (entry, list) = world(&[
            "/home/alice/.config/systemd/user/rch-sweep.service -> /dev/null",
            "/home/alice/.local/share/systemd/user/rch-sweep.service",
        ]);
        let found = find(&search, "rch-sweep.service", &entry, &list);
        assert_eq!(found.unit_file, None);
        assert_eq!(
            found.masked_by.as_deref(),
            Some(Path::new(
                "/home/alice/.config/systemd/user/rch-sweep.service"
            ))
        );
        // A mask below the first copy masks nothing.
        let (entry, list) = world(&[
            "/home/alice/.config/systemd/user/rch-sweep.service",
            "/usr/lib/systemd/user/rch-sweep.service -> /dev/null",
        ]);
        let found = find(&search, "rch-sweep.service", &entry, &list);
        assert_eq!(found.masked_by, None);
        assert!(found.unit_file.is_some());
        // A masked template masks its instances.
        let system = search_path(Scope::System, Path::new("/root"), 0);
        let (entry, list) = world(&[
            "/etc/systemd/system/rch-sweep@.service -> /dev/null",
            "/usr/lib/systemd/system/rch-sweep@.service",
        ]);
        let found = find(&system, "rch-sweep@alice.service", &entry, &list);
        assert!(found.masked_by.is_some() && found.unit_file.is_none());
        // A masked drop-in: its name further down is not read.
        let (entry, list) = world(&[
            "/home/alice/.local/share/systemd/user/rch-sweep.service",
            "/home/alice/.local/share/systemd/user/rch-sweep.service.d/50-vendor.conf",
            "/home/alice/.local/share/systemd/user/rch-sweep.service.d/60-other.conf",
            "/home/alice/.config/systemd/user/rch-sweep.service.d/50-vendor.conf -> /dev/null",
        ]);
        let found = find(&search, "rch-sweep.service", &entry, &list);
        assert_eq!(
            shown(&found.drop_ins),
            ["/home/alice/.local/share/systemd/user/rch-sweep.service.d/60-other.conf"]
        );
        assert_eq!(
            shown(&found.masked_drop_ins),
            ["/home/alice/.config/systemd/user/rch-sweep.service.d/50-vendor.conf"]
        );
    }
}

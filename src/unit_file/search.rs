//! Where systemd finds a unit and its drop-ins, as systemd.unit(5) says.
//!
//! The unit file is the first one of the search path that holds it (for
//! an instance, `rch-sweep@alice.service`, else the template
//! `rch-sweep@.service`). Drop-ins are the `*.conf` files of the folders
//! `<unit>.d/` and, for an instance, `<template>.d/`, in every directory of
//! the search path, applied in the order of their file names whatever
//! folder holds them; a file name found in several directories is taken
//! only from the first. The search path's directories are plain data here;
//! what lies in them is asked through the caller's functions, so the
//! choice is tested without a file system.

use std::path::{Path, PathBuf};

/// Which manager: the user's own (`systemctl --user`) or the system's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    User,
    System,
}

/// The directories systemd searches for units, first first: for the user
/// manager of the user whose home is `home` and uid `uid`; for the system
/// manager. (The generator folders are left out: no generator makes
/// rch-sweep's units.)
pub fn search_path(scope: Scope, home: &Path, uid: u32) -> Vec<PathBuf> {
    match scope {
        Scope::System => [
            "/etc/systemd/system.control",
            "/run/systemd/system.control",
            "/run/systemd/transient",
            "/etc/systemd/system",
            "/run/systemd/system",
            "/usr/local/lib/systemd/system",
            "/usr/lib/systemd/system",
            "/lib/systemd/system",
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

/// The files of a unit: its unit file, if any directory holds it, and its
/// drop-ins in the order systemd applies them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Found {
    pub unit_file: Option<PathBuf>,
    pub drop_ins: Vec<PathBuf>,
}

/// Finds `unit`'s files on `search`: `is_file` says whether a path is a
/// file, `list` names the entries of a folder (none when it is missing).
pub fn find(
    search: &[PathBuf],
    unit: &str,
    is_file: &dyn Fn(&Path) -> bool,
    list: &dyn Fn(&Path) -> Vec<String>,
) -> Found {
    let template = template_of(unit);
    let names: Vec<&str> = std::iter::once(unit).chain(template.as_deref()).collect();
    let unit_file = names.iter().find_map(|name| {
        search
            .iter()
            .map(|dir| dir.join(name))
            .find(|path| is_file(path))
    });
    let mut chosen: Vec<(String, PathBuf)> = Vec::new();
    for dir in search {
        for name in &names {
            let folder = dir.join(format!("{name}.d"));
            let mut entries = list(&folder);
            entries.sort();
            for entry in entries {
                if !entry.ends_with(".conf") || chosen.iter().any(|(seen, _)| *seen == entry) {
                    continue;
                }
                let path = folder.join(&entry);
                if is_file(&path) {
                    chosen.push((entry, path));
                }
            }
        }
    }
    chosen.sort_by(|a, b| a.0.cmp(&b.0));
    Found {
        unit_file,
        drop_ins: chosen.into_iter().map(|(_, path)| path).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A file system of folders and their file names.
    fn world(files: &[&str]) -> (impl Fn(&Path) -> bool, impl Fn(&Path) -> Vec<String>) {
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
            move |path: &Path| set.iter().any(|file| file == path)
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
        let nothing = find(&search, "rch-sweep@alice.service", &|_| false, &|_| {
            Vec::new()
        });
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
}

//! The `metrics` check: the metrics file a run will replace (its folder,
//! its owner, its mode), and another `.prom` file in that folder holding
//! series for the same lease directory.

use super::{DoctorCheck, Finding, Status};
use crate::account;
use crate::exit::ExitCode;
use crate::fsio;
use crate::stat::FileKind;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The metrics file a run will replace: its folder must exist and be
/// writable, and the path must be absent or this user's own regular file.
pub fn metrics(path: &Path) -> Finding {
    let check = DoctorCheck::Metrics;
    let fail = |finding: String, fix: String| Finding::fail(check, ExitCode::Io, finding, fix);
    if let Some(refused) = metrics_folder(path) {
        return refused;
    }
    let not_ours = |what: &str| {
        fail(
            format!(
                "--metrics-file {} is {what}; rch-sweep replaces only a regular file of its own, so it left it as it is",
                path.display()
            ),
            "move it away, or point --metrics-file / RCH_SWEEP_METRICS_FILE at a path of your own"
                .into(),
        )
    };
    match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Finding::ok(
            check,
            format!("{} (written by the first run, mode 0644)", path.display()),
        ),
        Err(error) => fail(
            format!(
                "--metrics-file {}: cannot look at it: {error}",
                path.display()
            ),
            "check the permissions of its folder".into(),
        ),
        Ok(meta) if !meta.is_file() => not_ours(FileKind::of(&meta).described()),
        Ok(meta) if meta.uid() != account::euid() => not_ours("owned by another user"),
        Ok(meta) if meta.mode() & 0o004 == 0 => Finding::warn(
            check,
            format!(
                "--metrics-file {} has mode {:04o}: node_exporter, running as another user, cannot read it",
                path.display(),
                meta.mode() & 0o7777
            ),
            "nothing to do if a run follows: every run writes it 0644; otherwise chmod 0644 it",
        ),
        Ok(_) => Finding::ok(check, path.display().to_string()),
    }
}

/// [`metrics`], and another `.prom` file in the same folder that holds
/// `rch_sweep_` series for the same lease directory: node_exporter serves
/// one of the two, stale or not (SPEC, sixth wave), so that is a warning.
pub fn metrics_and_others(path: &Path, lease_dir: &Path) -> Finding {
    let finding = metrics(path);
    if finding.status == Status::Fail {
        return finding;
    }
    let others = crate::sweep::metrics_peers::other_files_for(path, lease_dir);
    if others.is_empty() {
        return finding;
    }
    let names: Vec<String> = others.iter().map(|o| o.display().to_string()).collect();
    let said = format!(
        "{} also holds rch_sweep_ series for lease_dir=\"{}\": node_exporter serves one file's series or the other's, stale or not",
        names.join(" and "),
        lease_dir.display()
    );
    let fix = format!(
        "remove {} (a sweep of this lease directory writes only {})",
        names.join(" and "),
        path.display()
    );
    match finding.status {
        Status::Ok => Finding::warn(
            DoctorCheck::Metrics,
            format!("{}; but {said}", finding.finding),
            fix,
        ),
        _ => Finding::warn(
            DoctorCheck::Metrics,
            format!("{}; {said}", finding.finding),
            match finding.fix {
                Some(first) => format!("{first}; {fix}"),
                None => fix,
            },
        ),
    }
}

/// Why the folder of the metrics file at `path` cannot take it, if it
/// cannot: not a directory, not writable by this user, missing, or not to
/// be looked at.
fn metrics_folder(path: &Path) -> Option<Finding> {
    let folder = fsio::parent_dir(path);
    let fail = |finding: String, fix: String| {
        Some(Finding::fail(
            DoctorCheck::Metrics,
            ExitCode::Io,
            finding,
            fix,
        ))
    };
    match std::fs::metadata(folder) {
        Ok(meta) if !meta.is_dir() => fail(
            format!(
                "--metrics-file {}: {} is not a directory",
                path.display(),
                folder.display()
            ),
            "point --metrics-file / RCH_SWEEP_METRICS_FILE into node_exporter's textfile directory"
                .into(),
        ),
        Ok(_) => {
            let error = fsio::may_write_into(folder).err()?;
            fail(
                format!(
                    "--metrics-file {}: cannot write into {} ({error})",
                    path.display(),
                    folder.display()
                ),
                "give this user write access to it (e.g. a group-writable textfile directory) or point --metrics-file elsewhere".into(),
            )
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => fail(
            format!(
                "--metrics-file {}: its folder {} does not exist",
                path.display(),
                folder.display()
            ),
            format!(
                "create it (install -d -m 0755 {}) or point --metrics-file / RCH_SWEEP_METRICS_FILE into node_exporter's textfile directory",
                folder.display()
            ),
        ),
        Err(error) => fail(
            format!(
                "--metrics-file {}: cannot look at {}: {error}",
                path.display(),
                folder.display()
            ),
            "check the permissions of the folders above it".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metrics_path_must_be_a_writable_folders_own_regular_file() {
        let world = tempfile::tempdir().expect("tempdir");
        assert_eq!(metrics(&world.path().join("ok.prom")).status, Status::Ok);
        let missing = metrics(&world.path().join("nope/rch.prom"));
        assert_eq!((missing.status, missing.code), (Status::Fail, ExitCode::Io));
        assert!(missing.finding.contains("does not exist"), "{missing:?}");
        std::fs::create_dir(world.path().join("dir.prom")).expect("mkdir");
        let folder = metrics(&world.path().join("dir.prom"));
        assert!(folder.finding.contains("a directory"), "{folder:?}");
        std::os::unix::fs::symlink("ok.prom", world.path().join("link.prom")).expect("link");
        let link = metrics(&world.path().join("link.prom"));
        assert!(link.finding.contains("symbolic link"), "{link:?}");
        let private = world.path().join("private.prom");
        std::fs::write(&private, "").expect("write");
        std::fs::set_permissions(
            &private,
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .expect("chmod");
        assert_eq!(metrics(&private).status, Status::Warn);
    }
}

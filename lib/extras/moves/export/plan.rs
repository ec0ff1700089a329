//! An export's plan, decided from its observation alone (the assessment, the isolation records,
//! the credentials found, whether FILE is there): the steps that write the archive, in the order
//! export.rs walks them. A dry run prints them and stops; FILE already there refuses the export
//! in a dry run as in a run.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::base::exit::Exit;
use crate::protocol::assessment::{plural, MountAssessment};

/// One step of an export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExportStep {
    /// One mount's work saved as a purge's quarantine saves it (the index into the mounts).
    SaveMount { index: usize, mount_dst: String, commits: usize, files: usize },
    /// `export.json` and jackin's files of the session: the manifest, the isolation records, the
    /// continuity file.
    WriteSessionFiles,
    /// The agent home and `state/`; the home's credentials only `--with-auth`.
    WriteAgentHome { credentials: bool },
    /// The agents' auth slots found (`--with-auth`).
    WriteAuthSlots { slots: Vec<String> },
    /// The mounts' saved work.
    WriteMountsWork,
    /// The archive put at FILE, never over a file that appeared meanwhile.
    Publish { file: PathBuf },
}

impl fmt::Display for ExportStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportStep::SaveMount { mount_dst, commits, files, .. } => write!(
                f,
                "save the work of {}: {}, {}",
                crate::protocol::inert::inert_name(mount_dst),
                plural(*commits, "commit", "commits"),
                plural(*files, "changed or untracked file", "changed or untracked files")
            ),
            ExportStep::WriteSessionFiles => {
                f.write_str("write export.json, the manifest, the isolation records and the continuity file")
            }
            ExportStep::WriteAgentHome { credentials: true } => f.write_str("write the agent home and state/"),
            ExportStep::WriteAgentHome { credentials: false } => {
                f.write_str("write the agent home (its credentials left out) and state/")
            }
            ExportStep::WriteAuthSlots { slots } => write!(f, "write the auth slots {}", slots.join(", ")),
            ExportStep::WriteMountsWork => f.write_str("write the mounts' saved work"),
            ExportStep::Publish { file } => write!(f, "publish the archive at {}", file.display()),
        }
    }
}

/// What an export is decided from.
pub(crate) struct Seen<'a> {
    pub(crate) mounts: &'a [MountAssessment],
    /// The auth slots and home credentials found (relative to the instance directory; a slot
    /// with its trailing `/`).
    pub(crate) auth: &'a [String],
    pub(crate) with_auth: bool,
    pub(crate) file: &'a Path,
    /// Something is at `file` already.
    pub(crate) file_there: bool,
}

/// The steps of an export (see the module's doc). FILE there already refuses it (exit 3).
pub(crate) fn plan(seen: &Seen<'_>) -> Result<Vec<ExportStep>> {
    if seen.file_there {
        return Err(Exit::BadInput.err(format_args!("{} exists already: not overwritten", seen.file.display())));
    }
    let mut steps: Vec<ExportStep> = seen
        .mounts
        .iter()
        .enumerate()
        .map(|(index, m)| ExportStep::SaveMount {
            index,
            mount_dst: m.mount_dst.clone(),
            commits: m.unpushed.iter().map(|r| r.commits).sum(),
            files: m.files.len(),
        })
        .collect();
    steps.push(ExportStep::WriteSessionFiles);
    steps.push(ExportStep::WriteAgentHome { credentials: seen.with_auth });
    let slots: Vec<String> = seen.auth.iter().filter(|a| a.ends_with('/')).cloned().collect();
    if seen.with_auth && !slots.is_empty() {
        steps.push(ExportStep::WriteAuthSlots { slots });
    }
    steps.push(ExportStep::WriteMountsWork);
    steps.push(ExportStep::Publish { file: seen.file.to_path_buf() });
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(dst: &str, commits: usize, files: usize) -> MountAssessment {
        let files: Vec<_> = (0..files).map(|i| serde_json::json!({"status": "??", "path": format!("f{i}")})).collect();
        serde_json::from_value(serde_json::json!({
            "mount_dst": dst, "isolation": "worktree", "path": "/w", "verdict": "unpushed", "files": files,
            "unpushed": [{"ref": "refs/heads/x", "commits": commits, "upstream": null}],
        }))
        .unwrap()
    }

    fn seen<'a>(mounts: &'a [MountAssessment], auth: &'a [String], with_auth: bool) -> Seen<'a> {
        Seen { mounts, auth, with_auth, file: Path::new("/tmp/s.tar.gz"), file_there: false }
    }

    #[test]
    fn each_mount_is_saved_then_the_session_is_written_and_published() {
        let mounts = [mount("/workspace/app", 3, 2), mount("/workspace/lib", 0, 1)];
        let steps = plan(&seen(&mounts, &[], false)).unwrap();
        let words: Vec<String> = steps.iter().map(ToString::to_string).collect();
        assert_eq!(
            words,
            [
                "save the work of /workspace/app: 3 commits, 2 changed or untracked files",
                "save the work of /workspace/lib: 0 commits, 1 changed or untracked file",
                "write export.json, the manifest, the isolation records and the continuity file",
                "write the agent home (its credentials left out) and state/",
                "write the mounts' saved work",
                "publish the archive at /tmp/s.tar.gz",
            ]
        );
    }

    #[test]
    fn the_auth_slots_are_a_step_only_with_auth_and_when_some_are_there() {
        let auth = ["claude/".to_owned(), "home/.netrc".to_owned()];
        let with = plan(&seen(&[], &auth, true)).unwrap();
        assert!(with.contains(&ExportStep::WriteAgentHome { credentials: true }));
        assert!(with.contains(&ExportStep::WriteAuthSlots { slots: vec!["claude/".into()] }));
        let without = plan(&seen(&[], &auth, false)).unwrap();
        assert!(!without.iter().any(|s| matches!(s, ExportStep::WriteAuthSlots { .. })));
        let none_there = plan(&seen(&[], &auth[1..], true)).unwrap();
        assert!(!none_there.iter().any(|s| matches!(s, ExportStep::WriteAuthSlots { .. })));
    }

    #[test]
    fn a_file_that_is_there_refuses_the_plan() {
        let mut there = seen(&[], &[], false);
        there.file_there = true;
        let refused = plan(&there).unwrap_err();
        assert_eq!(Exit::of(&refused), Exit::BadInput);
        assert!(refused.to_string().contains("exists already"), "{refused}");
    }
}

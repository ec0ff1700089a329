//! Saved work: the one format of what a discard saves and an export carries (lifecycle.md,
//! "Quarantine"). A directory holds `receipt.json` ([`Receipt`]), a `RECEIPT.txt` for a person,
//! and per saved mount `<n>-<slug>/` with the layout [`MountLayout`] names: `commits.bundle`,
//! `submodule-<n>.bundle`, `files/`, `index/`, and for a mount that could not be read, `tree/`
//! and `modules/`. Purge saves into it before it deletes (`save`); an export saves the same way
//! (`save_readable`); recover and import read it and put it back (`put_back`).

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::engines::git::BundleContents;
use crate::protocol::assessment::Integrated;
use crate::protocol::identity::Identity;

pub(crate) mod put_back;
mod save;
mod text;

#[cfg(test)]
pub(crate) use save::tests as fixtures;
pub(crate) use save::{quarantine_dir_now, save, save_readable, AtRisk};

/// The receipt's file name in a saved-work directory.
pub(crate) const RECEIPT: &str = "receipt.json";

/// Days a quarantine is kept when `--quarantine-days` does not say.
pub(crate) const DEFAULT_QUARANTINE_DAYS: u64 = 14;
/// The receipt for a person to read.
const RECEIPT_TEXT: &str = "RECEIPT.txt";
/// Where the instance's whole `git/` tree goes when its isolation records cannot be read.
const GIT_TREE: &str = "git";

/// The receipt in `dir`, `None` when there is none (a save that died half-way, or not saved work).
pub(crate) fn read_receipt(dir: &Path) -> Result<Option<Receipt>> {
    crate::state::store::read_json(&dir.join(RECEIPT))
}

/// The names inside one saved mount's directory, relative to the saved-work directory (as the
/// receipt gives them), so a save and its readers spell them once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MountLayout<'a> {
    pub(crate) dir_name: &'a str,
}

impl MountLayout<'_> {
    pub(crate) fn dir(&self, root: &Path) -> PathBuf {
        root.join(self.dir_name)
    }
    pub(crate) fn bundle(&self) -> String {
        format!("{}/commits.bundle", self.dir_name)
    }
    pub(crate) fn submodule_bundle(&self, n: usize) -> String {
        format!("{}/submodule-{n}.bundle", self.dir_name)
    }
    pub(crate) fn files(&self) -> String {
        format!("{}/files", self.dir_name)
    }
    pub(crate) fn index(&self) -> String {
        format!("{}/index", self.dir_name)
    }
    pub(crate) fn tree(&self) -> String {
        format!("{}/tree", self.dir_name)
    }
    pub(crate) fn modules(&self) -> String {
        format!("{}/modules", self.dir_name)
    }
}

/// `receipt.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Receipt {
    pub(crate) version: u64,
    #[serde(flatten)]
    pub(crate) identity: Identity,
    pub(crate) saved_at: String,
    pub(crate) expires_at: String,
    /// The verdict and summary of the assessment that found the work at risk.
    pub(crate) verdict: String,
    pub(crate) summary: String,
    pub(crate) mounts: Vec<SavedMount>,
    /// When the isolation records could not be read: the instance's whole `git/` tree, moved
    /// here (relative to the quarantine directory), since no mount in it could be assessed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) git_tree: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SavedMount {
    pub(crate) mount_dst: String,
    pub(crate) isolation: crate::state::model::IsolationWord,
    /// Where the work was: the worktree or clone directory.
    pub(crate) path: String,
    /// The host repository it was made from.
    pub(crate) original_src: Option<String>,
    /// The commit its work tree was on, which the saved files are changes to (a recover checks
    /// them out over it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) head: Option<String>,
    pub(crate) verdict: String,
    /// The bundle, relative to the quarantine directory.
    pub(crate) bundle: Option<String>,
    pub(crate) bundle_contents: Option<BundleContents>,
    /// The bundle's commits whose patch a surviving ref holds: saved all the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) integrated: Vec<Integrated>,
    /// The commits of submodules checked out in the mount that nothing else holds, one bundle
    /// each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) submodules: Vec<SavedSubmodule>,
    /// The staged versions the work tree no longer has, relative to the quarantine directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) index_dir: Option<String>,
    /// Dirty and untracked files as they were, relative to the quarantine directory.
    pub(crate) files_dir: Option<String>,
    pub(crate) files: Vec<SavedFile>,
    /// An unreadable mount is moved here whole: what cannot be read cannot be picked apart.
    pub(crate) tree: Option<String>,
    /// An unreadable worktree's submodules' git directories, moved here from its registration in
    /// the host repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) modules: Option<String>,
    pub(crate) note: Option<String>,
}

/// A submodule's bundle.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SavedSubmodule {
    /// Its path in the mount; one that is not UTF-8 has its bytes in `path_bytes`.
    pub(crate) path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path_bytes: Option<String>,
    /// Its git directory's name under the mount's `modules/` (git's name for the submodule; for
    /// a nested one, `<parent>/modules/<name>`): a recover looks for the same one in the host
    /// repository. Not written when that is not a plain UTF-8 path; older receipts lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) module: Option<String>,
    /// The commit its work tree was on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) head: Option<String>,
    /// Relative to the quarantine directory.
    pub(crate) bundle: String,
    pub(crate) bundle_contents: BundleContents,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SavedFile {
    pub(crate) status: String,
    /// The path as text; a path that is not UTF-8 has its bytes in `path_bytes`
    /// (protocol/path_bytes.rs), and is saved under `files/` as those bytes.
    pub(crate) path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path_bytes: Option<String>,
    /// The name a renamed file had before (`R`), which the work tree no longer has; its bytes
    /// in `orig_path_bytes` when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) orig_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) orig_path_bytes: Option<String>,
    /// False for a deletion: there is no file to save.
    pub(crate) saved: bool,
    /// Its staged version, which the work tree no longer has (`AM`, `MM`, `AD`, …), saved under
    /// `index/`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) staged: bool,
    /// A submodule's staged commit, when its index entry is a gitlink (`git add <submodule>`),
    /// which has no blob to save under `index/`: a recover stages it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) gitlink: Option<String>,
}

pub(crate) fn slug(mount_dst: &str) -> String {
    let s: String = mount_dst.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let s = s.trim_matches('-').to_owned();
    if s.is_empty() {
        "mount".into()
    } else {
        s
    }
}

/// Every quarantine with a receipt (a save that died half-way has none, and holds nothing to
/// recover by).
pub(crate) fn receipts(store: &crate::state::store::Store) -> anyhow::Result<Vec<(std::path::PathBuf, Receipt)>> {
    let root = store.quarantine_root();
    let entries = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("listing {}", root.display()))),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry?;
        let dir = entry.path();
        if !entry.file_type()?.is_dir() || entry.file_name().as_encoded_bytes().starts_with(b".") {
            continue;
        }
        if let Ok(Some(receipt)) = read_receipt(&dir) {
            found.push((dir, receipt));
        }
    }
    Ok(found)
}

//! The home's files as the tests read and write them: typed mirrors of the manifest, the index and
//! its rows, the isolation records and the tools' continuity file (state.md), written apart from
//! the library's own types on purpose, and the edits a test makes to a home as jackin would have.
//!
//! Unlike the records (records.rs), these formats are open: jackin may add keys, and a rewrite by
//! the tools keeps every key it does not know (state.md). So the mirrors do not refuse unknown
//! fields; each keeps them in `extra`, where a test can look for them. The fields they list are
//! required as jackin writes them, so a rewrite that drops or retypes one fails the read.

use std::fs;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::records::{Evidence, Integrated};
use super::{read_json, write_json, Home};

/// `data/<container>/.jackin/instance.json`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Manifest {
    pub version: u64,
    pub instance_id: String,
    pub container_base: String,
    pub created_at: String,
    pub updated_at: String,
    pub workspace_name: Option<String>,
    pub workspace_label: String,
    pub workdir: String,
    pub host_workdir_fingerprint: String,
    pub role_key: String,
    pub role_display_name: String,
    pub agent_runtime: String,
    pub role_source_git: String,
    pub role_source_ref: Option<String>,
    pub image_tag: String,
    pub status: String,
    pub last_attach_outcome: Option<String>,
    pub docker: DockerNames,
    pub sessions: Vec<Value>,
    pub role_git_sha: Option<String>,
    pub base_image_ref: Option<String>,
    pub base_image_digest: Option<String>,
    pub supported_agents: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The manifest's `docker` object: the resources the launch made.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct DockerNames {
    pub role_container: String,
    #[serde(default)]
    pub dind_container: Option<String>,
    pub network: String,
    #[serde(default)]
    pub certs_volume: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data/instances.json`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Index {
    pub version: u64,
    pub instances: Vec<IndexRow>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One row of the index: a projection of its manifest.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct IndexRow {
    pub instance_id: String,
    pub container_base: String,
    pub workspace_name: Option<String>,
    pub workspace_label: String,
    pub workdir: String,
    pub role_key: String,
    pub agent_runtime: String,
    pub status: String,
    pub updated_at: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data/<container>/.jackin/isolation.json`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Isolation {
    pub version: u64,
    pub records: Vec<IsolationRecord>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One isolated mount: a worktree of a host repository or a local clone of one.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct IsolationRecord {
    pub workspace: String,
    pub mount_dst: String,
    pub original_src: String,
    pub isolation: String,
    pub worktree_path: String,
    pub scratch_branch: String,
    pub base_commit: String,
    pub selector_key: String,
    pub container_name: String,
    pub cleanup_status: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data/<container>/.jackin/continuity.json`, the tools' own file. The launch recipe stays raw
/// JSON: the tests look into it key by key.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Continuity {
    pub version: u64,
    #[serde(default)]
    pub recipe: Option<Value>,
    #[serde(default)]
    pub kept: Option<Kept>,
    #[serde(default)]
    pub cause: Option<String>,
    #[serde(default)]
    pub evidence: Option<Evidence>,
    #[serde(default)]
    pub history: Vec<HistoryEntry>,
    #[serde(default)]
    pub slimmed: Option<Slimmed>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Who kept a session, when and why, and the assessment they saw.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Kept {
    pub at: String,
    pub by: String,
    pub reason: String,
    pub policy: String,
    pub verdict: String,
    pub assessment: Value,
}

/// One status change the tools made.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HistoryEntry {
    pub at: String,
    pub tool: String,
    pub from: String,
    pub to: String,
    pub cause: String,
    pub evidence: Evidence,
}

/// The last `jackin-purge --slim` of a session.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Slimmed {
    pub at: String,
    pub freed_bytes: u64,
}

/// `quarantine/<dir>/receipt.json`, a purge's account of the work it saved (docs/reference.md,
/// "The quarantine"). The tools' own format, kept open as the home's files are: what a test does
/// not name is in `extra`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Receipt {
    pub version: u64,
    pub container_base: String,
    pub saved_at: String,
    pub expires_at: String,
    pub verdict: String,
    pub mounts: Vec<SavedMount>,
    #[serde(default)]
    pub git_tree: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One mount of a receipt: where its work was saved, relative to the quarantine directory.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SavedMount {
    pub mount_dst: String,
    /// Where the work was.
    pub path: String,
    pub verdict: String,
    pub bundle: Option<String>,
    pub bundle_contents: Option<BundleContents>,
    /// The bundle's commits whose patch a surviving ref holds.
    #[serde(default)]
    pub integrated: Vec<Integrated>,
    #[serde(default)]
    pub submodules: Vec<SavedSubmodule>,
    #[serde(default)]
    pub index_dir: Option<String>,
    pub files_dir: Option<String>,
    pub files: Vec<SavedFile>,
    pub tree: Option<String>,
    pub note: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a saved bundle holds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BundleContents {
    pub refs: Vec<(String, String)>,
    pub prerequisites: Vec<String>,
    pub commits: usize,
    #[serde(default)]
    pub from_reflog: Vec<String>,
}

/// A submodule's bundle in a receipt.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SavedSubmodule {
    pub path: String,
    #[serde(default)]
    pub path_bytes: Option<String>,
    pub bundle: String,
    pub bundle_contents: BundleContents,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A changed or untracked file of a receipt.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SavedFile {
    pub status: String,
    pub path: String,
    #[serde(default)]
    pub path_bytes: Option<String>,
    pub saved: bool,
    #[serde(default)]
    pub staged: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SavedFile {
    /// The file's name as bytes: `path_bytes` (base64) for a name that is not UTF-8.
    pub fn name(&self) -> Vec<u8> {
        use base64::Engine;
        match &self.path_bytes {
            Some(b64) => base64::engine::general_purpose::STANDARD.decode(b64).expect("base64"),
            None => self.path.as_bytes().to_vec(),
        }
    }
}

/// The receipt of the quarantine directory `dir`; fails the test when there is none or it does
/// not match its mirror.
pub fn receipt(dir: &Path) -> Receipt {
    read(&dir.join("receipt.json"))
}

/// Rewrites the JSON file at `path` after `edit` (two-space JSON, the keys in their order).
fn edit_file(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut value = read_json(path);
    edit(&mut value);
    write_json(path, &value);
}

/// A file as `T`, or why it cannot be read: for checks that tally failures instead of panicking.
pub fn try_read<T: DeserializeOwned>(path: &Path) -> Result<T, String> {
    let bytes = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{} does not match its mirror: {e}", path.display()))
}

fn read<T: DeserializeOwned>(path: &Path) -> T {
    try_read(path).unwrap_or_else(|e| panic!("{e}"))
}

impl Home {
    /// What a resume that failed part-way may change in the home since `before`: nothing but the
    /// session's history, by entries appended that each say an attempt at `tier` failed, and why.
    /// Returns the last one's why.
    pub fn only_a_failed_attempt_noted(&self, container: &str, before: &[(PathBuf, super::Entry)], tier: u8) -> String {
        self.only_failed_attempts_between(container, before, &self.snapshot(), tier)
    }

    /// [`Home::only_a_failed_attempt_noted`] between two snapshots of the home, or of a part of it
    /// that holds the session's data directory.
    pub fn only_failed_attempts_between(
        &self,
        container: &str,
        before: &[(PathBuf, super::Entry)],
        after: &[(PathBuf, super::Entry)],
        tier: u8,
    ) -> String {
        let path = self.continuity_path(container);
        let others = |s: &[(PathBuf, super::Entry)]| s.iter().filter(|(p, _)| *p != path).cloned().collect::<Vec<_>>();
        assert!(others(after) == others(before), "only the history changed: {:?}", super::changed_paths(before, after));
        let json = |s: &[(PathBuf, super::Entry)]| -> Value {
            let (_, entry) = s.iter().find(|(p, _)| *p == path).expect("the session has its continuity file");
            serde_json::from_slice(entry.bytes()).unwrap()
        };
        let (was, mut now) = (json(before), json(after));
        let (known, history) = (was["history"].as_array().map_or(0, Vec::len), now["history"].as_array_mut().unwrap());
        let attempts: Vec<Value> = history.drain(known.min(history.len())..).collect();
        assert_eq!(now, was, "the recipe, the cause and the earlier history are as they were");
        assert!(!attempts.is_empty(), "an entry says the attempt failed");
        let mut why = String::new();
        for entry in attempts {
            let entry: HistoryEntry = serde_json::from_value(entry).unwrap();
            assert_eq!((entry.tool.as_str(), entry.cause.as_str()), ("jackin-restore", "resume_failed"), "{entry:?}");
            assert_eq!(entry.from, entry.to, "the status stays: {entry:?}");
            let Evidence::ResumeFailed(failed) = entry.evidence else { panic!("{:?}", entry.evidence) };
            assert_eq!(failed.tier, tier);
            why = failed.failed;
        }
        why
    }

    pub fn manifest_path(&self, container: &str) -> PathBuf {
        self.data(container).join(".jackin/instance.json")
    }

    pub fn isolation_path(&self, container: &str) -> PathBuf {
        self.data(container).join(".jackin/isolation.json")
    }

    pub fn continuity_path(&self, container: &str) -> PathBuf {
        self.data(container).join(".jackin/continuity.json")
    }

    /// The manifest of `container`; fails the test when there is none or it does not parse.
    pub fn manifest(&self, container: &str) -> Manifest {
        read(&self.manifest_path(container))
    }

    pub fn try_manifest(&self, container: &str) -> Result<Manifest, String> {
        try_read(&self.manifest_path(container))
    }

    /// The index's rows, in the order on disk.
    pub fn index_rows(&self) -> Vec<IndexRow> {
        read::<Index>(&self.index_path()).instances
    }

    pub fn try_index_rows(&self) -> Result<Vec<IndexRow>, String> {
        Ok(try_read::<Index>(&self.index_path())?.instances)
    }

    /// The index row of `container`, if it has one.
    pub fn index_row(&self, container: &str) -> Option<IndexRow> {
        self.index_rows().into_iter().find(|r| r.container_base == container)
    }

    /// (manifest status, index row status) of a session that has both.
    pub fn status(&self, container: &str) -> (String, String) {
        let row = self.index_row(container).unwrap_or_else(|| panic!("{container} has no index row"));
        (self.manifest(container).status, row.status)
    }

    /// (manifest status, index row status), each `None` where its file or row is gone (a purge).
    pub fn status_left(&self, container: &str) -> (Option<String>, Option<String>) {
        let manifest = self.manifest_path(container).exists().then(|| self.manifest(container).status);
        (manifest, self.index_row(container).map(|r| r.status))
    }

    pub fn isolation(&self, container: &str) -> Isolation {
        read(&self.isolation_path(container))
    }

    /// The `cleanup_status` of each isolation record, in order.
    pub fn cleanup_statuses(&self, container: &str) -> Vec<String> {
        self.isolation(container).records.into_iter().map(|r| r.cleanup_status).collect()
    }

    pub fn continuity(&self, container: &str) -> Continuity {
        read(&self.continuity_path(container))
    }

    /// Rewrites the manifest of `container` after `edit` (two-space JSON, the keys in their order).
    pub fn edit_manifest(&self, container: &str, edit: impl FnOnce(&mut Value)) {
        edit_file(&self.manifest_path(container), edit);
    }

    /// Rewrites the isolation records of `container` after `edit`, as jackin writes them.
    pub fn edit_isolation(&self, container: &str, edit: impl FnOnce(&mut Value)) {
        edit_file(&self.isolation_path(container), edit);
    }

    /// Rewrites the tools' continuity file of `container` after `edit`.
    pub fn edit_continuity(&self, container: &str, edit: impl FnOnce(&mut Value)) {
        edit_file(&self.continuity_path(container), edit);
    }

    /// Rewrites the index row of `container` (every row with its name) after `edit`, the other
    /// rows and their order as they are.
    pub fn edit_row(&self, container: &str, edit: impl Fn(&mut Value)) {
        let path = self.index_path();
        let mut index = read_json(&path);
        for row in index["instances"].as_array_mut().unwrap() {
            if row["container_base"] == container {
                edit(row);
            }
        }
        write_json(&path, &index);
    }

    /// Sets the status jackin's files give a session, as jackin writes it: the manifest, then
    /// its index row. With `updated`, both also get it as their `updated_at`.
    pub fn set_status(&self, container: &str, status: &str, updated: Option<&str>) {
        let set = |v: &mut Value| {
            v["status"] = json!(status);
            if let Some(updated) = updated {
                v["updated_at"] = json!(updated);
            }
        };
        self.edit_manifest(container, set);
        self.edit_row(container, set);
    }

    /// Records the DinD sidecar and its certs volume in the manifest's `docker` object, in
    /// jackin's key order, as a launch with a sidecar writes it.
    pub fn with_sidecar(&self, container: &str) {
        self.edit_manifest(container, |m| {
            m["docker"] = json!({
                "role_container": container, "dind_container": format!("{container}-dind"),
                "network": format!("{container}-net"), "certs_volume": format!("{container}-dind-certs"),
            });
        });
    }
}

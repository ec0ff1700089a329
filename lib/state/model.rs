//! jackin's file formats (state.md). Field order here is the order on disk; `extra` keeps every
//! key jackin may add later, so a rewrite by these tools never loses one.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::state::names;
pub use crate::state::word::Word;

/// The ten status strings jackin can read. Nothing else is ever written into jackin's files. Each
/// word is its variant's name in snake case (strum writes and reads it).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, strum::EnumString, strum::IntoStaticStr, strum::Display, strum::EnumIter,
)]
#[strum(serialize_all = "snake_case")]
pub enum Status {
    Active,
    Running,
    CleanExited,
    Crashed,
    PreservedDirty,
    PreservedUnpushed,
    RestoreAvailable,
    Superseded,
    Purged,
    FailedSetup,
}

impl Status {
    pub(crate) fn as_str(self) -> &'static str {
        self.into()
    }

    /// The status a word names; `None` for a word that is none of jackin's ten.
    pub fn parse(text: &str) -> Option<Status> {
        text.parse().ok()
    }

    /// Purgeable without asking (lifecycle.md); `failed_setup` only once its work is verified clean.
    pub(crate) fn is_terminal(self) -> bool {
        matches!(self, Status::CleanExited | Status::Superseded | Status::Purged)
    }

    /// The session runs, as far as the row knows (`active`, `running`).
    pub(crate) fn is_live(self) -> bool {
        matches!(self, Status::Active | Status::Running)
    }

    /// Kept by an operator or a policy to be resumed.
    pub(crate) fn is_kept(self) -> bool {
        matches!(self, Status::RestoreAvailable | Status::PreservedDirty | Status::PreservedUnpushed)
    }
}

/// A status word as a record carries it: one of jackin's ten, parsed once where it is read, or a
/// word this version does not know (a newer jackin's), kept as it is and written back unchanged.
pub type StatusWord = Word<Status>;

/// An isolation kind as a record carries it (`worktree`, `clone`, or a newer jackin's word).
pub type IsolationWord = Word<IsolationKind>;

impl crate::state::word::Vocabulary for Status {}
impl crate::state::word::Vocabulary for IsolationKind {}

/// `data/instances.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Index {
    /// 1 in every index read: the store checks `version` on the raw JSON before this type is
    /// parsed, so that an index of another version is refused whatever its shape.
    pub(crate) version: u64,
    #[serde(default)]
    pub instances: Vec<IndexRow>,
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

impl Default for Index {
    fn default() -> Self {
        Index { version: 1, instances: Vec::new(), extra: Map::new() }
    }
}

impl Index {
    pub(crate) fn row(&self, container_base: &str) -> Option<&IndexRow> {
        self.instances.iter().find(|r| r.container_base == container_base)
    }

    /// Drop every row with this key, append the new one, keep the rows sorted (state.md). Keys
    /// jackin does not know survive from the row being replaced.
    pub(crate) fn upsert(&mut self, mut row: IndexRow) {
        if let Some(old) = self.row(&row.container_base) {
            for (key, value) in &old.extra {
                row.extra.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
        self.instances.retain(|r| r.container_base != row.container_base);
        self.instances.push(row);
        self.sort();
    }

    /// Returns whether a row was removed.
    pub(crate) fn remove(&mut self, container_base: &str) -> bool {
        let before = self.instances.len();
        self.instances.retain(|r| r.container_base != container_base);
        self.sort();
        before != self.instances.len()
    }

    /// `updated_at` descending, plain string order, stable.
    pub(crate) fn sort(&mut self) {
        self.instances.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
    }
}

/// One row of the index: a projection of the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexRow {
    pub(crate) instance_id: String,
    pub container_base: String,
    pub workspace_name: Option<String>,
    pub workspace_label: String,
    pub(crate) workdir: String,
    pub(crate) role_key: String,
    pub(crate) agent_runtime: String,
    pub status: StatusWord,
    pub(crate) updated_at: String,
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

impl IndexRow {
    /// The status the row says, read once here: `None` for a word that is none of jackin's ten
    /// (the word itself stays in `status`, written back as it was).
    pub(crate) fn known_status(&self) -> Option<Status> {
        self.status.known()
    }

    /// The row says `purged`: with no data directory beside it, jackin's tombstone of a session
    /// it removed (real-host.md, "Tombstones are jackin's"), or what a purge left after step 7.
    pub(crate) fn says_purged(&self) -> bool {
        self.known_status() == Some(Status::Purged)
    }

    pub(crate) fn from_manifest(m: &Manifest) -> Self {
        IndexRow {
            instance_id: m.instance_id.clone(),
            container_base: m.container_base.clone(),
            workspace_name: m.workspace_name.clone(),
            workspace_label: m.workspace_label.clone(),
            workdir: m.workdir.clone(),
            role_key: m.role_key.clone(),
            agent_runtime: m.agent_runtime.clone(),
            status: m.status.clone(),
            updated_at: m.updated_at.clone(),
            extra: Map::new(),
        }
    }
}

/// `data/<container>/.jackin/instance.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u64,
    pub(crate) instance_id: String,
    pub(crate) container_base: String,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
    pub(crate) workspace_name: Option<String>,
    pub(crate) workspace_label: String,
    pub(crate) workdir: String,
    pub(crate) host_workdir_fingerprint: String,
    pub(crate) role_key: String,
    pub(crate) role_display_name: String,
    pub(crate) agent_runtime: String,
    pub(crate) role_source_git: String,
    pub role_source_ref: Option<String>,
    pub(crate) image_tag: String,
    pub status: StatusWord,
    pub(crate) last_attach_outcome: Option<String>,
    pub docker: DockerNames,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) backend: Option<Value>,
    #[serde(default)]
    pub(crate) sessions: Vec<Value>,
    pub(crate) role_git_sha: Option<String>,
    pub(crate) base_image_ref: Option<String>,
    pub(crate) base_image_digest: Option<String>,
    #[serde(default)]
    pub(crate) supported_agents: Vec<Value>,
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

impl Manifest {
    /// The status the manifest says, read once here: `None` for a word that is none of jackin's
    /// ten (the word itself stays in `status`, written back as it was).
    pub(crate) fn known_status(&self) -> Option<Status> {
        self.status.known()
    }

    /// The status word, parsed once, for a record to carry.
    pub(crate) fn status_word(&self) -> StatusWord {
        self.status.clone()
    }
}

/// The Docker resources of an instance, as the launch recorded them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DockerNames {
    pub role_container: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dind_container: Option<String>,
    pub(crate) network: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) certs_volume: Option<String>,
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

impl DockerNames {
    /// The names jackin would have given; used only when the manifest cannot be read.
    pub fn derived(container: &str) -> Self {
        DockerNames {
            role_container: container.to_owned(),
            dind_container: Some(names::derived_dind_container(container)),
            network: names::derived_network(container),
            certs_volume: Some(names::derived_certs_volume(container)),
            extra: Map::new(),
        }
    }
}

/// `data/<container>/.jackin/isolation.json`. Records stay raw JSON so that one malformed record
/// makes only its own mount unknown, and a rewrite keeps it as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Isolation {
    pub(crate) version: u64,
    #[serde(default)]
    pub(crate) records: Vec<Value>,
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

impl Default for Isolation {
    fn default() -> Self {
        Isolation { version: 1, records: Vec::new(), extra: Map::new() }
    }
}

impl Isolation {
    /// Each record, parsed on its own; a malformed one is an error text for that mount alone.
    pub(crate) fn mounts(&self) -> Vec<Result<IsolationRecord, MalformedRecord>> {
        self.records.iter().map(IsolationRecord::from_value).collect()
    }

    /// Sets `cleanup_status` on every record that is an object, leaving every other key as is.
    pub fn set_cleanup_status(&mut self, status: &str) {
        for i in 0..self.records.len() {
            self.set_cleanup_status_of(i, status);
        }
    }

    /// Sets `cleanup_status` on the `i`th record when it is an object, leaving every other key.
    pub(crate) fn set_cleanup_status_of(&mut self, i: usize, status: &str) {
        if let Some(obj) = self.records.get_mut(i).and_then(Value::as_object_mut) {
            obj.insert("cleanup_status".into(), Value::String(status.to_owned()));
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::EnumString, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum IsolationKind {
    Worktree,
    Clone,
}

impl IsolationKind {
    pub(crate) fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One isolated mount: a worktree of a host repository, or a local clone of one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IsolationRecord {
    pub(crate) workspace: String,
    pub(crate) mount_dst: String,
    pub(crate) original_src: String,
    pub(crate) isolation: IsolationKind,
    pub(crate) worktree_path: String,
    pub(crate) scratch_branch: String,
    pub(crate) base_commit: String,
    pub(crate) selector_key: String,
    pub(crate) container_name: String,
    pub(crate) cleanup_status: String,
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

/// A record that could not be read: what little of it can be shown, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MalformedRecord {
    pub(crate) mount_dst: Option<String>,
    pub(crate) isolation: Option<String>,
    pub(crate) path: Option<String>,
    pub(crate) reason: String,
}

impl IsolationRecord {
    fn from_value(value: &Value) -> Result<Self, MalformedRecord> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let malformed = |reason: String| MalformedRecord {
            mount_dst: text("mount_dst"),
            isolation: text("isolation"),
            path: text("worktree_path"),
            reason,
        };
        let record: IsolationRecord =
            serde_json::from_value(value.clone()).map_err(|e| malformed(format!("malformed isolation record: {e}")))?;
        if record.isolation == IsolationKind::Worktree && record.scratch_branch.is_empty() {
            return Err(malformed("malformed isolation record: worktree without scratch_branch".into()));
        }
        if record.worktree_path.is_empty() || record.original_src.is_empty() {
            return Err(malformed("malformed isolation record: empty path".into()));
        }
        Ok(record)
    }
}

/// The unit tests' manifest: a session of the workspace `app` with the role `agentsmith` and
/// all four Docker names, as jackin writes it.
#[cfg(test)]
impl Manifest {
    pub(crate) fn sample(container_base: &str, status: &str) -> Manifest {
        let id = names::InstanceName::parse(container_base).expect("an instance name").instance_id().to_owned();
        serde_json::from_value(serde_json::json!({
            "version": 1, "instance_id": id, "container_base": container_base,
            "created_at": "2026-11-29T09:00:00Z", "updated_at": "2026-11-29T09:00:00Z",
            "workspace_name": null, "workspace_label": "app", "workdir": "/workspace/app",
            "host_workdir_fingerprint": "f", "role_key": "agentsmith", "role_display_name": "Agent Smith",
            "agent_runtime": "claude", "role_source_git": "", "role_source_ref": null, "image_tag": "t",
            "status": status, "last_attach_outcome": null,
            "docker": {"role_container": container_base, "dind_container": format!("{container_base}-dind"),
                       "network": format!("{container_base}-net"), "certs_volume": format!("{container_base}-dind-certs")},
            "role_git_sha": null, "base_image_ref": null, "base_image_digest": null,
        }))
        .expect("a manifest")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_strings_round_trip() {
        use strum::IntoEnumIterator;
        // jackin's ten words, as its own source spells them.
        let words = [
            "active",
            "running",
            "clean_exited",
            "crashed",
            "preserved_dirty",
            "preserved_unpushed",
            "restore_available",
            "superseded",
            "purged",
            "failed_setup",
        ];
        assert_eq!(Status::iter().map(Status::as_str).collect::<Vec<_>>(), words);
        for s in Status::iter() {
            assert_eq!(Status::parse(s.as_str()), Some(s));
            assert_eq!(s.to_string(), s.as_str());
        }
        assert_eq!(Status::parse("killed_by_host"), None);
        assert_eq!(Status::parse("Active"), None, "only jackin's spelling");
        // A word of a newer jackin is kept as it is, both ways.
        let other: StatusWord = serde_json::from_str("\"hibernating\"").unwrap();
        assert_eq!(other, StatusWord::Other("hibernating".into()));
        assert_eq!(serde_json::to_string(&other).unwrap(), "\"hibernating\"");
        let known: StatusWord = serde_json::from_str("\"crashed\"").unwrap();
        assert!(known == Status::Crashed && serde_json::to_string(&known).unwrap() == "\"crashed\"");
    }

    #[test]
    fn upsert_keeps_one_row_sorted_and_unknown_keys() {
        let row = |id: &str, at: &str| IndexRow {
            instance_id: id.into(),
            container_base: format!("jk-{id}-r"),
            workspace_name: None,
            workspace_label: "w".into(),
            workdir: "/w".into(),
            role_key: "r".into(),
            agent_runtime: "claude".into(),
            status: "active".into(),
            updated_at: at.into(),
            extra: Map::new(),
        };
        let mut index = Index::default();
        let mut first = row("aaaa", "2026-01-01T00:00:00Z");
        first.extra.insert("pinned".into(), Value::Bool(true));
        index.instances.push(first.clone());
        index.instances.push(first);
        index.upsert(row("bbbb", "2026-01-02T00:00:00Z"));
        index.upsert(row("aaaa", "2026-01-03T00:00:00Z"));
        let ids: Vec<_> = index.instances.iter().map(|r| r.instance_id.as_str()).collect();
        assert_eq!(ids, ["aaaa", "bbbb"]);
        assert_eq!(index.instances[0].extra["pinned"], Value::Bool(true));
    }
}

//! Strict mirrors of the records the tools write (protocol.md). They are written apart from the
//! library's own types on purpose, and refuse any field they do not list: a field added, renamed
//! or dropped without a plan fails a test instead of passing unseen.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

/// A record's data, with the type name it travels under.
pub trait Record: DeserializeOwned {
    const TYPE: &'static str;
}

/// The envelope every line has; `data` stays raw until a test asks for it as a [`Record`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    pub schema_version: u64,
    #[serde(rename = "type")]
    pub kind: String,
    pub data: Value,
}

impl Envelope {
    pub fn is<R: Record>(&self) -> bool {
        self.kind == R::TYPE
    }

    /// The data as `R`; fails the test when the line is of another type or its fields differ.
    /// Where a record says it was made (`host`, on every record a tool writes) is left out of the
    /// mirror.
    pub fn data<R: Record>(&self) -> R {
        assert_eq!(self.kind, R::TYPE, "expected a {} record: {self:?}", R::TYPE);
        let mut data = self.data.clone();
        // (A line a test composed and a tool passed through may have none; the wire recording
        // holds that every record a tool writes has one.)
        if R::TYPE != "host" {
            let host = data.as_object_mut().and_then(|fields| fields.remove("host"));
            assert!(host.is_none_or(|h| h.as_str().is_some_and(|h| !h.is_empty())), "an empty host: {self:?}");
        }
        serde_json::from_value(data)
            .unwrap_or_else(|e| panic!("a {} record that does not match its mirror: {e}: {}", R::TYPE, self.data))
    }
}

/// Every line of `stdout` as an envelope of schema version 1.
pub fn envelopes(stdout: &[u8]) -> Vec<Envelope> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| {
            let envelope: Envelope = serde_json::from_str(line).unwrap_or_else(|e| panic!("not a record: {e}: {line}"));
            assert_eq!(envelope.schema_version, 1, "{line}");
            envelope
        })
        .collect()
}

/// Every line of `stdout`, each of which must be an `R`.
pub fn records<R: Record>(stdout: &[u8]) -> Vec<R> {
    envelopes(stdout).iter().map(Envelope::data).collect()
}

/// The lines of `stdout` that are `R` records; the others are only checked to be records.
pub fn records_of<R: Record>(stdout: &[u8]) -> Vec<R> {
    envelopes(stdout).iter().filter(|e| e.is::<R>()).map(Envelope::data).collect()
}

/// Instance identity: the fields every per-instance record starts with.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    pub container_base: String,
    pub instance_id: String,
    pub workspace_name: Option<String>,
    pub workspace_label: String,
    pub role_key: String,
    pub agent_runtime: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assessment {
    #[serde(flatten)]
    pub identity: Identity,
    pub verdict: String,
    pub in_place: bool,
    pub mounts: Vec<Mount>,
    pub summary: String,
    pub assessed_at: String,
    pub status: Option<String>,
    /// Only with `--disk` (and in the resume list's candidates).
    #[serde(default)]
    pub disk: Option<Disk>,
    /// This home's seal, once its key exists (its first jackin-keep made it).
    #[serde(default)]
    pub seal: Option<String>,
}

/// An instance's bytes on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Disk {
    pub total: u64,
    pub data: u64,
    pub work: u64,
    pub ignored: u64,
    pub rebuildable: u64,
}

/// A mount's bytes on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MountDisk {
    pub work: u64,
    pub ignored: u64,
    pub rebuildable: u64,
}

impl Record for Assessment {
    const TYPE: &'static str = "assessment";
}

/// One isolated mount of an assessment.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mount {
    pub mount_dst: String,
    pub isolation: String,
    pub path: String,
    pub verdict: String,
    pub files: Vec<FileEntry>,
    pub unpushed: Vec<UnpushedRef>,
    pub stashes: u64,
    /// Submodules holding commits or stashes no remote-tracking ref of theirs holds.
    #[serde(default)]
    pub submodules: Vec<SubmoduleWork>,
    pub ignored: u64,
    pub error: Option<String>,
    pub original_src: Option<String>,
    #[serde(default)]
    pub disk: Option<MountDisk>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmoduleWork {
    pub path: String,
    #[serde(default)]
    pub path_bytes: Option<String>,
    pub unpushed: Vec<UnpushedRef>,
    #[serde(default)]
    pub stashes: u64,
}

/// One changed file of a mount, with the two status letters of `git status --short`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    pub status: String,
    pub path: String,
    /// A path that is not UTF-8: its raw bytes, base64 (`path` then has `\xNN` for them).
    #[serde(default)]
    pub path_bytes: Option<String>,
    /// The old path of a rename.
    #[serde(default)]
    pub from: Option<String>,
    /// The original path of a renamed or copied file.
    #[serde(default)]
    pub orig_path: Option<String>,
    #[serde(default)]
    pub orig_path_bytes: Option<String>,
    /// Only with `--diff`.
    #[serde(default)]
    pub diff: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnpushedRef {
    #[serde(rename = "ref")]
    pub name: String,
    pub commits: u64,
    pub upstream: Option<String>,
    pub integrated: Vec<Integrated>,
}

/// An at-risk commit whose patch a surviving ref holds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Integrated {
    pub commit: String,
    #[serde(rename = "as")]
    pub as_commit: String,
    #[serde(rename = "ref")]
    pub into: String,
    /// `patch` or `squash`.
    pub how: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    #[serde(flatten)]
    pub identity: Identity,
    pub outcome: String,
    pub policy: String,
    pub reason: String,
    pub verdict: String,
    pub discard_unfinished: bool,
    /// Present only when the clean-up was chosen in the container (its exit-action file).
    #[serde(default)]
    pub quarantine_required: bool,
    /// The status written, when the outcome wrote one.
    #[serde(default)]
    pub status: Option<String>,
    /// When the status was written (a decision carried out).
    #[serde(default)]
    pub stamped_at: Option<String>,
    /// Present only in a dry run.
    #[serde(default)]
    pub dry_run: bool,
    /// This home's seal (a decision carried out).
    #[serde(default)]
    pub seal: Option<String>,
}

impl Record for Decision {
    const TYPE: &'static str = "decision";
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Purged {
    #[serde(flatten)]
    pub identity: Identity,
    pub removed: Vec<Removed>,
    pub freed_bytes: u64,
    pub quarantine: Option<String>,
    /// `--slim`: only what git ignores was removed.
    #[serde(default)]
    pub slimmed: bool,
    #[serde(default)]
    pub dry_run: bool,
}

impl Record for Purged {
    const TYPE: &'static str = "purged";
}

impl Purged {
    pub fn removed_kinds(&self) -> Vec<&str> {
        self.removed.iter().map(|r| r.kind.as_str()).collect()
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Removed {
    pub kind: String,
    pub name: String,
    /// A name that is not UTF-8: its raw bytes, base64.
    #[serde(default)]
    pub name_bytes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    #[serde(flatten)]
    pub identity: Identity,
    pub from: String,
    pub to: String,
    pub cause: String,
    pub evidence: Evidence,
    #[serde(default)]
    pub dry_run: bool,
}

impl Record for Change {
    const TYPE: &'static str = "change";
}

/// The evidence of a change (and of the other status changes in the tools' own file), by its
/// shape; each shape refuses a field it does not list.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Evidence {
    /// The role container seen gone or running.
    Seen(RoleSeen),
    /// The role container had exited.
    Exit(Box<Exit>),
    /// jackin-keep kept the session.
    Kept(KeptEvidence),
    /// jackin-restore resumed it.
    Resumed(Resumed),
    /// A resume of jackin-restore failed; nothing else was written.
    ResumeFailed(ResumeFailed),
}

impl Evidence {
    /// The role container as it was seen; a test that expects reconcile's evidence fails here
    /// on any other.
    pub fn role(&self) -> &ContainerSeen {
        match self {
            Evidence::Seen(seen) => &seen.role,
            Evidence::Exit(exit) => &exit.role,
            other => panic!("no role container in {other:?}"),
        }
    }

    /// The evidence of an exit; fails the test on any other.
    pub fn exit(&self) -> &Exit {
        match self {
            Evidence::Exit(exit) => exit,
            other => panic!("not the evidence of an exit: {other:?}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSeen {
    pub role: ContainerSeen,
    pub observed_at: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exit {
    pub sign: Option<String>,
    pub role: ContainerSeen,
    pub sidecar: Option<ContainerSeen>,
    pub host_boot_time: Option<String>,
    pub engine_started_at: Option<String>,
    pub engine: Option<std::collections::BTreeMap<String, String>>,
    pub observed_at: String,
}

/// A container as reconcile saw it: name and status, and what an inspection said of its run
/// (absent for a container seen gone or running).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerSeen {
    pub name: String,
    pub status: String,
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub oom_killed: Option<bool>,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub finished_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeptEvidence {
    pub reason: String,
    pub policy: String,
    pub verdict: String,
    /// The launch recipe the kept session holds.
    #[serde(default)]
    pub recipe: Option<RecipeHeld>,
}

/// Which launch recipe a keep left the session with.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecipeHeld {
    pub captured_at: String,
    pub captured_by: String,
    pub sidecar: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resumed {
    pub tier: u8,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeFailed {
    pub tier: u8,
    pub failed: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repair {
    pub kind: String,
    pub name: String,
    pub reason: String,
    /// Where an unparsable index was moved (`index_rebuilt` only).
    #[serde(default)]
    pub moved_to: Option<String>,
    #[serde(default)]
    pub dry_run: bool,
}

impl Record for Repair {
    const TYPE: &'static str = "repair";
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Orphan {
    pub kind: String,
    pub name: String,
    pub reason: String,
    #[serde(default)]
    pub dry_run: bool,
}

impl Record for Orphan {
    const TYPE: &'static str = "orphan";
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    #[serde(flatten)]
    pub identity: Identity,
    pub status: String,
    pub cause: Option<String>,
    pub updated_at: String,
    pub verdict: Option<String>,
    pub summary: String,
    pub tier: Option<u8>,
    pub ready: bool,
    pub missing: Vec<String>,
    #[serde(default)]
    pub disk: Option<Disk>,
    pub label: String,
    /// With --retention, of a kept clean session.
    #[serde(default)]
    pub expires_in_secs: Option<i64>,
}

impl Record for Candidate {
    const TYPE: &'static str = "candidate";
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Restored {
    #[serde(flatten)]
    pub identity: Identity,
    /// `None` only in a plan that cannot resume; `missing` says why.
    pub tier: Option<u8>,
    #[serde(default)]
    pub missing: Vec<String>,
    pub actions: Vec<String>,
    pub attach: Vec<String>,
    pub drift: Vec<String>,
    #[serde(default)]
    pub dry_run: bool,
}

impl Record for Restored {
    const TYPE: &'static str = "restored";
}

/// One session `jackin-restore --interrupted` found interrupted, and what became of it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interrupted {
    #[serde(flatten)]
    pub identity: Identity,
    pub status: String,
    pub cause: Option<String>,
    pub interrupted_at: String,
    /// `resumed`, `would_resume`, `not_resumed` or `left_alone`.
    pub outcome: String,
    pub tier: Option<u8>,
    pub actions: Vec<String>,
    #[serde(default)]
    pub attach: Vec<String>,
    pub drift: Vec<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub next: Option<String>,
    pub exit: i32,
    /// Present (true) only with `--plan`/`--dry-run`.
    #[serde(default)]
    pub dry_run: bool,
}

impl Record for Interrupted {
    const TYPE: &'static str = "interrupted";
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorRecord {
    pub tool: String,
    pub container_base: Option<String>,
    pub code: String,
    pub message: String,
    /// Present only in a dry run.
    #[serde(default)]
    pub dry_run: bool,
}

impl Record for ErrorRecord {
    const TYPE: &'static str = "error";
}

/// One mount of a session moved to another host (`exported`, `imported`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MovedMount {
    pub mount_dst: String,
    pub isolation: String,
    pub repository: Option<String>,
    pub worktree: String,
    pub commits: usize,
    pub files: usize,
    pub head: Option<String>,
    pub remotes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exported {
    #[serde(flatten)]
    pub identity: Identity,
    pub file: String,
    pub bytes: Option<u64>,
    pub session_bytes: Option<u64>,
    pub parts: usize,
    pub mounts: Vec<MovedMount>,
    pub with_auth: bool,
    pub auth: Vec<String>,
    pub steps: Vec<String>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub dry_run: bool,
}

impl Record for Exported {
    const TYPE: &'static str = "exported";
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Imported {
    #[serde(flatten)]
    pub identity: Identity,
    pub file: String,
    pub exported_by: String,
    pub status: String,
    pub mounts: Vec<MovedMount>,
    pub auth: Vec<String>,
    pub steps: Vec<String>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub dry_run: bool,
}

impl Record for Imported {
    const TYPE: &'static str = "imported";
}

/// `session_record`: what a purge left of a session (`jackin-restore --records`, `--record C`,
/// and the file `records/<c>/record.json`, which has no `path`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRecord {
    #[serde(flatten)]
    pub identity: Identity,
    pub recorded_at: String,
    pub expires_at: String,
    pub launch: RecordLaunch,
    pub outcome: RecordOutcome,
    pub work: RecordWork,
    pub conversation: RecordConversation,
    #[serde(default)]
    pub path: Option<String>,
}

impl Record for SessionRecord {
    const TYPE: &'static str = "session_record";
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordLaunch {
    pub image: String,
    pub role: String,
    pub workspace: Option<String>,
    pub workdir: String,
    pub agent: String,
    pub mounts: Vec<RecordMount>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordMount {
    pub dst: String,
    pub src: String,
    pub isolation: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordOutcome {
    pub created_at: String,
    pub ended_at: String,
    pub duration_secs: Option<u64>,
    pub last_status: String,
    pub statuses: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordWork {
    pub verdict: String,
    pub summary: String,
    pub quarantine: Option<String>,
    pub mounts: Vec<RecordWorkMount>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordWorkMount {
    pub dst: String,
    pub verdict: String,
    pub commits: Vec<RecordCommit>,
    #[serde(default)]
    pub unreadable: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordCommit {
    pub id: String,
    pub subject: String,
    pub became: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordConversation {
    pub copied: Vec<RecordFile>,
    pub skipped: Vec<RecordSkipped>,
    pub bytes: u64,
    pub cap_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordFile {
    pub path: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordSkipped {
    pub path: String,
    pub reason: String,
}

//! The words of the wire that are not free text: an `error` record's `code`, the `kind` of what
//! a purge removed or reconcile found orphaned, and the `cause` of a `change`. Each is one enum
//! whose serde name is the word on the wire (snake_case), so a tool cannot write a word the
//! protocol does not have, and a misspelt one does not compile.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::state::select::Unresolvable;

/// Why an instance (or the run) failed or was refused: the `code` of an `error` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// An id prefix that names more than one instance.
    Ambiguous,
    AssessFailed,
    /// Work at risk, and no `--discard-unfinished`: nothing deleted.
    AtRisk,
    /// Not an instance name or id.
    BadName,
    /// A lock is held: retry later.
    Busy,
    CleanFailed,
    DockerFailed,
    /// `jackin-keep --export` could not write the archive.
    ExportFailed,
    /// An input record made on another host (its `host`): only that host's tools act on it.
    ForeignRecord,
    /// An input record whose `instance_id` is not that of the session of its name here.
    IdentityMismatch,
    /// `jackin-restore --import` refused the archive or could not make the session of it.
    ImportFailed,
    InspectFailed,
    IsolationUnreadable,
    KeepFailed,
    /// The session's role container runs.
    Live,
    ManifestUnreadable,
    /// A Docker resource or file that does not carry jackin's marks.
    NotJackin,
    /// `--slim` of a session that is not kept.
    NotKept,
    /// An orphan record whose instance (or writer) is still there.
    NotOrphan,
    /// A restore plan that cannot run yet: `missing` says why.
    NotReady,
    NotResumable,
    PurgeFailed,
    QuarantineFailed,
    RecipeCaptureFailed,
    RestoreFailed,
    SlimFailed,
    StatusWriteFailed,
    StopFailed,
    UnknownInstance,
    UnknownOrphanKind,
    /// An input record that asks for what only this home's own tools can grant (a decision's
    /// discard of work at risk) without this home's seal, or after the session changed since.
    Unproven,
    /// A name of jackin's `purged` tombstone: nothing is left of that session.
    Tombstone,
}

/// The word on the wire.
impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        word(self, f)
    }
}

impl From<Unresolvable> for ErrorCode {
    fn from(why: Unresolvable) -> ErrorCode {
        match why {
            Unresolvable::BadName => ErrorCode::BadName,
            Unresolvable::UnknownInstance => ErrorCode::UnknownInstance,
            Unresolvable::Ambiguous => ErrorCode::Ambiguous,
            Unresolvable::Tombstone => ErrorCode::Tombstone,
        }
    }
}

/// What one entry of a `purged` record's `removed` is, and what an `orphan` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceKind {
    Container,
    Network,
    Volume,
    Worktree,
    Branch,
    Directory,
    NameLock,
    IndexRow,
    TempFile,
    /// An expired quarantine directory (`--expire-quarantine`).
    Quarantine,
    /// An expired session record's directory (`--expire-quarantine`).
    SessionRecord,
    /// `--slim`: an ignored file or directory of a mount (a directory's name ends in `/`).
    Ignored,
}

/// The word on the wire.
impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        word(self, f)
    }
}

/// The kind of an `orphan` record as read: one of [`ResourceKind`], or a word this version does
/// not know, which is not bad input (the rest of the run goes on) but is refused when its turn
/// comes, by its own word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OrphanKind {
    Known(ResourceKind),
    Unknown(String),
}

impl OrphanKind {
    pub fn known(&self) -> Option<ResourceKind> {
        match self {
            OrphanKind::Known(kind) => Some(*kind),
            OrphanKind::Unknown(_) => None,
        }
    }
}

impl fmt::Display for OrphanKind {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            OrphanKind::Known(kind) => kind.fmt(f),
            OrphanKind::Unknown(word) => f.write_str(word),
        }
    }
}

/// The finer truth behind a status a `change` writes (lifecycle.md, "Reconcile").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The role container exited on its own.
    ContainerExited,
    /// The role container is gone.
    ContainerRemoved,
    /// A kept or crashed session's role container runs again.
    ContainerRunning,
    /// The host (the engine, its VM or the machine) went away under the session.
    KilledByHost,
    /// Nobody used the session for its idle window: jackin-idle kept it (extras/idle/), not a
    /// cause reconcile finds.
    IdleKept,
}

/// The same word in a session's history (`state::continuity::CauseKind`).
impl From<Cause> for crate::state::continuity::CauseKind {
    fn from(cause: Cause) -> Self {
        use crate::state::continuity::CauseKind;
        match cause {
            Cause::ContainerExited => CauseKind::ContainerExited,
            Cause::ContainerRemoved => CauseKind::ContainerRemoved,
            Cause::ContainerRunning => CauseKind::ContainerRunning,
            Cause::KilledByHost => CauseKind::KilledByHost,
            Cause::IdleKept => CauseKind::IdleKept,
        }
    }
}

/// The word on the wire.
impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        word(self, f)
    }
}

/// The serde name of a unit variant: the one spelling of each word is the one serde writes.
fn word<T: Serialize>(value: &T, f: &mut fmt::Formatter) -> fmt::Result {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(word)) => f.write_str(&word),
        _ => Err(fmt::Error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_is_written_as_serde_writes_it() {
        assert_eq!(ErrorCode::UnknownOrphanKind.to_string(), "unknown_orphan_kind");
        assert_eq!(serde_json::to_string(&ErrorCode::AtRisk).unwrap(), r#""at_risk""#);
        assert_eq!(ResourceKind::IndexRow.to_string(), "index_row");
        assert_eq!(Cause::KilledByHost.to_string(), "killed_by_host");
        // A cause reconcile found is spelled the same in a session's history.
        for cause in [Cause::ContainerExited, Cause::ContainerRemoved, Cause::ContainerRunning, Cause::KilledByHost] {
            assert_eq!(crate::state::continuity::CauseKind::from(cause).to_string(), cause.to_string());
        }
        assert_eq!(serde_json::from_str::<ResourceKind>(r#""name_lock""#).unwrap(), ResourceKind::NameLock);
    }
}

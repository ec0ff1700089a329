//! The tools' own per-instance file, `data/<container>/.jackin/continuity.json`: the finer truth
//! behind jackin's ten statuses (why it was kept, what killed it, with the evidence), and the
//! captured launch recipe. jackin never reads it; its files never carry these keys.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::state::model::{StatusWord, Word};
use crate::state::names::InstanceName;
use crate::state::recipe::LaunchRecipe;
use crate::state::store::{read_json, write_json_atomic, ContinuityLock, Store};

/// Why a session's status last changed, in the words its history and `cause` hold: what
/// reconcile found (the four words of a change record's `cause`), or a tool's own act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum CauseKind {
    ContainerExited,
    ContainerRemoved,
    ContainerRunning,
    KilledByHost,
    Kept,
    Resumed,
    ResumeFailed,
    Imported,
    /// jackin-idle kept the session: nobody used it for its idle window.
    IdleKept,
}

impl crate::state::word::Vocabulary for CauseKind {}

/// A cause as the file holds it; a newer tool's word is kept as it is.
pub type CauseWord = Word<CauseKind>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Continuity {
    pub(crate) version: u64,
    #[serde(default)]
    pub recipe: Option<LaunchRecipe>,
    #[serde(default)]
    pub(crate) kept: Option<Kept>,
    /// The cause behind the current status: `kept`, `killed_by_host`, `container_exited`, …
    #[serde(default)]
    pub cause: Option<CauseWord>,
    /// What was seen when `cause` was decided.
    #[serde(default)]
    pub(crate) evidence: Option<Value>,
    /// Every status change these tools made, oldest first.
    #[serde(default)]
    pub(crate) history: Vec<HistoryEntry>,
    /// The last `jackin-purge --slim` of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) slimmed: Option<Slimmed>,
    /// What jackin-idle's last check saw of the running session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) idle_watch: Option<IdleWatch>,
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

impl Default for Continuity {
    fn default() -> Self {
        Continuity {
            version: 1,
            recipe: None,
            kept: None,
            cause: None,
            evidence: None,
            history: Vec::new(),
            slimmed: None,
            idle_watch: None,
            extra: Map::new(),
        }
    }
}

impl Continuity {
    /// When these tools last kept the session, if they did.
    pub(crate) fn kept_at(&self) -> Option<String> {
        self.kept.as_ref().map(|k| k.at.clone())
    }
}

/// Who kept a session, when and why, and the assessment they saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Kept {
    pub(crate) at: String,
    /// `user@host` of the process that kept it.
    pub(crate) by: String,
    pub(crate) reason: String,
    pub(crate) policy: String,
    pub(crate) verdict: String,
    pub(crate) assessment: Value,
}

/// What jackin-idle's last check of a running session saw (extras/idle/): the CPU time its
/// containers had used then, for the next check to tell how busy they were in between, and the
/// last sign of use of each kind that needs watching over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IdleWatch {
    pub(crate) checked_at: String,
    /// The role container's start the count belongs to: another start counts from zero again.
    pub(crate) started_at: Option<String>,
    /// CPU time of the role container and its sidecar, in nanoseconds.
    pub(crate) cpu_ns: u64,
    /// Since when every check found the CPU use under the threshold.
    pub(crate) cpu_quiet_since: String,
    pub(crate) last_attached: Option<String>,
}

/// When a session was last slimmed, and what that took back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Slimmed {
    pub(crate) at: String,
    pub(crate) freed_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HistoryEntry {
    pub(crate) at: String,
    pub(crate) tool: String,
    pub(crate) from: StatusWord,
    pub(crate) to: StatusWord,
    pub(crate) cause: CauseWord,
    #[serde(default)]
    pub(crate) evidence: Value,
}

/// The file, or an empty one when there is none yet.
pub(crate) fn read(store: &Store, name: &InstanceName) -> Result<Continuity> {
    Ok(read_json(&store.continuity_path(name))?.unwrap_or_default())
}

/// One read-modify-write under the file's own lock (keep, reconcile and restore may all touch
/// it). `change` returns whether it changed anything.
pub fn update<T>(
    store: &Store,
    name: &InstanceName,
    change: impl FnOnce(&mut Continuity) -> Result<(T, bool)>,
) -> Result<T> {
    store.refuse_linked(name)?;
    let _lock = ContinuityLock::acquire(&store.continuity_lock_path(name))?;
    let mut continuity = read(store, name)?;
    let (value, changed) = change(&mut continuity)?;
    if changed {
        write_json_atomic(&store.continuity_path(name), &continuity)?;
    }
    Ok(value)
}

/// `user@host`, for "who kept it".
pub(crate) fn operator() -> String {
    let user = std::env::var("USER").or_else(|_| std::env::var("LOGNAME")).unwrap_or_else(|_| "unknown".into());
    format!("{user}@{}", crate::base::host::this_host())
}

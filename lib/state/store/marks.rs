//! The small per-instance files: the in-container exit modal's choice and the mark of a purge
//! that passed its at-risk check.

use serde::{Deserialize, Serialize};

/// What the in-container exit modal chose: a bare JSON string, `"keep"` or `"discard"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitChoice {
    Keep,
    Discard,
}

pub(crate) fn parse_exit_choice(bytes: &[u8]) -> Option<ExitChoice> {
    match serde_json::from_slice::<serde_json::Value>(bytes).ok()?.as_str()? {
        "keep" => Some(ExitChoice::Keep),
        "discard" => Some(ExitChoice::Discard),
        _ => None,
    }
}

/// The exit-action file as found (see `Store::read_exit_action`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExitActionFile {
    Absent,
    Fresh(ExitChoice),
    /// Written before this session started: it must not decide.
    Stale,
    /// Present but not `"keep"` or `"discard"`.
    Unreadable(String),
}

/// The tools' own mark that a purge of this instance passed its at-risk check and started
/// deleting: `data/<c>/.jackin/purge.json`. A rerun after a crash finds it and finishes the job
/// without asking again about work the first run already saved or found clean, as long as the
/// session is still the one the mark was written for (`session`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PurgeMark {
    pub(crate) started_at: String,
    pub(crate) verdict: String,
    pub(crate) quarantine: Option<String>,
    /// The manifest as the purge found it when it passed step 2. A mark without it (written by
    /// an earlier version) speaks for no session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) session: Option<MarkedSession>,
}

/// Which state of a session a purge mark was written for: the manifest's `status` and
/// `updated_at`, which every status change of jackin's and of these tools moves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MarkedSession {
    pub(crate) status: crate::state::model::StatusWord,
    pub(crate) updated_at: String,
}

//! `session_record`: what is left of a session after jackin-purge removed it — how it was
//! launched, how it went, what its work became, and where the copy of its agent's conversation
//! is. The file `<home>/records/<c>/record.json` holds it as written (services/session_record.rs);
//! `jackin-restore --records` and `--record C` print it.

use serde::{Deserialize, Serialize};

use crate::protocol::assessment::Verdict;
use crate::protocol::envelope::Record;
use crate::protocol::identity::Identity;
use crate::protocol::inert::inert_text;

use super::human_bytes;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    #[serde(flatten)]
    pub identity: Identity,
    pub(crate) recorded_at: String,
    /// When `jackin-purge --expire-quarantine` deletes it.
    pub(crate) expires_at: String,
    pub(crate) launch: Launch,
    pub(crate) outcome: SessionOutcome,
    pub(crate) work: Work,
    pub(crate) conversation: Conversation,
    /// The record's directory, filled in when it is read back (not in the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Launch {
    pub(crate) image: String,
    pub(crate) role: String,
    pub(crate) workspace: Option<String>,
    pub(crate) workdir: String,
    pub(crate) agent: String,
    pub(crate) mounts: Vec<LaunchMount>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LaunchMount {
    pub(crate) dst: String,
    pub(crate) src: String,
    pub(crate) isolation: crate::state::model::IsolationWord,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SessionOutcome {
    pub(crate) created_at: String,
    /// When it was purged (the record's time).
    pub(crate) ended_at: String,
    pub(crate) duration_secs: Option<u64>,
    /// The status it had when the purge took it.
    pub(crate) last_status: crate::state::model::StatusWord,
    /// Every status change these tools recorded, oldest first: `at`, `from`, `to`, `cause`.
    pub(crate) statuses: Vec<StatusChange>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StatusChange {
    pub(crate) at: String,
    pub(crate) from: crate::state::model::StatusWord,
    pub(crate) to: crate::state::model::StatusWord,
    pub(crate) cause: crate::state::continuity::CauseWord,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Work {
    pub(crate) verdict: Verdict,
    pub(crate) summary: String,
    /// Where the purge saved the work at risk, when it saved any.
    pub(crate) quarantine: Option<String>,
    pub(crate) mounts: Vec<WorkMount>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WorkMount {
    pub(crate) dst: String,
    pub(crate) verdict: Verdict,
    /// The session's own commits (since the mount's base commit, newest first, at most
    /// `MOST_COMMITS`), each with what it became.
    pub(crate) commits: Vec<CommitFate>,
    /// Why the commits could not be read, when they could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unreadable: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CommitFate {
    pub(crate) id: String,
    /// The agent's text: shown inert.
    pub(crate) subject: String,
    /// `pushed` (a remote-tracking ref holds it), `integrated` (its patch is on a surviving
    /// ref), `quarantined` (saved by this purge) or `lost` (none of these: a purge with a discard
    /// and no save, which the purge's own record says).
    pub(crate) became: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Conversation {
    /// Copied files, relative to the agent home, each byte for byte.
    pub(crate) copied: Vec<CopiedFile>,
    /// What was left out, and why (over the cap, not a regular file).
    pub(crate) skipped: Vec<SkippedFile>,
    pub(crate) bytes: u64,
    pub(crate) cap_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CopiedFile {
    pub(crate) path: String,
    pub(crate) bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SkippedFile {
    pub(crate) path: String,
    pub(crate) reason: String,
}

impl Record for SessionRecord {
    const TYPE: &'static str = "session_record";
    fn text(&self) -> String {
        let id = &self.identity;
        let minutes = self.outcome.duration_secs.map(|s| format!(" · ran {}m", s / 60)).unwrap_or_default();
        let mut text = format!(
            "{} · {} · purged {}{minutes} · {} · expires {} ({})",
            id.container_base,
            self.outcome.last_status,
            self.outcome.ended_at,
            inert_text(&self.work.summary),
            self.expires_at,
            crate::base::time::seconds_until(&self.expires_at, std::time::SystemTime::now())
                .map_or_else(|| "when its time is read".to_owned(), crate::base::time::countdown)
        );
        text.push_str(&format!(
            "\n  launch: {} as {} ({})",
            inert_text(&self.launch.image),
            self.launch.role,
            self.launch.agent
        ));
        for change in &self.outcome.statuses {
            let cause = change.cause.as_str().replace('_', " ");
            text.push_str(&format!("\n  {} {} → {} ({cause})", change.at, change.from, change.to));
        }
        for mount in &self.work.mounts {
            text.push_str(&format!("\n  {} · {}", inert_text(&mount.dst), mount.verdict.as_str()));
            for commit in &mount.commits {
                let short = commit.id.get(..12).unwrap_or(&commit.id);
                text.push_str(&format!("\n    {short} {} · {}", inert_text(&commit.subject), commit.became));
            }
            if let Some(why) = &mount.unreadable {
                text.push_str(&format!("\n    commits unreadable: {}", inert_text(why)));
            }
        }
        if let Some(dir) = &self.work.quarantine {
            text.push_str(&format!("\n  work at risk saved in {}", inert_text(dir)));
        }
        let conversation = &self.conversation;
        text.push_str(&format!(
            "\n  conversation: {} file(s), {} copied{}",
            conversation.copied.len(),
            human_bytes(conversation.bytes),
            if conversation.skipped.is_empty() {
                String::new()
            } else {
                format!(", {} left out", conversation.skipped.len())
            }
        ));
        if let Some(path) = &self.path {
            text.push_str(&format!(" in {}", inert_text(&format!("{path}/conversation"))));
        }
        for skipped in &conversation.skipped {
            text.push_str(&format!("\n    left out {}: {}", inert_text(&skipped.path), inert_text(&skipped.reason)));
        }
        text
    }
}

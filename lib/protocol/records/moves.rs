//! The records of moving a session to another host: `exported`, `imported`.

use super::{human_bytes, is_false, numbered_steps};
use crate::protocol::envelope::Record;
use crate::protocol::identity::Identity;
use serde::{Deserialize, Serialize};

/// One isolated mount of a session moved to another host, as `exported` and `imported` name it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MovedMount {
    pub(crate) mount_dst: String,
    pub(crate) isolation: crate::state::model::IsolationWord,
    /// The host repository: the one it was made from (`exported`), the one it went into here
    /// (`imported`).
    pub(crate) repository: Option<String>,
    /// The worktree or clone directory.
    pub(crate) worktree: String,
    /// The commits only the session held, carried in the archive's bundle.
    pub(crate) commits: usize,
    /// Changed and untracked files carried (deletions counted too).
    pub(crate) files: usize,
    /// The commit the work tree was on.
    pub(crate) head: Option<String>,
    /// The host repository's remote URLs, by which the other host finds its own.
    #[serde(default)]
    pub(crate) remotes: Vec<String>,
}

/// `exported`: a kept session written to one archive (or, `dry_run`, what would be written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exported {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    pub(crate) file: String,
    /// The archive's bytes (`None` in a dry run).
    pub(crate) bytes: Option<u64>,
    /// The session's bytes on disk (the assessment's `disk` total): what a move without the
    /// archive would copy, the rebuildable part included.
    pub(crate) session_bytes: Option<u64>,
    /// The parts the archive's index lists.
    pub(crate) parts: usize,
    pub(crate) mounts: Vec<MovedMount>,
    /// Whether the agents' auth slots are in it (`--with-auth`).
    pub(crate) with_auth: bool,
    /// The auth slots and credentials of the agent home found: carried with `with_auth`, else
    /// left out.
    #[serde(default)]
    pub(crate) auth: Vec<String>,
    /// The plan's steps in its words, in the order they are (or, `dry_run`, would be) carried out.
    #[serde(default)]
    pub(crate) steps: Vec<String>,
    /// What else was left out, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
}

impl Record for Exported {
    const TYPE: &'static str = "exported";
    fn text(&self) -> String {
        let verb = if self.dry_run { "would export to" } else { "exported to" };
        let commits: usize = self.mounts.iter().map(|m| m.commits).sum();
        let files: usize = self.mounts.iter().map(|m| m.files).sum();
        let mut line = format!("{} · {verb} {}", self.identity.container_base, self.file);
        if let Some(bytes) = self.bytes {
            line.push_str(&format!(" · {}", human_bytes(bytes)));
        }
        if let Some(total) = self.session_bytes {
            line.push_str(&format!(" (the session takes {} on disk)", human_bytes(total)));
        }
        line.push_str(&format!(
            " · {} · {}",
            crate::protocol::assessment::plural(commits, "commit", "commits"),
            crate::protocol::assessment::plural(files, "file", "files")
        ));
        let auth = match (self.with_auth, self.auth.is_empty()) {
            (_, true) => String::new(),
            (true, false) => format!(" · WITH the auth slots: {}", self.auth.join(", ")),
            (false, false) => format!(" · auth left out: {}", self.auth.join(", ")),
        };
        line.push_str(&auth);
        for note in &self.notes {
            line.push_str(&format!("\n  note: {note}"));
        }
        if self.dry_run {
            numbered_steps(&mut line, &self.steps);
        }
        line
    }
}

/// `imported`: a session brought in from an archive (or, `dry_run`, what would be made).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    pub(crate) file: String,
    /// Where it was exported, as `user@host`.
    pub(crate) exported_by: String,
    /// Its status here: the one it was kept with.
    pub(crate) status: crate::state::model::StatusWord,
    pub(crate) mounts: Vec<MovedMount>,
    /// The auth slots it came with (an archive written with `--with-auth`).
    #[serde(default)]
    pub(crate) auth: Vec<String>,
    /// The plan's steps in its words, in the order they are (or, `dry_run`, would be) carried out.
    #[serde(default)]
    pub(crate) steps: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
}

impl Record for Imported {
    const TYPE: &'static str = "imported";
    fn text(&self) -> String {
        let verb = if self.dry_run { "would import" } else { "imported" };
        let c = &self.identity.container_base;
        let mut out = format!("{c} · {verb} from {} (exported by {}) · {}", self.file, self.exported_by, self.status);
        for m in &self.mounts {
            out.push_str(&format!(
                "\n  {} ({}) into {} at {} · {} · {}",
                m.mount_dst,
                m.isolation,
                m.repository.as_deref().unwrap_or("?"),
                m.worktree,
                crate::protocol::assessment::plural(m.commits, "commit", "commits"),
                crate::protocol::assessment::plural(m.files, "file", "files")
            ));
        }
        for note in &self.notes {
            out.push_str(&format!("\n  note: {note}"));
        }
        match self.dry_run {
            true => numbered_steps(&mut out, &self.steps),
            false => out.push_str(&format!("\n  next: jackin-restore {c}")),
        }
        out
    }
}

//! restore's record of `--interrupted`: `interrupted`, one for each session the host or the
//! engine interrupted, and what became of it.

use serde::{Deserialize, Serialize};

use crate::protocol::envelope::Record;
use crate::protocol::identity::Identity;

/// What `jackin-restore --interrupted` did with one interrupted session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepOutcome {
    Resumed,
    /// `--plan`: it would be resumed as `tier` and `actions` say.
    WouldResume,
    /// It was tried (or, with `--plan`, would be) and did not come back: `reason` says why,
    /// `next` what to do.
    NotResumed,
    /// Not tried: in use by another process, or interrupted before the window.
    LeftAlone,
}

impl SweepOutcome {
    fn words(self) -> &'static str {
        match self {
            SweepOutcome::Resumed => "resumed",
            SweepOutcome::WouldResume => "would resume",
            SweepOutcome::NotResumed => "not resumed",
            SweepOutcome::LeftAlone => "left alone",
        }
    }
}

/// `interrupted`: one interrupted session and the outcome of its resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interrupted {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    /// Its status as reconciliation left it (`crashed`).
    pub(crate) status: crate::state::model::StatusWord,
    /// `killed_by_host`, `container_exited`, `container_removed`.
    pub(crate) cause: Option<crate::state::continuity::CauseWord>,
    /// When these tools found it interrupted (its history's entry to `crashed`), else when its
    /// status was last written.
    pub(crate) interrupted_at: String,
    pub outcome: SweepOutcome,
    /// The tier it was (or would be) resumed by.
    pub(crate) tier: Option<u8>,
    pub(crate) actions: Vec<String>,
    /// The argv that reconnects to it, once resumed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) attach: Vec<String>,
    pub(crate) drift: Vec<String>,
    /// Why it was not resumed, or left alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    /// The command to act on it next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) next: Option<String>,
    /// The exit code a resume of this session alone would have ended with.
    pub exit: i32,
    /// `--plan`/`--dry-run`: nothing was started or changed (written only when true, as
    /// `restored` does).
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub(crate) dry_run: bool,
}

impl Record for Interrupted {
    const TYPE: &'static str = "interrupted";
    fn text(&self) -> String {
        let cause = self.cause.as_ref().map_or(String::new(), |c| format!(" ({c})"));
        let mut line = format!(
            "{} · interrupted {}{cause} · {}",
            self.identity.container_base,
            self.interrupted_at,
            self.outcome.words()
        );
        if let Some(tier) =
            self.tier.filter(|_| matches!(self.outcome, SweepOutcome::Resumed | SweepOutcome::WouldResume))
        {
            line.push_str(&format!(" (tier {tier})"));
        }
        if let Some(reason) = &self.reason {
            line.push_str(&format!(": {}", crate::protocol::inert::inert_name(reason)));
        }
        if !self.attach.is_empty() && self.outcome == SweepOutcome::Resumed {
            line.push_str(&format!(" · attach: {}", self.attach.join(" ")));
        }
        if let Some(next) = &self.next {
            line.push_str(&format!("\n  next: {next}"));
        }
        line
    }
}

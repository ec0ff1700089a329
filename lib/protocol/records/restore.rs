//! restore's records: `candidate`, `quarantined`, `recovered`, `restored`.

use super::{human_bytes, is_false, numbered_steps};
use crate::protocol::assessment::Disk;
use crate::protocol::envelope::Record;
use crate::protocol::identity::Identity;
use serde::{Deserialize, Serialize};

/// `candidate`: a session that can be resumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    pub(crate) status: crate::state::model::StatusWord,
    pub(crate) cause: Option<crate::state::continuity::CauseWord>,
    pub(crate) updated_at: String,
    pub(crate) verdict: Option<String>,
    pub(crate) summary: String,
    /// 0–3, or `None` when it cannot be restored.
    pub(crate) tier: Option<u8>,
    pub(crate) ready: bool,
    pub(crate) missing: Vec<String>,
    /// Its bytes on disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) disk: Option<Disk>,
    /// The human line: `Resume jk-… · 2h ago · clean · 4.1 GiB (3.8 GiB rebuildable) · ready`.
    pub(crate) label: String,
    /// With `--retention`: seconds until the retention purge deletes this kept clean session
    /// (negative: at its next run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_in_secs: Option<i64>,
}

impl Record for Candidate {
    const TYPE: &'static str = "candidate";
    /// The label, and the tier a resume would take (the picker shows the tier in a column of
    /// its own, so the label does not hold it).
    fn text(&self) -> String {
        match self.tier {
            Some(tier) => format!("{} · tier {tier}", self.label),
            None => self.label.clone(),
        }
    }
}

/// `quarantine`: one quarantine a discard left, as `jackin-restore --quarantined` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quarantined {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    /// The quarantine directory.
    pub(crate) dir: String,
    /// When the work was discarded (and saved).
    pub(crate) saved_at: String,
    pub(crate) expires_at: String,
    /// Seconds until `--expire-quarantine` deletes it (negative: past due, deleted at its next
    /// run), as of the listing.
    pub(crate) expires_in_secs: Option<i64>,
    /// What was at risk, as the assessment said.
    pub(crate) summary: String,
    pub(crate) repositories: Vec<QuarantinedRepository>,
    /// The bytes the quarantine takes.
    pub(crate) bytes: u64,
    /// Every repository of it can be recovered now (`jackin-restore --recover`).
    pub(crate) recoverable: bool,
}

/// What a quarantine holds of one mount.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuarantinedRepository {
    pub(crate) mount_dst: String,
    pub(crate) isolation: crate::state::model::IsolationWord,
    /// The host repository it was made from.
    pub(crate) repository: Option<String>,
    /// Commits in its bundle.
    pub(crate) commits: usize,
    /// Changed and new files saved (deletions not counted).
    pub(crate) files: usize,
    /// Its host repository is there to recover into (else `--into DIR`).
    pub(crate) recoverable: bool,
}

impl Record for Quarantined {
    const TYPE: &'static str = "quarantine";
    fn text(&self) -> String {
        let commits: usize = self.repositories.iter().map(|r| r.commits).sum();
        let files: usize = self.repositories.iter().map(|r| r.files).sum();
        let state = if self.recoverable { "recoverable" } else { "host repository gone: --recover needs --into DIR" };
        format!(
            "{} · discarded {} · {} · {} · {} · {} · until {} (expires {}) · {state}\n  {}",
            self.identity.container_base,
            self.saved_at,
            crate::protocol::inert::inert_text(&self.summary),
            crate::protocol::assessment::plural(commits, "commit", "commits"),
            crate::protocol::assessment::plural(files, "file", "files"),
            human_bytes(self.bytes),
            self.expires_at,
            self.expires_in_secs.map_or_else(|| "when its time is read".to_owned(), crate::base::time::countdown),
            self.dir
        )
    }
}

/// `recovered`: one repository's discarded work put back (or, `dry_run`, what would be made).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recovered {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    pub(crate) quarantine: String,
    pub(crate) mount_dst: String,
    /// The repository the work went into.
    pub(crate) repository: String,
    /// The new branch the work tree is on (full ref name).
    pub(crate) branch: String,
    /// Each saved ref and the new ref that holds its commit.
    pub(crate) refs: Vec<RecoveredRef>,
    /// The new worktree (or, with `--into`, the new repository's work tree) holding the files.
    pub(crate) worktree: String,
    /// Changed and new files written back, and files deleted as the session had deleted them.
    pub(crate) files: usize,
    pub(crate) deleted: usize,
    /// Files whose staged change (a new, changed, renamed or deleted entry, or a staged version
    /// the work tree no longer had) went into the new work tree's index as the session had it.
    #[serde(default)]
    pub(crate) staged: usize,
    /// The commits made inside the mount's submodules, each where it went.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) submodules: Vec<RecoveredSubmodule>,
    /// What was not brought back, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecoveredRef {
    /// The ref's name in the bundle.
    pub(crate) saved: String,
    #[serde(rename = "as")]
    pub(crate) as_ref: String,
    pub(crate) commit: String,
}

/// One submodule's commits, recovered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecoveredSubmodule {
    /// Its path in the mount; one that is not UTF-8 has its bytes in `path_bytes`.
    pub(crate) path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path_bytes: Option<String>,
    /// The git directory that received the commits: the host repository's own git directory of
    /// the submodule (`<host gitdir>/modules/<name>`), or a new bare repository beside the
    /// recovered worktree (`new_repository`).
    pub(crate) repository: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) new_repository: bool,
    /// The branch at the commit the submodule's work tree was on, when that commit is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) branch: Option<String>,
    pub(crate) refs: Vec<RecoveredRef>,
    /// The commits of the submodule's remote the saved ones build on that `repository` lacks (a
    /// new one lacks them all): until they are fetched into it, nothing can fetch from it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) lacks: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl RecoveredSubmodule {
    /// Where its commits went, and the command that shows them.
    fn text(&self) -> (String, String) {
        let full = self.branch.as_deref();
        // Branches in a new repository (--into); refs outside refs/heads/ in a host's.
        let named = full.or_else(|| self.refs.first().map(|r| r.as_ref.as_str())).unwrap_or("refs/heads/");
        let root = match named.starts_with("refs/heads/") {
            true => "refs/heads/jackin/recovered",
            false => "refs/jackin/recovered",
        };
        let branch = full.map(|b| b.strip_prefix("refs/heads/").or_else(|| b.strip_prefix("refs/")).unwrap_or(b));
        let path = crate::protocol::inert::inert_name(&self.path);
        let into = if self.new_repository { "a new repository " } else { "" };
        let what = if root.starts_with("refs/heads/") { "branch" } else { "ref" };
        let on = branch.map_or(String::new(), |b| format!("{what} {b}, "));
        let line = format!("submodule {path}: {on}{} refs, into {into}{}", self.refs.len(), self.repository);
        let show = branch.or_else(|| self.refs.first().map(|r| r.as_ref.as_str())).unwrap_or("--all");
        let repo = &self.repository;
        let mut next = format!("git --git-dir={repo} log --oneline {show}");
        if self.new_repository {
            if self.lacks > 0 {
                next = format!(
                    "git --git-dir={repo} fetch <the submodule's remote, its url in .gitmodules> \
                     'refs/heads/*:refs/remotes/origin/*' (the {} commit(s) they build on), then {next}",
                    self.lacks
                );
            }
            next.push_str(&format!(
                "; into a checkout of it: git -C <checkout>/{path} fetch {repo} '{root}/*:{root}/*'"
            ));
        }
        (line, next)
    }
}

impl Record for Recovered {
    const TYPE: &'static str = "recovered";
    fn text(&self) -> String {
        let verb = if self.dry_run { "would recover" } else { "recovered" };
        // A branch in a new repository (--into); in a host repository a ref outside refs/heads/,
        // which jackin's exit check does not count, checked out by its short name all the same.
        let (what, branch) = match self.branch.strip_prefix("refs/heads/") {
            Some(branch) => ("branch", branch),
            None => ("ref", self.branch.strip_prefix("refs/").unwrap_or(&self.branch)),
        };
        let mut out = format!(
            "{} {} {verb} into {}: {what} {branch} ({} refs), worktree {} ({} files written, {} deleted, {} staged)",
            self.identity.container_base,
            self.mount_dst,
            self.repository,
            self.refs.len(),
            self.worktree,
            self.files,
            self.deleted,
            self.staged
        );
        let submodules: Vec<(String, String)> = self.submodules.iter().map(RecoveredSubmodule::text).collect();
        for (line, _) in &submodules {
            out.push_str(&format!("\n  {line}"));
        }
        for note in &self.notes {
            out.push_str(&format!("\n  note: {note}"));
        }
        if !self.dry_run {
            out.push_str(&format!(
                "\n  next: cd {} && git status && git diff --cached --stat && git log --oneline -5",
                self.worktree
            ));
            for (_, next) in &submodules {
                out.push_str(&format!("\n  next: {next}"));
            }
        }
        out
    }
}

/// `restored`: a session resumed, or (`dry_run`) the plan for resuming it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Restored {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    /// 0–3; `None` only in a plan that cannot resume, whose `missing` says why.
    pub(crate) tier: Option<u8>,
    /// What prevents the resume (a plan only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) missing: Vec<String>,
    pub(crate) actions: Vec<String>,
    /// The argv that reconnects to the session.
    pub attach: Vec<String>,
    pub(crate) drift: Vec<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
}

impl Record for Restored {
    const TYPE: &'static str = "restored";
    fn text(&self) -> String {
        let Some(tier) = self.tier else {
            return format!("{} · cannot resume: {}", self.identity.container_base, self.missing.join("; "));
        };
        let dry = if self.dry_run { "would resume" } else { "resumed" };
        let mut line =
            format!("{} · {dry} (tier {tier}) · attach: {}", self.identity.container_base, self.attach.join(" "));
        if !self.missing.is_empty() {
            line.push_str(&format!(" · not ready: {}", self.missing.join("; ")));
        }
        // Why a container is replaced (or started though it differs), as the JSON's `drift`.
        for drift in &self.drift {
            line.push_str(&format!("\n  drift: {drift}"));
        }
        // A plan's steps, one a line, in the order the resume runs them.
        if self.dry_run {
            numbered_steps(&mut line, &self.actions);
        }
        line
    }
}

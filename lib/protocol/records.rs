//! The records each tool writes (protocol.md, "Record types") other than the assessment, and
//! their text renderings.

use crate::protocol::assessment::{Disk, Verdict};
use crate::protocol::codes::{Cause, ErrorCode, OrphanKind, ResourceKind};
use crate::protocol::envelope::Record;
use crate::protocol::evidence::Evidence;
use crate::protocol::identity::Identity;
use crate::protocol::path_bytes::NameBytes;
use crate::state::config::Policy;
use serde::{Deserialize, Serialize};

/// `error`: one instance (or the run) failed; the others carried on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ErrorRecord {
    pub(crate) tool: String,
    pub(crate) container_base: Option<String>,
    pub(crate) code: ErrorCode,
    pub(crate) message: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
}

impl Record for ErrorRecord {
    const TYPE: &'static str = "error";
    fn text(&self) -> String {
        let dry = if self.dry_run { " (dry run)" } else { "" };
        match &self.container_base {
            Some(c) => format!("{c} · error · {}{dry}", self.message),
            None => format!("error · {}{dry}", self.message),
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What jackin-keep decided for a session: the three answers of the exit policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Keep,
    Clean,
    Return,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Keep => "keep",
            Outcome::Clean => "clean",
            Outcome::Return => "return",
        }
    }
}

/// `decision`: what jackin-keep decided for one assessed instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    pub(crate) outcome: Outcome,
    /// The policy that applied.
    pub(crate) policy: Policy,
    /// Why, in a word or two: `clean session`, `dirty`, `operator keep`, `policy keep`, …
    pub(crate) reason: String,
    /// The assessment's verdict the decision was taken on.
    pub(crate) verdict: Verdict,
    /// A clean outcome chosen over work at risk: purge quarantines that work before deleting.
    #[serde(default)]
    pub(crate) discard_unfinished: bool,
    /// The clean-up was chosen in the container (its exit-action file, which the agent can
    /// write): purge saves the work at risk even under `--no-quarantine`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) quarantine_required: bool,
    /// The status written (keep, clean), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
}

impl Record for Decision {
    const TYPE: &'static str = "decision";
    fn text(&self) -> String {
        let dry = if self.dry_run { " (dry run)" } else { "" };
        format!(
            "{} · {} · {} ({} policy){dry}",
            self.identity.container_base,
            self.outcome.as_str(),
            self.reason,
            self.policy.as_str()
        )
    }
}

/// One resource a purge removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removed {
    /// For a slim, `ignored`: an ignored file or directory of a mount, whose name ends in `/`
    /// when it is a directory.
    pub kind: ResourceKind,
    /// The name as text; a file name that is not UTF-8 has its bytes in `name_bytes`
    /// (protocol/path_bytes.rs).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_bytes: Option<String>,
}

impl Removed {
    pub fn new(kind: ResourceKind, name: impl Into<String>) -> Self {
        Removed { kind, name: name.into(), name_bytes: None }
    }

    /// A file or directory removed, named by its own bytes.
    pub fn file(kind: ResourceKind, name: &NameBytes) -> Self {
        Removed { kind, name: name.text(), name_bytes: name.wire_bytes() }
    }
}

/// `purged`: one instance (or orphan) deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Purged {
    #[serde(flatten)]
    pub identity: Identity,
    pub removed: Vec<Removed>,
    pub freed_bytes: u64,
    /// Where at-risk work was saved before deletion, if any was.
    pub quarantine: Option<String>,
    /// `jackin-purge --slim`: only what git ignores was removed; the session is still kept.
    #[serde(default, skip_serializing_if = "is_false")]
    pub slimmed: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
}

impl Record for Purged {
    const TYPE: &'static str = "purged";
    fn text(&self) -> String {
        let mut line = format!(
            "{} · {} · {} removed · {} freed",
            self.identity.container_base,
            if self.slimmed { "slimmed" } else { "purged" },
            self.removed.len(),
            human_bytes(self.freed_bytes)
        );
        if let Some(q) = &self.quarantine {
            line.push_str(&format!(" · unfinished work saved in {q}"));
        }
        if self.dry_run {
            line.push_str(" (dry run)");
        }
        line
    }
}

/// `purged` with the text format listing what went and how much space came back.
pub struct PurgedReport<'a>(pub &'a Purged);

impl Serialize for PurgedReport<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl Record for PurgedReport<'_> {
    const TYPE: &'static str = Purged::TYPE;
    fn text(&self) -> String {
        let p = self.0;
        let verb = if p.dry_run { "would remove" } else { "removed" };
        let mut out = p.text();
        for r in &p.removed {
            let name = crate::protocol::inert::inert_name(&r.name);
            out.push_str(&format!("\n  {verb} {} {name}", r.kind.to_string().replace('_', " ")));
        }
        if p.removed.is_empty() {
            out.push_str("\n  nothing left to remove");
        }
        out
    }
}

/// `change`: reconcile changed an instance's status to match what Docker says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    pub(crate) from: String,
    pub(crate) to: String,
    /// The finer truth behind the new status.
    pub(crate) cause: Cause,
    pub(crate) evidence: Evidence,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
}

impl Record for Change {
    const TYPE: &'static str = "change";
    fn text(&self) -> String {
        let dry = if self.dry_run { " (dry run)" } else { "" };
        format!(
            "{} · {} → {} · {}{dry}",
            self.identity.container_base,
            self.from,
            self.to,
            self.cause.to_string().replace('_', " ")
        )
    }
}

/// `orphan`: something of jackin's whose instance no longer exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Orphan {
    /// `container`, `network`, `volume`, `name_lock` or `temp_file`.
    pub(crate) kind: OrphanKind,
    pub name: String,
    pub(crate) reason: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
}

impl Record for Orphan {
    const TYPE: &'static str = "orphan";
    fn text(&self) -> String {
        format!("orphan {} {} · {}", self.kind, self.name, self.reason)
    }
}

/// `candidate`: a session that can be resumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    #[serde(flatten)]
    pub(crate) identity: Identity,
    pub(crate) status: String,
    pub(crate) cause: Option<String>,
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
}

impl Record for Candidate {
    const TYPE: &'static str = "candidate";
    fn text(&self) -> String {
        self.label.clone()
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
    pub(crate) isolation: String,
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
            "{} · discarded {} · {} · {} · {} · until {} · {state}\n  {}",
            self.identity.container_base,
            self.saved_at,
            crate::protocol::assessment::plural(commits, "commit", "commits"),
            crate::protocol::assessment::plural(files, "file", "files"),
            human_bytes(self.bytes),
            self.expires_at,
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
        let branch = self.branch.as_deref().map(|b| b.strip_prefix("refs/heads/").unwrap_or(b));
        let path = crate::protocol::inert::inert_name(&self.path);
        let into = if self.new_repository { "a new repository " } else { "" };
        let on = branch.map_or(String::new(), |b| format!("branch {b}, "));
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
                "; into a checkout of it: git -C <checkout>/{path} fetch {repo} \
                 'refs/heads/jackin/recovered/*:refs/heads/jackin/recovered/*'"
            ));
        }
        (line, next)
    }
}

impl Record for Recovered {
    const TYPE: &'static str = "recovered";
    fn text(&self) -> String {
        let verb = if self.dry_run { "would recover" } else { "recovered" };
        let branch = self.branch.strip_prefix("refs/heads/").unwrap_or(&self.branch);
        let mut out = format!(
            "{} {} {verb} into {}: branch {branch} ({} refs), worktree {} ({} files written, {} deleted, {} staged)",
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
        // A plan's steps, one a line, in the order the resume runs them.
        if self.dry_run {
            for (n, step) in self.actions.iter().enumerate() {
                line.push_str(&format!("\n  {}. {step}", n + 1));
            }
        }
        line
    }
}

/// One isolated mount of a session moved to another host, as `exported` and `imported` name it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MovedMount {
    pub(crate) mount_dst: String,
    pub(crate) isolation: String,
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
    pub(crate) status: String,
    pub(crate) mounts: Vec<MovedMount>,
    /// The auth slots it came with (an archive written with `--with-auth`).
    #[serde(default)]
    pub(crate) auth: Vec<String>,
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
        if !self.dry_run {
            out.push_str(&format!("\n  next: jackin-restore {c}"));
        }
        out
    }
}

/// `1.2 GiB`, for people.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// `repair`: reconcile mended the index: a row restored from its manifest, a row brought back in
/// line with its manifest, a row dropped (data dir and container both gone), or an index that
/// did not parse moved aside and rebuilt. It carries no `container_base`, so a tool that acts on
/// the instances named by its input (`jackin-assess -`) does not go looking for a dropped one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repair {
    pub kind: RepairKind,
    /// The instance (container name), or the index file for `index_rebuilt`.
    pub name: String,
    pub reason: String,
    /// Where the unparsable index was moved (`index_rebuilt` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) moved_to: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dry_run: bool,
}

impl Record for Repair {
    const TYPE: &'static str = "repair";
    fn text(&self) -> String {
        let dry = if self.dry_run { " (dry run)" } else { "" };
        format!("{} · {} · {}{dry}", self.name, self.kind.as_str().replace('_', " "), self.reason)
    }
}

/// What a `repair` mended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepairKind {
    /// A data dir with a manifest had no index row.
    RowRestored,
    /// An index row did not match its manifest.
    RowRefreshed,
    /// A row whose data dir and container are both gone.
    RowDropped,
    /// An index that did not parse, moved aside.
    IndexRebuilt,
}

impl RepairKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RepairKind::RowRestored => "row_restored",
            RepairKind::RowRefreshed => "row_refreshed",
            RepairKind::RowDropped => "row_dropped",
            RepairKind::IndexRebuilt => "index_rebuilt",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::envelope::to_line;

    fn identity() -> Identity {
        Identity {
            container_base: "jk-k7p9m2xq-app".into(),
            instance_id: "k7p9m2xq".into(),
            workspace_name: None,
            workspace_label: "app".into(),
            role_key: "r".into(),
            agent_runtime: "claude".into(),
        }
    }

    #[test]
    fn a_decision_writes_its_enums_as_the_words_of_the_protocol() {
        let decision = Decision {
            identity: identity(),
            outcome: Outcome::Return,
            policy: Policy::Ask,
            reason: "operator return".into(),
            verdict: Verdict::Unpushed,
            discard_unfinished: false,
            quarantine_required: false,
            status: None,
            dry_run: false,
        };
        let line = to_line(&decision).unwrap();
        assert!(line.contains(r#""outcome":"return","policy":"ask","reason":"operator return","verdict":"unpushed""#));
        let data: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(serde_json::from_value::<Decision>(data["data"].clone()).unwrap(), decision);
    }

    #[test]
    fn an_error_in_a_dry_run_says_so() {
        let error = ErrorRecord {
            tool: "t".into(),
            container_base: None,
            code: ErrorCode::Busy,
            message: "m".into(),
            dry_run: true,
        };
        assert!(to_line(&error).unwrap().ends_with(r#""code":"busy","message":"m","dry_run":true}}"#));
        assert_eq!(error.text(), "error · m (dry run)");
    }

    #[test]
    fn a_plan_without_a_tier_says_why() {
        let plan = Restored {
            identity: identity(),
            tier: None,
            missing: vec!["no launch recipe".into()],
            actions: Vec::new(),
            attach: vec!["docker".into()],
            drift: Vec::new(),
            dry_run: true,
        };
        assert!(to_line(&plan).unwrap().contains(r#""tier":null,"missing":["no launch recipe"]"#));
        assert_eq!(plan.text(), "jk-k7p9m2xq-app · cannot resume: no launch recipe");
    }
}

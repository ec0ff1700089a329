//! The assessment of an instance: per isolated mount, what a purge would destroy (lifecycle.md).

use std::path::Path;

use anyhow::Result;
use git2::Repository;
use serde::{Deserialize, Serialize};

use crate::engines::git::{self, FileChange, UnpushedRef};
use crate::protocol::records::{Identity, Record};
use crate::state::model::{IndexRow, IsolationKind, IsolationRecord, MalformedRecord};
use crate::state::names::InstanceName;
use crate::state::store::Store;

/// How much a purge would destroy, in increasing order of worry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Clean,
    Unpushed,
    Dirty,
    /// Cannot be observed: treated as at risk.
    Unknown,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Clean => "clean",
            Verdict::Unpushed => "unpushed",
            Verdict::Dirty => "dirty",
            Verdict::Unknown => "unknown",
        }
    }

    pub fn at_risk(self) -> bool {
        self != Verdict::Clean
    }
}

/// One isolated mount, as a purge would find it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MountAssessment {
    pub mount_dst: String,
    /// `worktree`, `clone`, or whatever a malformed record said.
    pub isolation: String,
    pub path: String,
    pub verdict: Verdict,
    #[serde(default)]
    pub files: Vec<FileChange>,
    #[serde(default)]
    pub unpushed: Vec<UnpushedRef>,
    #[serde(default)]
    pub stashes: usize,
    #[serde(default)]
    pub ignored: usize,
    #[serde(default)]
    pub error: Option<String>,
    /// The host repository the mount was made from.
    #[serde(default)]
    pub original_src: Option<String>,
}

impl MountAssessment {
    fn unknown(mount_dst: String, isolation: String, path: String, why: String) -> Self {
        MountAssessment {
            mount_dst,
            isolation,
            path,
            verdict: Verdict::Unknown,
            files: Vec::new(),
            unpushed: Vec::new(),
            stashes: 0,
            ignored: 0,
            error: Some(why),
            original_src: None,
        }
    }
}

/// The `assessment` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assessment {
    #[serde(flatten)]
    pub identity: Identity,
    pub verdict: Verdict,
    pub in_place: bool,
    pub mounts: Vec<MountAssessment>,
    pub summary: String,
    pub assessed_at: String,
    /// The instance's status when it was assessed.
    #[serde(default)]
    pub status: Option<String>,
}

impl Record for Assessment {
    const TYPE: &'static str = "assessment";

    fn text(&self) -> String {
        let mut out = format!("{} · {}", self.identity.container_base, self.summary);
        if self.in_place {
            out.push_str(" · in place");
        }
        for mount in &self.mounts {
            out.push_str(&format!("\n  {} ({}) · {}", mount.mount_dst, mount.isolation, mount.verdict.as_str()));
            if let Some(error) = &mount.error {
                out.push_str(&format!(": {error}"));
            }
            for file in &mount.files {
                match &file.from {
                    Some(from) => out.push_str(&format!("\n    {} {from} -> {}", file.status, file.path)),
                    None => out.push_str(&format!("\n    {} {}", file.status, file.path)),
                }
                if let Some(diff) = &file.diff {
                    for line in diff.lines() {
                        out.push_str(&format!("\n      {line}"));
                    }
                }
            }
            for r in &mount.unpushed {
                out.push_str(&format!("\n    {} · {}", r.display_name(), ahead_phrase(r)));
            }
            if mount.stashes > 0 {
                out.push_str(&format!("\n    {} · only in this clone", plural(mount.stashes, "stash", "stashes")));
            }
            if mount.ignored > 0 {
                out.push_str(&format!("\n    ({} ignored, not at risk)", mount.ignored));
            }
        }
        out
    }
}

/// "2 commits ahead of origin/feature-x" or "1 commit · no upstream".
pub fn ahead_phrase(r: &UnpushedRef) -> String {
    let commits = plural(r.commits, "commit", "commits");
    match &r.upstream {
        Some(upstream) => format!("{commits} ahead of {upstream}"),
        None => format!("{commits} · no upstream"),
    }
}

pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The human phrase: `clean`, `3 files dirty · 1 branch unpushed`, `cannot verify: <why>`.
pub fn summary(mounts: &[MountAssessment]) -> String {
    let unknown: Vec<&MountAssessment> = mounts.iter().filter(|m| m.verdict == Verdict::Unknown).collect();
    if let Some(first) = unknown.first() {
        let why = first.error.as_deref().unwrap_or("unknown");
        let mut phrase = if mounts.len() > 1 && !first.mount_dst.is_empty() {
            format!("cannot verify: {}: {why}", first.mount_dst)
        } else {
            format!("cannot verify: {why}")
        };
        if unknown.len() > 1 {
            phrase.push_str(&format!(" (and {} more mounts)", unknown.len() - 1));
        }
        return phrase;
    }
    let files: usize = mounts.iter().map(|m| m.files.len()).sum();
    let refs = || mounts.iter().flat_map(|m| &m.unpushed);
    let branches = refs().filter(|r| r.name.starts_with("refs/heads/")).count();
    let tags = refs().filter(|r| r.name.starts_with("refs/tags/")).count();
    let detached = refs().filter(|r| r.name == "HEAD").count();
    let stashes: usize = mounts.iter().map(|m| m.stashes).sum();
    let mut parts = Vec::new();
    if files > 0 {
        parts.push(format!("{} dirty", plural(files, "file", "files")));
    }
    if branches > 0 {
        parts.push(format!("{} unpushed", plural(branches, "branch", "branches")));
    }
    if tags > 0 {
        parts.push(format!("{} unpushed", plural(tags, "tag", "tags")));
    }
    if detached > 0 {
        parts.push("detached HEAD unpushed".to_owned());
    }
    if stashes > 0 {
        parts.push(plural(stashes, "stash", "stashes"));
    }
    if parts.is_empty() {
        "clean".to_owned()
    } else {
        parts.join(" · ")
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct AssessOptions {
    pub with_diff: bool,
}

/// Assesses instances; shares what one run learns about host repositories between them.
#[derive(Debug, Default)]
pub struct Assessor {
    pub options: AssessOptions,
    hosts: git::HostCache,
}

impl Assessor {
    pub fn new(options: AssessOptions) -> Self {
        // Re-hashing every object read, as libgit2 does by default, is a corruption check git
        // itself leaves to `git fsck`; it costs a tenth of a status over a large tree.
        git2::opts::strict_hash_verification(false);
        Assessor { options, hosts: git::HostCache::default() }
    }

    /// Assesses one instance. Errors are about the instance as a whole (no manifest and no row,
    /// a corrupt manifest); everything unobservable about a mount makes that mount `unknown`.
    pub fn instance(&self, store: &Store, name: &InstanceName, row: Option<&IndexRow>) -> Result<Assessment> {
        let manifest = store.read_manifest(name)?;
        let (identity, status) = match (&manifest, row) {
            (Some(m), _) => (Identity::from_manifest(m), Some(m.status.clone())),
            (None, Some(r)) => (Identity::from_row(r), Some(r.status.clone())),
            (None, None) => anyhow::bail!("no manifest and no index row"),
        };
        let (in_place, mounts) = match store.read_isolation(name) {
            Ok(isolation) if isolation.records.is_empty() => (true, Vec::new()),
            Ok(isolation) => (false, isolation.mounts().into_iter().map(|m| self.mount(m)).collect()),
            Err(e) => {
                let path = store.isolation_path(name).to_string_lossy().into_owned();
                let why = format!("isolation records unreadable: {e:#}");
                (false, vec![MountAssessment::unknown(String::new(), "unknown".into(), path, why)])
            }
        };
        let verdict = mounts.iter().map(|m| m.verdict).max().unwrap_or(Verdict::Clean);
        Ok(Assessment {
            identity,
            verdict,
            in_place,
            summary: summary(&mounts),
            mounts,
            assessed_at: crate::base::time::now_rfc3339(),
            status,
        })
    }

    pub fn mount(&self, record: Result<IsolationRecord, MalformedRecord>) -> MountAssessment {
        let record = match record {
            Ok(record) => record,
            Err(bad) => {
                return MountAssessment::unknown(
                    bad.mount_dst.unwrap_or_default(),
                    bad.isolation.unwrap_or_else(|| "unknown".into()),
                    bad.path.unwrap_or_default(),
                    bad.reason,
                )
            }
        };
        let mut mount = MountAssessment::unknown(
            record.mount_dst.clone(),
            record.isolation.as_str().to_owned(),
            record.worktree_path.clone(),
            String::new(),
        );
        mount.original_src = Some(record.original_src.clone());
        match self.observe(&record, &mut mount) {
            Ok(()) => {
                mount.error = None;
                mount.verdict = if !mount.files.is_empty() {
                    Verdict::Dirty
                } else if !mount.unpushed.is_empty() || mount.stashes > 0 {
                    Verdict::Unpushed
                } else {
                    Verdict::Clean
                };
            }
            Err(why) => {
                mount.files.clear();
                mount.unpushed.clear();
                mount.stashes = 0;
                mount.verdict = Verdict::Unknown;
                mount.error = Some(why);
            }
        }
        mount
    }

    fn observe(&self, record: &IsolationRecord, mount: &mut MountAssessment) -> Result<(), String> {
        let path = Path::new(&record.worktree_path);
        if !path.exists() {
            return Err(format!("{} is gone", describe(record.isolation, path)));
        }
        let repo = Repository::open(path)
            .map_err(|e| format!("{} cannot be read: {}", describe(record.isolation, path), e.message()))?;
        if repo.is_bare() {
            return Err(format!("{} is not a work tree", path.display()));
        }
        let host_path = Path::new(&record.original_src);
        let git_error = |e: git2::Error| format!("git: {}", e.message());
        match record.isolation {
            IsolationKind::Worktree => {
                if !host_path.exists() {
                    return Err(format!("host repository {} is gone", host_path.display()));
                }
                let host = self.hosts.get(host_path);
                let host = host
                    .as_ref()
                    .as_ref()
                    .map_err(|e| format!("host repository {} cannot be read: {e}", host_path.display()))?;
                if !git::belongs_to(&repo, host) {
                    return Err(format!("{} is not a worktree of {}", path.display(), host_path.display()));
                }
                let state = git::work_state(&repo, self.options.with_diff).map_err(git_error)?;
                mount.unpushed = git::worktree_unpushed(&repo, host, &record.scratch_branch).map_err(git_error)?;
                mount.files = state.files;
                mount.ignored = state.ignored;
            }
            IsolationKind::Clone => {
                // A vanished host only removes a place the commits might also be: more is at
                // risk, nothing becomes unobservable.
                let host = self.hosts.get(host_path);
                let host = host.as_ref().as_ref().ok().map(|refs| (host_path, refs));
                let state = git::work_state(&repo, self.options.with_diff).map_err(git_error)?;
                let (unpushed, stashes) = git::clone_unpushed(&repo, host).map_err(git_error)?;
                mount.files = state.files;
                mount.ignored = state.ignored;
                mount.unpushed = unpushed;
                mount.stashes = stashes;
            }
        }
        Ok(())
    }
}

fn describe(kind: IsolationKind, path: &Path) -> String {
    match kind {
        IsolationKind::Worktree => format!("worktree {}", path.display()),
        IsolationKind::Clone => format!("clone {}", path.display()),
    }
}

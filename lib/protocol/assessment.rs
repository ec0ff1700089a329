//! The `assessment` record (protocol.md, "Record types"): per isolated mount, what a purge would
//! destroy, and the phrases people read it in.

use serde::{Deserialize, Serialize};

use crate::protocol::envelope::Record;
use crate::protocol::identity::Identity;
use crate::protocol::path_bytes::NameBytes;

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
    pub(crate) fn as_str(self) -> &'static str {
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
pub(crate) struct MountAssessment {
    pub(crate) mount_dst: String,
    /// `worktree`, `clone`, or whatever a malformed record said.
    pub(crate) isolation: crate::state::model::IsolationWord,
    pub(crate) path: String,
    pub(crate) verdict: Verdict,
    #[serde(default)]
    pub(crate) files: Vec<FileChange>,
    #[serde(default)]
    pub(crate) unpushed: Vec<UnpushedRef>,
    #[serde(default)]
    pub(crate) stashes: usize,
    /// Submodules checked out in the mount that hold commits (or stashes) no remote-tracking ref
    /// of theirs holds: their git directories go with the mount.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) submodules: Vec<SubmoduleWork>,
    #[serde(default)]
    pub(crate) ignored: usize,
    #[serde(default)]
    pub(crate) error: Option<String>,
    /// The host repository the mount was made from.
    #[serde(default)]
    pub(crate) original_src: Option<String>,
    /// Its bytes on disk, when they were asked for (`--disk`, the resume list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) disk: Option<MountDisk>,
}

/// A submodule of a mount with work at risk, judged as a clone is: its `unpushed` refs against
/// its own remote-tracking refs, and its stashes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SubmoduleWork {
    /// Its path in the mount; a path that is not UTF-8 has its bytes in `path_bytes`.
    pub(crate) path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path_bytes: Option<String>,
    pub(crate) unpushed: Vec<UnpushedRef>,
    #[serde(default)]
    pub(crate) stashes: usize,
}

impl SubmoduleWork {
    pub(crate) fn new(path: &NameBytes, unpushed: Vec<UnpushedRef>, stashes: usize) -> Self {
        let unpushed = unpushed.into_iter().filter(|r| r.commits > 0 || !r.integrated.is_empty()).collect();
        SubmoduleWork { path: path.text(), path_bytes: path.wire_bytes(), unpushed, stashes }
    }

    /// The commits at risk in it.
    pub(crate) fn commits(&self) -> usize {
        self.unpushed.iter().map(|r| r.commits).sum()
    }
}

/// A mount's bytes on disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MountDisk {
    /// Tracked and untracked files (for a clone, its repository too): the work.
    pub(crate) work: u64,
    /// Everything git ignores.
    pub(crate) ignored: u64,
    /// The part of `ignored` that `jackin-purge --slim` takes back: all but the ignored dotfiles
    /// outside ignored directories (docs/maintainers/decisions.md).
    pub(crate) rebuildable: u64,
}

/// An instance's bytes on disk: its data directory outside the mounts, and its mounts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Disk {
    /// `data + work + ignored`.
    pub(crate) total: u64,
    /// The data directory outside the mounts: agent homes, state, auth slots, records.
    pub(crate) data: u64,
    pub(crate) work: u64,
    pub(crate) ignored: u64,
    pub(crate) rebuildable: u64,
}

impl Disk {
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// `4.1 GiB (3.8 GiB rebuildable)`, or `4.1 GiB` when nothing is.
    pub(crate) fn phrase(&self) -> String {
        let total = human_bytes(self.total);
        if self.rebuildable == 0 {
            total
        } else {
            format!("{total} ({} rebuildable)", human_bytes(self.rebuildable))
        }
    }
}

impl MountAssessment {
    /// Whether a discard saves this mount: its work is at risk, or it has commits whose patch is
    /// integrated elsewhere, which a quarantine bundles too (cheap insurance: "the same patch" is
    /// a judgement, the commit is the fact).
    pub(crate) fn saved_on_discard(&self) -> bool {
        self.verdict.at_risk() || self.integrated().next().is_some()
    }

    /// The mount's integrated commits, over all its unpushed refs.
    pub(crate) fn integrated(&self) -> impl Iterator<Item = &Integrated> {
        self.unpushed.iter().flat_map(|r| &r.integrated)
    }

    /// A mount that cannot be observed, and why.
    pub(crate) fn unknown(
        mount_dst: String,
        isolation: crate::state::model::IsolationWord,
        path: String,
        why: String,
    ) -> Self {
        MountAssessment {
            mount_dst,
            isolation,
            path,
            verdict: Verdict::Unknown,
            files: Vec::new(),
            unpushed: Vec::new(),
            stashes: 0,
            submodules: Vec::new(),
            ignored: 0,
            error: Some(why),
            original_src: None,
            disk: None,
        }
    }
}

/// The `assessment` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assessment {
    #[serde(flatten)]
    pub identity: Identity,
    pub verdict: Verdict,
    pub(crate) in_place: bool,
    pub(crate) mounts: Vec<MountAssessment>,
    pub(crate) summary: String,
    pub(crate) assessed_at: String,
    /// The instance's status when it was assessed.
    #[serde(default)]
    pub(crate) status: Option<crate::state::model::StatusWord>,
    /// Its bytes on disk, when they were asked for (`--disk`, the resume list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) disk: Option<Disk>,
    /// This home's seal over the rest (services/seal.rs): keep trusts the verdict without looking
    /// again only when it verifies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
}

impl Record for Assessment {
    const TYPE: &'static str = "assessment";

    fn text(&self) -> String {
        let mut out = format!("{} · {}", self.identity.container_base, self.summary);
        if let Some(disk) = &self.disk {
            out.push_str(&format!(" · {}", disk.phrase()));
        }
        if self.in_place {
            out.push_str(" · in place");
        }
        for mount in &self.mounts {
            out.push_str(&format!("\n  {} ({}) · {}", mount.mount_dst, mount.isolation, mount.verdict.as_str()));
            if let Some(error) = &mount.error {
                out.push_str(&format!(": {error}"));
            }
            if let Some(disk) = &mount.disk {
                let whole = Disk { total: disk.work + disk.ignored, rebuildable: disk.rebuildable, ..Disk::default() };
                out.push_str(&format!(" · {}", whole.phrase()));
            }
            for file in &mount.files {
                out.push_str(&format!("\n    {}", file.text()));
                if let Some(diff) = &file.diff {
                    for line in diff.lines() {
                        out.push_str(&format!("\n      {line}"));
                    }
                }
            }
            for r in &mount.unpushed {
                let mut phrases = Vec::new();
                if r.commits > 0 {
                    phrases.push(ahead_phrase(r));
                }
                phrases.extend(integrated_phrases(&r.integrated));
                out.push_str(&format!("\n    {} · {}", r.display_name(), phrases.join(" · ")));
            }
            if mount.stashes > 0 {
                out.push_str(&format!("\n    {} · only in this clone", plural(mount.stashes, "stash", "stashes")));
            }
            for submodule in &mount.submodules {
                for r in submodule.unpushed.iter().filter(|r| r.commits > 0) {
                    out.push_str(&format!(
                        "\n    submodule {} · {} · {}",
                        submodule.path,
                        r.display_name(),
                        ahead_phrase(r)
                    ));
                }
                if submodule.stashes > 0 {
                    let stashes = plural(submodule.stashes, "stash", "stashes");
                    out.push_str(&format!("\n    submodule {} · {stashes} · only in this mount", submodule.path));
                }
            }
            if mount.ignored > 0 {
                out.push_str(&format!("\n    ({} ignored, not at risk)", mount.ignored));
            }
        }
        out
    }
}

/// "2 commits ahead of origin/feature-x" or "1 commit · no upstream".
pub(crate) fn ahead_phrase(r: &UnpushedRef) -> String {
    let commits = plural(r.commits, "commit", "commits");
    match &r.upstream {
        Some(upstream) => format!("{commits} ahead of {upstream}"),
        None => format!("{commits} · no upstream"),
    }
}

/// "2 commits integrated into origin/main (squash)", one phrase per surviving ref and way.
pub(crate) fn integrated_phrases(integrated: &[Integrated]) -> Vec<String> {
    let mut groups: Vec<(&str, Integration, usize)> = Vec::new();
    for i in integrated {
        match groups.iter_mut().find(|(into, how, _)| *into == i.into && *how == i.how) {
            Some(group) => group.2 += 1,
            None => groups.push((&i.into, i.how, 1)),
        }
    }
    groups
        .into_iter()
        .map(|(into, how, n)| {
            let how = match how {
                Integration::Patch => "same patch",
                Integration::Squash => "squash",
            };
            format!("{} integrated into {} ({how})", plural(n, "commit", "commits"), short_ref(into))
        })
        .collect()
}

pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The human phrase: `clean`, `3 files dirty · 1 branch unpushed`, `cannot verify: <why>`.
pub(crate) fn summary(mounts: &[MountAssessment]) -> String {
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
    let refs = || mounts.iter().flat_map(|m| &m.unpushed).filter(|r| r.commits > 0);
    let branches = refs().filter(|r| r.name.starts_with("refs/heads/")).count();
    let tags = refs().filter(|r| r.name.starts_with("refs/tags/")).count();
    let detached = refs().filter(|r| r.name == "HEAD").count();
    let submodules = || mounts.iter().flat_map(|m| &m.submodules);
    let stashes: usize =
        mounts.iter().map(|m| m.stashes).sum::<usize>() + submodules().map(|s| s.stashes).sum::<usize>();
    let in_submodules: usize = submodules().map(SubmoduleWork::commits).sum();
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
    if in_submodules > 0 {
        parts.push(format!("{} in submodules", plural(in_submodules, "commit", "commits")));
    }
    if parts.is_empty() {
        parts.push("clean".to_owned());
    }
    let integrated: usize = mounts.iter().flat_map(|m| &m.unpushed).map(|r| r.integrated.len()).sum();
    if integrated > 0 {
        parts.push(format!("{} integrated", plural(integrated, "commit", "commits")));
    }
    parts.join(" · ")
}

/// One changed file, with the two status letters of `git status --short` (index, work tree).
/// Its names are bytes (protocol/path_bytes.rs): the agent names files with any bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "FileChangeWire", into = "FileChangeWire")]
pub(crate) struct FileChange {
    pub(crate) status: String,
    pub(crate) path: NameBytes,
    /// The path a renamed file had before, as `git status` shows it (`orig -> path`).
    pub(crate) orig_path: Option<NameBytes>,
    /// The unified diff against HEAD (only with `--diff`).
    pub(crate) diff: Option<String>,
}

/// A file change as it travels. `from` was the first name of `orig_path`; schema 1 keeps writing
/// it beside `orig_path` (renaming a field needs a new schema_version) and reads either. A name
/// that is not UTF-8 has its bytes beside it (`path_bytes`, `orig_path_bytes`).
#[derive(Serialize, Deserialize)]
struct FileChangeWire {
    status: String,
    path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path_bytes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    orig_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    orig_path_bytes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
}

impl TryFrom<FileChangeWire> for FileChange {
    type Error = String;

    fn try_from(wire: FileChangeWire) -> Result<Self, String> {
        let path = NameBytes::from_wire(wire.path, wire.path_bytes.as_deref())?;
        let orig_path = match wire.orig_path.or(wire.from) {
            Some(orig) => Some(NameBytes::from_wire(orig, wire.orig_path_bytes.as_deref())?),
            None => None,
        };
        Ok(FileChange { status: wire.status, path, orig_path, diff: wire.diff })
    }
}

impl From<FileChange> for FileChangeWire {
    fn from(file: FileChange) -> Self {
        let orig_text = file.orig_path.as_ref().map(NameBytes::text);
        FileChangeWire {
            status: file.status,
            path: file.path.text(),
            path_bytes: file.path.wire_bytes(),
            from: orig_text.clone(),
            orig_path: orig_text,
            orig_path_bytes: file.orig_path.as_ref().and_then(NameBytes::wire_bytes),
            diff: file.diff,
        }
    }
}

impl FileChange {
    /// `git status --short`'s line: `M  src/main.rs`, `R  old -> new`.
    pub(crate) fn text(&self) -> String {
        match &self.orig_path {
            Some(orig) => format!("{} {orig} -> {}", self.status, self.path),
            None => format!("{} {}", self.status, self.path),
        }
    }
}

/// A ref whose commits a purge would destroy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct UnpushedRef {
    /// The full ref name (`refs/heads/…`, `refs/tags/…`) or `HEAD` for a detached HEAD.
    #[serde(rename = "ref")]
    pub(crate) name: String,
    /// Commits reachable from this ref and from nothing that survives the purge.
    pub(crate) commits: usize,
    /// The branch's upstream (`origin/feature-x`), when it has one.
    pub(crate) upstream: Option<String>,
    /// Commits the reachability rule puts at risk whose patch a surviving ref already holds:
    /// not counted in `commits`.
    #[serde(default)]
    pub(crate) integrated: Vec<Integrated>,
}

/// An at-risk commit whose patch a surviving ref holds (a rebase merge, a cherry-pick, a squash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Integrated {
    /// The commit that only the purged refs reach.
    pub(crate) commit: String,
    /// The commit on the surviving ref with the same patch (for a squash, the squash commit).
    #[serde(rename = "as")]
    pub(crate) as_commit: String,
    /// The surviving ref that reaches `as`, by full name.
    #[serde(rename = "ref")]
    pub(crate) into: String,
    pub(crate) how: Integration,
}

/// How an integrated commit's patch was found: its own patch (`patch`), or with the commits
/// before it since the merge base, as one squashed commit (`squash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Integration {
    Patch,
    Squash,
}

/// `origin/main`, `main`, `tag v1`: a ref as the exit dialog names it.
pub(crate) fn short_ref(name: &str) -> String {
    if let Some(remote) = name.strip_prefix("refs/remotes/") {
        remote.to_owned()
    } else if let Some(branch) = name.strip_prefix("refs/heads/") {
        branch.to_owned()
    } else if let Some(tag) = name.strip_prefix("refs/tags/") {
        format!("tag {tag}")
    } else {
        name.to_owned()
    }
}

impl UnpushedRef {
    /// `feature/x`, `tag v1`, `detached HEAD`: the words the exit dialog shows.
    pub(crate) fn display_name(&self) -> String {
        if self.name == "HEAD" {
            "detached HEAD".to_owned()
        } else {
            short_ref(&self.name)
        }
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

//! Assessing an instance: per isolated mount, what a purge would destroy (lifecycle.md). The
//! record it makes is the protocol's `assessment`. Assess prints it; keep, purge, restore and
//! export decide on it.

use std::path::Path;

use crate::engines::git;
use crate::protocol::assessment::{summary, Assessment, MountAssessment, Verdict};
use crate::protocol::identity::Identity;
use crate::state::model::{IndexRow, Isolation, IsolationKind, IsolationRecord, MalformedRecord, StatusWord};
use crate::state::names::InstanceName;
use crate::state::store::Store;
use anyhow::Result;

#[derive(Debug, Clone, Copy, Default)]
pub struct AssessOptions {
    pub with_diff: bool,
    /// Measure the bytes on disk (a walk of the whole instance: off the exit hook's path).
    pub with_disk: bool,
}

/// Assesses instances; shares what one run learns about host repositories between them.
#[derive(Debug, Default)]
pub struct Assessor {
    pub(crate) options: AssessOptions,
    hosts: git::HostCache,
}

/// A mount's assessment, and the ignored entries its status found ([`Assessor::mount`]).
type Assessed = (MountAssessment, Option<Vec<git::Ignored>>);

impl Assessor {
    pub fn new(options: AssessOptions) -> Self {
        // A corruption check git itself leaves to `git fsck`, at a tenth of a status's cost.
        git::skip_object_hash_checks();
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
        Ok(self.work_of(store, name, identity, status))
    }

    /// The assessment of an instance's work under an identity known otherwise: its manifest
    /// cannot be read (a purge that discards derives the rest from the name).
    pub(crate) fn work_of(
        &self,
        store: &Store,
        name: &InstanceName,
        identity: Identity,
        status: Option<StatusWord>,
    ) -> Assessment {
        let isolation = store.read_isolation(name);
        self.of_isolation(store, name, identity, status, isolation.as_ref().map_err(|e| format!("{e:#}")))
    }

    /// The assessment of an instance's work from isolation records its caller has read already
    /// (an export reads them once for itself and the assessment), or why they could not be.
    pub(crate) fn of_isolation(
        &self,
        store: &Store,
        name: &InstanceName,
        identity: Identity,
        status: Option<StatusWord>,
        isolation: std::result::Result<&Isolation, String>,
    ) -> Assessment {
        // Stamped before the first file is read: jackin-keep trusts an assessment of a session
        // whose role container had stopped by `assessed_at` (tools/keep/stands.rs), and an agent still
        // writing while the mounts were read, stopped before a stamp taken at the end, would
        // have its last writes unseen and trusted. To the microsecond: what is held against it
        // (a container's end, the ctimes of the work) is told apart within the second.
        let assessed_at = crate::base::time::now_rfc3339_micros();
        let (in_place, assessed): (bool, Vec<Assessed>) = match isolation {
            Ok(isolation) if isolation.records.is_empty() => (true, Vec::new()),
            Ok(isolation) => (false, isolation.mounts().into_iter().map(|m| self.mount(m)).collect()),
            Err(e) => {
                let path = store.isolation_path(name).to_string_lossy().into_owned();
                let why = format!("isolation records unreadable: {e}");
                (false, vec![(MountAssessment::unknown(String::new(), "unknown".into(), path, why), None)])
            }
        };
        let (mut mounts, ignored): (Vec<_>, Vec<_>) = assessed.into_iter().unzip();
        let verdict = mounts.iter().map(|m| m.verdict).max().unwrap_or(Verdict::Clean);
        let disk = if self.options.with_disk {
            crate::services::disk::measure(store, name, &mut mounts, &ignored)
        } else {
            None
        };
        Assessment {
            identity,
            verdict,
            in_place,
            summary: summary_with_reflog(&mounts),
            mounts,
            assessed_at,
            status,
            disk,
            seal: None,
        }
    }

    /// The mount's assessment, and the ignored entries its status found (`None` when it could
    /// not be read): what the disk measurement counts as ignored, without a status of its own.
    fn mount(&self, record: Result<IsolationRecord, MalformedRecord>) -> (MountAssessment, Option<Vec<git::Ignored>>) {
        let record = match record {
            Ok(record) => record,
            Err(bad) => {
                let mount = MountAssessment::unknown(
                    bad.mount_dst.unwrap_or_default(),
                    bad.isolation.as_deref().unwrap_or("unknown").into(),
                    bad.path.unwrap_or_default(),
                    bad.reason,
                );
                return (mount, None);
            }
        };
        let mut mount = MountAssessment::unknown(
            record.mount_dst.clone(),
            record.isolation.into(),
            record.worktree_path.clone(),
            String::new(),
        );
        mount.original_src = Some(record.original_src.clone());
        let mut ignored = None;
        match self.observe(&record, &mut mount) {
            Ok(entries) => {
                ignored = Some(entries);
                mount.error = None;
                mount.verdict = if !mount.files.is_empty() {
                    Verdict::Dirty
                } else if mount.unpushed.iter().any(|r| r.commits > 0)
                    || mount.stashes > 0
                    || !mount.submodules.is_empty()
                {
                    Verdict::Unpushed
                } else {
                    Verdict::Clean
                };
            }
            Err(why) => {
                mount.files.clear();
                mount.unpushed.clear();
                mount.stashes = 0;
                mount.submodules.clear();
                mount.verdict = Verdict::Unknown;
                mount.error = Some(why);
            }
        }
        (mount, ignored)
    }

    /// Fills `mount`; the ignored entries its status found.
    fn observe(&self, record: &IsolationRecord, mount: &mut MountAssessment) -> Result<Vec<git::Ignored>, String> {
        let path = Path::new(&record.worktree_path);
        if !path.exists() {
            return Err(format!("{} is gone", describe(record.isolation, path)));
        }
        let repo = git::Repo::open(path)
            .map_err(|e| format!("{} cannot be read: {}", describe(record.isolation, path), e.message()))?;
        if repo.is_bare() {
            return Err(format!("{} is not a work tree", path.display()));
        }
        let host_path = Path::new(&record.original_src);
        let git_error = |e: git::GitError| format!("git: {}", e.message());
        let ignored;
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
                ignored = state.ignored_entries;
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
                ignored = state.ignored_entries;
                mount.unpushed = unpushed;
                mount.stashes = stashes;
            }
        }
        mount.submodules = git::submodules_at_risk(&repo).map_err(git_error)?;
        Ok(ignored)
    }
}

/// The protocol's summary, with the commits only a reflog holds ("1 commit only in the
/// reflog"): they put the mount at risk under the `reflog` entry of `unpushed`, which names no
/// branch, tag or HEAD for the summary to count.
fn summary_with_reflog(mounts: &[MountAssessment]) -> String {
    let text = summary(mounts);
    let only_in_reflog: usize =
        mounts.iter().flat_map(|m| &m.unpushed).filter(|r| r.name == git::REFLOG_ONLY).map(|r| r.commits).sum();
    if only_in_reflog == 0 || mounts.iter().any(|m| m.verdict == Verdict::Unknown) {
        return text;
    }
    let phrase =
        format!("{only_in_reflog} {} only in the reflog", if only_in_reflog == 1 { "commit" } else { "commits" });
    let mut parts: Vec<String> = text.split(" · ").filter(|p| *p != "clean").map(str::to_owned).collect();
    // Before "N commits integrated", which is last when there.
    let at = parts.len() - usize::from(parts.last().is_some_and(|p| p.ends_with(" integrated")));
    parts.insert(at, phrase);
    parts.join(" · ")
}

fn describe(kind: IsolationKind, path: &Path) -> String {
    match kind {
        IsolationKind::Worktree => format!("worktree {}", path.display()),
        IsolationKind::Clone => format!("clone {}", path.display()),
    }
}

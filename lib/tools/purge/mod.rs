//! jackin-purge: the only code that deletes. Per instance, in lifecycle.md's order: live check,
//! re-assessment (at-risk work stops the instance, or is quarantined on an explicit discard),
//! terminal status stamped, Docker resources, worktree registrations and scratch branches, the
//! directories, the name lock, the index row. Each step is safe to repeat, so a rerun after a
//! crash at any point finishes the job.

mod claim;
pub mod orphans;
pub mod plan;
pub mod quarantine;
pub mod remove;
mod slim;

pub use plan::{plan_from_args, plan_from_catalog, plan_from_records, plan_kept, Item, Request, Selection};

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::base::exit::Exit;
use crate::engines::docker::Engine;
use crate::engines::git;
use crate::protocol::assessment::{Assessment, Verdict};
use crate::protocol::identity::Identity;
use crate::protocol::records::{human_bytes, Purged, Removed};
use crate::state::model::{DockerNames, IndexRow, IsolationKind, IsolationRecord, Status};
use crate::state::names::InstanceName;
use crate::state::select::Catalog;
use crate::state::store::{HostRepoLocks, PurgeMark, Store};
use crate::tools::assess::{AssessOptions, Assessor};
use claim::NameClaim;

/// A test-only failure point of purge (base/crash.rs).
pub(crate) fn crash_point(step: &str) {
    crate::base::crash::point(crate::base::crash::Tool::Purge, step);
}

/// How long a purge waits for another purge to finish with a host repository it shares.
const HOST_REPO_WAIT: Duration = Duration::from_secs(600);

/// The crash points, in order (for the tests and the docs).
pub const CRASH_POINTS: &[&str] = crate::base::crash::Tool::Purge.points();

#[derive(Debug, Clone, Copy, Default)]
pub struct PurgeOptions {
    pub stop: bool,
    pub dry_run: bool,
    pub discard_unfinished: bool,
    pub no_quarantine: bool,
    pub quarantine_days: u64,
    /// Take back only what git ignores from kept sessions (slim.rs) instead of purging them.
    pub slim: bool,
}

/// What happened to one instance or orphan.
#[derive(Debug)]
pub enum Outcome {
    Purged(Purged),
    /// Not purged; nothing of it changed after the refusal. `busy` ones are live sessions.
    Refused {
        code: &'static str,
        error: anyhow::Error,
        busy: bool,
    },
    /// Not selected after all (a `failed_setup` whose work is not clean); said on stderr.
    Skipped(String),
}

/// The refusal of a live session: its role container runs.
fn live(docker: &DockerNames, hint: &str) -> Stop {
    let error =
        Exit::Busy.err(format_args!("the session is live: its container {} is running{hint}", docker.role_container));
    Box::new(Outcome::Refused { code: "live", error, busy: true })
}

fn refused(code: &'static str, error: anyhow::Error) -> Outcome {
    Outcome::Refused { code, error, busy: false }
}

/// An instance the purge stopped at before deleting anything: refused, or skipped.
type Stop = Box<Outcome>;

fn stop(code: &'static str, error: anyhow::Error) -> Stop {
    Box::new(refused(code, error))
}

/// What step 2 left for the deleting steps.
struct Checked {
    identity: Identity,
    /// Where the work at risk was saved, by this run or by the earlier one that crashed.
    quarantine: Option<String>,
    /// An earlier run passed step 2 and wrote the purge mark.
    marked: bool,
}

/// The deleting side of a run.
pub struct Purger<'a> {
    pub(crate) store: &'a Store,
    pub(crate) engine: &'a Engine,
    pub(crate) options: PurgeOptions,
    /// Changes to host repositories one at a time: two worktrees of one repository share its
    /// ref lock files.
    git: Mutex<()>,
    pub(crate) catalog: &'a Catalog,
    /// Taken at the first orphan, before any orphan is removed.
    snapshot: OnceLock<Result<orphans::EngineSnapshot>>,
}

impl<'a> Purger<'a> {
    pub fn new(store: &'a Store, engine: &'a Engine, catalog: &'a Catalog, options: PurgeOptions) -> Self {
        Purger { store, engine, options, git: Mutex::new(()), catalog, snapshot: OnceLock::new() }
    }

    /// Purges the instances and orphans among `items` in parallel (`None` for the rest), calling
    /// `done` after each, orphans in the stages of [`orphans::stage`].
    pub fn items(&self, items: &[Item<'_>], done: impl Fn(&Item<'_>) + Sync) -> Vec<Option<Outcome>> {
        let stage = |item: &Item<'_>| if let Item::Orphan(o) = item { orphans::stage(o) } else { 0 };
        let mut outcomes: Vec<Option<Outcome>> = items.iter().map(|_| None).collect();
        for now in 0..3 {
            let staged = crate::base::parallel::map(items, |item| {
                let outcome = if stage(item) == now { self.item(item) } else { None };
                if outcome.is_some() {
                    done(item);
                }
                outcome
            });
            for (outcome, this_stage) in outcomes.iter_mut().zip(staged) {
                if this_stage.is_some() {
                    *outcome = this_stage;
                }
            }
        }
        outcomes
    }

    fn item(&self, item: &Item<'_>) -> Option<Outcome> {
        match item {
            Item::Instance(request) if self.options.slim => Some(self.slim(request)),
            Item::Instance(request) => Some(self.instance(request)),
            Item::Orphan(orphan) => Some(self.orphan(orphan)),
            _ => None,
        }
    }

    /// Purges one instance, in lifecycle.md's order: the live check (1) and the re-assessment (2)
    /// may stop it; then the deleting steps (3 to 8), or in a dry run what they would remove.
    pub(crate) fn instance(&self, request: &Request) -> Outcome {
        self.try_instance(request).map(Outcome::Purged).unwrap_or_else(|stopped| *stopped)
    }

    fn try_instance(&self, request: &Request) -> Result<Purged, Stop> {
        let name = &request.target.name;
        let store = self.store;

        // 1. Live: the launcher's name claim held by another process, or the role container running.
        let claim = self.claim(name)?;
        let manifest = store.read_manifest(name).map_err(|e| stop("manifest_unreadable", e))?;
        let docker = manifest.as_ref().map(|m| m.docker.clone()).unwrap_or_else(|| DockerNames::derived(name.as_str()));
        self.check_scratch_branches(name)?;
        self.stop_if_live(&docker)?;

        // 2. Re-assess, unless an earlier run already passed this point; from here to the end of
        // step 5 under the locks of the instance's host repositories.
        let repo_locks = self.lock_host_repos(name).map_err(|error| {
            let busy = Exit::of(&error) == Exit::Busy;
            Box::new(Outcome::Refused { code: if busy { "busy" } else { "purge_failed" }, error, busy })
        })?;
        let checked = match store.read_purge_mark(name) {
            Some(mark) => Checked {
                identity: identity_of(manifest.as_ref(), request.target.row.as_ref(), name),
                quarantine: mark.quarantine,
                marked: true,
            },
            None => {
                let checked = self.check_work(request, manifest.is_none())?;
                crash_point("quarantined");
                checked
            }
        };

        if self.options.dry_run {
            return Ok(self.dry_run_report(name, checked.identity, &docker, claim.exists));
        }
        let (removed, freed_bytes) = self
            .delete(name, manifest.is_some(), &checked, &docker, repo_locks, &claim)
            .map_err(|e| stop("purge_failed", e))?;
        drop(claim);
        Ok(Purged {
            identity: checked.identity,
            removed,
            freed_bytes,
            quarantine: checked.quarantine,
            slimmed: false,
            dry_run: false,
        })
    }

    /// The locks of the host repositories of the instance's worktrees (none in a dry run, which
    /// deletes no branch).
    fn lock_host_repos(&self, name: &InstanceName) -> Result<Option<HostRepoLocks>> {
        if self.options.dry_run {
            return Ok(None);
        }
        let isolation = self.store.read_isolation(name).unwrap_or_default();
        let records: Vec<IsolationRecord> = isolation.mounts().into_iter().flatten().collect();
        let repos: Vec<&Path> = records
            .iter()
            .filter(|r| r.isolation == IsolationKind::Worktree)
            .map(|r| Path::new(&r.original_src))
            .collect();
        HostRepoLocks::acquire(&repos, HOST_REPO_WAIT).map(Some)
    }

    /// Before anything changes: each worktree record must name this instance's own scratch
    /// branch. The re-assessment reads the record's branch as the one at risk and counts every
    /// other branch as surviving, so under a record naming another branch the commits only the
    /// real scratch branch has look safe, and a rerun after the record is put right (which trusts
    /// the purge mark) would delete them unsaved. Step 5 checks it again before deleting.
    fn check_scratch_branches(&self, name: &InstanceName) -> Result<(), Stop> {
        let isolation = self.store.read_isolation(name).unwrap_or_default();
        let branch = name.scratch_branch();
        for record in isolation.mounts().into_iter().flatten() {
            if record.isolation == IsolationKind::Worktree && record.scratch_branch != branch {
                return Err(stop("purge_failed", not_the_scratch_branch(&record, &branch)));
            }
        }
        Ok(())
    }

    /// Step 1's second half: a running role container is a live session, stopped only on `--stop`.
    fn stop_if_live(&self, docker: &DockerNames) -> Result<(), Stop> {
        if !self.role_running(docker)? {
            return Ok(());
        }
        if !self.options.stop {
            return Err(live(docker, " (--stop stops it first)"));
        }
        if !self.options.dry_run {
            self.stop_session(docker).map_err(|e| stop("stop_failed", e))?;
        }
        Ok(())
    }

    /// Step 1's name half, for purge and slim alike: the launcher's name claim, taken for this run;
    /// another holder means the session is live.
    fn claim(&self, name: &InstanceName) -> Result<NameClaim, Stop> {
        NameClaim::take(&self.store.name_lock_path(name), self.options.dry_run)
            .map_err(|error| Box::new(Outcome::Refused { code: "busy", error, busy: true }))
    }

    /// Step 1's container half, for purge and slim alike: a running role container makes the
    /// session live.
    fn role_running(&self, docker: &DockerNames) -> Result<bool, Stop> {
        match self.engine.inspect(&docker.role_container) {
            Ok(role) => Ok(role.is_some_and(|role| role.state.running)),
            Err(e) => Err(stop("docker_failed", e)),
        }
    }

    fn stop_session(&self, docker: &DockerNames) -> Result<()> {
        self.engine.stop(&docker.role_container, Duration::from_secs(10))?;
        if let Some(sidecar) = &docker.dind_container {
            self.engine.stop(sidecar, Duration::from_secs(10))?;
        }
        Ok(())
    }

    /// Step 2: work at risk stops the purge unless discarding it was allowed, and is then saved
    /// to the quarantine before anything is deleted.
    fn check_work(&self, request: &Request, no_manifest: bool) -> Result<Checked, Stop> {
        let name = &request.target.name;
        let assessment = self.assess(request, no_manifest)?;
        let mut quarantine = None;
        if assessment.verdict.at_risk() {
            if request.only_if_clean {
                return Err(Box::new(Outcome::Skipped(format!(
                    "{name}: failed_setup with work at risk ({}); left alone",
                    assessment.summary
                ))));
            }
            if !(request.discard || self.options.discard_unfinished) {
                let e = anyhow::anyhow!(
                    "work at risk: {}; nothing deleted (--discard-unfinished saves it to the quarantine and deletes)",
                    assessment.summary
                );
                return Err(stop("at_risk", e));
            }
            if !self.options.dry_run && !self.options.no_quarantine {
                let isolation = self.store.read_isolation(name).map(|i| i.mounts());
                let at_risk = match &isolation {
                    Ok(records) => quarantine::AtRisk::Mounts(records),
                    Err(_) => {
                        quarantine::AtRisk::UnreadableRecords { git_tree: self.store.instance_dir(name).join("git") }
                    }
                };
                let dir = quarantine::save(self.store, &assessment, at_risk, self.options.quarantine_days)
                    .map_err(|e| stop("quarantine_failed", e.context("saving the work at risk")))?;
                quarantine = Some(dir.to_string_lossy().into_owned());
            }
        }
        Ok(Checked { identity: assessment.identity, quarantine, marked: false })
    }

    fn assess(&self, request: &Request, no_manifest: bool) -> Result<Assessment, Stop> {
        let name = &request.target.name;
        let row = request.target.row.as_ref();
        match Assessor::new(AssessOptions::default()).instance(self.store, name, row) {
            Ok(assessment) => Ok(assessment),
            // Nothing left to read: a rerun after the directories were removed.
            Err(_) if no_manifest && !self.store.instance_dir(name).exists() => Ok(Assessment {
                identity: identity_of(None, row, name),
                verdict: Verdict::Clean,
                in_place: true,
                mounts: Vec::new(),
                summary: "clean".into(),
                assessed_at: crate::base::time::now_rfc3339(),
                status: None,
                disk: None,
            }),
            Err(e) => Err(stop("assess_failed", e)),
        }
    }

    /// Steps 3 to 8.
    fn delete(
        &self,
        name: &InstanceName,
        has_manifest: bool,
        checked: &Checked,
        docker: &DockerNames,
        repo_locks: Option<HostRepoLocks>,
        claim: &NameClaim,
    ) -> Result<(Vec<Removed>, u64)> {
        // 3. The terminal status, manifest first, then the index row.
        self.stamp(name, has_manifest, checked)?;
        crash_point("stamped");

        // 4. Docker.
        let torn_down = crate::tools::teardown::tear_down(self.engine, docker)?;
        let mut removed: Vec<Removed> = torn_down.iter().map(|r| r.removed()).collect();
        crash_point("docker");

        // 5. Worktree registrations and scratch branches.
        removed.extend(self.remove_worktrees(name)?);
        drop(repo_locks);
        crash_point("worktrees");

        // 6. The directories: into the trash (atomic), then emptied there.
        let (trashed, mut freed) = self.move_dirs_to_trash(name, &mut removed)?;
        crash_point("trash");
        for dir in &trashed {
            freed += remove::remove_tree(dir)?;
        }
        crash_point("dirs");

        // 7. The name lock, unless another process holds it.
        removed.extend(claim.remove(&self.store.name_lock_path(name))?);
        crash_point("lock");

        // 8. The index row.
        let row_removed = self.store.update_index(|index| {
            let removed = index.remove(name.as_str());
            Ok((removed, removed))
        })?;
        if row_removed {
            removed.push(Removed { kind: "index_row".into(), name: name.to_string() });
        }
        crash_point("row");
        Ok((removed, freed))
    }

    /// Step 3: the purge mark first (a rerun then skips step 2), then the terminal status. An
    /// instance without a manifest has only its index row to stamp.
    fn stamp(&self, name: &InstanceName, has_manifest: bool, checked: &Checked) -> Result<()> {
        let store = self.store;
        let now = crate::base::time::now_rfc3339();
        if !has_manifest {
            return stamp_row(store, name, &now);
        }
        if !checked.marked {
            let verdict = if checked.quarantine.is_some() { "at_risk_quarantined" } else { "checked" };
            let mark =
                PurgeMark { started_at: now.clone(), verdict: verdict.into(), quarantine: checked.quarantine.clone() };
            store.write_purge_mark(name, &mark).context("writing the purge mark")?;
        }
        let current = store.read_manifest(name)?.and_then(|m| Status::parse(&m.status));
        let status = current.filter(|s| s.is_terminal()).unwrap_or(Status::Purged);
        store.set_status(name, status, &now).context("stamping the terminal status")?;
        Ok(())
    }

    /// Step 5, one host repository change at a time.
    fn remove_worktrees(&self, name: &InstanceName) -> Result<Vec<Removed>> {
        let isolation = self.store.read_isolation(name).unwrap_or_default();
        let mut removed = Vec::new();
        for record in isolation.mounts().into_iter().flatten() {
            if record.isolation == IsolationKind::Worktree {
                let _serial = self.git.lock().unwrap_or_else(|e| e.into_inner());
                removed.extend(remove_worktree(&record, name)?);
            }
        }
        Ok(removed)
    }

    /// Step 6's first half: the data and socket directories renamed into the trash (or, with the
    /// trash on another filesystem, deleted in place). Returns where they went, to be emptied
    /// there, and the bytes deleted in place.
    fn move_dirs_to_trash(&self, name: &InstanceName, removed: &mut Vec<Removed>) -> Result<(Vec<PathBuf>, u64)> {
        let store = self.store;
        let mut trashed = Vec::new();
        let mut freed = 0;
        for (dir, which) in [(store.instance_dir(name), "data"), (store.socket_dir(name), "sockets")] {
            let existed = fs_exists_after(&dir);
            match remove::move_to_trash(store, &dir, &format!("{name}.{which}"))? {
                remove::Trashed::Moved(in_trash) => trashed.push(in_trash),
                remove::Trashed::DeletedInPlace(bytes) => freed += bytes,
                remove::Trashed::Nothing => {}
            }
            if fs_exists_after(&dir) {
                anyhow::bail!("{} is still there", dir.display());
            }
            if existed {
                removed.push(Removed { kind: "directory".into(), name: dir.to_string_lossy().into_owned() });
            }
        }
        Ok((trashed, freed))
    }

    /// What a purge would remove, changing nothing.
    fn dry_run_report(
        &self,
        name: &InstanceName,
        identity: Identity,
        docker: &DockerNames,
        lock_exists: bool,
    ) -> Purged {
        let store = self.store;
        let mut removed: Vec<Removed> =
            crate::tools::teardown::present(self.engine, docker).iter().map(|r| r.removed()).collect();
        let isolation = store.read_isolation(name).unwrap_or_default();
        for record in isolation.mounts().into_iter().flatten() {
            if record.isolation != IsolationKind::Worktree {
                continue;
            }
            if let Ok(host) = git::Repo::open(&record.original_src) {
                if host.registration(Path::new(&record.worktree_path), Some(name.as_str())).is_some() {
                    removed.push(Removed { kind: "worktree".into(), name: record.worktree_path.clone() });
                }
                if record.scratch_branch == name.scratch_branch() && host.has_branch(&record.scratch_branch) {
                    removed.push(Removed { kind: "branch".into(), name: record.scratch_branch.clone() });
                }
            }
        }
        let mut freed = 0;
        for dir in [store.instance_dir(name), store.socket_dir(name)] {
            if std::fs::symlink_metadata(&dir).is_ok() {
                freed += remove::tree_bytes(&dir);
                removed.push(Removed { kind: "directory".into(), name: dir.to_string_lossy().into_owned() });
            }
        }
        if lock_exists {
            removed.push(Removed {
                kind: "name_lock".into(),
                name: store.name_lock_path(name).to_string_lossy().into_owned(),
            });
        }
        if self.catalog.index.row(name.as_str()).is_some() {
            removed.push(Removed { kind: "index_row".into(), name: name.to_string() });
        }
        Purged { identity, removed, freed_bytes: freed, quarantine: None, slimmed: false, dry_run: true }
    }
}

/// Step 3 for an instance whose manifest is gone: its index row alone, when not already terminal.
fn stamp_row(store: &Store, name: &InstanceName, now: &str) -> Result<()> {
    store.update_index(|index| {
        let Some(row) = index.instances.iter_mut().find(|r| r.container_base == name.as_str()) else {
            return Ok(((), false));
        };
        if Status::parse(&row.status).is_some_and(|s| s.is_terminal()) {
            return Ok(((), false));
        }
        row.status = Status::Purged.as_str().to_owned();
        row.updated_at = now.to_owned();
        index.sort();
        Ok(((), true))
    })
}

fn fs_exists_after(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

fn identity_of(
    manifest: Option<&crate::state::model::Manifest>,
    row: Option<&IndexRow>,
    name: &InstanceName,
) -> Identity {
    match (manifest, row) {
        (Some(m), _) => Identity::from_manifest(m),
        (None, Some(r)) => Identity::from_row(r),
        (None, None) => Identity::of_name(name.as_str(), name.instance_id()),
    }
}

/// Step 5 for one worktree mount: prune its registration in the host repository and delete its
/// scratch branch, then check that both are gone. No other branch is touched, whatever the
/// record says.
fn remove_worktree(record: &IsolationRecord, name: &InstanceName) -> Result<Vec<Removed>> {
    let host_path = Path::new(&record.original_src);
    let host = match git::Repo::open(host_path) {
        Ok(host) => host,
        // The host repository is gone, and its registrations and branches with it.
        Err(_) if !host_path.exists() => return Ok(Vec::new()),
        Err(e) => return Err(e.context(format!("opening the host repository {}", host_path.display()))),
    };
    let mut removed = Vec::new();
    if host.prune_worktree(Path::new(&record.worktree_path), Some(name.as_str()))? {
        removed.push(Removed { kind: "worktree".into(), name: record.worktree_path.clone() });
    }
    let branch = name.scratch_branch();
    if record.scratch_branch != branch {
        return Err(not_the_scratch_branch(record, &branch));
    }
    if host.delete_branch(&branch)? {
        removed.push(Removed { kind: "branch".into(), name: branch });
    }
    Ok(removed)
}

fn not_the_scratch_branch(record: &IsolationRecord, branch: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "the isolation record names branch {:?}, not this instance's scratch branch {branch}; not deleting it",
        record.scratch_branch
    )
}

/// The closing line of the text format.
pub fn total_line(purged: usize, bytes: u64, dry_run: bool, slim: bool) -> String {
    let verb = match (dry_run, slim) {
        (true, false) => "would purge",
        (false, false) => "purged",
        (true, true) => "would slim",
        (false, true) => "slimmed",
    };
    format!("{verb} {purged} · {} freed", human_bytes(bytes))
}

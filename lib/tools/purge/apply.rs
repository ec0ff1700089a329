//! Running a purge plan (plan.rs) in lifecycle.md's order, with a crash point after each step.
//! Every step is safe to repeat: a rerun observes what is left and finishes the job.

use std::path::Path;

use anyhow::{Context, Result};

use crate::engines::git;
use crate::protocol::records::{Purged, Removed};
use crate::services::teardown;
use crate::state::model::Status;
use crate::state::names::InstanceName;
use crate::state::store::{HostRepoLocks, PurgeMark, Store};

use super::plan::{Deletion, Plan, Refusal, Stamp};
use super::{crash_point, remove, Purger};
use crate::protocol::codes::ErrorCode;
use crate::services::claim::SessionClaim;
use crate::services::saved_work as quarantine;

/// Purge's crash points, in the order a run passes them (lifecycle.md's order; the tests walk
/// them all).
pub const CRASH_POINTS: &[&str] =
    &["quarantined", "recorded", "stamped", "docker", "worktrees", "trash", "dirs", "lock", "row"];

/// What a purge holds from step 1 on: the name claim, and the host repositories' locks (to the end
/// of step 5).
pub(super) struct Held {
    pub(super) claim: SessionClaim,
    pub(super) repo_locks: Option<HostRepoLocks>,
}

impl Purger<'_> {
    /// Runs `plan` for the instance `name`; the `purged` record of what it removed.
    pub(super) fn apply(&self, name: &InstanceName, plan: Plan, held: Held) -> Result<Purged, Refusal> {
        let Held { mut claim, repo_locks } = held;
        // 2. The work at risk, into the quarantine, before anything is deleted.
        let mut quarantine = plan.saved_before.clone();
        if let Some(save) = &plan.save {
            let at_risk = match &save.records {
                Some(records) => quarantine::AtRisk::Mounts(records),
                None => quarantine::AtRisk::UnreadableRecords { git_tree: self.store.instance_dir(name).join("git") },
            };
            let dir =
                quarantine::save(self.store, &save.assessment, at_risk, self.options.quarantine_days).map_err(|e| {
                    Refusal::Failed { code: ErrorCode::QuarantineFailed, error: e.context("saving the work at risk") }
                })?;
            quarantine = Some(dir.to_string_lossy().into_owned());
        }
        if plan.assessed {
            crash_point("quarantined");
        }
        // The record of the session, before anything of it is deleted: a purge that cannot leave
        // it deletes nothing.
        let assessment = plan.save.as_ref().map(|save| &save.assessment).or(plan.assessment.as_ref());
        crate::services::session_record::write(self.store, name, assessment, quarantine.as_deref(), &self.records)
            .map_err(|e| Refusal::Failed {
                code: ErrorCode::PurgeFailed,
                error: e.context("writing the session record"),
            })?;
        crash_point("recorded");
        let (removed, freed_bytes) = self
            .delete(name, &plan, quarantine.as_deref(), repo_locks, &mut claim)
            .map_err(|error| Refusal::Failed { code: ErrorCode::PurgeFailed, error })?;
        drop(claim);
        Ok(Purged { identity: plan.identity, removed, freed_bytes, quarantine, slimmed: false, dry_run: false })
    }

    /// Steps 3 to 8.
    fn delete(
        &self,
        name: &InstanceName,
        plan: &Plan,
        quarantine: Option<&str>,
        repo_locks: Option<HostRepoLocks>,
        claim: &mut SessionClaim,
    ) -> Result<(Vec<Removed>, u64)> {
        let store = self.store;
        // 3. The terminal status, manifest first, then the index row.
        stamp(store, name, &plan.stamp, quarantine)?;
        crash_point("stamped");

        // 4. Docker, in the one teardown order; what was there is what was removed.
        let mut removed: Vec<Removed> =
            teardown::tear_down(self.engine, store, name, &plan.docker)?.iter().map(|r| r.removed()).collect();
        crash_point("docker");

        // 5. Worktree registrations and scratch branches, one host repository change at a time.
        for deletion in &plan.deletions {
            let done = match deletion {
                Deletion::Worktree { host, path } => {
                    let _serial = self.git.lock().unwrap_or_else(|e| e.into_inner());
                    open(host)?.prune_worktree(Path::new(path), Some(name.as_str()))?
                }
                Deletion::Branch { host, name } => {
                    let _serial = self.git.lock().unwrap_or_else(|e| e.into_inner());
                    open(host)?.delete_branch(name)?
                }
                _ => continue,
            };
            if done {
                removed.push(deletion.removed());
            }
        }
        drop(repo_locks);
        crash_point("worktrees");

        // 6. The directories: into the trash (atomic), then emptied there.
        let (trashed, mut freed) = move_to_trash(store, name, plan, &mut removed)?;
        crash_point("trash");
        for dir in &trashed {
            freed += remove::remove_tree(dir)?;
        }
        crash_point("dirs");

        // 7. The name lock, unless another process holds it.
        if plan.deletions.iter().any(|d| matches!(d, Deletion::NameLock(_))) {
            removed.extend(claim.remove(store, name)?);
        } else if claim.made_lock() {
            // Made for this run's claim: unlinked here too, so that a purge stopped after this
            // step leaves no lock behind for its rerun to find; not the session's, so not listed.
            claim.remove(store, name)?;
        }
        crash_point("lock");

        // 8. The index row.
        let row_removed = store.update_index(|index| {
            let removed = index.remove(name.as_str());
            Ok((removed, removed))
        })?;
        if row_removed {
            removed.push(Deletion::IndexRow(name.to_string()).removed());
        }
        crash_point("row");
        Ok((removed, freed))
    }
}

/// Step 6's first half: each directory of the plan moved into the trash (atomic), named after
/// what it was. What is in the trash now, and the bytes of what had to be deleted in place.
fn move_to_trash(
    store: &Store,
    name: &InstanceName,
    plan: &Plan,
    removed: &mut Vec<Removed>,
) -> Result<(Vec<std::path::PathBuf>, u64)> {
    let mut trashed = Vec::new();
    let mut freed = 0;
    for deletion in &plan.deletions {
        let Deletion::Directory(dir) = deletion else { continue };
        let which = if *dir == store.instance_dir(name) {
            "data"
        } else if *dir == store.socket_dir(name) {
            "sockets"
        } else {
            "import"
        };
        match remove::move_to_trash(store, dir, &format!("{name}.{which}"))? {
            remove::Trashed::Moved(in_trash) => trashed.push(in_trash),
            remove::Trashed::DeletedInPlace(bytes) => freed += bytes,
            remove::Trashed::Nothing => {}
        }
        if std::fs::symlink_metadata(dir).is_ok() {
            anyhow::bail!("{} is still there", dir.display());
        }
        removed.push(deletion.removed());
    }
    Ok((trashed, freed))
}

fn open(host: &Path) -> Result<git::Repo> {
    git::Repo::open(host).map_err(|e| e.context(format!("opening the host repository {}", host.display())))
}

/// Step 3: the purge mark first (a rerun then skips step 2), then the terminal status. An
/// instance without a manifest has only its index row to stamp.
fn stamp(store: &Store, name: &InstanceName, stamp: &Stamp, quarantine: Option<&str>) -> Result<()> {
    let now = crate::base::time::now_rfc3339();
    let Stamp::Manifest { write_mark } = stamp else { return stamp_row(store, name, &now) };
    if let Some(session) = write_mark {
        let verdict = if quarantine.is_some() { "at_risk_quarantined" } else { "checked" };
        let mark = PurgeMark {
            started_at: now.clone(),
            verdict: verdict.into(),
            quarantine: quarantine.map(str::to_owned),
            session: Some(session.clone()),
        };
        store.write_purge_mark(name, &mark).context("writing the purge mark")?;
    }
    let current = store.read_manifest(name)?.and_then(|m| m.known_status());
    let status = current.filter(|s| s.is_terminal()).unwrap_or(Status::Purged);
    store.set_status(name, status, &now).context("stamping the terminal status")?;
    Ok(())
}

/// Step 3 for an instance whose manifest is gone: its index row alone, when not already terminal.
fn stamp_row(store: &Store, name: &InstanceName, now: &str) -> Result<()> {
    store.update_index(|index| {
        let Some(row) = index.instances.iter_mut().find(|r| r.container_base == name.as_str()) else {
            return Ok(((), false));
        };
        if row.known_status().is_some_and(|s| s.is_terminal()) {
            return Ok(((), false));
        }
        row.status = Status::Purged.into();
        row.updated_at = now.to_owned();
        index.sort();
        Ok(((), true))
    })
}

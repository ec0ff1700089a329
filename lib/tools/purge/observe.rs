//! What purge reads of one instance before it decides (plan.rs): its files, whether its role
//! container runs, its Docker resources, its worktrees' registrations and scratch branches, and
//! the work at risk. Read once, with one rule for an isolation file that does not parse: it is
//! `Records::Unreadable` everywhere, so no worktree of it is pruned and no branch deleted, and a
//! discard saves the instance's whole `git/` tree. A fact the engine or git cannot tell stops
//! the purge before anything changes.

use std::path::{Path, PathBuf};

use crate::engines::git;
use crate::protocol::assessment::Assessment;
use crate::protocol::identity::Identity;
use crate::services::assessor::{AssessOptions, Assessor};
use crate::services::ownership::Resource;
use crate::services::teardown;
use crate::state::model::{DockerNames, IndexRow, IsolationKind, IsolationRecord, MalformedRecord, Manifest};
use crate::state::names::InstanceName;
use crate::state::store::PurgeMark;

use super::Refusal;
use super::{Purger, Request};
use crate::protocol::codes::ErrorCode;

/// The isolation records as read: each record parsed on its own, or the file unreadable.
#[derive(Debug, Clone)]
pub(crate) enum Records {
    Read(Vec<Result<IsolationRecord, MalformedRecord>>),
    Unreadable,
}

/// One worktree mount's registration and scratch branch in its host repository, where there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorktreeSeen {
    pub(crate) host: PathBuf,
    pub(crate) path: String,
    pub(crate) registered: bool,
    /// The session's scratch branch, when the host repository has it.
    pub(crate) branch: Option<String>,
}

/// The data or socket directory, and the bytes it holds (counted for a dry run only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DirectorySeen {
    pub(crate) path: PathBuf,
    pub(crate) exists: bool,
    pub(crate) bytes: u64,
}

/// Everything the plan of one instance is made from.
#[derive(Debug, Clone)]
pub(crate) struct Observation {
    pub(crate) name: InstanceName,
    pub(crate) row: Option<IndexRow>,
    /// `Err`: the manifest is there and cannot be read.
    pub(crate) manifest: Result<Option<Manifest>, String>,
    /// The manifest's Docker names, or the ones jackin derives when there is none.
    pub(crate) docker: DockerNames,
    pub(crate) role_running: bool,
    /// The `docker exec` processes running in the role container (an operator attached).
    pub(crate) role_attached: u32,
    pub(crate) records: Records,
    pub(crate) data_dir_exists: bool,
    /// `data/<c>.lock`, when it exists.
    pub(crate) name_lock: Option<PathBuf>,
    pub(crate) observed_at: String,
    // Read by `observe_work`, once the session is known not to be live:
    /// An earlier run passed step 2.
    pub(crate) mark: Option<PurgeMark>,
    /// Step 2's assessment; not made when the purge mark says it was.
    pub(crate) assessment: Option<Result<Assessment, String>>,
    /// The session's Docker resources that exist, in teardown order.
    pub(crate) docker_present: Vec<Resource>,
    pub(crate) worktrees: Vec<WorktreeSeen>,
    pub(crate) directories: Vec<DirectorySeen>,
}

impl Observation {
    /// The instance as its manifest, else its index row, else its name says.
    pub(crate) fn identity(&self) -> Identity {
        match (&self.manifest, &self.row) {
            (Ok(Some(m)), _) => Identity::from_manifest(m),
            (_, Some(r)) => Identity::from_row(r),
            _ => Identity::of_name(self.name.as_str(), self.name.instance_id()),
        }
    }

    /// The worktree records (none when the file cannot be read).
    pub(crate) fn worktree_records(&self) -> impl Iterator<Item = &IsolationRecord> {
        let records: &[Result<IsolationRecord, MalformedRecord>] = match &self.records {
            Records::Read(records) => records,
            Records::Unreadable => &[],
        };
        records.iter().flatten().filter(|r| r.isolation == IsolationKind::Worktree)
    }
}

impl Purger<'_> {
    /// Step 1's facts: the files, and whether the role container runs.
    pub(crate) fn observe_session(&self, request: &Request) -> Result<Observation, Refusal> {
        let store = self.store;
        let name = request.target.name.clone();
        let manifest = store.read_manifest(&name).map_err(|e| format!("{e:#}"));
        let docker = match &manifest {
            Ok(Some(m)) => m.docker.clone(),
            _ => DockerNames::derived(name.as_str()),
        };
        // Asked by the derived names when the manifest cannot be read: a discard may go on then.
        let (role_running, role_attached) = self
            .role_container_state(&name, &docker)
            .map_err(|error| Refusal::Failed { code: ErrorCode::DockerFailed, error })?;
        let records = match store.read_isolation(&name) {
            Ok(isolation) => Records::Read(isolation.mounts()),
            Err(_) => Records::Unreadable,
        };
        Ok(Observation {
            row: request.target.row.clone(),
            manifest,
            docker,
            role_running,
            role_attached,
            records,
            data_dir_exists: exists(&store.instance_dir(&name)),
            name_lock: Some(store.name_lock_path(&name)).filter(|p| exists(p)),
            observed_at: crate::base::time::now_rfc3339(),
            mark: None,
            assessment: None,
            docker_present: Vec::new(),
            worktrees: Vec::new(),
            directories: Vec::new(),
            name,
        })
    }

    /// Steps 2 to 8's facts, read under the host repositories' locks: the purge mark or the
    /// assessment, and what there is to delete.
    pub(crate) fn observe_work(&self, seen: &mut Observation) -> Result<(), Refusal> {
        let store = self.store;
        seen.mark = store.read_purge_mark(&seen.name);
        // Assessed even when a mark is there: whether the mark still holds is the plan's to
        // decide, and a session changed since it was written must be judged on what it holds now.
        // A purge that deletes reads each session's host repositories anew, under their locks
        // and after the deletions before it: a commit another session's branch held may be this
        // one's alone now. A dry run deletes nothing, and shares one reading for the run.
        let fresh;
        let assessor = if self.options.dry_run {
            &self.dry_assessor
        } else {
            fresh = Assessor::new(AssessOptions::default());
            &fresh
        };
        let assessment = match (&seen.manifest, &seen.row) {
            // Only a discard gets here (plan::liveness): the work is judged under the row's or the
            // name's identity, so that what is at risk is saved before anything goes.
            (Err(_), _) => Ok(assessor.work_of(store, &seen.name, seen.identity(), None)),
            // Neither a manifest nor a row: what an import or a launch that stopped half-way left
            // (a data directory, its isolation records, the worktrees they name), judged under
            // the name's identity; its work at risk is refused without a discard, as any other.
            (Ok(None), None) => Ok(assessor.work_of(store, &seen.name, seen.identity(), None)),
            (Ok(_), _) => assessor.instance(store, &seen.name, seen.row.as_ref()).map_err(|e| format!("{e:#}")),
        };
        seen.assessment = Some(assessment);
        seen.docker_present = if self.options.dry_run {
            teardown::present(self.engine, self.store, &seen.name, &seen.docker)
        } else {
            // A run removes them all in order and reports what it found; asking first would only
            // cost a call per resource.
            Vec::new()
        };
        let branch = seen.name.scratch_branch();
        let mut worktrees = Vec::new();
        for record in seen.worktree_records() {
            worktrees.push(worktree_seen(record, &seen.name, &branch)?);
        }
        seen.worktrees = worktrees;
        let dirs = [store.instance_dir(&seen.name), store.socket_dir(&seen.name)];
        for dir in dirs.into_iter().chain(store.import_staging_dirs(&seen.name)) {
            let there = exists(&dir);
            // Counted for a dry run's report; a run counts what it deletes.
            let bytes = if there && self.options.dry_run { crate::base::disk_usage::tree_bytes(&dir) } else { 0 };
            seen.directories.push(DirectorySeen { path: dir, exists: there, bytes });
        }
        Ok(())
    }
}

/// A worktree's registration and the session's scratch branch in its host repository. A host
/// repository that is gone took both with it; one that is there and cannot be opened stops the
/// purge.
fn worktree_seen(record: &IsolationRecord, name: &InstanceName, branch: &str) -> Result<WorktreeSeen, Refusal> {
    let host = PathBuf::from(&record.original_src);
    let mut seen =
        WorktreeSeen { host: host.clone(), path: record.worktree_path.clone(), registered: false, branch: None };
    match git::Repo::open(&host) {
        Ok(repo) => {
            seen.registered = repo.registration(Path::new(&record.worktree_path), Some(name.as_str())).is_some();
            seen.branch = repo.has_branch(branch).then(|| branch.to_owned());
            Ok(seen)
        }
        Err(_) if !host.exists() => Ok(seen),
        Err(e) => Err(Refusal::Failed {
            code: ErrorCode::PurgeFailed,
            error: e.context(format!("opening the host repository {}", host.display())),
        }),
    }
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

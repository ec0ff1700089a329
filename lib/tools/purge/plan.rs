//! Purge's decision for one instance, from its observation alone (observe.rs; no Docker, no git,
//! no files here): the refusals of lifecycle.md's steps 1 and 2, the save of step 2, the stamp of
//! step 3 and the deletions of steps 4 to 8, in that order. `--dry-run` prints the plan and a run
//! applies it (apply.rs), so the two cannot disagree.

use std::path::PathBuf;

pub(crate) use super::Refusal;
use crate::protocol::assessment::{Assessment, Verdict};
use crate::protocol::codes::{ErrorCode, ResourceKind};
use crate::protocol::identity::Identity;
use crate::protocol::path_bytes::NameBytes;
use crate::protocol::records::{Purged, Removed};
use crate::services::ownership::Resource;
use crate::state::model::{DockerNames, IsolationRecord, MalformedRecord};
use crate::state::store::{MarkedSession, PurgeMark};

use super::observe::{Observation, Records};
use super::PurgeOptions;

/// One thing a purge deletes, in lifecycle.md's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Deletion {
    /// Step 4, in the one teardown order (services/teardown.rs).
    Docker(Resource),
    /// Step 5: a worktree's registration in its host repository (`path` as the record names it).
    Worktree { host: PathBuf, path: String },
    /// Step 5: the session's own scratch branch in a host repository.
    Branch { host: PathBuf, name: String },
    /// Step 6: the data or socket directory, moved into the trash, then emptied there.
    Directory(PathBuf),
    /// Step 7: `data/<c>.lock`.
    NameLock(PathBuf),
    /// Step 8.
    IndexRow(String),
}

impl Deletion {
    /// As the `purged` record names it.
    pub(crate) fn removed(&self) -> Removed {
        match self {
            Deletion::Docker(resource) => resource.removed(),
            Deletion::Worktree { path, .. } => Removed::new(ResourceKind::Worktree, path.clone()),
            Deletion::Branch { name, .. } => Removed::new(ResourceKind::Branch, name.clone()),
            Deletion::Directory(path) => Removed::file(ResourceKind::Directory, &NameBytes::of_path(path)),
            Deletion::NameLock(path) => Removed::file(ResourceKind::NameLock, &NameBytes::of_path(path)),
            Deletion::IndexRow(name) => Removed::new(ResourceKind::IndexRow, name.clone()),
        }
    }
}

/// Step 2's save: the work at risk, into the quarantine, before anything is deleted.
#[derive(Debug, Clone)]
pub(crate) struct Save {
    pub(crate) assessment: Assessment,
    /// The isolation records to save the mounts by; `None`: they cannot be read, and the whole
    /// `git/` tree of the instance is saved.
    pub(crate) records: Option<Vec<Result<IsolationRecord, MalformedRecord>>>,
}

/// Step 3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stamp {
    /// The purge mark for the session as it was observed (unless an earlier run's mark holds),
    /// then the terminal status in the manifest and the index row.
    Manifest { write_mark: Option<MarkedSession> },
    /// No manifest: the index row alone, when it is not terminal already.
    Row,
}

/// What a purge of one instance does, in order.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) identity: Identity,
    /// Step 2 ran in this purge (no earlier run's purge mark).
    pub(crate) assessed: bool,
    pub(crate) save: Option<Save>,
    /// Step 2's assessment, when this run made it: what the session record says of the work.
    pub(crate) assessment: Option<Assessment>,
    /// Where an earlier run saved the work at risk (its purge mark says so).
    pub(crate) saved_before: Option<String>,
    pub(crate) stamp: Stamp,
    pub(crate) docker: DockerNames,
    pub(crate) deletions: Vec<Deletion>,
    /// The bytes the directories hold (what a dry run says it would free).
    pub(crate) directory_bytes: u64,
}

impl Plan {
    /// The plan as a dry run prints it: the `purged` record of what the purge would remove, and
    /// where the work at risk is saved: the one an earlier run saved it in, else `saving_in`, the
    /// directory this plan's save would make now (`None` when it saves nothing).
    pub(crate) fn printed(self, saving_in: Option<String>) -> Purged {
        let quarantine = self.saved_before.clone().or(saving_in);
        Purged {
            identity: self.identity,
            removed: self.deletions.iter().map(Deletion::removed).collect(),
            freed_bytes: self.directory_bytes,
            quarantine,
            slimmed: false,
            dry_run: true,
        }
    }
}

/// Step 1's answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Next {
    /// Not live: observe the work and plan.
    Purge,
    /// The role container runs and `--stop` was given: stop it, then observe again (the agent
    /// could write until it is stopped).
    StopFirst(DockerNames),
}

/// Step 1: whether the instance can be purged now, must be stopped first, or is live. A manifest
/// that cannot be read (unless the work may be discarded: `discard`, from its decision record, or
/// `--discard-unfinished`) and a record that names another branch than the session's scratch
/// branch refuse it before anything changes.
pub(crate) fn liveness(seen: &Observation, discard: bool, options: &PurgeOptions) -> Result<Next, Refusal> {
    if let Err(error) = &seen.manifest {
        if !(discard || options.discard_unfinished) {
            let how = "nothing deleted; --discard-unfinished purges it by the names derived from the \
                       container name, after saving its work at risk to the quarantine";
            let error = anyhow::anyhow!("the manifest cannot be read: {error}; {how}");
            return Err(Refusal::Failed { code: ErrorCode::ManifestUnreadable, error });
        }
    }
    let branch = seen.name.scratch_branch();
    if let Some(record) = seen.worktree_records().find(|r| r.scratch_branch != branch) {
        return Err(Refusal::Failed { code: ErrorCode::PurgeFailed, error: not_the_scratch_branch(record, &branch) });
    }
    if !seen.role_running {
        return Ok(Next::Purge);
    }
    if seen.role_attached > 0 {
        let role_container = seen.docker.role_container.clone();
        return Err(Refusal::Attached { role_container, processes: seen.role_attached });
    }
    match (options.stop, options.dry_run) {
        (false, _) => Err(Refusal::Live(seen.docker.role_container.clone())),
        // A dry run stops nothing: it says what the purge would do once stopped.
        (true, true) => Ok(Next::Purge),
        (true, false) => Ok(Next::StopFirst(seen.docker.clone())),
    }
}

/// Step 1 again, after `--stop` stopped the session and it was observed anew: a role container
/// that runs still (started again by the launcher or a restart policy) is live, and is not
/// stopped a second time.
pub(crate) fn liveness_after_stop(seen: &Observation, discard: bool, options: &PurgeOptions) -> Result<(), Refusal> {
    let once = PurgeOptions { stop: false, ..*options };
    liveness(seen, discard, &once).map(|_| ())
}

/// Steps 2 to 8 for an instance that is not live. `discard`: its decision record allowed
/// discarding work at risk; `only_if_clean`: a `failed_setup` under `--terminal`.
pub(crate) fn plan(
    seen: &Observation,
    discard: bool,
    only_if_clean: bool,
    options: &PurgeOptions,
) -> Result<Plan, Refusal> {
    let mark = seen.mark.as_ref().filter(|mark| mark_holds(mark, seen));
    let (identity, save, saved_before, assessed) = match mark {
        // An earlier run passed step 2: the work was found clean or saved then.
        Some(mark) => (seen.identity(), None, mark.quarantine.clone(), None),
        None => {
            let assessment = assessment(seen)?;
            let identity = assessment.identity.clone();
            let save = check_work(seen, assessment.clone(), discard, only_if_clean, options)?;
            (identity, save, None, Some(assessment))
        }
    };
    let stamp = match &seen.manifest {
        Ok(Some(manifest)) => Stamp::Manifest {
            write_mark: mark
                .is_none()
                .then(|| MarkedSession { status: manifest.status.clone(), updated_at: manifest.updated_at.clone() }),
        },
        _ => Stamp::Row,
    };
    Ok(Plan {
        identity,
        assessed: mark.is_none(),
        save,
        assessment: assessed,
        saved_before,
        stamp,
        docker: seen.docker.clone(),
        deletions: deletions(seen),
        directory_bytes: seen.directories.iter().map(|d| d.bytes).sum(),
    })
}

/// Whether an earlier purge's mark speaks for the session as it is now: the manifest is as that
/// purge found it, or as its own stamp left it (a terminal status at the mark's time). A session
/// changed since (resumed after a failed purge, and worked on) is assessed again, and so is one
/// whose mark names no session.
pub(crate) fn mark_holds(mark: &PurgeMark, seen: &Observation) -> bool {
    let (Some(session), Ok(Some(manifest))) = (&mark.session, &seen.manifest) else { return false };
    let as_found = manifest.status == session.status && manifest.updated_at == session.updated_at;
    let as_stamped =
        manifest.updated_at == mark.started_at && manifest.known_status().is_some_and(|status| status.is_terminal());
    as_found || as_stamped
}

/// The assessment of step 2; an instance of which nothing is left to read (a rerun after the
/// directories were removed) is clean.
fn assessment(seen: &Observation) -> Result<Assessment, Refusal> {
    let nothing_left = matches!(seen.manifest, Ok(None)) && !seen.data_dir_exists;
    match &seen.assessment {
        Some(Ok(assessment)) => Ok(assessment.clone()),
        _ if nothing_left => Ok(Assessment {
            identity: seen.identity(),
            verdict: Verdict::Clean,
            in_place: true,
            mounts: Vec::new(),
            summary: "clean".into(),
            assessed_at: seen.observed_at.clone(),
            status: None,
            disk: None,
            seal: None,
        }),
        Some(Err(error)) => Err(Refusal::Failed { code: ErrorCode::AssessFailed, error: anyhow::anyhow!("{error}") }),
        None => {
            Err(Refusal::Failed { code: ErrorCode::AssessFailed, error: anyhow::anyhow!("the work was not assessed") })
        }
    }
}

/// Step 2: work at risk stops the purge unless discarding it was allowed, and is then saved
/// (unless `--no-quarantine`). A discard saves integrated commits too, also of a session with
/// nothing else at risk.
fn check_work(
    seen: &Observation,
    assessment: Assessment,
    discard: bool,
    only_if_clean: bool,
    options: &PurgeOptions,
) -> Result<Option<Save>, Refusal> {
    let discarding = discard || options.discard_unfinished;
    if assessment.verdict.at_risk() {
        if only_if_clean {
            return Err(Refusal::NotClean { summary: assessment.summary });
        }
        if !discarding {
            return Err(Refusal::AtRisk { summary: assessment.summary });
        }
    } else if !(discarding && assessment.mounts.iter().any(|m| m.integrated().next().is_some())) {
        // Nothing at risk; only an explicit discard still bundles integrated commits.
        return Ok(None);
    }
    if options.no_quarantine {
        return Ok(None);
    }
    let records = match &seen.records {
        Records::Read(records) => Some(records.clone()),
        Records::Unreadable => None,
    };
    Ok(Some(Save { assessment, records }))
}

/// Steps 4 to 8: what is there to delete, in order.
fn deletions(seen: &Observation) -> Vec<Deletion> {
    let mut deletions: Vec<Deletion> = seen.docker_present.iter().cloned().map(Deletion::Docker).collect();
    for worktree in &seen.worktrees {
        if worktree.registered {
            deletions.push(Deletion::Worktree { host: worktree.host.clone(), path: worktree.path.clone() });
        }
        if let Some(branch) = &worktree.branch {
            deletions.push(Deletion::Branch { host: worktree.host.clone(), name: branch.clone() });
        }
    }
    deletions.extend(seen.directories.iter().filter(|d| d.exists).map(|d| Deletion::Directory(d.path.clone())));
    deletions.extend(seen.name_lock.clone().map(Deletion::NameLock));
    if seen.row.is_some() {
        deletions.push(Deletion::IndexRow(seen.name.to_string()));
    }
    deletions
}

/// A record that names another branch than the session's scratch branch: the assessment would
/// count the real scratch branch as surviving, and step 5 would be asked to delete a branch that
/// is not the session's.
pub(crate) fn not_the_scratch_branch(record: &IsolationRecord, branch: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "the isolation record names branch {:?}, not this instance's scratch branch {branch}; not deleting it",
        record.scratch_branch
    )
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

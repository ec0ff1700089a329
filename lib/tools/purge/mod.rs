//! jackin-purge: the only code that deletes. Per instance, in lifecycle.md's order: live check,
//! re-assessment (at-risk work stops the instance, or is quarantined on an explicit discard),
//! terminal status stamped, Docker resources, worktree registrations and scratch branches, the
//! directories, the name lock, the index row. Written as observe → plan → apply: `observe.rs`
//! reads the instance once, `plan.rs` decides from that alone (what a dry run prints), `apply.rs`
//! runs the plan. Each step is safe to repeat, so a rerun after a crash at any point finishes the
//! job.

mod apply;
pub mod expire;
mod observe;
pub mod orphans;
pub(crate) mod plan;
pub mod remove;
pub mod select;
mod slim;

pub use select::{items_from_args, items_from_catalog, items_from_records, items_kept, Item, Request, Selection};

use std::path::Path;
use std::sync::{Mutex, OnceLock};

use crate::services::assessor::{AssessOptions, Assessor};
use crate::services::session_record::RecordOptions;
use std::time::Duration;

use anyhow::Result;

use crate::base::exit::Exit;
use crate::engines::docker::Engine;
use crate::protocol::codes::{ErrorCode, ResourceKind};
use crate::protocol::identity::Identity;
use crate::protocol::records::{human_bytes, Purged};
use crate::services::claim::SessionClaim;
use crate::state::model::{DockerNames, IndexRow};
use crate::state::names::InstanceName;
use crate::state::select::Catalog;
use crate::state::store::{HostRepoLocks, Store};

pub use apply::CRASH_POINTS;

/// Why an instance is not purged. Nothing of it changed.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Step 1: the role container (named) runs (`--stop` stops it first).
    Live(String),
    /// Step 1: the role container runs with processes attached to it (`docker exec`): someone
    /// uses the session, and `--stop` does not stop it under them.
    Attached { role_container: String, processes: u32 },
    /// Step 2: work at risk without a discard.
    AtRisk { summary: String },
    /// A selection by status or age (`--terminal`'s `failed_setup`, retention) took a session
    /// that is not clean: left alone, and said.
    NotClean { summary: String },
    /// What cannot be read, or does not allow a purge: the error record's code and why.
    Failed { code: ErrorCode, error: anyhow::Error },
}

/// A test-only failure point of purge (base/crash.rs).
pub(crate) fn crash_point(step: &str) {
    crate::base::crash::point(crate::base::tool::Tool::Purge, CRASH_POINTS, step);
}

/// How long a purge waits for another purge to finish with a host repository it shares.
const HOST_REPO_WAIT: Duration = Duration::from_secs(600);

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
        code: ErrorCode,
        error: anyhow::Error,
        busy: bool,
    },
    /// Not selected after all (a `failed_setup` whose work is not clean); said on stderr.
    Skipped(String),
}

/// The refusal of a live session: its role container runs.
fn live(role_container: &str, hint: &str) -> Stop {
    let error = Exit::Busy.err(format_args!("the session is live: its container {role_container} is running{hint}"));
    Box::new(Outcome::Refused { code: ErrorCode::Live, error, busy: true })
}

fn refused(code: ErrorCode, error: anyhow::Error) -> Outcome {
    Outcome::Refused { code, error, busy: false }
}

/// An instance the purge stopped at before deleting anything: refused, or skipped.
type Stop = Box<Outcome>;

fn stop(code: ErrorCode, error: anyhow::Error) -> Stop {
    Box::new(refused(code, error))
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
    /// The record each purge of a data directory leaves (services/session_record.rs).
    records: RecordOptions,
    /// A dry run's one assessor: nothing changes between its sessions, so each host repository
    /// is read once for the run, not once per session (issue 69).
    pub(crate) dry_assessor: Assessor,
}

impl<'a> Purger<'a> {
    pub fn new(store: &'a Store, engine: &'a Engine, catalog: &'a Catalog, options: PurgeOptions) -> Self {
        let records = RecordOptions::default();
        let dry_assessor = Assessor::new(AssessOptions::default());
        Purger {
            store,
            engine,
            options,
            git: Mutex::new(()),
            catalog,
            snapshot: OnceLock::new(),
            records,
            dry_assessor,
        }
    }

    /// How the session records of this run are written: their retention, the conversation's
    /// paths and cap.
    pub fn with_records(self, records: RecordOptions) -> Self {
        Purger { records, ..self }
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
        // 1. Live: the launcher's name claim held by another process, or the role container
        // running (stopped first on --stop, then observed again).
        let claim = self.claim(name)?;
        let mut seen = self.observe_session(request).map_err(|r| outcome_of(name, r))?;
        if claim.made_lock() {
            // Made for the claim, and gone with it: not the session's to remove at step 7.
            seen.name_lock = None;
        }
        // A clean-up the agent could have chosen is never one that deletes its work unsaved.
        let options =
            PurgeOptions { no_quarantine: self.options.no_quarantine && !request.quarantine_required, ..self.options };
        if let plan::Next::StopFirst(docker) =
            plan::liveness(&seen, request.discard, &self.options).map_err(|r| outcome_of(name, r))?
        {
            // Decide first: a purge that would refuse the work as it is now stops nothing.
            let repo_locks = self.lock_host_repos(&seen).map_err(lock_refusal)?;
            self.observe_work(&mut seen).map_err(|r| outcome_of(name, r))?;
            plan::plan(&seen, request.discard, request.only_if_clean, &options).map_err(|r| outcome_of(name, r))?;
            drop(repo_locks);
            self.stop_session(&docker).map_err(|e| stop(ErrorCode::StopFailed, e))?;
            seen = self.observe_session(request).map_err(|r| outcome_of(name, r))?;
            plan::liveness_after_stop(&seen, request.discard, &self.options).map_err(|r| outcome_of(name, r))?;
        }

        // 2. to 8.: from here to the end of step 5 under the locks of the instance's host
        // repositories; then the plan, printed by a dry run, applied by a run.
        let repo_locks = self.lock_host_repos(&seen).map_err(lock_refusal)?;
        self.observe_work(&mut seen).map_err(|r| outcome_of(name, r))?;
        let plan =
            plan::plan(&seen, request.discard, request.only_if_clean, &options).map_err(|r| outcome_of(name, r))?;
        if self.options.dry_run {
            let saved_in = plan.save.is_some().then(|| {
                crate::services::saved_work::quarantine_dir_now(self.store, name.as_str())
                    .to_string_lossy()
                    .into_owned()
            });
            return Ok(plan.printed(saved_in));
        }
        self.apply(name, plan, apply::Held { claim, repo_locks }).map_err(|r| outcome_of(name, r))
    }

    /// The locks of the host repositories of the instance's worktrees (none in a dry run, which
    /// deletes no branch).
    fn lock_host_repos(&self, seen: &observe::Observation) -> Result<Option<HostRepoLocks>> {
        if self.options.dry_run {
            return Ok(None);
        }
        let repos: Vec<&Path> = seen.worktree_records().map(|r| Path::new(&r.original_src)).collect();
        HostRepoLocks::acquire(&repos, HOST_REPO_WAIT).map(Some)
    }

    /// Step 1's name half, for purge and slim alike: the session's claim (services/claim.rs), taken
    /// for this run; another holder means the session is live, or another tool is at work on it.
    fn claim(&self, name: &InstanceName) -> Result<SessionClaim, Stop> {
        SessionClaim::take(self.store, name, self.options.dry_run)
            .map_err(|error| Box::new(Outcome::Refused { code: ErrorCode::Busy, error, busy: true }))
    }

    /// Step 1's container half, for purge and slim alike: a running role container makes the
    /// session live.
    fn role_running(&self, name: &InstanceName, docker: &DockerNames) -> Result<bool, Stop> {
        self.role_container_running(name, docker).map_err(|e| stop(ErrorCode::DockerFailed, e))
    }

    pub(crate) fn role_container_running(&self, name: &InstanceName, docker: &DockerNames) -> Result<bool> {
        Ok(self.role_container_state(name, docker)?.0)
    }

    /// Whether the session's own role container (services/ownership.rs) runs, and how many `docker
    /// exec` processes run in it.
    pub(crate) fn role_container_state(&self, name: &InstanceName, docker: &DockerNames) -> Result<(bool, u32)> {
        let state = crate::services::ownership::own_role_container(self.engine, self.store, name, docker)?
            .map(|role| role.state)
            .unwrap_or_default();
        Ok((state.running, state.attached))
    }

    fn stop_session(&self, docker: &DockerNames) -> Result<()> {
        self.engine.stop(&docker.role_container, Duration::from_secs(10))?;
        if let Some(sidecar) = &docker.dind_container {
            self.engine.stop(sidecar, Duration::from_secs(10))?;
        }
        Ok(())
    }
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

/// A host repository lock not taken: held past the wait by another purge (busy, exit 5: retry
/// later), or a repository whose lock cannot be taken at all (a failure, exit 6).
fn lock_refusal(error: anyhow::Error) -> Stop {
    let busy = Exit::of(&error) == Exit::Busy;
    let code = if busy { ErrorCode::Busy } else { ErrorCode::PurgeFailed };
    Box::new(Outcome::Refused { code, error, busy })
}

/// A refusal as the run reports it; nothing of the instance changed.
fn outcome_of(name: &InstanceName, refusal: Refusal) -> Stop {
    match refusal {
        Refusal::Live(role_container) => live(&role_container, " (--stop stops it first)"),
        Refusal::Attached { role_container, processes } => live(
            &role_container,
            &format!(
                " with {processes} process(es) attached to it (docker exec: jackin hardline, jackin-restore --exec); \
                 --stop does not stop a session someone is using"
            ),
        ),
        Refusal::AtRisk { summary } => stop(
            ErrorCode::AtRisk,
            anyhow::anyhow!(
                "work at risk: {summary}; nothing deleted (--discard-unfinished saves it to the quarantine and deletes)"
            ),
        ),
        Refusal::NotClean { summary } => Box::new(Outcome::Skipped(format!(
            "{name}: work at risk ({summary}); left alone (picked by status or age, and only what is clean is \
                 purged so; name it with --discard-unfinished to delete it)"
        ))),
        Refusal::Failed { code, error } => stop(code, error),
    }
}

/// The closing line of the text format: the sessions purged (or slimmed), the quarantines and
/// session records that expired when there were any, and the bytes freed.
pub fn total_line(purged: usize, expired: &[ResourceKind], bytes: u64, dry_run: bool, slim: bool) -> String {
    let verb = match (dry_run, slim) {
        (true, false) => "would purge",
        (false, false) => "purged",
        (true, true) => "would slim",
        (false, true) => "slimmed",
    };
    let count = |kind: ResourceKind, one: &str, many: &str| match expired.iter().filter(|k| **k == kind).count() {
        0 => String::new(),
        1 => format!(" and 1 expired {one}"),
        n => format!(" and {n} expired {many}"),
    };
    let quarantines = count(ResourceKind::Quarantine, "quarantine", "quarantines");
    let records = count(ResourceKind::SessionRecord, "session record", "session records");
    format!("{verb} {purged}{quarantines}{records} · {} freed", human_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_held_past_the_wait_is_busy_and_one_that_cannot_be_taken_is_a_failure() {
        let held = lock_refusal(Exit::Busy.err(format_args!("held by another purge")));
        assert!(matches!(*held, Outcome::Refused { code: ErrorCode::Busy, busy: true, .. }), "{held:?}");
        let broken = lock_refusal(anyhow::anyhow!("opening /gone: no such file"));
        assert!(matches!(*broken, Outcome::Refused { code: ErrorCode::PurgeFailed, busy: false, .. }), "{broken:?}");
    }
}

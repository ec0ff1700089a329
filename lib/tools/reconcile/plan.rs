//! The plan: from an observation to the status changes (each with its cause and evidence), the
//! index rows to mend and the live sessions whose launch recipe may be missing. Pure: it reads
//! nothing and writes nothing (lifecycle.md, "Reconcile", is its table).

use std::collections::BTreeSet;

use super::observe::{needs_inspection, Exited, Inspected, Observation, Seen};
use super::Failure;
use crate::protocol::codes::Cause;
use crate::protocol::codes::ErrorCode;
use crate::protocol::evidence::{ContainerSeen, Evidence, RoleSeen};
use crate::protocol::records::RepairKind;
use crate::services::host_kill::{judge_exit, state_evidence};
use crate::state::model::{IndexRow, Manifest, Status};
use crate::state::names::InstanceName;

/// What a reconciliation will write.
#[derive(Debug, Default)]
pub struct Plan {
    pub(crate) changes: Vec<StatusChange>,
    /// Never for an instance that also changes status: its status write refreshes the row.
    pub(crate) row_repairs: Vec<(InstanceName, RepairKind)>,
    /// Sessions whose role container runs: their recipe is captured if they have none yet.
    pub(crate) recipes: Vec<(InstanceName, Manifest)>,
    pub(crate) failures: Vec<Failure>,
}

/// A status change decided, not yet written.
#[derive(Debug)]
pub(crate) struct StatusChange {
    pub(crate) name: InstanceName,
    pub(crate) manifest: Manifest,
    pub(crate) from: Status,
    pub(crate) to: Status,
    pub(crate) cause: Cause,
    pub(crate) evidence: Evidence,
}

/// A session jackin still counts as live.
pub(crate) fn plan(observation: &Observation) -> Plan {
    let mut plan = Plan::default();
    for seen in &observation.instances {
        plan_instance(observation, seen, &mut plan);
    }
    let changed: BTreeSet<InstanceName> = plan.changes.iter().map(|c| c.name.clone()).collect();
    plan.row_repairs.retain(|(name, _)| !changed.contains(name));
    plan
}

fn plan_instance(observation: &Observation, seen: &Seen, plan: &mut Plan) {
    let manifest = match &seen.manifest {
        Ok(Some(manifest)) => manifest,
        Ok(None) => {
            let container_gone = observation.container(seen.name.as_str()).is_none();
            // jackin's `purged` tombstone is its record of a session it removed: jackin prunes it.
            let tombstone = seen.row.as_ref().is_some_and(IndexRow::says_purged);
            if !seen.dir && seen.row.is_some() && !tombstone && container_gone && !seen.lock_held {
                plan.row_repairs.push((seen.name.clone(), RepairKind::RowDropped));
            }
            return;
        }
        Err(e) => {
            plan.failures.push(failure(&seen.name, ErrorCode::ManifestUnreadable, anyhow::anyhow!("{e:#}")));
            return;
        }
    };
    match &seen.row {
        None => plan.row_repairs.push((seen.name.clone(), RepairKind::RowRestored)),
        Some(row) if !row_matches(row, manifest) => {
            plan.row_repairs.push((seen.name.clone(), RepairKind::RowRefreshed))
        }
        Some(_) => {}
    }
    let role_state = observation.container(&manifest.docker.role_container).map(|c| c.state.as_str());
    if role_state == Some("running") {
        plan.recipes.push((seen.name.clone(), manifest.clone()));
    }
    let Some(status) = manifest.known_status() else { return };
    let change = |to: Status, cause: Cause, evidence: Evidence| StatusChange {
        name: seen.name.clone(),
        manifest: manifest.clone(),
        from: status,
        to,
        cause,
        evidence,
    };
    let now = &observation.now;
    match role_state {
        None if status.is_live() && !seen.lock_held => {
            let role = state_evidence(&manifest.docker.role_container, None);
            let evidence = Evidence::Seen(RoleSeen { role, observed_at: now.clone() });
            plan.changes.push(change(Status::Crashed, Cause::ContainerRemoved, evidence));
        }
        Some(_) if needs_inspection(status, role_state) && !seen.lock_held => match &seen.inspected {
            Inspected::Ended(exited) => {
                let Exited { role, sidecar, kept_since_start } = exited.as_ref();
                let sidecar = sidecar.as_ref().map(|(name, state)| (name.as_str(), state.as_ref()));
                let clock = observation.clock.clone().unwrap_or_default();
                let (cause, evidence) = judge_exit(&manifest.docker.role_container, role, sidecar, &clock, now);
                // A `restore_available` session that nothing of ours stopped was left running by
                // jackin when the operator detached: whatever stopped it interrupted it.
                let detached = status == Status::RestoreAvailable && !kept_since_start;
                if status.is_live() || detached || (cause == Cause::KilledByHost && status == Status::FailedSetup) {
                    plan.changes.push(change(Status::Crashed, cause, Evidence::Exit(Box::new(evidence))));
                }
            }
            Inspected::Failed(e) => {
                plan.failures.push(failure(&seen.name, ErrorCode::InspectFailed, anyhow::anyhow!("{e:#}")))
            }
            Inspected::Gone | Inspected::NotNeeded => {}
        },
        Some("running") if status.is_kept() || status == Status::Crashed => {
            let role =
                ContainerSeen { name: manifest.docker.role_container.clone(), status: "running".into(), state: None };
            let evidence = Evidence::Seen(RoleSeen { role, observed_at: now.clone() });
            plan.changes.push(change(Status::Running, Cause::ContainerRunning, evidence));
        }
        _ => {}
    }
}

fn failure(name: &InstanceName, code: ErrorCode, error: anyhow::Error) -> Failure {
    Failure { container_base: Some(name.to_string()), code, error }
}

/// Whether an index row says what its manifest says.
pub(crate) fn row_matches(row: &IndexRow, manifest: &Manifest) -> bool {
    let fresh = IndexRow::from_manifest(manifest);
    row.instance_id == fresh.instance_id
        && row.workspace_name == fresh.workspace_name
        && row.workspace_label == fresh.workspace_label
        && row.workdir == fresh.workdir
        && row.role_key == fresh.role_key
        && row.agent_runtime == fresh.agent_runtime
        && row.status == fresh.status
        && row.updated_at == fresh.updated_at
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::engines::docker::{ContainerBrief, RunState};
    use crate::services::host_kill::Clock;
    use crate::state::model::Index;
    use crate::state::select::Catalog;
    use crate::tools::reconcile::observe::Exited;

    /// The index status, the role container's state (`None`: gone), and `(cause, new status)`.
    type StatusRule = (&'static str, Option<&'static str>, Option<(&'static str, &'static str)>);
    /// The index status, the role container's state, the exit codes of role and sidecar (`None`:
    /// gone by the inspection), and the cause.
    type ExitRule = (&'static str, &'static str, Option<(i64, i64)>, Option<&'static str>);

    const NAME: &str = "jk-abcd1234-app";
    const NOW: &str = "2026-11-29T12:00:00Z";

    fn manifest(status: &str) -> Manifest {
        Manifest::sample(NAME, status)
    }

    fn name() -> InstanceName {
        InstanceName::parse(NAME).unwrap()
    }

    /// An instance with a data dir, a manifest of `status` and the row that matches it.
    fn seen(status: &str) -> Seen {
        let manifest = manifest(status);
        Seen {
            name: name(),
            row: Some(IndexRow::from_manifest(&manifest)),
            dir: true,
            manifest: Ok(Some(manifest)),
            lock_held: false,
            inspected: Inspected::NotNeeded,
        }
    }

    /// The engine shows the role container (if `role` is a state) and nothing else.
    fn observed(role: Option<&str>, seen: Seen) -> Observation {
        let containers: Vec<ContainerBrief> = role
            .map(|state| ContainerBrief {
                id: "c0ffee".into(),
                name: NAME.into(),
                labels: Default::default(),
                state: state.into(),
                binds: Vec::new(),
                networks: Vec::new(),
                volumes: Vec::new(),
            })
            .into_iter()
            .collect();
        Observation {
            now: NOW.into(),
            whole_host: false,
            by_name: containers.iter().enumerate().map(|(i, c)| (c.name.clone(), i)).collect(),
            containers,
            networks: Vec::new(),
            volumes: Vec::new(),
            every_container: Vec::new(),
            catalog: Catalog::over_every_dir(Index::default(), BTreeSet::new()),
            index_rebuilt: None,
            unresolved: Vec::new(),
            instances: vec![seen],
            clock: Some(Clock::default()),
        }
    }

    fn exited(code: i64) -> RunState {
        RunState {
            status: "exited".into(),
            running: false,
            exit_code: Some(code),
            oom_killed: false,
            started_at: Some("2026-11-29T10:00:00Z".into()),
            finished_at: Some("2026-11-29T11:00:00Z".into()),
            attached: 0,
        }
    }

    fn ended(role: i64, sidecar: i64) -> Inspected {
        let sidecar = Some((format!("{NAME}-dind"), Some(exited(sidecar))));
        Inspected::Ended(Box::new(Exited { role: exited(role), sidecar, kept_since_start: false }))
    }

    /// A cause as the tables below spell it (the wire's word, checked against serde's).
    fn cause_word(cause: Cause) -> &'static str {
        let word = match cause {
            Cause::ContainerExited => "container_exited",
            Cause::ContainerRemoved => "container_removed",
            Cause::ContainerRunning => "container_running",
            Cause::KilledByHost => "killed_by_host",
            Cause::IdleKept => "idle_kept",
        };
        assert_eq!(cause.to_string(), word);
        word
    }

    /// The one status change planned, as `(from, to, cause)`.
    fn change_of(plan: &Plan) -> Option<(&'static str, &'static str, &'static str)> {
        assert!(plan.changes.len() <= 1);
        plan.changes
            .first()
            .map(|c| (c.from.as_str(), c.to.as_str(), c.cause))
            .map(|(from, to, cause)| (from, to, cause_word(cause)))
    }

    #[test]
    fn status_follows_what_docker_says() {
        let crashed = |cause| Some((cause, "crashed"));
        let table: &[StatusRule] = &[
            ("active", None, crashed("container_removed")),
            ("running", None, crashed("container_removed")),
            ("clean_exited", None, None),
            ("failed_setup", None, None),
            ("crashed", None, None),
            ("restore_available", None, None),
            ("restore_available", Some("running"), Some(("container_running", "running"))),
            ("preserved_dirty", Some("running"), Some(("container_running", "running"))),
            ("preserved_unpushed", Some("running"), Some(("container_running", "running"))),
            ("crashed", Some("running"), Some(("container_running", "running"))),
            ("active", Some("running"), None),
            ("running", Some("running"), None),
            ("clean_exited", Some("running"), None),
            ("superseded", Some("running"), None),
            ("purged", Some("running"), None),
            ("failed_setup", Some("running"), None),
            ("a status jackin never wrote", None, None),
            ("active", Some("created"), None),
            ("restore_available", Some("exited"), None),
        ];
        for &(status, role, expected) in table {
            let plan = plan(&observed(role, seen(status)));
            let got = change_of(&plan).map(|(from, to, cause)| {
                assert_eq!(from, status);
                (cause, to)
            });
            assert_eq!(got, expected, "{status} with the role container {role:?}");
            assert!(plan.failures.is_empty() && plan.row_repairs.is_empty());
        }
        let removed = plan(&observed(None, seen("active")));
        let role_seen = |status: &str| {
            let role = ContainerSeen { name: NAME.into(), status: status.into(), state: None };
            Evidence::Seen(RoleSeen { role, observed_at: NOW.into() })
        };
        assert_eq!(removed.changes[0].evidence, role_seen("gone"));
        let running = plan(&observed(Some("running"), seen("crashed")));
        assert_eq!(running.changes[0].evidence, role_seen("running"));
    }

    #[test]
    fn an_exit_is_a_crash_and_a_host_kill_says_so() {
        let table: &[ExitRule] = &[
            ("active", "exited", Some((255, 255)), Some("killed_by_host")),
            ("running", "dead", Some((255, 0)), Some("killed_by_host")),
            ("failed_setup", "exited", Some((255, 255)), Some("killed_by_host")),
            ("active", "exited", Some((1, 0)), Some("container_exited")),
            ("running", "exited", Some((0, 0)), Some("container_exited")),
            ("failed_setup", "exited", Some((1, 0)), None),
            ("active", "exited", None, None),
        ];
        for &(status, state, codes, cause) in table {
            assert!(needs_inspection(Status::parse(status).unwrap(), Some(state)));
            let mut seen = seen(status);
            seen.inspected = codes.map_or(Inspected::Gone, |(role, sidecar)| ended(role, sidecar));
            let plan = plan(&observed(Some(state), seen));
            assert_eq!(change_of(&plan).map(|c| c.2), cause, "{status}, role {state}");
            if let Some(change) = plan.changes.first() {
                assert_eq!(change.to, Status::Crashed);
                let Evidence::Exit(evidence) = &change.evidence else { panic!("{:?}", change.evidence) };
                let exit_code = |seen: Option<&ContainerSeen>| seen.and_then(|s| s.state.as_ref()?.exit_code);
                assert_eq!(exit_code(Some(&evidence.role)), codes.map(|c| c.0));
                assert_eq!(exit_code(evidence.sidecar.as_ref()), codes.map(|c| c.1));
                assert_eq!(evidence.observed_at, NOW);
                assert_eq!(evidence.sign.is_none(), cause == Some("container_exited"));
            }
        }
        for status in ["clean_exited", "crashed", "preserved_dirty", "superseded", "purged"] {
            assert!(!needs_inspection(Status::parse(status).unwrap(), Some("exited")), "{status}");
        }
        assert!(!needs_inspection(Status::Active, Some("running")) && !needs_inspection(Status::Active, None));
    }

    /// jackin marks a session `restore_available` when the operator detaches and leaves it
    /// running; one whose container then stopped with no keep of ours after its start was
    /// interrupted (a `docker kill`, the host), and says so. One these tools kept and stopped
    /// stays kept, whatever the host did afterwards.
    #[test]
    fn a_detached_session_stopped_under_jackin_is_interrupted() {
        let table: &[(i64, i64, bool, Option<&str>)] = &[
            (137, 0, false, Some("container_exited")),
            (255, 255, false, Some("killed_by_host")),
            (0, 0, false, Some("container_exited")),
            (137, 0, true, None),
            (255, 255, true, None),
        ];
        for &(role, sidecar, kept_since_start, cause) in table {
            assert!(needs_inspection(Status::RestoreAvailable, Some("exited")));
            let mut seen = seen("restore_available");
            let Inspected::Ended(mut exited) = ended(role, sidecar) else { unreachable!() };
            exited.kept_since_start = kept_since_start;
            seen.inspected = Inspected::Ended(exited);
            let plan = plan(&observed(Some("exited"), seen));
            let expected = cause.map(|cause| ("restore_available", "crashed", cause));
            assert_eq!(change_of(&plan), expected, "exit {role}/{sidecar}, kept since start: {kept_since_start}");
        }
    }

    #[test]
    fn a_held_name_lock_means_a_launch_in_progress() {
        for (status, role, inspected) in
            [("active", None, Inspected::NotNeeded), ("running", Some("exited"), ended(255, 255))]
        {
            let mut seen = seen(status);
            seen.lock_held = true;
            seen.inspected = inspected;
            let plan = plan(&observed(role, seen));
            assert!(plan.changes.is_empty(), "{status}");
        }
        let mut orphaned_row = seen("active");
        orphaned_row.manifest = Ok(None);
        orphaned_row.dir = false;
        orphaned_row.lock_held = true;
        assert!(plan(&observed(None, orphaned_row)).row_repairs.is_empty());
    }

    #[test]
    fn rows_are_mended_from_the_manifest() {
        let mut missing = seen("clean_exited");
        missing.row = None;
        let mut stale = seen("clean_exited");
        stale.row.as_mut().unwrap().status = "active".into();
        let mut dropped = seen("clean_exited");
        dropped.manifest = Ok(None);
        dropped.dir = false;
        let mut bare_dir = seen("clean_exited");
        bare_dir.manifest = Ok(None);
        let kinds = |seen: Seen, role: Option<&str>| -> Vec<RepairKind> {
            plan(&observed(role, seen))
                .row_repairs
                .into_iter()
                .map(|(n, kind)| {
                    assert_eq!(n, name());
                    kind
                })
                .collect()
        };
        assert_eq!(kinds(missing, None), [RepairKind::RowRestored]);
        assert_eq!(kinds(stale, None), [RepairKind::RowRefreshed]);
        assert_eq!(kinds(seen("clean_exited"), None), []);
        let mut dropped_too = seen("clean_exited");
        dropped_too.manifest = Ok(None);
        dropped_too.dir = false;
        assert_eq!(kinds(dropped, None), [RepairKind::RowDropped]);
        assert_eq!(kinds(dropped_too, Some("exited")), [], "its container still exists");
        assert_eq!(kinds(bare_dir, None), [], "its data dir still exists");
        let mut tombstone = seen("purged");
        tombstone.manifest = Ok(None);
        tombstone.dir = false;
        assert_eq!(kinds(tombstone, None), [], "jackin's tombstone is jackin's to prune");

        // A status change rewrites the row anyway: no repair on top of it.
        let mut changing = seen("active");
        changing.row.as_mut().unwrap().updated_at = "yesterday".into();
        let plan = plan(&observed(None, changing));
        assert_eq!(change_of(&plan).map(|c| c.2), Some("container_removed"));
        assert!(plan.row_repairs.is_empty());
    }

    #[test]
    fn what_cannot_be_read_is_a_failure_of_its_own() {
        let mut unreadable = seen("active");
        unreadable.manifest = Err(anyhow::anyhow!("instance.json is corrupt"));
        let plan_unreadable = plan(&observed(None, unreadable));
        assert!(plan_unreadable.changes.is_empty() && plan_unreadable.row_repairs.is_empty());
        let failure = &plan_unreadable.failures[0];
        assert_eq!((failure.code, failure.container_base.as_deref()), (ErrorCode::ManifestUnreadable, Some(NAME)));
        assert_eq!(format!("{:#}", failure.error), "instance.json is corrupt");

        let mut uninspectable = seen("running");
        uninspectable.inspected = Inspected::Failed(anyhow::anyhow!("engine hung up"));
        let plan_failed = plan(&observed(Some("exited"), uninspectable));
        assert!(plan_failed.changes.is_empty());
        assert_eq!(plan_failed.failures[0].code, ErrorCode::InspectFailed);
    }

    #[test]
    fn running_sessions_are_recipe_candidates() {
        for (status, role, candidate) in [
            ("active", Some("running"), true),
            ("restore_available", Some("running"), true),
            ("active", Some("exited"), false),
            ("active", None, false),
        ] {
            let plan = plan(&observed(role, seen(status)));
            assert_eq!(plan.recipes.iter().any(|(n, _)| *n == name()), candidate, "{status} {role:?}");
        }
    }
}

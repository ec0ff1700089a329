//! The plan: from an observation to the status changes (each with its cause and evidence), the
//! index rows to mend and the live sessions whose launch recipe may be missing. Pure: it reads
//! nothing and writes nothing (lifecycle.md, "Reconcile", is its table).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::evidence::{judge_exit, state_evidence};
use super::observe::{Exited, Inspected, Observation, Seen};
use super::Failure;
use crate::protocol::records::RepairKind;
use crate::state::model::{IndexRow, Manifest, Status};
use crate::state::names::InstanceName;

/// What a reconciliation will write.
#[derive(Debug, Default)]
pub struct Plan {
    pub changes: Vec<StatusChange>,
    /// Never for an instance that also changes status: its status write refreshes the row.
    pub row_repairs: Vec<(InstanceName, RepairKind)>,
    /// Sessions whose role container runs: their recipe is captured if they have none yet.
    pub recipes: Vec<(InstanceName, Manifest)>,
    pub failures: Vec<Failure>,
}

/// A status change decided, not yet written.
#[derive(Debug)]
pub struct StatusChange {
    pub name: InstanceName,
    pub manifest: Manifest,
    pub from: Status,
    pub to: Status,
    pub cause: &'static str,
    pub evidence: Value,
}

/// A session jackin still counts as live.
fn session_live(status: Status) -> bool {
    matches!(status, Status::Active | Status::Running)
}

/// Whether the plan judges how a role container ended, so the observation must inspect it: it
/// exited under a live row, or under `failed_setup` (which only a host kill changes).
pub fn needs_inspection(status: Status, role_state: Option<&str>) -> bool {
    matches!(role_state, Some("exited" | "dead")) && (session_live(status) || status == Status::FailedSetup)
}

pub fn plan(observation: &Observation) -> Plan {
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
            if !seen.dir && seen.row.is_some() && container_gone && !seen.lock_held {
                plan.row_repairs.push((seen.name.clone(), RepairKind::RowDropped));
            }
            return;
        }
        Err(e) => {
            plan.failures.push(failure(&seen.name, "manifest_unreadable", anyhow::anyhow!("{e:#}")));
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
    let Some(status) = Status::parse(&manifest.status) else { return };
    let change = |to: Status, cause: &'static str, evidence: Value| StatusChange {
        name: seen.name.clone(),
        manifest: manifest.clone(),
        from: status,
        to,
        cause,
        evidence,
    };
    let now = &observation.now;
    match role_state {
        None if session_live(status) && !seen.lock_held => {
            let evidence = json!({
                "role": state_evidence(&manifest.docker.role_container, None),
                "observed_at": now,
            });
            plan.changes.push(change(Status::Crashed, "container_removed", evidence));
        }
        Some(_) if needs_inspection(status, role_state) && !seen.lock_held => match &seen.inspected {
            Inspected::Ended(exited) => {
                let Exited { role, sidecar } = exited.as_ref();
                let sidecar = sidecar.as_ref().map(|(name, state)| (name.as_str(), state.as_ref()));
                let clock = observation.clock.clone().unwrap_or_default();
                let (cause, evidence) = judge_exit(&manifest.docker.role_container, role, sidecar, &clock, now);
                if session_live(status) || cause == "killed_by_host" {
                    plan.changes.push(change(Status::Crashed, cause, evidence));
                }
            }
            Inspected::Failed(e) => plan.failures.push(failure(&seen.name, "inspect_failed", anyhow::anyhow!("{e:#}"))),
            Inspected::Gone | Inspected::NotNeeded => {}
        },
        Some("running") if status.is_kept() || status == Status::Crashed => {
            let evidence = json!({
                "role": {"name": manifest.docker.role_container, "status": "running"},
                "observed_at": now,
            });
            plan.changes.push(change(Status::Running, "container_running", evidence));
        }
        _ => {}
    }
}

fn failure(name: &InstanceName, code: &'static str, error: anyhow::Error) -> Failure {
    Failure { container_base: Some(name.to_string()), code, error }
}

/// Whether an index row says what its manifest says.
pub fn row_matches(row: &IndexRow, manifest: &Manifest) -> bool {
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

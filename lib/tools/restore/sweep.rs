//! `jackin-restore --interrupted`: after a reboot (or an engine restart, a `docker kill`), every
//! session the host or the engine interrupted, resumed by the cheapest faithful tier, several at
//! a time. Each is resumed as `jackin-restore NAME --yes` would: under its claim, from its own
//! plan, and a failure leaves what it resumes from as it was (resume.rs), so the next sweep can
//! succeed. Sessions in use, kept on purpose or purged are never touched; a kept one whose
//! container jackin left running and the host then stopped was in use, and is interrupted.

use super::prepare::as_reconciled;
use super::prepare::Filters;
use super::resume::Resume;
use super::resume::ResumeOptions;
use super::run::failure_exit;
use crate::base::exit::Exit;
use crate::engines::docker::Engine;
use crate::protocol::identity::Identity;
use crate::protocol::records::Change;
use crate::protocol::records::{Interrupted, SweepOutcome};
use crate::state::continuity;
use crate::state::model::Manifest;
use crate::state::model::Status;
use crate::state::names::InstanceName;
use crate::state::select::Catalog;
use crate::state::select::Target;
use crate::state::store::Store;
use anyhow::Result;
use std::time::Duration;
use std::time::SystemTime;

/// How a sweep runs.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// `--workspace`, `--role`, `--agent`, `--workdir`: only the sessions they admit.
    pub filters: Filters,
    /// Only sessions interrupted this recently; older ones are listed, left alone.
    pub since: Duration,
    /// How many sessions are resumed at a time.
    pub jobs: usize,
    pub resume: ResumeOptions,
}

/// An interrupted session as the sweep found it.
struct Found {
    target: Target,
    manifest: Manifest,
    cause: Option<crate::state::continuity::CauseWord>,
    interrupted_at: String,
    within: bool,
}

/// One `interrupted` record for every session reconciliation left `crashed` (`changes`: what
/// it changed, or in a plan would have), in the catalog's order.
pub fn interrupted(
    engine: &Engine,
    store: &Store,
    catalog: &Catalog,
    changes: &[Change],
    options: SweepOptions,
) -> Result<Vec<Interrupted>> {
    let now = SystemTime::now();
    let stopped = StoppedUnderKept::list(engine)?;
    let found: Vec<Found> =
        catalog.all().into_iter().filter_map(|t| found(engine, store, t, changes, now, &options, &stopped)).collect();
    Ok(crate::base::parallel::map_with(options.jobs, &found, |f| sweep_one(engine, store, f, changes, &options)))
}

/// The session, when it is interrupted: `crashed` once reconciled, whatever the cause; or live
/// with its container stopped while another process holds its claim (the launcher still
/// attached when the engine restarted, an operator resuming it by hand), which reconciliation
/// leaves as it is and the sweep lists as in use.
fn found(
    engine: &Engine,
    store: &Store,
    target: Target,
    changes: &[Change],
    now: SystemTime,
    options: &SweepOptions,
    stopped: &StoppedUnderKept,
) -> Option<Found> {
    let mut manifest = store.read_manifest(&target.name).ok()??;
    if !options.filters.admit(&manifest) {
        return None;
    }
    let mut kept = continuity::read(store, &target.name).unwrap_or_default();
    as_reconciled(&mut manifest, &mut kept, changes);
    let mut killed_at = None;
    let crashed = match manifest.known_status()? {
        Status::Crashed => true,
        status if status.is_kept() => {
            killed_at = Some(stopped.killed_after_kept(engine, store, &target.name, &manifest)?);
            true
        }
        status if status.is_live() => {
            let held = crate::state::store::name_lock_held(&store.name_lock_path(&target.name)).unwrap_or(true);
            let stopped =
                || engine.inspect(&manifest.docker.role_container).is_ok_and(|c| c.is_none_or(|c| !c.state.running));
            if !held || !stopped() {
                return None;
            }
            false
        }
        _ => return None,
    };
    // The moment these tools found it interrupted (this run's reconciliation, which in a plan
    // writes no history), not a later failed attempt's.
    let found_now = changes.iter().any(|c| c.identity.container_base == manifest.container_base);
    let interrupted_at = match kept.history.iter().rev().find(|h| h.to == Status::Crashed.as_str() && h.from != h.to) {
        _ if killed_at.is_some() => killed_at.unwrap_or_default(),
        _ if found_now => crate::base::time::rfc3339(now),
        Some(entry) => entry.at.clone(),
        None => manifest.updated_at.clone(),
    };
    // One in use is said to be so, whenever it started.
    let within = !crashed
        || crate::base::time::parse_rfc3339(&interrupted_at)
            .is_none_or(|at| now.duration_since(at).map_or(true, |ago| ago <= options.since));
    Some(Found { target, manifest, cause: kept.cause, interrupted_at, within })
}

/// The stopped containers jackin manages, listed once per sweep: a kept session whose role
/// container is among them may be one jackin left running (a detach keeps its status kept,
/// `preserved_unpushed`, with the container up) and the host or the engine then stopped.
struct StoppedUnderKept {
    names: std::collections::HashSet<String>,
    clock: std::sync::OnceLock<crate::services::host_kill::Clock>,
}

impl StoppedUnderKept {
    fn list(engine: &Engine) -> Result<StoppedUnderKept> {
        let names = engine.list_managed()?.into_iter().filter(|c| c.state != "running").map(|c| c.name).collect();
        Ok(StoppedUnderKept { names, clock: std::sync::OnceLock::new() })
    }

    /// When the host or the engine stopped the kept session's role container, if it did after
    /// the session was kept: its `FinishedAt`, when that is later than the kept status and the
    /// host-kill evidence reconcile judges exits by says so. A container stopped before it was
    /// kept (keep --stop), or by its own exit, is no interruption; nor is a container of that
    /// name the engine does not prove the session's (its labels and its binds into this home:
    /// services/ownership.rs), which anyone with the engine can make.
    fn killed_after_kept(
        &self,
        engine: &Engine,
        store: &Store,
        name: &InstanceName,
        manifest: &Manifest,
    ) -> Option<String> {
        use crate::base::time::parse_rfc3339;
        use crate::services::host_kill::{host_kill_sign, Clock, Ended};
        use crate::services::ownership::{judge_details, own_role_container, HomeRoots};
        if !self.names.contains(&manifest.docker.role_container) {
            return None;
        }
        let role = own_role_container(engine, store, name, &manifest.docker).ok()??.state;
        let finished = role.finished_at.clone()?;
        if role.running || parse_rfc3339(&finished)? <= parse_rfc3339(&manifest.updated_at)? {
            return None;
        }
        let sidecar = manifest.docker.dind_container.as_deref().and_then(|d| engine.inspect(d).ok().flatten());
        let sidecar = sidecar.filter(|s| judge_details(&HomeRoots::of(store), name, &manifest.docker, s).is_ok());
        let clock = self.clock.get_or_init(|| Clock::read(engine));
        let ended = Ended {
            role,
            sidecar: sidecar.map(|s| s.state),
            host_boot: clock.host_boot,
            engine_started: clock.engine_started,
        };
        host_kill_sign(&ended).map(|_| finished)
    }
}

fn sweep_one(engine: &Engine, store: &Store, found: &Found, changes: &[Change], options: &SweepOptions) -> Interrupted {
    let name = &found.target.name;
    let mut record = Interrupted {
        identity: Identity::from_manifest(&found.manifest),
        status: found.manifest.status_word(),
        cause: found.cause.clone(),
        interrupted_at: found.interrupted_at.clone(),
        outcome: SweepOutcome::LeftAlone,
        tier: None,
        actions: Vec::new(),
        attach: Vec::new(),
        drift: Vec::new(),
        reason: None,
        next: None,
        exit: Exit::Ok.code(),
        dry_run: options.resume.plan_only,
    };
    if !found.within {
        record.reason =
            Some(format!("interrupted before the window (--since {})", humantime::format_duration(options.since)));
        record.next = Some(format!("jackin-restore {name} --plan, then jackin-restore {name} --yes"));
        return record;
    }
    let resume = super::resume(engine, store, name, found.target.row.as_ref(), changes, options.resume);
    let not_resumed = |record: &mut Interrupted, exit: Exit, why: String| {
        record.outcome = SweepOutcome::NotResumed;
        record.reason = Some(why);
        record.exit = exit.code();
        record.next =
            Some(format!("jackin-restore {name} --plan shows what stops it; then jackin-restore {name} --yes"));
    };
    match resume {
        Ok(Resume::Resumed(restored) | Resume::Planned(restored, None)) => {
            record.outcome = if restored.dry_run { SweepOutcome::WouldResume } else { SweepOutcome::Resumed };
            record.tier = restored.tier;
            record.actions = restored.actions;
            record.drift = restored.drift;
            record.attach = if restored.dry_run { Vec::new() } else { restored.attach };
        }
        Ok(Resume::Planned(restored, Some(why))) => {
            record.tier = restored.tier;
            record.drift = restored.drift;
            not_resumed(&mut record, Exit::Partial, why);
        }
        Ok(Resume::Refused { why, exit: Exit::Busy, .. }) => {
            record.reason = Some(format!("in use: {why:#}"));
            record.next = Some(format!("jackin-restore {name} --yes once the other process is done"));
        }
        Ok(Resume::Refused { why, exit, .. }) => not_resumed(&mut record, exit, format!("{why:#}")),
        Ok(Resume::Failed(e)) => not_resumed(&mut record, failure_exit(&e), format!("{e:#}")),
        Err(e) => not_resumed(&mut record, Exit::of(&e), format!("{e:#}")),
    }
    record
}

/// The exit code of a sweep: 0 when every session in the window was resumed (or, with
/// `--plan`, would be) or there was none; 4 when each one that was not could only not be reached
/// (retry later); else 6. Sessions left alone do not count: being in use, or interrupted long
/// ago, is not a failure of the sweep.
pub fn sweep_exit(records: &[Interrupted]) -> Exit {
    let failed: Vec<i32> = records.iter().filter(|r| r.outcome == SweepOutcome::NotResumed).map(|r| r.exit).collect();
    match failed.as_slice() {
        [] => Exit::Ok,
        codes if codes.iter().all(|&c| c == Exit::Unavailable.code()) => Exit::Unavailable,
        _ => Exit::Partial,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(outcome: SweepOutcome, exit: Exit) -> Interrupted {
        Interrupted {
            identity: Identity::of_name("jk-a1b2c3d4-app-agent", "a1b2c3d4"),
            status: crate::state::model::StatusWord::Known(crate::state::model::Status::Crashed),
            cause: Some("killed_by_host".into()),
            interrupted_at: "2026-12-05T03:00:00Z".into(),
            outcome,
            tier: None,
            actions: Vec::new(),
            attach: Vec::new(),
            drift: Vec::new(),
            reason: None,
            next: None,
            exit: exit.code(),
            dry_run: false,
        }
    }

    /// 0 with nothing to do or everything back, left-alone sessions never counting; 4 only when
    /// every failure is "retry later"; 6 as soon as one failed otherwise.
    #[test]
    fn a_sweeps_exit_counts_only_the_sessions_it_tried() {
        use SweepOutcome::*;
        let table: &[(&[(SweepOutcome, Exit)], Exit)] = &[
            (&[], Exit::Ok),
            (&[(Resumed, Exit::Ok), (WouldResume, Exit::Ok)], Exit::Ok),
            (&[(Resumed, Exit::Ok), (LeftAlone, Exit::Ok)], Exit::Ok),
            (&[(NotResumed, Exit::Unavailable), (Resumed, Exit::Ok)], Exit::Unavailable),
            (&[(NotResumed, Exit::Unavailable), (NotResumed, Exit::Partial)], Exit::Partial),
            (&[(NotResumed, Exit::Partial), (LeftAlone, Exit::Ok)], Exit::Partial),
        ];
        for (records, expected) in table {
            let records: Vec<Interrupted> = records.iter().map(|&(o, e)| record(o, e)).collect();
            assert_eq!(sweep_exit(&records), *expected, "{records:?}");
        }
    }
}

//! Whether the assessment keep was handed still stands when it is about to stamp `clean_exited`
//! (docs/maintainers/decisions.md, "Nor is a session whose assessment is older than its work"): the role
//! container stopped before it, the engine remembers removing it before it, or nothing it looked at
//! changed since (services/recheck.rs); otherwise the session is assessed again.

use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};

use super::{cleaned_status, Session};
use crate::base::time::parse_rfc3339;
use crate::engines::docker::{Engine, RunState};
use crate::services::assessor::{AssessOptions, Assessor};
use crate::state::model::Status;
use crate::state::store::Store;

/// Whether the agent had stopped writing when its assessment was made: the role container had
/// finished by then (the exit hook's path: jackin's session ends, then assess, then keep).
/// `assessed_at` is when the assessment started (services/assessor.rs), so a container that
/// finished while the mounts were read does not count. A
/// container that runs, is gone, or finished later (or at a time that cannot be read) may have
/// written after the assessment.
pub(crate) fn stopped_before_assessed(role: Option<&RunState>, assessed_at: &str) -> bool {
    let Some(role) = role.filter(|role| !role.running) else { return false };
    let finished = role.finished_at.as_deref().and_then(parse_rfc3339);
    let assessed = parse_rfc3339(assessed_at);
    matches!((finished, assessed), (Some(finished), Some(assessed)) if finished <= assessed)
}

/// Whether the role container, gone now, was removed before the assessment started: the last
/// event the engine remembers of a container by that name is its `destroy`, before
/// `assessed_at` (jackin's own exit removes the containers before the exit hook assesses). The
/// engine keeps recent events in memory only, so "not known" is `false` (the caller then looks
/// at the work's stat data), as is any error.
pub(crate) fn removed_before_assessed(engine: &Engine, role_container: &str, assessed_at: &str) -> bool {
    let Some(assessed) = parse_rfc3339(assessed_at) else { return false };
    let since = assessed.checked_sub(REMOVAL_LOOKBACK).unwrap_or(SystemTime::UNIX_EPOCH);
    let Ok(history) = engine.container_history(role_container, since) else { return false };
    let last = history.into_iter().max_by_key(|(_, at)| *at);
    matches!(last, Some((action, at)) if action == "destroy" && at < assessed)
}

/// How far before an assessment a removal is looked for: the exit hook assesses seconds after
/// jackin removed the containers. The engine filters every event it holds in the span (a
/// millisecond for an hour's worth of a busy engine's 256, a third of that for ten minutes').
const REMOVAL_LOOKBACK: Duration = Duration::from_secs(600);

/// `clean_exited` is the status jackin's own prune deletes with a plain recursive delete, and the
/// assessment record keep was given may be older than the work (the agent wrote on after it).
/// With the role container stopped, what the session holds now decides: work at risk found then
/// keeps its `preserved_*` status, and purge refuses it without a discard. The assessment stands
/// when the agent had stopped before it, or when nothing it looked at changed since it started
/// (stat data: services/recheck.rs); otherwise the session is assessed again.
pub(super) fn reassess_before_clean_exited(
    store: &Store,
    engine: &Engine,
    session: &mut Session,
) -> Result<Vec<String>> {
    if cleaned_status(session.assessment.verdict) != Status::CleanExited {
        return Ok(Vec::new());
    }
    if stopped_before_assessed(session.role.as_ref(), &session.assessment.assessed_at) {
        session.recheck = Some("the assessment stands: the role container had stopped before it".into());
        return Ok(Vec::new());
    }
    let role = &session.manifest.docker.role_container;
    if session.role.is_none() && removed_before_assessed(engine, role, &session.assessment.assessed_at) {
        session.recheck = Some("the assessment stands: the role container was removed before it".into());
        return Ok(Vec::new());
    }
    let assessed_at = &session.assessment.assessed_at;
    match crate::services::recheck::changed_since_assessed(store, &session.name, &session.assessment) {
        None => {
            session.recheck = Some(format!("the assessment stands: nothing it looked at changed since {assessed_at}"));
            return Ok(Vec::new());
        }
        Some(why) => session.recheck = Some(format!("assessed again before the stamp: {why} since {assessed_at}")),
    }
    let assessor = Assessor::new(AssessOptions::default());
    let now = assessor.instance(store, &session.name, None).context("assessing the session again before the stamp")?;
    let warning = now.verdict.at_risk().then(|| {
        format!(
            "the work changed after it was assessed clean: now {}; stamped {}, not clean_exited",
            now.summary,
            cleaned_status(now.verdict)
        )
    });
    session.assessment = now;
    Ok(warning.into_iter().collect())
}

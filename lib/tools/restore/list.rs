//! The sessions that can be resumed now, each as a `candidate` record in the words of the list.

use super::observe::Asking;
use super::observe::RoleSource;
use super::plan::plan;
use super::plan::Plan;
use super::plan::Tier;
use super::prepare::as_reconciled;
use super::prepare::resumable;
use super::prepare::trust_sources;
use super::prepare::Filters;
use crate::engines::docker::Engine;
use crate::protocol::assessment::Assessment;
use crate::protocol::identity::Identity;
use crate::protocol::records::Candidate;
use crate::protocol::records::Change;
use crate::services::assessor::AssessOptions;
use crate::services::assessor::Assessor;
use crate::state::continuity;
use crate::state::continuity::{CauseKind, CauseWord, Continuity};
use crate::state::model::{Manifest, Status};
use crate::state::select::Catalog;
use crate::state::store::Store;
use anyhow::Result;
use std::time::SystemTime;

/// A session the list shows: its manifest and continuity as reconciled, its plan, its work.
type Listed = (Manifest, Continuity, Plan, Option<Assessment>);

/// The order of the resume list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    #[default]
    Newest,
    /// The most bytes on disk first: which kept sessions to slim or purge.
    Largest,
}

/// Every session that can be resumed now, in `order`, as the list shows them. `changes` are
/// what reconciliation just decided. A session whose files cannot be read is left out. With
/// [`RoleSource::Cached`] (`--list`, `--plan`, `--dry-run`) it only reads.
pub fn candidates(
    engine: &Engine,
    store: &Store,
    changes: &[Change],
    filters: &Filters,
    order: Order,
    role_source: RoleSource,
) -> Result<Vec<Candidate>> {
    let assessor = Assessor::new(AssessOptions { with_diff: false, with_disk: true });
    // Each session planned and assessed (a walk of its files) on all cores: the plan asks the
    // engine and opens the session's repositories, one session at a time it was most of a
    // fleet's list (issue 69).
    // One listing of the engine's containers: most listed sessions' containers are gone, and
    // each of those was a call of its own.
    let present = engine.container_names()?;
    let hosts = crate::engines::git::OpenRepos::default();
    let targets = Catalog::load(store)?.all();
    let planned = crate::base::parallel::map(&targets, |target| -> Result<Option<Listed>> {
        let Ok(Some(mut manifest)) = store.read_manifest(&target.name) else { return Ok(None) };
        let mut kept = continuity::read(store, &target.name).unwrap_or_default();
        as_reconciled(&mut manifest, &mut kept, changes);
        let status = manifest.known_status();
        if !filters.admit(&manifest) || !resumable(status, true) {
            return Ok(None);
        }
        let distrusted = trust_sources(store, &manifest, &mut kept)?;
        let mut plan = plan(
            Asking::listed(engine, &present, &hosts),
            store,
            &target.name,
            &manifest,
            kept.recipe.as_ref(),
            role_source,
            false,
        )?;
        plan.drift.extend(distrusted);
        if let Some(holder) = crate::services::claim::SessionClaim::held_by(store, &target.name)? {
            plan.missing.push(holder);
        }
        if !resumable(status, plan.role.is_some()) {
            return Ok(None);
        }
        let assessment = assessor.instance(store, &target.name, target.row.as_ref()).ok();
        Ok(Some((manifest, kept, plan, assessment)))
    });
    let mut listed = Vec::new();
    for one in planned {
        listed.extend(one?);
    }
    let now = SystemTime::now();
    let mut candidates: Vec<Candidate> = listed
        .iter()
        .map(|(manifest, kept, plan, assessment)| candidate(manifest, kept, assessment.as_ref(), plan, now))
        .collect();
    candidates.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
    if order == Order::Largest {
        // Stable: sessions of one size stay newest first.
        candidates.sort_by_key(|c| std::cmp::Reverse(c.disk.map_or(0, |d| d.total())));
    }
    Ok(candidates)
}

/// `2h ago`, `3d ago`.
pub(crate) fn age(since: &str, now: SystemTime) -> String {
    let Some(then) = crate::base::time::parse_rfc3339(since) else { return "some time ago".into() };
    let secs = now.duration_since(then).map(|d| d.as_secs()).unwrap_or(0);
    match secs {
        0..=59 => "just now".into(),
        60..=3599 => format!("{}m ago", secs / 60),
        3600..=86_399 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

fn cause_words(cause: Option<CauseKind>) -> Option<&'static str> {
    match cause? {
        CauseKind::KilledByHost => Some("interrupted by host"),
        CauseKind::ContainerExited => Some("exited"),
        CauseKind::ContainerRemoved => Some("container removed"),
        _ => None,
    }
}

/// The `candidate` record of one resumable session.
pub(crate) fn candidate(
    manifest: &Manifest,
    continuity: &Continuity,
    assessment: Option<&Assessment>,
    plan: &Plan,
    now: SystemTime,
) -> Candidate {
    let short = crate::state::names::short_name(&manifest.instance_id);
    let age = age(&manifest.updated_at, now);
    let cause = continuity.cause.as_ref().and_then(CauseWord::known);
    let when = match cause_words(cause) {
        // jackin-idle kept it: since when nobody has used it, said as a moment.
        _ if cause == Some(CauseKind::IdleKept) => {
            format!("kept idle since {} ({age})", continuity.kept_at().unwrap_or_else(|| manifest.updated_at.clone()))
        }
        Some(words) => format!("{words} {age}"),
        None => age,
    };
    let summary = assessment.map(|a| a.summary.clone()).unwrap_or_else(|| "not assessed".into());
    let disk = assessment.and_then(|a| a.disk);
    let words = match &disk {
        Some(disk) => format!("{summary} · {}", disk.phrase()),
        None => summary.clone(),
    };
    let label = if plan.ready() {
        format!("Resume {short} · {when} · {words} · ready")
    } else if !plan.missing_env.is_empty() && plan.missing.len() == plan.missing_env.len() {
        format!("{short} · {when} · {words} · needs {}", plan.missing_env.join(", "))
    } else if plan.missing.is_empty() && plan.tier.is_some() {
        // Nothing stands in the way that a dry run could see; the rest only the resume can tell.
        format!("{short} · {when} · {words} · {}", plan.at_resume.join("; "))
    } else {
        format!("{short} · {when} · {words} · cannot resume: {}", plan.missing.join("; "))
    };
    Candidate {
        identity: Identity::from_manifest(manifest),
        status: manifest.status_word(),
        cause: continuity.cause.clone(),
        updated_at: manifest.updated_at.clone(),
        verdict: assessment.map(|a| a.verdict.as_str().to_owned()),
        summary,
        tier: plan.tier.map(Tier::number),
        ready: plan.ready(),
        missing: plan.missing.clone(),
        disk,
        label,
        expires_in_secs: None,
    }
}

/// With the operator's retention (the `--older-than` of their purge): when each kept clean
/// session (`restore_available`) will be deleted by it, in its record and at the end of its label.
pub fn with_retention(candidates: &mut [Candidate], retention: std::time::Duration) {
    let now = std::time::SystemTime::now();
    for candidate in candidates.iter_mut().filter(|c| c.status == Status::RestoreAvailable) {
        let Some(updated) = crate::base::time::parse_rfc3339(&candidate.updated_at) else { continue };
        let due = crate::base::time::rfc3339(updated + retention);
        let Some(secs) = crate::base::time::seconds_until(&due, now) else { continue };
        candidate.expires_in_secs = Some(secs);
        candidate.label.push_str(&format!(" · expires {}", crate::base::time::countdown(secs)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::envelope::Record;

    #[test]
    fn ages_read_like_people_talk() {
        let now = crate::base::time::parse_rfc3339("2026-11-29T12:00:00Z").unwrap();
        assert_eq!(age("2026-11-29T10:00:00Z", now), "2h ago");
        assert_eq!(age("2026-11-29T11:40:00Z", now), "20m ago");
        assert_eq!(age("2026-11-26T12:00:00Z", now), "3d ago");
        assert_eq!(age("nonsense", now), "some time ago");
    }

    /// A candidate's text is its label: it says what its record says of why (the summary of the
    /// work, what stops the resume, and how the session was interrupted), as tests/host/wire_text.rs
    /// checks for every other record type.
    #[test]
    fn a_candidates_label_says_why() {
        let manifest = Manifest::sample("jk-k7p9m2xq-app-agentsmith", "crashed");
        let continuity = Continuity { cause: Some(CauseKind::KilledByHost.into()), ..Continuity::default() };
        let now = crate::base::time::parse_rfc3339("2026-11-29T12:00:00Z").unwrap();
        let stopped = Plan { missing: vec!["no launch recipe: the session was lost".into()], ..Plan::default() };
        let record = candidate(&manifest, &continuity, None, &stopped, now);
        let text = record.text();
        for said in [record.summary.as_str(), record.missing[0].as_str(), "interrupted by host"] {
            assert!(text.contains(said), "{said:?} not in {text:?}");
        }
        let needs = Plan {
            tier: Some(Tier::Recreate),
            missing: vec!["SECRET_TOKEN: not set".into()],
            missing_env: vec!["SECRET_TOKEN".into()],
            ..Plan::default()
        };
        let text = candidate(&manifest, &continuity, None, &needs, now).text();
        assert!(text.contains("needs SECRET_TOKEN"), "{text}");
    }
}

//! Keeping a session to resume later, one owner for every tool that keeps one (jackin-keep's
//! exit policy, jackin-idle's idle window): the launch recipe captured from the live containers
//! first (nothing is torn down before it is safe on disk), the keep recorded in the tools' own
//! file, Docker freed, then jackin's status and the isolation records. The caller holds the
//! session's claim (services/claim.rs) from its last look to the end.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::base::tool::Tool;
use crate::engines::docker::Engine;
use crate::protocol::assessment::{Assessment, Verdict};
use crate::protocol::evidence::{history_entry, Because, Evidence, RecipeHeld};
use crate::state::continuity::{self, Kept};
use crate::state::model::{Isolation, Manifest, Status};
use crate::state::names::InstanceName;
use crate::state::store::Store;

/// How long a running role container gets to stop.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(10);

/// jackin's status for a kept session. An unreadable one is `preserved_dirty`: jackin has no
/// word for "cannot verify", and "dirty" is the one that keeps it from being taken as clean.
pub(crate) fn kept_status(verdict: Verdict) -> Status {
    match verdict {
        Verdict::Clean => Status::RestoreAvailable,
        Verdict::Unpushed => Status::PreservedUnpushed,
        Verdict::Dirty | Verdict::Unknown => Status::PreservedDirty,
    }
}

/// The isolation records' `cleanup_status` for a kept session; `None` leaves them as they are.
/// `cleanup_status` says whether a mount holds work to preserve, and a clean mount holds none:
/// a kept clean session's records stay `active` (its status, `restore_available`, says it is kept).
pub(crate) fn kept_cleanup_status(verdict: Verdict) -> Option<Status> {
    match verdict {
        Verdict::Clean => None,
        other => Some(kept_status(other)),
    }
}

/// Each isolation record's `cleanup_status` after a keep follows its own mount's verdict: a clean
/// worktree beside a dirty one holds nothing to preserve. A record the assessment does not
/// describe (the file changed since) takes the instance's worst verdict.
pub(crate) fn mark_kept_records(isolation: &mut Isolation, assessment: &Assessment) {
    let worst = kept_cleanup_status(assessment.verdict);
    for (i, record) in isolation.mounts().into_iter().enumerate() {
        let own = record.ok().and_then(|r| {
            assessment
                .mounts
                .iter()
                .find(|m| m.mount_dst == r.mount_dst && m.path == r.worktree_path)
                .map(|m| m.verdict)
        });
        if let Some(status) = own.map_or(worst, kept_cleanup_status) {
            isolation.set_cleanup_status_of(i, status.as_str());
        }
    }
}

/// The assessment as kept: diffs are the work tree's own content and stay there.
fn assessment_without_diffs(assessment: &Assessment) -> Result<Value> {
    let mut a = assessment.clone();
    for mount in &mut a.mounts {
        for file in &mut mount.files {
            file.diff = None;
        }
    }
    Ok(serde_json::to_value(a)?)
}

/// Who keeps the session and why, as its history and `kept` record say.
pub(crate) struct Keeper<'a> {
    pub(crate) tool: Tool,
    /// Its crash points, in the order a keep passes them (base/crash.rs).
    pub(crate) crash_points: &'a [&'a str],
    pub(crate) reason: String,
    /// The policy that applied, in its own words (`ask`, `keep`, `idle 4h`).
    pub(crate) policy: String,
    pub(crate) because: Because,
    /// The history entry's evidence, given the recipe the kept session holds.
    pub(crate) evidence: &'a dyn Fn(Option<RecipeHeld>) -> Evidence,
}

/// What a keep did: the warnings worth saying on stderr, and the launch recipe the kept session
/// holds (the one captured now, or an earlier one).
pub(crate) struct KeptSession {
    pub(crate) warnings: Vec<String>,
    pub(crate) recipe: Option<RecipeHeld>,
}

/// Keeps the session: stops its role container if it runs, captures the launch recipe, records
/// the keep, removes its containers and network, and writes jackin's status (`manifest` is the
/// one left) and the isolation records.
pub(crate) fn keep(
    store: &Store,
    engine: &Engine,
    name: &InstanceName,
    manifest: &mut Manifest,
    assessment: &Assessment,
    live: bool,
    keeper: &Keeper,
) -> Result<KeptSession> {
    let crash_point = |step| crate::base::crash::point(keeper.tool, keeper.crash_points, step);
    let mut warnings = Vec::new();
    let verdict = assessment.verdict;
    let status = kept_status(verdict);
    if live {
        engine.stop(&manifest.docker.role_container, STOP_GRACE)?;
    }
    crash_point("stopped");
    let recipe = crate::services::capture::capture(engine, store, name, manifest, keeper.tool.name())
        .context("capturing the launch recipe")?;
    if recipe.is_none() {
        warnings.push(
            "the role container is gone: no launch recipe captured now (restore uses one captured earlier, if any)"
                .into(),
        );
    }
    let now = crate::base::time::now_rfc3339();
    let held = continuity::update(store, name, |c| {
        if recipe.is_some() {
            c.recipe = recipe;
        }
        // The history says which recipe the session keeps: a resume recreates it from that one.
        let held = c.recipe.as_ref().map(|r| RecipeHeld {
            captured_at: r.captured_at.clone(),
            captured_by: r.captured_by.clone(),
            sidecar: r.sidecar.is_some(),
        });
        let evidence = (keeper.evidence)(held.clone());
        let entry = history_entry(&now, keeper.tool, &manifest.status, status, keeper.because, &evidence)?;
        c.kept = Some(Kept {
            at: now.clone(),
            by: continuity::operator(),
            reason: keeper.reason.clone(),
            policy: keeper.policy.clone(),
            verdict: verdict.as_str().to_owned(),
            assessment: assessment_without_diffs(assessment)?,
        });
        c.cause = Some(entry.cause.clone());
        c.evidence = Some(entry.evidence.clone());
        c.history.push(entry);
        Ok((held, true))
    })
    .context("recording the keep")?;
    crash_point("recorded");
    crate::services::teardown::tear_down(engine, store, name, &manifest.docker)?;
    crash_point("torn_down");
    *manifest = store.set_status(name, status, &now)?;
    crash_point("stamped");
    if verdict == Verdict::Unknown {
        warnings.push("its work cannot be verified: kept as preserved_dirty".into());
    }
    if kept_cleanup_status(verdict).is_some() {
        match store.read_isolation(name) {
            Ok(mut isolation) if !isolation.records.is_empty() => {
                mark_kept_records(&mut isolation, assessment);
                store.write_isolation(name, &isolation)?;
            }
            Ok(_) => {}
            Err(e) => warnings.push(format!("isolation records left as they are: {e:#}")),
        }
    }
    crash_point("isolation");
    store.clear_exit_action(name)?;
    Ok(KeptSession { warnings, recipe: held })
}

/// The crash points of a keep, in the order it passes them.
pub const CRASH_POINTS: &[&str] = &["stopped", "recorded", "torn_down", "stamped", "isolation"];

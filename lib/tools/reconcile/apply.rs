//! Applying a plan: status changes (evidence first, then manifest, then index), row repairs in
//! one index update, and launch recipes captured. Each write checks again what it was decided
//! on, so a program that got there first wins. A dry run writes nothing and reports the same.

use anyhow::Result;

use crate::base::exit::Exit;

use super::plan::{row_matches, Plan, StatusChange};
use super::{Failure, Options, Report};
use crate::engines::docker::Engine;
use crate::protocol::codes::ErrorCode;
use crate::protocol::evidence::{history_entry, Because};
use crate::protocol::identity::Identity;
use crate::protocol::records::{Change, Repair, RepairKind};
use crate::state::continuity;
use crate::state::continuity::CauseKind;
use crate::state::model::{IndexRow, Manifest};
use crate::state::names::InstanceName;
use crate::state::store::{IndexRebuilt, Store};

pub(crate) fn apply(
    engine: &Engine,
    store: &Store,
    plan: Plan,
    options: &Options,
    now: &str,
    report: &mut Report,
) -> Result<()> {
    report.failures.extend(plan.failures);
    for change in plan.changes {
        match write_status(store, &change, options, now) {
            Ok(true) => report.changes.push(Change {
                identity: Identity::from_manifest(&change.manifest),
                from: crate::state::model::StatusWord::Known(change.from),
                to: crate::state::model::StatusWord::Known(change.to),
                cause: change.cause,
                evidence: change.evidence,
                dry_run: options.dry_run,
            }),
            Ok(false) => {}
            Err(e) => report.failures.push(Failure {
                container_base: Some(change.name.to_string()),
                // The index lock held past the wait: nothing was written, retry later (exit 5).
                code: if Exit::of(&e) == Exit::Busy { ErrorCode::Busy } else { ErrorCode::StatusWriteFailed },
                error: e,
            }),
        }
    }
    report.repairs.extend(repair_rows(store, &plan.row_repairs, options)?);
    if !options.dry_run {
        capture_recipes(engine, store, &plan.recipes, options, report);
    }
    Ok(())
}

/// The `repair` record of an index that did not parse.
pub(crate) fn index_repair(store: &Store, rebuilt: IndexRebuilt) -> Repair {
    let IndexRebuilt { why, moved_to, rows, dry_run } = rebuilt;
    let reason = if dry_run {
        format!("the index does not parse ({why}); it would be moved aside and rebuilt from the manifests")
    } else {
        format!("the index did not parse ({why}); moved aside and rebuilt from {rows} manifests")
    };
    Repair {
        kind: RepairKind::IndexRebuilt,
        name: store.index_path().display().to_string(),
        reason,
        moved_to: Some(moved_to.display().to_string()),
        dry_run,
    }
}

/// Writes one status change: the evidence into the tools' own file, then the status (manifest,
/// then index). Returns false when the manifest no longer holds the status the change was
/// decided on (another program got there first).
fn write_status(store: &Store, change: &StatusChange, options: &Options, now: &str) -> Result<bool> {
    let current = store.read_manifest(&change.name)?.map(|m| m.status);
    if current.as_ref().and_then(|status| status.known()) != Some(change.from) {
        return Ok(false);
    }
    if options.dry_run {
        return Ok(true);
    }
    let why = || {
        continuity::update(store, &change.name, |c| {
            let evidence = serde_json::to_value(&change.evidence)?;
            c.cause = Some(CauseKind::from(change.cause).into());
            c.evidence = Some(evidence.clone());
            let because = Because::Found(change.cause);
            c.history.push(history_entry(
                now,
                options.tool,
                &change.from.into(),
                change.to,
                because,
                &change.evidence,
            )?);
            Ok(((), true))
        })
    };
    store.set_status_after(&change.name, change.to, now, why)?;
    Ok(true)
}

fn repair_reason(kind: RepairKind) -> &'static str {
    match kind {
        RepairKind::RowRestored => "a data dir with a manifest but no index row: row restored from the manifest",
        RepairKind::RowRefreshed => "the index row did not match the manifest: row rewritten from the manifest",
        RepairKind::RowDropped => "neither the data dir nor the container exists: row dropped",
        RepairKind::IndexRebuilt => "the index did not parse: rebuilt from the manifests",
    }
}

/// Restores, refreshes and drops rows in one index update. Each case is checked again under the
/// lock against the manifest as it is now, so a launch or a status change in between wins.
fn repair_rows(store: &Store, repairs: &[(InstanceName, RepairKind)], options: &Options) -> Result<Vec<Repair>> {
    let record = |name: &InstanceName, kind: RepairKind| Repair {
        kind,
        name: name.to_string(),
        reason: repair_reason(kind).to_owned(),
        moved_to: None,
        dry_run: options.dry_run,
    };
    if repairs.is_empty() {
        return Ok(Vec::new());
    }
    if options.dry_run {
        return Ok(repairs.iter().map(|(name, kind)| record(name, *kind)).collect());
    }
    store.update_index(|index| {
        let mut done = Vec::new();
        for (name, kind) in repairs {
            let applied = if *kind == RepairKind::RowDropped {
                // A row that became jackin's tombstone since the plan is jackin's to prune.
                let tombstone = index.row(name.as_str()).is_some_and(IndexRow::says_purged);
                !tombstone && !store.instance_dir(name).exists() && index.remove(name.as_str())
            } else {
                match store.read_manifest(name) {
                    Ok(Some(manifest)) => {
                        let needed = index.row(name.as_str()).is_none_or(|row| !row_matches(row, &manifest));
                        if needed {
                            index.upsert(IndexRow::from_manifest(&manifest));
                        }
                        needed
                    }
                    _ => false,
                }
            };
            if applied {
                done.push(record(name, *kind));
            }
        }
        let changed = !done.is_empty();
        Ok((done, changed))
    })
}

/// The launch recipe of every running session that has none yet, so that a later loss can
/// still be recreated. Names and sources of the environment only (services::capture).
fn capture_recipes(
    engine: &Engine,
    store: &Store,
    live: &[(InstanceName, Manifest)],
    options: &Options,
    report: &mut Report,
) {
    for (name, manifest) in live {
        let result = (|| -> Result<bool> {
            if continuity::read(store, name)?.recipe.is_some() {
                return Ok(false);
            }
            let Some(recipe) = crate::services::capture::capture(engine, store, name, manifest, options.tool.name())?
            else {
                return Ok(false);
            };
            continuity::update(store, name, |c| {
                if c.recipe.is_some() {
                    return Ok((false, false));
                }
                c.recipe = Some(recipe);
                Ok((true, true))
            })
        })();
        match result {
            Ok(true) => report.recipes_captured.push(name.to_string()),
            Ok(false) => {}
            Err(e) => report.failures.push(Failure {
                container_base: Some(name.to_string()),
                code: ErrorCode::RecipeCaptureFailed,
                error: e,
            }),
        }
    }
}

//! `jackin-move import FILE`: a session another host exported (`jackin-move export`) made a kept
//! session of this host, the same instance, that `jackin-restore INSTANCE` resumes by tier 2 or 3.
//!
//! A recover (services/saved_work/put_back.rs) into a fresh session layout: per mount, the host
//! repository of this host's jackin config whose remote URLs meet the exported ones (or `--repo
//! DST=PATH`) receives the bundle's commits; the worktree (or clone) is made where jackin puts it,
//! on the branch or detached commit it was on, the scratch branch where it was, the commits only
//! the session's reflogs reached in its reflogs again (still at risk, as they were), a clone's
//! stashes as its stash; the saved files go on top and the index gets what was staged. Then
//! jackin's files through the store: the isolation records with this host's paths, the
//! continuity file with the launch recipe's binds moved to this host's paths, the manifest, the
//! index row.
//!
//! In purge's shape: observe (observe.rs reads the archive whole and checks it; hosts.rs looks at
//! this host's repositories once), plan (plan.rs, from that alone: everything that could refuse
//! is decided there, exit 3 and nothing written), apply (apply.rs walks the plan's steps: the
//! archive read again into `<home>/imports/`, checked again, and moved into place). A dry run
//! prints the plan's steps and stops. What an archive may hold is checks.rs; a mount's
//! submodules, submodules.rs.

mod apply;
mod checks;
mod hosts;
mod observe;
mod plan;
mod submodules;

pub use observe::CRASH_POINTS;
pub use plan::ImportOptions;

use std::path::Path;

use anyhow::Result;

use crate::base::steps::Steps;
use crate::protocol::records::{Imported, MovedMount};
use crate::services::claim::SessionClaim;
use crate::state::store::Store;
use apply::apply;
use hosts::look;
use observe::observe;
use plan::{plan, Inputs, MountPlan};

/// Brings in the session the archive `file` holds (see the module's doc): observe, plan, then
/// make it all; with `dry_run`, only says what it would make.
pub fn import(store: &Store, file: &Path, options: &ImportOptions, steps: &dyn Steps) -> Result<Imported> {
    steps.done("checking the archive");
    let mut seen = observe(store, file)?;
    let name = seen.name.clone();
    // Another import (or any holder) at work on the session first: what it has made so far is
    // not a half-made import to purge, and a purge would take the session from under it.
    SessionClaim::take(store, &name, true)?;
    observe::refuse_clash(store, &name, file, false)?;
    let sources = crate::state::config::mounted_sources(&store.roots.config_dir)?;
    let views = look(&seen.account.mounts, &seen.verified, &options.repos, &sources, name.as_str());
    let inputs = Inputs {
        store,
        name: &name,
        file,
        mounts: &seen.account.mounts,
        bundles: &seen.verified.bundles,
        layout: &seen.layout,
    };
    let plan = plan(&inputs, &views, std::process::id())?;
    // Checking the archive, unpacking it, then each mount.
    steps.planned(2 + plan.mounts.len());
    let account = &seen.account;
    let mut imported = Imported {
        identity: account.identity.clone(),
        file: file.to_string_lossy().into_owned(),
        exported_by: account.exported_by.clone(),
        status: seen.manifest.status_word(),
        mounts: plan.mounts.iter().map(moved).collect(),
        auth: account.auth.clone(),
        steps: plan.steps.iter().map(|step| plan.describe(step)).collect(),
        notes: Vec::new(),
        dry_run: options.dry_run,
    };
    if !account.auth.is_empty() {
        imported.notes.push(format!("it came with the agents' credentials: {}", account.auth.join(", ")));
    }
    if seen.continuity.recipe.is_none() {
        imported.notes.push("it has no launch recipe: only a session that was kept with one can be resumed".into());
    }
    if !options.dry_run {
        apply(store, file, &mut seen, &plan, &mut imported, steps)?;
    }
    Ok(imported)
}

/// What the record says of a mount.
fn moved(plan: &MountPlan) -> MovedMount {
    let saved = &plan.exported.saved;
    MovedMount {
        mount_dst: saved.mount_dst.clone(),
        isolation: saved.isolation.clone(),
        repository: Some(plan.host.to_string_lossy().into_owned()),
        worktree: plan.path.to_string_lossy().into_owned(),
        commits: saved.bundle_contents.as_ref().map_or(0, |b| b.commits),
        files: saved.files.len(),
        head: saved.head.clone(),
        remotes: plan.exported.remotes.iter().map(|r| r.url.clone()).collect(),
    }
}

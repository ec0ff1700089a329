//! `jackin-restore --import FILE`: a session another host exported (tools/moves/export.rs) made a kept
//! session of this host, the same instance, that `jackin-restore INSTANCE` resumes by tier 2 or 3.
//!
//! A recover (recover.rs) into a fresh session layout: per mount, the host repository of this
//! host's jackin config whose remote URLs meet the exported ones (or `--repo DST=PATH`) receives
//! the bundle's commits; the worktree (or clone) is made where jackin puts it, on the branch or
//! detached commit it was on, the scratch branch where it was, the commits only the session's
//! reflogs reached in its reflogs again (still at risk, as they were), a clone's stashes as its
//! stash; the saved files go on top and the index gets what was staged (recover.rs's own
//! steps). Then jackin's files through the store: the isolation records with this host's paths,
//! the continuity file with the launch recipe's binds moved to this host's paths, the manifest,
//! the index row.
//!
//! The archive is read whole and checked before anything is decided (services/archive.rs), and
//! everything that could refuse is decided before anything is written: an instance of the same
//! name here, a repository not found or lacking what the commits build on, a branch or worktree
//! name taken (exit 3, nothing written). Then it is read again into `<home>/imports/`, checked
//! again, and moved into place.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::de::DeserializeOwned;

use super::import_apply::apply;
use super::import_checks::{check_docker_names, check_free_space, refuse, Layout};
use super::import_plan::{plan_mount, MountPlan};
use crate::base::exit::Exit;
use crate::base::steps::Steps;
use crate::protocol::records::{Imported, MovedMount};
use crate::services::archive::{self, Verified};
use crate::services::claim::SessionClaim;
use crate::state::continuity::Continuity;
use crate::state::model::{Isolation, Manifest, Status};
use crate::state::names::InstanceName;
use crate::state::store::Store;
use crate::tools::moves::export::{ExportFile, CONTINUITY_ENTRY, EXPORT_ENTRY, ISOLATION_ENTRY, MANIFEST_ENTRY};

/// `--dry-run` (or `--plan`) and `--repo DST=PATH`.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    pub dry_run: bool,
    pub repos: Vec<(String, PathBuf)>,
}

pub(super) fn is_kept_part(name: &str) -> bool {
    [EXPORT_ENTRY, MANIFEST_ENTRY, ISOLATION_ENTRY, CONTINUITY_ENTRY].contains(&name)
}

fn part<T: DeserializeOwned>(file: &Path, verified: &Verified, name: &str) -> Result<Option<T>> {
    let Some(bytes) = verified.kept.get(name) else { return Ok(None) };
    serde_json::from_slice(bytes).map(Some).map_err(|e| refuse(file, format_args!("{name} does not parse: {e}")))
}

/// The session an archive holds, read and checked whole before anything is decided: its own
/// account of itself, the manifest (of the instance the account names, in a status an export
/// writes), the isolation records (one a mount) and the continuity file.
pub(super) struct Observed<'a> {
    pub(super) verified: Verified,
    pub(super) layout: Layout<'a>,
    pub(super) account: ExportFile,
    pub(super) name: InstanceName,
    pub(super) manifest: Manifest,
    pub(super) status: Status,
    pub(super) isolation: Isolation,
    pub(super) continuity: Continuity,
}

/// Reads the archive once to check it and takes its session's files out of it.
fn observe<'a>(store: &Store, file: &'a Path) -> Result<Observed<'a>> {
    let verified = archive::read(file, &is_kept_part, None)?;
    let layout = Layout::new(file, &verified.parts)?;
    layout.check()?;
    check_free_space(store, file, &verified)?;
    let account: ExportFile = part(file, &verified, EXPORT_ENTRY)?
        .ok_or_else(|| refuse(file, format_args!("the archive has no {EXPORT_ENTRY}")))?;
    let name = InstanceName::parse(&account.identity.container_base).map_err(|e| Exit::BadInput.wrap(e))?;
    layout.check_depth(&store.import_staging_dir(&name, std::process::id()))?;
    let manifest: Manifest = part(file, &verified, MANIFEST_ENTRY)?
        .ok_or_else(|| refuse(file, format_args!("the archive has no manifest")))?;
    if manifest.container_base != name.as_str() {
        return Err(refuse(file, format_args!("its manifest is of {}, not {name}", manifest.container_base)));
    }
    let status = Status::parse(&manifest.status).filter(|s| super::export::exportable(Some(*s))).ok_or_else(|| {
        refuse(file, format_args!("its manifest's status {:?} is not one an export writes", manifest.status))
    })?;
    let isolation: Isolation = part(file, &verified, ISOLATION_ENTRY)?.unwrap_or_default();
    let continuity: Continuity = part(file, &verified, CONTINUITY_ENTRY)?.unwrap_or_default();
    check_docker_names(&name, &manifest, &continuity, file)?;
    if isolation.records.len() != account.mounts.len() {
        return Err(refuse(file, format_args!("its isolation records and its mounts do not match")));
    }
    Ok(Observed { verified, layout, account, name, manifest, status, isolation, continuity })
}

/// Brings in the session the archive `file` holds (see the module's doc): observe, plan each
/// mount, then make it all; with `dry_run`, only says what it would make.
pub fn import(store: &Store, file: &Path, options: &ImportOptions, steps: &dyn Steps) -> Result<Imported> {
    steps.done("checking the archive");
    let mut seen = observe(store, file)?;
    let name = seen.name.clone();
    // Another import (or any holder) at work on the session first: what it has made so far is
    // not a half-made import to purge, and a purge would take the session from under it.
    SessionClaim::take(store, &name, true)?;
    refuse_clash(store, &name, file, false)?;
    let sources = crate::state::config::mounted_sources(&store.roots.config_dir)?;
    // Checking the archive, unpacking it, then each mount.
    steps.planned(2 + seen.account.mounts.len());
    let mut plans = Vec::new();
    for exported in &seen.account.mounts {
        plans.push(plan_mount(store, &name, exported, &seen.verified, &seen.layout, options, &sources, file)?);
    }
    let account = &seen.account;
    let mut imported = Imported {
        identity: account.identity.clone(),
        file: file.to_string_lossy().into_owned(),
        exported_by: account.exported_by.clone(),
        status: seen.manifest.status.clone(),
        mounts: plans.iter().map(moved).collect(),
        auth: account.auth.clone(),
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
        apply(store, file, &mut seen, &plans, &mut imported, steps)?;
    }
    Ok(imported)
}

/// An instance of this name here (an index row, a data or socket directory, a name lock) refuses
/// the import: the same session imported twice, or an id that clashes. One with no index row is
/// what an import (or a launch) that stopped half-way left, and the refusal says how to remove it.
/// `own_lock`: the name lock is this run's own claim, not a clash.
pub(super) fn refuse_clash(store: &Store, name: &InstanceName, file: &Path, own_lock: bool) -> Result<()> {
    let row = store.read_index()?.row(name.as_str()).is_some();
    let lock = (!own_lock).then(|| store.name_lock_path(name));
    let paths = [Some(store.instance_dir(name)), Some(store.socket_dir(name)), lock];
    let there = paths.iter().flatten().find(|p| fs::symlink_metadata(p).is_ok());
    match (there, row) {
        (_, true) => Err(refuse(file, format_args!("an instance named {name} is here already (its index row)"))),
        (Some(there), false) => Err(refuse(
            file,
            format_args!(
                "an instance named {name} is here already ({}) without an index row: an import (or a launch) of it \
                 stopped half-way; `jackin-purge {name} --discard-unfinished` removes what it made, then import \
                 again",
                there.display()
            ),
        )),
        (None, false) => Ok(()),
    }
}

/// A test-only failure point of an import (base/crash.rs).
pub(super) fn crash_point(step: &str) {
    crate::base::crash::point(crate::base::tool::Tool::Import, CRASH_POINTS, step);
}

/// An import's crash points, in the order a run passes them.
pub const CRASH_POINTS: &[&str] = &["unpacked", "moved", "mounts", "recorded"];

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

//! An import's look at its archive: read once and checked whole (extras/moves/archive/), its
//! session's own files taken out of it, and what refuses it before anything is decided.

use std::fs;
use std::path::Path;

use anyhow::Result;
use serde::de::DeserializeOwned;

use super::checks::{check_docker_names, check_free_space, refuse, Layout};
use crate::base::exit::Exit;
use crate::extras::moves::archive::{self, Verified};
use crate::extras::moves::export::{ExportFile, CONTINUITY_ENTRY, EXPORT_ENTRY, ISOLATION_ENTRY, MANIFEST_ENTRY};
use crate::state::continuity::Continuity;
use crate::state::model::{Isolation, Manifest, Status};
use crate::state::names::InstanceName;
use crate::state::store::Store;

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
pub(super) fn observe<'a>(store: &Store, file: &'a Path) -> Result<Observed<'a>> {
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
    let status =
        manifest.known_status().filter(|s| crate::extras::moves::export::exportable(Some(*s))).ok_or_else(|| {
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

//! An import made: the archive unpacked and its packs checked in staging, the session moved
//! into place, each mount made, then jackin's files, in the order a purge of a half-made import
//! can follow.

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use super::checks::refuse;
use super::observe::{crash_point, is_kept_part, refuse_clash, Observed};
use super::plan::{ImportPlan, ImportStep, MountPlan};
use super::submodules::{make_submodule, WHY};
use crate::base::steps::Steps;
use crate::base::tool::Tool;
use crate::engines::git::{BundleHeader, IndexChange, Repo};
use crate::extras::moves::archive::{self, Staging};
use crate::extras::moves::export::{ExportFile, MOUNTS_ENTRY};
use crate::protocol::evidence::{history_entry, Because, Evidence, Imported as ImportedFrom};
use crate::protocol::records::Imported;
use crate::services::claim::SessionClaim;
use crate::services::saved_work::put_back::{index_changes, put_files_back};
use crate::state::model::{IndexRow, IsolationKind};
use crate::state::names::InstanceName;
use crate::state::recipe::LaunchRecipe;
use crate::state::store::{ensure_private_dir, write_json_atomic, Store};

/// Makes what the plan says, walking its steps, under the session's claim, held until the
/// session is whole here: no purge, keep or resume takes it half-made, and a second import of it
/// is refused as busy.
pub(super) fn apply(
    store: &Store,
    file: &Path,
    seen: &mut Observed<'_>,
    plan: &ImportPlan,
    imported: &mut Imported,
    steps: &dyn Steps,
) -> Result<()> {
    let name = seen.name.clone();
    fs::create_dir_all(store.data_dir())?;
    let claim = SessionClaim::take(store, &name, false)?;
    refuse_clash(store, &name, file, claim.made_lock())?;
    let mut staging: Option<Staging> = None;
    let mut moved_in = false;
    for step in &plan.steps {
        // The unpacking directory: the plan unpacks before it makes anything.
        let staged = || staging.as_ref().map(|s| s.0.clone()).expect("unpacked before anything is made");
        let done = match step {
            ImportStep::Unpack { into } => {
                steps.done("unpacking");
                staging = Some(unpack(store, file, into, &plan.mounts)?);
                crash_point("unpacked");
                Ok(())
            }
            ImportStep::MoveIn { to } => {
                let unpacked = staged().join("instance");
                if !unpacked.exists() {
                    fs::DirBuilder::new().mode(0o700).create(&unpacked)?;
                }
                fs::rename(&unpacked, to).with_context(|| format!("moving the session to {}", to.display()))?;
                moved_in = true;
                crash_point("moved");
                Ok(())
            }
            ImportStep::RecordIsolation => record_isolation(store, seen, &plan.mounts),
            ImportStep::MakeMount(i) => {
                let mount = &plan.mounts[*i];
                steps.done(&mount.exported.saved.mount_dst);
                make_mount(&name, mount, &staged().join(MOUNTS_ENTRY)).map(|notes| imported.notes.extend(notes))
            }
            ImportStep::RecordContinuity => {
                crash_point("mounts");
                record_continuity(store, file, seen, &plan.mounts)
            }
            ImportStep::RecordManifest => {
                seen.manifest.updated_at = crate::base::time::now_rfc3339();
                let written = store.write_manifest(&name, &seen.manifest);
                crash_point("recorded");
                written
            }
            ImportStep::AddIndexRow => store.update_index(|index| {
                index.upsert(IndexRow::from_manifest(&seen.manifest));
                Ok(((), true))
            }),
        };
        // Once the session's files are in place, a failure leaves a half-made import.
        done.map_err(|e| match moved_in {
            false => e,
            true => e.context(format!(
                "the import of {name} stopped half-way: what it made is under {}; jackin-purge {name} \
                 --discard-unfinished removes it",
                store.instance_dir(&name).display()
            )),
        })?;
    }
    Ok(())
}

/// The archive read again into `into` (under `<home>/imports/`), and its packs checked there: a
/// damaged or incomplete one refuses the import before any repository of this host or the home
/// changes.
pub(super) fn unpack(store: &Store, file: &Path, into: &Path, plans: &[MountPlan]) -> Result<Staging> {
    let imports = store.imports_dir();
    let made_imports = fs::symlink_metadata(&imports).is_err();
    ensure_private_dir(&imports)?;
    let staging = Staging::new(into.to_path_buf())?;
    let mounts_dir = staging.0.join(MOUNTS_ENTRY);
    let staged = archive::read(file, &is_kept_part, Some(&staging.0))
        .and_then(|_| verify_packs(plans, &mounts_dir, &staging.0.join(".verify"), file));
    if let Err(refused) = staged {
        drop(staging);
        if made_imports {
            let _ = fs::remove_dir(&imports);
        }
        return Err(refused);
    }
    Ok(staging)
}

/// The isolation records with this host's paths, first of jackin's files: a purge of a half-made
/// import finds the worktrees and branches it made through them.
fn record_isolation(store: &Store, seen: &mut Observed<'_>, plans: &[MountPlan]) -> Result<()> {
    fs::create_dir_all(store.meta_dir(&seen.name))?;
    for (i, plan) in plans.iter().enumerate() {
        if let Some(record) = seen.isolation.records.get_mut(i).and_then(Value::as_object_mut) {
            record.insert("original_src".into(), Value::from(plan.host.to_string_lossy().into_owned()));
            record.insert("worktree_path".into(), Value::from(plan.path.to_string_lossy().into_owned()));
        }
    }
    store.write_isolation(&seen.name, &seen.isolation)
}

/// The continuity file: the recipe's binds moved to this host's paths, the import in its history.
fn record_continuity(store: &Store, file: &Path, seen: &mut Observed<'_>, plans: &[MountPlan]) -> Result<()> {
    let name = &seen.name;
    fs::create_dir_all(store.meta_dir(name))?;
    if let Some(recipe) = seen.continuity.recipe.as_mut() {
        move_binds(recipe, &moved_paths(store, name, &seen.account, plans));
    }
    let account = &seen.account;
    let evidence = Evidence::Imported(ImportedFrom {
        file: file.to_string_lossy().into_owned(),
        exported_by: account.exported_by.clone(),
        exported_at: account.exported_at.clone(),
        exported_from: account.home.clone(),
    });
    let (now, from) = (crate::base::time::now_rfc3339(), &seen.manifest.status);
    seen.continuity.history.push(history_entry(&now, Tool::Import, from, seen.status, Because::Imported, &evidence)?);
    write_json_atomic(&store.continuity_path(name), &seen.continuity)
}

/// Checks every bundle the plans bring in against the repository it goes into
/// (`Repo::verify_bundle`), each in a scratch repository under `scratch`: refused (exit 3) when
/// one is damaged or lacks what its commits need.
pub(super) fn verify_packs(plans: &[MountPlan], mounts_dir: &Path, scratch: &Path, file: &Path) -> Result<()> {
    let mut n = 0;
    let mut check = |into: &Path, bundle: &str, header: &BundleHeader| -> Result<()> {
        n += 1;
        let repo = Repo::open(into)?;
        repo.verify_bundle(&mounts_dir.join(bundle), header, &scratch.join(n.to_string())).map_err(|e| {
            let shown = crate::protocol::inert::inert_name(bundle).into_owned();
            refuse(file, format_args!("the bundle {shown} does not hold what it says ({e:#})"))
        })
    };
    for plan in plans {
        if let (Some(header), Some(bundle)) = (&plan.header, &plan.exported.saved.bundle) {
            check(&plan.host, bundle, header)?;
        }
        for sub in &plan.submodules {
            if let Some((bundle, header)) = &sub.bundle {
                check(&sub.source, bundle, header)?;
            }
        }
    }
    Ok(())
}

/// Makes one mount as its plan says; the notes on what could not be staged again.
pub(super) fn make_mount(name: &InstanceName, plan: &MountPlan, mounts_dir: &Path) -> Result<Vec<String>> {
    let saved = &plan.exported.saved;
    let host = Repo::open(&plan.host)?;
    if let Some(parent) = plan.path.parent() {
        fs::create_dir_all(parent)?;
    }
    let repo = match plan.kind {
        IsolationKind::Worktree => {
            if let (Some(header), Some(bundle)) = (&plan.header, &saved.bundle) {
                host.import_bundle_pack(&mounts_dir.join(bundle), header)?;
            }
            for (refname, id) in &plan.refs {
                host.create_ref(refname, id, WHY)?;
            }
            let (scratch, at) = plan.scratch.as_ref().expect("a worktree's plan has its scratch branch");
            host.create_ref(scratch, at, WHY)?;
            if !plan.reflog.is_empty() {
                host.write_reflog(scratch, &plan.reflog, WHY)?;
            }
            let on = plan.exported.head_branch.clone().unwrap_or_else(|| scratch.clone());
            host.add_worktree(name.as_str(), &plan.path, &on)?;
            let worktree = Repo::open(&plan.path)?;
            if plan.exported.head_branch.is_none() {
                worktree.detach_at(&plan.head)?;
            }
            worktree
        }
        IsolationKind::Clone => {
            let clone = host.clone_local_to(&plan.path, plan.origin_url.as_deref())?;
            if let (Some(header), Some(bundle)) = (&plan.header, &saved.bundle) {
                clone.import_bundle_pack(&mounts_dir.join(bundle), header)?;
            }
            for (refname, id) in &plan.refs {
                clone.set_ref(refname, id, WHY)?;
            }
            clone.write_stashes(&plan.stashes, WHY)?;
            match &plan.exported.head_branch {
                Some(branch) => {
                    clone.set_ref(branch, &plan.head, WHY)?;
                    clone.check_out_branch(branch)?;
                }
                None => clone.detach_at(&plan.head)?,
            }
            if !plan.reflog.is_empty() {
                clone.write_reflog("HEAD", &plan.reflog, WHY)?;
            }
            clone
        }
    };
    let (changes, mut notes) = index_changes(mounts_dir, saved)?;
    let gitfiles = put_files_back(mounts_dir, saved, &plan.path)?;
    for sub in &plan.submodules {
        make_submodule(&plan.path, repo.git_dir(), sub, mounts_dir)?;
    }
    let made_anew = |gitfile: &Path| plan.submodules.iter().any(|s| gitfile.parent() == Some(s.path.as_path()));
    for gitfile in gitfiles.into_iter().filter(|g| !made_anew(g)) {
        let shown = crate::protocol::path_bytes::NameBytes::of_path(&gitfile).text();
        notes.push(format!(
            "{}: left out, it linked to a submodule's git directory on the other host",
            crate::protocol::inert::inert_name(&shown)
        ));
    }
    if !changes.is_empty() {
        let list: Vec<IndexChange> = changes.iter().map(|c| c.change.clone()).collect();
        let done = repo.restage(None, &list)?;
        for (change, why) in &done.failed {
            let shown = crate::protocol::path_bytes::NameBytes::of_path(change.path()).text();
            notes.push(format!(
                "{}: its staged change could not be made again ({why})",
                crate::protocol::inert::inert_name(&shown)
            ));
        }
    }
    Ok(notes)
}

/// Each path of the other host the launch recipe may bind, and this host's: the mounts, their
/// repositories, the instance's data and socket directories, the home; the most specific first.
pub(super) fn moved_paths(
    store: &Store,
    name: &InstanceName,
    account: &ExportFile,
    plans: &[MountPlan],
) -> Vec<(PathBuf, PathBuf)> {
    let home = PathBuf::from(&account.home);
    let mut pairs = Vec::new();
    for plan in plans {
        pairs.push((PathBuf::from(&plan.exported.saved.path), plan.path.clone()));
        if let Some(src) = &plan.exported.saved.original_src {
            pairs.push((PathBuf::from(src), plan.host.clone()));
        }
    }
    let there = Store::layout_of(home);
    pairs.push((there.instance_dir(name), store.instance_dir(name)));
    pairs.push((there.socket_dir(name), store.socket_dir(name)));
    pairs.push((there.roots.home, store.roots.home.clone()));
    pairs
}

/// The recipe's binds of the other host's paths moved to this host's ([`moved_paths`]); a bind
/// whose container path was its host path (a repository's `.git`, which a worktree names by its
/// host path) is moved on both sides.
pub(super) fn move_binds(recipe: &mut LaunchRecipe, pairs: &[(PathBuf, PathBuf)]) {
    let moved = |path: &str| -> Option<String> {
        pairs.iter().find_map(|(from, to)| {
            let rest = Path::new(path).strip_prefix(from).ok()?;
            Some(if rest.as_os_str().is_empty() { to.clone() } else { to.join(rest) }.to_string_lossy().into_owned())
        })
    };
    let containers = std::iter::once(&mut recipe.role).chain(recipe.sidecar.as_mut());
    for mount in containers.flat_map(|c| c.spec.mounts.iter_mut()).filter(|m| m.kind == "bind") {
        let Some(source) = moved(&mount.source) else { continue };
        if mount.destination == mount.source {
            mount.destination = source.clone();
        }
        mount.source = source;
    }
}

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
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::import_checks::{self, check_docker_names, check_free_space, check_saved, check_tips, refuse, Layout};
use super::import_submodules::{make_submodule, numbered, plan_submodule, SubmodulePlan, SubmoduleSave, WHY};
use crate::base::exit::Exit;
use crate::base::steps::Steps;
use crate::base::tool::Tool;
use crate::engines::git::{BundleHeader, IndexChange, Repo};
use crate::protocol::evidence::{history_entry, Because, Evidence, Imported as ImportedFrom};
use crate::protocol::records::{Imported, MovedMount};
use crate::services::archive::{self, Staging, Verified};
use crate::services::claim::SessionClaim;
use crate::services::saved_work::put_back::{index_changes, put_files_back};
use crate::state::continuity::Continuity;
use crate::state::model::{IndexRow, Isolation, IsolationKind, Manifest, Status};
use crate::state::names::InstanceName;
use crate::state::recipe::LaunchRecipe;
use crate::state::store::{ensure_private_dir, write_json_atomic, Store};
use crate::tools::moves::export::{
    ExportFile, ExportedMount, CONTINUITY_ENTRY, EXPORT_ENTRY, ISOLATION_ENTRY, MANIFEST_ENTRY, MOUNTS_ENTRY,
};

/// `--dry-run` (or `--plan`) and `--repo DST=PATH`.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    pub dry_run: bool,
    pub repos: Vec<(String, PathBuf)>,
}

/// What one mount's import makes, decided before anything is made.
struct MountPlan {
    exported: ExportedMount,
    kind: IsolationKind,
    /// This host's repository the commits go into (a clone is made from it).
    host: PathBuf,
    /// Where jackin puts the mount here.
    path: PathBuf,
    header: Option<BundleHeader>,
    /// The commit the work tree was on.
    head: String,
    /// Refs to make besides the scratch branch, each at its commit.
    refs: Vec<(String, String)>,
    /// A worktree's scratch branch and where it is to be.
    scratch: Option<(String, String)>,
    /// The commits only the reflogs reached, oldest first; a clone's stashes, oldest first.
    reflog: Vec<String>,
    stashes: Vec<String>,
    /// A clone's `origin`: this host's repository's own `origin` URL (state.md).
    origin_url: Option<String>,
    /// The submodules that held commits only the session had, and those whose changed files
    /// were saved with the mount's, parents before the submodules inside them.
    submodules: Vec<SubmodulePlan>,
}

fn is_kept_part(name: &str) -> bool {
    [EXPORT_ENTRY, MANIFEST_ENTRY, ISOLATION_ENTRY, CONTINUITY_ENTRY].contains(&name)
}

fn part<T: DeserializeOwned>(file: &Path, verified: &Verified, name: &str) -> Result<Option<T>> {
    let Some(bytes) = verified.kept.get(name) else { return Ok(None) };
    serde_json::from_slice(bytes).map(Some).map_err(|e| refuse(file, format_args!("{name} does not parse: {e}")))
}

/// Brings in the session the archive `file` holds (see the module's doc); with `dry_run`, only
/// says what it would make.
pub fn import(store: &Store, file: &Path, options: &ImportOptions, steps: &dyn Steps) -> Result<Imported> {
    steps.done("checking the archive");
    let verified = archive::read(file, &is_kept_part, None)?;
    let layout = Layout::new(file, &verified.parts)?;
    layout.check()?;
    check_free_space(store, file, &verified)?;
    let account: ExportFile = part(file, &verified, EXPORT_ENTRY)?
        .ok_or_else(|| refuse(file, format_args!("the archive has no {EXPORT_ENTRY}")))?;
    let name = InstanceName::parse(&account.identity.container_base).map_err(|e| Exit::BadInput.wrap(e))?;
    layout.check_depth(&store.import_staging_dir(&name, std::process::id()))?;
    let mut manifest: Manifest = part(file, &verified, MANIFEST_ENTRY)?
        .ok_or_else(|| refuse(file, format_args!("the archive has no manifest")))?;
    if manifest.container_base != name.as_str() {
        return Err(refuse(file, format_args!("its manifest is of {}, not {name}", manifest.container_base)));
    }
    let status = Status::parse(&manifest.status).filter(|s| super::export::exportable(Some(*s))).ok_or_else(|| {
        refuse(file, format_args!("its manifest's status {:?} is not one an export writes", manifest.status))
    })?;
    let mut isolation: Isolation = part(file, &verified, ISOLATION_ENTRY)?.unwrap_or_default();
    let mut continuity: Continuity = part(file, &verified, CONTINUITY_ENTRY)?.unwrap_or_default();
    check_docker_names(&name, &manifest, &continuity, file)?;
    if isolation.records.len() != account.mounts.len() {
        return Err(refuse(file, format_args!("its isolation records and its mounts do not match")));
    }
    // Another import (or any holder) at work on the session first: what it has made so far is
    // not a half-made import to purge, and a purge would take the session from under it.
    SessionClaim::take(store, &name, true)?;
    refuse_clash(store, &name, file, false)?;
    let sources = crate::state::config::mounted_sources(&store.roots.config_dir)?;
    // Checking the archive, unpacking it, then each mount.
    steps.planned(2 + account.mounts.len());
    let mut plans = Vec::new();
    for exported in &account.mounts {
        plans.push(plan_mount(store, &name, exported, &verified, &layout, options, &sources, file)?);
    }
    let mut imported = Imported {
        identity: account.identity.clone(),
        file: file.to_string_lossy().into_owned(),
        exported_by: account.exported_by.clone(),
        status: manifest.status.clone(),
        mounts: plans.iter().map(moved).collect(),
        auth: account.auth.clone(),
        notes: Vec::new(),
        dry_run: options.dry_run,
    };
    if !account.auth.is_empty() {
        imported.notes.push(format!("it came with the agents' credentials: {}", account.auth.join(", ")));
    }
    if continuity.recipe.is_none() {
        imported.notes.push("it has no launch recipe: only a session that was kept with one can be resumed".into());
    }
    if options.dry_run {
        return Ok(imported);
    }

    // Held until the session is whole here: no purge, keep or resume takes it half-made, and a
    // second import of it is refused as busy.
    fs::create_dir_all(store.data_dir())?;
    let claim = SessionClaim::take(store, &name, false)?;
    refuse_clash(store, &name, file, claim.made_lock())?;
    steps.done("unpacking");
    let imports = store.imports_dir();
    let made_imports = fs::symlink_metadata(&imports).is_err();
    ensure_private_dir(&imports)?;
    let staging = Staging::new(store.import_staging_dir(&name, std::process::id()))?;
    let mounts_dir = staging.0.join(MOUNTS_ENTRY);
    // Unpacked, and the packs checked in staging: a damaged or incomplete one refuses the
    // import before any repository of this host or the home changes.
    let staged = archive::read(file, &is_kept_part, Some(&staging.0))
        .and_then(|_| verify_packs(&plans, &mounts_dir, &staging.0.join(".verify"), file));
    if let Err(refused) = staged {
        drop(staging);
        if made_imports {
            let _ = fs::remove_dir(&imports);
        }
        return Err(refused);
    }
    crash_point("unpacked");
    let instance_dir = store.instance_dir(&name);
    let unpacked = staging.0.join("instance");
    if !unpacked.exists() {
        fs::DirBuilder::new().mode(0o700).create(&unpacked)?;
    }
    fs::rename(&unpacked, &instance_dir)
        .with_context(|| format!("moving the session to {}", instance_dir.display()))?;
    crash_point("moved");
    let made = (|| -> Result<()> {
        fs::create_dir_all(store.meta_dir(&name))?;
        // The isolation records first, with this host's paths: what a purge of a half-made
        // import reads to find the worktrees and branches it made.
        for (i, plan) in plans.iter().enumerate() {
            if let Some(record) = isolation.records.get_mut(i).and_then(Value::as_object_mut) {
                record.insert("original_src".into(), Value::from(plan.host.to_string_lossy().into_owned()));
                record.insert("worktree_path".into(), Value::from(plan.path.to_string_lossy().into_owned()));
            }
        }
        if !isolation.records.is_empty() {
            store.write_isolation(&name, &isolation)?;
        }
        for plan in &plans {
            steps.done(&plan.exported.saved.mount_dst);
            let notes = make_mount(&name, plan, &mounts_dir)?;
            imported.notes.extend(notes);
        }
        crash_point("mounts");
        let now = crate::base::time::now_rfc3339();
        if let Some(recipe) = continuity.recipe.as_mut() {
            move_binds(recipe, &moved_paths(store, &name, &account, &plans));
        }
        let evidence = Evidence::Imported(ImportedFrom {
            file: file.to_string_lossy().into_owned(),
            exported_by: account.exported_by.clone(),
            exported_at: account.exported_at.clone(),
            exported_from: account.home.clone(),
        });
        continuity.history.push(history_entry(
            &now,
            Tool::Import,
            &manifest.status,
            status,
            Because::Imported,
            &evidence,
        )?);
        write_json_atomic(&store.continuity_path(&name), &continuity)?;
        manifest.updated_at = now;
        store.write_manifest(&name, &manifest)?;
        crash_point("recorded");
        store.update_index(|index| {
            index.upsert(IndexRow::from_manifest(&manifest));
            Ok(((), true))
        })
    })();
    made.map_err(|e| {
        e.context(format!(
            "the import of {name} stopped half-way: what it made is under {}; jackin-purge {name} \
             --discard-unfinished removes it",
            instance_dir.display()
        ))
    })?;
    Ok(imported)
}

/// An instance of this name here (an index row, a data or socket directory, a name lock) refuses
/// the import: the same session imported twice, or an id that clashes. One with no index row is
/// what an import (or a launch) that stopped half-way left, and the refusal says how to remove it.
/// `own_lock`: the name lock is this run's own claim, not a clash.
fn refuse_clash(store: &Store, name: &InstanceName, file: &Path, own_lock: bool) -> Result<()> {
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
fn crash_point(step: &str) {
    crate::base::crash::point(crate::base::tool::Tool::Import, CRASH_POINTS, step);
}

/// An import's crash points, in the order a run passes them.
pub const CRASH_POINTS: &[&str] = &["unpacked", "moved", "mounts", "recorded"];

/// A remote URL as it is compared: without a trailing `/` or `.git`.
fn comparable(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    url.strip_suffix(".git").unwrap_or(url).to_owned()
}

/// This host's repository for an exported mount: `--repo` for its destination, else the one
/// repository among those jackin's config mounts that has one of its remote URLs.
fn find_host(exported: &ExportedMount, options: &ImportOptions, sources: &[PathBuf], file: &Path) -> Result<PathBuf> {
    let dst = &exported.saved.mount_dst;
    if let Some((_, path)) = options.repos.iter().find(|(d, _)| d == dst) {
        return Ok(path.clone());
    }
    let wanted: Vec<String> = exported.remotes.iter().map(|r| comparable(&r.url)).collect();
    if wanted.is_empty() {
        return Err(refuse(
            file,
            format_args!("{dst}: its repository had no remote; --repo {dst}=PATH names one here"),
        ));
    }
    let found: Vec<&PathBuf> = sources
        .iter()
        .filter(|src| {
            Repo::open(src)
                .ok()
                .filter(|r| !r.is_bare())
                .is_some_and(|r| r.remote_urls().iter().any(|(_, url)| wanted.contains(&comparable(url))))
        })
        .collect();
    match found.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(refuse(
            file,
            format_args!(
                "{dst}: none of the {} repositories jackin's config mounts has the remote {}; --repo {dst}=PATH names one",
                sources.len(),
                exported.remotes.iter().map(|r| r.url.as_str()).collect::<Vec<_>>().join(" or ")
            ),
        )),
        many => Err(refuse(
            file,
            format_args!(
                "{dst}: {} repositories of jackin's config have its remote ({}); --repo {dst}=PATH says which",
                many.len(),
                many.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

#[allow(clippy::too_many_arguments)]
fn plan_mount(
    store: &Store,
    name: &InstanceName,
    exported: &ExportedMount,
    verified: &Verified,
    layout: &Layout<'_>,
    options: &ImportOptions,
    sources: &[PathBuf],
    file: &Path,
) -> Result<MountPlan> {
    let saved = &exported.saved;
    let dst = &saved.mount_dst;
    let kind = match saved.isolation.as_str() {
        "worktree" => IsolationKind::Worktree,
        "clone" => IsolationKind::Clone,
        other => return Err(refuse(file, format_args!("{dst}: an isolation of kind {other:?}"))),
    };
    let host = find_host(exported, options, sources, file)?;
    let repo = match Repo::open(&host) {
        Ok(repo) if !repo.is_bare() => repo,
        _ => return Err(refuse(file, format_args!("{dst}: {} is not a repository with a work tree", host.display()))),
    };
    let path = store
        .mount_dir(name, kind.as_str(), dst)
        .ok_or_else(|| refuse(file, format_args!("{dst:?} is not a plain absolute mount path")))?;
    check_saved(exported, layout, &path, file)?;
    let header = match &saved.bundle {
        Some(bundle) => Some(
            verified
                .bundles
                .get(&format!("{MOUNTS_ENTRY}/{bundle}"))
                .cloned()
                .ok_or_else(|| refuse(file, format_args!("{dst}: its bundle {bundle} is not in the archive")))?,
        ),
        None => None,
    };
    let tips: Vec<(String, String)> = header.iter().flat_map(|h| h.refs.iter().cloned()).collect();
    check_tips(&tips, dst, file)?;
    let in_bundle = |id: &str| tips.iter().any(|(_, tip)| tip == id);
    let missing = header.as_ref().map(|h| repo.missing_commits(&h.prerequisites)).unwrap_or_default();
    if let Some(first) = missing.first() {
        return Err(refuse(
            file,
            format_args!(
                "{dst}: {} lacks {} commit(s) the session's commits build on ({}…): fetch its remote (or push them \
                 from the other host) first",
                host.display(),
                missing.len(),
                &first[..12.min(first.len())]
            ),
        ));
    }
    let head = saved.head.clone().ok_or_else(|| refuse(file, format_args!("{dst}: no commit recorded")))?;
    if !(repo.has_commit(&head) || in_bundle(&head)) {
        return Err(refuse(
            file,
            format_args!(
                "{dst}: {} does not have the commit the work tree was on ({}): fetch its remote first",
                host.display(),
                &head[..12.min(head.len())]
            ),
        ));
    }
    let numbered = |prefix: &str| numbered(&tips, prefix);
    let mut plan = MountPlan {
        exported: exported.clone(),
        kind,
        host: host.clone(),
        path,
        header: header.clone(),
        head: head.clone(),
        refs: Vec::new(),
        scratch: None,
        reflog: numbered("refs/jackin/reflog/"),
        stashes: numbered("refs/stashes/stash-"),
        origin_url: None,
        submodules: Vec::new(),
    };
    for saved in &saved.submodules {
        plan.submodules.push(plan_submodule(&repo, &host, dst, SubmoduleSave::Bundled(saved), verified, file)?);
    }
    for changed in &exported.changed_submodules {
        plan.submodules.push(plan_submodule(&repo, &host, dst, SubmoduleSave::Changed(changed), verified, file)?);
    }
    plan.submodules.sort_by_key(|s| s.path.components().count());
    let shared = |name: &String| import_checks::shared_ref(name);
    match kind {
        IsolationKind::Worktree => {
            if exported.scratch_branch != name.scratch_branch() {
                return Err(refuse(
                    file,
                    format_args!("{dst}: its record names the branch {}", exported.scratch_branch),
                ));
            }
            let scratch = format!("refs/heads/{}", exported.scratch_branch);
            if !repo.ref_name_free(&scratch) || repo.has_worktree_named(name.as_str()) {
                return Err(refuse(
                    file,
                    format_args!("{dst}: {} has the branch or worktree of {name} already", host.display()),
                ));
            }
            let from_bundle = tips.iter().find(|(n, _)| *n == scratch).map(|(_, id)| id.clone());
            let kept = exported.scratch_tip.clone().filter(|id| repo.has_commit(id) || in_bundle(id));
            plan.scratch = Some((scratch.clone(), from_bundle.or(kept).unwrap_or_else(|| head.clone())));
            let mut wanted: Vec<(String, String)> =
                tips.iter().filter(|(n, _)| shared(n) && *n != scratch).cloned().collect();
            if let Some(branch) = exported.head_branch.as_ref().filter(|b| **b != scratch) {
                if !wanted.iter().any(|(n, _)| n == branch) {
                    wanted.push((branch.clone(), head.clone()));
                }
            }
            for (refname, id) in wanted {
                match repo.ref_commit(&refname) {
                    Some(there) if there == id => {}
                    Some(there) => {
                        return Err(refuse(
                            file,
                            format_args!(
                                "{dst}: {refname} is at {} in {}, the session had it at {}",
                                &there[..12],
                                host.display(),
                                &id[..12.min(id.len())]
                            ),
                        ))
                    }
                    None if !repo.ref_name_free(&refname) => {
                        return Err(refuse(file, format_args!("{dst}: {refname} cannot be made in {}", host.display())))
                    }
                    None => plan.refs.push((refname, id)),
                }
            }
        }
        IsolationKind::Clone => {
            plan.origin_url = repo.remote_urls().into_iter().find(|(n, _)| n == "origin").map(|(_, url)| url);
            plan.refs = tips.iter().filter(|(n, _)| shared(n)).cloned().collect();
        }
    }
    Ok(plan)
}

/// Checks every bundle the plans bring in against the repository it goes into
/// (`Repo::verify_bundle`), each in a scratch repository under `scratch`: refused (exit 3) when
/// one is damaged or lacks what its commits need.
fn verify_packs(plans: &[MountPlan], mounts_dir: &Path, scratch: &Path, file: &Path) -> Result<()> {
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

/// Makes one mount as its plan says; the notes on what could not be staged again.
fn make_mount(name: &InstanceName, plan: &MountPlan, mounts_dir: &Path) -> Result<Vec<String>> {
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
fn moved_paths(
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
    pairs.push((home.join("data").join(name.as_str()), store.instance_dir(name)));
    pairs.push((home.join("sockets").join(name.as_str()), store.socket_dir(name)));
    pairs.push((home, store.roots.home.clone()));
    pairs
}

/// The recipe's binds of the other host's paths moved to this host's ([`moved_paths`]); a bind
/// whose container path was its host path (a repository's `.git`, which a worktree names by its
/// host path) is moved on both sides.
fn move_binds(recipe: &mut LaunchRecipe, pairs: &[(PathBuf, PathBuf)]) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_urls_compare_without_a_trailing_git_or_slash() {
        assert_eq!(comparable("https://example.invalid/o/app.git"), comparable("https://example.invalid/o/app/"));
        assert_ne!(comparable("https://example.invalid/o/app"), comparable("https://example.invalid/o/apps"));
    }
}

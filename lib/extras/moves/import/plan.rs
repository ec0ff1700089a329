//! An import's plan, decided from what import_observe.rs read of the archive and what
//! import_hosts.rs saw of this host's repositories, and from nothing else: per mount, which
//! repository takes its commits, where jackin puts it, which refs it makes; then the steps, in
//! the order `import_apply.rs` walks them. Everything that refuses the import is decided here,
//! before anything is written.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::checks::{self, check_saved, check_tips, refuse, Layout};
use super::hosts::{bundle_header, HostView, MountView, RefThere};
use super::submodules::{numbered, plan_submodule, SubmodulePlan, SubmoduleSave};
use crate::engines::git::BundleHeader;
use crate::extras::moves::export::ExportedMount;
use crate::protocol::assessment::plural;
use crate::state::model::IsolationKind;
use crate::state::names::InstanceName;
use crate::state::store::Store;

/// `--dry-run` (or `--plan`) and `--repo DST=PATH`.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    pub dry_run: bool,
    pub repos: Vec<(String, PathBuf)>,
}

/// What one mount's import makes, decided before anything is made.
#[derive(Debug)]
pub(super) struct MountPlan {
    pub(super) exported: ExportedMount,
    pub(super) kind: IsolationKind,
    /// This host's repository the commits go into (a clone is made from it).
    pub(super) host: PathBuf,
    /// Where jackin puts the mount here.
    pub(super) path: PathBuf,
    pub(super) header: Option<BundleHeader>,
    /// The commit the work tree was on.
    pub(super) head: String,
    /// Refs to make besides the scratch branch, each at its commit.
    pub(super) refs: Vec<(String, String)>,
    /// A worktree's scratch branch and where it is to be.
    pub(super) scratch: Option<(String, String)>,
    /// The commits only the reflogs reached, oldest first; a clone's stashes, oldest first.
    pub(super) reflog: Vec<String>,
    pub(super) stashes: Vec<String>,
    /// A clone's `origin`: this host's repository's own `origin` URL (state.md).
    pub(super) origin_url: Option<String>,
    /// The submodules that held commits only the session had, and those whose changed files
    /// were saved with the mount's, parents before the submodules inside them.
    pub(super) submodules: Vec<SubmodulePlan>,
}

/// One step of an import, in the order it is made: a purge of an import that stopped half-way
/// can follow it (docs/reference.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ImportStep {
    /// The archive read again into the unpacking directory, its packs checked there.
    Unpack { into: PathBuf },
    /// The session's files moved into the data directory.
    MoveIn { to: PathBuf },
    /// The isolation records, with this host's paths.
    RecordIsolation,
    /// One mount made (the index into [`ImportPlan::mounts`]).
    MakeMount(usize),
    /// The continuity file: the recipe's binds moved here, the import in its history.
    RecordContinuity,
    /// The manifest, its status as kept.
    RecordManifest,
    /// The index row, last: the session is whole.
    AddIndexRow,
}

/// An import decided: each mount's plan and the steps that make them.
#[derive(Debug)]
pub(super) struct ImportPlan {
    pub(super) mounts: Vec<MountPlan>,
    pub(super) steps: Vec<ImportStep>,
}

/// What the plan is decided from: the archive's mounts and what it holds, and where this home
/// puts the session.
pub(super) struct Inputs<'a> {
    pub(super) store: &'a Store,
    pub(super) name: &'a InstanceName,
    pub(super) file: &'a Path,
    pub(super) mounts: &'a [ExportedMount],
    pub(super) bundles: &'a BTreeMap<String, BundleHeader>,
    pub(super) layout: &'a Layout<'a>,
}

/// The plan of an import (see the module's doc); `views` has one entry per mount.
pub(super) fn plan(inputs: &Inputs<'_>, views: &[MountView], pid: u32) -> Result<ImportPlan> {
    let mut mounts = Vec::new();
    for (exported, view) in inputs.mounts.iter().zip(views) {
        mounts.push(plan_mount(inputs, exported, view)?);
    }
    let (store, name) = (inputs.store, inputs.name);
    let mut steps = vec![
        ImportStep::Unpack { into: store.import_staging_dir(name, pid) },
        ImportStep::MoveIn { to: store.instance_dir(name) },
    ];
    if !mounts.is_empty() {
        steps.push(ImportStep::RecordIsolation);
    }
    steps.extend((0..mounts.len()).map(ImportStep::MakeMount));
    steps.extend([ImportStep::RecordContinuity, ImportStep::RecordManifest, ImportStep::AddIndexRow]);
    Ok(ImportPlan { mounts, steps })
}

impl ImportPlan {
    /// A step in words, as the record lists it.
    pub(super) fn describe(&self, step: &ImportStep) -> String {
        match step {
            // Where, without the process's own number: a dry run and the run say the same.
            ImportStep::Unpack { into } => format!(
                "unpack the archive under {} and check its packs against the repositories",
                into.parent().unwrap_or(into).display()
            ),
            ImportStep::MoveIn { to } => format!("move the session's files to {}", to.display()),
            ImportStep::RecordIsolation => "write the isolation records with this host's paths".into(),
            ImportStep::MakeMount(i) => self.mounts[*i].to_string(),
            ImportStep::RecordContinuity => {
                "write the continuity file: the launch recipe's binds moved to this host's paths, the import in its \
                 history"
                    .into()
            }
            ImportStep::RecordManifest => "write the manifest".into(),
            ImportStep::AddIndexRow => "add the index row".into(),
        }
    }
}

impl fmt::Display for MountPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let saved = &self.exported.saved;
        let dst = crate::protocol::inert::inert_name(&saved.mount_dst);
        let (what, on) = match (self.kind, &self.scratch) {
            (IsolationKind::Worktree, Some((scratch, _))) => {
                ("a worktree", self.exported.head_branch.as_ref().unwrap_or(scratch))
            }
            _ => ("a clone", self.exported.head_branch.as_ref().unwrap_or(&self.head)),
        };
        let commits = saved.bundle_contents.as_ref().map_or(0, |b| b.commits);
        write!(
            f,
            "make {dst}: {what} of {} at {} on {on} · {} · {} · {}",
            self.host.display(),
            self.path.display(),
            plural(commits, "commit", "commits"),
            plural(self.refs.len() + usize::from(self.scratch.is_some()), "ref", "refs"),
            plural(saved.files.len(), "file", "files"),
        )?;
        if !self.submodules.is_empty() {
            write!(f, " · {}", plural(self.submodules.len(), "submodule", "submodules"))?;
        }
        Ok(())
    }
}

/// The one repository of `view` that takes the mount: refused when there is none, more than one,
/// or one that is not a repository with a work tree.
fn pick_host<'v>(exported: &ExportedMount, view: &'v MountView, file: &Path) -> Result<&'v HostView> {
    let dst = &exported.saved.mount_dst;
    let remotes = || exported.remotes.iter().map(|r| r.url.as_str()).collect::<Vec<_>>().join(" or ");
    let host = match view.candidates.as_slice() {
        [one] => one,
        [] if exported.remotes.is_empty() => {
            return Err(refuse(
                file,
                format_args!("{dst}: its repository had no remote; --repo {dst}=PATH names one here"),
            ))
        }
        [] => {
            return Err(refuse(
                file,
                format_args!(
                    "{dst}: none of the {} repositories jackin's config mounts has the remote {}; --repo {dst}=PATH \
                     names one",
                    view.sources,
                    remotes()
                ),
            ))
        }
        many => {
            let paths: Vec<String> = many.iter().map(|h| h.path.display().to_string()).collect();
            return Err(refuse(
                file,
                format_args!(
                    "{dst}: {} repositories of jackin's config have its remote ({}); --repo {dst}=PATH says which",
                    many.len(),
                    paths.join(", ")
                ),
            ));
        }
    };
    if !host.usable {
        return Err(refuse(file, format_args!("{dst}: {} is not a repository with a work tree", host.path.display())));
    }
    Ok(host)
}

fn plan_mount(inputs: &Inputs<'_>, exported: &ExportedMount, view: &MountView) -> Result<MountPlan> {
    let file = inputs.file;
    let saved = &exported.saved;
    let dst = &saved.mount_dst;
    let kind = match saved.isolation.as_str() {
        "worktree" => IsolationKind::Worktree,
        "clone" => IsolationKind::Clone,
        other => return Err(refuse(file, format_args!("{dst}: an isolation of kind {other:?}"))),
    };
    let host = pick_host(exported, view, file)?;
    let path = inputs
        .store
        .mount_dir(inputs.name, kind.as_str(), dst)
        .ok_or_else(|| refuse(file, format_args!("{dst:?} is not a plain absolute mount path")))?;
    check_saved(exported, inputs.layout, &path, file)?;
    let header = match &saved.bundle {
        Some(bundle) => Some(
            bundle_header(inputs.bundles, bundle)
                .cloned()
                .ok_or_else(|| refuse(file, format_args!("{dst}: its bundle {bundle} is not in the archive")))?,
        ),
        None => None,
    };
    let tips: Vec<(String, String)> = header.iter().flat_map(|h| h.refs.iter().cloned()).collect();
    check_tips(&tips, dst, file)?;
    let head = commits_there(host, exported, &tips, file)?;
    let numbered = |prefix: &str| numbered(&tips, prefix);
    let mut plan = MountPlan {
        exported: exported.clone(),
        kind,
        host: host.path.clone(),
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
    let saves = saved.submodules.iter().map(SubmoduleSave::Bundled);
    let saves = saves.chain(exported.changed_submodules.iter().map(SubmoduleSave::Changed));
    for (i, save) in saves.enumerate() {
        let seen = host.submodules.get(i).and_then(Option::as_ref);
        plan.submodules.push(plan_submodule(host, dst, save, seen, inputs.bundles, file)?);
    }
    plan.submodules.sort_by_key(|s| s.path.components().count());
    match kind {
        IsolationKind::Worktree => plan_worktree_refs(host, inputs.name, exported, &tips, &mut plan, file)?,
        IsolationKind::Clone => {
            plan.origin_url = host.origin_url.clone();
            plan.refs = tips.iter().filter(|(n, _)| checks::shared_ref(n)).cloned().collect();
        }
    }
    Ok(plan)
}

/// What the mount's commits need of the host repository: what its bundle builds on, and the
/// commit its work tree was on (there, or in the bundle). Returns that commit.
fn commits_there(host: &HostView, exported: &ExportedMount, tips: &[(String, String)], file: &Path) -> Result<String> {
    let dst = &exported.saved.mount_dst;
    if let Some(first) = host.missing.first() {
        return Err(refuse(
            file,
            format_args!(
                "{dst}: {} lacks {} commit(s) the session's commits build on ({}…): fetch its remote (or push them \
                 from the other host) first",
                host.path.display(),
                host.missing.len(),
                &first[..12.min(first.len())]
            ),
        ));
    }
    let head = exported.saved.head.clone().ok_or_else(|| refuse(file, format_args!("{dst}: no commit recorded")))?;
    if !(host.has.contains(&head) || tips.iter().any(|(_, tip)| *tip == head)) {
        return Err(refuse(
            file,
            format_args!(
                "{dst}: {} does not have the commit the work tree was on ({}): fetch its remote first",
                host.path.display(),
                &head[..12.min(head.len())]
            ),
        ));
    }
    Ok(head)
}

/// A worktree's refs: its scratch branch (free here, at its tip from the bundle, else where it
/// was when that is here, else the work tree's commit), and the branches and tags it had, each
/// made only where this host's repository has none of the name or has it at the same commit.
fn plan_worktree_refs(
    host: &HostView,
    name: &InstanceName,
    exported: &ExportedMount,
    tips: &[(String, String)],
    plan: &mut MountPlan,
    file: &Path,
) -> Result<()> {
    let (dst, head) = (&exported.saved.mount_dst, plan.head.clone());
    let in_bundle = |id: &str| tips.iter().any(|(_, tip)| tip == id);
    let shared = |name: &String| checks::shared_ref(name);
    if exported.scratch_branch != name.scratch_branch() {
        return Err(refuse(file, format_args!("{dst}: its record names the branch {}", exported.scratch_branch)));
    }
    let scratch = format!("refs/heads/{}", exported.scratch_branch);
    let there = |refname: &str| host.refs.get(refname).cloned().unwrap_or(RefThere::Blocked);
    if there(&scratch) != RefThere::Free || host.worktree_named {
        return Err(refuse(
            file,
            format_args!("{dst}: {} has the branch or worktree of {name} already", host.path.display()),
        ));
    }
    let from_bundle = tips.iter().find(|(n, _)| *n == scratch).map(|(_, id)| id.clone());
    let kept = exported.scratch_tip.clone().filter(|id| host.has.contains(id) || in_bundle(id));
    plan.scratch = Some((scratch.clone(), from_bundle.or(kept).unwrap_or_else(|| head.clone())));
    let mut wanted: Vec<(String, String)> = tips.iter().filter(|(n, _)| shared(n) && *n != scratch).cloned().collect();
    if let Some(branch) = exported.head_branch.as_ref().filter(|b| **b != scratch) {
        if !wanted.iter().any(|(n, _)| n == branch) {
            wanted.push((branch.clone(), head.clone()));
        }
    }
    for (refname, id) in wanted {
        match there(&refname) {
            RefThere::At(at) if at == id => {}
            RefThere::At(at) => {
                return Err(refuse(
                    file,
                    format_args!(
                        "{dst}: {refname} is at {} in {}, the session had it at {}",
                        &at[..12.min(at.len())],
                        host.path.display(),
                        &id[..12.min(id.len())]
                    ),
                ))
            }
            RefThere::Blocked => {
                return Err(refuse(file, format_args!("{dst}: {refname} cannot be made in {}", host.path.display())))
            }
            RefThere::Free => plan.refs.push((refname, id)),
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

//! An import's plan, one mount at a time: which repository of this host takes its commits,
//! where jackin puts it, which refs it makes, and everything that refuses it, decided before
//! anything is written.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::import_checks::{self, check_saved, check_tips, refuse, Layout};
use super::import_submodules::{numbered, plan_submodule, SubmodulePlan, SubmoduleSave};
use crate::engines::git::{BundleHeader, Repo};
use crate::services::archive::Verified;
use crate::state::model::IsolationKind;
use crate::state::names::InstanceName;
use crate::state::store::Store;
use crate::tools::moves::export::{ExportedMount, MOUNTS_ENTRY};

/// `--dry-run` (or `--plan`) and `--repo DST=PATH`.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    pub dry_run: bool,
    pub repos: Vec<(String, PathBuf)>,
}

/// What one mount's import makes, decided before anything is made.
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

/// A remote URL as it is compared: without a trailing `/` or `.git`.
pub(super) fn comparable(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    url.strip_suffix(".git").unwrap_or(url).to_owned()
}

/// This host's repository for an exported mount: `--repo` for its destination, else the one
/// repository among those jackin's config mounts that has one of its remote URLs.
pub(super) fn find_host(
    exported: &ExportedMount,
    options: &ImportOptions,
    sources: &[PathBuf],
    file: &Path,
) -> Result<PathBuf> {
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
pub(super) fn plan_mount(
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
    let head = commits_there(&repo, &host, exported, header.as_ref(), &tips, file)?;
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
    match kind {
        IsolationKind::Worktree => plan_worktree_refs(&repo, name, exported, &tips, &mut plan, file)?,
        IsolationKind::Clone => {
            plan.origin_url = repo.remote_urls().into_iter().find(|(n, _)| n == "origin").map(|(_, url)| url);
            plan.refs = tips.iter().filter(|(n, _)| import_checks::shared_ref(n)).cloned().collect();
        }
    }
    Ok(plan)
}

/// What the mount's commits need of the host repository: what its bundle builds on, and the
/// commit its work tree was on (there, or in the bundle). Returns that commit.
pub(super) fn commits_there(
    repo: &Repo,
    host: &Path,
    exported: &ExportedMount,
    header: Option<&BundleHeader>,
    tips: &[(String, String)],
    file: &Path,
) -> Result<String> {
    let dst = &exported.saved.mount_dst;
    let missing = header.map(|h| repo.missing_commits(&h.prerequisites)).unwrap_or_default();
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
    let head = exported.saved.head.clone().ok_or_else(|| refuse(file, format_args!("{dst}: no commit recorded")))?;
    if !(repo.has_commit(&head) || tips.iter().any(|(_, tip)| *tip == head)) {
        return Err(refuse(
            file,
            format_args!(
                "{dst}: {} does not have the commit the work tree was on ({}): fetch its remote first",
                host.display(),
                &head[..12.min(head.len())]
            ),
        ));
    }
    Ok(head)
}

/// A worktree's refs: its scratch branch (free here, at its tip from the bundle, else where it
/// was when that is here, else the work tree's commit), and the branches and tags it had, each
/// made only where this host's repository has none of the name or has it at the same commit.
pub(super) fn plan_worktree_refs(
    repo: &Repo,
    name: &InstanceName,
    exported: &ExportedMount,
    tips: &[(String, String)],
    plan: &mut MountPlan,
    file: &Path,
) -> Result<()> {
    let (dst, host, head) = (&exported.saved.mount_dst, &plan.host, plan.head.clone());
    let in_bundle = |id: &str| tips.iter().any(|(_, tip)| tip == id);
    let shared = |name: &String| import_checks::shared_ref(name);
    if exported.scratch_branch != name.scratch_branch() {
        return Err(refuse(file, format_args!("{dst}: its record names the branch {}", exported.scratch_branch)));
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
    let mut wanted: Vec<(String, String)> = tips.iter().filter(|(n, _)| shared(n) && *n != scratch).cloned().collect();
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
    Ok(())
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

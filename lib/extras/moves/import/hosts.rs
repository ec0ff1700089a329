//! An import's look at this host's repositories, once, before anything is decided: for each
//! mount of the archive, the repositories that could take it (the one `--repo` names, else those
//! of jackin's config whose remote URLs meet the exported ones) and, of each, everything the
//! mount's plan asks of it (import_plan.rs decides from this alone).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::engines::git::{BundleHeader, Repo, DETACHED_HEAD};
use crate::extras::moves::archive::Verified;
use crate::extras::moves::export::{ExportedMount, MOUNTS_ENTRY};
use crate::protocol::path_bytes::NameBytes;

use super::checks::plain;

/// Where a ref a plan may make stands in a repository of this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum RefThere {
    /// There, at this commit.
    At(String),
    /// Not there, and it can be made.
    Free,
    /// Not there as a commit, and it cannot be made (a ref of another kind, or a name that
    /// clashes with a directory of refs).
    Blocked,
}

/// One mount of the archive as this host sees it.
#[derive(Debug, Clone, Default)]
pub(super) struct MountView {
    /// The repositories of jackin's config (for the refusals' words).
    pub(super) sources: usize,
    /// The repositories that could take it: `--repo`'s, else those whose remotes meet its.
    pub(super) candidates: Vec<HostView>,
}

/// A repository of this host, and what one mount's plan asks of it.
#[derive(Debug, Clone, Default)]
pub(super) struct HostView {
    pub(super) path: PathBuf,
    /// A repository with a work tree: nothing else is asked of anything else.
    pub(super) usable: bool,
    pub(super) git_dir: PathBuf,
    /// The commits the mount's bundle builds on that it lacks.
    pub(super) missing: Vec<String>,
    /// Of the commits the mount names (where its work tree and its scratch branch were), those
    /// it has.
    pub(super) has: BTreeSet<String>,
    /// Each ref the mount could make: the bundle's, the branch HEAD was on, the scratch branch.
    pub(super) refs: BTreeMap<String, RefThere>,
    /// A worktree of the instance's name is registered there.
    pub(super) worktree_named: bool,
    pub(super) origin_url: Option<String>,
    /// Its git directory of each submodule the mount saved, in the archive's order (bundled,
    /// then changed); `None` where the archive's name is not one to look up.
    pub(super) submodules: Vec<Option<SubmoduleView>>,
}

/// This host's git directory of one submodule of a mount.
#[derive(Debug, Clone, Default)]
pub(super) struct SubmoduleView {
    /// `None`: the repository has none.
    pub(super) source: Option<PathBuf>,
    pub(super) missing: Vec<String>,
    pub(super) has: BTreeSet<String>,
}

/// A remote URL as it is compared: without a trailing `/` or `.git`.
pub(super) fn comparable(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    url.strip_suffix(".git").unwrap_or(url).to_owned()
}

/// Looks at this host's repositories for every mount of the archive (see the module's doc):
/// `repos` are `--repo DST=PATH`'s, `sources` the repositories jackin's config mounts, and
/// `instance` names the worktree a mount's repository must not have yet.
pub(super) fn look(
    mounts: &[ExportedMount],
    verified: &Verified,
    repos: &[(String, PathBuf)],
    sources: &[PathBuf],
    instance: &str,
) -> Vec<MountView> {
    let with_urls: Vec<(PathBuf, Vec<String>)> = sources
        .iter()
        .map(|src| {
            let urls = Repo::open(src).ok().filter(|r| !r.is_bare()).map(|r| r.remote_urls()).unwrap_or_default();
            (src.clone(), urls.into_iter().map(|(_, url)| comparable(&url)).collect())
        })
        .collect();
    mounts
        .iter()
        .map(|exported| {
            let dst = &exported.saved.mount_dst;
            let paths: Vec<PathBuf> = match repos.iter().find(|(d, _)| d == dst) {
                Some((_, path)) => vec![path.clone()],
                None => {
                    let wanted: Vec<String> = exported.remotes.iter().map(|r| comparable(&r.url)).collect();
                    with_urls
                        .iter()
                        .filter(|(_, urls)| urls.iter().any(|u| wanted.contains(u)))
                        .map(|(p, _)| p.clone())
                        .collect()
                }
            };
            let candidates = paths.iter().map(|p| look_at(p, exported, verified, instance)).collect();
            MountView { sources: sources.len(), candidates }
        })
        .collect()
}

/// The header of the bundle `name` (as a mount's save names it, under the archive's `mounts/`),
/// when the archive has it: the one lookup the look and the plan share.
pub(super) fn bundle_header<'a>(bundles: &'a BTreeMap<String, BundleHeader>, name: &str) -> Option<&'a BundleHeader> {
    bundles.get(&format!("{MOUNTS_ENTRY}/{name}"))
}

fn look_at(path: &Path, exported: &ExportedMount, verified: &Verified, instance: &str) -> HostView {
    let mut view = HostView { path: path.to_path_buf(), ..HostView::default() };
    let Some(repo) = Repo::open(path).ok().filter(|r| !r.is_bare()) else { return view };
    let saved = &exported.saved;
    let header = saved.bundle.as_deref().and_then(|b| bundle_header(&verified.bundles, b));
    view.usable = true;
    view.git_dir = repo.git_dir().to_path_buf();
    view.missing = header.map(|h| repo.missing_commits(&h.prerequisites)).unwrap_or_default();
    let asked = saved.head.iter().chain(&exported.scratch_tip);
    view.has = asked.filter(|id| repo.has_commit(id)).cloned().collect();
    let scratch = format!("refs/heads/{}", exported.scratch_branch);
    let tips = header.iter().flat_map(|h| h.refs.iter().map(|(n, _)| n));
    for refname in tips.chain(&exported.head_branch).chain([&scratch]) {
        let there = match repo.ref_commit(refname) {
            Some(id) => RefThere::At(id),
            None if repo.ref_name_free(refname) => RefThere::Free,
            None => RefThere::Blocked,
        };
        view.refs.insert(refname.clone(), there);
    }
    view.worktree_named = repo.has_worktree_named(instance);
    view.origin_url = repo.remote_urls().into_iter().find(|(n, _)| n == "origin").map(|(_, url)| url);
    let bundled = saved.submodules.iter().map(|s| {
        let header = bundle_header(&verified.bundles, &s.bundle);
        let detached = header.and_then(|h| h.refs.iter().find(|(n, _)| n == DETACHED_HEAD)).map(|(_, id)| id);
        let asked: Vec<&String> = s.head.iter().chain(detached).collect();
        (&s.path, s.path_bytes.as_deref(), s.module.as_deref(), header, asked)
    });
    let changed = exported
        .changed_submodules
        .iter()
        .map(|c| (&c.path, c.path_bytes.as_deref(), c.module.as_deref(), None, vec![&c.head]));
    for (text, bytes, module, header, asked) in bundled.chain(changed) {
        let view_of = |path: &Path| {
            let Some(source) = repo.submodule_git_dir(module, path) else { return SubmoduleView::default() };
            SubmoduleView {
                source: Some(source.opened_at().to_path_buf()),
                missing: header.map(|h| source.missing_commits(&h.prerequisites)).unwrap_or_default(),
                has: asked.iter().filter(|id| source.has_commit(id)).map(|id| (*id).clone()).collect(),
            }
        };
        // Only a plain path and name are looked up: the plan refuses any other.
        let name = NameBytes::from_wire(text.clone(), bytes).ok().filter(|n| plain(n.as_path()));
        let plain_module = module.is_none_or(|m| plain(Path::new(m)));
        view.submodules.push(name.filter(|_| plain_module).map(|n| view_of(n.as_path())));
    }
    view
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

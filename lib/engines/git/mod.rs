//! What git knows about an isolated mount, read with libgit2 and no network: the changed files,
//! and the commits that only the refs a purge deletes can reach (lifecycle.md, "What at risk
//! means"). The only module that names the `git2` crate (tests/architecture.rs): what the tools
//! hold is the engine's own [`Repo`], [`GitError`] and plain data, never a libgit2 type.

use std::collections::{HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use git2::{Oid, Repository, Status, StatusOptions};

use crate::protocol::assessment::{FileChange, UnpushedRef};
use crate::protocol::path_bytes::NameBytes;
use host_refs::canonical;
pub(crate) use host_refs::{HostCache, HostRefs};
use patches::{Memo, Surviving};
pub(crate) use reflog::REFLOG_ONLY;
use reflog::{clone_reflog_only, worktree_reflogs, ReflogOnly};
use std::sync::Arc;

mod branches;
mod bundle;
mod changed_since;
mod config_files;
mod counted;
mod error;
mod file_refs;
#[cfg(test)]
mod generated;
mod graph;
mod history;
mod host_refs;
mod ignored;
mod moves;
mod open_repos;
mod owners;
mod patches;
mod recover;
mod reflog;
mod repo;
mod resume;
mod role_source;
mod stat_check;
mod submodules;
mod walk_guard;
mod worktrees;

pub(crate) use bundle::{
    clone_bundle, host_bundle, worktree_bundle, write_bundle, BundleContents, BundleRefs, DETACHED_HEAD,
};
pub(crate) use changed_since::{changed_since, Since};
pub use counted::work_done;
pub(crate) use error::GitError;
pub(crate) use file_refs::file_refs;
pub(crate) use ignored::{inside, Ignored};
pub(crate) use moves::valid_ref_name;
pub(crate) use open_repos::OpenRepos;
pub(crate) use recover::{read_bundle, read_bundle_header, BundleHeader, IndexChange};
pub(crate) use repo::{skip_object_hash_checks, Repo};
pub(crate) use resume::{clone_resumability, worktree_resumability, Resumability};
pub use role_source::{
    is_fetch_failure, role_commit, set_fetch_timeout, source_tar, FetchFailed, DEFAULT_FETCH_TIMEOUT_SECS,
};
pub(crate) use submodules::{
    at_risk as submodules_at_risk, bundles as submodule_bundles, checked_out as submodules_checked_out, module_name,
};
use worktrees::registration;
pub(crate) use worktrees::registration_dir;

/// The work tree of a repository: changed files at risk, ignored entries only counted.
#[derive(Debug, Clone, Default)]
pub(crate) struct WorkState {
    pub(crate) files: Vec<FileChange>,
    /// Ignored entries (an ignored directory counts once): not at risk, only reported.
    pub(crate) ignored: usize,
    /// The same entries, as `jackin-purge --slim` and the disk measurement take them
    /// ([`ignored::from_statuses`]).
    pub(crate) ignored_entries: Vec<Ignored>,
}

pub(crate) fn work_state(repo: &Repo, with_diff: bool) -> Result<WorkState, GitError> {
    Ok(status(&repo.repo, with_diff, Narrowing::ByStatData)?)
}

/// Whether libgit2's status may be limited to the paths whose stat data say they changed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Narrowing {
    ByStatData,
    /// Every path goes to libgit2: what the narrowed status must equal (its tests).
    #[cfg_attr(not(test), allow(dead_code))]
    None,
}

fn status(repo: &Repository, with_diff: bool, narrowing: Narrowing) -> Result<WorkState, git2::Error> {
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(true)
        .recurse_ignored_dirs(false)
        // Renames in the work tree are left out as git leaves them out: git pairs a deleted file
        // with an untracked one only when the new file is intent-to-add, libgit2 with any.
        .renames_head_to_index(true);
    let (mut index, written) = stat_check::read_index(repo)?;
    let nothing_staged = index_matches_head(repo, &mut index);
    if nothing_staged {
        // The comparison of HEAD's tree with the index, which reads every tree object of HEAD,
        // can only come back empty (docs/maintainers/performance.md, real trees).
        options.show(git2::StatusShow::Workdir);
    }
    if nothing_staged && narrowing == Narrowing::ByStatData {
        if !narrow_by_stat_data(repo, &index, written, &mut options)? {
            return Ok(WorkState::default());
        }
    } else {
        walk_guard::check(repo, walk_guard::Start::Root(&index))?;
    }
    let statuses = repo.statuses(Some(&mut options))?;
    let mut state = WorkState { ignored_entries: ignored::from_statuses(&statuses, &index), ..WorkState::default() };
    for entry in statuses.iter() {
        let status = entry.status();
        if status.is_ignored() {
            state.ignored += 1;
            continue;
        }
        let (path, orig_path) = match renamed(&entry) {
            Some((orig, path)) => (path, Some(orig)),
            None => (NameBytes::new(entry.path_bytes()), None),
        };
        state.files.push(FileChange { status: status_letters(status), path, orig_path, diff: None });
    }
    if with_diff {
        attach_diffs(repo, &mut state.files)?;
    }
    Ok(state)
}

/// Limits a status of the work tree against the index to the paths whose stat data say they
/// may differ from it (`stat_check`); `false` when there are none and no status is needed.
/// `written` comes with `index` from `stat_check::read_index`. Either way what libgit2 will walk
/// is first walked by `walk_guard`, which refuses what libgit2 would skip or wait on.
fn narrow_by_stat_data(
    repo: &Repository,
    index: &git2::Index,
    written: Option<stat_check::IndexWritten>,
    options: &mut StatusOptions,
) -> Result<bool, git2::Error> {
    let Some(suspects) = written.and_then(|written| stat_check::suspects(repo, index, written).ok()) else {
        walk_guard::check(repo, walk_guard::Start::Root(index))?;
        return Ok(true);
    };
    walk_guard::check(repo, walk_guard::Start::Suspects(&suspects))?;
    options.disable_pathspec_match(true);
    for path in &suspects {
        options.pathspec(path.as_slice());
    }
    Ok(!suspects.is_empty())
}

/// `git add -N`: in the index, left out of its trees.
const INTENT_TO_ADD: u16 = 1 << 13;

/// Whether the index holds exactly HEAD's tree, told from the index's own cache of its tree ids
/// (the TREE extension git keeps, as `git status` uses it) without reading a tree object. `false`
/// whenever that cannot be told so cheaply: no HEAD, an invalidated cache, a conflict, or an
/// intent-to-add entry (which the cached trees leave out).
fn index_matches_head(repo: &Repository, index: &mut git2::Index) -> bool {
    let Some(head_tree) = repo.head().and_then(|h| h.peel_to_commit()).ok().map(|c| c.tree_id()) else {
        return false;
    };
    // An object database with no backend: a cached tree id comes back as it is, and a tree that
    // would have to be computed fails to be written instead of being written.
    let Ok(nowhere) = git2::Odb::new().and_then(Repository::from_odb) else { return false };
    let Ok(index_tree) = index.write_tree_to(&nowhere) else { return false };
    index_tree == head_tree
        && !index.iter().any(|entry| entry.flags_extended & INTENT_TO_ADD != 0)
        && gitlinks_match_head(repo, index, head_tree)
}

/// Each submodule's commit in the index is the one HEAD's tree records. The cached tree ids are
/// not proof of that: a `git rebase --autostash` that stops on "your local changes would be
/// overwritten" re-applies a staged submodule commit without invalidating them, so the index
/// says HEAD's tree while its entry names the new commit (git's own `write-tree` then writes
/// HEAD's tree; `git status` compares the entries and says `M  sub`). A submodule is few
/// entries: each is looked up in HEAD's tree.
fn gitlinks_match_head(repo: &Repository, index: &git2::Index, head_tree: git2::Oid) -> bool {
    let Ok(tree) = repo.find_tree(head_tree) else { return false };
    index.iter().filter(|entry| entry.mode == 0o160000).all(|entry| {
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(&entry.path));
        tree.get_path(path).is_ok_and(|there| there.id() == entry.id && there.filemode() == 0o160000)
    })
}

/// The original and the current path of a rename in the index (`git mv`), as `git status`
/// pairs them.
fn renamed(entry: &git2::StatusEntry) -> Option<(NameBytes, NameBytes)> {
    let delta = entry.head_to_index().filter(|_| entry.status().is_index_renamed())?;
    Some((NameBytes::new(delta.old_file().path_bytes()?), NameBytes::new(delta.new_file().path_bytes()?)))
}

/// `git status --short`'s XY letters.
fn status_letters(s: Status) -> String {
    if s.is_conflicted() {
        return "UU".into();
    }
    if s.is_wt_new() && !s.intersects(INDEX_ANY) {
        return "??".into();
    }
    let x = if s.is_index_new() {
        'A'
    } else if s.is_index_modified() {
        'M'
    } else if s.is_index_deleted() {
        'D'
    } else if s.is_index_renamed() {
        'R'
    } else if s.is_index_typechange() {
        'T'
    } else {
        ' '
    };
    let y = if s.is_wt_modified() {
        'M'
    } else if s.is_wt_deleted() {
        'D'
    } else if s.is_wt_renamed() {
        'R'
    } else if s.is_wt_typechange() {
        'T'
    } else {
        ' '
    };
    format!("{x}{y}")
}

const INDEX_ANY: Status = Status::INDEX_NEW
    .union(Status::INDEX_MODIFIED)
    .union(Status::INDEX_DELETED)
    .union(Status::INDEX_RENAMED)
    .union(Status::INDEX_TYPECHANGE);

fn attach_diffs(repo: &Repository, files: &mut [FileChange]) -> Result<(), git2::Error> {
    let head_tree = match repo.head() {
        Ok(head) => Some(head.peel_to_tree()?),
        Err(e) if e.code() == git2::ErrorCode::UnbornBranch => None,
        Err(e) => return Err(e),
    };
    let mut options = git2::DiffOptions::new();
    options.include_untracked(true).recurse_untracked_dirs(true).show_untracked_content(true);
    let diff = repo.diff_tree_to_workdir_with_index(head_tree.as_ref(), Some(&mut options))?;
    let mut by_path = HashMap::new();
    for i in 0..diff.deltas().len() {
        let Some(mut patch) = git2::Patch::from_diff(&diff, i)? else { continue };
        let delta = patch.delta();
        let Some(path) = delta.new_file().path_bytes().or(delta.old_file().path_bytes()).map(NameBytes::new) else {
            continue;
        };
        let text = String::from_utf8_lossy(&patch.to_buf()?).into_owned();
        by_path.insert(path, text);
    }
    for file in files {
        let mut text = by_path.remove(&file.path).unwrap_or_default();
        if let Some(orig) = &file.orig_path {
            text.push_str(&by_path.remove(orig).unwrap_or_default());
        }
        file.diff = Some(text);
    }
    Ok(())
}

impl Repo {
    /// The staged version of `path` (relative to the work tree), as the index holds it: the
    /// blob's bytes and its mode (`0o100644`, `0o100755`, `0o120000` for a link, whose bytes are
    /// the target). `None` when the index has no such entry or its blob cannot be read.
    pub(crate) fn staged(&self, path: &Path) -> Option<(Vec<u8>, u32)> {
        let index = self.repo.index().ok()?;
        let entry = index.get_path(path, 0)?;
        let blob = self.repo.find_blob(entry.id).ok()?;
        Some((blob.content().to_vec(), entry.mode))
    }

    /// The commit the index records for the submodule at `path` (relative to the work tree),
    /// when its entry there is a gitlink (mode `0o160000`): what `git add <submodule>` staged.
    pub(crate) fn staged_gitlink(&self, path: &Path) -> Option<String> {
        let entry = self.repo.index().ok()?.get_path(path, 0)?;
        (entry.mode == 0o160000).then(|| entry.id.to_string())
    }
}

/// Whether `worktree` is a registered worktree of the host repository `host` describes.
pub(crate) fn belongs_to(worktree: &Repo, host: &HostRefs) -> bool {
    canonical(worktree.repo.commondir()) == host.gitdir
}

/// A worktree shares its refs and objects with its host repository. A purge deletes the
/// worktree, its registration and its scratch branch, so what is at risk is what the worktree's
/// HEAD or the scratch branch reaches and no surviving ref does: every other ref of the host
/// repo, the host's own HEAD and the HEADs of its other worktrees.
pub(crate) fn worktree_unpushed(
    worktree: &Repo,
    host: &HostRefs,
    scratch_branch: &str,
) -> Result<Vec<UnpushedRef>, GitError> {
    let worktree = &worktree.repo;
    let scratch_ref = format!("refs/heads/{scratch_branch}");
    let mut at_risk_tips = Vec::new();
    if let Some(tip) = host.tip(&scratch_ref) {
        at_risk_tips.push((scratch_ref.clone(), tip, upstream_of(worktree, &scratch_ref)));
    }
    if worktree.head_detached()? {
        if let Some(tip) = worktree.head()?.target() {
            at_risk_tips.push(("HEAD".to_owned(), tip, None));
        }
    }
    // The worktree's own refs and pseudo-refs live in its registration, which the purge prunes.
    for own in file_refs::file_refs(worktree, worktree.path(), true) {
        at_risk_tips.push((own.name, own.id, None));
    }
    // What survives the purge, listed only for a walk of this session's own (see `Owners`).
    let surviving = std::cell::OnceCell::new();
    let surviving = || surviving.get_or_init(|| host.surviving_purge_of(worktree, &scratch_ref)).as_slice();
    let named = || host.surviving_named(worktree, &scratch_ref);
    let graph = &host.memo.graph;
    let own = host.own_tips(worktree, &scratch_ref);
    // The session's tips whose every name is the session's: what only they reach is at risk.
    let owned: Vec<Oid> = own.iter().map(|(_, id)| *id).filter(|id| !host.survives_purge(&own, *id)).collect();
    let owners = own.iter().all(|(name, _)| host_refs::is_session_tip(name)).then(|| host.owners(worktree)).flatten();
    let mut unpushed = Vec::new();
    for (name, tip, upstream) in &at_risk_tips {
        let at_risk = match owners {
            Some(owners) if own.iter().any(|(_, id)| id == tip) => owners.only_reachable_from(*tip, &owned),
            _ => graph.only_reachable_from(worktree, &[*tip], surviving())?,
        };
        if at_risk.is_empty() {
            continue;
        }
        let integrated = patches::integrated(worktree, *tip, &at_risk, &[named()])?;
        let (name, upstream) = (name.clone(), upstream.clone());
        unpushed.push(UnpushedRef { name, commits: at_risk.len() - integrated.len(), upstream, integrated });
    }
    let is_counted = |id: Oid| host.survives_purge(&own, id) || at_risk_tips.iter().any(|(_, tip, _)| *tip == id);
    let counted = || surviving().iter().copied().chain(at_risk_tips.iter().map(|(_, tip, _)| *tip)).collect();
    let reflogs = worktree_reflogs(worktree, &scratch_ref);
    let logged = ReflogOnly::find_with(worktree, graph, &reflogs, &is_counted, &counted)?;
    unpushed.extend(logged.unpushed(worktree, &[named()])?);
    Ok(unpushed)
}

/// A clone's refs are its own; a purge deletes the whole directory. At risk: what any ref but a
/// remote-tracking one and the stash (every namespace: branches, tags, `refs/notes/*`,
/// `refs/wip/*`, …), a pseudo-ref, a loose ref whose name git refuses or a detached HEAD reaches
/// that neither a remote-tracking ref of the clone nor any ref of the host repository reaches;
/// and every stash entry.
pub(crate) fn clone_unpushed(
    clone: &Repo,
    host: Option<(&Path, &HostRefs)>,
) -> Result<(Vec<UnpushedRef>, usize), GitError> {
    let clone = &clone.repo;
    let mut tips = Vec::new();
    let mut surviving = HashSet::new();
    let mut remote_tracking = Vec::new();
    for reference in clone.references()? {
        // A name libgit2 refuses is read as a file below.
        let Ok(reference) = reference else { continue };
        let Ok(name) = reference.name().map(str::to_owned) else { continue };
        let Ok(commit) = reference.peel_to_commit() else { continue };
        if name.starts_with("refs/remotes/") {
            surviving.insert(commit.id());
            remote_tracking.push((name, commit.id()));
        } else if name != "refs/stash" {
            let upstream = upstream_of(clone, &name);
            tips.push((name, commit.id(), upstream));
        }
    }
    for odd in file_refs::file_refs(clone, clone.path(), false) {
        tips.push((odd.name, odd.id, None));
    }
    if clone.head_detached().unwrap_or(false) {
        if let Some(id) = clone.head().ok().and_then(|h| h.target()) {
            tips.push(("HEAD".to_owned(), id, None));
        }
    }
    let clone_odb = clone.odb()?;
    if let Some((_, refs)) = host {
        surviving.extend(refs.all_tips().filter(|id| clone_odb.exists(*id)));
    }
    let surviving: Vec<Oid> = surviving.into_iter().collect();

    // A host commit the clone does not know can still descend from a clone commit (the host
    // fetched it from elsewhere); such clone commits exist in the host and are not at risk.
    // Opened only when a candidate commit is also in the host's object store.
    let host_tips: Vec<Oid> = host.map(|(_, refs)| refs.all_tips().collect()).unwrap_or_default();
    let open_host = || host.and_then(|(path, _)| repo::open_checked(path).ok());
    let mut host_repo: Option<Option<Repository>> = None;
    let mut in_host: HashMap<Oid, bool> = HashMap::new();
    // A clone's commits are its own: read for this clone alone, once for its walks and its
    // patch search together.
    let memo: Arc<Memo> = Arc::default();
    let graph = &memo.graph;
    let mut unpushed = Vec::new();
    for (name, tip, upstream) in tips {
        let mut at_risk = Vec::new();
        for id in graph.only_reachable_from(clone, &[tip], &surviving)? {
            let repo = host_repo.get_or_insert_with(open_host);
            let kept_by_host = match repo {
                Some(repo) => *in_host.entry(id).or_insert_with(|| reachable_in(repo, id, &host_tips)),
                None => false,
            };
            if !kept_by_host {
                at_risk.push(id);
            }
        }
        if at_risk.is_empty() {
            continue;
        }
        // The clone's remote-tracking refs, then the host's refs in the host repository: the host
        // may have fetched a squash merge the clone never saw.
        let places = clone_surviving(clone, &remote_tracking, &memo, host_repo.as_ref(), host);
        let integrated = patches::integrated(clone, tip, &at_risk, &places)?;
        unpushed.push(UnpushedRef { name, commits: at_risk.len() - integrated.len(), upstream, integrated });
    }
    // The same rule for what only the clone's reflogs hold.
    let mut logged = clone_reflog_only(clone, graph, &surviving)?;
    if !logged.commits.is_empty() {
        if let Some(repo) = host_repo.get_or_insert_with(open_host) {
            logged.commits.retain(|id| !*in_host.entry(*id).or_insert_with(|| reachable_in(repo, *id, &host_tips)));
        }
        let places = clone_surviving(clone, &remote_tracking, &memo, host_repo.as_ref(), host);
        unpushed.extend(logged.unpushed(clone, &places)?);
    }
    Ok((unpushed, stash_count(clone)))
}

/// Where a clone's at-risk commits may already be as the same patch: its remote-tracking refs,
/// then the host's refs in the host repository (which may have fetched a squash merge the clone
/// never saw), when it was opened.
fn clone_surviving<'r>(
    clone: &'r Repository,
    remote_tracking: &[(String, Oid)],
    memo: &Arc<Memo>,
    host_repo: Option<&'r Option<Repository>>,
    host: Option<(&Path, &HostRefs)>,
) -> Vec<Surviving<'r>> {
    let tips = patches::ranked(remote_tracking.to_vec());
    let mut places = vec![Surviving::shared(clone, tips, Vec::new(), memo.clone())];
    if let (Some(Some(repo)), Some((_, refs))) = (host_repo, host) {
        places.push(refs.surviving_in(repo));
    }
    places
}

fn reachable_in(repo: &Repository, id: Oid, tips: &[Oid]) -> bool {
    if !repo.odb().is_ok_and(|odb| odb.exists(id)) {
        return false;
    }
    tips.iter().any(|tip| *tip == id || repo.graph_descendant_of(*tip, id).unwrap_or(false))
}

fn stash_count(repo: &Repository) -> usize {
    if repo.find_reference("refs/stash").is_err() {
        return 0;
    }
    repo.reflog("refs/stash").map(|log| log.len().max(1)).unwrap_or(1)
}

/// `origin/feature-x` for a branch with an upstream; `None` otherwise.
fn upstream_of(repo: &Repository, refname: &str) -> Option<String> {
    if !refname.starts_with("refs/heads/") {
        return None;
    }
    let upstream = repo.branch_upstream_name(refname).ok()?;
    let upstream = upstream.as_str().ok()?;
    Some(
        upstream
            .strip_prefix("refs/remotes/")
            .or_else(|| upstream.strip_prefix("refs/heads/"))
            .unwrap_or(upstream)
            .to_owned(),
    )
}

/// The newest `count` commits of `reference` that `upstream` does not have, as `git log
/// --oneline` prints them: what the exit dialog's Inspect shows for an unpushed ref.
pub(crate) fn oneline_log(
    path: &Path,
    reference: &str,
    upstream: Option<&str>,
    count: usize,
) -> Result<Vec<String>, GitError> {
    let repo = repo::open_checked(path)?;
    let mut walk = repo.revwalk()?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)?;
    walk.push(repo.revparse_single(reference)?.peel_to_commit()?.id())?;
    if let Some(upstream) = upstream {
        if let Ok(theirs) = repo.revparse_single(upstream).and_then(|o| o.peel_to_commit()) {
            walk.hide(theirs.id())?;
        }
    }
    let mut lines = Vec::new();
    for oid in walk.take(count) {
        let commit = repo.find_commit(oid?)?;
        let short = commit.as_object().short_id()?;
        lines.push(format!(
            "{} {}",
            short.as_str().unwrap_or_default(),
            String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default())
        ));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests;

//! The commits only a session's reflogs reach: a `git reset --hard HEAD~1` or a `git commit
//! --amend` leaves the agent's commit there and nowhere else, and a purge deletes those reflogs
//! (a worktree's with its registration and scratch branch, a clone's with the clone).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::graph::Graph;
use super::patches::{self, Surviving};
use crate::protocol::assessment::UnpushedRef;

/// The `ref` an assessment gives the commits only the reflogs a purge deletes reach (not a ref:
/// no name of git's has no slash but `HEAD`): `git reset --hard HEAD~1` or `git commit --amend`
/// leave the agent's commit there and nowhere else.
pub(crate) const REFLOG_ONLY: &str = "reflog";

/// The reflogs a purge deletes with a worktree: those of its registration (`HEAD` and its other
/// per-worktree refs) and its scratch branch's. The host's other reflogs are not the session's.
pub(super) fn worktree_reflogs(worktree: &Repository, scratch_ref: &str) -> Vec<PathBuf> {
    let mut files = reflog_files(&worktree.path().join("logs"), &|_| true);
    files.push(worktree.commondir().join("logs").join(scratch_ref));
    files
}

/// A clone's reflogs, all deleted with it, but those of its remote-tracking refs (what they
/// logged was fetched: it came from elsewhere) and the stash's (every entry is counted as a
/// stash).
fn clone_reflogs(clone: &Repository) -> Vec<PathBuf> {
    let logs = clone.path().join("logs");
    let own = |path: &Path| !path.starts_with(logs.join("refs/remotes")) && path != logs.join("refs/stash");
    reflog_files(&logs, &own)
}

fn reflog_files(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => files.extend(reflog_files(&path, keep)),
            Ok(kind) if kind.is_file() && keep(&path) => files.push(path),
            _ => {}
        }
    }
    files
}

/// The commits only reflogs reach: those their entries (old and new side) reach that none of
/// `counted` (what survives the purge, and the tips already counted at risk by name) reaches.
#[derive(Debug, Default)]
pub(crate) struct ReflogOnly {
    /// The entries that no other of these commits descends from, newest first: what a bundle
    /// names to hold them all.
    pub(crate) tips: Vec<Oid>,
    pub(crate) commits: Vec<Oid>,
}

impl ReflogOnly {
    pub(super) fn find(
        repo: &Repository,
        graph: &Graph,
        reflogs: &[PathBuf],
        counted: &[Oid],
    ) -> Result<ReflogOnly, git2::Error> {
        let set: HashSet<Oid> = counted.iter().copied().collect();
        ReflogOnly::find_with(repo, graph, reflogs, &|id| set.contains(&id), &|| counted.to_vec())
    }

    /// [`ReflogOnly::find`] with the counted commits told one at a time (`is_counted`), and
    /// listed (`counted`) only when a reflog names a commit none of them is: a fleet's session
    /// would otherwise list a tip for every other session, every time.
    pub(super) fn find_with(
        repo: &Repository,
        graph: &Graph,
        reflogs: &[PathBuf],
        is_counted: &dyn Fn(Oid) -> bool,
        counted: &dyn Fn() -> Vec<Oid>,
    ) -> Result<ReflogOnly, git2::Error> {
        let mut logged = HashSet::new();
        for file in reflogs {
            // A reflog line is `<old> <new> <ident> <time> <zone>\t<message>`, read as bytes:
            // parsed here rather than by libgit2, which wants the ref's name as UTF-8.
            let Ok(text) = std::fs::read(file) else { continue };
            for line in text.split(|b| *b == b'\n') {
                for hex in line.split(|b| *b == b' ').take(2).filter(|hex| hex.len() == 40) {
                    let id = std::str::from_utf8(hex).ok().and_then(|hex| Oid::from_str(hex).ok());
                    // An id of no object here is dropped with the others that name no commit.
                    if let Some(id) = id.filter(|id| !id.is_zero()) {
                        logged.insert(id);
                    }
                }
            }
        }
        // A counted id is a commit already: told apart before any lookup (a fleet's reflogs
        // name the same base commit and their own tips, which are all counted).
        let logged: Vec<Oid> = logged
            .into_iter()
            .filter(|id| !is_counted(*id))
            .filter_map(|id| repo.find_object(id, None).and_then(|o| o.peel_to_commit()).ok().map(|c| c.id()))
            .filter(|id| !is_counted(*id))
            .collect();
        if logged.is_empty() {
            return Ok(ReflogOnly::default());
        }
        // Only now are the counted commits walked: most sessions' reflogs name nothing the
        // counted refs do not, and a fleet of one repository counts a tip for every session. A
        // counted id of no commit here hides nothing.
        let commits = graph.only_reachable_from(repo, &logged, &counted())?;
        let in_set: HashSet<Oid> = commits.iter().copied().collect();
        let mut parents = HashSet::new();
        for id in &commits {
            parents.extend(repo.find_commit(*id)?.parent_ids());
        }
        let mut tips: Vec<(i64, Oid)> = logged
            .into_iter()
            .filter(|id| in_set.contains(id) && !parents.contains(id))
            .map(|id| Ok((repo.find_commit(id)?.committer().when().seconds(), id)))
            .collect::<Result<_, git2::Error>>()?;
        tips.sort_by(|a, b| b.cmp(a));
        Ok(ReflogOnly { tips: tips.into_iter().map(|(_, id)| id).collect(), commits })
    }

    /// The [`REFLOG_ONLY`] entry of an assessment, without the commits a surviving ref holds as
    /// the same patch (a rebase whose new commits were merged); none when no commit is left.
    pub(super) fn unpushed(
        &self,
        repo: &Repository,
        surviving: &[Surviving<'_>],
    ) -> Result<Option<UnpushedRef>, git2::Error> {
        let Some(newest) = self.tips.first().filter(|_| !self.commits.is_empty()) else { return Ok(None) };
        let integrated = patches::integrated(repo, *newest, &self.commits, surviving)?;
        let commits = self.commits.len() - integrated.len();
        Ok(Some(UnpushedRef { name: REFLOG_ONLY.to_owned(), commits, upstream: None, integrated }))
    }
}

/// The commits only a clone's reflogs reach ([`clone_reflogs`]): none of `surviving` reaches
/// them, nor a local branch, a tag, HEAD or a stash entry (counted at risk by their own names).
pub(crate) fn clone_reflog_only(
    clone: &Repository,
    graph: &Graph,
    surviving: &[Oid],
) -> Result<ReflogOnly, git2::Error> {
    let mut counted = surviving.to_vec();
    for reference in clone.references()? {
        if let Ok(commit) = reference?.peel_to_commit() {
            counted.push(commit.id());
        }
    }
    counted.extend(clone.head().ok().and_then(|h| h.target()));
    // Read only when there is a stash: libgit2 creates the reflog file it is asked for, and an
    // assessment (a dry run among them) writes nothing.
    if let Some(log) = clone.find_reference("refs/stash").ok().and_then(|_| clone.reflog("refs/stash").ok()) {
        counted.extend(log.iter().map(|entry| entry.id_new()));
    }
    ReflogOnly::find(clone, graph, &clone_reflogs(clone), &counted)
}

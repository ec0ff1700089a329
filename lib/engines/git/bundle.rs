//! Bundles of the commits a purge would delete, for the quarantine (services/saved_work
//! decides what is saved and where; this reads which commits those are and writes them).
//!
//! libgit2 has no bundle writer, but its pack builder writes the pack; a v2 bundle is that pack
//! behind a short text header (gitformat-bundle(5)): `# v2 git bundle`, one `-<oid> <subject>`
//! line per prerequisite, one `<oid> <refname>` line per ref, an empty line, then the pack.

use std::collections::{BTreeSet, HashSet};
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use super::{
    clone_reflog_only, error, graph::Graph, registration, worktree_reflogs, GitError, HostRefs, ReflogOnly, Repo,
    REFLOG_ONLY,
};
use crate::protocol::assessment::UnpushedRef;

/// What a bundle holds, for the receipt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BundleContents {
    /// `(refname, oid)` of each ref in the bundle.
    pub(crate) refs: Vec<(String, String)>,
    /// Commits the bundle builds on: a repository must have them to fetch from it.
    pub(crate) prerequisites: Vec<String>,
    /// Commits in the bundle.
    pub(crate) commits: usize,
    /// The refs of `refs` that hold commits only a reflog reached (`refs/jackin/reflog/<n>`):
    /// no branch, tag or HEAD had them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) from_reflog: Vec<String>,
}

/// What a bundle is to hold: the at-risk tips by name (a ref's name, or a name given to a stash
/// entry or a HEAD), and the commits that survive the purge, whose history it leaves out.
pub(crate) struct BundleRefs {
    refs: Vec<(String, Oid)>,
    hidden: Vec<Oid>,
    /// The names of `refs` given to reflog entries.
    from_reflog: Vec<String>,
}

impl BundleRefs {
    /// Adds the tips of what only the reflogs reach, as `refs/jackin/reflog/<n>`, newest first.
    fn with_reflog(mut self, logged: ReflogOnly) -> Self {
        for (n, id) in logged.tips.into_iter().enumerate() {
            let name = format!("refs/jackin/reflog/{n}");
            self.from_reflog.push(name.clone());
            self.refs.push((name, id));
        }
        self
    }
}

impl BundleRefs {
    /// No tip at all: there is no bundle to write.
    pub(crate) fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }
}

/// The at-risk tips of a worktree (those of `unpushed`, the assessment's, as they are now: its
/// scratch branch and a detached HEAD; and what only its reflogs and the scratch branch's reach)
/// against what survives the purge in the host repository at `host_path`: every other ref, the
/// host's HEAD, the other worktrees' HEADs.
pub(crate) fn worktree_bundle(
    worktree: &Repo,
    host_path: &Path,
    scratch_branch: &str,
    unpushed: &[UnpushedRef],
) -> Result<BundleRefs, GitError> {
    let scratch_ref = format!("refs/heads/{scratch_branch}");
    let refs = unpushed_tips(&worktree.repo, unpushed)?;
    let host = HostRefs::read(host_path)?;
    let hidden = host.surviving_purge_of(&worktree.repo, &scratch_ref);
    // The reflog-only commits are looked for among the newest state of the worktree, not the
    // assessment's: a commit moved away from since is saved too.
    let mut counted = hidden.clone();
    counted.extend(refs.iter().map(|(_, id)| *id));
    counted.extend(worktree.repo.head().ok().and_then(|h| h.target()));
    let reflogs = worktree_reflogs(&worktree.repo, &scratch_ref);
    let logged = ReflogOnly::find(&worktree.repo, &host.memo.graph, &reflogs, &counted)?;
    Ok(BundleRefs { refs, hidden, from_reflog: Vec::new() }.with_reflog(logged))
}

/// A clone's at-risk tips (those of `unpushed`: local branches, tags, a detached HEAD; every
/// stash entry, as `refs/stashes/stash-<n>`; what only its reflogs reach) against what survives
/// it: its remote-tracking refs and the refs of the host repository at `host_path` (when there
/// is one and it can be read).
pub(crate) fn clone_bundle(
    clone: &Repo,
    host_path: Option<&Path>,
    unpushed: &[UnpushedRef],
) -> Result<BundleRefs, GitError> {
    let repo = &clone.repo;
    let mut refs = unpushed_tips(repo, unpushed)?;
    if let Ok(log) = repo.reflog("refs/stash") {
        for (n, entry) in log.iter().enumerate() {
            refs.push((format!("refs/stashes/stash-{n}"), entry.id_new()));
        }
    }
    let mut hidden = Vec::new();
    for reference in repo.references_glob("refs/remotes/*")? {
        if let Ok(commit) = reference?.peel_to_commit() {
            hidden.push(commit.id());
        }
    }
    if let Some(Ok(host)) = host_path.map(HostRefs::read) {
        hidden.extend(host.tips.iter().map(|(_, id)| *id));
    }
    let logged = clone_reflog_only(repo, &Graph::default(), &hidden)?;
    Ok(BundleRefs { refs, hidden, from_reflog: Vec::new() }.with_reflog(logged))
}

/// For a worktree git cannot read, what the purge deletes from its host repository at
/// `host_path` (the scratch branch and the registration's detached HEAD; the registration found
/// by `worktree_path`, else by the name `registration_name`) against every ref and HEAD that
/// survives there, with the host opened to write them from. `None` when the host repository
/// cannot be read.
pub(crate) fn host_bundle(
    host_path: &Path,
    worktree_path: &Path,
    scratch_branch: &str,
    registration_name: &str,
) -> Option<(Repo, BundleRefs)> {
    let (Ok(host), Ok(host_refs)) = (Repo::open(host_path), HostRefs::read(host_path)) else {
        return None;
    };
    let scratch_ref = format!("refs/heads/{scratch_branch}");
    let own = registration(&host.repo, worktree_path, Some(registration_name)).map(OsString::from);
    let mut refs: Vec<(String, Oid)> =
        host_refs.tips.iter().filter(|(name, _)| *name == scratch_ref).cloned().collect();
    let own_head = host_refs.worktree_heads.iter().find(|(dir, _)| Some(dir) == own.as_ref());
    refs.extend(own_head.map(|(_, id)| (DETACHED_HEAD.to_owned(), *id)));
    let hidden: Vec<Oid> = host_refs
        .tips
        .iter()
        .filter(|(name, _)| *name != scratch_ref)
        .map(|(_, id)| *id)
        .chain(host_refs.detached_head)
        .chain(host_refs.worktree_heads.iter().filter(|(dir, _)| Some(dir) != own.as_ref()).map(|(_, id)| *id))
        .collect();
    Some((host, BundleRefs { refs, hidden, from_reflog: Vec::new() }))
}

/// The name a detached HEAD has in a bundle. Not `HEAD`: the receipt's `git fetch <bundle>
/// 'refs/*:refs/recovered/*'` fetches only names under `refs/`, and a bundle whose one tip is
/// `HEAD` fetches nothing at all that way.
pub(crate) const DETACHED_HEAD: &str = "refs/jackin/HEAD";

/// The commit each unpushed ref of the assessment names now, under the name the bundle gives it
/// (a pseudo-ref, a worktree's own ref or a name git refuses as `file_refs` names them; a ref
/// gone since holds nothing more to save).
fn unpushed_tips(repo: &Repository, unpushed: &[UnpushedRef]) -> Result<Vec<(String, Oid)>, git2::Error> {
    let mut refs = Vec::new();
    let files = super::file_refs(repo, repo.path(), repo.is_worktree());
    for unpushed in unpushed.iter().filter(|r| r.name != REFLOG_ONLY) {
        let (name, id) = if unpushed.name == "HEAD" {
            (DETACHED_HEAD.to_owned(), repo.head()?.target())
        } else if let Some(file) = files.iter().find(|f| f.name == unpushed.name) {
            (file.bundle_name.clone(), Some(file.id))
        } else {
            let id = repo.find_reference(&unpushed.name).ok().and_then(|r| r.peel_to_commit().ok()).map(|c| c.id());
            (unpushed.name.clone(), id)
        };
        if let Some(id) = id {
            refs.push((name, id));
        }
    }
    Ok(refs)
}

/// Writes a bundle of `repo`'s commits that the tips of `refs` reach and none of its surviving
/// commits reaches, to `path`. `None` when that is no commit at all (git refuses an empty bundle,
/// and there is nothing to save).
pub(crate) fn write_bundle(repo: &Repo, refs: &BundleRefs, path: &Path) -> Result<Option<BundleContents>> {
    let mut contents = write(&repo.repo, &refs.refs, &refs.hidden, path).map_err(error::classified)?;
    if let Some(contents) = contents.as_mut() {
        contents.from_reflog = refs.from_reflog.clone();
    }
    Ok(contents)
}

fn write(repo: &Repository, refs: &[(String, Oid)], hidden: &[Oid], path: &Path) -> Result<Option<BundleContents>> {
    let odb = repo.odb()?;
    let hidden: Vec<Oid> = hidden.iter().copied().filter(|id| odb.exists(*id)).collect();
    let walk = |hidden: &[Oid]| -> Result<git2::Revwalk<'_>> {
        let mut walk = repo.revwalk()?;
        for (_, id) in refs {
            walk.push(*id)?;
        }
        for id in hidden {
            walk.hide(*id)?;
        }
        Ok(walk)
    };
    let included: HashSet<Oid> = walk(&hidden)?.collect::<Result<_, _>>()?;
    if included.is_empty() {
        return Ok(None);
    }
    let mut prerequisites = BTreeSet::new();
    for id in &included {
        for parent in repo.find_commit(*id)?.parent_ids() {
            if !included.contains(&parent) {
                prerequisites.insert(parent);
            }
        }
    }
    // The pack leaves out only what the prerequisites hold, as `git bundle create <tips> --not
    // <prerequisites>` does: the same commits (every way out of them passes a prerequisite), but
    // a blob only another surviving tip held (another session's commit, which a repository that
    // fetches this bundle need not have) is in the pack, so each bundle stands alone.
    let boundary: Vec<Oid> = prerequisites.iter().copied().collect();
    let mut builder = repo.packbuilder()?;
    builder.insert_walk(&mut walk(&boundary)?)?;

    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut out = BufWriter::new(file);
    out.write_all(b"# v2 git bundle\n")?;
    for id in &prerequisites {
        let subject =
            repo.find_commit(*id).ok().and_then(|c| c.summary().ok().flatten().map(str::to_owned)).unwrap_or_default();
        writeln!(out, "-{id} {}", subject.replace('\n', " "))?;
    }
    for (name, id) in refs {
        writeln!(out, "{id} {name}")?;
    }
    out.write_all(b"\n")?;
    let mut io_error = None;
    builder.foreach(|chunk| match out.write_all(chunk) {
        Ok(()) => true,
        Err(e) => {
            io_error = Some(e);
            false
        }
    })?;
    if let Some(e) = io_error {
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(Some(BundleContents {
        refs: refs.iter().map(|(name, id)| (name.clone(), id.to_string())).collect(),
        prerequisites: prerequisites.iter().map(Oid::to_string).collect(),
        commits: included.len(),
        from_reflog: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit of one file on `refname`, after `parent`.
    fn commit(repo: &Repository, refname: &str, parent: Option<Oid>, message: &str) -> Oid {
        let sig = git2::Signature::now("Test", "test@example.com").unwrap();
        let mut tree = repo.treebuilder(None).unwrap();
        tree.insert("file.txt", repo.blob(message.as_bytes()).unwrap(), 0o100644).unwrap();
        let tree = repo.find_tree(tree.write().unwrap()).unwrap();
        let parents: Vec<git2::Commit<'_>> = parent.map(|id| repo.find_commit(id).unwrap()).into_iter().collect();
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        repo.commit(Some(refname), &sig, &sig, message, &tree, &parents).unwrap()
    }

    /// A host repository `origin` with one commit on `main`, and `clone`, cloned from it (its
    /// `origin/main` survives the purge).
    fn host_and_clone(root: &Path) -> (Repository, Repository, Oid) {
        let origin = Repository::init(root.join("origin")).unwrap();
        let main = commit(&origin, "refs/heads/main", None, "pushed");
        origin.set_head("refs/heads/main").unwrap();
        let clone = Repository::clone(root.join("origin").to_str().unwrap(), root.join("clone")).unwrap();
        (origin, clone, main)
    }

    fn unpushed(name: &str) -> UnpushedRef {
        UnpushedRef { name: name.into(), commits: 1, upstream: None, integrated: Vec::new() }
    }

    /// A branch with work of its own that is not checked out (HEAD is back on the pushed `main`)
    /// is bundled at its own tip, not at HEAD's: its commit is in the bundle, and fetching the
    /// bundle as the receipt says brings it back.
    #[test]
    fn a_branch_that_is_not_checked_out_is_bundled_at_its_own_tip() {
        let tmp = tempfile::tempdir().unwrap();
        let (origin, clone, main) = host_and_clone(tmp.path());
        let feature = commit(&clone, "refs/heads/feature", Some(main), "only in the clone");
        assert_eq!(clone.head().unwrap().target(), Some(main));
        let repo = Repo::open(tmp.path().join("clone")).unwrap();
        let refs = clone_bundle(&repo, Some(&tmp.path().join("origin")), &[unpushed("refs/heads/feature")]).unwrap();
        assert!(!refs.is_empty());
        let path = tmp.path().join("commits.bundle");
        let contents = write_bundle(&repo, &refs, &path).unwrap().expect("a bundle");
        assert_eq!(contents.refs, vec![("refs/heads/feature".to_owned(), feature.to_string())]);
        assert_eq!((contents.commits, contents.prerequisites), (1, vec![main.to_string()]));
        let fetched = std::process::Command::new("git")
            .arg("-C")
            .arg(tmp.path().join("origin"))
            .arg("fetch")
            .arg(&path)
            .arg("refs/*:refs/recovered/*")
            .output()
            .unwrap();
        assert!(fetched.status.success(), "{}", String::from_utf8_lossy(&fetched.stderr));
        assert_eq!(origin.refname_to_id("refs/recovered/heads/feature").unwrap(), feature);
    }

    /// A clone with nothing unpushed and no stash has no bundle to write; writing one anyway
    /// writes nothing (git refuses an empty bundle).
    #[test]
    fn a_clone_with_nothing_unpushed_has_nothing_to_bundle() {
        let tmp = tempfile::tempdir().unwrap();
        let _repos = host_and_clone(tmp.path());
        let repo = Repo::open(tmp.path().join("clone")).unwrap();
        let refs = clone_bundle(&repo, Some(&tmp.path().join("origin")), &[]).unwrap();
        assert!(refs.is_empty());
        let path = tmp.path().join("commits.bundle");
        assert_eq!(write_bundle(&repo, &refs, &path).unwrap(), None);
        assert!(!path.exists());
    }
}

//! Commits made inside the submodules checked out in a mount. A submodule's git directory lives
//! in the mount's (a clone's `.git/modules/<name>`, a worktree's
//! `<host>/.git/worktrees/<c>/modules/<name>`), so a purge deletes it with the mount. What is at
//! risk in it is what is at risk in a clone: what its branches, tags, detached HEAD, stashes and
//! reflogs reach and none of its remote-tracking refs does. The parent's status only says the
//! submodule moved; its commits are saved from here (services/saved_work).

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use super::{clone_bundle, clone_unpushed, BundleRefs, GitError, Repo};
use crate::protocol::assessment::SubmoduleWork;
use crate::protocol::path_bytes::NameBytes;

/// A submodule checked out in a mount, opened.
pub(crate) struct Submodule {
    /// Its path in the mount (for a nested one, through its parents).
    pub(crate) path: NameBytes,
    pub(crate) repo: Repo,
}

/// The submodules checked out under `repo`'s work tree, nested ones too (those whose path in
/// `.gitmodules` stays inside the work tree and whose directory opens as a repository), and
/// every git directory kept under the `modules/` of the mount's or a submodule's. A mount without
/// `.gitmodules` or `modules/` costs two `stat`s.
///
/// Each git directory is taken once, by its canonical path, and the mount's own not at all: that
/// is what ends an agent's `.gitmodules` chain that comes back on itself through a symlink, so no
/// depth limit is needed, and none leaves a deep chain's commits out.
pub(crate) fn checked_out(repo: &Repo) -> Vec<Submodule> {
    let mut seen: HashSet<PathBuf> = repo.repo.path().canonicalize().into_iter().collect();
    let mut found = Vec::new();
    collect(repo, Path::new(""), &mut seen, &mut found);
    // Every submodule git directory under a `modules/` (`<gitdir>/modules/<name>`), named in
    // `.gitmodules` or not: one left behind when the parent moved to a commit without it, or
    // deinitialised, still goes with the mount, and so do the modules of its own.
    let mut holders: Vec<(PathBuf, PathBuf)> = std::iter::once((repo.repo.path().to_path_buf(), PathBuf::new()))
        .chain(found.iter().map(|s| (s.repo.repo.path().to_path_buf(), s.path.as_path().to_path_buf())))
        .collect();
    while let Some((holder, holder_path)) = holders.pop() {
        let modules = holder.join("modules");
        let mut walk = walkdir::WalkDir::new(&modules).min_depth(1).follow_links(false).into_iter();
        while let Some(entry) = walk.next() {
            // An entry that cannot be read is passed by, not the end of the walk.
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_dir()
                || !entry.path().join("HEAD").is_file()
                || !entry.path().join("objects").is_dir()
            {
                continue;
            }
            // A git directory's own folders (objects, refs) are not modules: not entered here;
            // its `modules/` is walked in its turn.
            walk.skip_current_dir();
            let Ok(canonical) = entry.path().canonicalize() else { continue };
            if !seen.insert(canonical) {
                continue;
            }
            // A submodule whose work tree is gone (`git rm`, `rm -rf`) has a `core.worktree`
            // that does not resolve, and will not open as a work tree's repository: its
            // commits are read from the git directory alone.
            let Ok(opened) =
                super::repo::open_checked(entry.path()).or_else(|_| super::repo::open_bare_checked(entry.path()))
            else {
                continue;
            };
            let name = holder_path.join(entry.path().strip_prefix(&modules).unwrap_or(entry.path()));
            let path =
                opened.workdir().and_then(|w| w.strip_prefix(repo.repo.workdir()?).ok()).unwrap_or(&name).to_path_buf();
            holders.push((entry.path().to_path_buf(), path.clone()));
            found.push(Submodule {
                path: NameBytes::of_path(&path),
                repo: Repo { path: entry.path().to_path_buf(), repo: opened },
            });
        }
    }
    found
}

fn collect(repo: &Repo, prefix: &Path, seen: &mut HashSet<PathBuf>, found: &mut Vec<Submodule>) {
    let Some(workdir) = repo.repo.workdir() else { return };
    if !workdir.join(".gitmodules").is_file() {
        return;
    }
    let Ok(submodules) = repo.repo.submodules() else { return };
    for submodule in submodules {
        let path = submodule.path();
        // `.gitmodules` is the agent's file: a path that climbs out names no submodule of this
        // mount.
        if path.as_os_str().is_empty() || !path.components().all(|c| matches!(c, Component::Normal(_))) {
            continue;
        }
        // Nor does one reached through a symlink that leads out of the work tree: that is
        // another repository of the host's, not this mount's to assess.
        let dir = workdir.join(path);
        let inside = matches!((dir.canonicalize(), workdir.canonicalize()), (Ok(d), Ok(w)) if d.starts_with(&w));
        if !inside {
            continue;
        }
        let Ok(opened) = Repo::open(&dir) else { continue };
        let Ok(canonical) = opened.repo.path().canonicalize() else { continue };
        if !seen.insert(canonical) {
            continue;
        }
        let full = prefix.join(path);
        collect(&opened, &full, seen, found);
        found.push(Submodule { path: NameBytes::of_path(&full), repo: opened });
    }
}

/// The name of `submodule`'s git directory under `repo`'s `modules/` (a worktree's
/// `<host>/.git/worktrees/<c>/modules/`, a clone's `.git/modules/`), where git keeps it by the
/// submodule's name: a recover looks for the same name under the host repository's `modules/`.
/// `None` when it lives elsewhere or its name is not a plain UTF-8 path.
pub(crate) fn module_name(repo: &Repo, submodule: &Repo) -> Option<String> {
    let modules = repo.repo.path().join("modules").canonicalize().ok()?;
    let gitdir = submodule.repo.path().canonicalize().ok()?;
    let name = gitdir.strip_prefix(&modules).ok()?;
    let plain = !name.as_os_str().is_empty() && name.components().all(|c| matches!(c, Component::Normal(_)));
    name.to_str().filter(|_| plain).map(str::to_owned)
}

/// The submodules of `repo` with work at risk, as the assessment reports them.
pub(crate) fn at_risk(repo: &Repo) -> Result<Vec<SubmoduleWork>, GitError> {
    let mut work = Vec::new();
    for submodule in checked_out(repo) {
        let (unpushed, stashes) = clone_unpushed(&submodule.repo, None)?;
        if stashes > 0 || unpushed.iter().any(|r| r.commits > 0) {
            work.push(SubmoduleWork::new(&submodule.path, unpushed, stashes));
        }
    }
    Ok(work)
}

/// Per submodule of `repo`, what a bundle of its at-risk commits holds (as they are now), and
/// the submodule to write it from; only those with something to bundle.
pub(crate) fn bundles(repo: &Repo) -> Result<Vec<(Submodule, BundleRefs)>, GitError> {
    let mut out = Vec::new();
    for submodule in checked_out(repo) {
        let (unpushed, _) = clone_unpushed(&submodule.repo, None)?;
        let refs = clone_bundle(&submodule.repo, None, &unpushed)?;
        if !refs.is_empty() {
            out.push((submodule, refs));
        }
    }
    Ok(out)
}

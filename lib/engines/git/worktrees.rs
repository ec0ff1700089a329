//! A worktree's registration in its host repository: which registration is a worktree's, and
//! pruning it (a purge's step 5). Which worktrees a purge removes is decided in tools/purge.

use std::path::{Path, PathBuf};

use git2::{Repository, WorktreePruneOptions};

use super::error::unavailable;
use super::Repo;

impl Repo {
    /// The name of this (host) repository's registration of the worktree at `worktree_path`
    /// (see [`registration`]); `None` when it has none.
    pub(crate) fn registration(&self, worktree_path: &Path, fallback_name: Option<&str>) -> Option<String> {
        registration(&self.repo, worktree_path, fallback_name)
    }

    /// Prunes this (host) repository's registration of the worktree at `worktree_path` (found as
    /// [`registration`] finds it), locked or not, leaving the directory alone, and checks that it
    /// is gone: a purge reports only what it saw removed. `false` when there was no registration.
    pub(crate) fn prune_worktree(&self, worktree_path: &Path, fallback_name: Option<&str>) -> anyhow::Result<bool> {
        let host = &self.repo;
        let Some(reg) = registration(host, worktree_path, fallback_name) else { return Ok(false) };
        let worktree = host.find_worktree(&reg).map_err(unavailable)?;
        worktree
            .prune(Some(WorktreePruneOptions::new().valid(true).locked(true).working_tree(false)))
            .map_err(|e| unavailable(e).context(format!("pruning worktree {reg} of {}", self.path.display())))?;
        if host.find_worktree(&reg).is_ok() {
            anyhow::bail!("worktree {reg} is still registered in {}", self.path.display());
        }
        Ok(true)
    }
}

/// The git directory of the registration of the worktree at `worktree_path` (found as
/// [`registration`] finds it, else by `fallback_name`) in the host repository at `host_path`:
/// `<host>/.git/worktrees/<name>`, which holds the worktree's submodules' git directories.
pub(crate) fn registration_dir(host_path: &Path, worktree_path: &Path, fallback_name: &str) -> Option<PathBuf> {
    let host = super::repo::open_checked(host_path).ok()?;
    let name = registration(&host, worktree_path, Some(fallback_name))?;
    Some(host.commondir().join("worktrees").join(name))
}

/// The name of the host's registration of the worktree at `worktree_path`: the one whose path is
/// that path, or, when the directory is already gone, the one named `fallback_name`.
pub(super) fn registration(host: &Repository, worktree_path: &Path, fallback_name: Option<&str>) -> Option<String> {
    let wanted = normalize(worktree_path);
    let registered_here = |name: &str| {
        super::counted::REGISTRATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        host.find_worktree(name).is_ok_and(|wt| normalize(wt.path()) == wanted)
    };
    // The worktree's own `.git` file names its registration (`gitdir: <host>/.git/worktrees/<name>`).
    // The agent can write that file, so it is only a hint, checked against the host's own record:
    // one lookup per session instead of a look at every registration of the repository, which
    // made a list of the sessions of one repository quadratic (issue 69).
    if let Some(name) = named_by_git_file(worktree_path).filter(|name| registered_here(name)) {
        return Some(name);
    }
    let names = host.worktrees().ok()?;
    let names: Vec<String> = names.iter().flatten().flatten().map(str::to_owned).collect();
    names
        .iter()
        .find(|n| registered_here(n))
        .or_else(|| names.iter().find(|n| Some(n.as_str()) == fallback_name))
        .cloned()
}

/// The registration name a worktree's `.git` file gives: the last component of its `gitdir:`
/// line, when that is a plain name under a `worktrees` directory.
fn named_by_git_file(worktree_path: &Path) -> Option<String> {
    let text = crate::state::store::read_agent_text(&worktree_path.join(".git"), 4096)?;
    let gitdir = Path::new(text.lines().next()?.strip_prefix("gitdir:")?.trim());
    let mut parts = gitdir.components().rev();
    let (Some(std::path::Component::Normal(name)), Some(std::path::Component::Normal(parent))) =
        (parts.next(), parts.next())
    else {
        return None;
    };
    (parent == "worktrees").then(|| name.to_str().map(str::to_owned)).flatten()
}

/// The path with its parent resolved (links, `..`) and no trailing slash; a path whose directory
/// is gone still compares equal to its registration's.
fn normalize(path: &Path) -> PathBuf {
    let path: PathBuf = path.components().collect();
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(file)) => {
            std::fs::canonicalize(parent).map(|p| p.join(file)).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

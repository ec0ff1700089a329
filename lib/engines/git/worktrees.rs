//! Which registration of a host repository is a given worktree's.

use std::path::{Path, PathBuf};

use git2::Repository;

/// The name of the host's registration of the worktree at `worktree_path`: the one whose path is
/// that path, or, when the directory is already gone, the one named `fallback_name`.
pub(crate) fn registration(host: &Repository, worktree_path: &Path, fallback_name: Option<&str>) -> Option<String> {
    let wanted = normalize(worktree_path);
    let names = host.worktrees().ok()?;
    let names: Vec<String> = names.iter().flatten().flatten().map(str::to_owned).collect();
    names
        .iter()
        .find(|n| host.find_worktree(n).is_ok_and(|wt| normalize(wt.path()) == wanted))
        .or_else(|| names.iter().find(|n| Some(n.as_str()) == fallback_name))
        .cloned()
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

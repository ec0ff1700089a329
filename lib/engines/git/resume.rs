//! Whether a kept mount can be resumed as it is now, and what changed since it was kept
//! (real-host.md, "Resume").

use std::path::Path;

use git2::{Oid, Repository};

use super::open_repos::OpenRepos;

/// Whether a mount can be resumed as it is now (real-host.md, "Resume").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resumability {
    Intact,
    /// Resumable; the note says what changed since it was kept (for `drift`).
    Drifted(String),
    /// Not resumable: what is gone.
    Diverged(String),
}

/// A worktree mount stops a resume only when its path is gone or no longer registered in its
/// host repository. An agent that switched branches (`git switch -c feature`) or detached HEAD
/// has not lost anything: that is drift.
pub(crate) fn worktree_resumability(
    worktree_path: &Path,
    host_path: &Path,
    scratch_branch: &str,
    hosts: Option<&OpenRepos>,
) -> Resumability {
    if !worktree_path.exists() {
        return Resumability::Diverged(format!("worktree {} is gone", worktree_path.display()));
    }
    let with_host = |host: &Repository| resumability_in(host, worktree_path, host_path, scratch_branch);
    let looked = match hosts {
        Some(hosts) => hosts.with(host_path, with_host),
        None => super::repo::open_checked(host_path).map(|host| with_host(&host)),
    };
    looked.unwrap_or_else(|e| {
        Resumability::Diverged(format!("host repository {} cannot be read: {}", host_path.display(), e.message()))
    })
}

fn resumability_in(host: &Repository, worktree_path: &Path, host_path: &Path, scratch_branch: &str) -> Resumability {
    if super::registration(host, worktree_path, None).is_none() {
        return Resumability::Diverged(format!(
            "worktree {} is no longer registered in {}",
            worktree_path.display(),
            host_path.display()
        ));
    }
    let scratch_ref = format!("refs/heads/{scratch_branch}");
    let worktree = match super::repo::open_checked(worktree_path) {
        Ok(worktree) => worktree,
        Err(e) => {
            return Resumability::Diverged(format!(
                "worktree {} cannot be read: {}",
                worktree_path.display(),
                e.message()
            ))
        }
    };
    let short = |id: Option<Oid>| id.map(|i| i.to_string()[..10].to_owned()).unwrap_or_else(|| "nothing".into());
    let head = worktree.head().ok();
    let head_commit = head.as_ref().and_then(|h| h.peel_to_commit().ok()).map(|c| c.id());
    let place = if worktree.head_detached().unwrap_or(false) {
        format!("has a detached HEAD at {}", short(head_commit))
    } else {
        match head.as_ref().and_then(|h| h.name().ok()) {
            Some(name) if name == scratch_ref => {
                return if host.find_reference(&scratch_ref).is_ok() {
                    Resumability::Intact
                } else {
                    Resumability::Drifted(format!("scratch branch {scratch_branch} has no commit yet"))
                };
            }
            Some(name) => {
                format!(
                    "is on branch {}, not its scratch branch {scratch_branch}",
                    name.trim_start_matches("refs/heads/")
                )
            }
            None => format!("is on no branch jackin made (its scratch branch is {scratch_branch})"),
        }
    };
    Resumability::Drifted(format!("worktree {} {place}", worktree_path.display()))
}

/// A clone mount stops a resume only when it is gone (or no longer a repository).
pub(crate) fn clone_resumability(path: &Path) -> Resumability {
    if !path.exists() {
        return Resumability::Diverged(format!("clone {} is gone", path.display()));
    }
    match super::repo::open_checked(path) {
        Ok(_) => Resumability::Intact,
        Err(e) => Resumability::Diverged(format!("clone {} cannot be read: {}", path.display(), e.message())),
    }
}
